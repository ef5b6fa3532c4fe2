package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mediajobs/mediajobs/adapters/blobs3/s3test"
	"github.com/mediajobs/mediajobs/adapters/sqlstore/pgtest"

	"github.com/mediajobs/mediajobs/adapters/testenv"
)

// TestScaleOut is the scale-out set-up of deploy/: two API replicas (`serve --runner=false`) on
// one PostgreSQL, sharing blobs in an S3-compatible server (versitygw), behind a load balancer
// (their --base-url), and two `mediajobs worker` processes. 200 short jobs are submitted by
// concurrent clients through both replicas; then one worker and one replica are killed with
// SIGKILL while the jobs run. Every job ends, none lost (complete, or RUNNER_LOST and free),
// none completed twice (one job.completed event each), none charged twice; every output is
// downloadable through the remaining replica, a byte range and an HLS stream through /v/
// included; every job.completed webhook is delivered; and the uploads and outputs are objects
// in the bucket under their account's and job's keys. It runs once per runner transport: NATS
// (the broker) and HTTP (through the load balancer).
func TestScaleOut(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	requireNATS(t)
	if _, err := s3test.Binary(); err != nil {
		testenv.Missing(t, "versitygw, the S3 server (scripts/deps.sh builds it)", err)
	}
	for _, tr := range []transport{transportNATS, transportHTTP} {
		t.Run(string(tr), func(t *testing.T) {
			t.Parallel()
			testScaleOut(t, tr)
		})
	}
}

