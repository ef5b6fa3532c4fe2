package urlsign_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/adapters/urlsign"
	"github.com/mediajobs/mediajobs/core/job"
)

var (
	key      = []byte("0123456789abcdef0123456789abcdef")
	otherKey = []byte("fedcba9876543210fedcba9876543210")
	now      = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
)

func newSigner(t *testing.T, k []byte) *urlsign.Signer {
	t.Helper()
	s, err := urlsign.New("https://media.example/", k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewRejectsShortKey(t *testing.T) {
	t.Parallel()
	if _, err := urlsign.New("https://media.example", []byte("short")); err == nil {
		t.Fatal("New accepted a 5-byte key")
	}
}

func TestSignFileForms(t *testing.T) {
	t.Parallel()
	s := newSigner(t, key)
	exp := now.Add(time.Hour)
	tests := []struct {
		name    string
		pattern job.Pattern
		file    string
		prefix  string
	}{
		{"single file uses /dl", job.PatternSingle, "out.mp4", "https://media.example/dl/job_a?token="},
		{"stream member uses /v", job.PatternStream, "index.m3u8", "https://media.example/v/job_a/"},
		{"set member uses /v", job.PatternSet, "frame_001.png", "https://media.example/v/job_a/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := s.SignFile("job_a", tt.pattern, tt.file, exp)
			if !strings.HasPrefix(got, tt.prefix) {
				t.Fatalf("SignFile = %q, want prefix %q", got, tt.prefix)
			}
			if tt.pattern != job.PatternSingle && !strings.HasSuffix(got, "/"+tt.file) {
				t.Fatalf("SignFile = %q, want the file name last", got)
			}
		})
	}
}

// Members of one stream share a token, so that a manifest's relative names resolve.
func TestDirTokenIsSharedByMembers(t *testing.T) {
	t.Parallel()
	s := newSigner(t, key)
	exp := now.Add(time.Hour)
	a, _ := url.Parse(s.SignFile("job_a", job.PatternStream, "index.m3u8", exp))
	b, _ := url.Parse(s.SignFile("job_a", job.PatternStream, "seg_001.ts", exp))
	ra, _ := url.Parse("seg_001.ts")
	if diff := cmp.Diff(b.String(), a.ResolveReference(ra).String()); diff != "" {
		t.Fatalf("segment URL is not the manifest-relative one (-want +got):\n%s", diff)
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	s := newSigner(t, key)
	exp := now.Add(time.Hour)
	fileTok := s.Token(urlsign.KindFile, "job_a", "out.mp4", exp)
	dirTok := s.Token(urlsign.KindDir, "job_a", "", exp)
	other := newSigner(t, otherKey).Token(urlsign.KindFile, "job_a", "out.mp4", exp)
	later := s.Token(urlsign.KindFile, "job_a", "out.mp4", exp.Add(time.Hour))
	tampered := swapExpiry(t, fileTok, later)

	tests := []struct {
		name  string
		kind  urlsign.Kind
		job   string
		file  string
		token string
		at    time.Time
		want  error
	}{
		{"valid file token", urlsign.KindFile, "job_a", "out.mp4", fileTok, now, nil},
		{"valid dir token", urlsign.KindDir, "job_a", "", dirTok, now, nil},
		{"dir token ignores the file", urlsign.KindDir, "job_a", "seg_009.ts", dirTok, now, nil},
		{"tampered job id", urlsign.KindFile, "job_b", "out.mp4", fileTok, now, urlsign.ErrForged},
		{"tampered job id on dir", urlsign.KindDir, "job_b", "", dirTok, now, urlsign.ErrForged},
		{"other file", urlsign.KindFile, "job_a", "other.mp4", fileTok, now, urlsign.ErrForged},
		{"tampered expiry", urlsign.KindFile, "job_a", "out.mp4", tampered, now, urlsign.ErrForged},
		{"tampered expiry past the end", urlsign.KindFile, "job_a", "out.mp4", tampered, exp.Add(time.Minute), urlsign.ErrForged},
		{"other secret", urlsign.KindFile, "job_a", "out.mp4", other, now, urlsign.ErrForged},
		{"file token as dir", urlsign.KindDir, "job_a", "", fileTok, now, urlsign.ErrForged},
		{"dir token as file", urlsign.KindFile, "job_a", "", dirTok, now, urlsign.ErrForged},
		{"expired", urlsign.KindFile, "job_a", "out.mp4", fileTok, exp, urlsign.ErrExpired},
		{"expired dir", urlsign.KindDir, "job_a", "", dirTok, exp.Add(time.Second), urlsign.ErrExpired},
		{"empty", urlsign.KindFile, "job_a", "out.mp4", "", now, urlsign.ErrForged},
		{"truncated", urlsign.KindFile, "job_a", "out.mp4", fileTok[:len(fileTok)-1], now, urlsign.ErrForged},
		{"not base64", urlsign.KindFile, "job_a", "out.mp4", strings.Repeat("*", urlsign.TokenLen), now, urlsign.ErrForged},
		{"unknown kind", urlsign.Kind("x"), "job_a", "out.mp4", fileTok, now, urlsign.ErrForged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := s.Verify(tt.kind, tt.job, tt.file, tt.token, tt.at)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Verify = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Verify = %v, want %v", err, tt.want)
			}
		})
	}
}

