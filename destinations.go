package mediajobs

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mediajobs/mediajobs/adapters/s3deliver"
	"github.com/mediajobs/mediajobs/adapters/safehttp"
	"github.com/mediajobs/mediajobs/adapters/sqlstore"
	"github.com/mediajobs/mediajobs/core/blob"
	"github.com/mediajobs/mediajobs/core/clock"
	"github.com/mediajobs/mediajobs/core/destination"
	"github.com/mediajobs/mediajobs/core/service"
)

// derivedSecretKeyID names the key derived from the signing key, which seals destinations'
// secrets when MEDIAJOBS_SECRET_KEYS is empty and still opens them once it is set.
const derivedSecretKeyID = "signing"

// destinations composes the Destinations use case: the keyring of MEDIAJOBS_SECRET_KEYS, and
// the S3 deliverer over the fetcher's address policy (an endpoint is a client's URL), with
// plain http allowed, as S3-compatible servers on a LAN often have no TLS.
func (a *App) destinations(store *sqlstore.Store, blobs blob.Store, signing []byte) (*service.Destinations, error) {
	keys, err := secretKeys(a.Config.SecretKeys, signing)
	if err != nil {
		return nil, fmt.Errorf("secret-keys: %w", err)
	}
	ring, err := destination.NewKeyring(keys...)
	if err != nil {
		return nil, fmt.Errorf("secret-keys: %w", err)
	}
	delays, err := retryDelays(a.Config.DeliveryRetryDelays)
	if err != nil {
		return nil, fmt.Errorf("delivery-retry-delays: %w", err)
	}
	policy := a.fetch
	policy.AllowHTTP, policy.Timeout = true, 30*time.Minute
	return service.NewDestinations(service.DestinationsPorts{Store: store, Jobs: store, Blobs: blobs,
		Deliverer: s3deliver.Deliverer{HTTP: safehttp.NewClient(policy)}, Keys: ring, URLs: s3deliver.URLChecker{HTTP: policy},
		Clock: clock.System{}, RetryDelays: delays, Log: a.Log})
}

// secretKeys are the configured keys, then the key derived from the signing key (so that
// secrets sealed before MEDIAJOBS_SECRET_KEYS was set still open, and are re-sealed).
func secretKeys(conf string, signing []byte) ([]destination.SecretKey, error) {
	m := hmac.New(sha256.New, signing)
	m.Write([]byte("mediajobs destination secrets"))
	derived := destination.SecretKey{ID: derivedSecretKeyID, Secret: m.Sum(nil)}
	if strings.TrimSpace(conf) == "" {
		return []destination.SecretKey{derived}, nil
	}
	keys, err := destination.ParseKeys(conf)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(keys, func(k destination.SecretKey) bool { return k.ID == derivedSecretKeyID }) {
		keys = append(keys, derived)
	}
	return keys, nil
}

func retryDelays(s string) ([]time.Duration, error) {
	if strings.TrimSpace(s) == "none" {
		return []time.Duration{}, nil
	}
	var out []time.Duration
	for item := range strings.SplitSeq(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(item))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%q is not a positive duration; write e.g. 5s,25s,125s, or none", item)
		}
		out = append(out, d)
	}
	return out, nil
}
