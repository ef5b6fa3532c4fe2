package urlsign_test

import (
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/urlsign"
)

// FuzzParseToken feeds untrusted tokens to the parser and the verifiers: none may panic, a
// parsed token must be canonical, and nothing but a minted token verifies.
func FuzzParseToken(f *testing.F) {
	s, err := urlsign.New("https://media.example", key)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(s.Token(urlsign.KindFile, "job_a", "out.mp4", now.Add(time.Hour)))
	f.Add(s.Token(urlsign.KindDir, "job_a", "", now.Add(time.Hour)))
	f.Add(s.MemberToken("job_a", now.Add(time.Hour), now.Add(time.Minute)))
	f.Add("")
	f.Add("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	f.Add("////////////////////////////////")
	f.Add("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	f.Fuzz(func(t *testing.T, token string) {
		c, err := urlsign.ParseToken(token)
		if err == nil {
			raw := be(c.ExpiresMs)
			if c.OriginMs != 0 {
				raw = append(raw, be(c.OriginMs)...)
			}
			if c.ExpiresMs <= 0 || c.OriginMs < 0 || len(c.MAC) != 16 {
				t.Fatalf("ParseToken(%q) = %+v", token, c)
			}
			if again := encode(append(raw, c.MAC...)); again != token {
				t.Fatalf("token %q is not canonical: re-encodes as %q", token, again)
			}
		}
		exp, origin := time.UnixMilli(c.ExpiresMs), time.UnixMilli(c.OriginMs)
		file := s.Token(urlsign.KindFile, "job_a", "out.mp4", exp)
		if err := s.Verify(urlsign.KindFile, "job_a", "out.mp4", token, now); err == nil && token != file {
			t.Fatalf("Verify accepted %q, which this key did not mint", token)
		}
		link, member := s.Token(urlsign.KindDir, "job_a", "", exp), s.MemberToken("job_a", exp, origin)
		if _, err := s.VerifyMember("job_a", token, now); err == nil && token != link && token != member {
			t.Fatalf("VerifyMember accepted %q, which this key did not mint", token)
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
