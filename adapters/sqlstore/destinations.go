package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/mediajobs/mediajobs/core/destination"
	"github.com/mediajobs/mediajobs/core/problem"
)

var _ destination.Store = (*Store)(nil)

type destinationRow struct {
	bun.BaseModel `bun:"table:destinations"`

	ID          string    `bun:"id,pk"`
	AccountID   string    `bun:"account_id"`
	Name        string    `bun:"name"`
	Endpoint    string    `bun:"endpoint"`
	Bucket      string    `bun:"bucket"`
	Region      string    `bun:"region"`
	Prefix      string    `bun:"prefix"`
	PathStyle   bool      `bun:"path_style"`
	AccessKeyID string    `bun:"access_key_id"`
	SecretKeyID string    `bun:"secret_key_id"`
	SecretBox   []byte    `bun:"secret_box"`
	CreatedAt   time.Time `bun:"created_at"`
}

func (r *destinationRow) destination() destination.Destination {
	return destination.Destination{ID: r.ID, AccountID: r.AccountID, Name: r.Name, Endpoint: r.Endpoint, Bucket: r.Bucket,
		Region: r.Region, Prefix: r.Prefix, PathStyle: r.PathStyle, AccessKeyID: r.AccessKeyID,
		Secret: destination.Sealed{KeyID: r.SecretKeyID, Box: r.SecretBox}, CreatedAt: r.CreatedAt.UTC()}
}

func rowsDestinations(rows []destinationRow) []destination.Destination {
	out := make([]destination.Destination, len(rows))
	for i := range rows {
		out[i] = rows[i].destination()
	}
	return out
}

type destinationDeliveryRow struct {
	bun.BaseModel `bun:"table:destination_deliveries"`

	JobID         string     `bun:"job_id,pk"`
	AccountID     string     `bun:"account_id"`
	DestinationID string     `bun:"destination_id"`
	Path          string     `bun:"path"`
	Preset        string     `bun:"preset"`
	State         string     `bun:"state"`
	Files         string     `bun:"files"`
	Error         string     `bun:"error"`
	Attempts      int        `bun:"attempts"`
	Round         int        `bun:"round"`
	NextAttemptAt *time.Time `bun:"next_attempt_at"`
	CreatedAt     time.Time  `bun:"created_at"`
	UpdatedAt     time.Time  `bun:"updated_at"`
}

func toDestinationDeliveryRow(d destination.Delivery) (*destinationDeliveryRow, error) {
	files := d.Files
	if files == nil {
		files = []destination.File{}
	}
	b, err := json.Marshal(files)
	if err != nil {
		return nil, err
	}
	return &destinationDeliveryRow{JobID: d.JobID, AccountID: d.AccountID, DestinationID: d.DestinationID, Path: d.Path,
		Preset: d.Preset, State: string(d.State), Files: string(b), Error: d.Error, Attempts: d.Attempts, Round: d.Round,
		NextAttemptAt: utc(d.NextAttemptAt), CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC()}, nil
}

func (r *destinationDeliveryRow) delivery() (destination.Delivery, error) {
	d := destination.Delivery{JobID: r.JobID, AccountID: r.AccountID, DestinationID: r.DestinationID, Path: r.Path,
		Preset: r.Preset, State: destination.State(r.State), Error: r.Error, Attempts: r.Attempts, Round: r.Round,
		NextAttemptAt: utc(r.NextAttemptAt), CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
	if err := json.Unmarshal([]byte(r.Files), &d.Files); err != nil {
		return destination.Delivery{}, fmt.Errorf("sqlstore: delivery of %s files: %w", r.JobID, err)
	}
	if len(d.Files) == 0 {
		d.Files = nil
	}
	return d, nil
}

// CreateDestination implements destination.Store.
func (s *Store) CreateDestination(ctx context.Context, d destination.Destination) error {
	r := &destinationRow{ID: d.ID, AccountID: d.AccountID, Name: d.Name, Endpoint: d.Endpoint, Bucket: d.Bucket, Region: d.Region,
		Prefix: d.Prefix, PathStyle: d.PathStyle, AccessKeyID: d.AccessKeyID, SecretKeyID: d.Secret.KeyID, SecretBox: d.Secret.Box,
		CreatedAt: d.CreatedAt.UTC()}
	_, err := s.w.NewInsert().Model(r).Exec(ctx)
	return mapErr("create destination "+d.ID, err)
}

// GetDestination implements destination.Store.
func (s *Store) GetDestination(ctx context.Context, id string) (destination.Destination, error) {
	var r destinationRow
	if err := s.r.NewSelect().Model(&r).Where("id = ?", id).Scan(ctx); err != nil {
		return destination.Destination{}, mapErr("destination "+id, err)
	}
	return r.destination(), nil
}

// ListDestinations implements destination.Store.
func (s *Store) ListDestinations(ctx context.Context, accountID string) ([]destination.Destination, error) {
	var rows []destinationRow
	if err := s.r.NewSelect().Model(&rows).Where("account_id = ?", accountID).OrderExpr("created_at, id").Scan(ctx); err != nil {
		return nil, mapErr("list destinations", err)
	}
	return rowsDestinations(rows), nil
}

// ListSealedWith implements destination.Store.
func (s *Store) ListSealedWith(ctx context.Context, notKeyID string, limit int) ([]destination.Destination, error) {
	var rows []destinationRow
	if err := s.r.NewSelect().Model(&rows).Where("secret_key_id <> ?", notKeyID).OrderExpr("id").Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, mapErr("list destinations to re-seal", err)
	}
	return rowsDestinations(rows), nil
}

