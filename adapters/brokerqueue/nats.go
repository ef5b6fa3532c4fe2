package brokerqueue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wmjs "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/jetstream"
	wmnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/mediajobs/mediajobs/core/retry"
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

// How many heartbeats missed in a row (each noticed 2 × natsPullHeartbeat after the last) tell
// a consumer that no longer serves its pull requests: the subscription is then made again,
// consumer included.
const natsStallMisses = 3

// The backoff of subscribing again (retry.Backoff): its first wait, and its longest.
const (
	natsResubscribeFirst = 100 * time.Millisecond
	natsResubscribeMax   = 5 * time.Second
)

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
		closing: make(chan struct{}), replyConsumers: map[string]bool{}}
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
	// every heartbeat of the fleet waited until the leases had lapsed. A consumer that answers
	// no pull request at all is subscribed again (subscribe); each subscription's errors go to
	// its own watch (watchedConsumer), not to a handler of the subscriber's.
	//
	// Acknowledgements are sent without waiting for the server's confirmation (AckAsync):
	// a consumer hands its messages over one at a time, and a confirmed ack made each wait
	// for a round trip to the server. Waiting bought nothing: a confirmation that failed was
	// only logged, and the call came again after AckWait either way.
	b.sub, err = wmjs.NewSubscriber(wmjs.SubscriberConfig{Conn: nc, Logger: wlog, AckWaitTimeout: 10 * time.Second,
		ResourceInitializer: b.consumer, Unmarshaler: lenientUnmarshaler{}, AckAsync: true,
		ConsumeOptions: []jetstream.PullConsumeOpt{jetstream.PullHeartbeat(natsPullHeartbeat)}})
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
	// closing is closed when close begins: a subscription that ends then is not made again.
	closing chan struct{}

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
		if b.isClosing() {
			// close has deleted the reply consumers it knew of, or is deleting them: this one,
			// made meanwhile by a subscription of the last moment, would linger for
			// natsReplyInactive.
			b.mu.Unlock()
			dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = js.DeleteConsumer(dctx, b.stream, name)
			return nil, nil, fmt.Errorf("brokerqueue: NATS reply consumer %s: the broker is closing", name)
		}
		b.replyConsumers[name] = true
		b.mu.Unlock()
		// No closer: the Watermill subscriber calls it with the subscription's context, which
		// has ended by then; close deletes the consumer instead.
		return watched(ctx, c), nil, nil
	}
	c, err := js.CreateOrUpdateConsumer(ctx, b.stream, b.groupConfig(topic))
	if err != nil {
		return nil, nil, fmt.Errorf("brokerqueue: NATS consumer %s: %w", group(topic), err)
	}
	return watched(ctx, c), nil, nil
}

func (b *natsBroker) publish(topic string, m *message.Message) error {
	return b.pub.Publish(b.subject(topic), m)
}

func (b *natsBroker) consume(ctx context.Context, topic string) (<-chan *message.Message, error) {
	return b.subscribe(ctx, b.subject(topic))
}

func (b *natsBroker) replies(ctx context.Context, worker string) (<-chan *message.Message, error) {
	return b.subscribe(ctx, b.subject(topicRepliesPrefix+worker))
}

// subscribe is the Watermill subscription of subject, made again, consumer and all, whenever
// its consumer stops serving it: deleted (an operator's `nats consumer rm`, a JetStream that
// lost its state), or answering no pull request for natsStallMisses heartbeats in a row (a
// server that lost them). nats.go pulls again after each missed heartbeat, but a consumer that
// is gone or stuck answers no pull, and the control plane (or a worker's replies) would stay
// deaf until a restart. The channel closes when ctx ends or the broker closes.
func (b *natsBroker) subscribe(ctx context.Context, subject string) (<-chan *message.Message, error) {
	cur, err := b.subscribeOnce(ctx, subject)
	if err != nil {
		return nil, err
	}
	out := make(chan *message.Message)
	go func() {
		defer close(out)
		backoff := retry.New(natsResubscribeFirst, natsResubscribeMax)
		for {
			subscribed := time.Now()
			done := b.forward(ctx, cur, out)
			cur.cancel()
			if done {
				return
			}
			// The backoff starts again after a subscription that served a while; one that
			// stalled at once (a consumer the server keeps refusing) goes on with it, rather
			// than being made again ten times a second.
			if time.Since(subscribed) >= natsResubscribeMax {
				backoff.Reset()
			}
			for {
				select {
				case <-ctx.Done():
					return
				case <-b.closing:
					return
				case <-time.After(backoff.Next()):
				}
				cur, err = b.subscribeOnce(ctx, subject)
				if err == nil {
					b.log.Info("brokerqueue: subscribed again to a NATS consumer", "subject", subject)
					break
				}
				if errors.Is(err, jetstream.ErrStreamNotFound) {
					// The server lost its state (restarted without its store): the stream and
					// the control plane's groups are made again, as at the start.
					if eerr := b.ensure(ctx); eerr != nil {
						err = eerr
					}
				}
				b.log.Warn("brokerqueue: subscribing again to a NATS consumer failed; trying again", "subject", subject, "err", err)
			}
		}
	}()
	return out, nil
}

