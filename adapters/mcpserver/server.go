package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mediajobs/mediajobs/adapters/httpapi"
	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/ratelimit"
	"github.com/mediajobs/mediajobs/core/service"
)

// UseCases are the application's use cases the tools drive: the same ones REST drives.
type UseCases struct {
	Auth    *service.Auth
	Submit  *service.Submit
	Jobs    *service.Jobs
	Uploads *service.Uploads
	Credits *service.Credits
	// Presets serves list_presets, get_preset and save_preset; nil: those tools are not offered.
	Presets *service.Presets
	// Destinations serves list_destinations and submit_job's destination; nil: they answer
	// that the server delivers to no destination.
	Destinations *service.Destinations
	Types        *jobtype.Registry
	// RateLimit is the request budget: the same gate REST calls, so one budget per account
	// covers both, with one behaviour when its backend fails.
	RateLimit *ratelimit.Gate
}

// Options configure the MCP access point. Fetch is required.
type Options struct {
	// Fetch is the SSRF-guarded client upload_media fetches URLs with (safehttp.NewClient).
	Fetch *http.Client
	// MaxInline caps upload_media's base64 content, decoded; 0 means DefaultMaxInline. URL
	// uploads are capped by the service's MaxUpload, as REST uploads are.
	MaxInline int64
	// ProbeWait is how long probe_media waits for its extract.metadata job before answering with
	// the job to poll; 0 means DefaultProbeWait.
	ProbeWait time.Duration
	// AllowedHosts are Host header values accepted on loopback connections besides loopback
	// names: the public base URL's host when a proxy on the same machine forwards to us. Any
	// other Host on a loopback connection is refused (DNS-rebinding protection).
	AllowedHosts []string
	// AllowPrivateNetworks are the address ranges the operator opened to the input fetcher:
	// validate_command lets input URLs in them through, as submit_job does.
	AllowPrivateNetworks []netip.Prefix
	// AuthFailed, when set, takes each failed authentication before it is answered: the API's
	// per-address limit (httpapi.AuthFailureGate.Failed), so that /mcp shares its budget.
	AuthFailed func(*http.Request, error) error
	// Logger receives internal errors; nil means slog.Default().
	Logger *slog.Logger
}

// Defaults of Options.
const (
	DefaultMaxInline = 16 << 20
	DefaultProbeWait = 20 * time.Second
)

// Handler is the MCP access point: mount it at /mcp.
type Handler struct {
	uc     UseCases
	opts   Options
	log    *slog.Logger
	server *mcp.Server
	tools  []*mcp.Tool
	http   http.Handler
}

// New returns the MCP access point over the use cases. It panics when a use case or a
// required option is missing: that is a wiring mistake, not a runtime condition.
func New(uc UseCases, opts Options) *Handler {
	if uc.Auth == nil || uc.Submit == nil || uc.Jobs == nil || uc.Uploads == nil || uc.Credits == nil || uc.Types == nil ||
		uc.RateLimit == nil || opts.Fetch == nil {
		panic("mcpserver: New needs every use case and the Fetch option")
	}
	if opts.MaxInline <= 0 {
		opts.MaxInline = DefaultMaxInline
	}
	if opts.ProbeWait <= 0 {
		opts.ProbeWait = DefaultProbeWait
	}
	h := &Handler{uc: uc, opts: opts, log: opts.Logger}
	if h.log == nil {
		h.log = slog.Default()
	}
	h.server = mcp.NewServer(&mcp.Implementation{Name: "mediajobs", Title: "mediajobs media job service", Version: "1"},
		&mcp.ServerOptions{Instructions: instructions, Logger: quiet(h.log)})
	h.addTools()
	h.server.AddReceivingMiddleware(argumentErrors)
	// Stateless: every request stands alone, so any replica answers it and both session-based
	// (initialize handshake) and sessionless (server/discover) clients work. No tool needs to
	// call back into the client.
	maxBody := int64(base64.StdEncoding.EncodedLen(int(opts.MaxInline))) + 64<<10
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return h.server },
		&mcp.StreamableHTTPOptions{
			Stateless: true,
			// The SDK's own DNS-rebinding check refuses every non-loopback Host on a loopback
			// connection; hostGuard does the same with the configured public hosts allowed.
			DisableLocalhostProtection: true,
			Logger:                     quiet(h.log),
			// A base64 upload of MaxInline bytes, with room for the JSON-RPC framing.
			MaxRequestBodyBytes: maxBody,
		})
	verified := auth.RequireBearerToken(verifyAccount, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	h.http = h.hostGuard(http.NewCrossOriginProtection().Handler(h.authenticate(verified(jsonRPCErrors(h.budget(streamable), maxBody)))))
	return h
}

// ServeHTTP serves /mcp.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.http.ServeHTTP(w, r) }

