package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/driver/pgdriver"
	"github.com/uptrace/bun/migrate"
	"modernc.org/sqlite"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/asset"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
)

// Store implements job.Store, batch.Store, account.Store and asset.Store over SQLite or PostgreSQL.
type Store struct {
	// w takes every write. On SQLite it is one connection, so writers queue in Go instead of
	// spinning on SQLITE_BUSY; r is a pool of read-only connections that WAL lets run beside it.
	// On PostgreSQL both are the same pool.
	w, r     *bun.DB
	postgres bool
	// group batches job Creates into shared statements (commit.go).
	group *committer
	// hot holds the prepared statements of the hottest reads.
	hot hotStmts
	// OnOutbox, when set, is called after a transaction that wrote outbox messages commits,
	// so that the relay hands them on at once rather than at its next poll.
	OnOutbox func()
}

func (s *Store) outboxWritten() {
	if s.OnOutbox != nil {
		s.OnOutbox()
	}
}

var (
	_ job.Store     = (*Store)(nil)
	_ account.Store = (*Store)(nil)
	_ asset.Store   = (*Store)(nil)
)

//go:embed migrations
var migrationFiles embed.FS

// OpenSQLite opens (creating if needed) the SQLite database file at path and migrates it.
func OpenSQLite(ctx context.Context, path string) (*Store, error) {
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("sqlstore: sqlite path %q: empty or contains ? or #", path)
	}
	// The database holds key hashes and the ledger: only its owner may read it. SQLite gives
	// its -wal and -shm files the database file's mode, so creating it 0600 covers them too;
	// an older file made world-readable is tightened.
	if err := createPrivate(path); err != nil {
		return nil, fmt.Errorf("sqlstore: %w", err)
	}
	// busy_timeout covers other processes (a `mediajobs migrate` beside a server); _txlock=immediate
	// takes the write lock at BEGIN, so a transaction never fails to upgrade a read lock midway.
	// synchronous=NORMAL is durable across crashes of the process in WAL mode; only a power loss
	// can drop the last commits.
	w, err := openSQLite(path, "_txlock=immediate&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"+
		"&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)", 1)
	if err != nil {
		return nil, err
	}
	if err := w.PingContext(ctx); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("sqlstore: open %s: %w", path, err)
	}
	r, err := openSQLite(path, "_pragma=busy_timeout(10000)&_pragma=query_only(1)", max(4, runtime.GOMAXPROCS(0)))
	if err != nil {
		_ = w.Close()
		return nil, err
	}
	s := &Store{w: w, r: r, hot: hotStmts{maxClaims: maxClaimStmts}}
	s.startCommitter()
	return open(ctx, s)
}

// createPrivate makes the file at path if it is missing, and leaves it (and its -wal and -shm
// files, when present) readable by its owner only.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(p, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

func openSQLite(path, params string, conns int) (*bun.DB, error) {
	sqldb, err := sql.Open("sqlite", "file:"+path+"?"+params)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: open %s: %w", path, err)
	}
	sqldb.SetMaxOpenConns(conns)
	sqldb.SetMaxIdleConns(conns)
	sqldb.SetConnMaxLifetime(0)
	sqldb.SetConnMaxIdleTime(0)
	return bun.NewDB(sqldb, sqlitedialect.New()), nil
}

// DefaultMaxConns bounds a PostgreSQL store's connection pool: well under the server's default
// max_connections (100), so that several replicas and the operator's tools fit beside each
// other. A burst beyond it waits its turn for a connection instead of failing.
const DefaultMaxConns = 20

// Option configures a store.
type Option func(*options)

type options struct {
	maxConns int
}

// MaxConns bounds the PostgreSQL connection pool (every use of the store shares it); n ≤ 0
// keeps DefaultMaxConns.
func MaxConns(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.maxConns = n
		}
	}
}

