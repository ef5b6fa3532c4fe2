package brokerqueue

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v3/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// PostgresConfig configures the PostgreSQL broker.
type PostgresConfig struct {
	// URL is the database, postgres://…; the tables live in its search_path.
	URL string
	// PollInterval is how often an idle subscriber looks for new messages: a call waits up to
	// one interval for the control plane, and its reply up to one for the worker. Default 50 ms.
	PollInterval time.Duration
	// Retention is how long calls and replies are kept before the control plane deletes them;
	// default 5 minutes, well past any call's deadline.
	Retention time.Duration
}

// DialPostgres connects to PostgreSQL through pgx and makes sure the tables exist (see the
// package documentation for the topology).
func DialPostgres(ctx context.Context, cfg PostgresConfig, log *slog.Logger) (Broker, error) {
	if log == nil {
		log = slog.Default()
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 50 * time.Millisecond
	}
	if cfg.Retention <= 0 {
		cfg.Retention = 5 * time.Minute
	}
	pc, err := pgx.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("brokerqueue: PostgreSQL URL %q: %w", redact(cfg.URL), err)
	}
	db := stdlib.OpenDB(*pc)
	// Each subscriber polls in a transaction of its own every PollInterval: keep their
	// connections open rather than dial one per poll.
	db.SetMaxIdleConns(8)
	db.SetConnMaxIdleTime(5 * time.Minute)
	b := &pgBroker{db: db, cfg: cfg, log: log, wlog: slogAdapter(log)}
	if err := b.ensure(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	b.pub, err = wsql.NewPublisher(db, wsql.PublisherConfig{SchemaAdapter: pgSchema{}}, b.wlog)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("brokerqueue: PostgreSQL publisher: %w", err)
	}
	return b, nil
}

type pgBroker struct {
	db   *sql.DB
	cfg  PostgresConfig
	log  *slog.Logger
	wlog watermill.LoggerAdapter
	pub  *wsql.Publisher

	mu   sync.Mutex
	subs []*wsql.Subscriber
}

// pgTable is the table of a topic's messages; the replies of every worker share one.
func pgTable(topic string) string {
	if strings.HasPrefix(topic, topicRepliesPrefix) {
		topic = "replies"
	}
	return `"brokerqueue_` + strings.ReplaceAll(topic, ".", "_") + `"`
}

func pgOffsetsTable(topic string) string {
	return strings.Replace(pgTable(topic), `"brokerqueue_`, `"brokerqueue_offsets_`, 1)
}

