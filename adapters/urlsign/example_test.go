package urlsign_test

import (
	"fmt"
	"time"

	"github.com/mediajobs/mediajobs/adapters/urlsign"
	"github.com/mediajobs/mediajobs/core/job"
)

func ExampleSigner_Verify() {
	s, _ := urlsign.New("https://media.example", []byte("an example key of thirty-two b!!"))
	expires := time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC)
	tok := s.Token(urlsign.KindDir, "job_a", "", expires)

	fmt.Println(s.SignFile("job_a", job.PatternStream, "index.m3u8", expires) ==
		"https://media.example/v/job_a/"+tok+"/index.m3u8")
	fmt.Println(s.Verify(urlsign.KindDir, "job_a", "", tok, expires.Add(-time.Minute)))
	fmt.Println(s.Verify(urlsign.KindDir, "job_b", "", tok, expires.Add(-time.Minute)))
	// Output:
	// true
	// <nil>
	// download link is not valid
}

func ExampleSigner_VerifyMember() {
	s, _ := urlsign.New("https://media.example", []byte("an example key of thirty-two b!!"))
	link := time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC)
	// A playlist opened with the link names its segments with a member token: valid past the
	// link, but carrying the link's expiry on to whatever is minted from it.
	member := s.MemberToken("job_a", link.Add(10*time.Minute), link)

	origin, err := s.VerifyMember("job_a", member, link.Add(5*time.Minute))
	fmt.Println(origin.UTC().Format(time.Kitchen), err)
	_, err = s.VerifyMember("job_a", member, link.Add(10*time.Minute))
	fmt.Println(err)
	// Output:
	// 1:00PM <nil>
	// download link expired at 2026-03-01T13:10:00Z; fetch the job again for fresh URLs
}
