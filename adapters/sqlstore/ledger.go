package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/uptrace/bun"

	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/job"
)

var _ billing.JobLedger = (*Store)(nil)

type ledgerRow struct {
	bun.BaseModel `bun:"table:ledger"`

	Seq       int64     `bun:"seq,pk,autoincrement"`
	Key       string    `bun:"key"`
	AccountID string    `bun:"account_id"`
	Kind      string    `bun:"kind"`
	Amount    int64     `bun:"amount"`
	JobID     string    `bun:"job_id,nullzero"`
	Note      string    `bun:"note"`
	CreatedAt time.Time `bun:"created_at"`
}

func (r ledgerRow) entry() billing.Entry {
	return billing.Entry{Seq: r.Seq, Key: r.Key, AccountID: r.AccountID, Kind: billing.Kind(r.Kind), Amount: r.Amount,
		JobID: r.JobID, Note: r.Note, CreatedAt: r.CreatedAt.UTC()}
}

// Append writes the entries whose keys are new, and moves each account's running balance by
// them, in one transaction.
func (s *Store) Append(ctx context.Context, entries ...billing.Entry) ([]billing.Entry, error) {
	for _, e := range entries {
		if err := e.Check(); err != nil {
			return nil, err
		}
	}
	stmts, err := s.writerStmts(ctx, hotLedgerAppend, hotBalanceAdd)
	if err != nil {
		return nil, err
	}
	var out []billing.Entry
	err = s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		out = out[:0]
		for _, e := range entries {
			e, added, err := appendIn(ctx, tx, stmts, e)
			if err != nil {
				return err
			}
			if added {
				out = append(out, e)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// appendIn writes e in tx unless its key is in the ledger already (added is false then), and
// moves its account's balance by it. stmts are writerStmts(hotLedgerAppend, hotBalanceAdd).
func appendIn(ctx context.Context, tx bun.Tx, stmts []*sql.Stmt, e billing.Entry) (_ billing.Entry, added bool, _ error) {
	e.CreatedAt = e.CreatedAt.UTC().Truncate(time.Microsecond)
	var jobID *string
	if e.JobID != "" {
		jobID = &e.JobID
	}
	err := hotRow(ctx, tx, stmts[0], hotLedgerAppend,
		e.Key, e.AccountID, string(e.Kind), e.Amount, jobID, e.Note, timeText(tx.Dialect(), e.CreatedAt)).Scan(&e.Seq)
	if errors.Is(err, sql.ErrNoRows) {
		return e, false, nil
	}
	if err != nil {
		return e, false, mapErr("ledger append "+e.Key, err)
	}
	if err := hotExec(ctx, tx, stmts[1], hotBalanceAdd, e.AccountID, e.Amount); err != nil {
		return e, false, mapErr("balance of "+e.AccountID, err)
	}
	return e, true, nil
}

// ChargesWith tells that jobs is this store: each of its job changes that emits a charge
// (billing.TopicCharge) appends it here in the change's own transaction (chargeIn).
func (s *Store) ChargesWith(jobs any) bool {
	st, ok := jobs.(*Store)
	return ok && st == s
}

// chargeIn appends to the ledger, in tx, the charges among a job change's messages, as the
// relay's handler of billing.TopicCharge would append them later (that append then finds each
// key there and changes nothing): the balance moves in the commit that ends the job, with no
// transaction of its own after it. at is the messages' time, the job's UpdatedAt. stmts are
// writerStmts(hotLedgerAppend, hotBalanceAdd).
func chargeIn(ctx context.Context, tx bun.Tx, stmts []*sql.Stmt, msgs []job.Message, at time.Time) error {
	for _, m := range msgs {
		if m.Topic != billing.TopicCharge {
			continue
		}
		c, err := billing.DecodeCharge(m.Payload)
		if err != nil {
			return err
		}
		e := c.Entry(at)
		if err := e.Check(); err != nil {
			return err
		}
		if _, _, err := appendIn(ctx, tx, stmts, e); err != nil {
			return err
		}
	}
	return nil
}

// Balance reads the running balance: one primary-key lookup, on the submit gate's path.
func (s *Store) Balance(ctx context.Context, accountID string) (int64, error) {
	stmt, err := s.hot.stmt(ctx, s.r, hotBalance)
	if err != nil {
		return 0, err
	}
	var b int64
	err = stmt.QueryRowContext(ctx, accountID).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, mapErr("balance of "+accountID, err)
	}
	return b, nil
}

// Entries returns a page of the account's entries, newest first by seq.
func (s *Store) Entries(ctx context.Context, p billing.EntriesParams) (billing.EntryPage, error) {
	limit := p.NormalizeLimit()
	q := s.r.NewSelect().Model((*ledgerRow)(nil)).Where("account_id = ?", p.AccountID)
	if p.Cursor != "" {
		seq, err := billing.DecodeCursor(p.Cursor)
		if err != nil {
			return billing.EntryPage{}, err
		}
		q = q.Where("seq < ?", seq)
	}
	var rows []ledgerRow
	if err := q.OrderExpr("seq DESC").Limit(int64(limit+1)).Scan(ctx, &rows); err != nil {
		return billing.EntryPage{}, mapErr("ledger of "+p.AccountID, err)
	}
	page := billing.EntryPage{Entries: make([]billing.Entry, 0, len(rows))}
	for _, r := range rows {
		page.Entries = append(page.Entries, r.entry())
	}
	if len(page.Entries) > limit {
		page.Entries = page.Entries[:limit]
		page.NextCursor = billing.EncodeCursor(page.Entries[limit-1].Seq)
	}
	return page, nil
}

// Spent sums the account's charges since a time, on the ledger_spent index.
func (s *Store) Spent(ctx context.Context, accountID string, since time.Time) (int64, error) {
	var n int64
	err := s.r.NewSelect().Model((*ledgerRow)(nil)).ColumnExpr("COALESCE(SUM(-amount), 0)").
		Where("account_id = ?", accountID).Where("kind = ?", string(billing.KindCharge)).
		Where("created_at >= ?", since.UTC()).Scan(ctx, &n)
	if err != nil {
		return 0, mapErr("spending of "+accountID, err)
	}
	return n, nil
}
