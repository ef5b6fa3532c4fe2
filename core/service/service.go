package service

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/asset"
	"github.com/mediajobs/mediajobs/core/batch"
	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/clock"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/webhook"
)

// Config are the service's settings.
type Config struct {
	// BaseURL is {base_url}, without a trailing slash.
	BaseURL string
	// URLTTL is how long a file URL is valid: one hour by the spec.
	URLTTL time.Duration
	// Lease is how long a runner holds a job without reporting before it counts as lost.
	Lease time.Duration
	// MaxUpload caps an uploaded asset.
	MaxUpload int64
	// GPURunners tells that runners of the gpu class exist. Without them a GPU job would wait
	// forever, so it is refused at submit, after the plan check.
	GPURunners bool
}

// Service is the application: every use case, over its ports.
type Service struct {
	Jobs     job.Store
	Accounts account.Store
	Assets   asset.Store
	Blobs    BlobStore
	Types    *jobtype.Registry
	Clock    clock.Clock
	Signer   job.Signer
	Bus      Publisher
	Config   Config
	// OutboxNotify, when set, is called after a change that emitted outbox messages commits,
	// so the relay handles them at once rather than at its next poll.
	OutboxNotify func()
	// Pricing are the plans and prices (nil: billing.Default()); Ledger keeps the credits
	// (nil: nothing is charged or checked). billing.go uses them.
	Pricing *billing.Pricing
	Ledger  billing.Ledger
	// Webhooks keeps webhook endpoints and deliveries; URLCheck vets their URLs (webhooks.go).
	Webhooks webhook.Store
	URLCheck URLChecker
	// Batches keeps batches (batches.go); nil refuses POST /batches. It is the store of Jobs.
	Batches batch.Store
}

// AssetURLPrefix is "{base_url}/assets/".
func (s *Service) AssetURLPrefix() string { return s.Config.BaseURL + "/assets/" }

// Authenticate finds the account of a bearer API key. Every failure is the same UNAUTHORIZED, so
// that nothing tells a wrong key from a revoked one.
func (s *Service) Authenticate(ctx context.Context, secret string) (account.Account, error) {
	unauthorized := problem.Reject(problem.CodeUnauthorized, "a valid API key is required: Authorization: Bearer <API_KEY>")
	if !strings.HasPrefix(secret, account.SecretPrefix) || len(secret) > 128 {
		return account.Account{}, unauthorized
	}
	hash := account.HashSecret(secret)
	a, k, err := s.Accounts.AccountByKeyHash(ctx, hash)
	if errors.Is(err, problem.ErrNotFound) {
		return account.Account{}, unauthorized
	}
	if err != nil {
		return account.Account{}, err
	}
	// The store matched on the hash; compare again in constant time so no store's index
	// behaviour is relied upon.
	if subtle.ConstantTimeCompare([]byte(k.Hash), []byte(hash)) != 1 || k.RevokedAt != nil {
		return account.Account{}, unauthorized
	}
	return a, nil
}

// SubmitJob is the submit gate after authentication and rate limiting: plan checks, balance
// check, type validation, then the job is saved in waiting and the runners of its class are
// woken. A rejection saves nothing.
func (s *Service) SubmitJob(ctx context.Context, a account.Account, req jobtype.Request) (*job.Job, error) {
	return s.submit(ctx, a, req, "")
}

func (s *Service) submit(ctx context.Context, a account.Account, req jobtype.Request, retryOf string) (*job.Job, error) {
	// The plan and balance checks come before the request's own validation error (gate).
	spec, invalid := s.Types.Prepare(req, jobtype.Env{AssetURLPrefix: s.AssetURLPrefix()})
	if err := s.gate(ctx, a, spec, invalid); err != nil {
		return nil, err
	}
	if err := s.checkRunnable(ctx, a, spec); err != nil {
		return nil, err
	}
	j, err := job.New(job.NewParams{
		ID: job.NewID("job"), AccountID: a.ID, Type: req.Type, Inputs: req.Inputs, Params: req.Params,
		Class: spec.Class, Timeout: spec.Timeout, RetryOf: retryOf, Now: s.Clock.Now(),
	})
	if err != nil {
		return nil, err
	}
	if err := s.Jobs.Create(ctx, j); err != nil {
		return nil, err
	}
	s.wake(ctx, j.Class)
	return j, nil
}

