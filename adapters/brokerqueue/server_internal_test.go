package brokerqueue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/adapters/sqlstore/pgtest"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/jobtype/ffmpegjob"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service/servicetest"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

const testToken = "worker-token-of-the-test"

// spyQueue is the control plane's queue, counting the calls that reach it, and failing them
// with fail when it is set (a store that breaks, which the in-memory one never does).
type spyQueue struct {
	workqueue.Queue
	calls atomic.Int64
	fail  error
}

func (q *spyQueue) Claim(ctx context.Context, p workqueue.ClaimParams) ([]workqueue.Assignment, error) {
	q.calls.Add(1)
	if q.fail != nil {
		return nil, q.fail
	}
	return q.Queue.Claim(ctx, p)
}

func (q *spyQueue) Heartbeat(ctx context.Context, b workqueue.Beat) (workqueue.Ack, error) {
	q.calls.Add(1)
	if q.fail != nil {
		return workqueue.Ack{}, q.fail
	}
	return q.Queue.Heartbeat(ctx, b)
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type serverBundle struct {
	b       Broker
	queue   *spyQueue
	log     *syncBuffer
	replies <-chan *message.Message
}

// setupServer runs a Server over an in-memory control plane on a GoChannel, and listens to the
// replies to worker "w1".
func setupServer(t *testing.T, fail error) serverBundle {
	t.Helper()
	types, err := jobtype.NewRegistry(ffmpegjob.Type{})
	if err != nil {
		t.Fatal(err)
	}
	h := servicetest.New(t, servicetest.Options{Types: types})
	b := NewGoChannel()
	log := &syncBuffer{}
	queue := &spyQueue{Queue: h.Runs, fail: fail}
	s, err := NewServer(b, SharedToken(queue, testToken), slog.New(slog.NewTextHandler(log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- s.Run(ctx) }()
	<-s.Ready()
	replies, err := b.replies(ctx, "w1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-ran; err != nil {
			t.Error(err)
		}
	})
	return serverBundle{b: b, queue: queue, log: log, replies: replies}
}

// raw is a call message as a worker (or anyone on the broker) might publish it.
func raw(op, worker, token, deadline, payload string) *message.Message {
	m := message.NewMessage(watermill.NewUUID(), []byte(payload))
	for k, v := range map[string]string{metaOp: op, metaWorker: worker, metaToken: token, metaDeadline: deadline} {
		if v != "" {
			m.Metadata.Set(k, v)
		}
	}
	return m
}

func soon() string { return time.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano) }

// Calls that are not right are answered with a clear error, and never reach the queue.
func TestServerRefusesBadCalls(t *testing.T) {
	t.Parallel()
	claim := `{"class":"cpu","max":1}`
	tests := []struct {
		name, topic, op, token, deadline, payload string
		code                                      problem.Code
		message                                   string
	}{
		{"wrong token", "claims.cpu", opClaim, "nope", soon(), claim, problem.CodeUnauthorized, "worker credential"},
		{"no token", "claims.cpu", opClaim, "", soon(), claim, problem.CodeUnauthorized, "worker credential"},
		{"no deadline", "claims.cpu", opClaim, testToken, "", claim, problem.CodeValidation, "deadline"},
		{"deadline not a time", "claims.cpu", opClaim, testToken, "tomorrow", claim, problem.CodeValidation, `"tomorrow"`},
		{"unknown op", "claims.cpu", "steal", testToken, soon(), claim, problem.CodeValidation, `"steal"`},
		{"body not JSON", "claims.cpu", opClaim, testToken, soon(), `{"class":`, problem.CodeValidation, "body"},
		{"unknown field", "claims.cpu", opClaim, testToken, soon(), `{"class":"cpu","max":1,"all":true}`, problem.CodeValidation, `"all"`},
		{"trailing data", "claims.cpu", opClaim, testToken, soon(), claim + `{}`, problem.CodeValidation, "after its JSON"},
		{"class of another topic", "claims.gpu", opClaim, testToken, soon(), claim, problem.CodeValidation, "claims.gpu"},
		{"claim on the leases topic", topicLeases, opClaim, testToken, soon(), claim, problem.CodeValidation, "leases"},
		{"max zero", "claims.cpu", opClaim, testToken, soon(), `{"class":"cpu","max":0}`, problem.CodeValidation, "max 0"},
		{"max too large", "claims.cpu", opClaim, testToken, soon(), `{"class":"cpu","max":65}`, problem.CodeValidation, "max 65"},
		{"heartbeat on a claims topic", "claims.cpu", opHeartbeat, testToken, soon(), `{"lease":{"jobId":"j"}}`, problem.CodeValidation, "claims.cpu"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sb := setupServer(t, nil)
			if err := sb.b.publish(tt.topic, raw(tt.op, "w1", tt.token, tt.deadline, tt.payload)); err != nil {
				t.Fatal(err)
			}
			r := readReply(t, sb.replies)
			if r.Error == nil || r.Error.Code != tt.code || !strings.Contains(r.Error.Message, tt.message) {
				t.Fatalf("reply %+v, want %s naming %q", r.Error, tt.code, tt.message)
			}
			if n := sb.queue.calls.Load(); n != 0 {
				t.Fatalf("%d calls reached the queue", n)
			}
		})
	}
}

