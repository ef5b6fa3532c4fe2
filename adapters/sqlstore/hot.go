package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// The statements on every request's path — the key lookup of authentication and the balance
// read of the submit gate — are prepared once and reused: bun writes its arguments into the SQL
// text, so every other query is parsed anew, which under load costs SQLite as much as running it.
// database/sql prepares a *sql.Stmt again on each pooled connection as needed.
type hotQuery int

const (
	hotAuth hotQuery = iota
	hotSession
	hotBalance
	hotCount
)

var hotSQL = [hotCount]string{
	// The key's account comes with its balance, which the submit gate then need not read.
	hotAuth: `SELECT k.id, k.account_id, k.hash, k.prefix, k.created_at, k.revoked_at, k.last_used_at, a.plan, a.created_at,
		COALESCE(b.balance, 0)
		FROM api_keys AS k JOIN accounts AS a ON a.id = k.account_id LEFT JOIN balances AS b ON b.account_id = k.account_id
		WHERE k.hash = ? AND k.revoked_at IS NULL`,
	hotSession: `SELECT s.id, s.account_id, s.key_id, s.hash, s.created_at, s.expires_at, a.plan, a.created_at
		FROM sessions AS s JOIN api_keys AS k ON k.id = s.key_id JOIN accounts AS a ON a.id = s.account_id
		WHERE s.hash = ? AND k.revoked_at IS NULL`,
	hotBalance: `SELECT balance FROM balances WHERE account_id = ?`,
}

type hotStmts struct {
	mu    sync.Mutex
	stmts [hotCount]*sql.Stmt
}

// stmt returns the prepared statement of q on db, preparing it on first use. The text's ?
// placeholders become $1, $2, ... on PostgreSQL.
func (h *hotStmts) stmt(ctx context.Context, db *bun.DB, q hotQuery) (*sql.Stmt, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if st := h.stmts[q]; st != nil {
		return st, nil
	}
	text := hotSQL[q]
	if db.Dialect().Name() == dialect.PG {
		text = numbered(text)
	}
	st, err := db.DB.PrepareContext(ctx, text)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: prepare: %w", err)
	}
	h.stmts[q] = st
	return st, nil
}

func (h *hotStmts) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, st := range h.stmts {
		if st != nil {
			_ = st.Close()
			h.stmts[i] = nil
		}
	}
}

// numbered turns ? placeholders into $1, $2, ... (the hot queries hold no literal ?).
func numbered(q string) string {
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
