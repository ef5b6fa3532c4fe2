package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mediajobs/mediajobs/adapters/blobs3/s3test"
)

// deliveryEvent is the body of job.delivered and job.delivery_failed.
type deliveryEvent struct {
	Event    string `json:"event"`
	JobID    string `json:"jobId"`
	Delivery struct {
		Status      string  `json:"status"`
		Destination string  `json:"destination"`
		Path        string  `json:"path"`
		Error       *string `json:"error"`
		Files       []struct {
			Name  string `json:"name"`
			Key   string `json:"key"`
			Size  int64  `json:"size"`
			ETag  string `json:"etag"`
			Error string `json:"error"`
		} `json:"files"`
	} `json:"delivery"`
}

// TestDeliveryToOwnBucket is delivery to an account's own bucket through the real binary, on
// both stores, with versitygw as the account's S3 service and a second bucket as the
// destination: wrong credentials are refused at registration naming them; a registered
// destination receives a job's outputs under the path template's keys (listed and compared
// byte for byte) with job.delivered carrying each key, size and ETag; the bucket deleted after
// registration gives job.delivery_failed once the retries are spent, the job still complete
// and charged once; POST /jobs/{id}/deliver after the bucket is back delivers. The secret is in
// no response, no event and not in the server's log.
func TestDeliveryToOwnBucket(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s3srv := s3test.Start(t)
		s3c := s3srv.Client()
		bucket := "delivered-" + randomHex(4)
		if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Fatal(err)
		}
		recv := newWebhookReceiver(t)
		key := make([]byte, 32)
		_, _ = rand.Read(key)
		s := startServer(t, serverOpts{Backend: b, Env: map[string]string{
			"MEDIAJOBS_ALLOW_PRIVATE_NETWORKS": "127.0.0.0/8", "SSL_CERT_FILE": recv.certFile,
			"MEDIAJOBS_SECRET_KEYS": "k1:" + hex.EncodeToString(key), "MEDIAJOBS_DELIVERY_RETRY_DELAYS": "100ms,200ms"}})
		c := newClient(t, s, createAccount(t, s, "free").APIKey)

		var bodies [][]byte // every answer and event, searched for the secret at the end
		call := func(method, target string, body any) response {
			r := c.do(method, target, body, nil)
			bodies = append(bodies, r.Body)
			return r
		}
		var ep struct {
			Secret string `json:"secret"`
		}
		call(http.MethodPost, "/webhook-endpoints", map[string]any{"name": "deliveries", "url": recv.srv.URL + "/hooks",
			"subscribedEvents": []string{"job.delivered", "job.delivery_failed"}}).decode(t, http.StatusCreated, &ep)
		nextEvent := func(want, jobID string) deliveryEvent {
			t.Helper()
			got := recv.next(t, ep.Secret, want)
			bodies = append(bodies, got.body)
			var ev deliveryEvent
			if err := json.Unmarshal(got.body, &ev); err != nil {
				t.Fatal(err)
			}
			if ev.Event != want || ev.JobID != jobID || got.header.Get("X-Service-Event") != want {
				t.Fatalf("event %s; want %s of %s", got.body, want, jobID)
			}
			return ev
		}

		reg := map[string]any{"name": "own", "endpoint": s3srv.Endpoint, "bucket": bucket, "region": s3test.Region,
			"prefix": "renders", "pathStyle": true, "accessKeyId": s3srv.AccessKey, "secretAccessKey": "not-" + s3srv.SecretKey}
		e := call(http.MethodPost, "/destinations", reg).errorOf(t, http.StatusBadRequest)
		if e.Code != "VALIDATION_ERROR" || !strings.Contains(e.Message, "accessKeyId/secretAccessKey") {
			t.Fatalf("wrong secret: %+v; want VALIDATION_ERROR naming the credentials", e)
		}
		reg["secretAccessKey"] = s3srv.SecretKey
		var dst struct {
			ID          string `json:"id"`
			AccessKeyID string `json:"accessKeyId"`
		}
		call(http.MethodPost, "/destinations", reg).decode(t, http.StatusCreated, &dst)
		if dst.AccessKeyID == s3srv.AccessKey || !strings.HasSuffix(dst.AccessKeyID, s3srv.AccessKey[len(s3srv.AccessKey)-4:]) {
			t.Fatalf("accessKeyId %q: want it masked to its last four characters", dst.AccessKeyID)
		}
		call(http.MethodGet, "/destinations", nil).decode(t, http.StatusOK, nil)
		call(http.MethodGet, "/destinations/"+dst.ID, nil).decode(t, http.StatusOK, nil)

		job := ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=32x32:rate=5 -frames:v 1 one.png -frames:v 1 two.bmp", nil, nil)
		job["destination"] = map[string]any{"id": dst.ID, "path": "{job_id}/{name}"}

		// Delivered: the bucket holds each output under its key, byte for byte.
		j := c.complete(job)
		ev := nextEvent("job.delivered", j.ID)
		if ev.Delivery.Status != "delivered" || ev.Delivery.Destination != dst.ID || len(ev.Delivery.Files) != 2 {
			t.Fatalf("job.delivered %+v: want both files delivered to %s", ev.Delivery, dst.ID)
		}
		listed := map[string]s3ObjectInfo{}
		for _, o := range bucketObjects(t, s3c, bucket) {
			listed[o.key] = o
		}
		for _, f := range ev.Delivery.Files {
			if want := "renders/" + j.ID + "/" + f.Name; f.Key != want {
				t.Errorf("file %s delivered under %q; want %q", f.Name, f.Key, want)
			}
			o, ok := listed[f.Key]
			if !ok || o.size != f.Size || o.etag != f.ETag || f.ETag == "" {
				t.Errorf("event file %+v; the bucket holds %+v", f, o)
			}
			var url string
			for _, out := range j.Output.Files {
				if out.Path == f.Name {
					url = out.URL
				}
			}
			if got := getObject(t, s3c, bucket, f.Key); url == "" || !bytes.Equal(got, c.mustGet(url)) {
				t.Errorf("object %s: its bytes are not the job's output %s", f.Key, f.Name)
			}
		}
		if len(listed) != 2 {
			t.Errorf("the bucket holds %d objects; want the job's two (and no left test object)", len(listed))
		}
		waitDelivery(t, call, j.ID, "delivered")

		// The bucket deleted: the delivery fails after its retries; the job stays complete and
		// is charged once.
		emptyBucket(t, s3c, bucket)
		if _, err := s3c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Fatal(err)
		}
		failed := c.complete(job)
		ev = nextEvent("job.delivery_failed", failed.ID)
		if ev.Delivery.Status != "failed" || ev.Delivery.Error == nil || !strings.Contains(*ev.Delivery.Error, "not delivered") {
			t.Fatalf("job.delivery_failed %+v: want failed with its error", ev.Delivery)
		}
		if got := c.job(failed.ID); got.Status != "complete" || got.Cost == nil || got.Cost.Amount != failed.Cost.Amount {
			t.Fatalf("after the failed delivery the job is %s costing %+v; want complete at %+v", got.Status, got.Cost, failed.Cost)
		}
		waitDelivery(t, call, failed.ID, "failed")

		// The bucket back, POST /jobs/{id}/deliver delivers.
		if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Fatal(err)
		}
		call(http.MethodPost, "/jobs/"+failed.ID+"/deliver", nil).decode(t, http.StatusAccepted, nil)
		ev = nextEvent("job.delivered", failed.ID)
		var keys []string
		for _, o := range bucketObjects(t, s3c, bucket) {
			keys = append(keys, o.key)
		}
		want := []string{"renders/" + failed.ID + "/one.png", "renders/" + failed.ID + "/two.bmp"}
		if ev.Delivery.Status != "delivered" || !slices.Equal(keys, want) {
			t.Fatalf("redelivery: %+v, bucket %v; want %v", ev.Delivery, keys, want)
		}
		for _, id := range []string{j.ID, failed.ID} {
			charges := 0
			for _, e := range c.ledger(t) {
				if e.Kind == "charge" && e.JobID == id {
					charges++
				}
			}
			if charges != 1 {
				t.Errorf("job %s has %d charges in the ledger; want one", id, charges)
			}
		}
		// The destination in use by no waiting delivery is deleted (once the redelivery's record,
		// written just after its event, is saved).
		waitDelivery(t, call, failed.ID, "delivered")
		call(http.MethodDelete, "/destinations/"+dst.ID, nil).decode(t, http.StatusNoContent, nil)

		for _, body := range bodies {
			if bytes.Contains(body, []byte(s3srv.SecretKey)) {
				t.Fatalf("an answer or event shows the secret: %s", body)
			}
		}
		if strings.Contains(s.log.String(), s3srv.SecretKey) {
			t.Fatal("the server log shows the secret")
		}
	})
}

