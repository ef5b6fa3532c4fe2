package brokerqueue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wmjs "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/jetstream"
	wmnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultStream is the JetStream stream of the work queue's calls and replies. It is not the
// bus's stream (MEDIAJOBS): that one keeps messages in memory and only for subscribers present,
// while calls must wait, on disk, for a control plane that is restarting.
const DefaultStream = "MEDIAJOBS_RUNNER"

// NATSConfig configures the NATS JetStream broker.
type NATSConfig struct {
	// URL is the server, nats://host:port.
	URL string
	// Stream names the JetStream stream; empty: DefaultStream. Its subjects are the lower-cased
	// name followed by the topic ("mediajobs_runner.claims.cpu"), so deployments (and tests)
	// with different streams never see each other's calls.
	Stream string
}

// How long the stream keeps a message nobody acknowledged: far past any call's deadline.
const natsMaxAge = 10 * time.Minute

// How long closing waits for the connection to drain.
const natsDrainTimeout = 5 * time.Second

// How long a worker's reply consumer outlives its worker when the worker vanished without
// closing it.
const natsReplyInactive = 2 * time.Minute

// How often the server sends an idle heartbeat on a consumer's pull request: a pull request
// the server lost is noticed and made again after two of them.
const natsPullHeartbeat = time.Second

// DialNATS connects to NATS JetStream and makes sure that the stream and the control plane's
// consumer groups exist (see the package documentation for the topology).
func DialNATS(ctx context.Context, cfg NATSConfig, log *slog.Logger) (Broker, error) {
	if log == nil {
		log = slog.Default()
	}
	if cfg.Stream == "" {
		cfg.Stream = DefaultStream
	}
	if strings.ContainsAny(cfg.Stream, ".*> \t\r\n") {
		return nil, fmt.Errorf("brokerqueue: NATS stream name %q may not contain dots, wildcards or spaces", cfg.Stream)
	}
	closed := make(chan struct{})
	nc, err := nats.Connect(cfg.URL, nats.Name("mediajobs runner queue"), nats.MaxReconnects(-1), nats.Timeout(5*time.Second),
		// A connection that a network fault broke without a reset (a worker cut off) is found
		// dead in about 15 s, not nats.go's default of minutes, and reconnected.
		nats.PingInterval(5*time.Second), nats.MaxPingsOutstanding(3),
		nats.DrainTimeout(natsDrainTimeout), nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
	if err != nil {
		return nil, fmt.Errorf("brokerqueue: connect to NATS %s: %w", redact(cfg.URL), err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("brokerqueue: JetStream: %w", err)
	}
	b := &natsBroker{nc: nc, js: js, stream: cfg.Stream, prefix: strings.ToLower(cfg.Stream), log: log, closed: closed,
		replyConsumers: map[string]bool{}}
	if err := b.ensure(ctx); err != nil {
		nc.Close()
		<-closed
		return nil, err
	}
	wlog := slogAdapter(log)
	// The publisher takes the subject from its stream configurator's Name.
	b.pub, err = wmjs.NewPublisher(wmjs.PublisherConfig{Conn: nc, Logger: wlog,
		ConfigureStream: func(subject string) jetstream.StreamConfig { return jetstream.StreamConfig{Name: subject} }})
	if err != nil {
		nc.Close()
		<-closed
		return nil, fmt.Errorf("brokerqueue: NATS publisher: %w", err)
	}
	// A consumer's pull request asks the server for an idle heartbeat every
	// natsPullHeartbeat; two missed, and nats.go pulls again. Its default (half the 30 s
	// expiry) left a consumer whose pull request the server had dropped idle for 30 s: on a
	// loaded machine, nats-server 2.9 once did so to the control plane's leases consumer, and
	// every heartbeat of the fleet waited until the leases had lapsed.
	//
	// Acknowledgements are sent without waiting for the server's confirmation (AckAsync):
	// a consumer hands its messages over one at a time, and a confirmed ack made each wait
	// for a round trip to the server. Waiting bought nothing: a confirmation that failed was
	// only logged, and the call came again after AckWait either way.
	b.sub, err = wmjs.NewSubscriber(wmjs.SubscriberConfig{Conn: nc, Logger: wlog, AckWaitTimeout: 10 * time.Second,
		ResourceInitializer: b.consumer, Unmarshaler: lenientUnmarshaler{}, AckAsync: true,
		ConsumeOptions: []jetstream.PullConsumeOpt{jetstream.PullHeartbeat(natsPullHeartbeat),
			jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
				log.Warn("brokerqueue: NATS consumer error", "err", err)
			})}})
	if err != nil {
		nc.Close()
		<-closed
		return nil, fmt.Errorf("brokerqueue: NATS subscriber: %w", err)
	}
	return b, nil
}

