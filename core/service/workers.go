package service

import (
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"strings"

	"github.com/mediajobs/mediajobs/core/clock"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// WorkersPorts are what the Workers use case needs.
type WorkersPorts struct {
	Credentials workqueue.Credentials
	Jobs        job.Store
	Runs        *Runs
	Clock       clock.Clock
	// EnvToken is the environment's shared worker token (MEDIAJOBS_WORKER_TOKEN): one more
	// credential, workqueue.EnvToken, for a simple set-up; empty: none.
	EnvToken string
	Log      *slog.Logger
}

// Workers is the operator's side of worker identity: credentials issued and revoked without a
// restart, the fleet as it stands, and the authentication of every call a worker makes.
type Workers struct {
	p WorkersPorts
}

// NewWorkers returns the Workers use case.
func NewWorkers(p WorkersPorts) (*Workers, error) {
	if err := need("Workers", port{"worker credentials", p.Credentials}, port{"a job store", p.Jobs},
		port{"the Runs use case", p.Runs}, port{"a clock", p.Clock}); err != nil {
		return nil, err
	}
	if p.Log == nil {
		p.Log = slog.Default()
	}
	return &Workers{p: p}, nil
}

// Create issues a credential for workers of class ("" for any) named name, and returns its
// secret, shown this once.
func (s *Workers) Create(ctx context.Context, name string, class job.Class) (string, workqueue.Credential, error) {
	secret, c, hash, err := workqueue.NewCredential(name, class, s.p.Clock.Now())
	if err != nil {
		return "", workqueue.Credential{}, problem.Reject(problem.CodeValidation, "%v", err)
	}
	if err := s.p.Credentials.CreateCredential(ctx, c, hash); err != nil {
		if errors.Is(err, problem.ErrConflict) {
			return "", workqueue.Credential{}, problem.Reject(problem.CodeConflict, "a worker credential named %s exists", name)
		}
		return "", workqueue.Credential{}, err
	}
	s.p.Log.Info("worker credential created", "worker", c.Name, "worker_id", c.ID, "class", c.Class)
	return secret, c, nil
}

// WorkerView is a credential as the fleet view shows it, with the jobs its workers hold now.
type WorkerView struct {
	workqueue.Credential
	// RunningJobs counts the dispatched and running jobs the credential holds.
	RunningJobs int `json:"runningJobs"`
}

// maxCounted bounds the running jobs counted per credential.
const maxCounted = 10000

// List returns every credential, revoked ones too, by name; the environment's shared token
// first when one is set.
func (s *Workers) List(ctx context.Context) ([]WorkerView, error) {
	creds, err := s.p.Credentials.ListCredentials(ctx)
	if err != nil {
		return nil, err
	}
	if s.p.EnvToken != "" {
		env := workqueue.EnvToken
		creds = append([]workqueue.Credential{{ID: env.ID, Name: env.Name}}, creds...)
	}
	out := make([]WorkerView, len(creds))
	for i, c := range creds {
		out[i].Credential = c
		if c.RevokedAt != nil {
			continue
		}
		ids, err := s.p.Jobs.HeldBy(ctx, c.ID, maxCounted)
		if err != nil {
			return nil, err
		}
		out[i].RunningJobs = len(ids)
	}
	return out, nil
}

// Revoke revokes the credential of that ID or name: its later calls are refused, and the jobs
// it holds end now (Runs.Abandon). The environment's token is revoked by removing it.
func (s *Workers) Revoke(ctx context.Context, idOrName string) (WorkerView, error) {
	if idOrName == workqueue.EnvToken.ID || idOrName == workqueue.EnvToken.Name {
		return WorkerView{}, problem.Reject(problem.CodeValidation,
			"the shared worker token is not a stored credential: unset MEDIAJOBS_WORKER_TOKEN and restart to revoke it")
	}
	c, err := s.p.Credentials.RevokeCredential(ctx, idOrName, s.p.Clock.Now())
	if errors.Is(err, problem.ErrNotFound) {
		return WorkerView{}, problem.Reject(problem.CodeNotFound, "no worker credential %s", idOrName)
	}
	if err != nil {
		return WorkerView{}, err
	}
	n, err := s.p.Runs.Abandon(ctx, c.ID)
	s.p.Log.Warn("worker credential revoked", "worker", c.Name, "worker_id", c.ID, "jobs_ended", n)
	if err != nil {
		// The credential is revoked all the same: its calls are refused, and the sweep ends
		// its jobs when their leases run out.
		return WorkerView{Credential: c}, err
	}
	return WorkerView{Credential: c}, nil
}

// Authenticate returns the identity of a worker's secret: the shared token's, or a live stored
// credential's. Anything else is UNAUTHORIZED.
func (s *Workers) Authenticate(ctx context.Context, secret string) (workqueue.Identity, error) {
	secret = strings.TrimSpace(secret)
	if secret == "" {
		return workqueue.Identity{}, problem.Reject(problem.CodeUnauthorized, "a worker credential is required")
	}
	if s.p.EnvToken != "" && subtle.ConstantTimeCompare([]byte(secret), []byte(s.p.EnvToken)) == 1 {
		return workqueue.EnvToken, nil
	}
	if !strings.HasPrefix(secret, workqueue.CredentialPrefix) {
		return workqueue.Identity{}, problem.Reject(problem.CodeUnauthorized, "the worker credential is not valid")
	}
	c, err := s.p.Credentials.CredentialByHash(ctx, workqueue.HashSecret(secret))
	switch {
	case errors.Is(err, problem.ErrNotFound):
		return workqueue.Identity{}, problem.Reject(problem.CodeUnauthorized, "the worker credential is not valid")
	case err != nil:
		return workqueue.Identity{}, err
	case c.RevokedAt != nil:
		return workqueue.Identity{}, problem.Reject(problem.CodeUnauthorized, "the worker credential %s was revoked", c.Name)
	}
	return c.Identity(), nil
}