// jobDelivery is the delivery status GET /jobs/{id} shows.
func jobDelivery(t *testing.T, call func(method, target string, body any) response, id string) string {
	t.Helper()
	var v struct {
		Delivery *struct {
			Status string `json:"status"`
		} `json:"delivery"`
	}
	call(http.MethodGet, "/jobs/"+id, nil).decode(t, http.StatusOK, &v)
	if v.Delivery == nil {
		return ""
	}
	return v.Delivery.Status
}

// waitDelivery waits until GET /jobs/{id} shows the delivery status want. The delivery's event
// is written before its record, so that a crash between them delivers the event still: a
// client that has the webhook may read the record a moment before it is saved.
func waitDelivery(t *testing.T, call func(method, target string, body any) response, id, want string) {
	t.Helper()
	got := ""
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) { // the poll interval of a wait on that state
		if got = jobDelivery(t, call, id); got == want {
			return
		}
	}
	t.Errorf("GET /jobs/%s delivery status %q; want %s", id, got, want)
}

type s3ObjectInfo struct {
	key  string
	size int64
	etag string
}

func bucketObjects(t *testing.T, c *s3.Client, bucket string) []s3ObjectInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	var objs []s3ObjectInfo
	for _, o := range out.Contents {
		objs = append(objs, s3ObjectInfo{key: aws.ToString(o.Key), size: aws.ToInt64(o.Size), etag: aws.ToString(o.ETag)})
	}
	return objs
}

