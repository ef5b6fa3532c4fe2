package mediajobs

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/mediajobs/mediajobs/adapters/ratelimit"
	"github.com/mediajobs/mediajobs/core/billing"
	core "github.com/mediajobs/mediajobs/core/ratelimit"
)

// loadPricing reads the pricing file, or returns the built-in pricing when path is empty.
func loadPricing(path string) (*billing.Pricing, error) {
	if path == "" {
		return billing.Default(), nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pricing: %w", err)
	}
	p, err := billing.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// openLimiter is the Redis limiter when url is set (every replica then shares each account's
// budget), else the in-memory one.
func openLimiter(url string) (core.Limiter, func() error, error) {
	if url == "" {
		return ratelimit.NewMemory(), nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := ratelimit.OpenRedis(ctx, url)
	if err != nil {
		return nil, nil, err
	}
	return r, r.Close, nil
}

// grantMonthly grants the monthly inclusions at start and every hour after (and purges the
// expired idempotency keys): idempotent per
// account and month, so restarts and several replicas grant nothing twice, and a new month is
// granted within the hour.
func (a *App) grantMonthly(ctx context.Context) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		if n, err := a.UC.Credits.GrantMonthly(ctx); err != nil && ctx.Err() == nil {
			a.Log.Warn("monthly credit grant failed; retried within the hour", "err", err)
		} else if n > 0 {
			a.Log.Info("granted monthly credits", "accounts", n)
		}
		// Idempotency keys answer for a day; the same hourly task drops the expired ones.
		if n, err := a.UC.Idempotency.Purge(ctx); err != nil && ctx.Err() == nil {
			a.Log.Warn("purging expired idempotency keys failed; retried within the hour", "err", err)
		} else if n > 0 {
			a.Log.Info("purged expired idempotency keys", "keys", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
