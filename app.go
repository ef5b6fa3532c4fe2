package mediajobs

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mediajobs/mediajobs/adapters/blobstore"
	"github.com/mediajobs/mediajobs/adapters/brokerqueue"
	"github.com/mediajobs/mediajobs/adapters/bus"
	"github.com/mediajobs/mediajobs/adapters/diskcheck"
	"github.com/mediajobs/mediajobs/adapters/httpapi"
	"github.com/mediajobs/mediajobs/adapters/logctx"
	"github.com/mediajobs/mediajobs/adapters/mcpserver"
	"github.com/mediajobs/mediajobs/adapters/metrics"
	memlimit "github.com/mediajobs/mediajobs/adapters/ratelimit"
	"github.com/mediajobs/mediajobs/adapters/runner"
	"github.com/mediajobs/mediajobs/adapters/safehttp"
	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/adapters/sqlstore"
	"github.com/mediajobs/mediajobs/adapters/transcribe"
	"github.com/mediajobs/mediajobs/adapters/urlsign"
	"github.com/mediajobs/mediajobs/adapters/webhookout"
	"github.com/mediajobs/mediajobs/contracts"
	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/blob"
	"github.com/mediajobs/mediajobs/core/clock"
	"github.com/mediajobs/mediajobs/core/idempotency"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/jobtype/captionburn"
	"github.com/mediajobs/mediajobs/core/jobtype/captionsanimate"
	"github.com/mediajobs/mediajobs/core/jobtype/extractmetadata"
	"github.com/mediajobs/mediajobs/core/jobtype/ffmpegjob"
	"github.com/mediajobs/mediajobs/core/ratelimit"
	"github.com/mediajobs/mediajobs/core/service"
	"github.com/mediajobs/mediajobs/core/workqueue"
	"github.com/mediajobs/mediajobs/validator"
	"github.com/mediajobs/mediajobs/web"
)

// Config is everything the service is configured with: flags, each defaulting to its
// MEDIAJOBS_* environment variable.
type Config struct {
	Addr        string
	Data        string
	BaseURL     string
	DatabaseURL string
	// DBMaxConns bounds the PostgreSQL connection pool, shared by every use of the store.
	DBMaxConns int
	// Blobs is where uploads and outputs live: file://DIR (default <data>/blobs) or
	// s3://BUCKET?endpoint=…&region=…&path_style=true (credentials from the AWS variables).
	Blobs string
	// AllowPrivate opens address ranges to the input fetcher (tests and local use only).
	AllowPrivate string
	// SigningKey is the hex HMAC key of download URLs; empty: one kept in <data>/signing.key.
	SigningKey string
	// SecretKeys seal destinations' secrets: "id:64-hex,id:64-hex", the first sealing, all
	// opening; empty: one key derived from the signing key (see docs/operations.md).
	SecretKeys string
	// DeliveryRetryDelays are the waits between the attempts of a delivery to a destination:
	// comma-separated durations, or "none" to fail at the first error.
	DeliveryRetryDelays string

	Slots int
	// SplitMinSeconds is the shortest input a job asking to be split (params.split "auto") is
	// split at; SplitMaxParts caps its parts (see service.SplitConfig).
	SplitMinSeconds int
	SplitMaxParts   int
	// WarmSandboxes keeps sandboxes started ahead for the in-process runner (see
	// sandbox.Pool); off, every run starts its sandbox cold.
	WarmSandboxes bool
	MaxUpload     int64
	// URLTTL is how long file URLs are valid: one hour by the spec; shorter only for tests.
	URLTTL time.Duration
	// Runner runs the in-process runner agent (the embedded default).
	Runner bool
	// WorkDir holds the runner's job work directories; empty: <data>/work when the sandbox user
	// can reach it, else a private directory under /var/tmp.
	WorkDir string
	// ValidatorWASM is the validator.wasm the playground page runs in the browser.
	ValidatorWASM string
	Transcription
	// Pricing is a pricing JSON file (plans, prices, packs); empty: the built-in pricing.
	Pricing string
	// RedisURL makes API replicas share rate limits in Redis; empty: in process memory.
	RedisURL string
	// BusURL carries hints and reports between replicas over NATS JetStream (nats://host:port);
	// empty: in process.
	BusURL string
	// WorkerToken is a shared secret `mediajobs worker` processes may present on
	// /internal/runner and on the broker, besides the credentials of `mediajobs workers
	// create`; empty: none.
	WorkerToken string
	// TrustedProxies are the CIDRs of proxies in front of the API (a load balancer) whose
	// X-Forwarded-For names the client, for the limit on failed authentications per address;
	// empty: the peer's address is the client's.
	TrustedProxies string
	// AdminToken opens the operator's /internal/admin routes (the fleet's worker credentials);
	// empty: those routes are off.
	AdminToken string
	// RunnerBroker carries the work queue to `mediajobs worker --control nats://…|postgres://…`
	// processes (nats://host:port or postgres://…); empty: the bus URL when it is NATS, else
	// workers reach this replica over HTTP only.
	RunnerBroker string
	// Lease is how long a runner holds a job without a heartbeat before it counts as lost.
	Lease time.Duration
	// DrainTimeout is how long, on stop, the in-process runner lets running jobs finish
	// before it hands them back.
	DrainTimeout time.Duration
	// PprofAddr serves Go's profiles (net/http/pprof) on a separate listener; empty: off.
	PprofAddr string
	// LogFormat is json (the default: one object a line, with request_id and job) or text.
	LogFormat string
	Log       *slog.Logger
}

// MinTokenLength is the shortest shared worker token or admin token Open accepts: both are
// bearer secrets an operator chooses, tried on the public listener.
const MinTokenLength = 16