func getObject(t *testing.T, c *s3.Client, bucket, key string) []byte {
	t.Helper()
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func emptyBucket(t *testing.T, c *s3.Client, bucket string) {
	t.Helper()
	for _, o := range bucketObjects(t, c, bucket) {
		if _, err := c.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(o.key)}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDestinationsOverCLI: mediajobs destinations add (refusing wrong credentials and missing
// flags, the secret read from the environment), list and remove, and mediajobs run
// --destination --path, whose outputs land in the bucket under the template's key; the secret
// is in nothing the CLI prints.
func TestDestinationsOverCLI(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		s3srv := s3test.Start(t)
		s := startServer(t, serverOpts{Backend: b, Env: map[string]string{"MEDIAJOBS_ALLOW_PRIVATE_NETWORKS": "127.0.0.0/8"}})
		acct := createAccount(t, s, "free")
		c := newClient(t, s, acct.APIKey)
		env := []string{"MEDIAJOBS_SERVER=" + s.Base, "MEDIAJOBS_API_KEY=" + acct.APIKey}
		var printed []string
		cli := func(secret string, args ...string) cliResult {
			t.Helper()
			e := env
			if secret != "" {
				e = append(append([]string(nil), env...), "MEDIAJOBS_DESTINATION_SECRET="+secret)
			}
			r := mediajobs(t, t.TempDir(), e, args...)
			printed = append(printed, r.stdout, r.stderr)
			return r
		}
		add := []string{"destinations", "add", "--name", "own", "--endpoint", s3srv.Endpoint, "--bucket", s3srv.Bucket,
			"--region", s3test.Region, "--path-style", "--access-key-id", s3srv.AccessKey}

		if r := cli("not-"+s3srv.SecretKey, add...); r.code != 1 || !strings.Contains(r.stderr, "accessKeyId/secretAccessKey") {
			t.Fatalf("add with a wrong secret: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		if r := cli(s3srv.SecretKey, add[:len(add)-2]...); r.code != 2 || !strings.Contains(r.stderr, "--access-key-id is required") {
			t.Fatalf("add without --access-key-id: exit %d\n%s", r.code, r.stderr)
		}
		r := cli(s3srv.SecretKey, add...)
		id, _, _ := strings.Cut(r.stdout, "\n")
		if r.code != 0 || !strings.HasPrefix(id, "dst_") {
			t.Fatalf("add: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		masked := strings.Repeat("*", len(s3srv.AccessKey)-4) + s3srv.AccessKey[len(s3srv.AccessKey)-4:]
		if r := cli("", "destinations", "list"); r.code != 0 || !strings.Contains(r.stdout, id) || !strings.Contains(r.stdout, masked) {
			t.Fatalf("list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}

		if r := cli("", "run", "--path", "{name}", "ffmpeg -f lavfi -i testsrc=duration=1 out.png"); r.code != 2 || !strings.Contains(r.stderr, "--destination") {
			t.Fatalf("run --path without --destination: exit %d\n%s", r.code, r.stderr)
		}
		r = cli("", "run", "--destination", id, "--path", "cli/{job_id}.{ext}/{name}",
			"ffmpeg -f lavfi -i testsrc=duration=1:size=32x32:rate=5 -frames:v 1 out.png")
		jobID, _, _ := strings.Cut(r.stderr, " submitted")
		if r.code != 0 || !strings.HasPrefix(jobID, "job_") {
			t.Fatalf("run --destination: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		for deadline := time.Now().Add(30 * time.Second); ; {
			call := func(method, target string, body any) response { return c.do(method, target, body, nil) }
			if st := jobDelivery(t, call, jobID); st == "delivered" {
				break
			} else if st == "failed" || time.Now().After(deadline) {
				t.Fatalf("job %s delivery %q; want delivered", jobID, st)
			}
			time.Sleep(100 * time.Millisecond) // the poll interval of a wait on the delivery
		}
		objs := bucketObjects(t, s3srv.Client(), s3srv.Bucket)
		if len(objs) != 1 || objs[0].key != "cli/"+jobID+".png/out.png" {
			t.Fatalf("bucket holds %+v; want cli/%s.png/out.png", objs, jobID)
		}

		if r := cli("", "destinations", "remove", id); r.code != 0 {
			t.Fatalf("remove: exit %d\n%s", r.code, r.stderr)
		}
		if r := cli("", "destinations", "list"); r.code != 0 || !strings.Contains(r.stdout, "no destinations") {
			t.Fatalf("list after remove: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		for _, out := range printed {
			if strings.Contains(out, s3srv.SecretKey) {
				t.Fatalf("the CLI printed the secret: %s", out)
			}
		}
	})
}
