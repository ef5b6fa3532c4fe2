package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/asset"
	"github.com/mediajobs/mediajobs/core/clock/clocktest"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/job/jobtest"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
)

// testType accepts params {"gpu":bool,"timeout":int,"asset":string}.
type testType struct{}

func (testType) Name() string { return "test" }
func (testType) Prepare(req jobtype.Request, env jobtype.Env) (jobtype.Spec, error) {
	var p struct {
		GPU     bool   `json:"gpu"`
		Timeout int    `json:"timeout"`
		Asset   string `json:"asset"`
	}
	if len(req.Params) > 0 {
		if err := jobtype.DecodeStrictAt("params.", req.Params, &p); err != nil {
			return jobtype.Spec{}, err
		}
	}
	spec := jobtype.Spec{Class: job.ClassCPU, Timeout: 120 * time.Second}
	if p.GPU {
		spec.Class = job.ClassGPU
	}
	if p.Timeout > 0 {
		spec.Timeout = time.Duration(p.Timeout) * time.Second
	}
	if p.Asset != "" {
		spec.Assets = []string{p.Asset}
	}
	return spec, nil
}

type accounts struct {
	mu   sync.Mutex
	accs map[string]account.Account
	keys map[string]account.Key
}

func (a *accounts) CreateAccount(_ context.Context, acc account.Account) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.accs[acc.ID] = acc
	return nil
}
func (a *accounts) GetAccount(_ context.Context, id string) (account.Account, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	acc, ok := a.accs[id]
	if !ok {
		return account.Account{}, problem.ErrNotFound
	}
	return acc, nil
}
func (a *accounts) SetPlan(context.Context, string, account.Plan) error { return nil }
func (a *accounts) CreateKey(_ context.Context, k account.Key) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.keys[k.Hash] = k
	return nil
}
func (a *accounts) AccountByKeyHash(_ context.Context, h string) (account.Account, account.Key, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k, ok := a.keys[h]
	if !ok || k.RevokedAt != nil {
		return account.Account{}, account.Key{}, problem.ErrNotFound
	}
	return a.accs[k.AccountID], k, nil
}
func (a *accounts) ListAccounts(context.Context, account.ListParams) ([]account.Account, error) {
	return nil, nil
}
func (a *accounts) RevokeKey(_ context.Context, accID, keyID string, at time.Time) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for h, k := range a.keys {
		if k.ID == keyID && k.AccountID == accID {
			k.RevokedAt = &at
			a.keys[h] = k
			return nil
		}
	}
	return problem.ErrNotFound
}

type assets struct {
	mu sync.Mutex
	m  map[string]asset.Asset
}

func (s *assets) CreateAsset(_ context.Context, a asset.Asset) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[a.ID] = a
	return nil
}
func (s *assets) GetAsset(_ context.Context, id string) (asset.Asset, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.m[id]
	if !ok {
		return asset.Asset{}, problem.ErrNotFound
	}
	return a, nil
}

type blobs struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (b *blobs) Put(_ context.Context, key string, r io.Reader, max int64) (int64, error) {
	data, _ := io.ReadAll(r)
	if max > 0 && int64(len(data)) > max {
		return 0, service.ErrTooLarge
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.m[key] = data
	return int64(len(data)), nil
}
func (b *blobs) Open(context.Context, string) (service.Blob, error) { return nil, problem.ErrNotFound }

type signer struct{}

func (signer) SignFile(jobID string, p job.Pattern, file string, exp time.Time) string {
	return fmt.Sprintf("https://x/%s/%s/%s?e=%d", p, jobID, file, exp.Unix())
}

type bus struct {
	mu  sync.Mutex
	msg []string
}

func (b *bus) Publish(_ context.Context, topic string, payload []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.msg = append(b.msg, topic+" "+string(payload))
	return nil
}
func (b *bus) topics(prefix string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, m := range b.msg {
		if strings.HasPrefix(m, prefix) {
			out = append(out, m)
		}
	}
	return out
}

type bundle struct {
	svc       *service.Service
	relay     *service.Relay
	events    *[]string
	clock     *clocktest.Fake
	bus       *bus
	jobs      *jobtest.Memory
	free, pro account.Account
	assets    *assets
}

func setup(t *testing.T) bundle {
	t.Helper()
	reg, err := jobtype.NewRegistry(testType{})
	if err != nil {
		t.Fatal(err)
	}
	b := bundle{clock: clocktest.New(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)), bus: &bus{},
		jobs: jobtest.NewMemory(), assets: &assets{m: map[string]asset.Asset{}},
		free: account.Account{ID: "acc_free", Plan: account.PlanFree}, pro: account.Account{ID: "acc_pro", Plan: account.PlanPro}}
	accs := &accounts{accs: map[string]account.Account{b.free.ID: b.free, b.pro.ID: b.pro}, keys: map[string]account.Key{}}
	b.svc = &service.Service{Jobs: b.jobs, Accounts: accs, Assets: b.assets, Blobs: &blobs{m: map[string][]byte{}},
		Types: reg, Clock: b.clock, Signer: signer{}, Bus: b.bus,
		Config: service.Config{BaseURL: "https://api.test", URLTTL: time.Hour, Lease: time.Minute, GPURunners: true, MaxUpload: 10}}
	var events []string
	b.events = &events
	b.relay = &service.Relay{Outbox: b.jobs, Clock: b.clock, Handlers: map[string]service.Handler{
		service.TopicEvents: func(_ context.Context, m job.Message) error {
			events = append(events, string(m.Payload))
			return nil
		},
	}}
	return b
}

