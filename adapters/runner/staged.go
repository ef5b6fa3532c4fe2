package runner

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/mediajobs/mediajobs/core/workqueue"
	"github.com/mediajobs/mediajobs/validator"
)

// Staged inputs are what their names say. The validator judged the command by its names; here
// the runner judges the bytes it staged under them, before FFmpeg opens anything:
//   - every staged file is sniffed, and one holding a list that makes a demuxer open further
//     files (an HLS playlist, a concat script, a DASH manifest, an SDP session) is refused
//     unless its name is that list's own; a list under its own name is checked entry by entry
//     (validator.CheckStaged);
//   - every -i of a staged file gets `-f <demuxer>` by its extension (validator.PinDemuxers),
//     so FFmpeg reads it as what its name says, not as what its content claims.
// The sandbox would contain a disguised list too (no host files, no network), but the first
// wall should not depend on the second.

// checkStaged checks the job's staged files and returns the arguments to run FFmpeg with.
func checkStaged(work string, args []string, inputs map[string]bool) ([]string, *workqueue.Failure) {
	concat := map[string]bool{}
	for _, r := range validator.InputReads(args) {
		if r.Format == "concat" {
			concat[r.Name] = true
		}
	}
	staged := func(name string) bool { return inputs[name] }
	for name := range inputs {
		f := validator.StagedFile{Name: name, Concat: concat[name]}
		var err error
		if f.Concat || validator.NamedAsList(name) {
			f.Content, err = readUpTo(filepath.Join(work, name), validator.MaxListBytes+1, false)
		} else {
			f.Content, err = readUpTo(filepath.Join(work, name), validator.SniffLimit, true)
		}
		if err != nil {
			return nil, invalid("input " + name + " could not be read")
		}
		if e := validator.CheckStaged(f, staged); e != nil {
			return nil, invalid(e.Message)
		}
	}
	return validator.PinDemuxers(args), nil
}

// refuseList fails an input of a fixed-shape job (a caption burn's source, a metadata job's)
// whose content is a list: those inputs are media, read by FFmpeg's probe.
func refuseList(work, local, field string) *workqueue.Failure {
	head, err := readUpTo(filepath.Join(work, local), validator.SniffLimit, true)
	if err != nil {
		return invalid(field + " could not be read")
	}
	if k := validator.SniffList(head); k != validator.NotList {
		return invalid(field + " holds " + k.String() + ", not media; lists that open further files are not read")
	}
	return nil
}

// readUpTo reads the start of a staged file, without following a symlink, up to max bytes; with
// toNUL it stops at the end of the chunk holding the file's first NUL byte, which is as far as
// FFmpeg's text probes read.
func readUpTo(path string, max int, toNUL bool) ([]byte, error) {
	fd, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer fd.Close()
	var (
		out   []byte
		chunk = make([]byte, 64<<10)
	)
	for len(out) < max {
		n, err := fd.Read(chunk[:min(len(chunk), max-len(out))])
		out = append(out, chunk[:n]...)
		if toNUL && bytes.IndexByte(chunk[:n], 0) >= 0 {
			return out, nil
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
