package httpapi

import (
	"bytes"
	"context"
	"log/slog"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bunrouter"

	"github.com/mediajobs/mediajobs/adapters/logctx"
	"github.com/mediajobs/mediajobs/adapters/urlsign"
	"github.com/mediajobs/mediajobs/core/idempotency"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
	"github.com/mediajobs/mediajobs/validator"
)

// Verifier checks the token of a download URL, and mints tokens for the members of a playlist
// it serves; *urlsign.Signer is one. The errors of Verify and VerifyMember wrap
// urlsign.ErrExpired or urlsign.ErrForged.
type Verifier interface {
	Verify(kind urlsign.Kind, jobID, file, token string, now time.Time) error
	// VerifyMember checks a /v/ token and returns the expiry of the link its chain began with.
	VerifyMember(jobID, token string, now time.Time) (origin time.Time, err error)
	// MemberToken mints a /v/ token valid until expires that carries origin on.
	MemberToken(jobID string, expires, origin time.Time) string
}

// ValidateFunc validates an FFmpeg command: validator.Validate, or the WASM adapter's.
type ValidateFunc func(command string, opts validator.Options) validator.Result

// Middleware wraps a handler.
type Middleware func(http.Handler) http.Handler

// Options configure the API. Verifier, Validate and OpenAPI are required.
type Options struct {
	// Verifier checks download tokens.
	Verifier Verifier
	// Validate answers POST /ffmpeg/validate.
	Validate ValidateFunc
	// AllowPrivateNetworks are the address ranges the operator opened to the input fetcher:
	// POST /ffmpeg/validate lets input URLs in them through, as POST /jobs does.
	AllowPrivateNetworks []netip.Prefix
	// MaxJSONBody caps a JSON request body; 0 means DefaultMaxJSONBody.
	MaxJSONBody int64
	// MaxUploadBody caps the body of POST /uploads, multipart framing included; 0 means the
	// service's MaxUpload plus 64 KiB. The service caps the file itself at its MaxUpload.
	MaxUploadBody int64
	// OpenAPI is the document GET /openapi.json serves (contracts.OpenAPIJSON()).
	OpenAPI []byte
	// Ready reports whether the service can take work (store and blobs writable, ...); an error
	// answers /readyz with 503 (its message when it is a SERVICE_UNAVAILABLE Problem). nil is
	// always ready.
	Ready func(context.Context) error
	// Logger receives internal errors and recovered panics; nil means slog.Default().
	Logger *slog.Logger
	// Authenticated wrap every authenticated route, after authentication: AccountFrom gives
	// the caller. Rate limiting plugs in here; it rejects through WriteError.
	Authenticated []Middleware
	// AuthFailures limit failed authentications per client address; the zero value is
	// DefaultAuthFailuresPerMinute in this process's memory.
	AuthFailures AuthFailures
	// Now is the clock of download token checks; nil is time.Now.
	Now func() time.Time
	// SecureCookies marks the session cookie Secure even on a plain-HTTP request: set it when
	// a proxy terminates TLS in front of the API. A request over TLS gets it regardless.
	SecureCookies bool
	// URLTTL is the life of the links minted in a re-signed HLS playlist, before its media's
	// own duration is added; 0 is the spec's hour.
	URLTTL time.Duration
	// AdminToken authenticates the operator on /internal/admin (MEDIAJOBS_ADMIN_TOKEN); empty
	// turns those routes off.
	AdminToken string
	// OnRequest, when set, hears every request once answered: its method, its route pattern
	// in OpenAPI form (/jobs/{id}; "unmatched" for no route), status and duration.
	OnRequest func(method, route string, status int, took time.Duration)
	// OnValidatorRejection, when set, hears the layer of each command POST /ffmpeg/validate
	// refuses.
	OnValidatorRejection func(layer string)
}

// DefaultMaxJSONBody is the default cap of a JSON request body.
const DefaultMaxJSONBody = 1 << 20

// Route is one route of the API, its path in OpenAPI form (/jobs/{id}).
type Route struct {
	Method string
	Path   string
	// Auth tells whether the route needs a bearer API key (or the console's session cookie).
	Auth bool
	// Session tells a route that acts on the console's session itself: authenticated like any
	// Auth route, but meaningful only with the session cookie.
	Session bool
	// Worker tells a route of remote runners, authenticated by a worker credential.
	Worker bool
	// Admin tells a route of the operator, authenticated by the admin token.
	Admin bool
	// Query tells a route whose handler reads the query string (and refuses a parameter it does
	// not know); a route without it, other than a worker's, refuses any query parameter.
	Query bool
	// Body tells a POST, PUT, PATCH or DELETE route whose handler reads a request body; one
	// without it, other than a worker's, refuses any body but {} (noBody).
	Body bool
}

