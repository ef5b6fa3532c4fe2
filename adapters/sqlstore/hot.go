package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/schema"
)

// The statements on every request's path — the key lookup of authentication, the balance read
// of the submit gate, and on SQLite the read of one job, which every GET /jobs/{id}, wait,
// heartbeat and report makes — are prepared once and reused: bun writes its arguments into the
// SQL text, so every other query is parsed anew, which under load costs SQLite as much as
// running it (a job read: 57 µs through bun, 20 µs prepared). database/sql prepares a
// *sql.Stmt again on each pooled connection as needed.
type hotQuery int

const (
	hotAuth hotQuery = iota
	hotSession
	hotBalance
	// hotJob reads one job by ID on the read pool; hotJobLocked, in a write transaction.
	// SQLite only (Store.readJob).
	hotJob
	hotJobLocked
	// hotJobWrite writes a whole job row in a write transaction (Store.write), which every
	// claim, heartbeat and report makes: bun's text of it, every value written in, was a new
	// statement for SQLite to parse each time, a third of a job change's time. SQLite only.
	hotJobWrite
	// hotOutbox writes one outbox message in its job change's transaction (enqueue). SQLite
	// only, as the job reads.
	hotOutbox
	// hotDueWebhooks and hotDueDestinations ask whether anything is due at a time, on the read
	// pool, before a poller's claim takes a write transaction (Store.anyDue). The outbox relay
	// has none: a change that writes a message wakes it, so its passes mostly find one, and
	// the read cost more than it saved (0.5-1 ms of CPU a job through the fleet).
	hotDueWebhooks
	hotDueDestinations
	// hotAnyWaiting asks whether any job of a class waits, on the read pool, before a claim
	// takes a write transaction (Store.Claim): a runner claims again as each of its jobs'
	// compute ends, mostly finding nothing where runners outnumber the work, and that claim
	// held SQLite's one writer while the report of the job that freed its slot waited for it.
	hotAnyWaiting
	// hotAccount reads an account by ID, which every claim (its plan's caps for the
	// assignment) and every report (the caps its files are held to) ask for. SQLite only, as
	// the job reads.
	hotAccount
	// hotJobDelivery reads a job's destination delivery, which every GET /jobs/{id} and every
	// job's end ask after, and most jobs have none. SQLite only, as the job reads.
	hotJobDelivery
	// hotEndpoints lists an account's webhook endpoints, which the relay asks at every job
	// event. SQLite only, as the job reads.
	hotEndpoints
	// hotClaimMessages leases the relay's next messages in one statement, which every pass of
	// the relay makes; hotLedgerAppend and hotBalanceAdd append a ledger entry and move its
	// account's balance, which every billed job makes twice (at its end, and again, a no-op,
	// from its outbox message). SQLite only, as the job reads.
	hotClaimMessages
	hotLedgerAppend
	hotBalanceAdd
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
	hotOutbox: `INSERT INTO "outbox" ("key", "topic", "payload", "attempts", "created_at", "available_at")
		VALUES (?, ?, ?, 0, ?, ?) ON CONFLICT (key) DO NOTHING`,
	hotDueWebhooks:     `SELECT 1 FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= ? LIMIT 1`,
	hotDueDestinations: `SELECT 1 FROM destination_deliveries WHERE state = 'pending' AND next_attempt_at <= ? LIMIT 1`,
	hotAnyWaiting:      `SELECT 1 FROM jobs WHERE status = 'waiting' AND class = ? LIMIT 1`,
	// The rows come back in no particular order; ClaimMessages sorts them by seq.
	hotClaimMessages: `UPDATE outbox SET available_at = ?, attempts = attempts + 1
		WHERE seq IN (SELECT seq FROM outbox WHERE available_at <= ? ORDER BY seq LIMIT ?)
		RETURNING seq, key, topic, payload, attempts, created_at, available_at`,
	hotLedgerAppend: `INSERT INTO ledger (key, account_id, kind, amount, job_id, note, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING RETURNING seq`,
	hotBalanceAdd: `INSERT INTO balances (account_id, balance) VALUES (?, ?)
		ON CONFLICT (account_id) DO UPDATE SET balance = balances.balance + excluded.balance`,
	// hotJob and hotJobLocked are written by bun from jobRow (hotText): its columns, in order.
}

// hotText is q's SQL: hotSQL's, or bun's select of a whole row for the job and delivery reads.
func hotText(db *bun.DB, q hotQuery) string {
	switch q {
	case hotJob, hotJobLocked:
		return db.NewSelect().Model((*jobRow)(nil)).Where("job_row.id = ?", bun.Safe("?")).String()
	case hotJobWrite:
		return jobWriteText(db)
	case hotAccount:
		return db.NewSelect().Model((*accountRow)(nil)).Where("id = ?", bun.Safe("?")).String()
	case hotJobDelivery:
		return db.NewSelect().Model((*destinationDeliveryRow)(nil)).Where("job_id = ?", bun.Safe("?")).String()
	case hotEndpoints:
		return db.NewSelect().Model((*endpointRow)(nil)).Where("account_id = ?", bun.Safe("?")).OrderExpr("created_at, id").String()
	}
	return hotSQL[q]
}

type hotStmts struct {
	mu    sync.Mutex
	stmts [hotCount]*sql.Stmt
	// claims are the claim's statements on SQLite, by text (Store.claimIDs), at most
	// maxClaims of them; a claim of a text past it runs unprepared.
	claims    map[string]*sql.Stmt
	maxClaims int
	// claimTexts are those texts by what they are made of (Store.claimText), at most
	// maxClaims of them.
	claimTexts map[string]string
}

