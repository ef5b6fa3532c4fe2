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