// checkRunnable ends the submit gate of a valid request: a runner of its class exists, and
// the uploaded assets it reads are the account's.
func (s *Service) checkRunnable(ctx context.Context, a account.Account, spec jobtype.Spec) error {
	if spec.Class == job.ClassGPU && !s.Config.GPURunners {
		return problem.Reject(problem.CodeValidation, "this service has no GPU runners: use a CPU encoder (libx264 for h264_nvenc, libx265 for hevc_nvenc, libsvtav1 for av1_nvenc) and compute cpu or auto")
	}
	for _, id := range spec.Assets {
		as, err := s.Assets.GetAsset(ctx, id)
		if errors.Is(err, problem.ErrNotFound) || (err == nil && as.AccountID != a.ID) {
			return problem.Reject(problem.CodeValidation, "input %s is not an uploaded asset of this account", s.AssetURL(id))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// wake tells the runners of a class that work waits. A lost hint costs only latency: runners
// also poll.
func (s *Service) wake(ctx context.Context, c job.Class) {
	if s.Bus != nil {
		_ = s.Bus.Publish(ctx, TopicDispatchPrefix+string(c), []byte(c))
	}
}

// ownJob returns the account's job; another account's job is NOT_FOUND, as a missing one is.
func (s *Service) ownJob(ctx context.Context, a account.Account, id string) (*job.Job, error) {
	j, err := s.Jobs.Get(ctx, id)
	if errors.Is(err, problem.ErrNotFound) || (err == nil && j.AccountID != a.ID) {
		return nil, problem.Reject(problem.CodeNotFound, "job %q not found", id)
	}
	return j, err
}

// GetJob returns the account's job as clients see it, with fresh file URLs.
func (s *Service) GetJob(ctx context.Context, a account.Account, id string) (View, error) {
	j, err := s.ownJob(ctx, a, id)
	if err != nil {
		return View{}, err
	}
	return s.View(j), nil
}

// ListJobs returns a page of the account's jobs, newest first.
func (s *Service) ListJobs(ctx context.Context, a account.Account, p job.ListParams) ([]View, string, error) {
	p.AccountID = a.ID
	page, err := s.Jobs.List(ctx, p)
	if err != nil {
		return nil, "", err
	}
	views := make([]View, len(page.Jobs))
	for i, j := range page.Jobs {
		views[i] = s.View(j)
	}
	return views, page.NextCursor, nil
}

// CancelJob stops the account's job. A waiting or dispatched job never runs; a running one is
// killed. A job already terminal is a CONFLICT.
func (s *Service) CancelJob(ctx context.Context, a account.Account, id string) (View, error) {
	if _, err := s.ownJob(ctx, a, id); err != nil {
		return View{}, err
	}
	j, err := s.update(ctx, id, func(j *job.Job) error {
		if err := j.Cancel(s.Clock.Now()); err != nil {
			return err
		}
		return s.countInBatch(j)
	})
	if errors.Is(err, job.ErrIllegalTransition) {
		cur, _ := s.Jobs.Get(ctx, id)
		return View{}, problem.Reject(problem.CodeConflict, "job %s is %s and can no longer be cancelled", id, cur.Status)
	}
	if err != nil {
		return View{}, err
	}
	if s.Bus != nil {
		_ = s.Bus.Publish(ctx, TopicCancel, []byte(j.ID))
	}
	return s.View(j), nil
}

// RetryJob submits a failed job's request again as a new job whose retryOf names it. The new
// job passes the whole submit gate again.
func (s *Service) RetryJob(ctx context.Context, a account.Account, id string) (*job.Job, error) {
	old, err := s.ownJob(ctx, a, id)
	if err != nil {
		return nil, err
	}
	if old.Status != job.StatusFailed {
		return nil, problem.Reject(problem.CodeConflict, "job %s is %s; only failed jobs can be retried", id, old.Status)
	}
	return s.submit(ctx, a, jobtype.Request{Type: old.Type, Inputs: old.Inputs, Params: old.Params}, old.ID)
}

// Upload stores an asset for the account and returns its record; its content URL is
// AssetURL(asset.ID).
func (s *Service) Upload(ctx context.Context, a account.Account, name, contentType string, r io.Reader) (asset.Asset, error) {
	if name == "" {
		name = "upload"
	}
	if err := asset.CheckName(name); err != nil {
		return asset.Asset{}, err
	}
	as := asset.Asset{ID: job.NewID("ast"), AccountID: a.ID, Name: name, ContentType: contentType,
		CreatedAt: s.Clock.Now().UTC().Truncate(time.Microsecond)}
	n, err := s.Blobs.Put(ctx, asset.BlobKey(as.ID), r, s.Config.MaxUpload)
	if errors.Is(err, ErrTooLarge) {
		return asset.Asset{}, problem.Reject(problem.CodePayloadTooLarge, "upload exceeds the %d byte limit", s.Config.MaxUpload)
	}
	if err != nil {
		return asset.Asset{}, err
	}
	as.Size = n
	if err := s.Assets.CreateAsset(ctx, as); err != nil {
		return asset.Asset{}, err
	}
	return as, nil
}

// AssetURL is an asset's content URL.
func (s *Service) AssetURL(id string) string { return s.AssetURLPrefix() + id + "/content" }

// OpenAsset returns the account's asset and its bytes; another account's is NOT_FOUND.
func (s *Service) OpenAsset(ctx context.Context, a account.Account, id string) (asset.Asset, Blob, error) {
	as, err := s.Assets.GetAsset(ctx, id)
	if errors.Is(err, problem.ErrNotFound) || (err == nil && as.AccountID != a.ID) {
		return asset.Asset{}, nil, problem.Reject(problem.CodeNotFound, "asset %q not found", id)
	}
	if err != nil {
		return asset.Asset{}, nil, err
	}
	b, err := s.Blobs.Open(ctx, asset.BlobKey(id))
	if err != nil {
		return asset.Asset{}, nil, err
	}
	return as, b, nil
}

// OutputKey is where a job's output file lives in the blob store.
func OutputKey(jobID, file string) string { return "jobs/" + jobID + "/" + file }

// OpenOutput returns one file of a complete job's output, for a download whose token the
// caller has verified. A file not in the output is NOT_FOUND.
func (s *Service) OpenOutput(ctx context.Context, jobID, file string) (job.File, Blob, error) {
	notFound := problem.Reject(problem.CodeNotFound, "file %q of job %q not found", file, jobID)
	j, err := s.Jobs.Get(ctx, jobID)
	if errors.Is(err, problem.ErrNotFound) {
		return job.File{}, nil, notFound
	}
	if err != nil {
		return job.File{}, nil, err
	}
	if j.Status != job.StatusComplete || j.Output == nil {
		return job.File{}, nil, notFound
	}
	for _, f := range j.Output.Files {
		if f.Path == file || (file == "" && j.Output.File != nil && f.Path == j.Output.File.Path) {
			b, err := s.Blobs.Open(ctx, OutputKey(jobID, f.Path))
			if err != nil {
				return job.File{}, nil, err
			}
			return f, b, nil
		}
	}
	return job.File{}, nil, notFound
}

// View is a job as clients read it over REST and MCP: the spec's fields, plus the request, the
// progress of a running job and its timestamps (our additions).
type View struct {
	ID          string          `json:"id"`
	Type        string          `json:"type"`
	Status      job.Status      `json:"status"`
	Progress    *float64        `json:"progress,omitempty"`
	Output      *job.Output     `json:"output,omitempty"`
	Error       *job.Error      `json:"error,omitempty"`
	Cost        *job.Cost       `json:"cost,omitempty"`
	Inputs      json.RawMessage `json:"inputs,omitempty"`
	Params      json.RawMessage `json:"params,omitempty"`
	RetryOf     string          `json:"retryOf,omitempty"`
	BatchID     string          `json:"batchId,omitempty"`
	CreatedAt   int64           `json:"createdAt"`
	StartedAt   *int64          `json:"startedAt,omitempty"`
	CompletedAt *int64          `json:"completedAt,omitempty"`
}

// View renders a job for clients, minting fresh file URLs valid for Config.URLTTL.
func (s *Service) View(j *job.Job) View {
	t := j.Timing()
	v := View{ID: j.ID, Type: j.Type, Status: j.Status, Error: j.Error, Cost: j.Cost, Inputs: j.Inputs,
		Params: j.Params, RetryOf: j.RetryOf, BatchID: j.BatchID, CreatedAt: t.CreatedAt, StartedAt: t.StartedAt, CompletedAt: t.CompletedAt}
	if j.Status == job.StatusRunning {
		p := j.Progress
		v.Progress = &p
	}
	if j.Status == job.StatusComplete && j.Output != nil {
		o := j.Output.Sign(j.ID, s.Signer, s.Clock.Now().Add(s.Config.URLTTL))
		v.Output = &o
	}
	return v
}

// ErrStaleReport is returned for a runner report about an attempt that is no longer current.
var ErrStaleReport = errors.New("stale runner report")

func checkAttempt(j *job.Job, attempt int) error {
	if j.Attempt != attempt {
		return fmt.Errorf("%w: job %s attempt %d, current %d", ErrStaleReport, j.ID, attempt, j.Attempt)
	}
	return nil
}