// DefaultConfig is the configuration `mediajobs serve` starts with when given no flags: each
// field from its MEDIAJOBS_* variable, else its default (SQLite and blobs under ./var, the
// in-process runner with 2 slots, 1-hour links).
func DefaultConfig() Config {
	var c Config
	c.Flags(flag.NewFlagSet("mediajobs", flag.ContinueOnError))
	return c
}

// Flags registers the configuration flags on fs.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.Addr, "addr", env("MEDIAJOBS_ADDR", "127.0.0.1:8080"), "listen address (MEDIAJOBS_ADDR)")
	fs.StringVar(&c.Data, "data", env("MEDIAJOBS_DATA", "./var"), "data directory: SQLite file, blobs, work dirs (MEDIAJOBS_DATA)")
	fs.StringVar(&c.BaseURL, "base-url", env("MEDIAJOBS_BASE_URL", ""), "public base URL; default http://<addr> (MEDIAJOBS_BASE_URL)")
	fs.StringVar(&c.DatabaseURL, "database-url", env("MEDIAJOBS_DATABASE_URL", ""), "postgres://... to use PostgreSQL; empty: SQLite under --data (MEDIAJOBS_DATABASE_URL)")
	fs.StringVar(&c.Blobs, "blobs", env("MEDIAJOBS_BLOBS", ""), "where uploads and outputs live: file://DIR (default <data>/blobs) or s3://BUCKET?endpoint=URL&region=R&path_style=true, credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (MEDIAJOBS_BLOBS)")
	fs.IntVar(&c.DBMaxConns, "db-max-conns", envInt("MEDIAJOBS_DB_MAX_CONNS", sqlstore.DefaultMaxConns), "PostgreSQL connections of this process at most; keep replicas × this under the server's max_connections (MEDIAJOBS_DB_MAX_CONNS)")
	fs.StringVar(&c.AllowPrivate, "allow-private-networks", env("MEDIAJOBS_ALLOW_PRIVATE_NETWORKS", ""), "comma-separated CIDRs the fetcher may reach, for tests and local use (MEDIAJOBS_ALLOW_PRIVATE_NETWORKS)")
	fs.StringVar(&c.SigningKey, "signing-key", env("MEDIAJOBS_SIGNING_KEY", ""), "hex key of download URL signatures; default one kept in <data>/signing.key (MEDIAJOBS_SIGNING_KEY)")
	fs.StringVar(&c.SecretKeys, "secret-keys", env("MEDIAJOBS_SECRET_KEYS", ""), "keys sealing destinations' secrets, id:64-hex-digits comma-separated, the first sealing; empty: derived from the signing key (MEDIAJOBS_SECRET_KEYS)")
	fs.StringVar(&c.DeliveryRetryDelays, "delivery-retry-delays", env("MEDIAJOBS_DELIVERY_RETRY_DELAYS", "5s,25s,125s"), "waits between the attempts of a delivery to a destination, or none (MEDIAJOBS_DELIVERY_RETRY_DELAYS)")
	fs.IntVar(&c.Slots, "slots", envInt("MEDIAJOBS_SLOTS", 2), "jobs the in-process runner runs at once (MEDIAJOBS_SLOTS)")
	fs.IntVar(&c.SplitMinSeconds, "split-min-seconds", envInt("MEDIAJOBS_SPLIT_MIN_SECONDS", service.DefaultSplitMinSeconds), "shortest input, in seconds, that a job asking for params.split auto is split at (MEDIAJOBS_SPLIT_MIN_SECONDS)")
	fs.IntVar(&c.SplitMaxParts, "split-max-parts", envInt("MEDIAJOBS_SPLIT_MAX_PARTS", service.DefaultSplitMaxParts), "most parts one split job is cut into (MEDIAJOBS_SPLIT_MAX_PARTS)")
	fs.BoolVar(&c.WarmSandboxes, "warm-sandboxes", envBool("MEDIAJOBS_WARM_SANDBOXES", true), "keep sandboxes started ahead, two a slot, so a job does not wait for one: bubblewrap sandboxes, or containers with --sandbox docker (MEDIAJOBS_WARM_SANDBOXES)")
	fs.Int64Var(&c.MaxUpload, "max-upload", int64(envInt("MEDIAJOBS_MAX_UPLOAD", 512<<20)), "largest upload in bytes (MEDIAJOBS_MAX_UPLOAD)")
	fs.DurationVar(&c.URLTTL, "url-ttl", envDuration("MEDIAJOBS_URL_TTL", time.Hour), "validity of file URLs; the spec's is one hour (MEDIAJOBS_URL_TTL)")
	c.Transcription.Flags(fs)
	fs.StringVar(&c.WorkDir, "work-dir", env("MEDIAJOBS_WORK_DIR", ""), "job work directories; default <data>/work, or /var/tmp/mediajobs-* when the sandbox user cannot reach <data> (MEDIAJOBS_WORK_DIR)")
	fs.StringVar(&c.ValidatorWASM, "validator-wasm", env("MEDIAJOBS_VALIDATOR_WASM", "validator/cmd/wasm/validator.wasm"), "validator.wasm served to the playground at /playground/ (MEDIAJOBS_VALIDATOR_WASM)")
	fs.BoolVar(&c.Runner, "runner", envBool("MEDIAJOBS_RUNNER", true), "run the in-process runner agent (MEDIAJOBS_RUNNER)")
	fs.StringVar(&c.Pricing, "pricing", env("MEDIAJOBS_PRICING", ""), "pricing JSON file of plans, prices and packs; empty: built in (MEDIAJOBS_PRICING)")
	fs.StringVar(&c.RedisURL, "redis-url", env("MEDIAJOBS_REDIS_URL", ""), "redis://host:port/db to share rate limits between API replicas; empty: in memory (MEDIAJOBS_REDIS_URL)")
	fs.StringVar(&c.BusURL, "bus-url", env("MEDIAJOBS_BUS_URL", ""), "nats://host:port: replicas share cancels and dispatch hints over NATS JetStream; empty: in process (MEDIAJOBS_BUS_URL)")
	fs.StringVar(&c.RunnerBroker, "runner-broker", env("MEDIAJOBS_RUNNER_BROKER", ""), "nats://host:port or postgres://…: serve the work queue to workers over this broker (with --worker-token); empty: --bus-url when it is nats:// (MEDIAJOBS_RUNNER_BROKER)")
	fs.StringVar(&c.WorkerToken, "worker-token", env("MEDIAJOBS_WORKER_TOKEN", ""), "a shared secret `mediajobs worker` processes may use besides the credentials of `mediajobs workers create`; empty: none (MEDIAJOBS_WORKER_TOKEN)")
	fs.StringVar(&c.TrustedProxies, "trusted-proxies", env("MEDIAJOBS_TRUSTED_PROXIES", ""), "comma-separated CIDRs of proxies in front of the API whose X-Forwarded-For names the client; empty: none (MEDIAJOBS_TRUSTED_PROXIES)")
	fs.StringVar(&c.AdminToken, "admin-token", env("MEDIAJOBS_ADMIN_TOKEN", ""), "bearer token of the operator's /internal/admin routes (worker credentials); empty: those routes are off (MEDIAJOBS_ADMIN_TOKEN)")
	fs.DurationVar(&c.Lease, "lease", envDuration("MEDIAJOBS_LEASE", 30*time.Second), "how long a runner holds a job without a heartbeat before it counts as lost (MEDIAJOBS_LEASE)")
	fs.StringVar(&c.PprofAddr, "pprof-addr", env("MEDIAJOBS_PPROF_ADDR", ""), "serve Go's profiles (net/http/pprof) on this address, e.g. 127.0.0.1:6060; empty: off (MEDIAJOBS_PPROF_ADDR)")
	fs.StringVar(&c.LogFormat, "log-format", env("MEDIAJOBS_LOG_FORMAT", "json"), "log format: json (one object a line) or text (MEDIAJOBS_LOG_FORMAT)")
	fs.DurationVar(&c.DrainTimeout, "drain-timeout", envDuration("MEDIAJOBS_DRAIN_TIMEOUT", 10*time.Second), "on SIGTERM, how long the in-process runner's jobs may finish before they are handed back (MEDIAJOBS_DRAIN_TIMEOUT)")
}

