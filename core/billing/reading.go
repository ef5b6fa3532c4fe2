package billing

import "context"

// A request may read an account's balance early, together with the account itself
// (authentication reads both in one statement where its store can). WithBalance carries that
// reading in the request's context, so that a later step of the same request, the submit gate,
// uses it rather than read the balance again. It is the balance at that moment of the request,
// as the gate's own read would be: the gate is a check, not a reservation, and a job's charge is
// checked again when it is dispatched.
type balanceKey struct{}

type balanceReading struct {
	accountID string
	balance   int64
}

// WithBalance returns ctx carrying the balance of accountID as read now.
func WithBalance(ctx context.Context, accountID string, balance int64) context.Context {
	return context.WithValue(ctx, balanceKey{}, balanceReading{accountID, balance})
}

// BalanceFrom returns the balance of accountID that ctx carries, if it carries that account's.
func BalanceFrom(ctx context.Context, accountID string) (int64, bool) {
	r, ok := ctx.Value(balanceKey{}).(balanceReading)
	if !ok || r.accountID != accountID {
		return 0, false
	}
	return r.balance, true
}
