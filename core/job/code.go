package job

import (
	"unicode/utf8"

	"github.com/mediajobs/mediajobs/core/problem"
)

// Error is the `error` of a failed job.
type Error struct {
	Code      problem.Code `json:"code"`
	Message   string       `json:"message"`
	Detail    *string      `json:"detail"`
	Retryable bool         `json:"retryable"`
}

// DetailLimit is how much of a process's stderr a failed job keeps: its last ~2 KB.
const DetailLimit = 2048

// NewError builds a job error with the code's default retryability; stderr, when not empty,
// becomes the detail, cut to its last DetailLimit bytes on a UTF-8 boundary.
func NewError(code problem.Code, message string, stderr []byte) *Error {
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
