// Package bustest is the shared test suite of the bus port: every Pub/Sub the service runs on
// passes it, in the style of Watermill's tests.TestPubSub.
//
// A new Pub/Sub's test calls TestBus once, with the Features it has and a Constructor that opens
// a bus on it:
//
//	bustest.TestBus(t, bustest.Features{Shared: true}, func(t *testing.T) *bus.Bus {
//		b := open(t)
//		t.Cleanup(func() { _ = b.Close() })
//		return b
//	})
//
// Each test of the suite is an exported function too (TestFanOut, …), so a failure names the
// function to read, and -run selects it by that name.
package bustest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mediajobs/mediajobs/adapters/bus"
	"github.com/mediajobs/mediajobs/core/porttest"
)

// Features says what a Pub/Sub can do, so the suite skips what does not apply.
type Features struct {
	// Shared: buses from separate newBus calls reach one broker, as replicas in separate
	// processes do. False for GoChannel, where each bus is its own process-local broker.
	Shared bool
}

// wait bounds how long a message may take to arrive; quiet is how long the suite listens for a
// message that must not arrive.
const (
	wait  = 10 * time.Second
	quiet = 300 * time.Millisecond
)

// Constructor returns a bus ready to use and closes it when t ends. Where Features.Shared is
// set, the buses of separate calls reach one broker.
type Constructor func(t *testing.T) *bus.Bus

// TestBus runs the suite: each test below, in parallel, against buses that newBus makes. Each
// test uses topics of its own, so tests never share state. A Pub/Sub's own test calls it once.
func TestBus(t *testing.T, f Features, newBus Constructor) {
	t.Helper()
	tests := []func(t *testing.T, f Features, newBus Constructor){
		TestDelivers,
		TestFanOut,
		TestNackRedelivers,
		TestTopicsIsolated,
		TestCancelStopsDelivery,
		TestCloseStopsDelivery,
		TestPublishBeforeSubscribeIsDropped,
	}
	porttest.RunParallel(t, f, newBus, tests...)
}

// topic is a topic no other case uses; dotted, as the service's are.
func topic(t *testing.T, name string) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "bustest." + name + "." + hex.EncodeToString(b)
}

// inbox collects the payloads a handler receives.
type inbox struct {
	mu   sync.Mutex
	got  []string
	more chan struct{}
}

func newInbox() *inbox { return &inbox{more: make(chan struct{}, 1)} }

func (in *inbox) handle(_ context.Context, p []byte) error {
	in.mu.Lock()
	in.got = append(in.got, string(p))
	in.mu.Unlock()
	select {
	case in.more <- struct{}{}:
	default:
	}
	return nil
}

func (in *inbox) snapshot() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]string(nil), in.got...)
}

// waitFor waits until the inbox holds n payloads and returns them.
func (in *inbox) waitFor(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.After(wait)
	for {
		if got := in.snapshot(); len(got) >= n {
			return got
		}
		select {
		case <-in.more:
		case <-deadline:
			t.Fatalf("got %q within %s, want %d messages", in.snapshot(), wait, n)
		}
	}
}

func subscribe(t *testing.T, ctx context.Context, b *bus.Bus, topic string, handle func(context.Context, []byte) error) {
	t.Helper()
	if err := b.Subscribe(ctx, topic, handle); err != nil {
		t.Fatalf("subscribe %s: %v", topic, err)
	}
}

func publish(t *testing.T, b *bus.Bus, topic string, payloads ...string) {
	t.Helper()
	for _, p := range payloads {
		if err := b.Publish(context.Background(), topic, []byte(p)); err != nil {
			t.Fatalf("publish %s: %v", topic, err)
		}
	}
}

// TestDelivers: every message published to a topic reaches its subscriber, in some order.
func TestDelivers(t *testing.T, f Features, newBus Constructor) {
	b, tp, in := newBus(t), topic(t, "delivers"), newInbox()
	subscribe(t, t.Context(), b, tp, in.handle)
	publish(t, b, tp, "a", "b", "c")
	// Order is not promised (GoChannel does not keep it); the service's handlers do not rely on it.
	got := map[string]bool{}
	for _, p := range in.waitFor(t, 3) {
		got[p] = true
	}
	if diff := cmp.Diff(map[string]bool{"a": true, "b": true, "c": true}, got); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
}

