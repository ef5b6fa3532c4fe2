package workqueue

import (
	"context"
	"time"

	"github.com/mediajobs/mediajobs/core/job"
)

// Registry is the port of the runners the control plane has heard from: every claim records its
// runner, and a class with a runner seen within a while has capacity. It answers whether, say,
// GPU work can run at all, on every replica.
type Registry interface {
	// Seen records that the runner name of class asked for work at at.
	Seen(ctx context.Context, w Worker) error
	// Live counts, per class, the runners seen at or after since.
	Live(ctx context.Context, since time.Time) (map[job.Class]int, error)
}

// Worker is a runner as the registry knows it.
type Worker struct {
	Name  string
	Class job.Class
	At    time.Time
}

// LiveWithin is how recently a runner must have asked for work to count as live: a claim
// long-polls for at most 20 s, so a live runner asks at least that often.
const LiveWithin = time.Minute
