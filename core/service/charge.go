package service

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/job"
)

// biller applies the billing rule to jobs as they finish.
type biller struct {
	pricing *billing.Pricing
	// ledger takes a finished job's charge at once (appendNow); nil where the job store's
	// change that ends the job has put it there already (billing.JobLedger).
	ledger billing.Ledger
}

// outcome is what the billing rule reads of a finished job.
func outcome(j *job.Job) billing.Outcome {
	o := billing.Outcome{Status: j.Status, Started: j.ExecStartedAt != nil, ComputeMs: j.ComputeMs, Class: j.Class}
	if j.Error != nil {
		o.Code = j.Error.Code
	}
	return o
}

// charge is the ledger charge of a finished job under the billing rule; ok is false when the
// outcome is free.
func (b biller) charge(j *job.Job) (billing.Charge, bool) {
	if j.IsPart() {
		return billing.Charge{}, false // charged as its split job's compute
	}
	bill := b.pricing.BillFor(outcome(j))
	return billing.Charge{AccountID: j.AccountID, JobID: j.ID, Class: j.Class, ComputeMs: j.ComputeMs,
		Seconds: bill.Seconds, Amount: bill.Amount}, !bill.Free()
}

// settleBill prices a job that has just reached a terminal status by billing.Pricing.BillFor, sets its
// cost, and, in the same change, emits the charge that the ledger takes, so the charge exists
// exactly when the change commits. A free outcome costs 0 and emits nothing. A job is billed
// once: a cost already set stays.
func (b biller) settleBill(j *job.Job) error {
	if j.Cost != nil {
		return nil
	}
	c, billed := b.charge(j)
	cost := billing.Cost(c.Amount)
	j.Cost = &cost
	if !billed {
		return nil
	}
	p, err := json.Marshal(c)
	if err != nil {
		return err
	}
	j.Emit(billing.TopicCharge, billing.ChargeKey(j.ID), p)
	return nil
}

// appendNow appends a just-billed job's charge to the ledger at once, so the balance the gate
// and the dispatcher read is current; the relay appends the same charge again after a crash,
// which the charge's key makes a no-op. A failure here is the relay's to repair. With a
// billing.JobLedger the change that ended the job has charged it: nothing is left to do.
func (b biller) appendNow(ctx context.Context, j *job.Job, at time.Time) {
	if b.ledger == nil || j == nil || !j.Status.Terminal() {
		return
	}
	if c, billed := b.charge(j); billed {
		_, _ = b.ledger.Append(ctx, c.Entry(at))
	}
}
