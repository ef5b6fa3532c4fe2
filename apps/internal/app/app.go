// Package app composes the service from its adapters: the one place that knows every part.
// The subcommands of cmd/mediajobs open an App and run it.
package app

import (
	"context"
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
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mediajobs/mediajobs/adapters/blobfs"
	"github.com/mediajobs/mediajobs/adapters/bus"
	"github.com/mediajobs/mediajobs/adapters/httpapi"
	"github.com/mediajobs/mediajobs/adapters/mcpserver"
	"github.com/mediajobs/mediajobs/adapters/runner"
	"github.com/mediajobs/mediajobs/adapters/safehttp"
	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/adapters/sqlstore"
	"github.com/mediajobs/mediajobs/adapters/transcribe"
	"github.com/mediajobs/mediajobs/adapters/urlsign"
	"github.com/mediajobs/mediajobs/adapters/webhookout"
	"github.com/mediajobs/mediajobs/apps/web"
	"github.com/mediajobs/mediajobs/contracts"
	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/clock"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/jobtype/captionburn"
	"github.com/mediajobs/mediajobs/core/jobtype/captionsanimate"
	"github.com/mediajobs/mediajobs/core/jobtype/extractmetadata"
	"github.com/mediajobs/mediajobs/core/jobtype/ffmpegjob"
	"github.com/mediajobs/mediajobs/core/service"
	"github.com/mediajobs/mediajobs/validator"
)

// Config is everything the service is configured with: flags, each defaulting to its
// MEDIAJOBS_* environment variable.
type Config struct {
	Addr        string
	Data        string
	BaseURL     string
	DatabaseURL string
	// AllowPrivate opens address ranges to the input fetcher (tests and local use only).
	AllowPrivate string
	// SigningKey is the hex HMAC key of download URLs; empty: one kept in <data>/signing.key.
	SigningKey string
	Slots      int
	MaxUpload  int64
	// URLTTL is how long file URLs are valid: one hour by the spec; shorter only for tests.
	URLTTL time.Duration
	// Runner runs the in-process runner agent (the embedded default).
	Runner bool
	// WorkDir holds the runner's job work directories; empty: <data>/work when the sandbox user
	// can reach it, else a private directory under /var/tmp.
	WorkDir string
	// ValidatorWASM is the validator.wasm the playground page runs in the browser.
	ValidatorWASM string
	// Transcription beyond the embedded English engine: an OpenAI-compatible
	// /v1/audio/transcriptions server (OpenAI, whisper.cpp, faster-whisper) for other languages.
	TranscribeURL       string
	TranscribeKey       string
	TranscribeModel     string
	TranscribeLanguages string
	// Pricing is a pricing JSON file (plans, prices, packs); empty: the built-in pricing.
	Pricing string
	// RedisURL makes API replicas share rate limits in Redis; empty: in process memory.
	RedisURL string
	// BusURL carries hints and reports between replicas over NATS JetStream (nats://host:port);
	// empty: in process.
	BusURL string
	Log    *slog.Logger
}