// ensure creates the tables, once per database, under an advisory lock: replicas starting
// together would otherwise race on CREATE TABLE IF NOT EXISTS.
func (b *pgBroker) ensure(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("brokerqueue: PostgreSQL %s: %w", redact(b.cfg.URL), err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext('mediajobs brokerqueue schema'))`); err != nil {
		return fmt.Errorf("brokerqueue: PostgreSQL schema lock: %w", err)
	}
	for _, topic := range append(callTopics(), topicRepliesPrefix) {
		for _, q := range (pgSchema{}).SchemaInitializingQueries(topic) {
			if _, err := tx.ExecContext(ctx, q.Query); err != nil {
				return fmt.Errorf("brokerqueue: PostgreSQL table %s: %w", pgTable(topic), err)
			}
		}
		for _, q := range pgOffsets().SchemaInitializingQueries(topic) {
			if _, err := tx.ExecContext(ctx, q.Query); err != nil {
				return fmt.Errorf("brokerqueue: PostgreSQL table %s: %w", pgOffsetsTable(topic), err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("brokerqueue: PostgreSQL schema: %w", err)
	}
	return nil
}

func pgOffsets() wsql.DefaultPostgreSQLOffsetsAdapter {
	return wsql.DefaultPostgreSQLOffsetsAdapter{GenerateMessagesOffsetsTableName: pgOffsetsTable}
}

func (b *pgBroker) subscribe(ctx context.Context, topic, group string) (<-chan *message.Message, error) {
	sub, err := wsql.NewSubscriber(b.db, wsql.SubscriberConfig{
		ConsumerGroup:  group,
		PollInterval:   b.cfg.PollInterval,
		ResendInterval: b.cfg.PollInterval,
		RetryInterval:  time.Second,
		SchemaAdapter:  pgSchema{},
		OffsetsAdapter: pgOffsets(),
	}, b.wlog)
	if err != nil {
		return nil, fmt.Errorf("brokerqueue: PostgreSQL subscriber: %w", err)
	}
	ch, err := sub.Subscribe(ctx, topic)
	if err != nil {
		_ = sub.Close()
		return nil, fmt.Errorf("brokerqueue: PostgreSQL subscribe %s: %w", topic, err)
	}
	b.mu.Lock()
	b.subs = append(b.subs, sub)
	b.mu.Unlock()
	return ch, nil
}

func (b *pgBroker) publish(topic string, m *message.Message) error { return b.pub.Publish(topic, m) }

func (b *pgBroker) consume(ctx context.Context, topic string) (<-chan *message.Message, error) {
	return b.subscribe(ctx, topic, group(topic))
}

// replies reads the replies table as a consumer group of the worker's own, whose select keeps
// only the rows addressed to the worker (pgSchema). A new group starts at the beginning of
// the table, where no reply to this worker ID can be yet.
func (b *pgBroker) replies(ctx context.Context, worker string) (<-chan *message.Message, error) {
	return b.subscribe(ctx, topicRepliesPrefix+worker, worker)
}

func (b *pgBroker) close() error {
	b.mu.Lock()
	subs := b.subs
	b.subs = nil
	b.mu.Unlock()
	for _, s := range subs {
		_ = s.Close()
	}
	err := b.pub.Close()
	if e := b.db.Close(); err == nil {
		err = e
	}
	return err
}

// prune deletes the calls and replies older than the retention, and the reply offsets of
// workers that have nothing left to read: without it the tables would grow forever. Every
// control-plane replica prunes; the deletes are idempotent.
func (b *pgBroker) prune(ctx context.Context) error {
	for _, topic := range append(callTopics(), topicRepliesPrefix) {
		_, err := b.db.ExecContext(ctx, `DELETE FROM `+pgTable(topic)+` WHERE created_at < now() - make_interval(secs => $1)`,
			b.cfg.Retention.Seconds())
		if err != nil {
			return fmt.Errorf("brokerqueue: pruning %s: %w", pgTable(topic), err)
		}
	}
	// A worker's offset older than every reply left decides nothing: without it the worker's
	// select starts at zero (pgSchema), and finds the same replies. So it goes.
	_, err := b.db.ExecContext(ctx, `DELETE FROM `+pgOffsetsTable(topicRepliesPrefix)+`
		WHERE last_processed_transaction_id < COALESCE((SELECT min(transaction_id) FROM `+pgTable(topicRepliesPrefix)+`),
			pg_snapshot_xmin(pg_current_snapshot()))`)
	if err != nil {
		return fmt.Errorf("brokerqueue: pruning %s: %w", pgOffsetsTable(topicRepliesPrefix), err)
	}
	return nil
}

func (b *pgBroker) pruneEvery() time.Duration { return b.cfg.Retention / 5 }

// pgSchema is Watermill's PostgreSQL schema with this package's tables: created_at is a
// timestamptz (the default's timestamp without zone depends on each session's time zone, and
// pruning compares it across sessions), with an index for the pruning; and the replies table's
// select keeps only the rows of the worker whose consumer group reads it.
type pgSchema struct{}

func (pgSchema) base() wsql.DefaultPostgreSQLSchema {
	return wsql.DefaultPostgreSQLSchema{GenerateMessagesTableName: pgTable, SubscribeBatchSize: 100}
}

func (s pgSchema) InsertQuery(topic string, msgs message.Messages) (wsql.Query, error) {
	return s.base().InsertQuery(topic, msgs)
}

func (s pgSchema) UnmarshalMessage(row wsql.Scanner) (wsql.Row, error) {
	return s.base().UnmarshalMessage(row)
}

func (s pgSchema) SubscribeIsolationLevel() sql.IsolationLevel {
	return s.base().SubscribeIsolationLevel()
}

func (pgSchema) SchemaInitializingQueries(topic string) []wsql.Query {
	t := pgTable(topic)
	name := strings.Trim(t, `"`)
	qs := []wsql.Query{
		{Query: `CREATE TABLE IF NOT EXISTS ` + t + ` (
			"offset" BIGSERIAL,
			"uuid" VARCHAR(36) NOT NULL,
			"created_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
			"payload" JSON DEFAULT NULL,
			"metadata" JSON DEFAULT NULL,
			"transaction_id" xid8 NOT NULL,
			PRIMARY KEY ("transaction_id", "offset")
		)`},
		{Query: `CREATE INDEX IF NOT EXISTS "` + name + `_created_at" ON ` + t + ` (created_at)`},
	}
	if strings.HasPrefix(topic, topicRepliesPrefix) {
		qs = append(qs, wsql.Query{Query: `CREATE INDEX IF NOT EXISTS "` + name + `_worker" ON ` + t +
			` ((metadata->>'` + metaWorker + `'), transaction_id, "offset")`})
	}
	return qs
}

// SelectQuery is the default's for the calls. For the replies it is the default's with two
// changes: it keeps the rows addressed to the consumer group's worker ($1 is the group, which
// is the worker ID), and a group with no offset row (pruned) reads from the start instead of
// reading nothing.
func (s pgSchema) SelectQuery(topic, consumerGroup string, offsets wsql.OffsetsAdapter) wsql.Query {
	if !strings.HasPrefix(topic, topicRepliesPrefix) {
		return s.base().SelectQuery(topic, consumerGroup, offsets)
	}
	next := offsets.NextOffsetQuery(topic, consumerGroup)
	q := `
	SELECT * FROM (
		WITH last_processed AS (
			` + next.Query + `
		)
		SELECT "offset", transaction_id, uuid, payload, metadata FROM ` + pgTable(topic) + `
		WHERE
			metadata->>'` + metaWorker + `' = $1
			AND (
				(
					transaction_id = COALESCE((SELECT last_processed_transaction_id FROM last_processed), '0')
					AND "offset" > COALESCE((SELECT offset_acked FROM last_processed), 0)
				)
				OR transaction_id > COALESCE((SELECT last_processed_transaction_id FROM last_processed), '0')
			)
			AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
	) AS messages
	ORDER BY transaction_id ASC, "offset" ASC
	LIMIT 100`
	return wsql.Query{Query: q, Args: next.Args}
}