// drain runs the relay and returns every event it has handed on so far.
func (b bundle) drain(t *testing.T) []string {
	t.Helper()
	if _, err := b.relay.Drain(context.Background()); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	return *b.events
}

func submit(t *testing.T, b bundle, a account.Account, params string) *job.Job {
	t.Helper()
	j, err := b.svc.SubmitJob(context.Background(), a, jobtype.Request{Type: "test", Params: json.RawMessage(params)})
	if err != nil {
		t.Fatalf("SubmitJob: %v", err)
	}
	return j
}

func TestSubmitGate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		plan     account.Plan
		req      jobtype.Request
		wantCode problem.Code
		wantMsg  string
	}{
		{"cpu on free", account.PlanFree, jobtype.Request{Type: "test"}, "", ""},
		{"gpu on free", account.PlanFree, jobtype.Request{Type: "test", Params: json.RawMessage(`{"gpu":true}`)}, problem.CodePlanLimit, "Pro plan"},
		{"gpu on pro", account.PlanPro, jobtype.Request{Type: "test", Params: json.RawMessage(`{"gpu":true}`)}, "", ""},
		{"timeout over free cap", account.PlanFree, jobtype.Request{Type: "test", Params: json.RawMessage(`{"timeout":301}`)}, problem.CodeValidation, "cap of 300 seconds"},
		{"timeout within pro cap", account.PlanPro, jobtype.Request{Type: "test", Params: json.RawMessage(`{"timeout":900}`)}, "", ""},
		{"unknown type", account.PlanPro, jobtype.Request{Type: "nope"}, problem.CodeValidation, `"nope"`},
		{"bad params", account.PlanPro, jobtype.Request{Type: "test", Params: json.RawMessage(`{"x":1}`)}, problem.CodeValidation, `"params.x"`},
		{"missing asset", account.PlanPro, jobtype.Request{Type: "test", Params: json.RawMessage(`{"asset":"ast_nope"}`)}, problem.CodeValidation, "ast_nope/content"},
		{"other account's asset", account.PlanPro, jobtype.Request{Type: "test", Params: json.RawMessage(`{"asset":"ast_free"}`)}, problem.CodeValidation, "not an uploaded asset of this account"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			_ = b.assets.CreateAsset(context.Background(), asset.Asset{ID: "ast_free", AccountID: b.free.ID})
			a := b.free
			if tc.plan == account.PlanPro {
				a = b.pro
			}
			j, err := b.svc.SubmitJob(context.Background(), a, tc.req)
			if tc.wantCode == "" {
				if err != nil || j.Status != job.StatusWaiting {
					t.Fatalf("SubmitJob: %v %v", j, err)
				}
				if len(b.bus.topics(service.TopicDispatchPrefix)) != 1 {
					t.Fatal("runners were not woken")
				}
				return
			}
			if problem.CodeOf(err) != tc.wantCode || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("got %v (%s), want %s containing %q", err, problem.CodeOf(err), tc.wantCode, tc.wantMsg)
			}
			page, _ := b.jobs.List(context.Background(), job.ListParams{AccountID: a.ID})
			if len(page.Jobs) != 0 {
				t.Fatal("a rejected request stored a job")
			}
		})
	}
}

