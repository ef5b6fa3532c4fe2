package job

import (
	"context"
	"time"
)

// Message is a side effect of a job change — a webhook event, a billing charge — that the store
// writes in the same transaction as the job (the transactional outbox). A relay hands it to its
// topic's handler after the commit; handlers are idempotent, so a message handled twice after a
// crash does no harm, and a crash between the change and its effects loses nothing.
type Message struct {
	// Key is unique: a second message with a key already in the outbox is dropped.
	Key     string
	Topic   string
	Payload []byte
	// Attempts counts claims, including the current one.
	Attempts  int
	CreatedAt time.Time
}

// Emit records a message to be written with the job's next save by Store.Update.
func (j *Job) Emit(topic, key string, payload []byte) {
	j.Outbox = append(j.Outbox, Message{Key: key, Topic: topic, Payload: payload})
}

// Outbox is the port of the relay: messages written by Update, claimed and acknowledged.
type Outbox interface {
	// ClaimMessages leases up to Limit messages that are not leased, oldest first, until
	// Now+Lease: a message whose handler fails or whose relay dies comes back after its lease.
	ClaimMessages(ctx context.Context, p ClaimMessagesParams) ([]Message, error)
	// AckMessages removes handled messages, all in one write. An unknown key is not an error.
	AckMessages(ctx context.Context, keys []string) error
	// RetryMessage makes a message whose handler failed available again at at (a backoff),
	// instead of at the end of its lease. An unknown key is not an error.
	RetryMessage(ctx context.Context, key string, at time.Time) error
}

// ClaimMessagesParams selects the messages a relay takes.
type ClaimMessagesParams struct {
	Limit int
	Lease time.Duration
	Now   time.Time
}
