package service

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/asset"
	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
)

// GatePorts are what the submit gate reads: plans and prices, balances, the job types and the
// uploaded assets a request names.
type GatePorts struct {
	Pricing *billing.Pricing
	Ledger  billing.Ledger
	Types   *jobtype.Registry
	Assets  asset.Store
	// AssetURLPrefix is "{base_url}/assets/": URLs under it name uploaded assets.
	AssetURLPrefix string
	// AllowPrivateNetworks are the address ranges the operator opened to the input fetcher;
	// the validator lets input URLs in them through as well.
	AllowPrivateNetworks []netip.Prefix
	// Observer hears of saved jobs and refused requests (NoObserver to hear nothing).
	Observer Observer
	// Presets resolves the requests that name a preset (params.preset); an embedder without
	// presets leaves it nil, and such a request is refused.
	Presets *Presets
}

// gate is the submit gate after authentication and rate limiting: plan checks, the balance
// check, then the request's own validation. Submit and Batches share it.
type gate struct {
	GatePorts
}

func newGate(p GatePorts) (gate, error) {
	err := need("the submit gate", port{"pricing", p.Pricing}, port{"a ledger", p.Ledger}, port{"job types", p.Types},
		port{"an asset store", p.Assets}, port{"an observer", p.Observer})
	return gate{p}, err
}

// prepare validates a request by its type: the spec it asks for, or its validation error,
// which the gate reports only after the plan and balance checks.
func (g gate) prepare(req jobtype.Request) (jobtype.Spec, error) {
	return g.Types.Prepare(req, jobtype.Env{AssetURLPrefix: g.AssetURLPrefix, AllowPrivateNetworks: g.AllowPrivateNetworks})
}

// checkPlan is the plan step: GPU work needs a plan with GPU. It also bounds the run by the
// plan's execution cap: params.timeout takes the spec's whole range (1 to 900 seconds) on every
// plan, and a job that runs past its plan's cap fails RUNNER_TIMEOUT, free, as the spec says.
func (g gate) checkPlan(a account.Account, spec *jobtype.Spec) error {
	limits := g.Pricing.Limits(a.Plan)
	if spec.Class == job.ClassGPU && !limits.GPU {
		return problem.Reject(problem.CodePlanLimit, "GPU jobs need the Pro plan; this account is on %s", a.Plan)
	}
	if spec.Split != nil && a.Plan != account.PlanPro {
		return problem.Reject(problem.CodePlanLimit, "params.split needs the Pro plan; this account is on %s", a.Plan)
	}
	if spec.Timeout > limits.ExecutionCap {
		spec.Timeout = limits.ExecutionCap
	}
	return nil
}

// checkBalance is the balance step: the balance must cover need, the least the jobs can cost.
// The balance is the one read with the request's key where authentication read it
// (account.Account.KeyBalance), else it is read now.
func (g gate) checkBalance(ctx context.Context, a account.Account, need int64, what string) error {
	var bal int64
	if a.KeyBalance != nil {
		bal = *a.KeyBalance
	} else {
		var err error
		if bal, err = g.Ledger.Balance(ctx, a.ID); err != nil {
			return err
		}
	}
	if bal < need {
		return fmt.Errorf("%w: %w", billing.ErrInsufficientCredits, problem.Reject(problem.CodeInsufficientCredits,
			"the balance of %s does not cover the minimum charge of %s for %s", billing.Format(bal), billing.Format(need), what))
	}
	return nil
}

// check runs the plan and balance steps, in that order, before the request's own validation
// error (if any) is reported. A request whose class cannot be read because it is invalid skips
// the plan step, and its balance is checked against the CPU minimum charge.
func (g gate) check(ctx context.Context, a account.Account, spec *jobtype.Spec, invalid error) error {
	class := job.ClassCPU
	if invalid == nil {
		if err := g.checkPlan(a, spec); err != nil {
			return err
		}
		class = spec.Class
	}
	if err := g.checkBalance(ctx, a, g.Pricing.MinimumCharge(class), "a "+string(class)+" job"); err != nil {
		return err
	}
	if invalid != nil {
		return invalid
	}
	return g.checkAssets(ctx, a, *spec)
}

// checkAssets ends the gate of a valid request: the uploaded assets it reads are the caller's.
func (g gate) checkAssets(ctx context.Context, a account.Account, spec jobtype.Spec) error {
	for _, id := range spec.Assets {
		as, err := g.Assets.GetAsset(ctx, id)
		if errors.Is(err, problem.ErrNotFound) || (err == nil && as.AccountID != a.ID) {
			return problem.Reject(problem.CodeValidation, "input %s%s/content is not an uploaded asset of this account", g.AssetURLPrefix, id)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