// Tools lists the tools the server offers, with their input and output schemas: the
// contracts/mcp files are checked against them.
func Tools() []*mcp.Tool {
	h := &Handler{server: mcp.NewServer(&mcp.Implementation{Name: "mediajobs"}, nil)}
	h.addTools()
	return h.tools
}

type accountKey struct{}

// authenticate requires Authorization: Bearer <API key>, as REST does, and answers 401 with
// WWW-Authenticate and the error envelope before the MCP layer sees the request.
func (h *Handler) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		header := r.Header.Get("Authorization")
		scheme, secret, ok := strings.Cut(header, " ")
		secret = strings.TrimSpace(secret)
		var err error
		switch {
		case header == "":
			err = problem.Reject(problem.CodeUnauthorized, "missing Authorization header; send Authorization: Bearer <API_KEY>")
		case !ok || !strings.EqualFold(scheme, "Bearer") || secret == "":
			err = problem.Reject(problem.CodeUnauthorized, "the Authorization header must be Bearer <API_KEY>")
		}
		var a account.Account
		if err == nil {
			a, err = h.uc.Auth.Authenticate(r.Context(), secret)
		}
		if err != nil {
			if h.opts.AuthFailed != nil {
				err = h.opts.AuthFailed(r, err)
			}
			httpapi.WriteError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), accountKey{}, a)))
	})
}

// verifyAccount hands the account authenticate found to the SDK, which passes it to every tool
// call as the request's TokenInfo and binds sessions to it.
func verifyAccount(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
	a, ok := ctx.Value(accountKey{}).(account.Account)
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{UserID: a.ID, Extra: map[string]any{extraAccount: a}}, nil
}

const extraAccount = "account"

// hostGuard is DNS-rebinding protection: a request that reached us on a loopback address must
// name a loopback host (or a configured one) in Host, since a browser lured to a rebound name
// sends that name.
func (h *Handler) hostGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		if ok && local != nil && isLoopback(local.String()) && !isLoopback(r.Host) && !slices.Contains(h.opts.AllowedHosts, r.Host) {
			httpapi.WriteError(w, r, problem.Reject(problem.CodeForbidden, "Host %q is not accepted on this address", r.Host))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func isLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// tool is a tool's body: it runs for the authenticated account and returns the structured
// result and a one-line summary for the model.
type tool[In, Out any] func(ctx context.Context, a account.Account, in In) (Out, string, error)

// add registers a tool whose result is Out's JSON (also sent as text, for clients that read only
// text) after a summary line. The call has spent one request of the account's rate budget
// before it reaches the SDK (budget). A rejection is a result with isError, the code and
// message as text and as ToolError.
func add[In, Out any](h *Handler, t *mcp.Tool, body tool[In, Out]) {
	t.OutputSchema = schemaFor[Out]()
	t.InputSchema = schemaFor[In]()
	h.tools = append(h.tools, t)
	mcp.AddTool(h.server, t, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
		a, ok := callerOf(req)
		if !ok {
			return h.toolError(problem.Reject(problem.CodeUnauthorized, "a valid API key is required: Authorization: Bearer <API_KEY>")), nil, nil
		}
		out, summary, err := body(ctx, a, in)
		if err != nil {
			return h.toolError(err), nil, nil
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: summary}, &mcp.TextContent{Text: string(b)}}}, out, nil
	})
}

func callerOf(req *mcp.CallToolRequest) (account.Account, bool) {
	if req.Extra == nil || req.Extra.TokenInfo == nil {
		return account.Account{}, false
	}
	a, ok := req.Extra.TokenInfo.Extra[extraAccount].(account.Account)
	return a, ok
}

// toolError is the result of a rejected call: the REST error's code and message, as text and as
// structured content. Errors that are not rejections are logged and shown generically, as REST
// does.
func (h *Handler) toolError(err error) *mcp.CallToolResult {
	te := ToolError{Code: problem.CodeOf(err), Message: "an internal error occurred; it has been logged"}
	var p *problem.Problem
	if errors.As(err, &p) {
		te.Message = p.Message
	} else {
		h.log.Error("mcpserver: internal error", "error", err)
	}
	if p != nil && p.RetryAfter > 0 {
		te.RetryAfterSeconds = int(math.Ceil(p.RetryAfter.Seconds()))
	}
	res := &mcp.CallToolResult{IsError: true, StructuredContent: te,
		Content: []mcp.Content{&mcp.TextContent{Text: string(te.Code) + ": " + te.Message}}}
	return res
}

// quiet passes on the SDK's warnings and errors only: it logs every session at INFO, and
// stateless serving makes a session of every request.
func quiet(l *slog.Logger) *slog.Logger { return slog.New(minLevel{l.Handler()}) }

type minLevel struct{ slog.Handler }

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && m.Handler.Enabled(ctx, l)
}

func (m minLevel) WithAttrs(as []slog.Attr) slog.Handler { return minLevel{m.Handler.WithAttrs(as)} }
func (m minLevel) WithGroup(n string) slog.Handler       { return minLevel{m.Handler.WithGroup(n)} }
