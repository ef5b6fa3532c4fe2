package workqueue

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
)

// Tokens issues and checks lease tokens: an HMAC of the job and its attempt under the control
// plane's key, so that no token is stored, a token of an older attempt no longer matches, and
// a runner cannot make one. Every control-plane replica needs the same key.
type Tokens struct {
	key []byte
}

// NewTokens returns Tokens over key, at least 32 bytes.
func NewTokens(key []byte) (Tokens, error) {
	if len(key) < 32 {
		return Tokens{}, errors.New("workqueue: a lease key needs at least 32 bytes")
	}
	return Tokens{key: append([]byte(nil), key...)}, nil
}

// Issue is the token of a job's attempt.
func (t Tokens) Issue(jobID string, attempt int) string {
	m := hmac.New(sha256.New, t.key)
	m.Write([]byte("mediajobs lease\x00" + jobID + "\x00" + strconv.Itoa(attempt)))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Valid tells whether l's token is the one issued for its job and attempt, in constant time.
func (t Tokens) Valid(l Lease) bool {
	if len(t.key) == 0 || l.Token == "" {
		return false
	}
	return hmac.Equal([]byte(t.Issue(l.JobID, l.Attempt)), []byte(l.Token))
}
