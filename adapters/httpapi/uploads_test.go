package httpapi_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/core/problem"
)

type uploaded struct {
	ID          string `json:"id"`
	URL         string `json:"url"`
	Name        string `json:"name"`
	ContentType string `json:"contentType"`
	Size        int64  `json:"size"`
	SHA256      string `json:"sha256"`
}

func multipartBody(t *testing.T, fields map[string]string, fileName, content string) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		if err := mw.WriteField(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if fileName != "" {
		fw, err := mw.CreateFormFile("file", fileName)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fw.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), mw.FormDataContentType()
}

func TestUploads(t *testing.T) {
	t.Parallel()
	b := setup(t)
	mp, mpType := multipartBody(t, nil, "subs.srt", "1\n00:00:00,000 --> 00:00:01,000\nhi\n")
	tests := []struct {
		name     string
		path     string
		body     []byte
		header   map[string]string
		wantName string
		wantType string
	}{
		{"raw with ?name=", "/uploads?name=clip.mp4", mp4Head, map[string]string{"Content-Type": "video/mp4"}, "clip.mp4", "video/mp4"},
		{"declared type is not trusted", "/uploads?name=clip.mp4", []byte("<html><script>alert(1)</script>"), map[string]string{"Content-Type": "video/mp4"}, "clip.mp4", "text/html; charset=utf-8"},
		{"text named .mp4 is text", "/uploads?name=clip.mp4", []byte("mp4 bytes"), map[string]string{"Content-Type": "video/mp4"}, "clip.mp4", "text/plain; charset=utf-8"},
		{"matroska by name when the bytes are EBML", "/uploads?name=a.mkv", []byte("\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01"), nil, "a.mkv", "video/x-matroska"},
		{"mpeg-ts by name when the bytes are not known", "/uploads?name=a.ts", []byte("\x47\x40\x00\x10\x00\x00\xb0\x0d"), nil, "a.ts", "video/mp2t"},
		{"binary named .srt is not subtitles", "/uploads?name=a.srt", []byte("\x00\x01\x02\x03"), nil, "a.srt", "application/octet-stream"},
		{"raw with X-Filename", "/uploads", []byte("WEBVTT\n"), map[string]string{"Content-Type": "application/octet-stream", "X-Filename": "a.vtt"}, "a.vtt", "text/vtt"},
		{"raw without a name", "/uploads", []byte("data"), map[string]string{"Content-Type": "application/octet-stream"}, "upload", "text/plain; charset=utf-8"},
		{"multipart", "/uploads", mp, map[string]string{"Content-Type": mpType}, "subs.srt", "application/x-subrip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := b.do(t, request{method: "POST", path: tt.path, key: b.key, body: tt.body, header: tt.header})
			if res.status != http.StatusCreated {
				t.Fatalf("status %d, body %s", res.status, res.body)
			}
			var u uploaded
			res.data(t, &u)
			if u.URL != b.url+"/assets/"+u.ID+"/content" || u.Name != tt.wantName || u.ContentType != tt.wantType {
				t.Fatalf("upload = %+v", u)
			}
			content := b.do(t, request{method: "GET", path: "/assets/" + u.ID + "/content", key: b.key})
			if content.status != 200 || content.header.Get("Content-Type") != tt.wantType || int64(len(content.body)) != u.Size {
				t.Fatalf("content: %d %q %q", content.status, content.header.Get("Content-Type"), content.body)
			}
		})
	}
}

