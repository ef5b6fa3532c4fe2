package main

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/mediajobs/mediajobs/contracts/client"
)

// jobProgress shows a job's status and progress while it is waited for: a bar redrawn in place
// on a terminal, otherwise a line per change of status and per tenth of progress. A job whose
// output has no known length has no progress; it shows the media time written instead (per 10
// seconds of it, as lines).
type jobProgress struct {
	w      io.Writer
	id     string
	bar    *progressbar.ProgressBar // nil when w is not a terminal
	status client.Status
	tenth  int // the last tenth of progress printed as a line
	tens   int // the last 10 seconds of media written printed as a line
}

func newJobProgress(w io.Writer, id string) *jobProgress {
	p := &jobProgress{w: w, id: id, tenth: -1, tens: -1}
	if isTerminal(w) {
		p.bar = progressbar.NewOptions(100,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(id),
			progressbar.OptionSetWidth(30),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetRenderBlankState(true),
		)
	}
	return p
}

// update shows one read of the job.
func (p *jobProgress) update(j client.Job) {
	pct := 0
	if j.Progress != nil {
		pct = int(*j.Progress * 100)
	}
	if j.Status == client.StatusComplete {
		pct = 100
	}
	var written time.Duration
	if j.Status == client.StatusRunning && pct == 0 && j.ProcessedMs != nil {
		written = time.Duration(*j.ProcessedMs) * time.Millisecond
	}
	if p.bar != nil {
		desc := fmt.Sprintf("%s %-10s", p.id, j.Status)
		if written > 0 {
			desc += fmt.Sprintf(" %s written", written.Round(100*time.Millisecond))
		}
		p.bar.Describe(desc)
		_ = p.bar.Set(pct)
		if j.Status.Terminal() {
			// The bar stays on screen as it ended; what follows starts on a new line.
			_ = p.bar.Exit()
			fmt.Fprintln(p.w)
		}
		return
	}
	running := j.Status == client.StatusRunning && j.Progress != nil
	switch {
	case written > 0 && (j.Status != p.status || int(written/(10*time.Second)) > p.tens):
		fmt.Fprintf(p.w, "%s running, %s written\n", p.id, written.Round(100*time.Millisecond))
		p.status, p.tens = j.Status, int(written/(10*time.Second))
		return
	case j.Status != p.status && running:
		fmt.Fprintf(p.w, "%s running %d%%\n", p.id, pct)
	case j.Status != p.status:
		fmt.Fprintf(p.w, "%s %s\n", p.id, j.Status)
	case running && pct/10 > p.tenth:
		fmt.Fprintf(p.w, "%s running %d%%\n", p.id, pct)
	default:
		return
	}
	p.status, p.tenth = j.Status, pct/10
}

// stop ends the display early (an interrupt), leaving the cursor on a fresh line.
func (p *jobProgress) stop() {
	if p.bar != nil {
		_ = p.bar.Exit()
		fmt.Fprintln(p.w)
	}
}

// transferReader wraps r, of size bytes, with a byte counter on a terminal.
func transferReader(w io.Writer, r io.Reader, size int64, what string) (io.Reader, func()) {
	if !isTerminal(w) {
		return r, func() {}
	}
	bar := progressbar.NewOptions64(size,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowTotalBytes(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetRenderBlankState(true),
	)
	reader := progressbar.NewReader(r, bar)
	return &reader, func() {
		_ = bar.Exit()
		fmt.Fprintln(w)
	}
}
