package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"github.com/uptrace/bun"

	"github.com/mediajobs/mediajobs/core/account"
)

type accountRow struct {
	bun.BaseModel `bun:"table:accounts"`

	ID        string    `bun:"id,pk"`
	Plan      string    `bun:"plan"`
	CreatedAt time.Time `bun:"created_at"`
}

func (r accountRow) account() account.Account {
	return account.Account{ID: r.ID, Plan: account.Plan(r.Plan), CreatedAt: r.CreatedAt.UTC()}
}

type keyRow struct {
	bun.BaseModel `bun:"table:api_keys"`

	ID         string     `bun:"id,pk"`
	AccountID  string     `bun:"account_id"`
	Hash       string     `bun:"hash"`
	Prefix     string     `bun:"prefix"`
	CreatedAt  time.Time  `bun:"created_at"`
	RevokedAt  *time.Time `bun:"revoked_at"`
	LastUsedAt *time.Time `bun:"last_used_at"`
}

func (r keyRow) key() account.Key {
	return account.Key{ID: r.ID, AccountID: r.AccountID, Hash: r.Hash, Prefix: r.Prefix,
		CreatedAt: r.CreatedAt.UTC(), RevokedAt: utc(r.RevokedAt), LastUsedAt: utc(r.LastUsedAt)}
}

// CreateAccount saves a new account; a taken ID is problem.ErrConflict.
func (s *Store) CreateAccount(ctx context.Context, a account.Account) error {
	r := &accountRow{ID: a.ID, Plan: string(a.Plan), CreatedAt: a.CreatedAt.UTC()}
	_, err := s.w.NewInsert().Model(r).Exec(ctx)
	return mapErr("create account "+a.ID, err)
}

// GetAccount returns the account or problem.ErrNotFound.
func (s *Store) GetAccount(ctx context.Context, id string) (account.Account, error) {
	var r accountRow
	if s.postgres {
		if err := s.r.NewSelect().Model(&r).Where("id = ?", id).Scan(ctx); err != nil {
			return account.Account{}, mapErr("account "+id, err)
		}
		return r.account(), nil
	}
	st, err := s.hot.stmt(ctx, s.r, hotAccount)
	if err != nil {
		return account.Account{}, err
	}
	if err := s.scanOne(ctx, st, id, &r, "account "+id); err != nil {
		return account.Account{}, err
	}
	return r.account(), nil
}

// SetPlan changes an account's plan; a missing account is problem.ErrNotFound.
func (s *Store) SetPlan(ctx context.Context, id string, p account.Plan) error {
	res, err := s.w.NewUpdate().Model((*accountRow)(nil)).Set("plan = ?", string(p)).Where("id = ?", id).Exec(ctx)
	return affected("account "+id, res, err)
}

// CreateKey saves a key; a taken ID or hash is problem.ErrConflict, a missing account problem.ErrNotFound.
func (s *Store) CreateKey(ctx context.Context, k account.Key) error {
	r := &keyRow{ID: k.ID, AccountID: k.AccountID, Hash: k.Hash, Prefix: k.Prefix,
		CreatedAt: k.CreatedAt.UTC(), RevokedAt: utc(k.RevokedAt)}
	_, err := s.w.NewInsert().Model(r).Exec(ctx)
	return mapErr("create key "+k.ID+" of account "+k.AccountID, err)
}

// AccountByKeyHash returns the account of an unrevoked key with that hash, or problem.ErrNotFound.
// It runs on every authenticated request: one indexed join, through a prepared statement (see
// hot.go), so that it is not parsed anew each time.
func (s *Store) AccountByKeyHash(ctx context.Context, hash string) (account.Account, account.Key, error) {
	a, k, _, err := s.AccountAndBalanceByKeyHash(ctx, hash)
	return a, k, err
}

// AccountAndBalanceByKeyHash is AccountByKeyHash with the account's balance, read in the same
// statement (service.KeyBalances).
func (s *Store) AccountAndBalanceByKeyHash(ctx context.Context, hash string) (account.Account, account.Key, int64, error) {
	stmt, err := s.hot.stmt(ctx, s.r, hotAuth)
	if err != nil {
		return account.Account{}, account.Key{}, 0, err
	}
	var (
		k       keyRow
		a       accountRow
		rev     sql.NullTime
		used    sql.NullTime
		acct    time.Time
		balance int64
	)
	err = stmt.QueryRowContext(ctx, hash).Scan(&k.ID, &k.AccountID, &k.Hash, &k.Prefix, &k.CreatedAt, &rev, &used, &a.Plan, &acct, &balance)
	if err != nil {
		return account.Account{}, account.Key{}, 0, mapErr("key", err)
	}
	if rev.Valid {
		k.RevokedAt = &rev.Time
	}
	if used.Valid {
		k.LastUsedAt = &used.Time
	}
	a.ID, a.CreatedAt = k.AccountID, acct
	return a.account(), k.key(), balance, nil
}