func TestUploadRejections(t *testing.T) {
	t.Parallel()
	b := setup(t)
	extra, extraType := multipartBody(t, map[string]string{"note": "x"}, "a.mp4", "x")
	none, noneType := multipartBody(t, nil, "", "")
	big, bigType := multipartBody(t, nil, "big.mp4", strings.Repeat("x", maxUpload+1))
	after, afterType := fileThenField(t)
	climbs, climbsType := multipartBody(t, nil, "../../etc/passwd", "x")
	tests := []struct {
		name     string
		path     string
		body     []byte
		header   map[string]string
		key      string
		status   int
		code     problem.Code
		mentions string
	}{
		{"raw over the cap", "/uploads?name=a.mp4", bytes.Repeat([]byte("x"), maxUpload+1), nil, b.key, 413, problem.CodePayloadTooLarge, "1024"},
		{"raw far over the cap", "/uploads?name=a.mp4", bytes.Repeat([]byte("x"), 200<<10), nil, b.key, 413, problem.CodePayloadTooLarge, "limit"},
		{"multipart over the cap", "/uploads", big, map[string]string{"Content-Type": bigType}, b.key, 413, problem.CodePayloadTooLarge, "limit"},
		{"empty", "/uploads?name=a.mp4", []byte{}, map[string]string{"Content-Type": "video/mp4"}, b.key, 400, problem.CodeValidation, "empty"},
		{"name with a slash", "/uploads?name=../etc/passwd", []byte("x"), map[string]string{"Content-Type": "text/plain"}, b.key, 400, problem.CodeValidation, "name"},
		{"multipart extra field", "/uploads", extra, map[string]string{"Content-Type": extraType}, b.key, 400, problem.CodeValidation, "note"},
		{"multipart field after the file", "/uploads", after, map[string]string{"Content-Type": afterType}, b.key, 400, problem.CodeValidation, `"note" after "file"`},
		{"multipart file name that climbs", "/uploads", climbs, map[string]string{"Content-Type": climbsType}, b.key, 400, problem.CodeValidation, "name"},
		{"unknown query parameter", "/uploads?name=a.srt&foo=1", []byte("x"), map[string]string{"Content-Type": "text/plain"}, b.key, 400, problem.CodeValidation, `"foo"`},
		{"name given twice", "/uploads?name=a.srt&name=b.srt", []byte("x"), map[string]string{"Content-Type": "text/plain"}, b.key, 400, problem.CodeValidation, "2 times"},
		{"multipart without file", "/uploads", none, map[string]string{"Content-Type": noneType}, b.key, 400, problem.CodeValidation, "file"},
		{"bad Content-Type", "/uploads", []byte("x"), map[string]string{"Content-Type": "video/"}, b.key, 400, problem.CodeValidation, "Content-Type"},
		{"multipart without a boundary", "/uploads", []byte("x"), map[string]string{"Content-Type": "multipart/form-data"}, b.key, 400, problem.CodeValidation, "multipart/form-data body is malformed"},
		{"no key", "/uploads", []byte("x"), map[string]string{"Content-Type": "text/plain"}, "", 401, problem.CodeUnauthorized, "Authorization"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := tt.header
			if h == nil {
				h = map[string]string{"Content-Type": "video/mp4"}
			}
			res := b.do(t, request{method: "POST", path: tt.path, key: tt.key, body: tt.body, header: h})
			code, msg := res.errorBody(t)
			if res.status != tt.status || code != tt.code || !strings.Contains(msg, tt.mentions) {
				t.Fatalf("got %d %s %q, want %d %s naming %q", res.status, code, msg, tt.status, tt.code, tt.mentions)
			}
		})
	}
}

const srtFile = "1\n00:00:00,000 --> 00:00:01,000\nhi\n"

// fileThenField is a multipart body whose file part is followed by another field.
func fileThenField(t *testing.T) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, err := mw.CreateFormFile("file", "a.srt")
	if err != nil {
		t.Fatal(err)
	}
	fw.Write([]byte(srtFile))
	mw.WriteField("note", "x")
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), mw.FormDataContentType()
}

// A refused multipart upload keeps nothing: a field after the file fails it whole.
func TestUploadWithAFieldAfterTheFileKeepsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body, ct := fileThenField(t)
	if res := b.do(t, request{method: "POST", path: "/uploads", key: b.key, body: body, header: map[string]string{"Content-Type": ct}}); res.status != http.StatusBadRequest {
		t.Fatalf("upload: %d %s", res.status, res.body)
	}
	sum := sha256.Sum256([]byte(srtFile))
	var list []uploaded
	b.do(t, request{method: "GET", path: "/uploads?sha256=" + hex.EncodeToString(sum[:]), key: b.key}).data(t, &list)
	if len(list) != 0 {
		t.Errorf("the refused upload was kept: %+v", list)
	}
}

// mp4Head is the start of an MP4 file: an ftyp box.
var mp4Head = []byte("\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom")

func TestAssetContent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.do(t, request{method: "POST", path: "/uploads?name=clip.mp4", key: b.key, body: []byte("0123456789"),
		header: map[string]string{"Content-Type": "video/mp4"}})
	var u uploaded
	res.data(t, &u)
	path := "/assets/" + u.ID + "/content"
	tests := []struct {
		name    string
		method  string
		key     string
		rng     string
		status  int
		body    string
		headers map[string]string
	}{
		{"whole", "GET", b.key, "", 200, "0123456789", map[string]string{"Content-Length": "10", "Accept-Ranges": "bytes"}},
		{"range", "GET", b.key, "bytes=2-4", 206, "234", map[string]string{"Content-Range": "bytes 2-4/10"}},
		// Declared video/mp4, but its bytes are text: served as text, as an attachment.
		{"head", "HEAD", b.key, "", 200, "", map[string]string{"Content-Length": "10", "Content-Type": "text/plain; charset=utf-8",
			"X-Content-Type-Options": "nosniff", "Content-Disposition": `attachment; filename="clip.mp4"`}},
		{"unsatisfiable range", "GET", b.key, "bytes=50-60", 416, "", map[string]string{"Content-Range": "bytes */10"}},
		{"other account", "GET", b.otherKey, "", 404, "", nil},
		{"no key", "GET", "", "", 401, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := map[string]string{}
			if tt.rng != "" {
				h["Range"] = tt.rng
			}
			res := b.do(t, request{method: tt.method, path: path, key: tt.key, header: h})
			if res.status != tt.status {
				t.Fatalf("status %d, body %s", res.status, res.body)
			}
			if tt.body != "" && string(res.body) != tt.body {
				t.Fatalf("body %q, want %q", res.body, tt.body)
			}
			for k, v := range tt.headers {
				if got := res.header.Get(k); got != v {
					t.Fatalf("%s = %q, want %q", k, got, v)
				}
			}
			if tt.method == "HEAD" && len(res.body) != 0 {
				t.Fatalf("HEAD answered a body of %d bytes", len(res.body))
			}
		})
	}
}

