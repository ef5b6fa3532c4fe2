package integration

import (
	"bytes"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/adapters/sqlstore/pgtest"

	"github.com/mediajobs/mediajobs/adapters/testenv"
)

// ledgerEntry is one entry of GET /account/ledger.
type ledgerEntry struct {
	Kind   string `json:"kind"`
	Amount cost   `json:"amount"`
	JobID  string `json:"jobId"`
	Note   string `json:"note"`
}

func (c *client) ledger(t *testing.T) []ledgerEntry {
	t.Helper()
	var entries []ledgerEntry
	c.do(http.MethodGet, "/account/ledger?limit=100", nil, nil).decode(t, http.StatusOK, &entries)
	return entries
}

// chargeOf waits briefly for a job's charge to reach the ledger; nil when none comes.
func (c *client) chargeOf(t *testing.T, jobID string, wait time.Duration) *ledgerEntry {
	t.Helper()
	for deadline := time.Now().Add(wait); ; {
		for _, e := range c.ledger(t) {
			if e.Kind == "charge" && e.JobID == jobID {
				return &e
			}
		}
		if time.Now().After(deadline) {
			return nil
		}
		time.Sleep(100 * time.Millisecond) // the poll interval of a wait on that state
	}
}

// credits runs `mediajobs credits ...` against the server's store.
func credits(t *testing.T, s *server, args ...string) {
	t.Helper()
	cmd := exec.Command(binary, append(append([]string{"credits"}, args...), "--data", s.Data)...)
	cmd.Env = s.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if out, err := cmd.Output(); err != nil {
		t.Fatalf("mediajobs credits %v: %v\n%s%s", args, err, out, stderr.String())
	}
}

// rawGet sends one authenticated GET without the test client's retry on 429.
func rawGet(t *testing.T, base, key, path string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp
}

// spendMinute checks that a Free account gets 30 requests in a minute and the 31st is refused
// with Retry-After, the rest of the minute of the first, alternating between the given servers.
func spendMinute(t *testing.T, key string, bases ...string) {
	t.Helper()
	first := time.Now()
	for i := range 30 {
		resp := rawGet(t, bases[i%len(bases)], key, "/account")
		if resp.StatusCode != http.StatusOK || resp.Header.Get("RateLimit-Limit") != "30" ||
			resp.Header.Get("RateLimit-Remaining") != strconv.Itoa(29-i) {
			t.Fatalf("request %d: status %d, RateLimit-Limit %q, RateLimit-Remaining %q", i+1, resp.StatusCode,
				resp.Header.Get("RateLimit-Limit"), resp.Header.Get("RateLimit-Remaining"))
		}
	}
	resp := rawGet(t, bases[30%len(bases)], key, "/account")
	ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if least := 60 - int(time.Since(first)/time.Second) - 1; resp.StatusCode != http.StatusTooManyRequests || err != nil ||
		ra < least || ra > 60 || resp.Header.Get("RateLimit-Remaining") != "0" {
		t.Fatalf("31st request: status %d, Retry-After %q, headers %v", resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header)
	}
}

