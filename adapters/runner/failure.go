package runner

import (
	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// The failures an executor reports. Which error code each becomes is the core's rule
// (workqueue.Failure.Error); the runner only says what happened.

func invalid(msg string) *workqueue.Failure {
	return &workqueue.Failure{Kind: workqueue.KindInvalid, Message: msg}
}

func exitFail(msg string, stderr []byte) *workqueue.Failure {
	return &workqueue.Failure{Kind: workqueue.KindExit, Message: msg, Detail: tail(stderr)}
}

func timeoutFail(msg string, stderr []byte) *workqueue.Failure {
	return &workqueue.Failure{Kind: workqueue.KindTimeout, Message: msg, Detail: tail(stderr)}
}

func stalledFail(msg string, stderr []byte) *workqueue.Failure {
	return &workqueue.Failure{Kind: workqueue.KindStalled, Message: msg, Detail: tail(stderr)}
}

func cancelled() *workqueue.Failure { return &workqueue.Failure{Kind: workqueue.KindCancelled} }

func fetchFail(msg string) *workqueue.Failure {
	return &workqueue.Failure{Kind: workqueue.KindFetch, Message: msg}
}

// limitFail is a run a per-job cap stopped.
func limitFail(run sandbox.Result) *workqueue.Failure {
	return &workqueue.Failure{Kind: workqueue.KindLimit, Limit: run.LimitExceeded.Limit, Max: run.LimitExceeded.Max,
		Message: run.LimitExceeded.Message(), Detail: tail(run.StderrTail)}
}

func tail(stderr []byte) string {
	if len(stderr) == 0 {
		return ""
	}
	return job.Tail(stderr, job.DetailLimit)
}