// TestFindUploads: GET /uploads?sha256= finds the caller's uploads of the same bytes, newest
// first, whatever their names, and never another account's.
func TestFindUploads(t *testing.T) {
	t.Parallel()
	b := setup(t)
	clip := append(append([]byte{}, mp4Head...), "one clip"...)
	sum := sha256.Sum256(clip)
	hexSum := hex.EncodeToString(sum[:])
	upload := func(key, name string, body []byte) uploaded {
		t.Helper()
		res := b.do(t, request{method: "POST", path: "/uploads?name=" + name, key: key, body: body, header: map[string]string{"Content-Type": "video/mp4"}})
		if res.status != http.StatusCreated {
			t.Fatalf("upload %s: %d %s", name, res.status, res.body)
		}
		var u uploaded
		res.data(t, &u)
		b.clock.Advance(time.Second) // the next upload is newer
		return u
	}
	first := upload(b.key, "clip.mp4", clip)
	if first.SHA256 != hexSum {
		t.Fatalf("POST /uploads: sha256 %q, want %q, the hash of the bytes sent", first.SHA256, hexSum)
	}
	renamed := upload(b.key, "same-bytes.mp4", clip)
	upload(b.key, "other.mp4", append(append([]byte{}, mp4Head...), "another clip"...))
	theirs := upload(b.otherKey, "clip.mp4", clip)

	find := func(key, query string) []uploaded {
		t.Helper()
		res := b.do(t, request{method: "GET", path: "/uploads?" + query, key: key})
		if res.status != http.StatusOK {
			t.Fatalf("GET /uploads?%s: %d %s", query, res.status, res.body)
		}
		var got []uploaded
		res.data(t, &got)
		return got
	}
	tests := []struct {
		name  string
		key   string
		query string
		want  []uploaded
	}{
		{"the caller's, newest first, any name", b.key, "sha256=" + hexSum, []uploaded{renamed, first}},
		{"upper-case hex", b.key, "sha256=" + strings.ToUpper(hexSum), []uploaded{renamed, first}},
		{"another account sees its own only", b.otherKey, "sha256=" + hexSum, []uploaded{theirs}},
		{"no match", b.key, "sha256=" + strings.Repeat("0", 64), []uploaded{}},
	}
	for _, tt := range tests {
		if d := cmp.Diff(tt.want, find(tt.key, tt.query)); d != "" {
			t.Errorf("%s: GET /uploads?%s (-want +got):\n%s", tt.name, tt.query, d)
		}
	}

	rejections := []struct {
		name     string
		query    string
		key      string
		status   int
		code     problem.Code
		mentions string
	}{
		{"no sha256", "", b.key, 400, problem.CodeValidation, "sha256 is required"},
		{"too short", "sha256=abc", b.key, 400, problem.CodeValidation, `sha256 "abc" is not a SHA-256`},
		{"not hex", "sha256=" + strings.Repeat("g", 64), b.key, 400, problem.CodeValidation, "sha256"},
		{"given twice", "sha256=" + hexSum + "&sha256=" + hexSum, b.key, 400, problem.CodeValidation, "sha256 is given 2 times"},
		{"unknown parameter", "sha256=" + hexSum + "&name=clip.mp4", b.key, 400, problem.CodeValidation, `"name" is not known`},
		{"no key", "sha256=" + hexSum, "", 401, problem.CodeUnauthorized, "Authorization"},
	}
	for _, tt := range rejections {
		res := b.do(t, request{method: "GET", path: "/uploads?" + tt.query, key: tt.key})
		code, msg := res.errorBody(t)
		if res.status != tt.status || code != tt.code || !strings.Contains(msg, tt.mentions) {
			t.Errorf("%s: got %d %s %q, want %d %s naming %q", tt.name, res.status, code, msg, tt.status, tt.code, tt.mentions)
		}
	}
}
