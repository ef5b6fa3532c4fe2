package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/mediajobs/mediajobs/core/batch"
	"github.com/mediajobs/mediajobs/core/job"
)

var _ batch.Store = (*Store)(nil)

type batchRow struct {
	bun.BaseModel `bun:"table:batches"`

	ID          string     `bun:"id,pk"`
	AccountID   string     `bun:"account_id"`
	JobIDs      string     `bun:"job_ids"`
	Status      string     `bun:"status"`
	Succeeded   int        `bun:"succeeded"`
	Failed      int        `bun:"failed"`
	Cancelled   int        `bun:"cancelled"`
	CreatedAt   time.Time  `bun:"created_at"`
	UpdatedAt   time.Time  `bun:"updated_at"`
	CompletedAt *time.Time `bun:"completed_at"`
}

// batchCountRow records that a job of a batch was counted; its key makes counting idempotent.
type batchCountRow struct {
	bun.BaseModel `bun:"table:batch_counts"`

	BatchID string `bun:"batch_id,pk"`
	JobID   string `bun:"job_id,pk"`
}

func toBatchRow(b *batch.Batch) (*batchRow, error) {
	ids, err := json.Marshal(b.JobIDs)
	if err != nil {
		return nil, fmt.Errorf("batch %s: job ids: %w", b.ID, err)
	}
	return &batchRow{ID: b.ID, AccountID: b.AccountID, JobIDs: string(ids), Status: string(b.Status),
		Succeeded: b.Succeeded, Failed: b.Failed, Cancelled: b.Cancelled,
		CreatedAt: b.CreatedAt.UTC(), UpdatedAt: b.UpdatedAt.UTC(), CompletedAt: utc(b.CompletedAt)}, nil
}

func (r *batchRow) batch() (*batch.Batch, error) {
	b := &batch.Batch{ID: r.ID, AccountID: r.AccountID, Status: batch.Status(r.Status),
		Succeeded: r.Succeeded, Failed: r.Failed, Cancelled: r.Cancelled,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), CompletedAt: utc(r.CompletedAt)}
	if err := json.Unmarshal([]byte(r.JobIDs), &b.JobIDs); err != nil {
		return nil, fmt.Errorf("batch %s: job ids: %w", r.ID, err)
	}
	return b, nil
}

// CreateBatch inserts the batch and its jobs in one transaction. It does not go through
// SQLite's group commit: a refused row must undo the whole batch, not just itself.
func (s *Store) CreateBatch(ctx context.Context, b *batch.Batch, jobs []*job.Job) error {
	br, err := toBatchRow(b)
	if err != nil {
		return err
	}
	rows := make([]*jobRow, len(jobs))
	for i, j := range jobs {
		if rows[i], err = toRow(j); err != nil {
			return err
		}
	}
	return s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewInsert().Model(br).Exec(ctx); err != nil {
			return mapErr("create batch "+b.ID, err)
		}
		if len(rows) == 0 {
			return nil
		}
		_, err := tx.NewInsert().Model(&rows).Exec(ctx)
		return mapErr("create the jobs of batch "+b.ID, err)
	})
}

// GetBatch returns a batch or problem.ErrNotFound.
func (s *Store) GetBatch(ctx context.Context, id string) (*batch.Batch, error) {
	var r batchRow
	if err := s.r.NewSelect().Model(&r).Where("id = ?", id).Scan(ctx); err != nil {
		return nil, mapErr("batch "+id, err)
	}
	return r.batch()
}

// ListBatches returns an account's batches newest first by (created_at, id), a keyset page at
// a time.
func (s *Store) ListBatches(ctx context.Context, p batch.ListParams) (batch.Page, error) {
	limit := p.NormalizeLimit()
	q := s.r.NewSelect().Model((*batchRow)(nil)).Where("account_id = ?", p.AccountID)
	if p.Cursor != "" {
		t, id, err := batch.DecodeCursor(p.Cursor)
		if err != nil {
			return batch.Page{}, err
		}
		q = q.Where("(created_at, id) < (?, ?)", t, id)
	}
	var rows []batchRow
	if err := q.OrderExpr("created_at DESC, id DESC").Limit(int64(limit+1)).Scan(ctx, &rows); err != nil {
		return batch.Page{}, mapErr("list batches", err)
	}
	out := make([]*batch.Batch, 0, len(rows))
	for i := range rows {
		b, err := rows[i].batch()
		if err != nil {
			return batch.Page{}, err
		}
		out = append(out, b)
	}
	page := batch.Page{Batches: out}
	if len(out) > limit {
		page.Batches = out[:limit]
		page.NextCursor = batch.EncodeCursor(out[limit-1])
	}
	return page, nil
}

// CountJob locks the batch, records the (batch, job) pair and, when the pair is new, applies
// fn and writes the batch and its outbox messages, all in one transaction.
func (s *Store) CountJob(ctx context.Context, batchID, jobID string, fn func(*batch.Batch) error) (bool, error) {
	counted, emitted := false, false
	err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var r batchRow
		if err := s.forUpdate(tx.NewSelect().Model(&r).Where("id = ?", batchID), false).Scan(ctx); err != nil {
			return mapErr("batch "+batchID, err)
		}
		res, err := tx.NewInsert().Model(&batchCountRow{BatchID: batchID, JobID: jobID}).
			On("CONFLICT (batch_id, job_id) DO NOTHING").Exec(ctx)
		if err != nil {
			return mapErr("count job "+jobID+" of batch "+batchID, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		b, err := r.batch()
		if err != nil {
			return err
		}
		if err := fn(b); err != nil {
			return err
		}
		b.ID = batchID
		nr, err := toBatchRow(b)
		if err != nil {
			return err
		}
		if _, err := tx.NewUpdate().Model(nr).WherePK().Exec(ctx); err != nil {
			return mapErr("update batch "+batchID, err)
		}
		if err := enqueue(ctx, tx, nil, b.Outbox, b.UpdatedAt); err != nil {
			return err
		}
		counted = true
		emitted = len(b.Outbox) > 0
		return nil
	})
	if err != nil {
		return false, err
	}
	if emitted {
		s.outboxWritten()
	}
	return counted, nil
}