func TestAuthenticate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	secret, k := account.NewKey(b.free.ID, "key_1", b.clock.Now())
	_ = b.svc.Accounts.CreateKey(ctx, k)
	if a, err := b.svc.Authenticate(ctx, secret); err != nil || a.ID != b.free.ID {
		t.Fatalf("good key: %v %v", a, err)
	}
	for _, bad := range []string{"", "mj_wrong", secret + "x", "Bearer " + secret, strings.Repeat("m", 200)} {
		if _, err := b.svc.Authenticate(ctx, bad); problem.CodeOf(err) != problem.CodeUnauthorized {
			t.Errorf("key %q: %v", bad, err)
		}
	}
	_ = b.svc.Accounts.RevokeKey(ctx, b.free.ID, "key_1", b.clock.Now())
	if _, err := b.svc.Authenticate(ctx, secret); problem.CodeOf(err) != problem.CodeUnauthorized {
		t.Fatalf("revoked key: %v", err)
	}
}

func TestOtherAccountsJobIsNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	j := submit(t, b, b.free, `{}`)
	for name, call := range map[string]func() error{
		"get":    func() error { _, err := b.svc.GetJob(ctx, b.pro, j.ID); return err },
		"cancel": func() error { _, err := b.svc.CancelJob(ctx, b.pro, j.ID); return err },
		"retry":  func() error { _, err := b.svc.RetryJob(ctx, b.pro, j.ID); return err },
		"get missing": func() error {
			_, err := b.svc.GetJob(ctx, b.free, "job_missing")
			return err
		},
	} {
		if err := call(); problem.CodeOf(err) != problem.CodeNotFound {
			t.Errorf("%s: %v, want NOT_FOUND", name, err)
		}
	}
	if v, err := b.svc.GetJob(ctx, b.free, j.ID); err != nil || v.Status != job.StatusWaiting {
		t.Fatalf("owner: %v %v", v, err)
	}
}

func runToResult(t *testing.T, b bundle, res service.RunResult) (service.Assignment, *job.Job) {
	t.Helper()
	ctx := context.Background()
	as, err := b.svc.Claim(ctx, job.ClassCPU, 1)
	if err != nil || len(as) != 1 {
		t.Fatalf("Claim: %v %v", as, err)
	}
	a := as[0]
	for _, r := range []service.RunnerReport{
		{JobID: a.JobID, Attempt: a.Attempt, Kind: service.ReportStarted},
		{JobID: a.JobID, Attempt: a.Attempt, Kind: service.ReportProgress, Progress: 0.5},
		{JobID: a.JobID, Attempt: a.Attempt, Kind: service.ReportResult, Result: &res},
	} {
		if err := b.svc.HandleReport(ctx, r); err != nil {
			t.Fatalf("HandleReport %s: %v", r.Kind, err)
		}
	}
	j, _ := b.jobs.Get(ctx, a.JobID)
	return a, j
}

func TestRunToCompleteAndEvents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	submitted := submit(t, b, b.free, `{}`)
	a, j := runToResult(t, b, service.RunResult{Files: []job.File{{Path: "out.mp4", Size: 3}}, ComputeMs: 1500})
	if a.JobID != submitted.ID || a.AccountID != b.free.ID || a.AssetURLPrefix != "https://api.test/assets/" || a.Timeout != 120*time.Second {
		t.Fatalf("assignment: %+v", a)
	}
	if j.Status != job.StatusComplete || j.ComputeMs != 1500 || j.Output.Pattern() != job.PatternSingle {
		t.Fatalf("job: %+v", j)
	}
	v, _ := b.svc.GetJob(ctx, b.free, j.ID)
	if v.Output == nil || v.Output.File == nil || v.Output.File.URL == "" || v.Output.Check(b.clock.Now()) != nil {
		t.Fatalf("view output: %+v", v.Output)
	}
	b.clock.Advance(2 * time.Hour)
	v2, _ := b.svc.GetJob(ctx, b.free, j.ID)
	if v2.Output.File.URL == v.Output.File.URL || v2.Output.Check(b.clock.Now()) != nil {
		t.Fatal("expired URLs were not minted afresh")
	}
	events := b.drain(t)
	if len(events) != 2 || !strings.Contains(events[0], `"event":"job.running"`) || !strings.Contains(events[1], `"event":"job.completed"`) {
		t.Fatalf("events: %v", events)
	}

	// A second result is harmless: no change, no second event.
	_ = b.svc.HandleReport(ctx, service.RunnerReport{JobID: a.JobID, Attempt: a.Attempt, Kind: service.ReportResult,
		Result: &service.RunResult{Error: job.NewError(problem.CodeRunnerError, "late", nil)}})
	again, _ := b.jobs.Get(ctx, a.JobID)
	if again.Status != job.StatusComplete || len(b.drain(t)) != 2 {
		t.Fatal("a duplicate result changed the job")
	}
	// A stale attempt is ignored.
	if err := b.svc.HandleReport(ctx, service.RunnerReport{JobID: a.JobID, Attempt: 7, Kind: service.ReportStarted}); err != nil {
		t.Fatalf("stale report: %v", err)
	}
}

