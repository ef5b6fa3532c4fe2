package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"

	"github.com/mediajobs/mediajobs/adapters/safehttp"
	"github.com/mediajobs/mediajobs/core/jobtype/ffmpegjob"
	"github.com/mediajobs/mediajobs/core/redact"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// Fetcher brings a job's inputs into its work directory: uploaded assets through the job's
// lease (the control plane checks they are the job's account's), everything else through the
// SSRF-guarded client.
type Fetcher struct {
	Client   *http.Client
	Queue    workqueue.Queue
	MaxBytes int64
	// Log receives the causes that clients are not shown (resolver answers, raw errors).
	Log *slog.Logger
}

// Fetch writes the input at url to dst. A failure names the URL and says why in the user's
// terms; the raw cause goes to the log.
func (f Fetcher) Fetch(ctx context.Context, a workqueue.Assignment, url, dst string) *workqueue.Failure {
	shown, _ := redact.URL(url) // a presigned URL's query is a credential
	fail := func(reason string) *workqueue.Failure {
		return fetchFail(fmt.Sprintf("input %s could not be fetched: %s", shown, reason))
	}
	if id, ok := ffmpegjob.AssetID(url, a.AssetURLPrefix); ok {
		// An uploaded input comes through the control plane, which may be briefly away.
		var src io.ReadCloser
		err := whileUnavailable(ctx, func() (err error) {
			src, err = f.Queue.OpenAsset(ctx, a.Lease, id)
			return err
		})
		if err != nil {
			f.log("asset input", a, url, err)
			return fail("no such uploaded asset, or its content is missing")
		}
		defer src.Close()
		out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			f.log("asset input", a, url, err)
			return &workqueue.Failure{Kind: workqueue.KindInternal, Message: "staging an input"}
		}
		defer out.Close()
		if _, err := io.Copy(out, src); err != nil {
			f.log("asset input", a, url, err)
			return fail("the download was interrupted")
		}
		return nil
	}
	if _, err := safehttp.Download(ctx, f.Client, url, dst, f.MaxBytes); err != nil {
		f.log("remote input", a, url, err)
		return fail(reason(err, f.MaxBytes))
	}
	return nil
}

func (f Fetcher) log(what string, a workqueue.Assignment, url string, err error) {
	if f.Log != nil {
		shown, _ := redact.URL(url)
		msg, _ := redact.Text(err.Error())
		f.Log.Warn("runner: "+what+" could not be fetched", "job", a.Lease.JobID, "url", shown, "err", msg)
	}
}

// reason says why a download failed in the user's terms (safehttp.Reason): never a resolver
// address or a raw Go error.
func reason(err error, maxBytes int64) string {
	switch {
	case errors.Is(err, safehttp.ErrTooLarge):
		return fmt.Sprintf("it is larger than %d bytes", maxBytes)
	case errors.Is(err, safehttp.ErrScheme):
		return "only https URLs are fetched"
	}
	return safehttp.Reason(err)
}
