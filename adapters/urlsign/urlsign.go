package urlsign

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/mediajobs/mediajobs/core/job"
)

// Kind says which URL form a token belongs to. A token of one kind never verifies as the other.
type Kind string

const (
	// KindFile is /dl/<job_id>?token=<token>: the token covers the job, the file and the expiry.
	KindFile Kind = "dl"
	// KindDir is /v/<job_id>/<token>/<file>: the token covers the job and the expiry but not the
	// file, so the relative segment names inside an HLS or DASH manifest resolve under it.
	KindDir Kind = "v"
)

// Errors of Verify. Both are FORBIDDEN at the API; they differ only in the message.
var (
	// ErrExpired is a genuine token past its expiry.
	ErrExpired = errors.New("download link expired")
	// ErrForged is a token that is malformed or was not minted by this key for this URL.
	ErrForged = errors.New("download link is not valid")
)

// MinKeySize is the shortest secret key New accepts.
const MinKeySize = 32

const (
	macSize   = 16 // a truncated HMAC-SHA256: 128 bits are beyond forging online
	tokenSize = 8 + macSize
	// TokenLen is the length of a token as it appears in a URL.
	TokenLen = (tokenSize*8 + 5) / 6
	domain   = "mediajobs/urlsign/v1"
)

var enc = base64.RawURLEncoding.Strict()

// Signer mints and verifies download URLs. It implements job.Signer.
type Signer struct {
	base string
	key  []byte
}

var _ job.Signer = (*Signer)(nil)

// New returns a Signer minting URLs under baseURL ({base_url}, a trailing slash is dropped)
// with a secret key of at least MinKeySize bytes.
func New(baseURL string, key []byte) (*Signer, error) {
	if len(key) < MinKeySize {
		return nil, fmt.Errorf("urlsign: key is %d bytes; at least %d are required", len(key), MinKeySize)
	}
	if _, err := url.Parse(baseURL); err != nil {
		return nil, fmt.Errorf("urlsign: base URL: %w", err)
	}
	return &Signer{base: strings.TrimSuffix(baseURL, "/"), key: append([]byte(nil), key...)}, nil
}

// SignFile returns the URL of one output file: /dl/ for the single-file pattern, /v/ for stream
// and set members.
func (s *Signer) SignFile(jobID string, p job.Pattern, file string, expires time.Time) string {
	if p == job.PatternSingle {
		return s.base + "/dl/" + url.PathEscape(jobID) + "?token=" + s.Token(KindFile, jobID, file, expires)
	}
	return s.base + "/v/" + url.PathEscape(jobID) + "/" + s.Token(KindDir, jobID, "", expires) + "/" + url.PathEscape(file)
}

// Token mints the token of a URL of kind for jobID, valid until expires (millisecond
// precision). file is covered for KindFile and ignored for KindDir.
func (s *Signer) Token(kind Kind, jobID, file string, expires time.Time) string {
	var raw [tokenSize]byte
	ms := expires.UnixMilli()
	binary.BigEndian.PutUint64(raw[:8], uint64(ms))
	copy(raw[8:], s.mac(kind, jobID, file, ms))
	return enc.EncodeToString(raw[:])
}

// Verify checks a token of kind for jobID (and file, for KindFile) at now. The MAC is checked
// before the expiry, so a forged token is ErrForged whatever expiry it claims; ErrExpired is
// only ever said of a token this key minted.
func (s *Signer) Verify(kind Kind, jobID, file, token string, now time.Time) error {
	ms, mac, err := ParseToken(token)
	if err != nil {
		return err
	}
	if kind != KindFile && kind != KindDir {
		return fmt.Errorf("%w: unknown link kind", ErrForged)
	}
	if !hmac.Equal(mac, s.mac(kind, jobID, file, ms)) {
		return ErrForged
	}
	if now.UnixMilli() >= ms {
		return fmt.Errorf("%w at %s; fetch the job again for fresh URLs", ErrExpired,
			time.UnixMilli(ms).UTC().Format(time.RFC3339))
	}
	return nil
}

// ParseToken splits a token into its expiry (Unix milliseconds) and MAC. Anything that is not
// exactly a canonical token is ErrForged.
func ParseToken(token string) (expiresMs int64, mac []byte, err error) {
	if len(token) != TokenLen {
		return 0, nil, fmt.Errorf("%w: malformed token", ErrForged)
	}
	raw, err := enc.DecodeString(token)
	if err != nil || len(raw) != tokenSize {
		return 0, nil, fmt.Errorf("%w: malformed token", ErrForged)
	}
	ms := int64(binary.BigEndian.Uint64(raw[:8]))
	if ms <= 0 {
		return 0, nil, fmt.Errorf("%w: malformed token", ErrForged)
	}
	return ms, raw[8:], nil
}

// mac is the truncated HMAC of a domain-separated, length-prefixed message, so that no two
// (kind, job, file, expiry) tuples share bytes.
func (s *Signer) mac(kind Kind, jobID, file string, expiresMs int64) []byte {
	h := hmac.New(sha256.New, s.key)
	field := func(v string) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(v)))
		h.Write(n[:])
		h.Write([]byte(v))
	}
	field(domain)
	field(string(kind))
	field(jobID)
	if kind == KindFile {
		field(file)
	}
	var exp [8]byte
	binary.BigEndian.PutUint64(exp[:], uint64(expiresMs))
	h.Write(exp[:])
	return h.Sum(nil)[:macSize]
}