// Flags registers the configuration flags on fs.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.Addr, "addr", env("MEDIAJOBS_ADDR", "127.0.0.1:8080"), "listen address (MEDIAJOBS_ADDR)")
	fs.StringVar(&c.Data, "data", env("MEDIAJOBS_DATA", "./var"), "data directory: SQLite file, blobs, work dirs (MEDIAJOBS_DATA)")
	fs.StringVar(&c.BaseURL, "base-url", env("MEDIAJOBS_BASE_URL", ""), "public base URL; default http://<addr> (MEDIAJOBS_BASE_URL)")
	fs.StringVar(&c.DatabaseURL, "database-url", env("MEDIAJOBS_DATABASE_URL", ""), "postgres://... to use PostgreSQL; empty: SQLite under --data (MEDIAJOBS_DATABASE_URL)")
	fs.StringVar(&c.AllowPrivate, "allow-private-networks", env("MEDIAJOBS_ALLOW_PRIVATE_NETWORKS", ""), "comma-separated CIDRs the fetcher may reach, for tests and local use (MEDIAJOBS_ALLOW_PRIVATE_NETWORKS)")
	fs.StringVar(&c.SigningKey, "signing-key", env("MEDIAJOBS_SIGNING_KEY", ""), "hex key of download URL signatures; default one kept in <data>/signing.key (MEDIAJOBS_SIGNING_KEY)")
	fs.IntVar(&c.Slots, "slots", envInt("MEDIAJOBS_SLOTS", 2), "jobs the in-process runner runs at once (MEDIAJOBS_SLOTS)")
	fs.Int64Var(&c.MaxUpload, "max-upload", int64(envInt("MEDIAJOBS_MAX_UPLOAD", 512<<20)), "largest upload in bytes (MEDIAJOBS_MAX_UPLOAD)")
	fs.DurationVar(&c.URLTTL, "url-ttl", envDuration("MEDIAJOBS_URL_TTL", time.Hour), "validity of file URLs; the spec's is one hour (MEDIAJOBS_URL_TTL)")
	fs.StringVar(&c.TranscribeURL, "transcribe-url", env("MEDIAJOBS_TRANSCRIBE_URL", ""), "OpenAI-compatible transcription server for languages beyond English, e.g. http://127.0.0.1:8081 (MEDIAJOBS_TRANSCRIBE_URL)")
	fs.StringVar(&c.TranscribeKey, "transcribe-key", env("MEDIAJOBS_TRANSCRIBE_KEY", ""), "bearer key of the transcription server (MEDIAJOBS_TRANSCRIBE_KEY)")
	fs.StringVar(&c.TranscribeModel, "transcribe-model", env("MEDIAJOBS_TRANSCRIBE_MODEL", "whisper-1"), "model name sent to the transcription server (MEDIAJOBS_TRANSCRIBE_MODEL)")
	fs.StringVar(&c.TranscribeLanguages, "transcribe-languages", env("MEDIAJOBS_TRANSCRIBE_LANGUAGES", defaultTranscribeLanguages), "ISO-639-1 codes sent to the transcription server (MEDIAJOBS_TRANSCRIBE_LANGUAGES)")
	fs.StringVar(&c.WorkDir, "work-dir", env("MEDIAJOBS_WORK_DIR", ""), "job work directories; default <data>/work, or /var/tmp/mediajobs-* when the sandbox user cannot reach <data> (MEDIAJOBS_WORK_DIR)")
	fs.StringVar(&c.ValidatorWASM, "validator-wasm", env("MEDIAJOBS_VALIDATOR_WASM", "validator/cmd/wasm/validator.wasm"), "validator.wasm served to the playground at /playground/ (MEDIAJOBS_VALIDATOR_WASM)")
	fs.BoolVar(&c.Runner, "runner", envBool("MEDIAJOBS_RUNNER", true), "run the in-process runner agent (MEDIAJOBS_RUNNER)")
	fs.StringVar(&c.Pricing, "pricing", env("MEDIAJOBS_PRICING", ""), "pricing JSON file of plans, prices and packs; empty: built in (MEDIAJOBS_PRICING)")
	fs.StringVar(&c.RedisURL, "redis-url", env("MEDIAJOBS_REDIS_URL", ""), "redis://host:port/db to share rate limits between API replicas; empty: in memory (MEDIAJOBS_REDIS_URL)")
	fs.StringVar(&c.BusURL, "bus-url", env("MEDIAJOBS_BUS_URL", ""), "nats://host:port: replicas share cancels, dispatch hints and runner reports over NATS JetStream; empty: in process (MEDIAJOBS_BUS_URL)")
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
	Service *service.Service
	Handler http.Handler
	Bus     *bus.Bus
	Relay   *service.Relay
	// Deliverer sends webhook deliveries.
	Deliverer *webhookout.Deliverer
	Log       *slog.Logger

	fetch       safehttp.Config
	transcriber transcribe.Router
	relayWake   chan struct{}
	// closeLimiter releases the rate limiter's connections, if it has any.
	closeLimiter func() error
}

