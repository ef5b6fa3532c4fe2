// Package pgtest gives a test a PostgreSQL schema of its own, made on the local server (or the
// one MEDIAJOBS_TEST_POSTGRES_DSN names) and dropped with everything in it when the test ends.
// When no server answers and none was named (or MEDIAJOBS_TEST_SERVICES=containers), it starts
// one from the image make images builds, through testservices. It is for tests only; without
// either, tests end through testenv.Missing.
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

	"github.com/mediajobs/mediajobs/adapters/testenv"
	"github.com/mediajobs/mediajobs/adapters/testservices"
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

// admin is the one connection that creates and drops schemas, to the server at dsn; err is set
// when no server could be had.
var admin struct {
	once sync.Once
	db   *sql.DB
	dsn  string
	err  error
}

func adminDB(t testing.TB) *sql.DB {
	t.Helper()
	admin.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		admin.dsn = DSN()
		if os.Getenv("MEDIAJOBS_TEST_POSTGRES_DSN") == "" {
			// The local server, or one in a container of the image make images builds.
			admin.dsn, admin.err = testservices.Endpoint(DefaultDSN, "127.0.0.1:5432", testservices.Postgres, testservices.PostgresImage)
			if admin.err != nil {
				return
			}
		}
		admin.db, admin.err = connect(ctx, admin.dsn)
	})
	if admin.err != nil {
		testenv.Missing(t, "PostgreSQL at "+DSN()+" (scripts/services.sh starts it; MEDIAJOBS_TEST_POSTGRES_DSN names another)", admin.err)
	}
	return admin.db
}

func connect(ctx context.Context, dsn string) (*sql.DB, error) {
	db := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dsn)))
	ping, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := db.PingContext(ping); err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
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
	u, err := url.Parse(admin.dsn)
	if err != nil {
		t.Fatalf("MEDIAJOBS_TEST_POSTGRES_DSN: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Close closes the connection pool this package keeps for the test binary's lifetime (its
// schema helper's); a TestMain that checks for leaked goroutines calls it first.
func Close() {
	defer testservices.Close()
	if admin.db != nil {
		_ = admin.db.Close()
	}
}

// Require ends the test (testenv.Missing), naming the DSN, when no PostgreSQL server answers.
func Require(t testing.TB) {
	t.Helper()
	adminDB(t)
}
