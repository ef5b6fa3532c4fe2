package service

import (
	"encoding/json"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/webhook"
)

// Event is a job event as webhooks carry it.
type Event struct {
	Event  string      `json:"event"`
	JobID  string      `json:"jobId"`
	Output *job.Output `json:"output,omitempty"`
	Cost   *job.Cost   `json:"cost,omitempty"`
	Error  *job.Error  `json:"error,omitempty"`
	Timing job.Timing  `json:"timing"`
	// Delivery is the copy of the outputs to the job's destination (job.delivered,
	// job.delivery_failed).
	Delivery *JobDelivery `json:"delivery,omitempty"`
}

// emit records a job event in the job's outbox: it is written with the change that caused it,
// and the relay hands it on after the commit. Output URLs are minted when the event is
// delivered, not here.
func emit(j *job.Job, name string) error {
	if j.IsPart() {
		return nil // a split job's part is its job's business: nothing is told of it
	}
	e := Event{Event: name, JobID: j.ID, Timing: j.Timing()}
	switch name {
	case webhook.EventJobCompleted:
		e.Output, e.Cost = j.Output, j.Cost
	case webhook.EventJobFailed:
		e.Error, e.Cost = j.Error, j.Cost
	case webhook.EventJobCancelled:
		e.Cost = j.Cost
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	j.Emit(TopicEvents, name+":"+j.ID, b)
	return nil
}

// finished records what follows a job's terminal status, in the change that made it terminal:
// its charge (settleBill), its count in its batch, then its event, which carries the cost.
func finished(j *job.Job, b biller, event string) error {
	if j.IsPart() {
		return nil // its compute is charged as its split job's, and nothing is told of it
	}
	if err := b.settleBill(j); err != nil {
		return err
	}
	if err := countInBatch(j); err != nil {
		return err
	}
	return emit(j, event)
}