// Open connects the store (running migrations), and composes the service.
func Open(ctx context.Context, cfg Config) (*App, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	// Work directories are handed to the sandbox, which takes absolute paths only: resolve a
	// relative --data (make run's ./var) once, here.
	abs, err := filepath.Abs(cfg.Data)
	if err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	cfg.Data = abs
	// The data directory must be searchable by the sandbox user (its work directories live
	// inside), so it is 0711: reachable, not listable.
	if err := os.MkdirAll(cfg.Data, 0o711); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	if err := os.Chmod(cfg.Data, 0o711); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
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
		return sqlstore.OpenPostgres(ctx, cfg.DatabaseURL)
	}
	if cfg.DatabaseURL != "" {
		return nil, fmt.Errorf("database URL %q: only postgres:// URLs are supported; leave it empty for SQLite", cfg.DatabaseURL)
	}
	if err := os.MkdirAll(cfg.Data, 0o711); err != nil {
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
	blobs, err := blobfs.New(filepath.Join(cfg.Data, "blobs"))
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
	svc := &service.Service{Pricing: pricing, Ledger: store, Jobs: store, Batches: store, Accounts: store, Assets: store, Blobs: blobs, Types: types,
		Clock: clock.System{}, Signer: signer, Bus: b,
		Config: service.Config{BaseURL: cfg.BaseURL, URLTTL: cfg.URLTTL, Lease: 30 * time.Second, MaxUpload: cfg.MaxUpload}}
	api := httpapi.New(svc, httpapi.Options{
		Verifier: signer, Validate: validator.Validate, OpenAPI: contracts.OpenAPIJSON(),
		Ready: store.Ping, Logger: cfg.Log,
		Authenticated: []httpapi.Middleware{httpapi.RateLimit(limiter, func(a account.Account) int { return svc.Limits(a).RequestsPerMinute }, cfg.Log)},
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
	mux.Handle("/", api)
	// MCP spends the REST rate limit: one limiter instance, one budget per account.
	var hosts []string
	if u, err := url.Parse(cfg.BaseURL); err == nil {
		hosts = []string{u.Host}
	}
	mux.Handle("/mcp", mcpserver.New(svc, mcpserver.Options{Limiter: limiter, Logger: cfg.Log, AllowedHosts: hosts,
		Limits: svc.Limits,
		Fetch:  safehttp.NewClient(fetch)}))

	a := &App{Config: cfg, Store: store, Service: svc, Handler: mux, Bus: b, Log: cfg.Log, transcriber: tr,
		fetch: fetch, relayWake: make(chan struct{}, 1), closeLimiter: closeLimiter}
	svc.Webhooks, svc.URLCheck = store, webhookout.URLChecker{HTTP: a.fetch}
	a.Deliverer = webhookout.New(webhookout.Config{Store: store, HTTP: a.fetch, Log: cfg.Log})
	a.Relay = &service.Relay{Outbox: store, Clock: clock.System{}, Log: cfg.Log, Handlers: map[string]service.Handler{
		// Job charges go to the ledger, once each.
		billing.TopicCharge: svc.HandleCharge,
		// A batch's finished jobs are counted once each; the last writes batch.completed.
		service.TopicBatchJobDone: svc.HandleBatchJobDone,
		// Job events fan out to webhook endpoints as deliveries, then go on the bus for
		// whoever else listens.
		service.TopicEvents: func(ctx context.Context, m job.Message) error {
			if err := svc.FanOut(ctx, m); err != nil {
				return err
			}
			a.Deliverer.Wake()
			return b.Publish(ctx, service.TopicEvents, m.Payload)
		},
	}}
	svc.OutboxNotify = func() {
		select {
		case a.relayWake <- struct{}{}:
		default:
		}
	}
	return a, nil
}

// workRoot is where job work directories go. The sandbox runs as an unprivileged user that must
// search every parent of a work directory: <data>/work when it can (the usual case), else a
// private directory under /var/tmp (world-searchable), because a checkout in root's home (/root
// is 0700) would otherwise fail every job. --work-dir chooses explicitly, and is checked too.
func workRoot(sb *sandbox.Sandbox, cfg Config, log *slog.Logger) (string, error) {
	if cfg.WorkDir != "" {
		abs, err := filepath.Abs(cfg.WorkDir)
		if err != nil {
			return "", err
		}
		if err := sb.Reachable(filepath.Dir(abs)); err != nil {
			return "", fmt.Errorf("work-dir: %w", err)
		}
		return abs, nil
	}
	if sb.Reachable(cfg.Data) == nil {
		return filepath.Join(cfg.Data, "work"), nil
	}
	sum := sha256.Sum256([]byte(cfg.Data))
	fallback := filepath.Join("/var/tmp", "mediajobs-"+hex.EncodeToString(sum[:6]))
	if err := sb.Reachable(filepath.Dir(fallback)); err != nil {
		return "", fmt.Errorf("the sandbox user cannot reach %s nor /var/tmp; set --work-dir: %w", cfg.Data, err)
	}
	log.Info("job work directories are outside the data directory, which the sandbox user cannot reach",
		"data", cfg.Data, "work", fallback)
	return fallback, nil
}

// defaultTranscribeLanguages are languages Whisper-family servers transcribe well.
const defaultTranscribeLanguages = "ar,cs,da,de,el,en,es,fi,fr,he,hi,hu,id,it,ja,ko,nl,no,pl,pt,ro,ru,sv,th,tr,uk,vi,zh"

// transcriber is the embedded English engine, plus the configured multilingual server. The
// server's address is the operator's own configuration, not user input, so it is reached with a
// plain client (it is often on the same host) rather than the SSRF guard user URLs go through.
func (cfg Config) transcriber() (transcribe.Router, error) {
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

// Close releases the store and the bus.
func (a *App) Close() {
	a.Bus.Close()
	a.Store.Close()
	if a.closeLimiter != nil {
		_ = a.closeLimiter()
	}
}

// Run serves the API on ln and runs the control plane (runner reports, lease sweep) and, when
// configured, the in-process runner agent, until ctx ends; then it drains and returns.
func (a *App) Run(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup

	if err := a.Bus.Subscribe(ctx, service.TopicRunner, func(ctx context.Context, p []byte) error {
		var r service.RunnerReport
		if err := json.Unmarshal(p, &r); err != nil {
			a.Log.Warn("dropping a malformed runner report", "err", err)
			return nil
		}
		return a.Service.HandleReport(ctx, r)
	}); err != nil {
		return err
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.sweep(ctx)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.grantMonthly(ctx)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.relay(ctx)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.Deliverer.Run(ctx)
	}()
	if a.Config.Runner {
		agent, err := a.startRunner(ctx, &wg)
		if err != nil {
			return err
		}
		_ = agent
	}

	srv := &http.Server{Handler: a.Handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		cancel()
		wg.Wait()
		return err
	case <-ctx.Done():
	}
	shutdown, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	err := srv.Shutdown(shutdown)
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// relay hands outbox messages on as soon as a change emits them, and polls for those whose
// handler failed or whose relay died.
func (a *App) relay(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		if _, err := a.Relay.Drain(ctx); err != nil && ctx.Err() == nil {
			a.Log.Warn("outbox relay failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-a.relayWake:
		case <-t.C:
		}
	}
}

// sweep fails jobs whose runner went silent, every few seconds.
func (a *App) sweep(ctx context.Context) {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		if n, err := a.Service.Sweep(ctx); err != nil && ctx.Err() == nil {
			a.Log.Warn("lease sweep failed", "err", err)
		} else if n > 0 {
			a.Log.Info("failed jobs of lost runners", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (a *App) startRunner(ctx context.Context, wg *sync.WaitGroup) (*runner.Agent, error) {
	sb, err := sandbox.New(sandbox.Config{})
	if err != nil {
		return nil, err
	}
	if err := sb.Available(ctx); err != nil {
		return nil, fmt.Errorf("the runner needs the bubblewrap sandbox: %w", err)
	}
	tr := a.transcriber
	blobs := a.Service.Blobs
	exec := &runner.FFmpeg{Sandbox: sb, Blobs: blobs, Log: a.Log, Fetch: runner.Fetcher{
		Client: safehttp.NewClient(a.fetch), Assets: a.Store, Blobs: blobs, MaxBytes: 2 << 30}}
	work, err := workRoot(sb, a.Config, a.Log)
	if err != nil {
		return nil, err
	}
	agent, err := runner.New(runner.Config{Class: job.ClassCPU, Slots: a.Config.Slots,
		WorkRoot: work, Log: a.Log},
		a.Service, runner.BusReporter{Bus: a.Bus}, map[string]runner.Executor{ffmpegjob.Name: exec,
			extractmetadata.Name: &runner.Metadata{FFmpeg: exec}, captionburn.Name: &runner.Captions{FFmpeg: exec, Transcriber: tr},
			captionsanimate.Name: &runner.Animate{FFmpeg: exec, Transcriber: tr}})
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
	wg.Add(1)
	go func() {
		defer wg.Done()
		agent.Run(ctx)
	}()
	return agent, nil
}
