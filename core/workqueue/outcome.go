package workqueue

import (
	"fmt"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
)

// Kind is what went wrong in a run, as the runner saw it. Which error code a client sees for it
// is the core's decision (Failure.Error), not the runner's.
type Kind string

const (
	// KindExit: the program exited non-zero. Detail holds its stderr tail.
	KindExit Kind = "exit"
	// KindTimeout: the run passed its deadline and was killed.
	KindTimeout Kind = "timeout"
	// KindFetch: an input could not be fetched (unreachable, refused, too large).
	KindFetch Kind = "fetch"
	// KindInvalid: the request was refused when the runner checked it again.
	KindInvalid Kind = "invalid"
	// KindLimit: the job passed a per-job cap (bytes or files written, memory); Limit names it.
	KindLimit Kind = "limit"
	// KindNoOutput: the program succeeded but wrote nothing the job can return.
	KindNoOutput Kind = "no_output"
	// KindCancelled: the run was stopped because the job was cancelled.
	KindCancelled Kind = "cancelled"
	// KindHandBack: the runner is stopping and gives the job back before it finished; the
	// control plane queues it again (job.MaxRequeues) or, past that, fails it RUNNER_LOST.
	KindHandBack Kind = "handback"
	// KindStalled: the program made no progress (frames, media time or bytes written) for the
	// job's stall time (Limits.StallSeconds) and was stopped.
	KindStalled Kind = "stalled"
	// KindInternal: the runner itself failed (its disk, its sandbox, storage). The runner logs
	// the cause; clients see a generic message.
	KindInternal Kind = "internal"
)

// Failure is a failed run.
type Failure struct {
	Kind Kind `json:"kind"`
	// Message says what failed in the user's terms: "input in.mp4: the server answered 404".
	Message string `json:"message,omitempty"`
	// Detail is the program's stderr tail, for KindExit, KindTimeout, KindStalled and KindLimit.
	Detail string `json:"detail,omitempty"`
	// Limit names the cap of a KindLimit failure ("job_bytes", "job_files", "memory") and Max
	// its value.
	Limit string `json:"limit,omitempty"`
	Max   int64  `json:"max,omitempty"`
	// Step is the 1-based index of the failed command of a job of several (params.steps), and
	// Steps their number; zero for a job of one command.
	Step  int `json:"step,omitempty"`
	Steps int `json:"steps,omitempty"`
}

// Error is the job error a failure becomes: the one rule from run outcome to error code.
func (f *Failure) Error() *job.Error {
	code, msg := problem.CodeInternal, "the runner failed; the job can be retried"
	switch f.Kind {
	case KindExit:
		code, msg = problem.CodeRunnerError, orDefault(f.Message, "ffmpeg exited with an error")
	case KindTimeout:
		code, msg = problem.CodeRunnerTimeout, orDefault(f.Message, "the job ran past its time limit")
	case KindStalled:
		code, msg = problem.CodeRunnerStalled, orDefault(f.Message, "ffmpeg made no progress and was stopped")
	case KindFetch:
		code, msg = problem.CodeInputFetchFailed, orDefault(f.Message, "an input could not be fetched")
	case KindInvalid:
		code, msg = problem.CodeValidation, orDefault(f.Message, "the request is not valid")
	case KindLimit:
		code, msg = problem.CodeLimitExceeded, limitMessage(f)
	case KindNoOutput:
		code, msg = problem.CodeRunnerError, "the job produced no output"+suffix(f.Message)
	case KindCancelled:
		code, msg = problem.CodeCancelled, "the job was cancelled"
	case KindHandBack:
		code, msg = problem.CodeRunnerLost, "the runner stopped before the job finished; the job can be retried"
	case KindInternal:
		msg = "the runner failed" + suffix(f.Message) + "; the job can be retried"
	}
	if f.Step > 0 && f.Steps > 1 && code != problem.CodeInternal && f.Kind != KindCancelled && f.Kind != KindHandBack {
		msg = fmt.Sprintf("step %d of %d: %s", f.Step, f.Steps, msg)
	}
	var detail []byte
	if f.Detail != "" {
		detail = []byte(f.Detail)
	}
	return job.NewError(code, msg, detail)
}

func limitMessage(f *Failure) string {
	switch f.Limit {
	case "job_bytes":
		return fmt.Sprintf("the job wrote more than its limit of %d bytes (job_bytes) and was stopped", f.Max)
	case "job_files":
		return fmt.Sprintf("the job wrote more than its limit of %d files (job_files) and was stopped", f.Max)
	case "memory":
		return fmt.Sprintf("the job reached its memory limit of %d bytes and was stopped", f.Max)
	}
	return orDefault(f.Message, "the job passed a resource limit and was stopped")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func suffix(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}