// UseCases are the application's use cases the API drives. Without Workers the
// /internal/runner routes (Runs') answer 404.
type UseCases struct {
	Auth     *service.Auth
	Submit   *service.Submit
	Jobs     *service.Jobs
	Cancel   *service.Cancel
	Batches  *service.Batches
	Uploads  *service.Uploads
	Webhooks *service.Webhooks
	Credits  *service.Credits
	// Destinations serves /destinations, a job's delivery and POST /jobs/{id}/deliver; nil:
	// those answer that the server delivers to no destination.
	Destinations *service.Destinations
	// Presets serves /presets and resolves jobs that name one (through the gate); nil: /presets
	// answers that the server keeps none.
	Presets *service.Presets
	// Types lists the job types, for the type filter of listings.
	Types *jobtype.Registry
	// Runs is the control plane's side of the work queue: remote runners, and capacity.
	Runs *service.Runs
	// Workers authenticates remote runners on /internal/runner (nil: those routes are off) and
	// serves the operator's fleet view on /internal/admin/workers.
	Workers *service.Workers
	// Idempotency answers repeats of POST /jobs, /batches and /uploads that carry an
	// Idempotency-Key.
	Idempotency *idempotency.Guard
}

type api struct {
	uc   UseCases
	opts Options
	log  *slog.Logger
	// failures counts failed authentications per client address; nil when the limit is off.
	failures *failureGate
}

type route struct {
	Route
	handle bunrouter.HandlerFunc
}