type natsBroker struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	stream string
	prefix string
	log    *slog.Logger
	pub    *wmjs.Publisher
	sub    *wmjs.Subscriber
	closed chan struct{}

	mu sync.Mutex
	// replyConsumers are the reply consumers this broker made, deleted when it closes.
	replyConsumers map[string]bool
	closeOnce      sync.Once
	closeErr       error
}

// ensure makes the stream and the control plane's durable consumers, or updates them to this
// configuration. Workers and control planes both call it, so that calls published before any
// control plane ever started wait for one. Concurrent callers converge: the configurations are
// the same.
//
// The stream keeps a message while a consumer that matches it has not acknowledged it
// (interest retention): a call waits for its consumer group; a reply lives only while its
// worker's consumer does, and a reply to a worker that is gone is dropped at once. The stream
// is on disk, so that the durable consumer groups and the calls waiting in them outlive a
// restart of the NATS server.
func (b *natsBroker) ensure(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cfg := jetstream.StreamConfig{
		Name:        b.stream,
		Description: "mediajobs: the work queue's calls and replies",
		Subjects:    []string{b.prefix + ".>"},
		Retention:   jetstream.InterestPolicy,
		Storage:     jetstream.FileStorage,
		MaxAge:      natsMaxAge,
		Discard:     jetstream.DiscardOld,
	}
	_, err := b.js.CreateOrUpdateStream(ctx, cfg)
	// nats-server 2.9 may fail to make a stream's directory while another stream of a new
	// server is deleted at the same moment (its parent directory goes with the last stream):
	// "error creating store for stream". Asked again, it makes it.
	for try := 0; err != nil && isStoreCreation(err) && try < 5; try++ {
		select {
		case <-ctx.Done():
			return fmt.Errorf("brokerqueue: NATS stream %s: %w", b.stream, err)
		case <-time.After(time.Duration(try+1) * 50 * time.Millisecond):
		}
		_, err = b.js.CreateOrUpdateStream(ctx, cfg)
	}
	if err != nil {
		return fmt.Errorf("brokerqueue: NATS stream %s: %w", b.stream, err)
	}
	for _, topic := range callTopics() {
		if _, err := b.js.CreateOrUpdateConsumer(ctx, b.stream, b.groupConfig(topic)); err != nil {
			return fmt.Errorf("brokerqueue: NATS consumer %s of stream %s: %w", group(topic), b.stream, err)
		}
	}
	return nil
}

// isStoreCreation tells the server's "error creating store for stream" (JSStreamStoreFailedF).
func isStoreCreation(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == 10049
}

// groupConfig is the durable consumer of a calls topic, which every control-plane replica
// pulls from: JetStream hands each message to one puller. It is made here and never deleted by
// a subscriber going away, so that one replica stopping leaves the group to the others.
func (b *natsBroker) groupConfig(topic string) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       group(topic),
		Description:   "mediajobs control plane: " + topic,
		FilterSubject: b.subject(topic),
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		// The control plane acknowledges a call as soon as it has read it; a call left
		// unacknowledged belonged to a replica that died holding it, and goes to another.
		AckWait:    10 * time.Second,
		MaxDeliver: 3,
	}
}

func (b *natsBroker) subject(topic string) string { return b.prefix + "." + topic }