func TestFailureAndRetry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	submit(t, b, b.free, `{"timeout":60}`)
	_, failed := runToResult(t, b, service.RunResult{ComputeMs: 200, Error: job.NewError(problem.CodeRunnerError, "ffmpeg exited with status 1", []byte("boom"))})
	if failed.Status != job.StatusFailed || failed.Error.Code != problem.CodeRunnerError || *failed.Error.Detail != "boom" {
		t.Fatalf("failed job: %+v", failed)
	}
	if !strings.Contains(strings.Join(b.drain(t), "\n"), `"event":"job.failed"`) {
		t.Fatal("no job.failed event")
	}
	retry, err := b.svc.RetryJob(ctx, b.free, failed.ID)
	if err != nil || retry.RetryOf != failed.ID || retry.Status != job.StatusWaiting || string(retry.Params) != `{"timeout":60}` {
		t.Fatalf("retry: %+v %v", retry, err)
	}
	if _, err := b.svc.RetryJob(ctx, b.free, retry.ID); problem.CodeOf(err) != problem.CodeConflict {
		t.Fatalf("retry of a waiting job: %v", err)
	}
}

func TestEmptyResultFails(t *testing.T) {
	t.Parallel()
	b := setup(t)
	submit(t, b, b.free, `{}`)
	_, j := runToResult(t, b, service.RunResult{ComputeMs: 10})
	if j.Status != job.StatusFailed || j.Error.Code != problem.CodeRunnerError || !strings.Contains(j.Error.Message, "no output") {
		t.Fatalf("job: %+v", j.Error)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	waiting := submit(t, b, b.free, `{}`)
	v, err := b.svc.CancelJob(ctx, b.free, waiting.ID)
	if err != nil || v.Status != job.StatusCancelled {
		t.Fatalf("cancel waiting: %v %v", v, err)
	}
	if as, _ := b.svc.Claim(ctx, job.ClassCPU, 5); len(as) != 0 {
		t.Fatal("a cancelled job was dispatched")
	}
	if _, err := b.svc.CancelJob(ctx, b.free, waiting.ID); problem.CodeOf(err) != problem.CodeConflict {
		t.Fatalf("second cancel: %v", err)
	}

	running := submit(t, b, b.free, `{}`)
	as, _ := b.svc.Claim(ctx, job.ClassCPU, 1)
	_ = b.svc.HandleReport(ctx, service.RunnerReport{JobID: running.ID, Attempt: as[0].Attempt, Kind: service.ReportStarted})
	if _, err := b.svc.CancelJob(ctx, b.free, running.ID); err != nil {
		t.Fatal(err)
	}
	if got := b.bus.topics(service.TopicCancel); len(got) != 2 || !strings.HasSuffix(got[1], running.ID) {
		t.Fatalf("cancel messages: %v", got)
	}
	// The killed run reports its compute; the job stays cancelled and keeps it for billing.
	_ = b.svc.HandleReport(ctx, service.RunnerReport{JobID: running.ID, Attempt: as[0].Attempt, Kind: service.ReportResult,
		Result: &service.RunResult{ComputeMs: 700, Error: job.NewError(problem.CodeCancelled, "cancelled", nil)}})
	j, _ := b.jobs.Get(ctx, running.ID)
	if j.Status != job.StatusCancelled || j.ComputeMs != 700 {
		t.Fatalf("cancelled running job: %s %d", j.Status, j.ComputeMs)
	}
}

func TestSweepFailsLostRunners(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	lost := submit(t, b, b.free, `{}`)
	alive := submit(t, b, b.free, `{}`)
	as, _ := b.svc.Claim(ctx, job.ClassCPU, 2)
	if len(as) != 2 {
		t.Fatal("claim")
	}
	b.clock.Advance(50 * time.Second)
	_ = b.svc.HandleReport(ctx, service.RunnerReport{JobID: alive.ID, Attempt: 1, Kind: service.ReportProgress, Progress: 0.1})
	b.clock.Advance(20 * time.Second)
	n, err := b.svc.Sweep(ctx)
	if err != nil || n != 1 {
		t.Fatalf("Sweep: %d %v", n, err)
	}
	if events := b.drain(t); len(events) != 1 || !strings.Contains(events[0], lost.ID) || !strings.Contains(events[0], "RUNNER_LOST") {
		t.Fatalf("events: %v", events)
	}
	j, _ := b.jobs.Get(ctx, lost.ID)
	if j.Status != job.StatusFailed || j.Error.Code != problem.CodeRunnerLost || !j.Error.Retryable || j.ComputeMs != 0 {
		t.Fatalf("lost job: %s %+v", j.Status, j.Error)
	}
	a, _ := b.jobs.Get(ctx, alive.ID)
	if a.Status != job.StatusDispatched || a.Progress != 0.1 {
		t.Fatalf("alive job: %s %v", a.Status, a.Progress)
	}
}

func TestUploadCap(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	as, err := b.svc.Upload(ctx, b.free, "a.srt", "text/plain", strings.NewReader("1234"))
	if err != nil || as.Size != 4 || as.AccountID != b.free.ID || b.svc.AssetURL(as.ID) != "https://api.test/assets/"+as.ID+"/content" {
		t.Fatalf("upload: %+v %v", as, err)
	}
	if _, err := b.svc.Upload(ctx, b.free, "big", "", strings.NewReader(strings.Repeat("x", 11))); problem.CodeOf(err) != problem.CodePayloadTooLarge {
		t.Fatalf("oversized upload: %v", err)
	}
	if _, _, err := b.svc.OpenAsset(ctx, b.pro, as.ID); problem.CodeOf(err) != problem.CodeNotFound {
		t.Fatalf("other account's asset: %v", err)
	}
}

func TestRelayRetriesFailedHandlers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	j := submit(t, b, b.free, `{}`)
	calls := 0
	b.relay.Handlers[service.TopicEvents] = func(context.Context, job.Message) error {
		calls++
		if calls == 1 {
			return fmt.Errorf("receiver down")
		}
		return nil
	}
	as, _ := b.svc.Claim(ctx, job.ClassCPU, 1)
	_ = b.svc.HandleReport(ctx, service.RunnerReport{JobID: j.ID, Attempt: as[0].Attempt, Kind: service.ReportStarted})
	if n, err := b.relay.Drain(ctx); n != 0 || err != nil || calls != 1 {
		t.Fatalf("first drain: %d %v calls %d", n, err, calls)
	}
	if n, _ := b.relay.Drain(ctx); n != 0 {
		t.Fatal("a failed message came back before its lease")
	}
	b.clock.Advance(time.Minute)
	if n, err := b.relay.Drain(ctx); n != 1 || err != nil || calls != 2 {
		t.Fatalf("after the lease: %d %v calls %d", n, err, calls)
	}
}

