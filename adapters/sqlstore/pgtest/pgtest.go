// Package pgtest gives a test a PostgreSQL schema of its own, made on the local server (or the
// one MEDIAJOBS_TEST_POSTGRES_DSN names) and dropped with everything in it when the test ends.
// It is for tests only; tests skip, naming the DSN, when no server answers.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"
)

// DefaultDSN is the local server of the development and CI machines (trust auth).
const DefaultDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// DSN is the server tests use: MEDIAJOBS_TEST_POSTGRES_DSN, or DefaultDSN.
func DSN() string {
	if dsn := os.Getenv("MEDIAJOBS_TEST_POSTGRES_DSN"); dsn != "" {
		return dsn
	}
	return DefaultDSN
}

// admin is the one connection that creates and drops schemas; err is set when no server answers.
var admin struct {
	once sync.Once
	db   *sql.DB
	err  error
}

func adminDB(t testing.TB) *sql.DB {
	t.Helper()
	admin.once.Do(func() {
		db := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(DSN())))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if admin.err = db.PingContext(ctx); admin.err != nil {
			_ = db.Close()
			return
		}
		admin.db = db
	})
	if admin.err != nil {
		t.Skipf("no PostgreSQL answers at %s (set MEDIAJOBS_TEST_POSTGRES_DSN): %v", DSN(), admin.err)
	}
	return admin.db
}

// Schema makes a schema <prefix><random hex>, registers its drop (CASCADE) with t.Cleanup, and
// returns a DSN whose search_path points at it. Register whatever connects to it (a store, a
// server) after calling Schema, so that its own cleanup runs first and closes the connections
// before the schema goes.
func Schema(t testing.TB, prefix string) string {
	t.Helper()
	db := adminDB(t)
	var b [8]byte
	_, _ = rand.Read(b[:])
	schema := prefix + hex.EncodeToString(b[:])
	if _, err := db.ExecContext(context.Background(), "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		if _, err := db.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(DSN())
	if err != nil {
		t.Fatalf("MEDIAJOBS_TEST_POSTGRES_DSN: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Require skips the test, naming the DSN, when no PostgreSQL server answers.
func Require(t testing.TB) {
	t.Helper()
	adminDB(t)
}
