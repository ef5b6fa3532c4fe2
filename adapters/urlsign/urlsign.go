package urlsign

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
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
	macSize         = 16 // a truncated HMAC-SHA256: 128 bits are beyond forging online
	tokenSize       = 8 + macSize
	memberTokenSize = 8 + 8 + macSize
	// TokenLen is the length of a link's token as it appears in a URL.
	TokenLen = (tokenSize*8 + 5) / 6
	// MemberTokenLen is the length of a member token (MemberToken) as it appears in a URL.
	MemberTokenLen = (memberTokenSize*8 + 5) / 6
	domain         = "mediajobs/urlsign/v1"
	// memberDomain separates the MACs of member tokens from those of links, whose messages
	// would otherwise be a prefix of theirs.
	memberDomain = "mediajobs/urlsign/v1/member"
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

// MemberToken mints a /v/ token for jobID, valid until expires, that carries origin: the expiry
// of the link (a token of SignFile) that the holder followed to get here. A re-signed playlist
// names its members with it, so that following members never reaches past what the first link
// allowed: see VerifyMember. The MAC covers both times.
func (s *Signer) MemberToken(jobID string, expires, origin time.Time) string {
	var raw [memberTokenSize]byte
	ms, oms := expires.UnixMilli(), origin.UnixMilli()
	binary.BigEndian.PutUint64(raw[:8], uint64(ms))
	binary.BigEndian.PutUint64(raw[8:16], uint64(oms))
	copy(raw[16:], s.memberMAC(jobID, ms, oms))
	return enc.EncodeToString(raw[:])
}

// Verify checks a token of kind for jobID (and file, for KindFile) at now. The MAC is checked
// before the expiry, so a forged token is ErrForged whatever expiry it claims; ErrExpired is
// only ever said of a token this key minted. KindDir accepts member tokens too.
func (s *Signer) Verify(kind Kind, jobID, file, token string, now time.Time) error {
	if kind == KindDir {
		_, err := s.VerifyMember(jobID, token, now)
		return err
	}
	c, err := ParseToken(token)
	if err != nil {
		return err
	}
	if kind != KindFile || c.OriginMs != 0 {
		return fmt.Errorf("%w: not a token of this link kind", ErrForged)
	}
	if !hmac.Equal(c.MAC, s.mac(kind, jobID, file, c.ExpiresMs)) {
		return ErrForged
	}
	return expired(c.ExpiresMs, now)
}

// VerifyMember checks a /v/ token for jobID at now, a link's (SignFile) or a member's
// (MemberToken), and returns its origin: the expiry of the link the holder began with, which
// for a link is its own expiry. Whoever mints member tokens from it keeps that origin, so a
// chain of re-signed playlists is bound to its first link's life.
func (s *Signer) VerifyMember(jobID, token string, now time.Time) (origin time.Time, err error) {
	c, err := ParseToken(token)
	if err != nil {
		return time.Time{}, err
	}
	want := s.mac(KindDir, jobID, "", c.ExpiresMs)
	originMs := c.ExpiresMs
	if c.OriginMs != 0 {
		want, originMs = s.memberMAC(jobID, c.ExpiresMs, c.OriginMs), c.OriginMs
	}
	if !hmac.Equal(c.MAC, want) {
		return time.Time{}, ErrForged
	}
	if err := expired(c.ExpiresMs, now); err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(originMs), nil
}

func expired(expiresMs int64, now time.Time) error {
	if now.UnixMilli() >= expiresMs {
		return fmt.Errorf("%w at %s; fetch the job again for fresh URLs", ErrExpired,
			time.UnixMilli(expiresMs).UTC().Format(time.RFC3339))
	}
	return nil
}

// Claims are what a token says, before its MAC is checked.
type Claims struct {
	// ExpiresMs is the Unix millisecond at which the token stops verifying.
	ExpiresMs int64
	// OriginMs is, in a member token, the expiry of the link its holder began with (Unix
	// milliseconds); 0 in a link's token.
	OriginMs int64
	// MAC is the token's truncated HMAC.
	MAC []byte
}

// ParseToken takes a link's or a member's token apart. Anything that is not exactly a
// canonical token is ErrForged.
func ParseToken(token string) (Claims, error) {
	malformed := fmt.Errorf("%w: malformed token", ErrForged)
	if len(token) != TokenLen && len(token) != MemberTokenLen {
		return Claims{}, malformed
	}
	raw, err := enc.DecodeString(token)
	if err != nil || len(raw) != tokenSize && len(raw) != memberTokenSize {
		return Claims{}, malformed
	}
	c := Claims{ExpiresMs: int64(binary.BigEndian.Uint64(raw[:8])), MAC: raw[8:]}
	if len(raw) == memberTokenSize {
		c.OriginMs, c.MAC = int64(binary.BigEndian.Uint64(raw[8:16])), raw[16:]
		if c.OriginMs <= 0 {
			return Claims{}, malformed
		}
	}
	if c.ExpiresMs <= 0 {
		return Claims{}, malformed
	}
	return c, nil
}

// mac is the truncated HMAC of a domain-separated, length-prefixed message, so that no two
// (kind, job, file, expiry) tuples share bytes.
func (s *Signer) mac(kind Kind, jobID, file string, expiresMs int64) []byte {
	h := hmac.New(sha256.New, s.key)
	field(h, domain)
	field(h, string(kind))
	field(h, jobID)
	if kind == KindFile {
		field(h, file)
	}
	var exp [8]byte
	binary.BigEndian.PutUint64(exp[:], uint64(expiresMs))
	h.Write(exp[:])
	return h.Sum(nil)[:macSize]
}

// memberMAC is mac for a member token: its own domain, the job, the expiry and the origin.
func (s *Signer) memberMAC(jobID string, expiresMs, originMs int64) []byte {
	h := hmac.New(sha256.New, s.key)
	field(h, memberDomain)
	field(h, jobID)
	var t [16]byte
	binary.BigEndian.PutUint64(t[:8], uint64(expiresMs))
	binary.BigEndian.PutUint64(t[8:], uint64(originMs))
	h.Write(t[:])
	return h.Sum(nil)[:macSize]
}

// field writes v length-prefixed.
func field(h hash.Hash, v string) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(v)))
	h.Write(n[:])
	h.Write([]byte(v))
}
