package validator

import (
	"encoding/json"
	"testing"
)

func assertSameJSON(t *testing.T, r Result) {
	t.Helper()
	want, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.AppendJSON(nil); string(got) != string(want) {
		t.Fatalf("AppendJSON\n got  %s\n want %s", got, want)
	}
}

func TestAppendJSON(t *testing.T) {
	t.Parallel()
	for _, r := range []Result{
		{},
		{Valid: true, Args: []string{}, InferredOutputFormat: "mp4"},
		{Valid: true, Args: []string{"-i", "a b", `q"\`, "<&>", "\b\f\n\r\t\x00\x1f\x7f", "é\u2028\u2029\xff\xc3"}, RequiredInputs: []string{"in.mp4"}},
		{Error: "input \"\x01\" is not allowed"},
	} {
		assertSameJSON(t, r)
	}
	for _, c := range loadCorpus(t) {
		assertSameJSON(t, Validate(c.Command, c.Options))
	}
}

// FuzzAppendJSON: for any command and any strings, AppendJSON is json.Marshal.
func FuzzAppendJSON(f *testing.F) {
	f.Add("ffmpeg -i in.mp4 out.mp4", "x", "\u2028<\xff")
	f.Fuzz(func(t *testing.T, command, a, b string) {
		assertSameJSON(t, Validate(command, Options{}))
		assertSameJSON(t, Result{Valid: true, Args: []string{a, b}, InferredOutputFormat: a, RequiredInputs: []string{b}})
		assertSameJSON(t, Result{Error: a + b})
	})
}

// TestAppendValidateJSON: over the corpus, the real-world commands with and without their inputs
// and the attacks, in turn so that each call reuses the scratch of the one before, the pooled path
// and a Checker answer what Validate does.
func TestAppendValidateJSON(t *testing.T) {
	t.Parallel()
	var buf []byte
	var checker Checker
	for range 2 {
		for _, c := range benchMix(t) {
			r := Validate(c.Command, c.Options)
			want := r.AppendJSON(nil)
			buf = AppendValidateJSON(buf[:0], c.Command, c.Options)
			if string(buf) != string(want) {
				t.Fatalf("AppendValidateJSON(%q)\n got  %s\n want %s", c.Command, buf, want)
			}
			buf = checker.AppendValidateJSON(buf[:0], c.Command, c.Options)
			if string(buf) != string(want) {
				t.Fatalf("Checker.AppendValidateJSON(%q)\n got  %s\n want %s", c.Command, buf, want)
			}
		}
	}
}