// natsSubscription is one Watermill subscription and the watch on its consumer.
type natsSubscription struct {
	msgs   <-chan *message.Message
	cancel context.CancelFunc
	watch  *consumerWatch
}

func (b *natsBroker) subscribeOnce(ctx context.Context, subject string) (natsSubscription, error) {
	w := &consumerWatch{subject: subject, log: b.log, stalled: make(chan struct{})}
	sctx, cancel := context.WithCancel(context.WithValue(ctx, consumerWatchKey{}, w))
	msgs, err := b.sub.Subscribe(sctx, subject)
	if err != nil {
		cancel()
		return natsSubscription{}, err
	}
	return natsSubscription{msgs: msgs, cancel: cancel, watch: w}, nil
}

// forward hands sub's messages to out until ctx ends or the broker closes (true), or sub's
// consumer stalls (false). A message taken from sub and not handed on is not acknowledged: the
// consumer delivers it again after its AckWait.
func (b *natsBroker) forward(ctx context.Context, sub natsSubscription, out chan<- *message.Message) bool {
	for {
		select {
		case m, ok := <-sub.msgs:
			if !ok {
				// Watermill ends a subscription only with its context or its subscriber.
				return ctx.Err() != nil || b.isClosing()
			}
			select {
			case out <- m:
			case <-ctx.Done():
				return true
			case <-sub.watch.stalled:
				return false
			}
		case <-sub.watch.stalled:
			return false
		case <-ctx.Done():
			return true
		}
	}
}

func (b *natsBroker) isClosing() bool {
	select {
	case <-b.closing:
		return true
	default:
		return false
	}
}

// consumerWatchKey carries a subscription's consumerWatch to the resource initializer
// (natsBroker.consumer), through the context Watermill hands it: the one thing of a
// subscription's own that the initializer is given (a map by subject would mix two
// subscriptions of one subject).
type consumerWatchKey struct{}

// consumerWatch reads the errors of one subscription's consumer, and tells when it stalled.
type consumerWatch struct {
	subject string
	log     *slog.Logger
	stalled chan struct{}
	once    sync.Once

	mu     sync.Mutex
	misses int       // heartbeats missed in a row
	last   time.Time // when the last was missed
}

func (w *consumerWatch) failed(err error) {
	switch {
	case errors.Is(err, jetstream.ErrNoHeartbeat):
		// nats.go pulls again after each miss, and notices the next one 2 × natsPullHeartbeat
		// later: misses further apart than that are not one outage.
		w.mu.Lock()
		now := time.Now()
		if now.Sub(w.last) > 3*natsPullHeartbeat {
			w.misses = 0
		}
		w.misses++
		w.last = now
		stalled := w.misses >= natsStallMisses
		w.mu.Unlock()
		w.log.Warn("brokerqueue: NATS consumer error", "subject", w.subject, "err", err)
		if stalled {
			w.stall(err)
		}
	case errors.Is(err, jetstream.ErrConsumerDeleted), errors.Is(err, jetstream.ErrConsumerNotFound), errors.Is(err, jetstream.ErrBadRequest):
		// nats.go stops the consume after these.
		w.stall(err)
	case errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrConnectionDraining):
		// The broker is closing.
	default:
		w.log.Warn("brokerqueue: NATS consumer error", "subject", w.subject, "err", err)
	}
}

func (w *consumerWatch) stall(err error) {
	w.once.Do(func() {
		w.log.Warn("brokerqueue: a NATS consumer stopped serving its subscription; subscribing again", "subject", w.subject, "err", err)
		close(w.stalled)
	})
}

// watchedConsumer is a consumer whose Consume reports its errors to the subscription's watch.
type watchedConsumer struct {
	jetstream.Consumer
	watch *consumerWatch
}

// watched wraps c for the subscription whose context is ctx; a consumer made outside subscribe
// is left as it is.
func watched(ctx context.Context, c jetstream.Consumer) jetstream.Consumer {
	if w, ok := ctx.Value(consumerWatchKey{}).(*consumerWatch); ok {
		return watchedConsumer{Consumer: c, watch: w}
	}
	return c
}

func (c watchedConsumer) Consume(handler jetstream.MessageHandler, opts ...jetstream.PullConsumeOpt) (jetstream.ConsumeContext, error) {
	opts = append(slices.Clone(opts), jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) { c.watch.failed(err) }))
	return c.Consumer.Consume(handler, opts...)
}

// close deletes this broker's reply consumers (JetStream would otherwise keep them for
// natsReplyInactive), then closes the subscriber, which drains the connection: the messages
// in hand are acknowledged, the publishes in flight flushed, and the connection closed. It
// returns once the connection is closed.
func (b *natsBroker) close() error {
	b.closeOnce.Do(func() {
		close(b.closing)
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
