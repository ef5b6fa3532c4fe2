package integration

import (
	"bytes"
	"encoding/pem"
	"image"
	"image/png"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// mediaServer is a local HTTPS server of media files that counts the requests it sees.
type mediaServer struct {
	*httptest.Server
	// CertFile is a PEM of the server's certificate, for SSL_CERT_FILE.
	CertFile string
	requests atomic.Int64
}

func startMediaServer(t *testing.T, files map[string][]byte) *mediaServer {
	t.Helper()
	return startTLSServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[strings.TrimPrefix(r.URL.Path, "/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "video/mp4")
		_, _ = w.Write(b)
	})
}

// startRedirectServer is a media server that answers every request with a redirect to target.
func startRedirectServer(t *testing.T, target string) *mediaServer {
	t.Helper()
	return startTLSServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target, http.StatusFound)
	})
}

// startTLSServer serves handle over TLS on loopback, counting the requests.
func startTLSServer(t *testing.T, handle http.HandlerFunc) *mediaServer {
	t.Helper()
	ms := &mediaServer{}
	ms.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ms.requests.Add(1)
		handle(w, r)
	}))
	t.Cleanup(ms.Close)
	ms.CertFile = filepath.Join(t.TempDir(), "cert.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ms.Certificate().Raw})
	if err := os.WriteFile(ms.CertFile, pemBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	return ms
}

// upload is the answer of POST /uploads.
type upload struct {
	ID          string `json:"id"`
	URL         string `json:"url"`
	Name        string `json:"name"`
	ContentType string `json:"contentType"`
	Size        int64  `json:"size"`
}

// uploadRaw posts b as the raw body of POST /uploads.
func (c *client) uploadRaw(name string, b []byte) upload {
	c.t.Helper()
	var u upload
	c.do(http.MethodPost, "/uploads?name="+name, b, http.Header{"Content-Type": {"video/mp4"}}).
		decode(c.t, http.StatusCreated, &u)
	return u
}

// uploadMultipart posts b as the file field of a multipart POST /uploads.
func (c *client) uploadMultipart(name string, b []byte) upload {
	c.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, err := mw.CreateFormFile("file", name)
	if err != nil {
		c.t.Fatal(err)
	}
	_, _ = fw.Write(b)
	_ = mw.Close()
	var u upload
	c.do(http.MethodPost, "/uploads", body.Bytes(), http.Header{"Content-Type": {mw.FormDataContentType()}}).
		decode(c.t, http.StatusCreated, &u)
	return u
}

// TestInputs covers the input forms of an ffmpeg job: inline content (subtitles, a concat
// list), uploaded assets, and https URLs from a local TLS server.
func TestInputs(t *testing.T) {
	t.Parallel()
	clip := makeMedia(t, 1)
	forEachBackend(t, func(t *testing.T, b backend) {
		media := startMediaServer(t, map[string][]byte{"clip.mp4": clip})
		srv := startServer(t, serverOpts{Unthrottled: true, Backend: b, Env: map[string]string{
			"MEDIAJOBS_ALLOW_PRIVATE_NETWORKS": "127.0.0.0/8",
			"SSL_CERT_FILE":                    media.CertFile,
		}})
		owner := createAccount(t, srv, "pro")
		c := newClient(t, srv, owner.APIKey)

		t.Run("subtitles burned from inline srt", func(t *testing.T) {
			srt := "1\n00:00:00,000 --> 00:00:05,000\nBURNED IN\n"
			j := c.complete(ffmpegJob(
				"ffmpeg -f lavfi -i color=c=black:size=320x180:duration=1:rate=5 -vf subtitles=subs.srt -frames:v 1 frame.png",
				map[string]any{"subs.srt": map[string]any{"content": srt}}, nil))
			img := decodePNG(t, c.mustGet(j.Output.File.URL))
			if lit := litPixels(img); lit < 50 {
				t.Errorf("the frame has %d non-black pixels; the subtitle was not burned in", lit)
			}
		})

		t.Run("concat list of uploaded files", func(t *testing.T) {
			a := c.uploadRaw("a.mp4", clip)
			bb := c.uploadMultipart("b.mp4", clip)
			for _, u := range []upload{a, bb} {
				if u.Size != int64(len(clip)) || !strings.HasPrefix(u.URL, srv.Base+"/assets/"+u.ID+"/content") {
					t.Fatalf("upload = %+v, want %d bytes at %s/assets/<id>/content", u, len(clip), srv.Base)
				}
			}
			if got := c.mustGetAuth(a.URL); !bytes.Equal(got, clip) {
				t.Errorf("GET %s returned %d bytes, not the upload", a.URL, len(got))
			}
			j := c.complete(ffmpegJob("ffmpeg -f concat -i list.txt -c copy joined.mp4", map[string]any{
				"list.txt": map[string]any{"content": "file 'a.mp4'\nfile 'b.mp4'\n"},
				"a.mp4":    a.URL,
				"b.mp4":    map[string]any{"url": bb.URL},
			}, nil))
			f := j.Output.File
			if f == nil || f.Meta == nil || f.Meta.DurationMs < 1800 {
				t.Errorf("joined file %+v: want about 2 s, two clips of 1 s", f)
			}
		})

		t.Run("upload as -i", func(t *testing.T) {
			u := c.uploadRaw("clip.mp4", clip)
			j := c.complete(ffmpegJob("ffmpeg -i "+u.URL+" -frames:v 1 thumb.png", nil, nil))
			if m := j.Output.File.Meta; m == nil || m.Width != 128 || m.Height != 72 {
				t.Errorf("thumbnail meta %+v, want 128x72", m)
			}
		})

		t.Run("https input", func(t *testing.T) {
			before := media.requests.Load()
			j := c.complete(ffmpegJob("ffmpeg -i "+media.URL+"/clip.mp4 -c copy copy.mp4", nil, nil))
			if m := j.Output.File.Meta; m == nil || m.DurationMs < 900 || m.Width != 128 {
				t.Errorf("copy meta %+v, want the 1 s 128x72 clip", m)
			}
			if media.requests.Load() == before {
				t.Errorf("the media server saw no request")
			}
		})

		t.Run("another account's upload", func(t *testing.T) {
			u := c.uploadRaw("mine.mp4", clip)
			other := c.as(createAccount(t, srv, "pro").APIKey)
			if e := other.do(http.MethodGet, u.URL, nil, nil).errorOf(t, http.StatusNotFound); e.Code != "NOT_FOUND" {
				t.Errorf("GET another account's asset: %+v", e)
			}
			r := other.do(http.MethodPost, "/jobs", ffmpegJob("ffmpeg -i "+u.URL+" -frames:v 1 thumb.png", nil, nil), nil)
			if e := r.errorOf(t, http.StatusBadRequest); e.Code != "VALIDATION_ERROR" {
				t.Errorf("a job on another account's asset: %+v", e)
			}
		})
	})
}

// TestRefusedRange: two walls keep inputs off non-public addresses, and each holds alone.
// Without the allow list, the validator refuses an input URL naming a loopback address at
// submit, naming the address, so no job exists and the address never sees a request. With the
// allow list opening 127.0.0.1 alone, a URL there passes the validator (at submit and in the
// runner), but it redirects to 127.0.0.2, which no validator sees: the fetcher refuses to dial
// it, the job fails with INPUT_FETCH_FAILED, and 127.0.0.2 never sees a request.
func TestRefusedRange(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		t.Run("named address, refused by the validator", func(t *testing.T) {
			t.Parallel()
			media := startMediaServer(t, map[string][]byte{"clip.mp4": []byte("not reached")})
			// The certificate is trusted, so only the address rule stands in the way.
			srv := startServer(t, serverOpts{Unthrottled: true, Backend: b, Env: map[string]string{"SSL_CERT_FILE": media.CertFile}})
			c := newClient(t, srv, createAccount(t, srv, "free").APIKey)

			r := c.do(http.MethodPost, "/jobs", ffmpegJob("ffmpeg -i "+media.URL+"/clip.mp4 -c copy copy.mp4", nil, nil), nil)
			if e := r.errorOf(t, http.StatusBadRequest); e.Code != "VALIDATION_ERROR" ||
				!strings.Contains(e.Message, "non-public address 127.0.0.1 (loopback)") {
				t.Errorf("POST /jobs on %s: %+v, want VALIDATION_ERROR naming 127.0.0.1", media.URL, e)
			}
			if n := media.requests.Load(); n != 0 {
				t.Errorf("the refused server saw %d requests", n)
			}
		})

		t.Run("redirect off the allow list, refused by the fetcher", func(t *testing.T) {
			t.Parallel()
			var hidden atomic.Int64
			target := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hidden.Add(1) }))
			ln, err := net.Listen("tcp", "127.0.0.2:0")
			if err != nil {
				t.Fatalf("listening on 127.0.0.2: %v", err)
			}
			target.Listener = ln
			target.StartTLS()
			t.Cleanup(target.Close)
			media := startRedirectServer(t, target.URL+"/clip.mp4")
			srv := startServer(t, serverOpts{Unthrottled: true, Backend: b, Env: map[string]string{
				"MEDIAJOBS_ALLOW_PRIVATE_NETWORKS": "127.0.0.1/32", "SSL_CERT_FILE": media.CertFile}})
			c := newClient(t, srv, createAccount(t, srv, "free").APIKey)

			id := c.submit(ffmpegJob("ffmpeg -i "+media.URL+"/clip.mp4 -c copy copy.mp4", nil, nil))
			j := c.waitTerminal(id)
			if j.Status != "failed" || j.Error == nil || j.Error.Code != "INPUT_FETCH_FAILED" {
				t.Fatalf("job %s: %s %s, want failed INPUT_FETCH_FAILED", id, j.Status, errorText(j))
			}
			if !strings.Contains(j.Error.Message, media.URL) || !strings.Contains(j.Error.Message, "refused") {
				t.Errorf("message %q does not name the URL and the refused range", j.Error.Message)
			}
			if media.requests.Load() == 0 {
				t.Errorf("the allowed server saw no request: the job failed before the fetcher")
			}
			if n := hidden.Load(); n != 0 {
				t.Errorf("the refused server saw %d requests", n)
			}
		})
	})
}

// mustGetAuth downloads a URL of the API with the client's key.
func (c *client) mustGetAuth(target string) []byte {
	c.t.Helper()
	r := c.do(http.MethodGet, target, nil, nil)
	if r.Status != http.StatusOK {
		c.t.Fatalf("GET %s: %d %s", target, r.Status, r.Body)
	}
	return r.Body
}

func decodePNG(t *testing.T, b []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("decode png: %v", err)
	}
	return img
}

// litPixels counts the pixels that are not (nearly) black.
func litPixels(img image.Image) int {
	n := 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if r > 0x4000 || g > 0x4000 || b > 0x4000 {
				n++
			}
		}
	}
	return n
}
