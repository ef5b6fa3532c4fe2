package job

import (
	"errors"
	"fmt"
	"net/http"
	"unicode/utf8"
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
	CodeCancelled           Code = "CANCELLED"
	CodeInternal            Code = "INTERNAL_ERROR"
)

// codeInfo is one row of the code table: the HTTP status a request rejected with the code gets
// (0 for codes that only appear on failed jobs), and whether a job failed with it is retryable by
// default.
type codeInfo struct {
	status    int
	retryable bool
}

var codes = map[Code]codeInfo{
	CodeValidation:          {http.StatusBadRequest, false},
	CodePlanLimit:           {http.StatusForbidden, false},
	CodeRateLimited:         {http.StatusTooManyRequests, true},
	CodeRunnerError:         {0, false},
	CodeRunnerTimeout:       {0, false},
	CodeNotFound:            {http.StatusNotFound, false},
	CodeUnauthorized:        {http.StatusUnauthorized, false},
	CodeForbidden:           {http.StatusForbidden, false},
	CodeInsufficientCredits: {http.StatusPaymentRequired, false},
	CodeConflict:            {http.StatusConflict, false},
	CodePayloadTooLarge:     {http.StatusRequestEntityTooLarge, false},
	CodeRunnerLost:          {0, true},
	CodeInputFetchFailed:    {0, true},
	CodeCancelled:           {0, false},
	CodeInternal:            {http.StatusInternalServerError, true},
}

// Codes lists every known code.
func Codes() []Code {
	out := make([]Code, 0, len(codes))
	for c := range codes {
		out = append(out, c)
	}
	return out
}

// HTTPStatus is the status of a request rejected with c; codes that only appear on failed jobs
// answer 500, since a request should never be rejected with them.
func (c Code) HTTPStatus() int {
	if info, ok := codes[c]; ok && info.status != 0 {
		return info.status
	}
	return http.StatusInternalServerError
}

// Retryable is the default `retryable` of a job failed with c.
func (c Code) Retryable() bool { return codes[c].retryable }

// Problem is an error carrying an API code and a message that names the offending thing. Use
// cases return it for rejections; the API maps it to { error: { code, message } }.
type Problem struct {
	Code    Code
	Message string
	// Field, when set, names the request field the message is about but does not name itself
	// (the validator's "flag -x is not allowed" is about params.command). A batch puts it, with
	// the job's index, before the message.
	Field string
}

func (p *Problem) Error() string { return p.Message }

// Reject builds a Problem.
func Reject(code Code, format string, args ...any) error {
	return &Problem{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Sentinel errors that callers branch on. Each maps to a code in CodeOf.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
)

// CodeOf maps an error to its API code: a Problem's own, the sentinels', INTERNAL_ERROR otherwise.
func CodeOf(err error) Code {
	var p *Problem
	switch {
	case errors.As(err, &p):
		return p.Code
	case errors.Is(err, ErrNotFound):
		return CodeNotFound
	case errors.Is(err, ErrIllegalTransition), errors.Is(err, ErrConflict):
		return CodeConflict
	default:
		return CodeInternal
	}
}

// Error is the `error` of a failed job.
type Error struct {
	Code      Code    `json:"code"`
	Message   string  `json:"message"`
	Detail    *string `json:"detail"`
	Retryable bool    `json:"retryable"`
}

// DetailLimit is how much of a process's stderr a failed job keeps: its last ~2 KB.
const DetailLimit = 2048

// NewError builds a job error with the code's default retryability; stderr, when not empty,
// becomes the detail, cut to its last DetailLimit bytes on a UTF-8 boundary.
func NewError(code Code, message string, stderr []byte) *Error {
	e := &Error{Code: code, Message: message, Retryable: code.Retryable()}
	if len(stderr) > 0 {
		d := Tail(stderr, DetailLimit)
		e.Detail = &d
	}
	return e
}

// Tail returns at most the last n bytes of b, starting on a UTF-8 character boundary.
func Tail(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	b = b[len(b)-n:]
	// Skip continuation bytes of a character cut in half (at most 3).
	for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	return string(b)
}