// RevokeKey marks an account's key revoked at at; revoking again keeps the first time. A key
// that is not the account's is problem.ErrNotFound.
func (s *Store) RevokeKey(ctx context.Context, accountID, keyID string, at time.Time) error {
	res, err := s.w.NewUpdate().Model((*keyRow)(nil)).
		Set("revoked_at = COALESCE(revoked_at, ?)", at.UTC()).
		Where("id = ?", keyID).Where("account_id = ?", accountID).Exec(ctx)
	return affected("key "+keyID+" of account "+accountID, res, err)
}

// affected maps an UPDATE that matched no row to problem.ErrNotFound.
func affected(what string, res interface{ RowsAffected() (int64, error) }, err error) error {
	if err != nil {
		return mapErr(what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return mapErr(what, err)
	}
	if n == 0 {
		return mapErr(what, errNoRow)
	}
	return nil
}

// ListAccounts returns a page of accounts by ID after p.After, on p.Plan when set.
func (s *Store) ListAccounts(ctx context.Context, p account.ListParams) ([]account.Account, error) {
	var rows []accountRow
	q := s.r.NewSelect().Model(&rows).Where("id > ?", p.After).OrderExpr("id").Limit(int64(max(p.Limit, 1)))
	if p.Plan != "" {
		q = q.Where("plan = ?", string(p.Plan))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, mapErr("list accounts", err)
	}
	out := make([]account.Account, len(rows))
	for i, r := range rows {
		out[i] = r.account()
	}
	return out, nil
}

// ListKeys returns every key of an account, revoked ones too, newest first.
func (s *Store) ListKeys(ctx context.Context, accountID string) ([]account.Key, error) {
	var rows []keyRow
	err := s.r.NewSelect().Model(&rows).Where("account_id = ?", accountID).OrderExpr("created_at DESC, id DESC").Scan(ctx)
	if err != nil {
		return nil, mapErr("keys of account "+accountID, err)
	}
	out := make([]account.Key, len(rows))
	for i, r := range rows {
		out[i] = r.key()
	}
	return out, nil
}

// TouchKey records a key's use at at, never moving it back.
func (s *Store) TouchKey(ctx context.Context, keyID string, at time.Time) error {
	res, err := s.w.NewUpdate().Model((*keyRow)(nil)).
		Set("last_used_at = CASE WHEN last_used_at IS NULL OR last_used_at < ? THEN ? ELSE last_used_at END", at.UTC(), at.UTC()).
		Where("id = ?", keyID).Exec(ctx)
	return affected("key "+keyID, res, err)
}

type sessionRow struct {
	bun.BaseModel `bun:"table:sessions"`

	ID        string    `bun:"id,pk"`
	AccountID string    `bun:"account_id"`
	KeyID     string    `bun:"key_id"`
	Hash      string    `bun:"hash"`
	CreatedAt time.Time `bun:"created_at"`
	ExpiresAt time.Time `bun:"expires_at"`
}

// CreateSession saves a session of a key of its account: a key that is not the account's is
// problem.ErrNotFound, a taken ID or hash problem.ErrConflict.
func (s *Store) CreateSession(ctx context.Context, sess account.Session) error {
	what := "create session of key " + sess.KeyID
	// Inserting from the key's row checks that the key is the account's in the same statement.
	res, err := s.w.NewRaw(`INSERT INTO sessions (id, account_id, key_id, hash, created_at, expires_at)
		SELECT ?, account_id, id, ?, ?, ? FROM api_keys WHERE id = ? AND account_id = ?`,
		sess.ID, sess.Hash, sess.CreatedAt.UTC(), sess.ExpiresAt.UTC(), sess.KeyID, sess.AccountID).Exec(ctx)
	return affected(what, res, err)
}

// SessionByHash returns a session and its account while its key is unrevoked. It runs on every
// request of the console, through a prepared statement like AccountByKeyHash.
func (s *Store) SessionByHash(ctx context.Context, hash string) (account.Account, account.Session, error) {
	stmt, err := s.hot.stmt(ctx, s.r, hotSession)
	if err != nil {
		return account.Account{}, account.Session{}, err
	}
	var (
		r    sessionRow
		a    accountRow
		acct time.Time
	)
	err = stmt.QueryRowContext(ctx, hash).Scan(&r.ID, &r.AccountID, &r.KeyID, &r.Hash, &r.CreatedAt, &r.ExpiresAt, &a.Plan, &acct)
	if err != nil {
		return account.Account{}, account.Session{}, mapErr("session", err)
	}
	a.ID, a.CreatedAt = r.AccountID, acct
	return a.account(), account.Session{ID: r.ID, AccountID: r.AccountID, KeyID: r.KeyID, Hash: r.Hash,
		CreatedAt: r.CreatedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC()}, nil
}

// DeleteSession removes the session of a hash, if there is one.
func (s *Store) DeleteSession(ctx context.Context, hash string) error {
	_, err := s.w.NewDelete().Model((*sessionRow)(nil)).Where("hash = ?", hash).Exec(ctx)
	return mapErr("delete session", err)
}

// DeleteExpiredSessions removes the sessions that expired before now.
func (s *Store) DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error) {
	res, err := s.w.NewDelete().Model((*sessionRow)(nil)).Where("expires_at < ?", now.UTC()).Exec(ctx)
	if err != nil {
		return 0, mapErr("delete expired sessions", err)
	}
	n, err := res.RowsAffected()
	return int(n), mapErr("delete expired sessions", err)
}
