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
