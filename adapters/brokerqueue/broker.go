package brokerqueue

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
)

// Broker carries the calls of workers and the control plane's replies. Dial, DialNATS,
// DialPostgres and NewGoChannel make one; the Client or Server given it owns it and closes it.
type Broker interface {
	// publish sends m on a logical topic.
	publish(topic string, m *message.Message) error
	// consume delivers the messages of a calls topic to this process as one member of the
	// control plane's consumer group of the topic (group(topic)): each message reaches one
	// member, until ctx ends. The channel closes when the subscription ends.
	consume(ctx context.Context, topic string) (<-chan *message.Message, error)
	// replies delivers the replies addressed to worker, from now on, until ctx ends.
	replies(ctx context.Context, worker string) (<-chan *message.Message, error)
	// close releases the broker's connections, once every subscription's context ended.
	close() error
}

// Dial connects to the broker at rawURL: nats://host:port[?stream=NAME] (NATS JetStream, with
// the stream NAME, default DefaultStream: deployments sharing one NATS server each name their
// own) or postgres://… (PostgreSQL, with the tables in the URL's search_path).
func Dial(ctx context.Context, rawURL string, log *slog.Logger) (Broker, error) {
	switch {
	case strings.HasPrefix(rawURL, "nats://"), strings.HasPrefix(rawURL, "tls://"):
		cfg, err := parseNATSURL(rawURL)
		if err != nil {
			return nil, err
		}
		return DialNATS(ctx, cfg, log)
	case strings.HasPrefix(rawURL, "postgres://"), strings.HasPrefix(rawURL, "postgresql://"):
		return DialPostgres(ctx, PostgresConfig{URL: rawURL}, log)
	}
	return nil, fmt.Errorf("brokerqueue: broker URL %q: use nats://host:port or postgres://…", redact(rawURL))
}

// parseNATSURL splits the stream parameter off a NATS URL; any other parameter is refused, so
// that a misspelt one is not silently ignored.
func parseNATSURL(rawURL string) (NATSConfig, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return NATSConfig{}, fmt.Errorf("brokerqueue: broker URL %q: %w", redact(rawURL), err)
	}
	q := u.Query()
	cfg := NATSConfig{Stream: q.Get("stream")}
	q.Del("stream")
	for k := range q {
		return NATSConfig{}, fmt.Errorf("brokerqueue: broker URL %q: unknown parameter %q (only stream)", redact(rawURL), k)
	}
	u.RawQuery = ""
	cfg.URL = u.String()
	return cfg, nil
}

// NewGoChannel is a broker inside one process, for tests and examples: one Server and any
// number of Clients share it. It has no consumer groups (every Server would get every call)
// and keeps nothing: a call published while no Server listens is lost, and its Client's call
// times out.
func NewGoChannel() Broker {
	return goChannel{gochannel.NewGoChannel(gochannel.Config{OutputChannelBuffer: 64}, watermill.NopLogger{})}
}

type goChannel struct{ ps *gochannel.GoChannel }

func (g goChannel) publish(topic string, m *message.Message) error { return g.ps.Publish(topic, m) }

func (g goChannel) consume(ctx context.Context, topic string) (<-chan *message.Message, error) {
	return g.ps.Subscribe(ctx, topic)
}

func (g goChannel) replies(ctx context.Context, worker string) (<-chan *message.Message, error) {
	return g.ps.Subscribe(ctx, topicRepliesPrefix+worker)
}

// close does nothing: the Client and the Server share the GoChannel, and its subscriptions end
// with their contexts.
func (goChannel) close() error { return nil }

// redact drops a URL's password, for messages.
func redact(raw string) string {
	if i := strings.Index(raw, "://"); i >= 0 {
		if at := strings.LastIndex(raw, "@"); at > i {
			return raw[:i+3] + "…@" + raw[at+1:]
		}
	}
	return raw
}

// slogAdapter is Watermill's logger over log, with Watermill's per-message Info lines (the
// NATS JetStream subscriber logs every message it gets at Info) lowered to Debug.
func slogAdapter(log *slog.Logger) watermill.LoggerAdapter {
	return watermill.NewSlogLoggerWithLevelMapping(log, map[slog.Level]slog.Level{slog.LevelInfo: slog.LevelDebug})
}