func env(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}

func envInt(key string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(key)); err == nil {
		return v
	}
	return def
}

func envDuration(key string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(key)); err == nil {
		return v
	}
	return def
}

func envBool(key string, def bool) bool {
	if v, err := strconv.ParseBool(os.Getenv(key)); err == nil {
		return v
	}
	return def
}

// App is the composed service.
type App struct {
	Config  Config
	Store   *sqlstore.Store
	UC      UseCases
	Handler http.Handler
	Bus     *bus.Bus
	Relay   *service.Relay
	// Deliverer sends webhook deliveries.
	Deliverer *webhookout.Deliverer
	// Metrics are served at /metrics.
	Metrics *metrics.Metrics
	Log     *slog.Logger

	fetch       safehttp.Config
	transcriber transcribe.Router
	relayWake   chan struct{}
	// closeLimiter releases the rate limiter's connections, if it has any.
	closeLimiter func() error
	// dataLock is <data>/serve.lock while LockData holds it.
	dataLock *os.File
}

// UseCases are the application's use cases, composed over the adapters: those the HTTP API
// drives, and the ones only the application's own loops and the MCP server use.
type UseCases struct {
	httpapi.UseCases
	FanOut    *service.FanOut
	RateLimit *ratelimit.Gate
}

// Open connects the store (running migrations), and composes the service.
func Open(ctx context.Context, cfg Config) (*App, error) {
	if cfg.Log == nil {
		l, err := NewLogger(os.Stderr, cfg.LogFormat)
		if err != nil {
			return nil, err
		}
		cfg.Log = l
	}
	// Work directories are handed to the sandbox, which takes absolute paths only: resolve a
	// relative --data (make run's ./var) once, here.
	abs, err := filepath.Abs(cfg.Data)
	if err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	cfg.Data = abs
	// The data directory is created its owner's alone (0700), but for one case: when the
	// in-process runner keeps its work directories inside it, the sandbox user must be able to
	// search it, so it is made 0711 (reachable, not listable). An admin command opening the
	// directory of a running server leaves its mode alone. Every file in it is 0600 and every
	// other directory 0700 either way (the database, blobs, the signing key).
	runnerInside := cfg.Runner && cfg.WorkDir == ""
	mode := os.FileMode(0o700)
	if runnerInside {
		mode = 0o711
	}
	if err := os.MkdirAll(cfg.Data, mode); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	if runnerInside {
		if err := os.Chmod(cfg.Data, mode); err != nil {
			return nil, fmt.Errorf("data directory: %w", err)
		}
	}
	if cfg.URLTTL <= 0 {
		cfg.URLTTL = time.Hour
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = "http://" + cfg.Addr
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")

	store, err := OpenStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	a, err := compose(cfg, store)
	if err != nil {
		store.Close()
		return nil, err
	}
	return a, nil
}

// OpenStore opens the configured store and runs its migrations.
func OpenStore(ctx context.Context, cfg Config) (*sqlstore.Store, error) {
	if strings.HasPrefix(cfg.DatabaseURL, "postgres://") || strings.HasPrefix(cfg.DatabaseURL, "postgresql://") {
		return sqlstore.OpenPostgres(ctx, cfg.DatabaseURL, sqlstore.MaxConns(cfg.DBMaxConns))
	}
	if cfg.DatabaseURL != "" {
		return nil, fmt.Errorf("database URL %q: only postgres:// URLs are supported; leave it empty for SQLite", cfg.DatabaseURL)
	}
	if err := os.MkdirAll(cfg.Data, 0o700); err != nil {
		return nil, err
	}
	return sqlstore.OpenSQLite(ctx, filepath.Join(cfg.Data, "mediajobs.db"))
}

// openBus opens the configured bus: NATS JetStream for a nats:// URL, else the in-process one.
func openBus(url string, log *slog.Logger) (*bus.Bus, error) {
	switch {
	case url == "":
		return bus.NewGoChannel(log), nil
	case strings.HasPrefix(url, "nats://"):
		return bus.OpenNATS(bus.NATSConfig{URL: url}, log)
	}
	return nil, fmt.Errorf("bus URL %q: only nats:// URLs are supported; leave it empty for the in-process bus", url)
}

func compose(cfg Config, store *sqlstore.Store) (*App, error) {
	blobs, err := blobstore.Open(context.Background(), cfg.Blobs, cfg.Data)
	if err != nil {
		return nil, err
	}
	key, err := signingKey(cfg)
	if err != nil {
		return nil, err
	}
	signer, err := urlsign.New(cfg.BaseURL, key)
	if err != nil {
		return nil, err
	}
	fonts, err := runner.LoadFonts(context.Background())
	if err != nil {
		return nil, err
	}
	tr, err := cfg.transcriber()
	if err != nil {
		return nil, err
	}
	types, err := jobtype.NewRegistry(ffmpegjob.Type{}, extractmetadata.Type{},
		captionburn.Type{Fonts: fonts, Languages: tr.Languages()}, captionsanimate.Type{Fonts: fonts, Languages: tr.Languages()})
	if err != nil {
		return nil, err
	}
	allow, err := safehttp.ParseAllowList(cfg.AllowPrivate)
	if err != nil {
		return nil, fmt.Errorf("allow-private-networks: %w", err)
	}
	for name, token := range map[string]string{"worker-token": cfg.WorkerToken, "admin-token": cfg.AdminToken} {
		if token != "" && len(token) < MinTokenLength {
			return nil, fmt.Errorf("%s: %d characters is too short to stand against guessing; use at least %d (openssl rand -hex 24)",
				name, len(token), MinTokenLength)
		}
	}
	if cfg.RunnerBroker != "" && !isBrokerURL(cfg.RunnerBroker) {
		return nil, fmt.Errorf("runner-broker %s: needs a nats:// or postgres:// URL", redactURL(cfg.RunnerBroker))
	}
	proxies, err := safehttp.ParseAllowList(cfg.TrustedProxies)
	if err != nil {
		return nil, fmt.Errorf("trusted-proxies: %w", err)
	}
	// One policy for every fetch of a URL a user gave: inputs, MCP uploads, webhook receivers.
	fetch := safehttp.Config{AllowPrivate: allow}
	pricing, err := loadPricing(cfg.Pricing)
	if err != nil {
		return nil, err
	}
	limiter, closeLimiter, err := openLimiter(cfg.RedisURL)
	if err != nil {
		return nil, err
	}
	b, err := openBus(cfg.BusURL, cfg.Log)
	if err != nil {
		if closeLimiter != nil {
			_ = closeLimiter()
		}
		return nil, err
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 30 * time.Second
	}
	a := &App{Config: cfg, Store: store, Bus: b, Log: cfg.Log, transcriber: tr,
		fetch: fetch, relayWake: make(chan struct{}, 1), closeLimiter: closeLimiter,
		Metrics: metrics.New(store.QueueDepth)}
	uc, err := a.useCases(store, blobs, signer, types, pricing, key, limiter)
	if err != nil {
		a.closeAll()
		return nil, err
	}
	a.UC = uc
	a.Metrics.WatchJobWaits(uc.Jobs.Waiting)
	// One budget of failed authentications per client address, for the API and /mcp alike.
	failures := authFailures(cfg, limiter, proxies)
	api := httpapi.New(uc.UseCases, httpapi.Options{
		Verifier: signer, Validate: validator.Validate, OpenAPI: contracts.OpenAPIJSON(), URLTTL: cfg.URLTTL, AllowPrivateNetworks: allow,
		Ready: newReadiness(store, blobs, b, cfg.Log).check, Logger: cfg.Log, AdminToken: cfg.AdminToken,
		SecureCookies: strings.HasPrefix(cfg.BaseURL, "https://"),
		Authenticated: []httpapi.Middleware{httpapi.RateLimit(uc.RateLimit)},
		AuthFailures:  failures,
		OnRequest:     a.Metrics.Request, OnValidatorRejection: a.Metrics.ValidatorRejected,
	})
	// The playground runs validator.wasm in the browser; without the file it says how to build it.
	wasm, err := os.ReadFile(cfg.ValidatorWASM)
	if err != nil {
		cfg.Log.Warn("the playground has no validator.wasm; run make wasm", "path", cfg.ValidatorWASM)
		wasm = nil
	}
	mux := http.NewServeMux()
	mux.Handle("/playground/", http.StripPrefix("/playground", web.Handler(wasm)))
	mux.Handle("/docs/", http.StripPrefix("/docs", web.Docs(contracts.OpenAPIJSON())))
	// The console: its page at exactly "/", its files under /console/; every other path is the API's.
	console := web.Console(wasm)
	mux.Handle("GET /{$}", console)
	mux.Handle(web.ConsolePrefix, console)
	mux.Handle("/", api)
	mux.Handle("GET /metrics", a.Metrics.Handler())
	var hosts []string
	if u, err := url.Parse(cfg.BaseURL); err == nil {
		hosts = []string{u.Host}
	}
	// MCP drives the same use cases as REST, with the same rate-limit gate.
	mux.Handle("/mcp", logctx.Middleware(mcpserver.New(mcpserver.UseCases{Auth: uc.Auth, Submit: uc.Submit, Jobs: uc.Jobs, Uploads: uc.Uploads,
		Credits: uc.Credits, Presets: uc.Presets, Destinations: uc.Destinations, Types: types, RateLimit: uc.RateLimit},
		mcpserver.Options{Logger: cfg.Log, AllowedHosts: hosts, Fetch: safehttp.NewClient(fetch), AllowPrivateNetworks: allow,
			AuthFailed: httpapi.NewAuthFailureGate(failures, cfg.Log).Failed})))
	a.Handler = cleanPathsOnly(mux, api)

	a.Deliverer = webhookout.New(webhookout.Config{Store: store, HTTP: a.fetch, Log: cfg.Log, Observe: a.Metrics.Delivery})
	a.Relay = &service.Relay{Outbox: store, Clock: clock.System{}, Log: cfg.Log, Handlers: map[string]service.Handler{
		// Job charges go to the ledger, once each.
		billing.TopicCharge: uc.Credits.HandleCharge,
		// A batch's finished jobs are counted once each; the last writes batch.completed.
		service.TopicBatchJobDone: uc.Batches.HandleJobDone,
		// Job events fan out to webhook endpoints as deliveries, then go on the bus for
		// whoever else listens.
		service.TopicEvents: func(ctx context.Context, m job.Message) error {
			// A complete job's delivery to its destination becomes due.
			if err := uc.Destinations.HandleEvent(ctx, m); err != nil {
				return err
			}
			n, err := uc.FanOut.Fan(ctx, m)
			if n > 0 {
				a.Deliverer.Wake() // even when a later endpoint failed: these are written
			}
			if err != nil {
				return err
			}
			return b.Publish(ctx, service.TopicEvents, m.Payload)
		},
	}}
	store.OnOutbox = func() {
		select {
		case a.relayWake <- struct{}{}:
		default:
		}
	}
	return a, nil
}

// eventJob is the job a job event (service.Event) names, "" for another event's payload.
func eventJob(payload []byte) string {
	var e struct {
		JobID string `json:"jobId"`
	}
	_ = json.Unmarshal(payload, &e)
	return e.JobID
}

// useCases composes the application's use cases over the adapters.
func (a *App) useCases(store *sqlstore.Store, blobs blob.Store, signer *urlsign.Signer, types *jobtype.Registry,
	pricing *billing.Pricing, key []byte, limiter ratelimit.Limiter) (UseCases, error) {
	cfg, clk := a.Config, clock.System{}
	// The waits on jobs (GET /jobs/{id}?wait=) hear of a job this replica ends as it commits.
	waits := service.NewWaits()
	obs := observers{a.Metrics, logObserver{a.Log}, waits}
	tokens, err := workqueue.NewTokens(leaseKey(key))
	if err != nil {
		return UseCases{}, err
	}
	runs, err := service.NewRuns(service.RunsPorts{Jobs: store, Accounts: store, Assets: store, Blobs: blobs, Ledger: store,
		Pricing: pricing, Clock: clk, Tokens: tokens, Registry: store, Lease: cfg.Lease, AssetURLPrefix: cfg.BaseURL + "/assets/",
		RunnerURL: cfg.BaseURL, Log: a.Log, Observer: obs, Credentials: store,
		Split: service.SplitConfig{MinSeconds: float64(cfg.SplitMinSeconds), MaxParts: cfg.SplitMaxParts, AllowPrivateNetworks: a.fetch.AllowPrivate}})
	if err != nil {
		return UseCases{}, err
	}
	workers, err := service.NewWorkers(service.WorkersPorts{Credentials: store, Jobs: store, Runs: runs, Clock: clk,
		EnvToken: cfg.WorkerToken, Log: a.Log})
	if err != nil {
		return UseCases{}, err
	}
	viewer := service.Viewer{Signer: signer, Clock: clk, URLTTL: cfg.URLTTL}
	gate := service.GatePorts{Pricing: pricing, Ledger: store, Types: types, Assets: store, AssetURLPrefix: cfg.BaseURL + "/assets/",
		AllowPrivateNetworks: a.fetch.AllowPrivate, Observer: obs}
	waker := &dispatchHints{runs: runs, bus: a.Bus, log: a.Log}
	uc := UseCases{UseCases: httpapi.UseCases{Runs: runs, Workers: workers, Types: types}, RateLimit: ratelimit.NewGate(limiter, func(acc account.Account) int {
		return pricing.Limits(acc.Plan).RequestsPerMinute
	}, a.Log)}
	var errs []error
	collect := func(err error) { errs = append(errs, err) }
	uc.Presets, err = service.NewPresets(service.PresetsPorts{Presets: store, Clock: clk,
		Env: jobtype.Env{AssetURLPrefix: gate.AssetURLPrefix, AllowPrivateNetworks: gate.AllowPrivateNetworks}})
	collect(err)
	gate.Presets = uc.Presets
	uc.Idempotency, err = idempotency.NewGuard(idempotency.GuardPorts{Store: store, Clock: clk})
	collect(err)
	uc.Auth, err = service.NewAuth(service.AuthPorts{Accounts: store, Clock: clk, Balances: store})
	collect(err)
	uc.Destinations, err = a.destinations(store, blobs, key)
	collect(err)
	uc.Submit, err = service.NewSubmit(service.SubmitPorts{Gate: gate, Jobs: store, Clock: clk, Waker: waker, Destinations: uc.Destinations})
	collect(err)
	uc.Jobs, err = service.NewJobs(service.JobsPorts{Jobs: store, Blobs: blobs, Viewer: viewer, Waits: waits})
	collect(err)
	uc.Cancel, err = service.NewCancel(service.CancelPorts{Jobs: store, Blobs: blobs, Pricing: pricing, Clock: clk, Stopper: cancelHints{a.Bus, a.Log}, Viewer: viewer,
		Observer: obs})
	collect(err)
	uc.Batches, err = service.NewBatches(service.BatchesPorts{Gate: gate, Batches: store, Clock: clk, Waker: waker})
	collect(err)
	uc.Uploads, err = service.NewUploads(service.UploadsPorts{Assets: store, Blobs: blobs, Clock: clk, MaxUpload: cfg.MaxUpload,
		AssetURLPrefix: cfg.BaseURL + "/assets/"})
	collect(err)
	uc.Webhooks, err = service.NewWebhooks(service.WebhooksPorts{Store: store, URLs: webhookout.URLChecker{HTTP: a.fetch}, Clock: clk})
	collect(err)
	uc.FanOut, err = service.NewFanOut(service.FanOutPorts{Store: store, Jobs: store, Batches: store, Viewer: viewer})
	collect(err)
	uc.Credits, err = service.NewCredits(service.CreditsPorts{Accounts: store, Ledger: store, Pricing: pricing, Clock: clk})
	collect(err)
	return uc, errors.Join(errs...)
}

// leaseKey derives the key of lease tokens from the URL signing key, so that one secret is
// configured per deployment and the two uses never share a key.
func leaseKey(signing []byte) []byte {
	m := hmac.New(sha256.New, signing)
	m.Write([]byte("mediajobs lease tokens"))
	return m.Sum(nil)
}

// dispatchHints wakes the runners of a class when work is submitted: the claims waiting in
// this replica at once, and the other replicas' through the bus.
type dispatchHints struct {
	runs *service.Runs
	bus  *bus.Bus
	log  *slog.Logger
}

func (d *dispatchHints) Wake(ctx context.Context, c job.Class) {
	d.runs.Wake(ctx, c)
	if err := d.bus.Publish(ctx, service.TopicDispatchPrefix+string(c), []byte(c)); err != nil {
		d.log.Warn("dispatch hint not published; runners find the job at their next poll", "err", err)
	}
}

// cancelHints tells every replica's runners to stop a cancelled job at once; the heartbeat
// tells them too.
type cancelHints struct {
	bus *bus.Bus
	log *slog.Logger
}

func (c cancelHints) Stop(ctx context.Context, jobID string) {
	if err := c.bus.Publish(ctx, service.TopicCancel, []byte(jobID)); err != nil {
		c.log.Warn("cancel hint not published; the runner learns it at its next heartbeat", "job", jobID, "err", err)
	}
}

// workRoot is where job work directories go. The sandbox runs as an unprivileged user that must
// search every parent of a work directory: <data>/work when it can (the usual case), else a
// private directory under /var/tmp (world-searchable), because a checkout in root's home (/root
// is 0700) would otherwise fail every job. --work-dir chooses explicitly, and is checked too.
func workRoot(sb *sandbox.Sandbox, data, workDir string, log *slog.Logger) (string, error) {
	if workDir != "" {
		abs, err := filepath.Abs(workDir)
		if err != nil {
			return "", err
		}
		if err := sb.Reachable(filepath.Dir(abs)); err != nil {
			return "", fmt.Errorf("work-dir: %w", err)
		}
		return abs, nil
	}
	if data == "" {
		return "", errors.New("a work directory is required: set --work-dir")
	}
	if sb.Reachable(data) == nil {
		return filepath.Join(data, "work"), nil
	}
	sum := sha256.Sum256([]byte(data))
	fallback := filepath.Join("/var/tmp", "mediajobs-"+hex.EncodeToString(sum[:6]))
	if err := sb.Reachable(filepath.Dir(fallback)); err != nil {
		return "", fmt.Errorf("the sandbox user cannot reach %s nor /var/tmp; set --work-dir: %w", data, err)
	}
	log.Info("job work directories are outside the data directory, which the sandbox user cannot reach",
		"data", data, "work", fallback)
	return fallback, nil
}

// defaultTranscribeLanguages are languages Whisper-family servers transcribe well.
const defaultTranscribeLanguages = "ar,cs,da,de,el,en,es,fi,fr,he,hi,hu,id,it,ja,ko,nl,no,pl,pt,ro,ru,sv,th,tr,uk,vi,zh"

// Transcription configures transcription beyond the embedded English engine: an
// OpenAI-compatible /v1/audio/transcriptions server (OpenAI, whisper.cpp, faster-whisper) for
// other languages. serve (which checks languages at submit) and worker (which transcribes)
// take the same flags.
type Transcription struct {
	TranscribeURL       string
	TranscribeKey       string
	TranscribeModel     string
	TranscribeLanguages string
}

// Flags registers the transcription flags on fs.
func (c *Transcription) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.TranscribeURL, "transcribe-url", env("MEDIAJOBS_TRANSCRIBE_URL", ""), "OpenAI-compatible transcription server for languages beyond English, e.g. http://127.0.0.1:8081 (MEDIAJOBS_TRANSCRIBE_URL)")
	fs.StringVar(&c.TranscribeKey, "transcribe-key", env("MEDIAJOBS_TRANSCRIBE_KEY", ""), "bearer key of the transcription server (MEDIAJOBS_TRANSCRIBE_KEY)")
	fs.StringVar(&c.TranscribeModel, "transcribe-model", env("MEDIAJOBS_TRANSCRIBE_MODEL", "whisper-1"), "model name sent to the transcription server (MEDIAJOBS_TRANSCRIBE_MODEL)")
	fs.StringVar(&c.TranscribeLanguages, "transcribe-languages", env("MEDIAJOBS_TRANSCRIBE_LANGUAGES", defaultTranscribeLanguages), "ISO-639-1 codes sent to the transcription server (MEDIAJOBS_TRANSCRIBE_LANGUAGES)")
}