// consumer is the Watermill subscriber's resource initializer: it binds a calls subject to its
// durable group, and makes a worker's reply subject an ephemeral consumer of its own that
// delivers only replies published from now on.
func (b *natsBroker) consumer(ctx context.Context, js jetstream.JetStream, subject string) (jetstream.Consumer, func(context.Context, watermill.LoggerAdapter), error) {
	topic := strings.TrimPrefix(subject, b.prefix+".")
	if worker, ok := strings.CutPrefix(topic, topicRepliesPrefix); ok {
		name := "worker-" + worker
		c, err := js.CreateOrUpdateConsumer(ctx, b.stream, jetstream.ConsumerConfig{
			Name:              name,
			Description:       "mediajobs worker replies",
			FilterSubject:     subject,
			DeliverPolicy:     jetstream.DeliverNewPolicy,
			AckPolicy:         jetstream.AckExplicitPolicy,
			AckWait:           10 * time.Second,
			MaxDeliver:        3,
			InactiveThreshold: natsReplyInactive,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("brokerqueue: NATS reply consumer %s: %w", name, err)
		}
		b.mu.Lock()
		b.replyConsumers[name] = true
		b.mu.Unlock()
		// No closer: the Watermill subscriber calls it with the subscription's context, which
		// has ended by then; close deletes the consumer instead.
		return c, nil, nil
	}
	c, err := js.CreateOrUpdateConsumer(ctx, b.stream, b.groupConfig(topic))
	if err != nil {
		return nil, nil, fmt.Errorf("brokerqueue: NATS consumer %s: %w", group(topic), err)
	}
	return c, nil, nil
}

func (b *natsBroker) publish(topic string, m *message.Message) error {
	return b.pub.Publish(b.subject(topic), m)
}

func (b *natsBroker) consume(ctx context.Context, topic string) (<-chan *message.Message, error) {
	return b.sub.Subscribe(ctx, b.subject(topic))
}

func (b *natsBroker) replies(ctx context.Context, worker string) (<-chan *message.Message, error) {
	return b.sub.Subscribe(ctx, b.subject(topicRepliesPrefix+worker))
}

// close deletes this broker's reply consumers (JetStream would otherwise keep them for
// natsReplyInactive), then closes the subscriber, which drains the connection: the messages
// in hand are acknowledged, the publishes in flight flushed, and the connection closed. It
// returns once the connection is closed.
func (b *natsBroker) close() error {
	b.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		b.mu.Lock()
		for name := range b.replyConsumers {
			if err := b.js.DeleteConsumer(ctx, b.stream, name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
				b.log.Warn("brokerqueue: deleting a NATS reply consumer", "consumer", name, "err", err)
			}
		}
		b.mu.Unlock()
		// Not the publisher's Close: it closes the connection at once, racing the drain.
		b.closeErr = b.sub.Close()
		select {
		case <-b.closed:
		case <-time.After(natsDrainTimeout + time.Second):
			b.nc.Close()
			<-b.closed
		}
	})
	return b.closeErr
}

// lenientUnmarshaler is Watermill's JetStream unmarshaler without its one failure: a header
// with several values keeps the first, instead of an error that the subscriber does not
// survive (it goes on with a nil message). Anyone who can publish on the stream could
// otherwise stop the control plane.
type lenientUnmarshaler struct{}

func (lenientUnmarshaler) Unmarshal(msg jetstream.Msg) (*message.Message, error) {
	md := message.Metadata{}
	for k, v := range msg.Headers() {
		switch k {
		case wmnats.WatermillUUIDHdr, nats.MsgIdHdr, nats.ExpectedLastMsgIdHdr, nats.ExpectedStreamHdr, nats.ExpectedLastSubjSeqHdr, nats.ExpectedLastSeqHdr:
			continue
		}
		if len(v) > 0 {
			md.Set(k, v[0])
		}
	}
	m := message.NewMessage(msg.Headers().Get(wmnats.WatermillUUIDHdr), msg.Data())
	m.Metadata = md
	return m, nil
}