func testScaleOut(t *testing.T, tr transport) {
	const jobs = 200
	bucket := s3test.Start(t)
	lb := newBalancer(t)
	recv := newCompletionReceiver(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	env := map[string]string{
		"MEDIAJOBS_RUNNER": "false", "MEDIAJOBS_WORKER_TOKEN": workerToken, "MEDIAJOBS_LEASE": "3s",
		"MEDIAJOBS_BLOBS": bucket.URL(), "MEDIAJOBS_BASE_URL": lb.URL(), "MEDIAJOBS_SIGNING_KEY": hex.EncodeToString(key),
		"MEDIAJOBS_BUS_URL": "nats://127.0.0.1:4222", "MEDIAJOBS_ALLOW_PRIVATE_NETWORKS": "127.0.0.0/8", "SSL_CERT_FILE": recv.certFile,
	}
	for _, kv := range bucket.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	control := lb.URL()
	if tr == transportNATS {
		control = natsControl()
		env["MEDIAJOBS_RUNNER_BROKER"] = control
	}
	a := startServer(t, serverOpts{Backend: postgresBackend, Unthrottled: true, Env: env})
	for _, kv := range a.env {
		if k, v, _ := strings.Cut(kv, "="); k == "MEDIAJOBS_DATABASE_URL" || k == "MEDIAJOBS_PRICING" {
			env[k] = v
		}
	}
	b := startServer(t, serverOpts{Backend: sqliteBackend, Env: env})
	lb.set(a.Base, b.Base)
	acct := createAccount(t, a, "pro")
	ca, cb := newClient(t, a, acct.APIKey), newClient(t, b, acct.APIKey)
	cb.do(http.MethodPost, "/webhook-endpoints", map[string]any{"name": "scale", "url": recv.srv.URL + "/hooks",
		"subscribedEvents": []string{"job.completed"}}, nil).decode(t, http.StatusCreated, nil)
	doomed := startWorker(t, control, 2)
	startWorker(t, control, 2)

	// The jobs: most trivial, two HLS ladders, a few from an upload, a few paced so that some
	// run while the kills happen.
	clip := makeClip(t)
	up := ca.uploadRaw("clip.mp4", clip)
	bodies := mixedJobs(jobs, jobMix{HLS: 50, Upload: 40, Paced: 25, PacedSeconds: 3}, func(int) string { return up.URL })
	ids := make([]string, jobs)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			c := ca
			if w%2 == 1 {
				c = cb
			}
			for i := w; i < jobs; i += 8 {
				ids[i] = c.submit(bodies[i])
			}
		})
	}
	wg.Wait()

	// Mid-run: some jobs done, most not.
	deadline := time.Now().Add(2 * time.Minute)
	for done := 0; done < jobs/5; {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d jobs ended within 2 minutes", done, jobs)
		}
		time.Sleep(250 * time.Millisecond) // the poll interval of a wait on that state
		done = 0
		for _, id := range ids[:jobs/2] {
			if terminal[cb.job(id).Status] {
				done++
			}
		}
	}
	doomed.kill()
	a.kill()
	lb.set(b.Base)
	t.Logf("killed worker %s and replica %s", doomed.Name, a.Base)

	counts := map[string]int{}
	views := map[string]jobView{}
	for _, id := range ids {
		j := cb.waitWithin(id, "terminal", 3*time.Minute, func(j jobView) bool { return terminal[j.Status] })
		views[id] = j
		switch {
		case j.Status == "complete":
			counts["complete"]++
		case j.Status == "failed" && j.Error != nil && j.Error.Code == "RUNNER_LOST" && j.Cost != nil && j.Cost.Amount == 0:
			counts["lost"]++
		default:
			t.Errorf("job %s ended %s: %s", id, j.Status, errorText(j))
		}
	}
	t.Logf("%d jobs: %v", jobs, counts)
	// A job's charge reaches the ledger just after its end commits, not with it: at once from
	// the replica that ended it (a plain read can see the job complete a moment before), else
	// from the relay, once the outbox lease of a message the killed replica held lapses (30 s).
	want := func(id string) int {
		if views[id].Status == "complete" {
			return 1
		}
		return 0
	}
	charged := charges(t, cb)
	for deadline := time.Now().Add(45 * time.Second); time.Now().Before(deadline); {
		if !slices.ContainsFunc(ids, func(id string) bool { return charged[id] != want(id) }) {
			break
		}
		time.Sleep(250 * time.Millisecond) // the poll interval of a wait on the ledger
		charged = charges(t, cb)
	}
	for _, id := range ids {
		if charged[id] != want(id) {
			t.Errorf("job %s (%s) charged %d times, want %d", id, views[id].Status, charged[id], want(id))
		}
	}

	// Every output through the remaining replica: whole files, a byte range, an HLS stream.
	var ranged, streams int
	for _, id := range ids {
		j := views[id]
		if j.Status != "complete" {
			continue
		}
		switch {
		case j.Output.File != nil && j.Output.File.Type == "playlist":
			streams++
			checkHLS(t, cb, j.Output)
		case j.Output.File != nil:
			body := cb.mustGet(j.Output.File.URL)
			if int64(len(body)) != j.Output.File.Size || len(body) == 0 {
				t.Errorf("job %s: downloaded %d bytes of %d", id, len(body), j.Output.File.Size)
			}
			if ranged < 3 && len(body) > 110 {
				r := cb.get(j.Output.File.URL, http.Header{"Range": {"bytes=10-109"}})
				if r.Status != http.StatusPartialContent || !bytes.Equal(r.Body, body[10:110]) {
					t.Errorf("job %s: Range 10-109 answered %d with %d bytes", id, r.Status, len(r.Body))
				}
				ranged++
			}
		default:
			t.Errorf("job %s completed with no output file", id)
		}
	}
	if ranged == 0 || streams == 0 {
		t.Errorf("checked %d byte ranges and %d HLS streams, want some of each", ranged, streams)
	}

	// Every completion delivered, once per job.
	deadline = time.Now().Add(90 * time.Second)
	for {
		missing := 0
		for _, id := range ids {
			if views[id].Status == "complete" && recv.deliveries(id) == 0 {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d job.completed webhooks not delivered within 90 s of the last job", missing)
		}
		time.Sleep(200 * time.Millisecond) // the poll interval of a wait on that state
	}
	for _, id := range ids {
		if n := recv.deliveries(id); n > 1 {
			t.Errorf("job %s: %d distinct job.completed deliveries, want one (completed twice?)", id, n)
		}
	}

	// The bucket holds the upload and the outputs under their account's and job's keys.
	objects := listBucket(t, bucket)
	if !objects["accounts/"+acct.AccountID+"/assets/"+up.ID] {
		t.Errorf("upload %s is not in the bucket at accounts/%s/assets/%s", up.ID, acct.AccountID, up.ID)
	}
	for _, id := range ids[:20] {
		if f := views[id].Output; views[id].Status == "complete" && f.File != nil &&
			!objects["accounts/"+acct.AccountID+"/jobs/"+id+"/"+f.File.Path] {
			t.Errorf("output %s of job %s is not in the bucket", f.File.Path, id)
		}
	}
}

// jobMix says how often each kind of job comes in a load: every HLS-th (from the 7th) an HLS
// ladder, every Upload-th (from the 3rd) a command reading an uploaded clip, every Paced-th
// (from the 11th) a command paced to run PacedSeconds, so that some run through the faults; the
// rest a trivial command.
type jobMix struct{ HLS, Upload, Paced, PacedSeconds int }

