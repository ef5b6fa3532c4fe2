package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/mediajobs/mediajobs/adapters/safehttp"
	"github.com/mediajobs/mediajobs/core/asset"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype/ffmpegjob"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
)

// Fetcher brings a job's inputs into its work directory: uploaded assets straight from the blob
// store (after checking they are the job's account's), everything else through the SSRF-guarded
// client.
type Fetcher struct {
	Client   *http.Client
	Assets   asset.Store
	Blobs    service.BlobStore
	MaxBytes int64
}

// Fetch writes the input at url to dst. Failures are INPUT_FETCH_FAILED job errors naming the
// URL and the reason.
func (f Fetcher) Fetch(ctx context.Context, a service.Assignment, url, dst string) *job.Error {
	fail := func(reason string) *job.Error {
		return job.NewError(problem.CodeInputFetchFailed, fmt.Sprintf("input %s could not be fetched: %s", url, reason), nil)
	}
	if id, ok := ffmpegjob.AssetID(url, a.AssetURLPrefix); ok {
		as, err := f.Assets.GetAsset(ctx, id)
		if err != nil || as.AccountID != a.AccountID {
			return fail("no such uploaded asset")
		}
		b, err := f.Blobs.Open(ctx, asset.BlobKey(id))
		if err != nil {
			return fail("the asset's content is missing")
		}
		defer b.Close()
		out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return fail("the runner could not write it")
		}
		defer out.Close()
		if _, err := io.Copy(out, b); err != nil {
			return fail("copy failed")
		}
		return nil
	}
	if _, err := safehttp.Download(ctx, f.Client, url, dst, f.MaxBytes); err != nil {
		var blocked *safehttp.BlockedError
		switch {
		case errors.As(err, &blocked), errors.Is(err, safehttp.ErrBlockedAddress):
			return fail("its address is on a refused (private, loopback or reserved) range")
		case errors.Is(err, safehttp.ErrScheme):
			return fail("only https URLs are fetched")
		case errors.Is(err, safehttp.ErrTooLarge):
			return fail(fmt.Sprintf("it is larger than %d bytes", f.MaxBytes))
		default:
			return fail(err.Error())
		}
	}
	return nil
}
