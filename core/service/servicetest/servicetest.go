// Package servicetest composes every use case over in-memory adapters and a fake clock, for
// the tests of the core and of the drivers (REST, MCP, the runner transports) alike, and, through
// Compose, for examples and programs that embed the use cases in memory.
package servicetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/account/accounttest"
	"github.com/mediajobs/mediajobs/core/asset/assettest"
	"github.com/mediajobs/mediajobs/core/batch/batchtest"
	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/billing/billingtest"
	"github.com/mediajobs/mediajobs/core/blob"
	"github.com/mediajobs/mediajobs/core/blob/blobtest"
	"github.com/mediajobs/mediajobs/core/clock/clocktest"
	"github.com/mediajobs/mediajobs/core/destination"
	"github.com/mediajobs/mediajobs/core/destination/destinationtest"
	"github.com/mediajobs/mediajobs/core/idempotency"
	"github.com/mediajobs/mediajobs/core/idempotency/idempotencytest"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/preset/presettest"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
	"github.com/mediajobs/mediajobs/core/webhook/webhooktest"
	"github.com/mediajobs/mediajobs/core/workqueue"
	"github.com/mediajobs/mediajobs/core/workqueue/workqueuetest"
)

// Options shape a Harness; every field has a default.
type Options struct {
	// BaseURL is {base_url}; default https://api.test.
	BaseURL string
	// Types are the job types; required.
	Types *jobtype.Registry
	// Signer mints file URLs; default a fake that writes the expiry into the URL.
	Signer job.Signer
	// Blobs keeps bytes; default in memory.
	Blobs blob.Store
	// URLs vets webhook URLs; default accepts every URL.
	URLs service.URLChecker
	// MaxUpload caps uploads; default 1 MiB.
	MaxUpload int64
	// Lease is the runners' lease; default one minute.
	Lease time.Duration
	// Start is the fake clock's start; default 2026-11-22 12:00 UTC.
	Start time.Time
	// Log receives the use cases' warnings; default discarded.
	Log *slog.Logger
	// Observer hears what the use cases did; default service.NoObserver.
	Observer service.Observer
	// WorkerToken is the shared token Workers accepts besides the credentials it issues;
	// default none.
	WorkerToken string
	// DeliveryRetryDelays are Destinations' waits between a delivery's attempts; default one
	// second and two.
	DeliveryRetryDelays []time.Duration
	// Recheck is Runs' RunsPorts.Recheck; default its own.
	Recheck time.Duration
	// Waits are Jobs' JobsPorts.Waits; default its own. The application also makes them an
	// Observer, so that they hear of the jobs that end: pass them as Observer too for that.
	Waits *service.Waits
	// WaitRecheck is Jobs' JobsPorts.Recheck; default its own.
	WaitRecheck time.Duration
	// Split is Runs' RunsPorts.Split; default its own.
	Split service.SplitConfig
}

// Harness is every use case over in-memory adapters.
type Harness struct {
	Clock    *clocktest.Fake
	Store    *batchtest.Memory // jobs, batches and the outbox
	Accounts *accounttest.Memory
	Assets   *assettest.Memory
	Ledger   *billingtest.Memory
	Hooks    *webhooktest.Memory
	Blobs    blob.Store
	Tokens   workqueue.Tokens
	Pricing  *billing.Pricing
	Hints    *Hints
	Registry *workqueuetest.MemoryRegistry
	// Credentials are the worker credentials Workers issues.
	Credentials *workqueuetest.MemoryCredentials

	Auth   *service.Auth
	Submit *service.Submit
	Jobs   *service.Jobs
	Cancel *service.Cancel
	Runs   *service.Runs
	// Workers authenticates remote runners: Options.WorkerToken, or a credential it issued.
	Workers *service.Workers
	Uploads *service.Uploads
	Batches *service.Batches
	// Presets keeps presets in memory; the submit gate resolves jobs that name one through it.
	Presets  *service.Presets
	Credits  *service.Credits
	Webhooks *service.Webhooks
	// Destinations keeps destinations in DestinationStore and copies outputs through
	// Deliverer, a fake: DeliverDue makes one pass.
	Destinations     *service.Destinations
	DestinationStore *destinationtest.Memory
	Deliverer        *FakeDeliverer
	FanOut           *service.FanOut
	Relay            *service.Relay
	// Idempotency is the Idempotency-Key guard over an in-memory key store.
	Idempotency *idempotency.Guard

	lease  time.Duration
	mu     sync.Mutex
	events []string
}