// SetSecret implements destination.Store.
func (s *Store) SetSecret(ctx context.Context, id string, sealed destination.Sealed) error {
	res, err := s.w.NewUpdate().Model((*destinationRow)(nil)).Set("secret_key_id = ?", sealed.KeyID).Set("secret_box = ?", sealed.Box).
		Where("id = ?", id).Exec(ctx)
	return affected("destination "+id, res, err)
}

// DeleteDestination implements destination.Store. The destination's row is locked first, as
// CreateJobDelivery locks it, so that a delivery made at the same time is either seen here or
// refused there.
func (s *Store) DeleteDestination(ctx context.Context, id string) error {
	return s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var r destinationRow
		if err := s.forUpdate(tx.NewSelect().Model(&r).Where("id = ?", id), false).Scan(ctx); err != nil {
			return mapErr("destination "+id, err)
		}
		n, err := tx.NewSelect().Model((*destinationDeliveryRow)(nil)).Where("destination_id = ?", id).
			Where("state IN (?)", bun.In([]string{string(destination.StateAwaiting), string(destination.StatePending)})).Count(ctx)
		if err != nil {
			return mapErr("deliveries of destination "+id, err)
		}
		if n > 0 {
			return fmt.Errorf("destination %s has %d deliveries to make: %w", id, n, problem.ErrConflict)
		}
		_, err = tx.NewDelete().Model((*destinationRow)(nil)).Where("id = ?", id).Exec(ctx)
		return mapErr("delete destination "+id, err)
	})
}

// CreateJobDelivery implements destination.Store. A destination deleted meanwhile is
// problem.ErrNotFound.
func (s *Store) CreateJobDelivery(ctx context.Context, d destination.Delivery) error {
	r, err := toDestinationDeliveryRow(d)
	if err != nil {
		return err
	}
	return s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var dr destinationRow
		if err := s.forUpdate(tx.NewSelect().Model(&dr).Column("id").Where("id = ?", d.DestinationID), false).Scan(ctx); err != nil {
			return mapErr("destination "+d.DestinationID, err)
		}
		_, err := tx.NewInsert().Model(r).Exec(ctx)
		return mapErr("create delivery of "+d.JobID, err)
	})
}

// GetJobDelivery implements destination.Store.
func (s *Store) GetJobDelivery(ctx context.Context, jobID string) (destination.Delivery, error) {
	var r destinationDeliveryRow
	if s.postgres {
		if err := s.r.NewSelect().Model(&r).Where("job_id = ?", jobID).Scan(ctx); err != nil {
			return destination.Delivery{}, mapErr("delivery of "+jobID, err)
		}
		return r.delivery()
	}
	// Prepared on SQLite, as the job reads are (Store.readJob).
	st, err := s.hot.stmt(ctx, s.r, hotJobDelivery)
	if err != nil {
		return destination.Delivery{}, err
	}
	if err := s.scanOne(ctx, st, jobID, &r, "delivery of "+jobID); err != nil {
		return destination.Delivery{}, err
	}
	return r.delivery()
}

// UpdateJobDelivery implements destination.Store.
func (s *Store) UpdateJobDelivery(ctx context.Context, jobID string, fn func(*destination.Delivery) error) (destination.Delivery, error) {
	var out destination.Delivery
	err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var r destinationDeliveryRow
		if err := s.forUpdate(tx.NewSelect().Model(&r).Where("job_id = ?", jobID), false).Scan(ctx); err != nil {
			return mapErr("delivery of "+jobID, err)
		}
		d, err := r.delivery()
		if err != nil {
			return err
		}
		if err := fn(&d); err != nil {
			return err
		}
		d.JobID = jobID
		nr, err := toDestinationDeliveryRow(d)
		if err != nil {
			return err
		}
		if _, err := tx.NewUpdate().Model(nr).WherePK().Exec(ctx); err != nil {
			return mapErr("update delivery of "+jobID, err)
		}
		out = d
		return nil
	})
	return out, err
}

// ClaimJobDeliveries implements destination.Store; concurrent claimers on PostgreSQL skip each
// other's locked rows.
func (s *Store) ClaimJobDeliveries(ctx context.Context, p destination.ClaimParams) ([]destination.Delivery, error) {
	if p.Limit <= 0 {
		return nil, nil
	}
	now := utcMicro(p.Now)
	if due, err := s.anyDue(ctx, hotDueDestinations, now); err != nil || !due {
		return nil, err
	}
	var out []destination.Delivery
	err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var rows []destinationDeliveryRow
		q := tx.NewSelect().Model(&rows).Where("state = ?", string(destination.StatePending)).
			Where("next_attempt_at <= ?", now).OrderExpr("next_attempt_at, job_id").Limit(int64(p.Limit))
		if err := s.forUpdate(q, true).Scan(ctx); err != nil {
			return mapErr("claim deliveries", err)
		}
		if len(rows) == 0 {
			return nil
		}
		ids := make([]string, len(rows))
		out = make([]destination.Delivery, len(rows))
		for i := range rows {
			d, err := rows[i].delivery()
			if err != nil {
				return err
			}
			ids[i], out[i] = rows[i].JobID, d
		}
		_, err := tx.NewUpdate().Model((*destinationDeliveryRow)(nil)).Set("next_attempt_at = ?", now.Add(p.Lease)).
			Where("job_id IN (?)", bun.In(ids)).Exec(ctx)
		return mapErr("claim deliveries", err)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
