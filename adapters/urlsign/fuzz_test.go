package urlsign_test

import (
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/urlsign"
)

// FuzzParseToken feeds untrusted tokens to the parser and the verifier: neither may panic, a
// parsed token must be canonical, and nothing but a minted token verifies.
func FuzzParseToken(f *testing.F) {
	s, err := urlsign.New("https://media.example", key)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(s.Token(urlsign.KindFile, "job_a", "out.mp4", now.Add(time.Hour)))
	f.Add(s.Token(urlsign.KindDir, "job_a", "", now.Add(time.Hour)))
	f.Add("")
	f.Add("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	f.Add("////////////////////////////////")
	f.Fuzz(func(t *testing.T, token string) {
		ms, mac, err := urlsign.ParseToken(token)
		if err == nil {
			if ms <= 0 || len(mac) != 16 {
				t.Fatalf("ParseToken(%q) = %d, %d-byte MAC", token, ms, len(mac))
			}
			if again := encode(append(be(ms), mac...)); again != token {
				t.Fatalf("token %q is not canonical: re-encodes as %q", token, again)
			}
		}
		minted := s.Token(urlsign.KindFile, "job_a", "out.mp4", time.UnixMilli(ms))
		if err := s.Verify(urlsign.KindFile, "job_a", "out.mp4", token, now); err == nil && token != minted {
			t.Fatalf("Verify accepted %q, which this key did not mint", token)
		}
	})
}

func be(v int64) []byte {
	b := make([]byte, 8)
	for i := 7; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
	return b
}