// New composes a Harness; it fails the test on a wiring error.
func New(t testing.TB, o Options) *Harness {
	t.Helper()
	h, err := Compose(o)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Compose composes a Harness outside a test: examples and programs that embed the service
// over memory use it.
func Compose(o Options) (*Harness, error) {
	if o.Types == nil {
		return nil, errors.New("servicetest: Options.Types is required")
	}
	if o.BaseURL == "" {
		o.BaseURL = "https://api.test"
	}
	if o.Signer == nil {
		o.Signer = fakeSigner{}
	}
	if o.Blobs == nil {
		o.Blobs = blobtest.NewMemory()
	}
	if o.URLs == nil {
		o.URLs = acceptAll{}
	}
	if o.MaxUpload == 0 {
		o.MaxUpload = 1 << 20
	}
	if o.Lease == 0 {
		o.Lease = time.Minute
	}
	if o.Start.IsZero() {
		o.Start = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Observer == nil {
		o.Observer = service.NoObserver{}
	}
	if o.DeliveryRetryDelays == nil {
		o.DeliveryRetryDelays = []time.Duration{time.Second, 2 * time.Second}
	}
	tokens, err := workqueue.NewTokens([]byte(strings.Repeat("k", 32)))
	if err != nil {
		return nil, err
	}
	h := &Harness{Clock: clocktest.New(o.Start), Store: batchtest.NewMemory(nil), Accounts: accounttest.NewMemory(),
		Assets: assettest.NewMemory(), Ledger: billingtest.NewMemory(), Hooks: webhooktest.NewMemory(), Blobs: o.Blobs,
		Tokens: tokens, Pricing: billing.Default(), Hints: &Hints{}, Registry: workqueuetest.NewMemoryRegistry(), lease: o.Lease,
		Credentials: workqueuetest.NewMemoryCredentials()}
	prefix := o.BaseURL + "/assets/"
	viewer := service.Viewer{Signer: o.Signer, Clock: h.Clock, URLTTL: time.Hour}
	gate := service.GatePorts{Pricing: h.Pricing, Ledger: h.Ledger, Types: o.Types, Assets: h.Assets, AssetURLPrefix: prefix,
		Observer: o.Observer}
	var errs []error
	must := func(err error) { errs = append(errs, err) }
	h.Presets, err = service.NewPresets(service.PresetsPorts{Presets: presettest.NewMemory(), Clock: h.Clock,
		Env: jobtype.Env{AssetURLPrefix: prefix}})
	must(err)
	gate.Presets = h.Presets
	h.Runs, err = service.NewRuns(service.RunsPorts{Jobs: h.Store, Accounts: h.Accounts, Assets: h.Assets, Blobs: h.Blobs,
		Ledger: h.Ledger, Pricing: h.Pricing, Clock: h.Clock, Tokens: tokens, Registry: h.Registry, Lease: o.Lease, AssetURLPrefix: prefix,
		RunnerURL: o.BaseURL, Log: o.Log, Observer: o.Observer, Credentials: h.Credentials, Recheck: o.Recheck, Split: o.Split})
	must(err)
	if h.Runs != nil {
		h.Workers, err = service.NewWorkers(service.WorkersPorts{Credentials: h.Credentials, Jobs: h.Store, Runs: h.Runs, Clock: h.Clock,
			EnvToken: o.WorkerToken, Log: o.Log})
		must(err)
	}
	h.Hints.runs = h.Runs
	h.Auth, err = service.NewAuth(service.AuthPorts{Accounts: h.Accounts, Clock: h.Clock})
	must(err)
	h.Idempotency, err = idempotency.NewGuard(idempotency.GuardPorts{Store: idempotencytest.NewMemory(), Clock: h.Clock})
	must(err)
	h.DestinationStore, h.Deliverer = destinationtest.NewMemory(), NewFakeDeliverer()
	keys, err := destination.NewKeyring(destination.SecretKey{ID: "test", Secret: []byte(strings.Repeat("s", 32))})
	must(err)
	h.Destinations, err = service.NewDestinations(service.DestinationsPorts{Store: h.DestinationStore, Jobs: h.Store, Blobs: h.Blobs,
		Deliverer: h.Deliverer, Keys: keys, URLs: o.URLs, Clock: h.Clock, Log: o.Log,
		RetryDelays: o.DeliveryRetryDelays})
	must(err)
	h.Submit, err = service.NewSubmit(service.SubmitPorts{Gate: gate, Jobs: h.Store, Clock: h.Clock, Waker: h.Hints,
		Destinations: h.Destinations})
	must(err)
	h.Jobs, err = service.NewJobs(service.JobsPorts{Jobs: h.Store, Blobs: h.Blobs, Viewer: viewer, Waits: o.Waits, Recheck: o.WaitRecheck})
	must(err)
	h.Cancel, err = service.NewCancel(service.CancelPorts{Jobs: h.Store, Blobs: h.Blobs, Pricing: h.Pricing, Clock: h.Clock, Stopper: h.Hints, Viewer: viewer,
		Observer: o.Observer})
	must(err)
	h.Uploads, err = service.NewUploads(service.UploadsPorts{Assets: h.Assets, Blobs: h.Blobs, Clock: h.Clock, MaxUpload: o.MaxUpload,
		AssetURLPrefix: prefix})
	must(err)
	h.Batches, err = service.NewBatches(service.BatchesPorts{Gate: gate, Batches: h.Store, Clock: h.Clock, Waker: h.Hints})
	must(err)
	h.Credits, err = service.NewCredits(service.CreditsPorts{Accounts: h.Accounts, Ledger: h.Ledger, Pricing: h.Pricing, Clock: h.Clock})
	must(err)
	h.Webhooks, err = service.NewWebhooks(service.WebhooksPorts{Store: h.Hooks, URLs: o.URLs, Clock: h.Clock})
	must(err)
	h.FanOut, err = service.NewFanOut(service.FanOutPorts{Store: h.Hooks, Jobs: h.Store, Batches: h.Store, Viewer: viewer})
	must(err)
	h.Relay = &service.Relay{Outbox: h.Store, Clock: h.Clock, Log: o.Log, Handlers: map[string]service.Handler{
		billing.TopicCharge:       h.Credits.HandleCharge,
		service.TopicBatchJobDone: h.Batches.HandleJobDone,
		service.TopicEvents: func(ctx context.Context, m job.Message) error {
			h.mu.Lock()
			h.events = append(h.events, string(m.Payload))
			h.mu.Unlock()
			if err := h.Destinations.HandleEvent(ctx, m); err != nil {
				return err
			}
			return h.FanOut.Handle(ctx, m)
		},
	}}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return h, nil
}

// Open makes an account of plan holding balance credits (its plan's grants adjusted to it) and
// an API key for it; it returns the account and the key's secret.
func (h *Harness) Open(t testing.TB, id string, plan account.Plan, balance int64) (account.Account, string) {
	t.Helper()
	a, secret, err := h.OpenAccount(context.Background(), id, plan, balance)
	if err != nil {
		t.Fatal(err)
	}
	return a, secret
}

// OpenAccount is Open outside a test.
func (h *Harness) OpenAccount(ctx context.Context, id string, plan account.Plan, balance int64) (account.Account, string, error) {
	if id == "" {
		id = job.NewID("acc")
	}
	a := account.Account{ID: id, Plan: plan, CreatedAt: h.Clock.Now().UTC().Truncate(time.Microsecond)}
	if err := h.Credits.OpenAccount(ctx, a); err != nil {
		return a, "", err
	}
	if err := h.Store.CreateAccount(ctx, a); err != nil { // the job store's plans, for concurrency caps
		return a, "", err
	}
	if have, _ := h.Ledger.Balance(ctx, a.ID); have != balance {
		if _, err := h.Credits.AddCredits(ctx, service.Credit{AccountID: a.ID, Kind: billing.KindAdjustment, Amount: balance - have, Note: "test"}); err != nil {
			return a, "", err
		}
	}
	secret, k := account.NewKey(a.ID, job.NewID("key"), h.Clock.Now())
	if err := h.Accounts.CreateKey(ctx, k); err != nil {
		return a, "", err
	}
	return a, secret, nil
}

// Drain runs the relay once and returns every event it has handed on so far.
func (h *Harness) Drain(t testing.TB) []string {
	t.Helper()
	// Until a pass finds nothing: a handler may write messages of its own (a batch's last job
	// writes batch.completed), which in a service wake the relay for another pass.
	for {
		n, err := h.Relay.Drain(context.Background())
		if err != nil {
			t.Fatalf("Drain: %v", err)
		}
		if n == 0 {
			return h.Events()
		}
	}
}

// Events are the job and batch events the relay handed on so far.
func (h *Harness) Events() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.events...)
}

