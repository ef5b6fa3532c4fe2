package billing

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/job"
)

// Currency is the unit of every amount in the ledger and of job.Cost: one credit, the smallest
// unit, an integer.
const Currency = "credits"

// Plan is what a plan grants, allows and costs. Amounts are credits; fees are cents of the
// pricing's FeeCurrency.
type Plan struct {
	// StarterGrant is given once, when an account is opened on this plan.
	StarterGrant int64 `json:"starterGrant"`
	// MonthlyFeeCents is the subscription price, for display; payment is outside the service.
	MonthlyFeeCents int64 `json:"monthlyFeeCents"`
	// MonthlyCredits are included once per calendar month (UTC).
	MonthlyCredits int64 `json:"monthlyCredits"`
	// PackBonusPercent adds this share of every purchased pack as a separate bonus entry.
	PackBonusPercent    int64 `json:"packBonusPercent"`
	RequestsPerMinute   int   `json:"requestsPerMinute"`
	ExecutionCapSeconds int   `json:"executionCapSeconds"`
	GPU                 bool  `json:"gpu"`
	// Concurrency is how many jobs of an account are dispatched or running at once.
	Concurrency int `json:"concurrency"`
	// JobBytes caps what one job may write in all, JobFiles how many files it may leave;
	// the runner stops a job that passes either (LIMIT_EXCEEDED).
	JobBytes int64 `json:"jobBytes"`
	JobFiles int   `json:"jobFiles"`
	// StallSeconds is how long a running FFmpeg may make no progress (frames, media time or
	// bytes written) before it is stopped and the job fails RUNNER_STALLED, free; 0 is
	// DefaultStallSeconds.
	StallSeconds int `json:"stallSeconds"`
}

// DefaultStallSeconds is a plan's stall time when its pricing names none.
const DefaultStallSeconds = 60

// Pack is a credit pack sold on every plan.
type Pack struct {
	Name       string `json:"name"`
	Credits    int64  `json:"credits"`
	PriceCents int64  `json:"priceCents"`
}

// Pricing is every plan and price, as data: Default, or a file given to `serve --pricing`.
type Pricing struct {
	Currency    string `json:"currency"`
	FeeCurrency string `json:"feeCurrency"`
	// CPUPerSecond and GPUPerSecond are credits per started compute second.
	CPUPerSecond int64 `json:"cpuPerSecond"`
	GPUPerSecond int64 `json:"gpuPerSecond"`
	// MinimumSeconds is the least a billed job pays for, however short its run.
	MinimumSeconds int64           `json:"minimumSeconds"`
	Plans          map[string]Plan `json:"plans"`
	Packs          []Pack          `json:"packs"`
}

//go:embed pricing.json
var defaultPricing []byte

// Default returns the built-in pricing (pricing.json of this package).
func Default() *Pricing {
	p, err := Parse(defaultPricing)
	if err != nil {
		panic("billing: the embedded pricing.json is invalid: " + err.Error())
	}
	return p
}

// Parse reads a pricing document, refusing unknown fields and values that cannot be billed.
func Parse(b []byte) (*Pricing, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	var p Pricing
	if err := d.Decode(&p); err != nil {
		return nil, fmt.Errorf("pricing: %w", err)
	}
	if err := p.validate(); err != nil {
		return nil, fmt.Errorf("pricing: %w", err)
	}
	return &p, nil
}