// maxClaimStmts is a store's hotStmts.maxClaims: one statement for each class and limit a
// fleet's workers ask for (their free slots) is a few dozen at most.
const maxClaimStmts = 256

// stmt returns the prepared statement of q on db, preparing it on first use. The text's ?
// placeholders become $1, $2, ... on PostgreSQL.
func (h *hotStmts) stmt(ctx context.Context, db *bun.DB, q hotQuery) (*sql.Stmt, error) {
	h.mu.Lock()
	st := h.stmts[q]
	h.mu.Unlock()
	if st != nil {
		return st, nil
	}
	text := hotText(db, q)
	if db.Dialect().Name() == dialect.PG {
		text = numbered(text)
	}
	return h.keep(ctx, db, text, func(st *sql.Stmt) *sql.Stmt {
		if cur := h.stmts[q]; cur != nil {
			return cur
		}
		h.stmts[q] = st
		return st
	})
}

// writerStmts returns the prepared statements of qs on SQLite's writer, for a write
// transaction: they are prepared before it begins, since it holds the writer's one connection.
// On PostgreSQL, whose write transactions run bun's text, each is nil (hotRow, hotExec).
func (s *Store) writerStmts(ctx context.Context, qs ...hotQuery) ([]*sql.Stmt, error) {
	out := make([]*sql.Stmt, len(qs))
	if s.postgres {
		return out, nil
	}
	for i, q := range qs {
		st, err := s.hot.stmt(ctx, s.w, q)
		if err != nil {
			return nil, err
		}
		out[i] = st
	}
	return out, nil
}

// hotRow runs q in tx through st, its statement from writerStmts, or bun's text of it where
// st is nil. A time argument is bound as timeText, the text bun writes, in both.
func hotRow(ctx context.Context, tx bun.Tx, st *sql.Stmt, q hotQuery, args ...any) *sql.Row {
	if st != nil {
		return tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, hotSQL[q], args...)
}

// hotExec is hotRow for a statement that returns no rows.
func hotExec(ctx context.Context, tx bun.Tx, st *sql.Stmt, q hotQuery, args ...any) error {
	var err error
	if st != nil {
		_, err = tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	} else {
		_, err = tx.ExecContext(ctx, hotSQL[q], args...)
	}
	return err
}

// claim returns the prepared statement of a claim's text on db, preparing it on first use; nil
// past maxClaims texts.
func (h *hotStmts) claim(ctx context.Context, db *bun.DB, text string) (*sql.Stmt, error) {
	h.mu.Lock()
	st, full := h.claims[text], len(h.claims) >= h.maxClaims
	h.mu.Unlock()
	if st != nil || full {
		return st, nil
	}
	return h.keep(ctx, db, text, func(st *sql.Stmt) *sql.Stmt {
		if cur := h.claims[text]; cur != nil {
			return cur
		}
		if len(h.claims) >= h.maxClaims {
			return nil
		}
		if h.claims == nil {
			h.claims = map[string]*sql.Stmt{}
		}
		h.claims[text] = st
		return st
	})
}

// keep prepares text on db and answers the statement kept, which kept decides under the lock:
// st, one another call kept first, or nil (none). The lock is not held while preparing:
// SQLite's writer pool has one connection, which a transaction may hold while it reads through
// a hot statement.
func (h *hotStmts) keep(ctx context.Context, db *bun.DB, text string, kept func(st *sql.Stmt) *sql.Stmt) (*sql.Stmt, error) {
	st, err := db.DB.PrepareContext(ctx, text)
	if err != nil {
		return nil, mapErr("prepare", err) // a database gone is ErrUnreachable, as any query's
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	k := kept(st)
	if k != st {
		_ = st.Close()
	}
	return k, nil
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
	for text, st := range h.claims {
		_ = st.Close()
		delete(h.claims, text)
	}
}

// anyDue answers whether q (one of the hotDue queries) finds a row due at now. The delivery
// pollers, of webhooks and of destinations, wake every fraction of a second and mostly find
// nothing; the read keeps those passes off the single writer (SQLite) or out of
// a locking transaction (PostgreSQL). A row that falls due just after it is the next pass's,
// as it would be had the claim itself run a moment earlier.
func (s *Store) anyDue(ctx context.Context, q hotQuery, now time.Time) (bool, error) {
	var at any = now
	if s.r.Dialect().Name() == dialect.SQLite {
		at = timeText(s.r.Dialect(), now)
	}
	return s.any(ctx, q, at)
}

// any answers whether q, a SELECT 1 … LIMIT 1 of hotSQL, finds a row, on the read pool.
func (s *Store) any(ctx context.Context, q hotQuery, args ...any) (bool, error) {
	st, err := s.hot.stmt(ctx, s.r, q)
	if err != nil {
		return false, err
	}
	var one int
	switch err := st.QueryRowContext(ctx, args...).Scan(&one); {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, mapErr("any", err)
	}
	return true, nil
}

// timeText is t as bun writes a time into a query, unquoted: the parameter a prepared statement
// binds where bun would write the literal, since SQLite compares the stored times as text.
func timeText(d schema.Dialect, t time.Time) string {
	b := d.AppendTime(nil, t)
	return string(b[1 : len(b)-1])
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