// TestFanOut: every subscriber of a topic gets each message, as every replica must get a cancel.
func TestFanOut(t *testing.T, f Features, newBus Constructor) {
	a, tp := newBus(t), topic(t, "fanout")
	buses, pub := []*bus.Bus{a, a}, a
	if f.Shared {
		// Two replicas and a third process that only publishes.
		buses, pub = []*bus.Bus{a, a, newBus(t)}, newBus(t)
	}
	var inboxes []*inbox
	for _, b := range buses {
		in := newInbox()
		subscribe(t, t.Context(), b, tp, in.handle)
		inboxes = append(inboxes, in)
	}
	publish(t, pub, tp, "x")
	for i, in := range inboxes {
		if diff := cmp.Diff([]string{"x"}, in.waitFor(t, 1)); diff != "" {
			t.Errorf("subscriber %d (-want +got):\n%s", i, diff)
		}
	}
}

// TestNackRedelivers: a message whose handler fails is delivered again.
func TestNackRedelivers(t *testing.T, f Features, newBus Constructor) {
	b, tp, in := newBus(t), topic(t, "nack"), newInbox()
	var mu sync.Mutex
	failed := false
	subscribe(t, t.Context(), b, tp, func(ctx context.Context, p []byte) error {
		mu.Lock()
		first := !failed
		failed = true
		mu.Unlock()
		_ = in.handle(ctx, p)
		if first {
			return errors.New("transient")
		}
		return nil
	})
	publish(t, b, tp, "x")
	if diff := cmp.Diff([]string{"x", "x"}, in.waitFor(t, 2)); diff != "" {
		t.Errorf("deliveries (-want +got):\n%s", diff)
	}
}

// TestTopicsIsolated: a subscriber hears its own topic only, including topics that share a prefix
// (jobs.dispatch.cpu and jobs.dispatch.gpu).
func TestTopicsIsolated(t *testing.T, f Features, newBus Constructor) {
	b, base := newBus(t), topic(t, "isolated")
	topics := []string{base, base + ".cpu", base + ".gpu"}
	inboxes := map[string]*inbox{}
	for _, tp := range topics {
		inboxes[tp] = newInbox()
		subscribe(t, t.Context(), b, tp, inboxes[tp].handle)
	}
	for _, tp := range topics {
		publish(t, b, tp, tp)
	}
	for _, tp := range topics {
		inboxes[tp].waitFor(t, 1)
	}
	time.Sleep(quiet)
	for _, tp := range topics {
		if diff := cmp.Diff([]string{tp}, inboxes[tp].snapshot()); diff != "" {
			t.Errorf("subscriber of %s (-want +got):\n%s", tp, diff)
		}
	}
}

// TestCancelStopsDelivery: a subscription ends with its context; another on the topic goes on.
func TestCancelStopsDelivery(t *testing.T, f Features, newBus Constructor) {
	b, tp := newBus(t), topic(t, "cancel")
	ended, live := newInbox(), newInbox()
	ctx, cancel := context.WithCancel(t.Context())
	subscribe(t, ctx, b, tp, ended.handle)
	subscribe(t, t.Context(), b, tp, live.handle)
	publish(t, b, tp, "before")
	ended.waitFor(t, 1)
	live.waitFor(t, 1)
	cancel()
	time.Sleep(quiet)
	publish(t, b, tp, "after")
	live.waitFor(t, 2)
	time.Sleep(quiet)
	if diff := cmp.Diff([]string{"before"}, ended.snapshot()); diff != "" {
		t.Errorf("ended subscription (-want +got):\n%s", diff)
	}
}

// TestCloseStopsDelivery: once Close returns, the bus's handlers are not called again.
func TestCloseStopsDelivery(t *testing.T, f Features, newBus Constructor) {
	a, tp, in := newBus(t), topic(t, "close"), newInbox()
	subscribe(t, t.Context(), a, tp, in.handle)
	publish(t, a, tp, "before")
	in.waitFor(t, 1)
	if err := a.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	// A closed bus may refuse to publish; one on the same broker still can.
	_ = a.Publish(context.Background(), tp, []byte("after"))
	if f.Shared {
		publish(t, newBus(t), tp, "after")
	}
	time.Sleep(quiet)
	if diff := cmp.Diff([]string{"before"}, in.snapshot()); diff != "" {
		t.Errorf("after Close (-want +got):\n%s", diff)
	}
}

// TestPublishBeforeSubscribeIsDropped: publishing to a topic nobody hears succeeds, and a later subscriber
// does not get it: a replica that starts must not replay stale hints and cancels.
func TestPublishBeforeSubscribeIsDropped(t *testing.T, f Features, newBus Constructor) {
	b, tp, in := newBus(t), topic(t, "early"), newInbox()
	publish(t, b, tp, "early")
	subscribe(t, t.Context(), b, tp, in.handle)
	publish(t, b, tp, "late")
	in.waitFor(t, 1)
	time.Sleep(quiet)
	if diff := cmp.Diff([]string{"late"}, in.snapshot()); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
}
