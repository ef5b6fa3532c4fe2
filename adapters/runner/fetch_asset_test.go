package runner_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mediajobs/mediajobs/adapters/runner"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// briefOutage answers OpenAsset as a control plane that is away would, n times, then serves.
type briefOutage struct {
	outputsOnly
	n atomic.Int32
}

func (q *briefOutage) OpenAsset(ctx context.Context, l workqueue.Lease, id string) (io.ReadCloser, error) {
	if q.n.Add(-1) >= 0 {
		return nil, fmt.Errorf("get: %w: 503 the service's database does not answer", workqueue.ErrUnavailable)
	}
	return io.NopCloser(strings.NewReader("WEBVTT\n")), nil
}

// An uploaded input read while the control plane is briefly away (its database restarting, a
// replica gone) is read again, not failed as INPUT_FETCH_FAILED.
func TestAssetInputOutlastsAnUnavailableControlPlane(t *testing.T) {
	t.Parallel()
	q := &briefOutage{}
	q.n.Store(2)
	const prefix = "http://api.example/assets/"
	a := workqueue.Assignment{Lease: workqueue.Lease{JobID: "job_1", Attempt: 1}, AssetURLPrefix: prefix}
	dst := filepath.Join(t.TempDir(), "in.vtt")
	if f := (runner.Fetcher{Queue: q}).Fetch(context.Background(), a, prefix+"ast_1/content", dst); f != nil {
		t.Fatalf("Fetch: %+v", f)
	}
	if q.n.Load() >= 0 {
		t.Fatalf("outages left: %d; the asset was not asked for again", q.n.Load())
	}
	if b, err := os.ReadFile(dst); err != nil || string(b) != "WEBVTT\n" {
		t.Fatalf("staged input %q, %v", b, err)
	}
}
