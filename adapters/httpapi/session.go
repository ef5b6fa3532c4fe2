package httpapi

import (
	"context"
	"crypto/subtle"
	"mime"
	"net/http"
	"net/url"
	"time"

	"github.com/uptrace/bunrouter"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
)

// SessionCookie is the name of the console's session cookie. It is HttpOnly (no script reads
// it), SameSite=Strict (no other site's page sends it) and Secure when the API is reached over
// HTTPS.
const SessionCookie = "mj_session"

// CSRFHeader carries the session's CSRF token on every state-changing request made with the
// session cookie. Requests with a bearer key do not need it: a browser never adds a bearer key
// to a forged request.
const CSRFHeader = "X-CSRF-Token"

type sessionKey struct{}

// sessionFrom returns the session token of a request authenticated by its cookie.
func sessionFrom(ctx context.Context) (string, bool) {
	t, ok := ctx.Value(sessionKey{}).(string)
	return t, ok
}

// safeMethod tells the methods that change nothing, which need no CSRF token.
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// authenticateSession authenticates a request by its session cookie, and a state-changing one
// also by its CSRF header.
func (a *api) authenticateSession(req bunrouter.Request, token string) (context.Context, error) {
	acct, _, err := a.uc.Auth.Session(req.Context(), token)
	if err != nil {
		return nil, err
	}
	if !safeMethod(req.Method) {
		got := req.Header.Get(CSRFHeader)
		if got == "" {
			return nil, problem.Reject(problem.CodeForbidden,
				"missing %s header: a %s made with the session cookie must send the csrfToken of the session", CSRFHeader, req.Method)
		}
		if subtle.ConstantTimeCompare([]byte(got), []byte(account.CSRFToken(token))) != 1 {
			return nil, problem.Reject(problem.CodeForbidden, "the %s header does not match the session's csrfToken", CSRFHeader)
		}
	}
	ctx := context.WithValue(req.Context(), accountKey{}, acct)
	return context.WithValue(ctx, sessionKey{}, token), nil
}

// sessionView is the answer of POST and GET /session.
type sessionView struct {
	AccountID string `json:"accountId"`
	KeyID     string `json:"keyId"`
	CSRFToken string `json:"csrfToken"`
	CreatedAt int64  `json:"createdAt"`
	ExpiresAt int64  `json:"expiresAt"`
}

// signIn opens a session with an API key: POST /session {"apiKey": "mj_..."}. It sets the
// cookie and answers the CSRF token. The body must be application/json, which a cross-site
// form cannot send, and a request with an Origin must come from this origin, so that no other
// site can sign a visitor in to an account of its choosing.
func (a *api) signIn(w http.ResponseWriter, req bunrouter.Request) error {
	if mt, _, err := mime.ParseMediaType(req.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return problem.Reject(problem.CodeValidation, "Content-Type %q is not accepted; POST /session takes application/json",
			req.Header.Get("Content-Type"))
	}
	if o := req.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != req.Host {
			return problem.Reject(problem.CodeForbidden, "Origin %q is not this service's origin", o)
		}
	}
	body, err := a.readJSON(w, req)
	if err != nil {
		return err
	}
	var in struct {
		APIKey *string `json:"apiKey"`
	}
	if err := jobtype.DecodeStrict(body, &in); err != nil {
		return err
	}
	if in.APIKey == nil || *in.APIKey == "" {
		return problem.Reject(problem.CodeValidation, "apiKey is required")
	}
	s, err := a.uc.Auth.SignIn(req.Context(), *in.APIKey)
	if err != nil {
		// A wrong key here is a failure like a wrong bearer key, from the same budget.
		return a.failures.failed(req.Request, err)
	}
	http.SetCookie(w, a.cookie(req.Request, s.Token, s.Session.ExpiresAt))
	return writeData(w, http.StatusCreated, sessionView{AccountID: s.Account.ID, KeyID: s.Session.KeyID, CSRFToken: s.CSRFToken,
		CreatedAt: s.Session.CreatedAt.UnixMilli(), ExpiresAt: s.Session.ExpiresAt.UnixMilli()})
}

