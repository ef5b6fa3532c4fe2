package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/problem"
)

type sessionBody struct {
	AccountID string `json:"accountId"`
	KeyID     string `json:"keyId"`
	CSRFToken string `json:"csrfToken"`
	ExpiresAt int64  `json:"expiresAt"`
}

type keyBody struct {
	ID         string `json:"id"`
	Prefix     string `json:"prefix"`
	CreatedAt  int64  `json:"createdAt"`
	LastUsedAt *int64 `json:"lastUsedAt"`
	RevokedAt  *int64 `json:"revokedAt"`
	Secret     string `json:"secret"`
}

// signIn opens a session with key and returns its cookie header and CSRF token.
func (b *testBundle) signIn(t *testing.T, key string) (cookie, csrf string) {
	t.Helper()
	res := b.do(t, request{method: "POST", path: "/session", body: mustJSON(t, map[string]string{"apiKey": key})})
	if res.status != http.StatusCreated {
		t.Fatalf("POST /session: %d %s", res.status, res.body)
	}
	var s sessionBody
	res.data(t, &s)
	cookies := (&http.Response{Header: res.header}).Cookies()
	if len(cookies) != 1 || cookies[0].Name != "mj_session" {
		t.Fatalf("POST /session set cookies %v", cookies)
	}
	return "mj_session=" + cookies[0].Value, s.CSRFToken
}

func TestSessionCookie(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.do(t, request{method: "POST", path: "/session", body: mustJSON(t, map[string]string{"apiKey": b.key})})
	if res.status != http.StatusCreated {
		t.Fatalf("POST /session: %d %s", res.status, res.body)
	}
	var s sessionBody
	res.data(t, &s)
	if s.AccountID != b.acct.ID || s.CSRFToken == "" {
		t.Fatalf("session %+v", s)
	}
	raw := res.header.Get("Set-Cookie")
	for _, attr := range []string{"mj_session=mjs_", "Path=/", "HttpOnly", "SameSite=Strict"} {
		if !strings.Contains(raw, attr) {
			t.Errorf("Set-Cookie %q lacks %s", raw, attr)
		}
	}
	if strings.Contains(raw, "Secure") {
		t.Errorf("Set-Cookie %q is Secure on plain HTTP", raw)
	}
	if strings.Contains(string(res.body), strings.TrimPrefix(strings.Split(raw, ";")[0], "mj_session=")) {
		t.Error("the answer's body holds the session token")
	}
}

// Behind a proxy that terminates TLS (an https base URL), the cookie is Secure.
func TestSessionCookieSecureBehindTLS(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{secureCookies: true})
	res := b.do(t, request{method: "POST", path: "/session", body: mustJSON(t, map[string]string{"apiKey": b.key})})
	if raw := res.header.Get("Set-Cookie"); res.status != http.StatusCreated || !strings.Contains(raw, "; Secure") {
		t.Fatalf("POST /session: %d, Set-Cookie %q; want Secure", res.status, raw)
	}
}

func TestSessionSignInRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		name   string
		body   string
		header map[string]string
		status int
		code   problem.Code
		msg    string
	}{
		{"wrong key", `{"apiKey":"mj_wrong"}`, nil, 401, problem.CodeUnauthorized, "API key"},
		{"no key", `{}`, nil, 400, problem.CodeValidation, "apiKey"},
		{"unknown field", `{"apiKey":"mj_x","remember":true}`, nil, 400, problem.CodeValidation, "remember"},
		{"form body", `apiKey=mj_x`, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 400, problem.CodeValidation, "application/json"},
		{"text body", `{"apiKey":"mj_x"}`, map[string]string{"Content-Type": "text/plain"}, 400, problem.CodeValidation, "application/json"},
		{"other origin", `{"apiKey":"mj_x"}`, map[string]string{"Origin": "https://evil.example"}, 403, problem.CodeForbidden, "evil.example"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := b.do(t, request{method: "POST", path: "/session", body: []byte(tt.body), header: tt.header})
			code, msg := res.errorBody(t)
			if res.status != tt.status || code != tt.code || !strings.Contains(msg, tt.msg) {
				t.Fatalf("got %d %s %q; want %d %s naming %q", res.status, code, msg, tt.status, tt.code, tt.msg)
			}
			if res.header.Get("Set-Cookie") != "" {
				t.Errorf("a refused sign-in set a cookie: %s", res.header.Get("Set-Cookie"))
			}
		})
	}
	// The same origin is fine.
	res := b.do(t, request{method: "POST", path: "/session", body: mustJSON(t, map[string]string{"apiKey": b.key}),
		header: map[string]string{"Origin": b.url}})
	if res.status != http.StatusCreated {
		t.Fatalf("same-origin sign-in: %d %s", res.status, res.body)
	}
}

