package sqlstore_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/sqlstore"
	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/clock"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/service"
)

// BenchmarkAuthenticate measures authentication on SQLite as every request does it, by bearer
// key and by console session, with the recording of each key's last use on: that recording is
// one write per key per minute, so an authentication stays one indexed read.
func BenchmarkAuthenticate(b *testing.B) {
	ctx := context.Background()
	s, err := sqlstore.OpenSQLite(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	now := time.Now().UTC().Truncate(time.Microsecond)
	acc := account.Account{ID: "acc_bench", Plan: account.PlanPro, CreatedAt: now}
	if err := s.CreateAccount(ctx, acc); err != nil {
		b.Fatal(err)
	}
	secret, k := account.NewKey(acc.ID, job.NewID("key"), now)
	if err := s.CreateKey(ctx, k); err != nil {
		b.Fatal(err)
	}
	auth, err := service.NewAuth(service.AuthPorts{Accounts: s, Clock: clock.System{}, Balances: s})
	if err != nil {
		b.Fatal(err)
	}
	in, err := auth.SignIn(ctx, secret)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Key", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := auth.Authenticate(ctx, secret); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("Session", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, _, err := auth.Session(ctx, in.Token); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
