package service

import (
	"context"
	"errors"
	"time"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/clock"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
)

// CreditsPorts are what accounts' plans and credits need.
type CreditsPorts struct {
	Accounts account.Store
	Ledger   billing.Ledger
	Pricing  *billing.Pricing
	Clock    clock.Clock
}

// Credits opens accounts, changes their plans, keeps their credits and tells their limits.
type Credits struct {
	accounts account.Store
	ledger   billing.Ledger
	pricing  *billing.Pricing
	clock    clock.Clock
}

// NewCredits returns the Credits use case.
func NewCredits(p CreditsPorts) (*Credits, error) {
	if err := need("Credits", port{"an account store", p.Accounts}, port{"a ledger", p.Ledger}, port{"pricing", p.Pricing},
		port{"a clock", p.Clock}); err != nil {
		return nil, err
	}
	return &Credits{accounts: p.Accounts, ledger: p.Ledger, pricing: p.Pricing, clock: p.Clock}, nil
}

// Limits are the account's plan limits under the configured pricing.
func (s *Credits) Limits(a account.Account) account.Limits { return s.pricing.Limits(a.Plan) }

// Pricing is the configured pricing.
func (s *Credits) Pricing() *billing.Pricing { return s.pricing }

// OpenAccount saves a new account and gives what its plan grants on opening: Free's one-time
// starter grant, Pro's inclusion for the current month.
func (s *Credits) OpenAccount(ctx context.Context, a account.Account) error {
	if err := s.accounts.CreateAccount(ctx, a); err != nil {
		return err
	}
	return s.planGrants(ctx, a)
}

// SetPlan changes an account's plan. Moving to Pro includes the current month's credits at once
// (once per month, however often the plan changes); the starter grant is given once per account.
func (s *Credits) SetPlan(ctx context.Context, accountID string, p account.Plan) error {
	if err := s.accounts.SetPlan(ctx, accountID, p); err != nil {
		return err
	}
	a, err := s.accounts.GetAccount(ctx, accountID)
	if err != nil {
		return err
	}
	return s.planGrants(ctx, a)
}

func (s *Credits) planGrants(ctx context.Context, a account.Account) error {
	now := s.clock.Now()
	pl := s.pricing.Plan(a.Plan)
	var grants []billing.Entry
	if a.Plan == account.PlanFree && pl.StarterGrant > 0 {
		grants = append(grants, billing.Entry{Key: billing.StarterKey(a.ID), AccountID: a.ID, Kind: billing.KindGrant,
			Amount: pl.StarterGrant, Note: "starter grant", CreatedAt: now})
	}
	if pl.MonthlyCredits > 0 {
		grants = append(grants, monthly(a.ID, pl.MonthlyCredits, now))
	}
	if len(grants) == 0 {
		return nil
	}
	_, err := s.ledger.Append(ctx, grants...)
	return err
}

func monthly(accountID string, credits int64, now time.Time) billing.Entry {
	return billing.Entry{Key: billing.MonthKey(accountID, now), AccountID: accountID, Kind: billing.KindMonthly,
		Amount: credits, Note: "included credits " + now.UTC().Format("2006-01"), CreatedAt: now}
}

// GrantMonthly gives every account on a plan with monthly credits its inclusion for the current
// month, once: the entry's key is per account and month, so running it again (every hour, on
// every replica) grants nothing twice. It returns how many it granted.
func (s *Credits) GrantMonthly(ctx context.Context) (int, error) {
	now := s.clock.Now()
	n := 0
	for name, pl := range s.pricing.Plans {
		if pl.MonthlyCredits <= 0 {
			continue
		}
		for after := ""; ; {
			page, err := s.accounts.ListAccounts(ctx, account.ListParams{Plan: account.Plan(name), After: after, Limit: 200})
			if err != nil {
				return n, err
			}
			entries := make([]billing.Entry, len(page))
			for i, a := range page {
				entries[i] = monthly(a.ID, pl.MonthlyCredits, now)
			}
			if len(entries) > 0 {
				got, err := s.ledger.Append(ctx, entries...)
				if err != nil {
					return n, err
				}
				n += len(got)
			}
			if len(page) < 200 {
				break
			}
			after = page[len(page)-1].ID
		}
	}
	return n, nil
}