func TestBilling(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		srv := startServer(t, serverOpts{Backend: b})
		proAcc := createAccount(t, srv, "pro")
		pro := newClient(t, srv, proAcc.APIKey)

		t.Run("free GPU job is PLAN_LIMIT", func(t *testing.T) {
			t.Parallel()
			free := newClient(t, srv, createAccount(t, srv, "free").APIKey)
			body := ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1 -c:v h264_nvenc out.mp4", nil, nil)
			if e := free.do(http.MethodPost, "/jobs", body, nil).errorOf(t, http.StatusForbidden); e.Code != "PLAN_LIMIT" {
				t.Fatalf("free GPU job: %+v, want PLAN_LIMIT", e)
			}
			forced := ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1 out.mp4", nil, map[string]any{"compute": "gpu"})
			if e := free.do(http.MethodPost, "/jobs", forced, nil).errorOf(t, http.StatusForbidden); e.Code != "PLAN_LIMIT" {
				t.Fatalf("free forced GPU job: %+v, want PLAN_LIMIT", e)
			}
		})

		t.Run("31st request in a minute on Free is 429", func(t *testing.T) {
			t.Parallel()
			spendMinute(t, createAccount(t, srv, "free").APIKey, srv.Base)
		})

		t.Run("complete job shows its cost", func(t *testing.T) {
			t.Parallel()
			j := pro.complete(ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=32x32:rate=5 -frames:v 1 ok.png", nil, nil))
			if j.Cost == nil || j.Cost.Amount < 1 || j.Cost.Currency != "credits" || j.Cost.Formatted != strconv.FormatInt(j.Cost.Amount, 10)+map[bool]string{true: " credit", false: " credits"}[j.Cost.Amount == 1] {
				t.Fatalf("complete job cost %+v", j.Cost)
			}
			// The charge commits with the job's end: it is in the ledger when the client sees it.
			if e := pro.chargeOf(t, j.ID, 0); e == nil || e.Amount.Amount != -j.Cost.Amount {
				t.Fatalf("ledger charge of %s as the job completed: %+v, want -%d", j.ID, e, j.Cost.Amount)
			}
		})

		t.Run("failed job is billed", func(t *testing.T) {
			t.Parallel()
			id := pro.submit(ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=33x33:rate=5 -c:v libx264 -pix_fmt yuv420p odd.mp4", nil, nil))
			j := pro.waitTerminal(id)
			if j.Status != "failed" || j.Error == nil || j.Error.Code != "RUNNER_ERROR" {
				t.Fatalf("job %s: %s %s, want failed RUNNER_ERROR", id, j.Status, errorText(j))
			}
			if e := pro.chargeOf(t, id, 5*time.Second); e == nil || e.Amount.Amount > -1 {
				t.Fatalf("failed job %s charge %+v; want at least 1 credit", id, e)
			}
		})

		t.Run("timed-out job is not billed", func(t *testing.T) {
			t.Parallel()
			marker := "billing_timeout_" + randomHex(6) + ".mp4"
			id := pro.submit(ffmpegJob(longCommand(marker), nil, map[string]any{"timeout": 1}))
			j := pro.waitTerminal(id)
			if j.Status != "failed" || j.Error == nil || j.Error.Code != "RUNNER_TIMEOUT" {
				t.Fatalf("job %s: %s %s, want failed RUNNER_TIMEOUT", id, j.Status, errorText(j))
			}
			if j.Cost == nil || j.Cost.Amount != 0 {
				t.Errorf("timed-out job cost %+v; want 0 credits", j.Cost)
			}
			if e := pro.chargeOf(t, id, time.Second); e != nil {
				t.Errorf("timed-out job charged: %+v", *e)
			}
			waitProcesses(t, marker, false)
		})

		t.Run("a balance under the minimum charge is 402 until credits arrive", func(t *testing.T) {
			t.Parallel()
			acc := createAccount(t, srv, "free")
			c := newClient(t, srv, acc.APIKey)
			var a struct {
				Balance cost `json:"balance"`
			}
			c.do(http.MethodGet, "/account", nil, nil).decode(t, http.StatusOK, &a)
			credits(t, srv, "adjust", "--account", acc.AccountID, "--amount", strconv.FormatInt(-a.Balance.Amount, 10), "--note", "spent")
			body := ffmpegJob("ffmpeg -f lavfi -i testsrc=duration=1:size=160x120:rate=10 -frames:v 5 out.mp4", nil, nil)
			if e := c.do(http.MethodPost, "/jobs", body, nil).errorOf(t, http.StatusPaymentRequired); e.Code != "INSUFFICIENT_CREDITS" {
				t.Fatalf("submit on an empty balance: %+v, want INSUFFICIENT_CREDITS", e)
			}
			// Another process adds credits: the next request's key lookup reads the new balance.
			credits(t, srv, "grant", "--account", acc.AccountID, "--amount", "1", "--note", "top-up")
			c.submit(body)
		})

		t.Run("Pro pack purchase gets its bonus", func(t *testing.T) {
			t.Parallel()
			acc := createAccount(t, srv, "pro")
			c := newClient(t, srv, acc.APIKey)
			credits(t, srv, "purchase", "--account", acc.AccountID, "--pack", "small", "--ref", "order-1")
			credits(t, srv, "purchase", "--account", acc.AccountID, "--pack", "small", "--ref", "order-1") // idempotent
			var kinds []string
			var total int64
			for _, e := range c.ledger(t) {
				kinds = append(kinds, e.Kind+":"+strconv.FormatInt(e.Amount.Amount, 10))
				total += e.Amount.Amount
			}
			if strings.Join(kinds, " ") != "bonus:1000 purchase:5000 monthly:20000" {
				t.Fatalf("ledger %v; want the monthly inclusion, the pack and its 20%% bonus once", kinds)
			}
			var a struct {
				Balance cost `json:"balance"`
			}
			c.do(http.MethodGet, "/account", nil, nil).decode(t, http.StatusOK, &a)
			if a.Balance.Amount != total {
				t.Fatalf("balance %d; ledger sums to %d", a.Balance.Amount, total)
			}
		})
	})
}

// TestRateLimitSharedByReplicas runs two API processes on one PostgreSQL schema and one Redis:
// a Free account's 30 requests a minute are one budget across both.
func TestRateLimitSharedByReplicas(t *testing.T) {
	t.Parallel()
	const redisURL = "redis://127.0.0.1:6379/0"
	if c, err := net.DialTimeout("tcp", "127.0.0.1:6379", time.Second); err != nil {
		testenv.Missing(t, "Redis on 127.0.0.1:6379 (scripts/services.sh starts it)", err)
	} else {
		_ = c.Close()
	}
	pgtest.Require(t)
	first := startServer(t, serverOpts{Backend: postgresBackend, Env: map[string]string{"MEDIAJOBS_REDIS_URL": redisURL, "MEDIAJOBS_RUNNER": "false"}})
	var dsn string
	for _, kv := range first.env {
		if v, ok := strings.CutPrefix(kv, "MEDIAJOBS_DATABASE_URL="); ok {
			dsn = v
		}
	}
	second := startServer(t, serverOpts{Backend: sqliteBackend, Env: map[string]string{"MEDIAJOBS_REDIS_URL": redisURL,
		"MEDIAJOBS_RUNNER": "false", "MEDIAJOBS_DATABASE_URL": dsn}})
	acc := createAccount(t, first, "free")
	var got struct {
		ID string `json:"id"`
	}
	newClient(t, second, acc.APIKey).do(http.MethodGet, "/account", nil, nil).decode(t, http.StatusOK, &got)
	if got.ID != acc.AccountID {
		t.Fatalf("the second server sees account %q, want %q: they do not share the store", got.ID, acc.AccountID)
	}
	// That request spent one of the 30; a new account starts whole.
	spendMinute(t, createAccount(t, first, "free").APIKey, first.Base, second.Base)
}