// transcriber is the embedded English engine, plus the configured multilingual server. The
// server's address is the operator's own configuration, not user input, so it is reached with a
// plain client (it is often on the same host) rather than the SSRF guard user URLs go through.
func (cfg Transcription) transcriber() (transcribe.Router, error) {
	r, err := transcribe.Embedded()
	if err != nil || cfg.TranscribeURL == "" {
		return r, err
	}
	u, err := url.Parse(cfg.TranscribeURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return r, fmt.Errorf("transcribe-url %q is not an http(s) URL", cfg.TranscribeURL)
	}
	var langs []string
	for _, l := range strings.Split(cfg.TranscribeLanguages, ",") {
		if l = strings.TrimSpace(l); l != "" {
			langs = append(langs, l)
		}
	}
	r.Multilingual = transcribe.OpenAI{URL: cfg.TranscribeURL, Key: cfg.TranscribeKey, Model: cfg.TranscribeModel,
		Client: &http.Client{Timeout: 15 * time.Minute}, Langs: langs}
	return r, nil
}

// signingKey is the configured key, or the one kept in the data directory (made on first use).
func signingKey(cfg Config) ([]byte, error) {
	if cfg.SigningKey != "" {
		k, err := hex.DecodeString(cfg.SigningKey)
		if err != nil || len(k) < urlsign.MinKeySize {
			return nil, fmt.Errorf("signing key must be at least %d bytes of hex", urlsign.MinKeySize)
		}
		return k, nil
	}
	path := filepath.Join(cfg.Data, "signing.key")
	if b, err := os.ReadFile(path); err == nil {
		k, err := hex.DecodeString(strings.TrimSpace(string(b)))
		if err != nil || len(k) < urlsign.MinKeySize {
			return nil, fmt.Errorf("%s is not a valid signing key", path)
		}
		return k, nil
	}
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	if err := os.WriteFile(path, []byte(hex.EncodeToString(k)+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	return k, nil
}

// Close releases the store, the bus and the data directory's lock.
func (a *App) Close() {
	a.closeAll()
	a.Store.Close()
	a.unlockData()
}

func (a *App) closeAll() {
	a.Bus.Close()
	if a.closeLimiter != nil {
		_ = a.closeLimiter()
	}
}

// Start runs the service's background work until ctx ends: the outbox relay, lease sweeps,
// monthly grants, webhook deliveries, (Config.Runner) the in-process runner and (a runner
// broker configured) the work queue served to workers over the broker. A program that
// embeds the service with its own HTTP server calls Start rather than Run; wait returns once
// all of it stopped. With the embedded default (SQLite in the data directory) it first takes
// the directory for this process alone (LockData), and fails with ErrDataInUse while another
// process serves from it. Requests held by GET /jobs/{id}?wait= are answered when ctx ends: an
// embedder cancels ctx before its server's Shutdown, or registers UC.Jobs.Stop with the
// server's RegisterOnShutdown, so that Shutdown does not wait out their waits.
func (a *App) Start(ctx context.Context) (wait func(), err error) {
	// One process serves a data directory at a time (LockData).
	if err := a.LockData(); err != nil {
		return nil, err
	}
	diskcheck.Warn(a.Log, a.Config.Data, "data directory")
	// Work submitted on other replicas wakes the claims waiting here.
	for _, c := range []job.Class{job.ClassCPU, job.ClassGPU} {
		if err := a.Bus.Subscribe(ctx, service.TopicDispatchPrefix+string(c), func(ctx context.Context, _ []byte) error {
			a.UC.Runs.Wake(ctx, c)
			return nil
		}); err != nil {
			return nil, err
		}
	}
	// A job's events, of any replica (the relay publishes them below its handlers), tell the
	// waits on it here to read it again; the service's stop ends them all.
	if err := a.Bus.Subscribe(ctx, service.TopicEvents, func(_ context.Context, p []byte) error {
		a.UC.Jobs.Changed(eventJob(p))
		return nil
	}); err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, a.UC.Jobs.Stop)
	services := []service.Service{
		service.NewSweepService(a.UC.Runs, service.SweepConfig{Lease: a.Config.Lease, Log: a.Log,
			Requeued: func(ctx context.Context, classes []job.Class) {
				for _, c := range classes {
					_ = a.Bus.Publish(ctx, service.TopicDispatchPrefix+string(c), []byte(c))
				}
			}}),
		service.NewGrantService(a.UC.Credits, a.UC.Idempotency, service.GrantConfig{Log: a.Log}),
		service.NewRelayService(a.Relay, service.RelayConfig{Wake: a.relayWake, Log: a.Log}),
		service.NewDeliveryService(a.UC.Destinations, service.DeliveryConfig{Log: a.Log}),
		a.Deliverer,
	}
	if a.Config.Runner {
		agent, err := a.newRunner(ctx)
		if err != nil {
			return nil, err
		}
		services = append(services, agent)
	}
	if broker := a.runnerBroker(); broker != "" {
		qs, err := a.brokerServer(ctx, broker)
		if err != nil {
			return nil, err
		}
		services = append(services, qs)
	}
	done := service.RunServices(ctx, services...)
	return func() {
		<-ctx.Done()
		a.UC.Runs.Stop()
		done()
	}, nil
}

// Run serves the API on ln and runs the control plane (lease sweep, outbox relay, webhook
// deliveries) and, when configured, the in-process runner agent, until ctx ends; then it
// drains and returns.
func (a *App) Run(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wait, err := a.Start(ctx)
	if err != nil {
		return err
	}
	defer wait()
	defer cancel() // before wait: the background work stops when Run returns
	if a.Config.PprofAddr != "" {
		stopPprof, err := servePprof(a.Config.PprofAddr, a.Log)
		if err != nil {
			return err
		}
		defer stopPprof()
	}
	srv := &http.Server{Handler: a.Handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	// When ctx ends, long-poll claims return at once and the server drains for up to 10 s.
	drained := make(chan error, 1)
	stop := context.AfterFunc(ctx, func() {
		a.UC.Runs.Stop()
		shutdown, cancelShutdown := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancelShutdown()
		drained <- srv.Shutdown(shutdown)
	})
	err = srv.Serve(ln)
	if stop() {
		return err // the listener failed on its own
	}
	return <-drained
}

// brokerServer serves the work queue to workers over the broker at url, each call through
// Runs.As the identity its credential authenticates as. As a service, it stops taking calls
// when its context ends, answers the claims waiting for work at once, and closes the broker.
func (a *App) brokerServer(ctx context.Context, url string) (service.Service, error) {
	b, err := brokerqueue.Dial(ctx, url, a.Log)
	if err != nil {
		return nil, fmt.Errorf("runner broker %s: %w", redactURL(url), err)
	}
	auth := func(ctx context.Context, secret string) (workqueue.Queue, error) {
		id, err := a.UC.Workers.Authenticate(ctx, secret)
		if err != nil {
			return nil, err
		}
		return a.UC.Runs.As(id), nil
	}
	qs, err := brokerqueue.NewServer(b, auth, a.Log)
	if err != nil {
		return nil, err
	}
	return service.ServiceFunc(func(ctx context.Context) {
		if err := qs.Run(ctx); err != nil && ctx.Err() == nil {
			a.Log.Error("runner broker stopped", "err", err)
		}
		_ = qs.Close()
	}), nil
}

// runnerBroker is the broker that carries the work queue to remote workers, or "" when none
// does: --runner-broker, or else a NATS bus when a shared worker token is set.
func (a *App) runnerBroker() string {
	switch {
	case a.Config.RunnerBroker != "":
		return a.Config.RunnerBroker
	case a.Config.WorkerToken != "" && strings.HasPrefix(a.Config.BusURL, "nats://"):
		return a.Config.BusURL
	}
	return ""
}

// newRunner makes the in-process runner agent: it takes work from this replica's Runs
// directly, the embedded default's work queue.
func (a *App) newRunner(ctx context.Context) (*runner.Agent, error) {
	agent, err := NewAgent(ctx, AgentConfig{Class: job.ClassCPU, Slots: a.Config.Slots, Warm: a.Config.WarmSandboxes, Data: a.Config.Data, WorkDir: a.Config.WorkDir,
		Transcriber: a.transcriber, Fetch: a.fetch, Log: a.Log,
		// The claim waits in Runs itself, which a submit on this replica wakes directly.
		Runner: runner.Config{DrainTimeout: a.Config.DrainTimeout, ClaimWait: 10 * time.Second}}, a.UC.Runs)
	if err != nil {
		return nil, err
	}
	if err := a.Bus.Subscribe(ctx, service.TopicDispatchPrefix+string(job.ClassCPU), func(context.Context, []byte) error {
		agent.Wake()
		return nil
	}); err != nil {
		return nil, err
	}
	if err := a.Bus.Subscribe(ctx, service.TopicCancel, func(_ context.Context, p []byte) error {
		agent.Cancel(string(p))
		return nil
	}); err != nil {
		return nil, err
	}
	return agent, nil
}

// authFailures is the limit on failed authentications per client address: shared between
// replicas through Redis when the rate limits are, else in this process's memory (bounded),
// one limiter for the API and /mcp.
func authFailures(cfg Config, limiter ratelimit.Limiter, proxies []netip.Prefix) httpapi.AuthFailures {
	f := httpapi.AuthFailures{TrustedProxies: proxies, Limiter: limiter}
	if cfg.RedisURL == "" {
		m := memlimit.NewMemory()
		m.MaxKeys = 2 * httpapi.MaxAuthFailureAddresses // an address's budget and its log line
		f.Limiter = m
	}
	return f
}

// cleanPathsOnly hands a request whose path ServeMux would clean and redirect ("//", "/./",
// "/../" in it) to api, which answers it 404 NOT_FOUND in its error shape, as it answers an
// unclean path of its own: a redirect, in HTML, would turn a client's POST into a GET.
func cleanPathsOnly(mux, api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		clean := path.Clean(p)
		if strings.HasSuffix(p, "/") && clean != "/" {
			clean += "/"
		}
		if p == "" || clean != p {
			api.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}