// Without runners of the gpu class a GPU job would wait forever: it is refused at submit, after
// the plan check (Free still hears PLAN_LIMIT), and nothing is stored.
func TestGPUJobsNeedGPURunners(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.svc.Config.GPURunners = false
	ctx := context.Background()
	gpu := jobtype.Request{Type: "test", Params: json.RawMessage(`{"gpu":true}`)}
	if _, err := b.svc.SubmitJob(ctx, b.pro, gpu); problem.CodeOf(err) != problem.CodeValidation || !strings.Contains(err.Error(), "no GPU runners") {
		t.Fatalf("pro GPU job: %v", err)
	}
	if _, err := b.svc.SubmitJob(ctx, b.free, gpu); problem.CodeOf(err) != problem.CodePlanLimit {
		t.Fatalf("free GPU job: %v, want PLAN_LIMIT first", err)
	}
	if page, _ := b.jobs.List(ctx, job.ListParams{AccountID: b.pro.ID}); len(page.Jobs) != 0 {
		t.Fatal("a refused GPU job was stored")
	}
	if _, err := b.svc.SubmitJob(ctx, b.pro, jobtype.Request{Type: "test"}); err != nil {
		t.Fatalf("CPU job: %v", err)
	}
}

func TestReportOfAnUnknownJobIsDropped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, kind := range []string{service.ReportStarted, service.ReportProgress, service.ReportResult} {
		err := b.svc.HandleReport(context.Background(), service.RunnerReport{JobID: "job_elsewhere", Attempt: 1, Kind: kind,
			Result: &service.RunResult{ComputeMs: 5, Error: job.NewError(problem.CodeRunnerError, "x", nil)}})
		if err != nil {
			t.Errorf("%s report of an unknown job: %v, want nil (dropped)", kind, err)
		}
	}
}