func (p *Pricing) validate() error {
	var errs []error
	if p.Currency != Currency {
		errs = append(errs, fmt.Errorf("currency must be %q, not %q", Currency, p.Currency))
	}
	if p.CPUPerSecond <= 0 || p.GPUPerSecond <= 0 || p.MinimumSeconds < 1 {
		errs = append(errs, errors.New("cpuPerSecond, gpuPerSecond and minimumSeconds must be at least 1"))
	}
	for _, name := range []account.Plan{account.PlanFree, account.PlanPro} {
		pl, ok := p.Plans[string(name)]
		if !ok {
			errs = append(errs, fmt.Errorf("plan %q is missing", name))
			continue
		}
		if pl.RequestsPerMinute < 1 || pl.ExecutionCapSeconds < 1 || pl.Concurrency < 1 || pl.JobBytes < 1 || pl.JobFiles < 1 {
			errs = append(errs, fmt.Errorf("plan %q: requestsPerMinute, executionCapSeconds, concurrency, jobBytes and jobFiles must be at least 1", name))
		}
		if pl.StallSeconds < 0 {
			errs = append(errs, fmt.Errorf("plan %q: stallSeconds must not be negative (0 is the default, %d)", name, DefaultStallSeconds))
		}
		if pl.StarterGrant < 0 || pl.MonthlyCredits < 0 || pl.PackBonusPercent < 0 || pl.MonthlyFeeCents < 0 {
			errs = append(errs, fmt.Errorf("plan %q: amounts must not be negative", name))
		}
	}
	for name := range p.Plans {
		if _, err := account.ParsePlan(name); err != nil {
			errs = append(errs, err)
		}
	}
	seen := map[string]bool{}
	for _, pk := range p.Packs {
		if pk.Name == "" || pk.Credits < 1 || pk.PriceCents < 0 || seen[pk.Name] {
			errs = append(errs, fmt.Errorf("pack %q: a unique name and at least 1 credit are required", pk.Name))
		}
		seen[pk.Name] = true
	}
	return errors.Join(errs...)
}

// Plan returns the terms of a plan; an unknown plan gets Free's, the most restrictive.
func (p *Pricing) Plan(name account.Plan) Plan {
	if pl, ok := p.Plans[string(name)]; ok {
		return pl
	}
	return p.Plans[string(account.PlanFree)]
}

// Limits are the plan's limits as the account package states them.
func (p *Pricing) Limits(name account.Plan) account.Limits {
	pl := p.Plan(name)
	return account.Limits{RequestsPerMinute: pl.RequestsPerMinute, ExecutionCap: time.Duration(pl.ExecutionCapSeconds) * time.Second,
		GPU: pl.GPU, Concurrency: pl.Concurrency, JobBytes: pl.JobBytes, JobFiles: pl.JobFiles, StallSeconds: cmp.Or(pl.StallSeconds, DefaultStallSeconds)}
}

// Concurrency maps each plan to its concurrency limit, as job.ClaimParams takes it.
func (p *Pricing) Concurrency() map[string]int {
	m := make(map[string]int, len(p.Plans))
	for name, pl := range p.Plans {
		m[name] = pl.Concurrency
	}
	return m
}

// Pack returns the named pack.
func (p *Pricing) Pack(name string) (Pack, bool) {
	for _, pk := range p.Packs {
		if pk.Name == name {
			return pk, true
		}
	}
	return Pack{}, false
}

// Rate is the price of one compute second of a class.
func (p *Pricing) Rate(c job.Class) int64 {
	if c == job.ClassGPU {
		return p.GPUPerSecond
	}
	return p.CPUPerSecond
}

// BillableSeconds is the rounding rule, stated once: a measured run is billed in whole seconds,
// rounded up, and never less than the pricing's minimum (1 s by default).
func (p *Pricing) BillableSeconds(computeMs int64) int64 {
	s := (max(computeMs, 0) + 999) / 1000
	return max(s, p.MinimumSeconds)
}

// Price is what a run of computeMs on class costs, in credits.
func (p *Pricing) Price(c job.Class, computeMs int64) int64 {
	return p.BillableSeconds(computeMs) * p.Rate(c)
}

// MinimumCharge is the least a job of class c can cost: the balance must cover it at submit.
func (p *Pricing) MinimumCharge(c job.Class) int64 { return p.MinimumSeconds * p.Rate(c) }

// Bonus is the bonus a plan adds to a purchase of credits (rounded down).
func (p *Pricing) Bonus(plan account.Plan, credits int64) int64 {
	return credits * p.Plan(plan).PackBonusPercent / 100
}

// Cost is an amount of credits as jobs and events show it.
func Cost(amount int64) job.Cost {
	return job.Cost{Amount: amount, Currency: Currency, Formatted: Format(amount)}
}

// Format writes an amount of credits for people: "1 credit", "-12 credits".
func Format(amount int64) string {
	if amount == 1 || amount == -1 {
		return strconv.FormatInt(amount, 10) + " credit"
	}
	return strconv.FormatInt(amount, 10) + " credits"
}
