package httpapi_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/mediajobs/mediajobs/core/problem"
)

// TestIdempotencyKey: each operation that takes a key answers a repeat with its first
// response and does the work once; another body, or another operation, is refused.
func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	job := `{"type":"ffmpeg","params":{"command":"` + goodCommand + `"}}`
	// The same request, keys reordered and spaced: the same body to the key.
	jobAgain := `{ "params": {"command": "` + goodCommand + `"}, "type": "ffmpeg" }`
	other := `{"type":"ffmpeg","params":{"command":"` + goodCommand + `","timeout":30}}`
	batch := `{"jobs":[` + job + `]}`
	mp, mpType := multipartBody(t, nil, "subs.srt", "1\n00:00:00,000 --> 00:00:01,000\nhi\n")
	mp2, mpType2 := multipartBody(t, nil, "subs.srt", "1\n00:00:00,000 --> 00:00:01,000\nhi\n") // another boundary
	mp3, mpType3 := multipartBody(t, nil, "subs.srt", "1\n00:00:00,000 --> 00:00:01,000\nbye\n")
	tests := []struct {
		name          string
		path          string
		first, repeat []byte
		firstType     string
		repeatType    string
		wantStatus    int
		wantCode      problem.Code
	}{
		{"job repeated", "/jobs", []byte(job), []byte(jobAgain), "", "", http.StatusCreated, ""},
		{"job with another body", "/jobs", []byte(job), []byte(other), "", "", http.StatusConflict, problem.CodeIdempotencyKeyReused},
		{"batch repeated", "/batches", []byte(batch), []byte(batch), "", "", http.StatusCreated, ""},
		{"upload repeated", "/uploads", mp, mp2, mpType, mpType2, http.StatusCreated, ""},
		{"upload with other bytes", "/uploads", mp, mp3, mpType, mpType3, http.StatusConflict, problem.CodeIdempotencyKeyReused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			send := func(body []byte, ct string) response {
				h := map[string]string{"Idempotency-Key": "key-1"}
				if ct != "" {
					h["Content-Type"] = ct
				}
				return b.do(t, request{method: "POST", path: tt.path, key: b.key, body: body, header: h})
			}
			first := send(tt.first, tt.firstType)
			if first.status != http.StatusCreated || first.header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("first: %d %v %s", first.status, first.header, first.body)
			}
			jobs := b.jobCount(t)
			again := send(tt.repeat, tt.repeatType)
			if again.status != tt.wantStatus {
				t.Fatalf("repeat: status %d, want %d: %s", again.status, tt.wantStatus, again.body)
			}
			if tt.wantCode != "" {
				if code, msg := again.errorBody(t); code != tt.wantCode {
					t.Errorf("repeat: code %s (%s), want %s", code, msg, tt.wantCode)
				}
			} else {
				if string(again.body) != string(first.body) || again.header.Get("Location") != first.header.Get("Location") ||
					again.header.Get("Idempotent-Replayed") != "true" {
					t.Errorf("repeat answered %s %v, want the first answer %s", again.body, again.header, first.body)
				}
			}
			if n := b.jobCount(t); n != jobs {
				t.Errorf("the repeat left %d jobs, want %d", n, jobs)
			}
		})
	}
}

func TestIdempotencyKeyRules(t *testing.T) {
	t.Parallel()
	b := setup(t)
	job := []byte(`{"type":"ffmpeg","params":{"command":"` + goodCommand + `"}}`)
	post := func(path, key, apiKey string, body []byte) response {
		return b.do(t, request{method: "POST", path: path, key: apiKey, body: body, header: map[string]string{"Idempotency-Key": key}})
	}
	// A refused request keeps nothing: corrected, it runs under the same key.
	if res := post("/jobs", "k-refused", b.key, []byte(`{"type":"ffmpeg","params":{"command":"ffmpeg -filter_script x out.mp4"}}`)); res.status != http.StatusBadRequest {
		t.Fatalf("bad job: %d %s", res.status, res.body)
	}
	if res := post("/jobs", "k-refused", b.key, job); res.status != http.StatusCreated || res.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("corrected job under the same key: %d %s", res.status, res.body)
	}
	// Another operation under a used key is refused, naming both.
	if res := post("/batches", "k-refused", b.key, []byte(`{"jobs":[`+string(job)+`]}`)); res.status != http.StatusConflict {
		t.Errorf("batch under a job's key: %d %s", res.status, res.body)
	} else if code, msg := res.errorBody(t); code != problem.CodeIdempotencyKeyReused {
		t.Errorf("batch under a job's key: %s %s", code, msg)
	}
	// Keys belong to an account: another account's same key is its own.
	if res := post("/jobs", "k-refused", b.otherKey, job); res.status != http.StatusCreated || res.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("another account's key: %d %v %s", res.status, res.header, res.body)
	}
	// A key given twice is refused: kept under the first, a repeat with the second would run
	// again.
	hr, _ := http.NewRequest("POST", b.url+"/jobs", bytes.NewReader(job))
	hr.Header.Set("Authorization", "Bearer "+b.key)
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Add("Idempotency-Key", "k-twice-1")
	hr.Header.Add("Idempotency-Key", "k-twice-2")
	if resp, err := http.DefaultClient.Do(hr); err != nil {
		t.Fatal(err)
	} else {
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !contains(string(msg), "given 2 times") {
			t.Errorf("two keys: %d %s; want 400 naming the header given twice", resp.StatusCode, msg)
		}
	}
	// A key that is not visible ASCII is refused and names the header.
	if res := post("/jobs", "two words", b.key, job); res.status != http.StatusBadRequest {
		t.Errorf("bad key: %d %s", res.status, res.body)
	} else if _, msg := res.errorBody(t); msg == "" || !contains(msg, "Idempotency-Key") {
		t.Errorf("bad key message %q does not name the header", msg)
	}
}

// TestIdempotencyKeyConcurrent: repeats sent at once make one job and all answer it.
func TestIdempotencyKeyConcurrent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	job := []byte(`{"type":"ffmpeg","params":{"command":"` + goodCommand + `"}}`)
	const n = 20
	answers := make([]response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = b.do(t, request{method: "POST", path: "/jobs", key: b.key, body: job, header: map[string]string{"Idempotency-Key": "burst"}})
		}()
	}
	wg.Wait()
	for i, a := range answers {
		if a.status != http.StatusCreated || string(a.body) != string(answers[0].body) {
			t.Errorf("answer %d: %d %s, want %s", i, a.status, a.body, answers[0].body)
		}
	}
	if got := b.jobCount(t); got != 1 {
		t.Errorf("%d concurrent submits with one key made %d jobs, want 1", n, got)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
