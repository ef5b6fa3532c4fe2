package transcribe

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/core/subtitle"
)

// PocketsphinxProgram is Debian's pocketsphinx 0.8 decoder; its default model is the US-English
// one under /usr/share/pocketsphinx, which the sandbox mounts with the rest of /usr.
const PocketsphinxProgram = "/usr/bin/pocketsphinx_continuous"

// NewSandbox is a sandbox that runs pocketsphinx (and ffmpeg to prepare its audio) and nothing
// else.
func NewSandbox() (*sandbox.Sandbox, error) {
	return sandbox.New(sandbox.Config{Programs: []string{PocketsphinxProgram, sandbox.FFmpeg, sandbox.FFprobe}})
}

// Pocketsphinx transcribes English speech offline. The decoder runs in Sandbox as any other
// untrusted work: the audio came from a user.
type Pocketsphinx struct {
	Sandbox *sandbox.Sandbox
	// Timeout bounds one run; default 10 minutes.
	Timeout time.Duration
}

// Languages is what the engine understands: US English.
func (Pocketsphinx) Languages() []string { return []string{"en"} }

// Transcribe decodes audioPath, a 16 kHz mono 16-bit WAV file, with word timings. language must
// be "en" or "auto".
func (p Pocketsphinx) Transcribe(ctx context.Context, audioPath, language string) ([]subtitle.Word, error) {
	if language != "en" && language != "auto" {
		return nil, fmt.Errorf("pocketsphinx: language %q is not supported, only en", language)
	}
	// pocketsphinx would only exit 1 and say why in the log it is told not to write.
	if _, err := os.Stat(audioPath); err != nil {
		return nil, fmt.Errorf("pocketsphinx: %w", err)
	}
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	var out bytes.Buffer
	res, err := p.Sandbox.Run(ctx, sandbox.Spec{Dir: filepath.Dir(audioPath), Program: PocketsphinxProgram, Timeout: timeout, Stdout: &out,
		Args: []string{"-infile", filepath.Base(audioPath), "-time", "yes", "-logfn", "/dev/null"}})
	switch {
	case err != nil:
		if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
			// The sandbox reports a context that ended during its setup as a setup failure.
			err = fmt.Errorf("%w (%v)", ctxErr, err)
		}
		return nil, fmt.Errorf("pocketsphinx: %w", err)
	case res.TimedOut:
		return nil, fmt.Errorf("pocketsphinx: ran past %s", timeout)
	case res.ExitCode != 0:
		return nil, fmt.Errorf("pocketsphinx exited with status %d: %s", res.ExitCode, bytes.TrimSpace(res.StderrTail))
	}
	return ParsePocketsphinx(out.Bytes()), nil
}

// ParsePocketsphinx reads the word lines of `pocketsphinx_continuous -time yes`: "word start end
// confidence", times in seconds. Hypothesis lines, silences, noises and sentence marks are
// skipped; alternate pronunciations ("that(2)") lose their suffix.
func ParsePocketsphinx(out []byte) []subtitle.Word {
	var words []subtitle.Word
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 {
			continue
		}
		start, err1 := strconv.ParseFloat(f[1], 64)
		end, err2 := strconv.ParseFloat(f[2], 64)
		if _, err3 := strconv.ParseFloat(f[3], 64); err1 != nil || err2 != nil || err3 != nil || end < start || start < 0 {
			continue
		}
		w := f[0]
		if strings.HasPrefix(w, "<") || strings.HasPrefix(w, "[") || strings.HasPrefix(w, "++") {
			continue
		}
		if i := strings.IndexByte(w, '('); i > 0 {
			w = w[:i]
		}
		words = append(words, subtitle.Word{Text: w, Start: secs(start), End: secs(end)})
	}
	return words
}

func secs(f float64) time.Duration { return time.Duration(math.Round(f * float64(time.Second))) }
