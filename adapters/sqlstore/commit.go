package sqlstore

import (
	"context"
	"errors"
	"sync"

	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/uptrace/bun"
)

// SQLite commits one writer at a time, and a commit costs the same pages for one row as for a
// hundred. So on SQLite, job Creates that arrive together share one transaction (group commit):
// under load, each POST /jobs pays a fraction of a commit.
const maxBatch = 256

var errClosed = errors.New("sqlstore: store closed")

type createReq struct {
	row  *jobRow
	done chan error
}

type committer struct {
	reqs    chan createReq
	stopped chan struct{}
	wg      sync.WaitGroup
}

func (s *Store) startCommitter() {
	c := &committer{reqs: make(chan createReq), stopped: make(chan struct{})}
	s.group = c
	c.wg.Go(func() {
		for {
			select {
			case <-c.stopped:
				return
			case req := <-c.reqs:
				batch := []createReq{req}
			drain:
				for len(batch) < maxBatch {
					select {
					case req := <-c.reqs:
						batch = append(batch, req)
					default:
						break drain
					}
				}
				s.commitBatch(batch)
			}
		}
	})
}

func (c *committer) stop() {
	close(c.stopped)
	c.wg.Wait()
}

// create hands the row to the committer and waits for its commit. Once handed over, the insert
// may commit whatever ctx does, so it waits for the answer rather than guess.
func (c *committer) create(ctx context.Context, r *jobRow) error {
	req := createReq{row: r, done: make(chan error, 1)}
	select {
	case c.reqs <- req:
		return <-req.done
	case <-c.stopped:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// commitBatch inserts every row of the batch in one transaction. A row refused for a taken ID
// fails alone (SQLite undoes just that statement); any other error fails the whole batch.
func (s *Store) commitBatch(batch []createReq) {
	errs := make([]error, len(batch))
	err := s.w.RunInTx(context.Background(), nil, func(ctx context.Context, tx bun.Tx) error {
		for i, req := range batch {
			_, err := tx.NewInsert().Model(req.row).Exec(ctx)
			if err = mapErr("create job "+req.row.ID, err); err != nil {
				if !errors.Is(err, problem.ErrConflict) {
					return err
				}
				errs[i] = err
			}
		}
		return nil
	})
	for i, req := range batch {
		if err != nil {
			errs[i] = err
		}
		req.done <- errs[i]
	}
}