// Credit is an operator's change of an account's credits.
type Credit struct {
	AccountID string
	// Kind is billing.KindGrant, billing.KindPurchase or billing.KindAdjustment.
	Kind billing.Kind
	// Amount is credits; Pack, for a purchase, names a pack of the pricing instead.
	Amount int64
	Pack   string
	Note   string
	// Reference makes the operation idempotent (an order or ticket number); empty: a new one.
	Reference string
}

// AddCredits records an operator's grant, purchase or adjustment. A purchase on a plan with a
// pack bonus adds the bonus as its own entry, in the same transaction. It returns the entries
// written: none when the reference was recorded before.
func (s *Credits) AddCredits(ctx context.Context, c Credit) ([]billing.Entry, error) {
	a, err := s.accounts.GetAccount(ctx, c.AccountID)
	if errors.Is(err, problem.ErrNotFound) {
		return nil, problem.Reject(problem.CodeNotFound, "account %q not found", c.AccountID)
	}
	if err != nil {
		return nil, err
	}
	if c.Pack != "" {
		pk, ok := s.pricing.Pack(c.Pack)
		if !ok || c.Kind != billing.KindPurchase {
			return nil, problem.Reject(problem.CodeValidation, "pack %q is not a pack of the pricing, or the operation is not a purchase", c.Pack)
		}
		c.Amount = pk.Credits
		if c.Note == "" {
			c.Note = "pack " + pk.Name
		}
	}
	switch {
	case c.Kind != billing.KindGrant && c.Kind != billing.KindPurchase && c.Kind != billing.KindAdjustment:
		return nil, problem.Reject(problem.CodeValidation, "credits can be granted, purchased or adjusted, not %q", c.Kind)
	case c.Amount == 0, c.Amount < 0 && c.Kind != billing.KindAdjustment:
		return nil, problem.Reject(problem.CodeValidation, "amount %d: grants and purchases add at least 1 credit", c.Amount)
	}
	ref := c.Reference
	if ref == "" {
		ref = job.NewID(string(c.Kind))
	}
	now := s.clock.Now()
	entries := []billing.Entry{{Key: string(c.Kind) + ":" + ref, AccountID: a.ID, Kind: c.Kind, Amount: c.Amount, Note: c.Note, CreatedAt: now}}
	if c.Kind == billing.KindPurchase {
		if bonus := s.pricing.Bonus(a.Plan, c.Amount); bonus > 0 {
			entries = append(entries, billing.Entry{Key: "bonus:" + ref, AccountID: a.ID, Kind: billing.KindBonus, Amount: bonus,
				Note: "plan " + string(a.Plan) + " bonus on purchase " + ref, CreatedAt: now})
		}
	}
	return s.ledger.Append(ctx, entries...)
}

// AccountSummary is an account as GET /account shows it.
type AccountSummary struct {
	Account account.Account
	Limits  account.Limits
	Balance int64
	// SpentThisMonth is the credits charged since the first of the month (UTC).
	SpentThisMonth int64
	MonthStart     time.Time
}

// Summary returns the account's plan, limits, balance and this month's usage.
func (s *Credits) Summary(ctx context.Context, a account.Account) (AccountSummary, error) {
	sum := AccountSummary{Account: a, Limits: s.Limits(a), MonthStart: billing.MonthStart(s.clock.Now())}
	var err error
	if sum.Balance, err = s.ledger.Balance(ctx, a.ID); err != nil {
		return sum, err
	}
	if sum.SpentThisMonth, err = s.ledger.Spent(ctx, a.ID, sum.MonthStart); err != nil {
		return sum, err
	}
	return sum, nil
}

// LedgerPage returns a page of the account's ledger, newest first.
func (s *Credits) LedgerPage(ctx context.Context, a account.Account, cursor string, limit int) (billing.EntryPage, error) {
	return s.ledger.Entries(ctx, billing.EntriesParams{AccountID: a.ID, Cursor: cursor, Limit: limit})
}

// HandleCharge is the relay handler of billing.TopicCharge: it appends the job's charge to the
// ledger, once however often it runs.
func (s *Credits) HandleCharge(ctx context.Context, m job.Message) error {
	c, err := billing.DecodeCharge(m.Payload)
	if err != nil {
		return err
	}
	_, err = s.ledger.Append(ctx, c.Entry(m.CreatedAt))
	return err
}
