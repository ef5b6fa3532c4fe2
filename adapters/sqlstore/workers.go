package sqlstore

import (
	"context"
	"time"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

var _ workqueue.Registry = (*Store)(nil)

// Seen records a runner's claim; an older sighting leaves a newer one.
func (s *Store) Seen(ctx context.Context, w workqueue.Worker) error {
	_, err := s.w.NewRaw(`INSERT INTO workers (name, class, last_seen) VALUES (?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET class = excluded.class,
		last_seen = CASE WHEN excluded.last_seen > workers.last_seen THEN excluded.last_seen ELSE workers.last_seen END`,
		w.Name, string(w.Class), w.At.UTC().Truncate(time.Microsecond)).Exec(ctx)
	return mapErr("worker "+w.Name, err)
}

// Live counts, per class, the runners seen at or after since.
func (s *Store) Live(ctx context.Context, since time.Time) (map[job.Class]int, error) {
	var rows []struct {
		Class string `bun:"class"`
		N     int    `bun:"n"`
	}
	err := s.r.NewRaw(`SELECT class, COUNT(*) AS n FROM workers WHERE last_seen >= ? GROUP BY class`,
		since.UTC().Truncate(time.Microsecond)).Scan(ctx, &rows)
	if err != nil {
		return nil, mapErr("workers", err)
	}
	out := map[job.Class]int{}
	for _, r := range rows {
		out[job.Class(r.Class)] = r.N
	}
	return out, nil
}

// QueueDepth counts the waiting jobs of each compute class (the metrics' queue depth).
func (s *Store) QueueDepth(ctx context.Context) (map[job.Class]int, error) {
	var rows []struct {
		Class string `bun:"class"`
		N     int    `bun:"n"`
	}
	err := s.r.NewRaw(`SELECT class, COUNT(*) AS n FROM jobs WHERE status = ? GROUP BY class`,
		string(job.StatusWaiting)).Scan(ctx, &rows)
	if err != nil {
		return nil, mapErr("queue depth", err)
	}
	out := map[job.Class]int{}
	for _, r := range rows {
		out[job.Class(r.Class)] = r.N
	}
	return out, nil
}
