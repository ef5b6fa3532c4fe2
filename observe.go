package mediajobs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/mediajobs/mediajobs/adapters/logctx"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
)

// NewLogger returns the process's logger: JSON (one object a line) or text, adding the
// request and job IDs that a record's context carries (logctx).
func NewLogger(w io.Writer, format string) (*slog.Logger, error) {
	switch format {
	case "", "json":
		return slog.New(logctx.NewHandler(slog.NewJSONHandler(w, nil))), nil
	case "text":
		return slog.New(logctx.NewHandler(slog.NewTextHandler(w, nil))), nil
	}
	return nil, fmt.Errorf("log-format %q: one of json, text", format)
}

// observers tells every observer in turn.
type observers []service.Observer

func (o observers) JobSubmitted(j *job.Job) {
	for _, x := range o {
		x.JobSubmitted(j)
	}
}

func (o observers) SubmitRejected(err error) {
	for _, x := range o {
		x.SubmitRejected(err)
	}
}

func (o observers) JobDispatched(j *job.Job, waited time.Duration) {
	for _, x := range o {
		x.JobDispatched(j, waited)
	}
}

func (o observers) JobFinished(j *job.Job) {
	for _, x := range o {
		x.JobFinished(j)
	}
}

// logObserver writes a job's dispatch and end to the log under its ID, so that the log follows
// a job from the request that submitted it (httpapi logs "job submitted" with both IDs) to its
// end, on whichever replica it happens.
type logObserver struct{ log *slog.Logger }

func (l logObserver) JobSubmitted(*job.Job)  {}
func (l logObserver) SubmitRejected(_ error) {}

func (l logObserver) JobDispatched(j *job.Job, waited time.Duration) {
	l.log.InfoContext(logctx.WithJob(context.Background(), j.ID), "job dispatched", "class", j.Class,
		"attempt", j.Attempt, "waited_ms", waited.Milliseconds())
}

func (l logObserver) JobFinished(j *job.Job) {
	attrs := []any{"status", j.Status, "type", j.Type, "compute_ms", j.ComputeMs}
	if j.Cost != nil {
		attrs = append(attrs, "cost", j.Cost.Amount)
	}
	if j.Error != nil {
		attrs = append(attrs, "code", j.Error.Code)
		if j.Error.Code == problem.CodeInternal {
			l.log.WarnContext(logctx.WithJob(context.Background(), j.ID), "job finished", attrs...)
			return
		}
	}
	l.log.InfoContext(logctx.WithJob(context.Background(), j.ID), "job finished", attrs...)
}
