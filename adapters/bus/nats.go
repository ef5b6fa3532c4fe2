package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wmnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	"github.com/nats-io/nats.go"
)

// DefaultStream is the JetStream stream the service's subjects live in.
const DefaultStream = "MEDIAJOBS"

// NATSConfig configures the NATS JetStream bus.
type NATSConfig struct {
	// URL is the server, nats://host:port.
	URL string
	// Stream names the JetStream stream; empty: DefaultStream. Its subjects are the lower-cased
	// name followed by the topic, so buses with different streams never see each other.
	Stream string
}

// OpenNATS connects a bus to NATS JetStream, so that API replicas and runners in different
// processes share hints and reports.
//
// Design, and why:
//
//   - One stream (NATSConfig.Stream) holds every topic, as the subject "<stream>.<topic>". Our
//     topics are dotted ("jobs.cancel", "jobs.dispatch.cpu"); dots are NATS subject token
//     separators, which suits them, but a JetStream stream name may not contain a dot, and the
//     adapter's auto-provisioning names a stream after its topic. So the stream is created here,
//     once, over "<stream>.>", and auto-provisioning stays off.
//   - The stream keeps a message only while a consumer still has to ack it (interest
//     retention), in memory: a message published while nobody subscribes is dropped, as on
//     GoChannel. They are hints; the store keeps the truth.
//   - Every Subscribe makes its own ephemeral consumer that delivers only new messages, with no
//     queue group: each replica receives every cancel and dispatch hint (a cancel must reach
//     whichever runner runs the job), and every control plane receives each runner report
//     (HandleReport is idempotent). A durable queue group for reports was rejected: nats.go
//     deletes a consumer it created when that subscription ends, so one replica shutting down
//     would take the group away from the others; and a report nobody hears is covered by the
//     lease sweep, since every process that runs a runner also runs a control plane.
//   - A nack is redelivered after a short delay, and given up after a bounded number of tries,
//     so a failing handler does not spin.
func OpenNATS(cfg NATSConfig, log *slog.Logger) (*Bus, error) {
	if log == nil {
		log = slog.Default()
	}
	if cfg.Stream == "" {
		cfg.Stream = DefaultStream
	}
	prefix := strings.ToLower(cfg.Stream)
	opts := []nats.Option{nats.Name("mediajobs"), nats.MaxReconnects(-1), nats.Timeout(5 * time.Second),
		// A connection that a network fault broke without a reset is found dead in about 15 s,
		// not nats.go's default of minutes, and reconnected.
		nats.PingInterval(5 * time.Second), nats.MaxPingsOutstanding(3)}
	if err := ensureStream(cfg, prefix, opts); err != nil {
		return nil, err
	}
	wlog := watermill.NewSlogLogger(log)
	pub, err := wmnats.NewPublisher(wmnats.PublisherConfig{URL: cfg.URL, NatsOptions: opts}, wlog)
	if err != nil {
		return nil, fmt.Errorf("bus: nats publisher: %w", err)
	}
	sub, err := wmnats.NewSubscriber(wmnats.SubscriberConfig{
		URL:              cfg.URL,
		NatsOptions:      opts,
		SubscribersCount: 1,
		AckWaitTimeout:   30 * time.Second,
		CloseTimeout:     10 * time.Second,
		SubscribeTimeout: 10 * time.Second,
		NakDelay:         wmnats.NewMaxRetryDelay(200*time.Millisecond, 50),
		JetStream: wmnats.JetStreamConfig{
			SubscribeOptions: []nats.SubOpt{nats.DeliverNew(), nats.AckExplicit()},
		},
	}, wlog)
	if err != nil {
		_ = pub.Close()
		return nil, fmt.Errorf("bus: nats subscriber: %w", err)
	}
	// Readiness asks the server itself, on a connection of its own: Watermill's are not exposed.
	health, err := nats.Connect(cfg.URL, append(opts, nats.Name("mediajobs health"))...)
	if err != nil {
		_ = sub.Close()
		_ = pub.Close()
		return nil, fmt.Errorf("bus: nats health connection: %w", err)
	}
	b := New(pub, sub, log)
	b.subject = func(topic string) string { return natsSubject(prefix, topic) }
	b.ping = func(ctx context.Context) error {
		if st := health.Status(); st != nats.CONNECTED {
			return fmt.Errorf("bus: NATS connection is %v", st)
		}
		return health.FlushWithContext(ctx)
	}
	b.closeHealth = health.Close
	return b, nil
}

// ensureStream creates the stream when it is missing. Replicas starting together may race to
// create it; the loser finds it made.
func ensureStream(cfg NATSConfig, prefix string, opts []nats.Option) error {
	nc, err := nats.Connect(cfg.URL, opts...)
	if err != nil {
		return fmt.Errorf("bus: connect to nats %s: %w", cfg.URL, err)
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		return fmt.Errorf("bus: jetstream: %w", err)
	}
	sc := &nats.StreamConfig{
		Name:      cfg.Stream,
		Subjects:  []string{prefix + ".>"},
		Retention: nats.InterestPolicy,
		Storage:   nats.MemoryStorage,
		MaxAge:    time.Hour,
	}
	if _, err := js.StreamInfo(sc.Name); err == nil {
		return nil
	} else if !errors.Is(err, nats.ErrStreamNotFound) {
		return fmt.Errorf("bus: stream %s: %w", sc.Name, err)
	}
	if _, err := js.AddStream(sc); err != nil && !errors.Is(err, nats.ErrStreamNameAlreadyInUse) {
		// Another replica made it between the lookup and the add: the server may answer
		// that with "subjects overlap with an existing stream" (seen when a suite's
		// subtests opened one stream at once) rather than "name already in use".
		if _, ierr := js.StreamInfo(sc.Name); ierr != nil {
			return fmt.Errorf("bus: create stream %s: %w", sc.Name, err)
		}
	}
	return nil
}

// natsSubject is prefix.topic with each dot-separated token made a valid subject token:
// whitespace and the wildcards * and > become _, and an empty token becomes _.
func natsSubject(prefix, topic string) string {
	tokens := strings.Split(topic, ".")
	for i, t := range tokens {
		t = strings.Map(func(r rune) rune {
			switch r {
			case '*', '>', ' ', '\t', '\r', '\n', '\f', '\v':
				return '_'
			}
			return r
		}, t)
		if t == "" {
			t = "_"
		}
		tokens[i] = t
	}
	return prefix + "." + strings.Join(tokens, ".")
}
