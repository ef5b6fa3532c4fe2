package sqlstore

import (
	"context"
	"errors"
	"time"

	"github.com/uptrace/bun"

	"github.com/mediajobs/mediajobs/core/idempotency"
	"github.com/mediajobs/mediajobs/core/problem"
)

var _ idempotency.Store = (*Store)(nil)

type idempotencyRow struct {
	bun.BaseModel `bun:"table:idempotency_keys"`

	AccountID   string    `bun:"account_id,pk"`
	Key         string    `bun:"idem_key,pk"`
	Operation   string    `bun:"operation"`
	Fingerprint string    `bun:"fingerprint"`
	State       string    `bun:"state"`
	Owner       string    `bun:"owner"`
	Response    []byte    `bun:"response"`
	CreatedAt   time.Time `bun:"created_at"`
	ExpiresAt   time.Time `bun:"expires_at"`
	LeaseUntil  time.Time `bun:"lease_until"`
}

func utcMicro(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// ReserveKey inserts the record, or replaces one that no longer holds its key, in one
// statement: the primary key makes concurrent reservations of one key resolve to one.
func (s *Store) ReserveKey(ctx context.Context, rec idempotency.Record, now time.Time) (idempotency.Record, bool, error) {
	now = utcMicro(now)
	// A row released between the insert and the read is gone: try again.
	for range 5 {
		res, err := s.w.NewRaw(`INSERT INTO idempotency_keys
			(account_id, idem_key, operation, fingerprint, state, owner, response, created_at, expires_at, lease_until)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (account_id, idem_key) DO UPDATE SET operation = excluded.operation,
			fingerprint = excluded.fingerprint, state = excluded.state, owner = excluded.owner,
			response = excluded.response, created_at = excluded.created_at,
			expires_at = excluded.expires_at, lease_until = excluded.lease_until
			WHERE idempotency_keys.expires_at <= ?
			   OR (idempotency_keys.state = ? AND idempotency_keys.lease_until <= ?)`,
			rec.AccountID, rec.Key, rec.Operation, rec.Fingerprint, string(idempotency.Pending), rec.Owner, rec.Response,
			utcMicro(rec.CreatedAt), utcMicro(rec.ExpiresAt), utcMicro(rec.LeaseUntil),
			now, string(idempotency.Pending), now).Exec(ctx)
		if err != nil {
			return idempotency.Record{}, false, mapErr("reserve idempotency key", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return idempotency.Record{}, false, mapErr("reserve idempotency key", err)
		} else if n == 1 {
			return idempotency.Record{}, true, nil
		}
		prior, err := s.getKey(ctx, s.w, rec.AccountID, rec.Key)
		if errors.Is(err, problem.ErrNotFound) {
			continue
		}
		return prior, false, err
	}
	return idempotency.Record{}, false, errors.New("sqlstore: reserve idempotency key: the key keeps changing hands")
}

// CompleteKey implements idempotency.Store.
func (s *Store) CompleteKey(ctx context.Context, accountID, key, owner, fingerprint string, response []byte) error {
	res, err := s.w.NewRaw(`UPDATE idempotency_keys SET state = ?, fingerprint = ?, response = ?
		WHERE account_id = ? AND idem_key = ? AND owner = ? AND state = ?`,
		string(idempotency.Done), fingerprint, response, accountID, key, owner, string(idempotency.Pending)).Exec(ctx)
	return affected("idempotency key "+key, res, err)
}

// RenewKey implements idempotency.Store.
func (s *Store) RenewKey(ctx context.Context, accountID, key, owner string, until time.Time) error {
	res, err := s.w.NewRaw(`UPDATE idempotency_keys SET lease_until = ?
		WHERE account_id = ? AND idem_key = ? AND owner = ? AND state = ?`,
		utcMicro(until), accountID, key, owner, string(idempotency.Pending)).Exec(ctx)
	return affected("idempotency key "+key, res, err)
}

// ReleaseKey implements idempotency.Store.
func (s *Store) ReleaseKey(ctx context.Context, accountID, key, owner string) error {
	_, err := s.w.NewRaw(`DELETE FROM idempotency_keys WHERE account_id = ? AND idem_key = ? AND owner = ? AND state = ?`,
		accountID, key, owner, string(idempotency.Pending)).Exec(ctx)
	return mapErr("release idempotency key "+key, err)
}

// GetKey implements idempotency.Store.
func (s *Store) GetKey(ctx context.Context, accountID, key string) (idempotency.Record, error) {
	return s.getKey(ctx, s.r, accountID, key)
}

func (s *Store) getKey(ctx context.Context, db bun.IDB, accountID, key string) (idempotency.Record, error) {
	var r idempotencyRow
	err := db.NewSelect().Model(&r).Where("account_id = ? AND idem_key = ?", accountID, key).Scan(ctx)
	if err != nil {
		return idempotency.Record{}, mapErr("idempotency key "+key, err)
	}
	return idempotency.Record{AccountID: r.AccountID, Key: r.Key, Operation: r.Operation, Fingerprint: r.Fingerprint,
		State: idempotency.State(r.State), Owner: r.Owner, Response: r.Response, CreatedAt: r.CreatedAt.UTC(),
		ExpiresAt: r.ExpiresAt.UTC(), LeaseUntil: r.LeaseUntil.UTC()}, nil
}

// PurgeKeys implements idempotency.Store.
func (s *Store) PurgeKeys(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.w.NewRaw(`DELETE FROM idempotency_keys WHERE expires_at <= ?`, utcMicro(now)).Exec(ctx)
	if err != nil {
		return 0, mapErr("purge idempotency keys", err)
	}
	n, err := res.RowsAffected()
	return n, mapErr("purge idempotency keys", err)
}