// Calls that no one waits for, or that name no worker to answer, are dropped and logged.
func TestServerDropsCallsNoOneWaitsFor(t *testing.T) {
	t.Parallel()
	past := time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano)
	tests := []struct{ name, worker, deadline, log string }{
		{"deadline passed", "w1", past, "deadline passed"},
		{"no worker", "", soon(), "no valid worker"},
		{"worker that is no subject token", "w1.>", soon(), "no valid worker"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sb := setupServer(t, nil)
			if err := sb.b.publish("claims.cpu", raw(opClaim, tt.worker, testToken, tt.deadline, `{"class":"cpu","max":1}`)); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(sb.log.String(), tt.log) {
				if time.Now().After(deadline) {
					t.Fatalf("not logged %q:\n%s", tt.log, sb.log.String())
				}
				time.Sleep(5 * time.Millisecond) // the poll interval of a wait on the log line
			}
			select {
			case m := <-sb.replies:
				t.Fatalf("a dropped call was answered: %s", m.Payload)
			default:
			}
			if n := sb.queue.calls.Load(); n != 0 {
				t.Fatalf("%d calls reached the queue", n)
			}
		})
	}
}

// A failure of the control plane is logged in full and reaches the worker as a generic error;
// an error the core gives with a code passes through.
func TestServerMapsQueueErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		fail    error
		code    problem.Code
		message string
	}{
		{"internal", errors.New("database on fire"), problem.CodeInternal, "call again"},
		{"coded", problem.Reject(problem.CodeUnavailable, "draining"), problem.CodeUnavailable, "draining"},
		{"lease", workqueue.ErrLeaseRefused, problem.CodeConflict, "lease refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sb := setupServer(t, tt.fail)
			if err := sb.b.publish(topicLeases, raw(opHeartbeat, "w1", testToken, soon(), `{"lease":{"jobId":"j","attempt":1,"token":"t"}}`)); err != nil {
				t.Fatal(err)
			}
			r := readReply(t, sb.replies)
			if r.Error == nil || r.Error.Code != tt.code || !strings.Contains(r.Error.Message, tt.message) {
				t.Fatalf("reply %+v, want %s naming %q", r.Error, tt.code, tt.message)
			}
			if strings.Contains(r.Error.Message, "fire") {
				t.Fatalf("an internal cause reached the worker: %q", r.Error.Message)
			}
			if tt.code == problem.CodeInternal && !strings.Contains(sb.log.String(), "database on fire") {
				t.Fatalf("the cause is not logged:\n%s", sb.log.String())
			}
		})
	}
}

func readReply(t *testing.T, replies <-chan *message.Message) replyBody {
	t.Helper()
	select {
	case m := <-replies:
		m.Ack()
		var r replyBody
		if err := json.Unmarshal(m.Payload, &r); err != nil {
			t.Fatalf("reply %s: %v", m.Payload, err)
		}
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no reply")
	}
	return replyBody{}
}

// Pruning empties the tables of what is past the retention, and a worker whose offset went
// with it still reads the replies addressed to it afterwards, and only those.
func TestPostgresPrune(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t, "brokerqueue_")
	ctx := context.Background()
	br, err := DialPostgres(ctx, PostgresConfig{URL: dsn, Retention: time.Nanosecond}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	b := br.(*pgBroker)
	t.Cleanup(func() { _ = b.close() })
	subCtx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	replies, err := b.replies(subCtx, "w1")
	if err != nil {
		t.Fatal(err)
	}
	send := func(worker, id string) {
		t.Helper()
		m, err := newReply(id, worker, id, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.publish(topicRepliesPrefix+worker, m); err != nil {
			t.Fatal(err)
		}
	}
	call, err := newCall(opClaim, "w1", testToken, time.Now().Add(time.Minute), claimBody{Class: job.ClassCPU, Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.publish(claimsTopic(job.ClassCPU), call); err != nil {
		t.Fatal(err)
	}
	send("w1", "first")
	if got := readCorrelation(t, replies); got != "first" {
		t.Fatalf("got reply %q", got)
	}
	// The subscriber records its offset after the ack, in its own transaction.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var n int
		if err := b.db.QueryRowContext(ctx, "SELECT count(*) FROM "+pgOffsetsTable(topicRepliesPrefix)+" WHERE offset_acked > 0").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the worker's offset was never recorded")
		}
	}
	if err := b.prune(ctx); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, table := range []string{pgTable(claimsTopic(job.ClassCPU)), pgTable(topicRepliesPrefix), pgOffsetsTable(topicRepliesPrefix)} {
		var n int
		if err := b.db.QueryRowContext(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		counts[table] = n
	}
	if diff := cmp.Diff(map[string]int{pgTable(claimsTopic(job.ClassCPU)): 0, pgTable(topicRepliesPrefix): 0, pgOffsetsTable(topicRepliesPrefix): 0}, counts); diff != "" {
		t.Fatalf("rows left after pruning (-want +got):\n%s", diff)
	}
	send("w2", "not mine")
	send("w1", "second")
	if got := readCorrelation(t, replies); got != "second" {
		t.Fatalf("after pruning, got reply %q", got)
	}
}

func readCorrelation(t *testing.T, replies <-chan *message.Message) string {
	t.Helper()
	select {
	case m := <-replies:
		m.Ack()
		return m.Metadata.Get(metaCorrelation)
	case <-time.After(10 * time.Second):
		t.Fatal("no reply")
	}
	return ""
}
