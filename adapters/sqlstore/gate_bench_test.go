package sqlstore_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/ratelimit"
	"github.com/mediajobs/mediajobs/adapters/sqlstore"
	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/clock"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/jobtype/ffmpegjob"
	core "github.com/mediajobs/mediajobs/core/ratelimit"
	"github.com/mediajobs/mediajobs/core/service"
)

// BenchmarkSubmitGate measures accepted submissions per second through the whole submit gate
// with billing on, on SQLite: the rate limiter, the plan and balance checks (a read of the
// running balance), the FFmpeg validator and the insert. The service's target is 2,000 accepted
// POST /jobs per second; the HTTP layer comes on top. Run with -cpu 2 for the target's setting.
func BenchmarkSubmitGate(b *testing.B) {
	ctx := context.Background()
	s, err := sqlstore.OpenSQLite(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	types, err := jobtype.NewRegistry(ffmpegjob.Type{})
	if err != nil {
		b.Fatal(err)
	}
	pricing := billing.Default()
	submit, err := service.NewSubmit(service.SubmitPorts{Jobs: s, Clock: clock.System{}, Waker: noWake{},
		Gate: service.GatePorts{Pricing: pricing, Ledger: s, Types: types, Assets: s, AssetURLPrefix: "https://api.test/assets/",
			Observer: service.NoObserver{}}})
	if err != nil {
		b.Fatal(err)
	}
	credits, err := service.NewCredits(service.CreditsPorts{Accounts: s, Ledger: s, Pricing: pricing, Clock: clock.System{}})
	if err != nil {
		b.Fatal(err)
	}
	acc := account.Account{ID: "acc_bench", Plan: account.PlanPro, CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}
	if err := credits.OpenAccount(ctx, acc); err != nil {
		b.Fatal(err)
	}
	gate := core.NewGate(ratelimit.NewMemory(), func(account.Account) int { return 1 << 30 }, nil)
	req := jobtype.Request{Type: "ffmpeg", Params: json.RawMessage(`{"command":"ffmpeg -i https://example.com/in.mp4 -vf scale=320:-2 -c:v libx264 out.mp4"}`)}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			// A budget large enough never to refuse: the limiter's cost is measured, not its answer.
			if _, err := gate.Allow(ctx, acc); err != nil {
				b.Error(err)
				return
			}
			if _, err := submit.Submit(ctx, acc, req); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
}

type noWake struct{}

func (noWake) Wake(context.Context, job.Class) {}