// swapExpiry puts the expiry of donor into tok, keeping tok's MAC.
func swapExpiry(t *testing.T, tok, donor string) string {
	t.Helper()
	c, err := urlsign.ParseToken(tok)
	if err != nil {
		t.Fatal(err)
	}
	out := encode(append(decode(t, donor)[:8], c.MAC...))
	if out == tok {
		t.Fatal("swap produced the original token")
	}
	return out
}

// A member token verifies for its job until its own expiry and tells the origin it carries;
// a link's token tells its own expiry. Neither time can be changed, nor the token moved.
func TestVerifyMember(t *testing.T) {
	t.Parallel()
	s := newSigner(t, key)
	exp, origin := now.Add(2*time.Hour), now.Add(time.Hour)
	link := s.Token(urlsign.KindDir, "job_a", "", origin)
	member := s.MemberToken("job_a", exp, origin)
	raw := decode(t, member)
	laterOrigin := encode(append(append(raw[:8:8], decode(t, s.MemberToken("job_a", exp, exp))[8:16]...), raw[16:]...))
	laterExpiry := encode(append(decode(t, s.MemberToken("job_a", exp.Add(time.Hour), origin))[:8:8], raw[8:]...))
	asLink := encode(append(raw[:8:8], raw[16:]...))

	tests := []struct {
		name   string
		job    string
		token  string
		at     time.Time
		origin time.Time
		want   error
	}{
		{"link tells its own expiry", "job_a", link, now, origin, nil},
		{"member tells its origin", "job_a", member, now, origin, nil},
		{"member past its origin", "job_a", member, origin.Add(time.Minute), origin, nil},
		{"member expired", "job_a", member, exp, time.Time{}, urlsign.ErrExpired},
		{"member of another job", "job_b", member, now, time.Time{}, urlsign.ErrForged},
		{"origin moved later", "job_a", laterOrigin, now, time.Time{}, urlsign.ErrForged},
		{"expiry moved later", "job_a", laterExpiry, exp.Add(time.Minute), time.Time{}, urlsign.ErrForged},
		{"origin cut off", "job_a", asLink, now, time.Time{}, urlsign.ErrForged},
		{"member of another key", "job_a", newSigner(t, otherKey).MemberToken("job_a", exp, origin), now, time.Time{}, urlsign.ErrForged},
		{"file token", "job_a", s.Token(urlsign.KindFile, "job_a", "", exp), now, time.Time{}, urlsign.ErrForged},
		{"truncated", "job_a", member[:len(member)-1], now, time.Time{}, urlsign.ErrForged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := s.VerifyMember(tt.job, tt.token, tt.at)
			if tt.want == nil {
				if err != nil || !got.Equal(tt.origin) {
					t.Fatalf("VerifyMember = %v, %v; want %v", got, err, tt.origin)
				}
				if err := s.Verify(urlsign.KindDir, tt.job, "seg_001.ts", tt.token, tt.at); err != nil {
					t.Fatalf("Verify(KindDir) = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("VerifyMember = %v, want %v", err, tt.want)
			}
		})
	}
	if err := s.Verify(urlsign.KindFile, "job_a", "", member, now); !errors.Is(err, urlsign.ErrForged) {
		t.Fatalf("a member token as a file token: %v, want ErrForged", err)
	}
}