// Hints records the wake-ups and stops the use cases send, and wakes the claims waiting in
// Runs as a deployment's hints would.
type Hints struct {
	mu    sync.Mutex
	woken []job.Class
	stops []string
	runs  *service.Runs
}

// Wake records the wake-up and wakes the waiting claims.
func (h *Hints) Wake(ctx context.Context, c job.Class) {
	h.mu.Lock()
	h.woken = append(h.woken, c)
	h.mu.Unlock()
	if h.runs != nil {
		h.runs.Wake(ctx, c)
	}
}

// Stop records the stop.
func (h *Hints) Stop(_ context.Context, jobID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stops = append(h.stops, jobID)
}

// Stopped lists the jobs stopped so far.
func (h *Hints) Stopped() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.stops...)
}

// Wakes counts the wake-ups so far.
func (h *Hints) Wakes() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.woken)
}

type fakeSigner struct{}

func (fakeSigner) SignFile(jobID string, p job.Pattern, file string, exp time.Time) string {
	return fmt.Sprintf("https://x/%s/%s/%s?e=%d", p, jobID, file, exp.Unix())
}

type acceptAll struct{}

func (acceptAll) CheckURL(context.Context, string) error { return nil }

// QueueHarness is the work-queue suite's harness over this control plane, with q the adapter
// under test (h.Runs itself in process). Jobs are submitted by a Pro account of its own, whose
// plan is cut here to 6 files and 1 MiB a job so that the suite can pass both caps.
func (h *Harness) QueueHarness(t *testing.T, q workqueue.Queue) workqueuetest.Harness {
	t.Helper()
	pro := h.Pricing.Plans[string(account.PlanPro)]
	pro.JobFiles, pro.JobBytes = 6, 1<<20
	h.Pricing.Plans[string(account.PlanPro)] = pro
	acct, _ := h.Open(t, "", account.PlanPro, 100_000)
	ctx := context.Background()
	var mu sync.Mutex
	accounts := map[string]account.Account{}
	return workqueuetest.Harness{
		Queue:  q,
		Elapse: h.Clock.Advance,
		Submit: func(t *testing.T, class job.Class, assets ...string) string {
			t.Helper()
			enc := ""
			if class == job.ClassGPU {
				enc = " -c:v h264_nvenc"
			}
			reads, inputs := "", map[string]string{}
			for i, id := range assets {
				name := fmt.Sprintf("in%d.vtt", i)
				reads += " -i " + name
				inputs[name] = h.Uploads.URL(id)
			}
			params, _ := json.Marshal(map[string]string{"command": "ffmpeg -f lavfi -i testsrc=duration=1" + reads + enc + " out.mp4"})
			var in json.RawMessage
			if len(inputs) > 0 {
				in, _ = json.Marshal(inputs)
			}
			j, err := h.Submit.Submit(ctx, acct, jobtype.Request{Type: "ffmpeg", Inputs: in, Params: params})
			if err != nil {
				t.Fatalf("Submit: %v", err)
			}
			// Claims are oldest first: keep the submit order the claim order.
			h.Clock.Advance(time.Millisecond)
			return j.ID
		},
		SubmitFor: func(t *testing.T, name string, p job.Priority) string {
			t.Helper()
			mu.Lock()
			a, ok := accounts[name]
			if !ok {
				a, _ = h.Open(t, "", account.PlanPro, 100_000)
				accounts[name] = a
			}
			mu.Unlock()
			params, _ := json.Marshal(map[string]string{"command": "ffmpeg -f lavfi -i testsrc=duration=1 out.mp4"})
			j, err := h.Submit.Submit(ctx, a, jobtype.Request{Type: "ffmpeg", Params: params, Priority: string(p)})
			if err != nil {
				t.Fatalf("Submit: %v", err)
			}
			// Age orders a turn's jobs: keep the submit order their age order.
			h.Clock.Advance(time.Millisecond)
			return j.ID
		},
		Upload: func(t *testing.T, content []byte) string {
			t.Helper()
			a, err := h.Uploads.Upload(ctx, acct, "in.vtt", "text/vtt", bytes.NewReader(content))
			if err != nil {
				t.Fatal(err)
			}
			return a.ID
		},
		Cancel: func(t *testing.T, id string) {
			t.Helper()
			if _, err := h.Cancel.Cancel(ctx, acct, id); err != nil {
				t.Fatal(err)
			}
		},
		Expire: func(t *testing.T) {
			t.Helper()
			h.Clock.Advance(h.lease + time.Second)
			if _, err := h.Runs.Sweep(ctx); err != nil {
				t.Fatal(err)
			}
		},
		Job: func(t *testing.T, id string) *job.Job {
			t.Helper()
			j, err := h.Store.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return j
		},
		Output: func(t *testing.T, jobID, name string) []byte {
			t.Helper()
			j, err := h.Store.Get(ctx, jobID)
			if err != nil {
				t.Fatal(err)
			}
			b, err := h.Blobs.Open(ctx, blob.AttemptOutputKey(acct.ID, jobID, j.Attempt, name))
			if errors.Is(err, problem.ErrNotFound) {
				return nil
			}
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			data, _ := io.ReadAll(b)
			return data
		},
	}
}