// OpenPostgres connects to the PostgreSQL database of dsn (postgres://user@host:port/db?sslmode=...;
// other query parameters, such as search_path, are sent as run-time parameters) and migrates it.
func OpenPostgres(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	if _, err := url.Parse(dsn); err != nil {
		return nil, fmt.Errorf("sqlstore: postgres dsn: %w", err)
	}
	o := options{maxConns: DefaultMaxConns}
	for _, opt := range opts {
		opt(&o)
	}
	sqldb := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dsn)))
	sqldb.SetMaxOpenConns(o.maxConns)
	sqldb.SetMaxIdleConns(o.maxConns)
	sqldb.SetConnMaxIdleTime(5 * time.Minute)
	db := bun.NewDB(sqldb, pgdialect.New())
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("sqlstore: connect to postgres: %w", err)
	}
	s := &Store{w: db, r: db, postgres: true}
	s.startCommitter()
	return open(ctx, s)
}

func open(ctx context.Context, s *Store) (*Store, error) {
	if _, err := s.Migrate(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error {
	s.group.stop()
	s.hot.close()
	if s.r == s.w {
		return s.w.Close()
	}
	return errors.Join(s.r.Close(), s.w.Close())
}

// Ping reports whether the database answers, for readiness checks.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.w.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlstore: ping: %w", err)
	}
	if s.r != s.w {
		if err := s.r.PingContext(ctx); err != nil {
			return fmt.Errorf("sqlstore: ping: %w", err)
		}
	}
	return nil
}

// ProbeWrite writes one row, for readiness: a store that answers but cannot be written (its
// disk full, a read-only replica) is not ready to take jobs.
func (s *Store) ProbeWrite(ctx context.Context) error {
	_, err := s.w.NewRaw("INSERT INTO health (id, at) VALUES ('probe', ?) ON CONFLICT (id) DO UPDATE SET at = excluded.at",
		time.Now().UTC().Truncate(time.Microsecond)).Exec(ctx)
	if err != nil {
		return fmt.Errorf("sqlstore: probe write: %w", err)
	}
	return nil
}

func (s *Store) migrator() (*migrate.Migrator, error) {
	dir := "migrations/sqlite"
	if s.postgres {
		dir = "migrations/postgres"
	}
	sub, err := fs.Sub(migrationFiles, dir)
	if err != nil {
		return nil, err
	}
	ms := migrate.NewMigrations()
	if err := ms.Discover(sub); err != nil {
		return nil, fmt.Errorf("sqlstore: migrations: %w", err)
	}
	// Recorded only once applied: a migration that fails is tried again on the next start.
	return migrate.NewMigrator(s.w, ms, migrate.WithMarkAppliedOnSuccess(true)), nil
}

// Migrate applies the migrations the database lacks, each in its own transaction, and returns
// their names; none when the schema is current. Open calls it.
func (s *Store) Migrate(ctx context.Context) ([]string, error) {
	m, err := s.migrator()
	if err != nil {
		return nil, err
	}
	if err := m.Init(ctx); err != nil {
		return nil, fmt.Errorf("sqlstore: migrate: %w", err)
	}
	g, err := m.Migrate(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: migrate: %w", err)
	}
	var names []string
	for _, mg := range g.Migrations {
		names = append(names, mg.Name)
	}
	return names, nil
}

// AppliedMigrations returns the names of the applied migrations, oldest first.
func (s *Store) AppliedMigrations(ctx context.Context) ([]string, error) {
	m, err := s.migrator()
	if err != nil {
		return nil, err
	}
	ms, err := m.MigrationsWithStatus(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: migrations: %w", err)
	}
	var names []string
	for _, mg := range ms.Applied() {
		names = append(names, mg.Name)
	}
	// Applied lists newest first.
	for i, j := 0, len(names)-1; i < j; i, j = i+1, j-1 {
		names[i], names[j] = names[j], names[i]
	}
	return names, nil
}

// errNoRow is an UPDATE that matched nothing.
var errNoRow = errors.New("no such row")

// Error codes of unique and foreign-key violations.
const (
	pgUniqueViolation     = "23505"
	pgForeignKeyViolation = "23503"
	// SQLite's extended result codes.
	sqliteConstraintPrimaryKey = 1555
	sqliteConstraintUnique     = 2067
	sqliteConstraintForeignKey = 787
	// A full disk: SQLite's SQLITE_FULL (its primary code, the low byte), PostgreSQL's
	// disk_full and out-of-memory class.
	sqliteFull     = 13
	pgDiskFull     = "53100"
	pgOutOfMemory  = "53200"
	pgTooManyConns = "53300"
)

