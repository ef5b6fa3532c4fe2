// Package bus carries the service's hints and reports over Watermill: GoChannel in one process
// (the embedded default), any Watermill Pub/Sub (NATS JetStream, SQL) across processes.
package bus

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
)

// Bus publishes and subscribes raw payloads by topic.
type Bus struct {
	pub message.Publisher
	sub message.Subscriber
	log *slog.Logger
	// subject maps a service topic to the Pub/Sub's topic; nil keeps it as is.
	subject func(string) string
	// ping asks the broker whether it answers; nil for an in-process bus.
	ping        func(context.Context) error
	closeHealth func()
}

// Ping reports whether the broker behind the bus answers (readiness); an in-process bus always
// does.
func (b *Bus) Ping(ctx context.Context) error {
	if b.ping == nil {
		return nil
	}
	return b.ping(ctx)
}

// New wraps a Watermill publisher and subscriber.
func New(pub message.Publisher, sub message.Subscriber, log *slog.Logger) *Bus {
	if log == nil {
		log = slog.Default()
	}
	return &Bus{pub: pub, sub: sub, log: log}
}

// NewGoChannel is the in-process bus of the embedded default. Messages to a topic nobody
// subscribes to are dropped: they are hints, and the store keeps the truth.
func NewGoChannel(log *slog.Logger) *Bus {
	ps := gochannel.NewGoChannel(gochannel.Config{OutputChannelBuffer: 256}, watermill.NopLogger{})
	return New(ps, ps, log)
}

// Publish sends payload on topic.
func (b *Bus) Publish(_ context.Context, topic string, payload []byte) error {
	if err := b.pub.Publish(b.topic(topic), message.NewMessage(watermill.NewUUID(), payload)); err != nil {
		return fmt.Errorf("bus: publish %s: %w", topic, err)
	}
	return nil
}

// Subscribe calls handle for each message on topic until ctx ends. A handler error nacks the
// message (redelivered where the Pub/Sub supports it) and is logged.
func (b *Bus) Subscribe(ctx context.Context, topic string, handle func(context.Context, []byte) error) error {
	msgs, err := b.sub.Subscribe(ctx, b.topic(topic))
	if err != nil {
		return fmt.Errorf("bus: subscribe %s: %w", topic, err)
	}
	go func() {
		for msg := range msgs {
			if err := handle(msg.Context(), msg.Payload); err != nil {
				b.log.Warn("bus handler failed", "topic", topic, "err", err)
				msg.Nack()
				continue
			}
			msg.Ack()
		}
	}()
	return nil
}

func (b *Bus) topic(topic string) string {
	if b.subject == nil {
		return topic
	}
	return b.subject(topic)
}

// Close closes the subscriber, then the publisher: a subscriber drains its in-flight messages
// before its connection goes.
func (b *Bus) Close() error {
	if b.closeHealth != nil {
		b.closeHealth()
	}
	var err error
	if b.sub != nil && any(b.sub) != any(b.pub) {
		err = b.sub.Close()
	}
	if e := b.pub.Close(); err == nil {
		err = e
	}
	return err
}
