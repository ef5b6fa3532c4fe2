package brokerqueue

import (
	"context"
	"log/slog"
)

// OpenClient connects a worker to the control plane through the broker at rawURL
// (nats://host:port or postgres://…; see Dial), as workerName, with the worker token. Close it
// when the worker stops.
func OpenClient(ctx context.Context, rawURL, token, workerName string, log *slog.Logger) (*Client, error) {
	b, err := Dial(ctx, rawURL, log)
	if err != nil {
		return nil, err
	}
	c, err := NewClient(b, ClientConfig{Token: token, Worker: workerName, Log: log})
	if err != nil {
		_ = b.close()
		return nil, err
	}
	return c, nil
}

// OpenServer serves the control plane's work queue to workers through the broker at rawURL
// (nats://host:port or postgres://…; see Dial), each call through the queue auth gives for its
// credential. Run it, and Close it when the control plane stops; call Runs.Stop first so that
// waiting claims answer at once.
func OpenServer(ctx context.Context, rawURL string, auth Authenticator, log *slog.Logger) (*Server, error) {
	b, err := Dial(ctx, rawURL, log)
	if err != nil {
		return nil, err
	}
	s, err := NewServer(b, auth, log)
	if err != nil {
		_ = b.close()
		return nil, err
	}
	return s, nil
}