// ErrStorageFull is a write the store refused for want of space: the service is unavailable
// for writes, not broken, and the client may retry later.
var ErrStorageFull = &problem.Problem{Code: problem.CodeUnavailable, RetryAfter: 30 * time.Second,
	Message: "the service cannot store this right now (its storage is full); retry later"}

// ErrUnreachable is a call the database server did not answer: it is restarting, shutting
// down, or the network to it failed. The service is unavailable, not broken: 503 with
// Retry-After, and a worker's upload or report is sent again.
var ErrUnreachable = &problem.Problem{Code: problem.CodeUnavailable, RetryAfter: 5 * time.Second,
	Message: "the service's database does not answer right now; retry later"}

// unreachable tells a failure to reach the database server from the server's answer to a
// statement: a refused or broken connection, or the server's own "shutting down" and
// "starting up" (SQLSTATE class 08, 57P01 to 57P03).
func unreachable(err error) bool {
	var (
		pgErr pgdriver.Error
		opErr *net.OpError
	)
	if errors.As(err, &pgErr) {
		code := pgErr.Field('C')
		return strings.HasPrefix(code, "08") || code == "57P01" || code == "57P02" || code == "57P03"
	}
	return errors.As(err, &opErr) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, io.EOF) // a connection the server closed (a restart), read by a pooled statement
}

// storageFull tells a write refused for want of space (or of server resources) from other
// failures.
func storageFull(err error) bool {
	var (
		pgErr pgdriver.Error
		slErr *sqlite.Error
	)
	return errors.As(err, &slErr) && slErr.Code()&0xff == sqliteFull ||
		errors.As(err, &pgErr) && slices.Contains([]string{pgDiskFull, pgOutOfMemory, pgTooManyConns}, pgErr.Field('C')) ||
		errors.Is(err, syscall.ENOSPC)
}

// inTx runs fn in a write transaction. A commit refused for want of space is ErrStorageFull,
// as the statements' own errors are (mapErr).
func (s *Store) inTx(ctx context.Context, fn func(ctx context.Context, tx bun.Tx) error) error {
	err := s.w.RunInTx(ctx, nil, fn)
	if err != nil && !errors.Is(err, ErrStorageFull) && storageFull(err) {
		return fmt.Errorf("sqlstore: commit: %w: %w", ErrStorageFull, err)
	}
	if err != nil && !errors.Is(err, ErrUnreachable) && unreachable(err) {
		return fmt.Errorf("sqlstore: %w: %w", ErrUnreachable, err)
	}
	return err
}

// mapErr turns driver errors that callers branch on into the core's sentinels: no row is
// problem.ErrNotFound, a taken key is problem.ErrConflict, a missing referenced row is problem.ErrNotFound.
func mapErr(what string, err error) error {
	if err == nil {
		return nil
	}
	var (
		pgErr pgdriver.Error
		slErr *sqlite.Error
	)
	switch {
	case errors.Is(err, sql.ErrNoRows), errors.Is(err, errNoRow):
		return fmt.Errorf("%s: %w", what, problem.ErrNotFound)
	case errors.As(err, &pgErr) && pgErr.Field('C') == pgUniqueViolation,
		errors.As(err, &slErr) && (slErr.Code() == sqliteConstraintUnique || slErr.Code() == sqliteConstraintPrimaryKey):
		return fmt.Errorf("%s: %w", what, problem.ErrConflict)
	case errors.As(err, &pgErr) && pgErr.Field('C') == pgForeignKeyViolation,
		errors.As(err, &slErr) && slErr.Code() == sqliteConstraintForeignKey:
		return fmt.Errorf("%s: %w", what, problem.ErrNotFound)
	case storageFull(err):
		return fmt.Errorf("sqlstore: %s: %w: %w", what, ErrStorageFull, err)
	case unreachable(err):
		return fmt.Errorf("sqlstore: %s: %w: %w", what, ErrUnreachable, err)
	}
	return fmt.Errorf("sqlstore: %s: %w", what, err)
}
