package billing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
)

// Kind is the kind of a ledger entry.
type Kind string

const (
	// KindGrant is a one-time starter grant or an operator's grant of credits.
	KindGrant Kind = "grant"
	// KindMonthly is a Pro plan's monthly included credits.
	KindMonthly Kind = "monthly"
	// KindPurchase is a bought credit pack; KindBonus is the Pro bonus on it, its own entry.
	KindPurchase Kind = "purchase"
	KindBonus    Kind = "bonus"
	// KindCharge is a job's compute, negative.
	KindCharge Kind = "charge"
	// KindAdjustment is a manual correction or a discretionary refund, of either sign.
	KindAdjustment Kind = "adjustment"
)

// ParseKind turns an untrusted string into a Kind.
func ParseKind(s string) (Kind, error) {
	switch k := Kind(s); k {
	case KindGrant, KindMonthly, KindPurchase, KindBonus, KindCharge, KindAdjustment:
		return k, nil
	}
	return "", fmt.Errorf("ledger entry kind %q is unknown", s)
}

// Entry is one line of an account's ledger. Entries are never changed or removed: a mistake is
// corrected by an adjustment.
type Entry struct {
	// Key makes appending idempotent: a second entry with a key already in the ledger is
	// dropped. "charge:<job_id>", "starter:<account>", "monthly:<account>:2026-11", ...
	Key       string `json:"-"`
	AccountID string `json:"-"`
	Kind      Kind   `json:"kind"`
	// Amount is signed credits: positive adds to the balance, a charge is negative.
	Amount    int64     `json:"amount"`
	JobID     string    `json:"jobId,omitempty"`
	Note      string    `json:"note,omitempty"`
	CreatedAt time.Time `json:"-"`
	// Seq orders the ledger; the store assigns it.
	Seq int64 `json:"-"`
}

// ErrInsufficientCredits is the balance not covering a job's minimum charge.
var ErrInsufficientCredits = errors.New("insufficient credits")

// Ledger is the port of the credit ledger. The balance of an account is the sum of its entries.
type Ledger interface {
	// Append writes entries in one transaction and returns those it wrote: an entry whose Key is
	// already in the ledger is skipped, so appending again after a crash or a duplicate message
	// changes nothing. Every entry needs a Key, an AccountID and a Kind.
	Append(ctx context.Context, entries ...Entry) ([]Entry, error)
	// Balance is the sum of the account's entries; zero for an account without any.
	Balance(ctx context.Context, accountID string) (int64, error)
	// Entries returns a page of the account's entries, newest first.
	Entries(ctx context.Context, p EntriesParams) (EntryPage, error)
	// Spent is the credits charged to the account (a positive number, adjustments not
	// included) by entries created at or after since.
	Spent(ctx context.Context, accountID string, since time.Time) (int64, error)
}

// JobLedger is a Ledger that takes the charges of a job store's changes in those changes'
// own transactions, where the two are one database. ChargesWith(jobs) is true when every
// charge (a TopicCharge message) that a change of jobs emits is in this ledger, and in the
// balance, as the change commits: whoever ends a job then appends nothing after it.
type JobLedger interface {
	Ledger
	ChargesWith(jobs any) bool
}

// EntriesParams select a page of a ledger.
type EntriesParams struct {
	AccountID string
	// Cursor is the previous page's NextCursor; empty for the first page.
	Cursor string
	Limit  int
}

// EntryPage is one page; NextCursor is empty on the last.
type EntryPage struct {
	Entries    []Entry
	NextCursor string
}

// NormalizeLimit applies job listing's default and cap to a page of entries.
func (p EntriesParams) NormalizeLimit() int {
	return job.ListParams{Limit: p.Limit}.NormalizeLimit()
}

// EncodeCursor and DecodeCursor turn the last entry of a page into the opaque cursor of the next.
func EncodeCursor(seq int64) string { return "l" + strconv.FormatInt(seq, 36) }

// DecodeCursor reads a cursor made by EncodeCursor; a bad one is a VALIDATION_ERROR.
func DecodeCursor(s string) (int64, error) {
	if len(s) < 2 || s[0] != 'l' {
		return 0, problem.Reject(problem.CodeValidation, "cursor %q is not a cursor this endpoint returned", s)
	}
	n, err := strconv.ParseInt(s[1:], 36, 64)
	if err != nil || n <= 0 {
		return 0, problem.Reject(problem.CodeValidation, "cursor %q is not a cursor this endpoint returned", s)
	}
	return n, nil
}

// Check reports an entry that cannot be appended.
func (e Entry) Check() error {
	if e.Key == "" || e.AccountID == "" {
		return fmt.Errorf("ledger entry %+v: key and account are required", e)
	}
	if _, err := ParseKind(string(e.Kind)); err != nil {
		return err
	}
	if e.Kind == KindCharge && e.Amount > 0 {
		return fmt.Errorf("ledger entry %s: a charge cannot add credits", e.Key)
	}
	return nil
}

// Charge is the billing of one finished job: the payload of a TopicCharge outbox message.
type Charge struct {
	AccountID string    `json:"accountId"`
	JobID     string    `json:"jobId"`
	Class     job.Class `json:"class"`
	ComputeMs int64     `json:"computeMs"`
	Seconds   int64     `json:"seconds"`
	// Amount is the positive number of credits charged.
	Amount int64 `json:"amount"`
}

// TopicCharge is the outbox topic of job charges.
const TopicCharge = "billing.charge"

// Entry is the ledger entry of a charge. Its key, charge:<job_id>, makes it one per job.
func (c Charge) Entry(at time.Time) Entry {
	return Entry{Key: ChargeKey(c.JobID), AccountID: c.AccountID, Kind: KindCharge, Amount: -c.Amount, JobID: c.JobID,
		Note: fmt.Sprintf("%s, %d s", c.Class, c.Seconds), CreatedAt: at}
}

// ChargeKey is the idempotency key of a job's charge, in the outbox and in the ledger.
func ChargeKey(jobID string) string { return "charge:" + jobID }

// DecodeCharge reads a charge message's payload.
func DecodeCharge(b []byte) (Charge, error) {
	var c Charge
	if err := json.Unmarshal(b, &c); err != nil {
		return Charge{}, fmt.Errorf("charge message: %w", err)
	}
	if c.AccountID == "" || c.JobID == "" || c.Amount < 0 {
		return Charge{}, fmt.Errorf("charge message %s: account, job and a non-negative amount are required", b)
	}
	return c, nil
}

// MonthKey is the idempotency key of an account's monthly inclusion for the month of t (UTC).
func MonthKey(accountID string, t time.Time) string {
	return "monthly:" + accountID + ":" + t.UTC().Format("2006-01")
}

// StarterKey is the idempotency key of an account's one-time starter grant.
func StarterKey(accountID string) string { return "starter:" + accountID }

// MonthStart is the first instant of t's month, UTC.
func MonthStart(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}