// mixedJobs are the bodies of n jobs of the mix; upload gives the URL of the clip job i reads.
func mixedJobs(n int, m jobMix, upload func(i int) string) []map[string]any {
	bodies := make([]map[string]any, n)
	for i := range bodies {
		switch {
		case i%m.HLS == 7:
			bodies[i] = ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=2:size=64x48:rate=10 -c:v mpeg4 -g 10 "+
				"-f hls -hls_time 1 -hls_playlist_type vod -hls_segment_filename seg_%03d.ts index.m3u8", nil, nil)
		case i%m.Upload == 3:
			bodies[i] = ffmpegJob(fmt.Sprintf("ffmpeg -i clip.mp4 -frames:v 3 -c:v mpeg4 up%d.mp4", i), map[string]any{"clip.mp4": map[string]any{"url": upload(i)}}, nil)
		case i%m.Paced == 11:
			bodies[i] = ffmpegJob(pacedCommand(fmt.Sprintf("paced%d.mp4", i), m.PacedSeconds), nil, map[string]any{"timeout": 120})
		default:
			bodies[i] = ffmpegJob(fmt.Sprintf("ffmpeg -f lavfi -i testsrc=duration=1:size=64x48:rate=10 -frames:v 5 -pix_fmt yuv420p out%d.mp4", i), nil, nil)
		}
	}
	return bodies
}

// makeClip is a short MP4 made with FFmpeg, to upload.
func makeClip(t *testing.T) []byte {
	t.Helper()
	dir := t.TempDir()
	if err := ffmpegBare(context.Background(), dir, "-f", "lavfi", "-i", "testsrc=duration=1:size=64x48:rate=10", "-pix_fmt", "yuv420p", "clip.mp4"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "clip.mp4"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func listBucket(t *testing.T, s *s3test.Server) map[string]bool {
	t.Helper()
	keys := map[string]bool{}
	p := s3.NewListObjectsV2Paginator(s.Client(), &s3.ListObjectsV2Input{Bucket: aws.String(s.Bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("list bucket: %v", err)
		}
		for _, o := range page.Contents {
			keys[aws.ToString(o.Key)] = true
		}
	}
	return keys
}

// completionReceiver counts the distinct job.completed deliveries per job.
type completionReceiver struct {
	srv      *httptest.Server
	certFile string
	mu       sync.Mutex
	got      map[string]map[string]bool // job ID → delivery IDs
}

func newCompletionReceiver(t *testing.T) *completionReceiver {
	t.Helper()
	r := &completionReceiver{got: map[string]map[string]bool{}}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var ev struct {
			Event string `json:"event"`
			JobID string `json:"jobId"`
		}
		if err := json.NewDecoder(req.Body).Decode(&ev); err != nil || ev.Event != "job.completed" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		if r.got[ev.JobID] == nil {
			r.got[ev.JobID] = map[string]bool{}
		}
		r.got[ev.JobID][req.Header.Get("X-Service-Delivery")] = true
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	r.certFile = filepath.Join(t.TempDir(), "receiver.pem")
	if err := os.WriteFile(r.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *completionReceiver) deliveries(jobID string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got[jobID])
}

// balancer is the load balancer a deployment puts in front of its API replicas: round robin
// over the backends, moving on to the next when one refuses the connection (the request body
// is held so that it can be sent again; the tests' bodies are small).
type balancer struct {
	srv  *httptest.Server
	mu   sync.Mutex
	to   []*url.URL
	next int
	rt   http.RoundTripper
}

func newBalancer(t *testing.T) *balancer {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 32
	b := &balancer{rt: tr}
	b.srv = httptest.NewServer(b)
	t.Cleanup(func() {
		b.srv.Close()
		tr.CloseIdleConnections()
	})
	return b
}

func (b *balancer) URL() string { return b.srv.URL }

func (b *balancer) set(backends ...string) {
	var to []*url.URL
	for _, s := range backends {
		u, _ := url.Parse(s)
		to = append(to, u)
	}
	b.mu.Lock()
	b.to = to
	b.mu.Unlock()
}

func (b *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	b.mu.Lock()
	to := append([]*url.URL(nil), b.to...)
	first := b.next
	b.next++
	b.mu.Unlock()
	for i := range to {
		u := to[(first+i)%len(to)]
		out := r.Clone(r.Context())
		out.RequestURI = ""
		out.URL.Scheme, out.URL.Host, out.Host = u.Scheme, u.Host, u.Host
		out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		resp, err := b.rt.RoundTrip(out)
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			continue
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
		_ = resp.Body.Close()
		return
	}
	http.Error(w, "no backend answers", http.StatusBadGateway)
}
