// Package problem is the error vocabulary of the service: the codes of the API and of failed
// jobs, the rejection that carries one with a message naming the offending thing, and the
// sentinel errors callers branch on. Which HTTP status a code answers with is the HTTP adapter's
// business, not the core's.
package problem

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mediajobs/mediajobs/validator"
)

// Code is an error code of the API and of failed jobs.
type Code string

// The spec's codes, then ours.
const (
	CodeValidation          Code = "VALIDATION_ERROR"
	CodePlanLimit           Code = "PLAN_LIMIT"
	CodeRateLimited         Code = "RATE_LIMITED"
	CodeRunnerError         Code = "RUNNER_ERROR"
	CodeRunnerTimeout       Code = "RUNNER_TIMEOUT"
	CodeNotFound            Code = "NOT_FOUND"
	CodeUnauthorized        Code = "UNAUTHORIZED"
	CodeForbidden           Code = "FORBIDDEN"
	CodeInsufficientCredits Code = "INSUFFICIENT_CREDITS"
	CodeConflict            Code = "CONFLICT"
	CodePayloadTooLarge     Code = "PAYLOAD_TOO_LARGE"
	CodeRunnerLost          Code = "RUNNER_LOST"
	CodeInputFetchFailed    Code = "INPUT_FETCH_FAILED"
	CodeLimitExceeded       Code = "LIMIT_EXCEEDED"
	CodeCancelled           Code = "CANCELLED"
	CodeUnavailable         Code = "SERVICE_UNAVAILABLE"
	CodeInternal            Code = "INTERNAL_ERROR"
	// CodeIdempotencyKeyReused: an Idempotency-Key repeated with another body or operation.
	CodeIdempotencyKeyReused Code = "IDEMPOTENCY_KEY_REUSED"
	// CodeRunnerStalled: the program made no progress for the plan's stall time and was
	// stopped; free and retryable, as a hang is not the user's doing.
	CodeRunnerStalled Code = "RUNNER_STALLED"
)

// retryable is, per code, whether a job failed with it is retryable by default. A code missing
// here is unknown.
var retryable = map[Code]bool{
	CodeValidation:           false,
	CodePlanLimit:            false,
	CodeRateLimited:          true,
	CodeRunnerError:          false,
	CodeRunnerTimeout:        false,
	CodeNotFound:             false,
	CodeUnauthorized:         false,
	CodeForbidden:            false,
	CodeInsufficientCredits:  false,
	CodeConflict:             false,
	CodePayloadTooLarge:      false,
	CodeRunnerLost:           true,
	CodeInputFetchFailed:     true,
	CodeLimitExceeded:        false,
	CodeCancelled:            false,
	CodeUnavailable:          true,
	CodeInternal:             true,
	CodeIdempotencyKeyReused: false,
	CodeRunnerStalled:        true,
}

// Codes lists every known code.
func Codes() []Code {
	out := make([]Code, 0, len(retryable))
	for c := range retryable {
		out = append(out, c)
	}
	return out
}

// Known tells a code of the table from any other string.
func (c Code) Known() bool {
	_, ok := retryable[c]
	return ok
}

// Retryable is the default `retryable` of a job failed with c.
func (c Code) Retryable() bool { return retryable[c] }

// Problem is an error carrying an API code and a message that names the offending thing. Use
// cases return it for rejections; the entry points map it to { error: { code, message } }.
type Problem struct {
	Code    Code
	Message string
	// Field, when set, names the request field the message is about but does not name itself
	// (the validator's "flag -x is not allowed" is about params.command). A batch puts it, with
	// the job's index, before the message.
	Field string
	// RetryAfter, when positive, tells the client when to try again (RATE_LIMITED,
	// SERVICE_UNAVAILABLE): REST sends it as Retry-After, MCP as retryAfterSeconds.
	RetryAfter time.Duration
	// Cause, when set, is the error behind the rejection for Go callers (the validator's
	// *validator.Error, with its layer); it is never shown to the client.
	Cause error
}

func (p *Problem) Error() string { return p.Message }

// Unwrap gives errors.As the cause.
func (p *Problem) Unwrap() error { return p.Cause }

// Reject builds a Problem; its message is Messagef's.
func Reject(code Code, format string, args ...any) error {
	return &Problem{Code: code, Message: Messagef(format, args...)}
}

// Shorten is s, or its first validator.MaxQuoted bytes (whole characters) and "…" when it is
// longer: a message quotes a value as the validator's refusals do.
func Shorten(s string) string { return validator.Shortened(s) }

// Messagef is fmt.Sprintf, but a string that %q quotes is quoted Shorten'd: what a message
// quotes is what the client sent (a key, a header, a value), which may be 64 KiB long.
func Messagef(format string, args ...any) string {
	var long []any // a copy of args: they are the caller's
	for i, a := range args {
		if s, ok := a.(string); ok && len(s) > validator.MaxQuoted {
			if long == nil {
				long = slices.Clone(args)
			}
			long[i] = longString(s)
		}
	}
	if long == nil {
		return fmt.Sprintf(format, args...)
	}
	return fmt.Sprintf(format, long...)
}

// longString is a string over validator.MaxQuoted bytes given to Messagef: %q quotes it shortened,
// any other verb prints it whole.
type longString string

func (l longString) Format(f fmt.State, verb rune) {
	s := string(l)
	if verb == 'q' {
		s = Shorten(s)
	}
	fmt.Fprintf(f, fmt.FormatString(f, verb), s)
}

// Sentinel errors that callers branch on. Each maps to a code in CodeOf.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
)

// CodeOf maps an error to its code: a Problem's own, the sentinels', INTERNAL_ERROR otherwise.
func CodeOf(err error) Code {
	var p *Problem
	switch {
	case errors.As(err, &p):
		return p.Code
	case errors.Is(err, ErrNotFound):
		return CodeNotFound
	case errors.Is(err, ErrConflict):
		return CodeConflict
	default:
		return CodeInternal
	}
}

// As returns the Problem in err's chain, if there is one.
func As(err error) (*Problem, bool) {
	var p *Problem
	ok := errors.As(err, &p)
	return p, ok
}
