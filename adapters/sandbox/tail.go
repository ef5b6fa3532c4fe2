package sandbox

import (
	"io"
	"unicode/utf8"
)

// TailWriter keeps only the last max bytes written to it, so a chatty FFmpeg cannot make the
// runner hold its whole stderr in memory. It is not safe for concurrent writes.
type TailWriter struct {
	max int
	buf []byte
}

// NewTailWriter returns a TailWriter keeping max bytes.
func NewTailWriter(max int) *TailWriter {
	return &TailWriter{max: max, buf: make([]byte, 0, 2*max)}
}

func (w *TailWriter) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= w.max {
		w.buf = append(w.buf[:0], p[len(p)-w.max:]...)
		return n, nil
	}
	w.buf = append(w.buf, p...)
	if len(w.buf) > w.max {
		// Compact only when the buffer has grown past max, keeping appends amortised.
		copy(w.buf, w.buf[len(w.buf)-w.max:])
		w.buf = w.buf[:w.max]
	}
	return n, nil
}

// Bytes returns the tail, starting on a UTF-8 boundary so the job error's detail is valid text
// where FFmpeg wrote valid text.
func (w *TailWriter) Bytes() []byte {
	b := w.buf
	for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	return append([]byte(nil), b...)
}

// StderrWriter is where a sandbox copies the program's stderr: tail, and also extra (Spec.Stderr)
// when it is not nil. extra's errors are ignored, so that a caller's writer that stops keeping
// bytes never stops the copy or the tail.
func StderrWriter(tail *TailWriter, extra io.Writer) io.Writer {
	if extra == nil {
		return tail
	}
	return teeWriter{tail, extra}
}

type teeWriter struct {
	tail  *TailWriter
	extra io.Writer
}

func (w teeWriter) Write(p []byte) (int, error) {
	_, _ = w.extra.Write(p)
	return w.tail.Write(p)
}