func (a *api) routes() []route {
	r := func(method, path string, auth bool, h bunrouter.HandlerFunc) route {
		return route{Route{Method: method, Path: path, Auth: auth}, h}
	}
	s := func(method, path string, h bunrouter.HandlerFunc) route {
		return route{Route{Method: method, Path: path, Auth: true, Session: true}, h}
	}
	w := func(method, path string, h workerHandler) route {
		return route{Route{Method: method, Path: path, Worker: true}, a.asWorker(h)}
	}
	op := func(method, path string, h bunrouter.HandlerFunc) route {
		return route{Route{Method: method, Path: path, Admin: true}, a.asAdmin(h)}
	}
	rs := []route{
		r(http.MethodPost, "/jobs", true, a.idempotentJSON("POST /jobs", a.submitJob)),
		r(http.MethodGet, "/jobs", true, a.listJobs),
		r(http.MethodGet, "/jobs/{id}", true, a.getJob),
		r(http.MethodPost, "/jobs/{id}/cancel", true, a.cancelJob),
		r(http.MethodPost, "/jobs/{id}/retry", true, a.retryJob),
		r(http.MethodPost, "/jobs/{id}/priority", true, a.setPriority),
		r(http.MethodPost, "/jobs/{id}/deliver", true, a.deliverJob),
		r(http.MethodPost, "/destinations", true, a.createDestination),
		r(http.MethodGet, "/destinations", true, a.listDestinations),
		r(http.MethodGet, "/destinations/{id}", true, a.getDestination),
		r(http.MethodDelete, "/destinations/{id}", true, a.deleteDestination),
		r(http.MethodGet, "/queue", true, a.queue),
		r(http.MethodPost, "/batches", true, a.idempotentJSON("POST /batches", a.submitBatch)),
		r(http.MethodGet, "/batches", true, a.listBatches),
		r(http.MethodGet, "/batches/{id}", true, a.getBatch),
		r(http.MethodPost, "/ffmpeg/validate", false, a.validate),
		r(http.MethodGet, "/ffmpeg/flags", false, a.ffmpegFlags),
		r(http.MethodPost, "/uploads", true, a.upload),
		r(http.MethodGet, "/uploads", true, a.listUploads),
		r(http.MethodGet, "/assets/{id}/content", true, a.assetContent),
		r(http.MethodHead, "/assets/{id}/content", true, a.assetContent),
		r(http.MethodGet, "/account", true, a.account),
		r(http.MethodGet, "/account/ledger", true, a.ledger),
		r(http.MethodPost, "/presets", true, a.createPreset),
		r(http.MethodGet, "/presets", true, a.listPresets),
		r(http.MethodGet, "/presets/thumbnail-sprite/index.vtt", true, a.spriteIndex),
		r(http.MethodGet, "/presets/{name}", true, a.getPreset),
		r(http.MethodPut, "/presets/{name}", true, a.updatePreset),
		r(http.MethodDelete, "/presets/{name}", true, a.deletePreset),
		r(http.MethodPost, "/webhook-endpoints", true, a.createEndpoint),
		r(http.MethodGet, "/webhook-endpoints", true, a.listEndpoints),
		r(http.MethodGet, "/webhook-endpoints/{id}", true, a.getEndpoint),
		r(http.MethodPatch, "/webhook-endpoints/{id}", true, a.updateEndpoint),
		r(http.MethodDelete, "/webhook-endpoints/{id}", true, a.deleteEndpoint),
		r(http.MethodPost, "/webhook-endpoints/{id}/test", true, a.testEndpoint),
		r(http.MethodPost, "/webhook-endpoints/{id}/rotate-secret", true, a.rotateSecret),
		r(http.MethodGet, "/webhook-endpoints/{id}/deliveries", true, a.listDeliveries),
		r(http.MethodPost, "/deliveries/{id}/redeliver", true, a.redeliver),
		r(http.MethodPost, "/session", false, a.signIn),
		s(http.MethodGet, "/session", a.getSession),
		s(http.MethodDelete, "/session", a.signOut),
		r(http.MethodGet, "/api-keys", true, a.listKeys),
		r(http.MethodPost, "/api-keys", true, a.createKey),
		r(http.MethodDelete, "/api-keys/{id}", true, a.revokeKey),
		r(http.MethodGet, "/healthz", false, a.healthz),
		r(http.MethodGet, "/readyz", false, a.readyz),
		r(http.MethodGet, "/openapi.json", false, a.openapi),
		r(http.MethodGet, "/dl/{job_id}", false, a.downloadFile),
		r(http.MethodHead, "/dl/{job_id}", false, a.downloadFile),
		r(http.MethodGet, "/v/{job_id}/{token}/{file}", false, a.downloadMember),
		r(http.MethodHead, "/v/{job_id}/{token}/{file}", false, a.downloadMember),
		w(http.MethodPost, "/internal/runner/claim", a.runnerClaim),
		w(http.MethodPost, "/internal/runner/heartbeat", a.runnerHeartbeat),
		w(http.MethodPost, "/internal/runner/report", a.runnerReport),
		w(http.MethodGet, "/internal/runner/jobs/{job_id}/assets/{asset_id}", a.runnerAsset),
		w(http.MethodPut, "/internal/runner/jobs/{job_id}/outputs/{name}", a.runnerOutput),
		op(http.MethodGet, "/internal/admin/workers", a.adminListWorkers),
		op(http.MethodPost, "/internal/admin/workers", a.adminCreateWorker),
		op(http.MethodDelete, "/internal/admin/workers/{id}", a.adminRevokeWorker),
	}
	for i := range rs {
		rs[i].Query = readsQuery[rs[i].Method+" "+rs[i].Path]
		rs[i].Body = readsBody[rs[i].Method+" "+rs[i].Path]
	}
	return rs
}

// Routes lists every route New serves.
func Routes() []Route {
	rs := (&api{}).routes()
	out := make([]Route, len(rs))
	for i, r := range rs {
		out[i] = r.Route
	}
	return out
}