func (a *api) cookie(r *http.Request, token string, expires time.Time) *http.Cookie {
	c := &http.Cookie{Name: SessionCookie, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: a.opts.SecureCookies || r.TLS != nil}
	if token == "" {
		c.MaxAge = -1
	} else {
		c.Expires = expires
	}
	return c
}

// getSession answers the session of the cookie, with its CSRF token: a page loaded after
// sign-in learns the token here, since it is kept nowhere but in the page's memory.
func (a *api) getSession(w http.ResponseWriter, req bunrouter.Request) error {
	token, ok := sessionFrom(req.Context())
	if !ok {
		return problem.Reject(problem.CodeUnauthorized, "no session: this request was made with a bearer key; sign in with POST /session")
	}
	_, s, err := a.uc.Auth.Session(req.Context(), token)
	if err != nil {
		return err
	}
	return writeData(w, http.StatusOK, sessionView{AccountID: s.AccountID, KeyID: s.KeyID, CSRFToken: account.CSRFToken(token),
		CreatedAt: s.CreatedAt.UnixMilli(), ExpiresAt: s.ExpiresAt.UnixMilli()})
}

// signOut ends the session of the cookie and clears the cookie.
func (a *api) signOut(w http.ResponseWriter, req bunrouter.Request) error {
	token, ok := sessionFrom(req.Context())
	if !ok {
		return problem.Reject(problem.CodeUnauthorized, "no session: this request was made with a bearer key")
	}
	if err := a.uc.Auth.SignOut(req.Context(), token); err != nil {
		return err
	}
	http.SetCookie(w, a.cookie(req.Request, "", time.Time{}))
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// keyView is an API key in listings: never its secret.
type keyView struct {
	ID         string `json:"id"`
	Prefix     string `json:"prefix"`
	CreatedAt  int64  `json:"createdAt"`
	LastUsedAt *int64 `json:"lastUsedAt"`
	RevokedAt  *int64 `json:"revokedAt"`
	// Secret is set once, in the answer of POST /api-keys.
	Secret string `json:"secret,omitempty"`
}

func millis(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	v := t.UnixMilli()
	return &v
}

func viewKey(k account.Key) keyView {
	return keyView{ID: k.ID, Prefix: k.Prefix, CreatedAt: k.CreatedAt.UnixMilli(), LastUsedAt: millis(k.LastUsedAt),
		RevokedAt: millis(k.RevokedAt)}
}

func (a *api) listKeys(w http.ResponseWriter, req bunrouter.Request) error {
	keys, err := a.uc.Auth.Keys(req.Context(), caller(req))
	if err != nil {
		return err
	}
	out := make([]keyView, len(keys))
	for i, k := range keys {
		out[i] = viewKey(k)
	}
	return writeData(w, http.StatusOK, out)
}

// createKey answers 201 with the new key and its secret, shown this once. It takes no body.
func (a *api) createKey(w http.ResponseWriter, req bunrouter.Request) error {
	secret, k, err := a.uc.Auth.CreateKey(req.Context(), caller(req))
	if err != nil {
		return err
	}
	v := viewKey(k)
	v.Secret = secret
	w.Header().Set("Location", "/api-keys/"+url.PathEscape(k.ID))
	return writeData(w, http.StatusCreated, v)
}

// revokeKey revokes a key of the caller: it and the sessions opened with it stop working.
func (a *api) revokeKey(w http.ResponseWriter, req bunrouter.Request) error {
	k, err := a.uc.Auth.RevokeKey(req.Context(), caller(req), req.Param("id"))
	if err != nil {
		return err
	}
	return writeData(w, http.StatusOK, viewKey(k))
}