func TestSessionAuthenticatesAndNeedsCSRF(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cookie, csrf := b.signIn(t, b.key)

	// A read needs only the cookie.
	res := b.do(t, request{method: "GET", path: "/account", header: map[string]string{"Cookie": cookie}})
	if res.status != http.StatusOK {
		t.Fatalf("GET /account with the cookie: %d %s", res.status, res.body)
	}
	res = b.do(t, request{method: "GET", path: "/session", header: map[string]string{"Cookie": cookie}})
	var s sessionBody
	res.data(t, &s)
	if s.CSRFToken != csrf || s.AccountID != b.acct.ID {
		t.Fatalf("GET /session: %+v, want csrf %s", s, csrf)
	}

	// A write needs the CSRF header too, and it must be the session's.
	submit := mustJSON(t, map[string]any{"type": "ffmpeg", "params": map[string]string{"command": "ffmpeg -f lavfi -i testsrc=d=1 out.mp4"}})
	for _, tt := range []struct {
		name, csrf string
		msg        string
	}{
		{"no header", "", "missing X-CSRF-Token"},
		{"wrong token", strings.Repeat("0", 64), "does not match"},
	} {
		h := map[string]string{"Cookie": cookie}
		if tt.csrf != "" {
			h["X-CSRF-Token"] = tt.csrf
		}
		res := b.do(t, request{method: "POST", path: "/jobs", body: submit, header: h})
		code, msg := res.errorBody(t)
		if res.status != http.StatusForbidden || code != problem.CodeForbidden || !strings.Contains(msg, tt.msg) {
			t.Errorf("%s: %d %s %q; want 403 FORBIDDEN naming %q", tt.name, res.status, code, msg, tt.msg)
		}
	}
	if n := b.jobCount(t); n != 0 {
		t.Fatalf("a refused request stored %d jobs", n)
	}
	res = b.do(t, request{method: "POST", path: "/jobs", body: submit, header: map[string]string{"Cookie": cookie, "X-CSRF-Token": csrf}})
	if res.status != http.StatusCreated {
		t.Fatalf("POST /jobs with cookie and CSRF token: %d %s", res.status, res.body)
	}

	// A bearer key needs no CSRF header, and wins over a cookie sent beside it.
	res = b.do(t, request{method: "POST", path: "/api-keys", key: b.otherKey, header: map[string]string{"Cookie": cookie}})
	var k keyBody
	res.data(t, &k)
	keys, err := b.h.Accounts.ListKeys(t.Context(), "acct_b")
	if err != nil || len(keys) != 2 {
		t.Fatalf("the bearer key's account has %d keys (%v); want the new one among 2", len(keys), err)
	}

	// GET /session is about the cookie: a bearer key alone has none.
	res = b.do(t, request{method: "GET", path: "/session", key: b.key})
	if res.status != http.StatusUnauthorized {
		t.Fatalf("GET /session with a bearer key: %d %s", res.status, res.body)
	}

	// Sign out: the cookie is cleared and stops working.
	res = b.do(t, request{method: "DELETE", path: "/session", header: map[string]string{"Cookie": cookie}})
	if res.status != http.StatusForbidden {
		t.Fatalf("DELETE /session without CSRF: %d %s", res.status, res.body)
	}
	res = b.do(t, request{method: "DELETE", path: "/session", header: map[string]string{"Cookie": cookie, "X-CSRF-Token": csrf}})
	if res.status != http.StatusNoContent || !strings.Contains(res.header.Get("Set-Cookie"), "Max-Age=0") {
		t.Fatalf("DELETE /session: %d, Set-Cookie %q", res.status, res.header.Get("Set-Cookie"))
	}
	res = b.do(t, request{method: "GET", path: "/account", header: map[string]string{"Cookie": cookie}})
	if res.status != http.StatusUnauthorized {
		t.Fatalf("GET /account after sign-out: %d %s", res.status, res.body)
	}
}

func TestAPIKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.clock.Advance(time.Second) // newer than the account's first key
	res := b.do(t, request{method: "POST", path: "/api-keys", key: b.key})
	if res.status != http.StatusCreated {
		t.Fatalf("POST /api-keys: %d %s", res.status, res.body)
	}
	var created keyBody
	res.data(t, &created)
	if !strings.HasPrefix(created.Secret, account.SecretPrefix) || !strings.HasPrefix(created.Secret, created.Prefix) ||
		res.header.Get("Location") != "/api-keys/"+created.ID {
		t.Fatalf("created %+v, Location %q", created, res.header.Get("Location"))
	}
	if res := b.do(t, request{method: "POST", path: "/api-keys", key: b.key, body: []byte(`{"name":"x"}`)}); res.status != 400 {
		t.Fatalf("POST /api-keys with an unknown field: %d %s", res.status, res.body)
	}

	// The new key works, and its use shows in the listing.
	if res := b.do(t, request{method: "GET", path: "/account", key: created.Secret}); res.status != 200 {
		t.Fatalf("the new key: %d %s", res.status, res.body)
	}
	res = b.do(t, request{method: "GET", path: "/api-keys", key: b.key})
	var keys []keyBody
	res.data(t, &keys)
	if len(keys) != 2 || keys[0].ID != created.ID || keys[0].Secret != "" || keys[0].LastUsedAt == nil ||
		*keys[0].LastUsedAt != b.clock.Now().UnixMilli() {
		t.Fatalf("GET /api-keys: %+v; want the new key first, used now, without its secret", keys)
	}

	// Another account cannot see or revoke it.
	res = b.do(t, request{method: "DELETE", path: "/api-keys/" + created.ID, key: b.otherKey})
	if code, _ := res.errorBody(t); res.status != 404 || code != problem.CodeNotFound {
		t.Fatalf("revoking another account's key: %d %s", res.status, res.body)
	}

	// A session opened with the key ends when the key is revoked.
	cookie, _ := b.signIn(t, created.Secret)
	res = b.do(t, request{method: "DELETE", path: "/api-keys/" + created.ID, key: b.key})
	var revoked keyBody
	res.data(t, &revoked)
	if res.status != 200 || revoked.RevokedAt == nil || *revoked.RevokedAt != b.clock.Now().UnixMilli() {
		t.Fatalf("DELETE /api-keys: %d %+v", res.status, revoked)
	}
	for _, r := range []request{
		{method: "GET", path: "/account", key: created.Secret},
		{method: "GET", path: "/account", header: map[string]string{"Cookie": cookie}},
		{method: "POST", path: "/session", body: mustJSON(t, map[string]string{"apiKey": created.Secret})},
	} {
		if res := b.do(t, r); res.status != http.StatusUnauthorized {
			t.Errorf("%s %s after revocation: %d %s", r.method, r.path, res.status, res.body)
		}
	}
	b.clock.Advance(time.Minute)
	if res := b.do(t, request{method: "DELETE", path: "/api-keys/" + created.ID, key: b.key}); res.status != 200 {
		t.Fatalf("revoking again: %d %s", res.status, res.body)
	}
}