// New returns the REST API over the use cases. It panics when a use case or a required option
// is missing: that is a wiring mistake, not a runtime condition.
func New(uc UseCases, opts Options) http.Handler {
	if uc.Auth == nil || uc.Submit == nil || uc.Jobs == nil || uc.Cancel == nil || uc.Batches == nil || uc.Uploads == nil ||
		uc.Webhooks == nil || uc.Credits == nil || uc.Types == nil || uc.Runs == nil || uc.Idempotency == nil {
		panic("httpapi: New needs every use case")
	}
	if opts.Verifier == nil || opts.Validate == nil || opts.OpenAPI == nil {
		panic("httpapi: New needs the Verifier, Validate and OpenAPI options")
	}
	if opts.MaxJSONBody <= 0 {
		opts.MaxJSONBody = DefaultMaxJSONBody
	}
	if opts.MaxUploadBody <= 0 {
		opts.MaxUploadBody = uc.Uploads.MaxUpload() + 64<<10
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.URLTTL <= 0 {
		opts.URLTTL = time.Hour
	}
	a := &api{uc: uc, opts: opts, log: opts.Logger}
	if a.log == nil {
		a.log = slog.Default()
	}
	a.failures = newFailureGate(opts.AuthFailures, opts.Now, a.log)

	allowed := map[string][]string{}
	router := bunrouter.New(
		bunrouter.Use(a.errors),
		bunrouter.WithNotFoundHandler(a.notFound),
		bunrouter.WithMethodNotAllowedHandler(func(w http.ResponseWriter, req bunrouter.Request) error {
			methods := allowed[req.Route()]
			w.Header().Set("Allow", strings.Join(methods, ", "))
			a.writeError(w, req.Request, protocolError(http.StatusMethodNotAllowed,
				"method %s is not allowed on %s; allowed: %s", req.Method, req.URL.Path, strings.Join(methods, ", ")))
			return nil
		}),
	)
	authed := router.NewGroup("", bunrouter.WithMiddleware(a.authenticate))
	for _, m := range opts.Authenticated {
		authed = authed.WithMiddleware(adapt(m))
	}
	routes := a.routes()
	head := map[string]bool{}
	for _, r := range routes {
		if r.Method == http.MethodHead {
			head[r.Path] = true
		}
	}
	for _, r := range routes {
		path := bunrouterPath(r.Path)
		allowed[path] = append(allowed[path], r.Method)
		g := &router.Group
		switch {
		case r.Auth:
			g = authed
		}
		handle := r.handle
		if !r.Worker && !r.Query {
			handle = noQuery(handle)
		}
		if !r.Worker && !r.Body && r.Method != http.MethodGet && r.Method != http.MethodHead {
			handle = a.noBody(handle)
		}
		g.Handle(r.Method, path, handle)
		// Every GET answers HEAD too (RFC 9110 9.3.2), as a health probe may ask: the same
		// handler, whose body the server leaves out.
		if r.Method == http.MethodGet && !head[r.Path] {
			allowed[path] = append(allowed[path], http.MethodHead)
			g.Handle(http.MethodHead, path, handle)
		}
	}
	return a.outer(router)
}

// readsQuery are the operations whose handlers read their query string, and refuse a
// parameter they do not know themselves; every other operation takes none (noQuery).
var readsQuery = map[string]bool{
	"GET /jobs": true, "GET /jobs/{id}": true, "GET /batches": true, "GET /account/ledger": true,
	"GET /queue": true, "POST /uploads": true, "GET /uploads": true,
	"GET /webhook-endpoints/{id}/deliveries": true, "GET /presets/thumbnail-sprite/index.vtt": true,
	// Signed URLs: their parameters are the signature's.
	"GET /dl/{job_id}": true, "HEAD /dl/{job_id}": true,
	"GET /v/{job_id}/{token}/{file}": true, "HEAD /v/{job_id}/{token}/{file}": true,
}

// readsBody are the operations whose handlers read a request body.
var readsBody = map[string]bool{
	"POST /jobs": true, "POST /jobs/{id}/priority": true, "POST /destinations": true,
	"POST /batches": true, "POST /ffmpeg/validate": true, "POST /uploads": true, "POST /presets": true,
	"PUT /presets/{name}": true, "POST /webhook-endpoints": true, "PATCH /webhook-endpoints/{id}": true,
	"POST /session": true, "POST /internal/admin/workers": true,
}

// noBody refuses a body on an operation that takes none: the same JSON rules as any body
// (readJSON's Content-Type, the cap), and nothing in it but {}. A body it would ignore
// ({"event": "job.failed"} on a webhook test, which sends its own) is the client's mistake,
// said rather than acted on.
func (a *api) noBody(next bunrouter.HandlerFunc) bunrouter.HandlerFunc {
	return func(w http.ResponseWriter, req bunrouter.Request) error {
		if req.ContentLength != 0 {
			body, err := a.readJSON(w, req)
			if err != nil {
				return err
			}
			if len(bytes.TrimSpace(body)) > 0 {
				var none struct{}
				if err := jobtype.DecodeStrict(body, &none); err != nil {
					return err
				}
			}
		}
		return next(w, req)
	}
}

// noQuery refuses a request with a query string to an operation that takes none: a parameter
// it would ignore (?force=true on a cancel, ?limit=2 on a listing that has no pages) is the
// client's mistake, said rather than guessed at.
func noQuery(next bunrouter.HandlerFunc) bunrouter.HandlerFunc {
	return func(w http.ResponseWriter, req bunrouter.Request) error {
		if q := req.URL.Query(); len(q) > 0 {
			return problem.Reject(problem.CodeValidation, "query parameter %q is not known; %s %s takes none",
				slices.Sorted(maps.Keys(q))[0], req.Method, openAPIPath(req.Route()))
		}
		return next(w, req)
	}
}

// openAPIPath turns /jobs/:id back into /jobs/{id}.
func openAPIPath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if strings.HasPrefix(s, ":") {
			parts[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(parts, "/")
}

// bunrouterPath turns /jobs/{id} into /jobs/:id.
func bunrouterPath(p string) string {
	return strings.NewReplacer("{", ":", "}", "").Replace(p)
}

// outer recovers panics and refuses the paths bunrouter would redirect (a trailing slash, an
// unclean path): a redirect turns a POST into a GET in most clients.
func (a *api) outer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				a.log.ErrorContext(r.Context(), "httpapi: panic", "method", r.Method, "path", r.URL.Path, "panic", v)
				a.writeError(w, r, errPanic)
			}
		}()
		w.Header().Set("X-Content-Type-Options", "nosniff")
		// Every request has an ID, the client's (X-Request-Id) when it is a sane one: it is in
		// the answer's header and in each log line the request causes, its job's included.
		id := r.Header.Get(HeaderRequestID)
		if !logctx.SaneRequestID(id) {
			id = logctx.NewRequestID()
		}
		w.Header().Set(HeaderRequestID, id)
		start, sw, rt := time.Now(), &statusWriter{ResponseWriter: w}, &matched{}
		w, r = sw, r.WithContext(context.WithValue(logctx.WithRequest(r.Context(), id), matchedKey{}, rt))
		defer func() {
			route := rt.route
			if route == "" {
				route = "unmatched"
			}
			took := time.Since(start)
			if a.opts.OnRequest != nil {
				a.opts.OnRequest(r.Method, route, sw.code(), took)
			}
			a.log.DebugContext(r.Context(), "http request", "method", r.Method, "route", route, "status", sw.code(),
				"duration_ms", took.Milliseconds())
		}()
		p := r.URL.EscapedPath()
		if p != "/" && (strings.HasSuffix(p, "/") || bunrouter.CleanPath(p) != p) {
			a.notFound(w, bunrouter.NewRequest(r))
			return
		}
		// No name here holds a control character. A segment of NULs alone panicked the
		// router's lookup (bunrouter v1.0.23, before any authentication), and a NUL in an id
		// reached the database.
		if i := strings.IndexFunc(r.URL.Path, func(c rune) bool { return c < 0x20 || c == 0x7f }); i >= 0 {
			a.writeError(w, r, problem.Reject(problem.CodeNotFound, "the path holds the control character %q: nothing here is named so", r.URL.Path[i]))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// HeaderRequestID carries a request's ID, both ways.
const HeaderRequestID = logctx.HeaderRequestID

// matched carries the route a request matched out of the router, for OnRequest.
type matched struct{ route string }

type matchedKey struct{}

// statusWriter remembers the status of the answer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// errors is the router middleware that turns a handler's error into the error envelope.
func (a *api) errors(next bunrouter.HandlerFunc) bunrouter.HandlerFunc {
	return func(w http.ResponseWriter, req bunrouter.Request) error {
		if m, ok := req.Context().Value(matchedKey{}).(*matched); ok {
			m.route = openAPIPath(req.Route())
		}
		if err := next(w, req); err != nil {
			a.writeError(w, req.Request, err)
		}
		return nil
	}
}

func (a *api) notFound(w http.ResponseWriter, req bunrouter.Request) error {
	a.writeError(w, req.Request, notFoundRoute(req.Method, req.URL.Path))
	return nil
}

// adapt runs an http middleware inside the router, keeping the route's parameters and taking
// up the context the middleware passes on.
func adapt(m Middleware) bunrouter.MiddlewareFunc {
	return func(next bunrouter.HandlerFunc) bunrouter.HandlerFunc {
		return func(w http.ResponseWriter, req bunrouter.Request) error {
			var err error
			m(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				err = next(w, req.WithContext(r.Context()))
			})).ServeHTTP(w, req.Request)
			return err
		}
	}
}
