package validator

import (
	"testing"
	"time"
)

// BenchmarkValidateCorpus validates the corpus mix (real commands and attacks) in turn. Target:
// at least 100,000 validations per second per core.
func BenchmarkValidateCorpus(b *testing.B) {
	cases := loadCorpus(b)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		c := &cases[i%len(cases)]
		Validate(c.Command, c.Options)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "validations/s")
}

// BenchmarkValidateTypical is one common transcode with a filter chain.
func BenchmarkValidateTypical(b *testing.B) {
	const cmd = `ffmpeg -i https://cdn.example.com/in.mp4 -vf "scale=1280:-2,fps=30" -c:v libx264 -crf 23 -preset medium -c:a aac -b:a 128k -movflags +faststart out.mp4`
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		Validate(cmd, Options{})
	}
}
