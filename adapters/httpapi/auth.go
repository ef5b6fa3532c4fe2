package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/uptrace/bunrouter"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/problem"
)

type accountKey struct{}

// AccountFrom returns the authenticated account of a request's context.
func AccountFrom(ctx context.Context) (account.Account, bool) {
	a, ok := ctx.Value(accountKey{}).(account.Account)
	return a, ok
}

// authenticate requires Authorization: Bearer <key>, or else the console's session cookie (with
// the CSRF header on a state-changing request), and puts the account in the context. A bearer
// key wins over a cookie sent beside it. A bearer key that fails spends the client address's
// budget of failures (AuthFailures); a request with no credentials at all, or with a cookie
// only, spends nothing: a browser keeps sending a session cookie that has ended.
func (a *api) authenticate(next bunrouter.HandlerFunc) bunrouter.HandlerFunc {
	return func(w http.ResponseWriter, req bunrouter.Request) error {
		h := req.Header.Get("Authorization")
		scheme, secret, ok := strings.Cut(h, " ")
		if h == "" {
			if c, err := req.Cookie(SessionCookie); err == nil && c.Value != "" {
				ctx, err := a.authenticateSession(req, c.Value)
				if err != nil {
					return err
				}
				return next(w, req.WithContext(ctx))
			}
			return problem.Reject(problem.CodeUnauthorized, "missing Authorization header; send Authorization: Bearer <API_KEY>")
		}
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(secret) == "" {
			return a.failures.failed(req.Request, problem.Reject(problem.CodeUnauthorized, "the Authorization header must be Bearer <API_KEY>"))
		}
		acct, err := a.uc.Auth.Authenticate(req.Context(), strings.TrimSpace(secret))
		if err != nil {
			return a.failures.failed(req.Request, err)
		}
		return next(w, req.WithContext(context.WithValue(req.Context(), accountKey{}, acct)))
	}
}

// caller is the account authenticate put in the context; routes without auth never call it.
func caller(req bunrouter.Request) account.Account {
	acct, _ := AccountFrom(req.Context())
	return acct
}
