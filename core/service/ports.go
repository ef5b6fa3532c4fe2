package service

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/mediajobs/mediajobs/core/job"
)

// Waker tells the runners of a compute class that work waits. A lost wake-up costs only
// latency: runners also poll.
type Waker interface {
	Wake(ctx context.Context, c job.Class)
}

// Stopper tells the runner of a job, wherever it runs, to stop it now. The heartbeat tells it
// too; this only makes a cancel fast.
type Stopper interface {
	Stop(ctx context.Context, jobID string)
}

// URLChecker vets a webhook endpoint's URL before it is saved: where the host resolves must be
// a public address. It needs DNS, so an adapter implements it; the deliverer checks again at
// every delivery, since DNS answers change.
type URLChecker interface {
	CheckURL(ctx context.Context, rawURL string) error
}

// Bus topics.
const (
	// TopicDispatchPrefix + class wakes the runners of a compute class: work is waiting.
	TopicDispatchPrefix = "jobs.dispatch."
	// TopicCancel carries the ID of a job cancelled while it may be running.
	TopicCancel = "jobs.cancel"
	// TopicEvents carries job events (Event) out: the webhook fan-out subscribes.
	TopicEvents = "jobs.events"
	// TopicBatchJobDone carries, through the outbox, a batch's job that reached a terminal
	// status (BatchJobDone): Batches.HandleJobDone counts it.
	TopicBatchJobDone = "batch.job_done"
)

// port names a dependency for need.
type port struct {
	name string
	v    any
}

// need refuses a use case built without a port it requires: a missing port is a wiring
// mistake, never a feature switched off.
func need(useCase string, ports ...port) error {
	var errs []error
	for _, p := range ports {
		if isNil(p.v) {
			errs = append(errs, fmt.Errorf("%s needs %s", useCase, p.name))
		}
	}
	return errors.Join(errs...)
}

func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Interface, reflect.Slice, reflect.Chan:
		return rv.IsNil()
	}
	return false
}
