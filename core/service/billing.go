package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
)

// pricing is the configured pricing, or the built-in one.
func (s *Service) pricing() *billing.Pricing {
	if s.Pricing != nil {
		return s.Pricing
	}
	return billing.Default()
}

// Limits are the account's plan limits under the configured pricing.
func (s *Service) Limits(a account.Account) account.Limits { return s.pricing().Limits(a.Plan) }

// checkPlan is the plan step of the submit gate: GPU work needs a plan with GPU, and the
// requested timeout must fit the plan's execution cap.
func (s *Service) checkPlan(a account.Account, spec jobtype.Spec) error {
	limits := s.Limits(a)
	if spec.Class == job.ClassGPU && !limits.GPU {
		return problem.Reject(problem.CodePlanLimit, "GPU jobs need the Pro plan; this account is on %s", a.Plan)
	}
	if spec.Timeout > limits.ExecutionCap {
		return problem.Reject(problem.CodeValidation, "params.timeout %d exceeds the %s plan's execution cap of %d seconds",
			int(spec.Timeout/time.Second), a.Plan, int(limits.ExecutionCap/time.Second))
	}
	return nil
}

// checkBalance is the balance step of the submit gate: the balance must cover the least a job
// of the class can cost. Without a ledger nothing is billed, and nothing is checked.
func (s *Service) checkBalance(ctx context.Context, a account.Account, class job.Class) error {
	if s.Ledger == nil {
		return nil
	}
	bal, err := s.Ledger.Balance(ctx, a.ID)
	if err != nil {
		return err
	}
	if need := s.pricing().MinimumCharge(class); bal < need {
		return fmt.Errorf("%w: %w", billing.ErrInsufficientCredits, problem.Reject(problem.CodeInsufficientCredits,
			"the balance of %s does not cover the minimum charge of %s for a %s job", billing.Format(bal), billing.Format(need), class))
	}
	return nil
}

// gate runs the plan and balance steps of the submit gate, in that order, before the request's
// own validation error (if any) is reported. A request whose compute class and timeout cannot
// be read because it is invalid skips the plan step, and its balance is checked against the
// CPU minimum charge.
func (s *Service) gate(ctx context.Context, a account.Account, spec jobtype.Spec, invalid error) error {
	class := job.ClassCPU
	if invalid == nil {
		if err := s.checkPlan(a, spec); err != nil {
			return err
		}
		class = spec.Class
	}
	if err := s.checkBalance(ctx, a, class); err != nil {
		return err
	}
	return invalid
}

// free tells the failures that are not charged: the run hit its time limit, the runner was
// lost, or the job never ran because the balance ran out before dispatch.
func free(e *job.Error) bool {
	return e != nil && (e.Code == problem.CodeRunnerTimeout || e.Code == problem.CodeRunnerLost || e.Code == problem.CodeInsufficientCredits)
}

// chargeOf is the charge of a finished job, nil when it is not charged.
func (s *Service) chargeOf(j *job.Job) *billing.Charge {
	if free(j.Error) {
		return nil
	}
	p := s.pricing()
	return &billing.Charge{AccountID: j.AccountID, JobID: j.ID, Class: j.Class, ComputeMs: j.ComputeMs,
		Seconds: p.BillableSeconds(j.ComputeMs), Amount: p.Price(j.Class, j.ComputeMs)}
}

// bill prices a job that has just finished (or a cancelled run that has reported its compute):
// it sets the job's cost and, in the same change, emits the charge that the ledger takes, so the
// charge exists exactly when the change commits. Free outcomes cost 0 and emit nothing.
func (s *Service) bill(j *job.Job) error {
	if j.Cost != nil {
		return nil
	}
	c := s.chargeOf(j)
	if c == nil {
		zero := billing.Cost(0)
		j.Cost = &zero
		return nil
	}
	cost := billing.Cost(c.Amount)
	j.Cost = &cost
	if s.Ledger == nil {
		return nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	j.Emit(billing.TopicCharge, billing.ChargeKey(j.ID), b)
	return nil
}

// billAndEmit bills a job that has just finished, counts it in its batch, then records its
// event, which carries the cost.
func (s *Service) billAndEmit(j *job.Job, event string) error {
	if err := s.bill(j); err != nil {
		return err
	}
	if err := s.countInBatch(j); err != nil {
		return err
	}
	return s.emit(j, event)
}

// settle appends a just-billed job's charge to the ledger at once, so the balance the gate and
// the dispatcher read is current; the relay appends the same charge again after a crash, which
// the charge's key makes a no-op.
func (s *Service) settle(ctx context.Context, j *job.Job) {
	if s.Ledger == nil || j == nil || j.Cost == nil || j.Cost.Amount == 0 {
		return
	}
	if c := s.chargeOf(j); c != nil {
		_, _ = s.Ledger.Append(ctx, c.Entry(s.Clock.Now()))
	}
}

// HandleCharge is the relay handler of billing.TopicCharge: it appends the job's charge to the
// ledger, once however often it runs.
func (s *Service) HandleCharge(ctx context.Context, m job.Message) error {
	c, err := billing.DecodeCharge(m.Payload)
	if err != nil {
		return err
	}
	_, err = s.Ledger.Append(ctx, c.Entry(m.CreatedAt))
	return err
}

// funded keeps the claimed jobs whose account can still pay the minimum charge, and fails the
// others, uncharged, with INSUFFICIENT_CREDITS: jobs queue without reserving credits, so the
// balance is checked again when a job is about to run. With the concurrency cap this bounds how
// far a balance can go below zero (see README, "Billing").
//
// A job whose balance cannot be read, or whose failing does not commit, is kept dispatched: an
// unknown balance is no reason to fail work, and a job left without its runner comes back as
// RUNNER_LOST (uncharged) when its lease ends.
func (s *Service) funded(ctx context.Context, jobs []*job.Job) []*job.Job {
	if s.Ledger == nil {
		return jobs
	}
	balances := map[string]int64{}
	kept := jobs[:0]
	for _, j := range jobs {
		bal, ok := balances[j.AccountID]
		if !ok {
			b, err := s.Ledger.Balance(ctx, j.AccountID)
			if err != nil {
				kept = append(kept, j)
				continue
			}
			bal, balances[j.AccountID] = b, b
		}
		need := s.pricing().MinimumCharge(j.Class)
		if bal >= need {
			kept = append(kept, j)
			continue
		}
		_, err := s.update(ctx, j.ID, func(j *job.Job) error {
			if j.Status != job.StatusDispatched {
				return errUnchanged
			}
			msg := fmt.Sprintf("the balance of %s no longer covers the minimum charge of %s; add credits and retry the job",
				billing.Format(bal), billing.Format(need))
			if err := j.Fail(s.Clock.Now(), job.NewError(problem.CodeInsufficientCredits, msg, nil), 0); err != nil {
				return err
			}
			return s.billAndEmit(j, EventFailed)
		})
		if err != nil && !errors.Is(err, errUnchanged) {
			kept = append(kept, j)
		}
	}
	return kept
}
