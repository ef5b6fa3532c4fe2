package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/mediajobs/mediajobs/core/job"
)

var _ job.Outbox = (*Store)(nil)

type outboxRow struct {
	bun.BaseModel `bun:"table:outbox"`

	Seq         int64     `bun:"seq,pk,autoincrement"`
	Key         string    `bun:"key"`
	Topic       string    `bun:"topic"`
	Payload     []byte    `bun:"payload"`
	Attempts    int       `bun:"attempts"`
	CreatedAt   time.Time `bun:"created_at"`
	AvailableAt time.Time `bun:"available_at"`
}

// enqueue writes a job change's messages in its transaction; a key already there is dropped.
// prepared is the store's hotOutbox where it has one (SQLite), which saves parsing an insert
// at every change that emits; nil: bun writes the insert.
func enqueue(ctx context.Context, tx bun.Tx, prepared *sql.Stmt, msgs []job.Message, now time.Time) error {
	if len(msgs) == 0 {
		return nil
	}
	if prepared != nil {
		at := timeText(tx.Dialect(), now) // the relay compares available_at as text
		st := tx.StmtContext(ctx, prepared)
		defer st.Close()
		for _, m := range msgs {
			if _, err := st.ExecContext(ctx, m.Key, m.Topic, m.Payload, at, at); err != nil {
				return mapErr("outbox", err)
			}
		}
		return nil
	}
	rows := make([]outboxRow, len(msgs))
	for i, m := range msgs {
		rows[i] = outboxRow{Key: m.Key, Topic: m.Topic, Payload: m.Payload, CreatedAt: now, AvailableAt: now}
	}
	_, err := tx.NewInsert().Model(&rows).On("CONFLICT (key) DO NOTHING").Exec(ctx)
	return mapErr("outbox", err)
}

// ClaimMessages leases the oldest available messages (SKIP LOCKED on PostgreSQL, so relays on
// several replicas share the outbox).
func (s *Store) ClaimMessages(ctx context.Context, p job.ClaimMessagesParams) ([]job.Message, error) {
	now := p.Now.UTC().Truncate(time.Microsecond)
	if !s.postgres {
		return s.claimMessagesPrepared(ctx, now, p)
	}
	var out []job.Message
	err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var rows []outboxRow
		q := tx.NewSelect().Model(&rows).Where("available_at <= ?", now).OrderExpr("seq").Limit(int64(p.Limit))
		if err := s.forUpdate(q, true).Scan(ctx); err != nil {
			return mapErr("outbox", err)
		}
		if len(rows) == 0 {
			return nil
		}
		seqs := make([]int64, len(rows))
		for i, r := range rows {
			seqs[i] = r.Seq
			out = append(out, job.Message{Key: r.Key, Topic: r.Topic, Payload: r.Payload, Attempts: r.Attempts + 1,
				CreatedAt: r.CreatedAt.UTC()})
		}
		_, err := tx.NewUpdate().Model((*outboxRow)(nil)).
			Set("available_at = ?", now.Add(p.Lease)).Set("attempts = attempts + 1").
			Where("seq IN (?)", bun.In(seqs)).Exec(ctx)
		return mapErr("outbox", err)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// claimMessagesPrepared is ClaimMessages on SQLite: one prepared statement that leases the
// messages and returns them, where bun's select and update are each parsed anew at every pass.
func (s *Store) claimMessagesPrepared(ctx context.Context, now time.Time, p job.ClaimMessagesParams) ([]job.Message, error) {
	st, err := s.hot.stmt(ctx, s.w, hotClaimMessages)
	if err != nil {
		return nil, err
	}
	d := s.w.Dialect()
	var rows []outboxRow
	err = s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		rows = rows[:0]
		res, err := tx.StmtContext(ctx, st).QueryContext(ctx, timeText(d, now.Add(p.Lease)), timeText(d, now), p.Limit)
		if err != nil {
			return mapErr("outbox", err)
		}
		defer res.Close()
		return mapErr("outbox", s.w.ScanRows(ctx, res, &rows))
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(rows, func(a, b outboxRow) int { return cmp.Compare(a.Seq, b.Seq) })
	out := make([]job.Message, 0, len(rows))
	for _, r := range rows {
		// attempts is the row's after the lease, this one counted.
		out = append(out, job.Message{Key: r.Key, Topic: r.Topic, Payload: r.Payload, Attempts: r.Attempts, CreatedAt: r.CreatedAt.UTC()})
	}
	return out, nil
}

// AckMessages deletes handled messages in one statement.
func (s *Store) AckMessages(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	_, err := s.w.NewDelete().Model((*outboxRow)(nil)).Where("key IN (?)", bun.In(keys)).Exec(ctx)
	return mapErr("outbox", err)
}

// RetryMessage makes a leased message available again at at.
func (s *Store) RetryMessage(ctx context.Context, key string, at time.Time) error {
	_, err := s.w.NewUpdate().Model((*outboxRow)(nil)).Set("available_at = ?", at.UTC().Truncate(time.Microsecond)).
		Where("key = ?", key).Exec(ctx)
	return mapErr("outbox", err)
}
