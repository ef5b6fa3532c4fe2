package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/webhook"
)

var _ webhook.Store = (*Store)(nil)

type endpointRow struct {
	bun.BaseModel `bun:"table:webhook_endpoints"`

	ID             string     `bun:"id,pk"`
	AccountID      string     `bun:"account_id"`
	Name           string     `bun:"name"`
	URL            string     `bun:"url"`
	Events         string     `bun:"events"`
	Enabled        bool       `bun:"enabled"`
	Secret         string     `bun:"secret"`
	PreviousSecret string     `bun:"previous_secret"`
	PreviousUntil  *time.Time `bun:"previous_until"`
	CreatedAt      time.Time  `bun:"created_at"`
	UpdatedAt      time.Time  `bun:"updated_at"`
}

func toEndpointRow(e webhook.Endpoint) (*endpointRow, error) {
	ev, err := json.Marshal(e.Events)
	if err != nil {
		return nil, err
	}
	return &endpointRow{ID: e.ID, AccountID: e.AccountID, Name: e.Name, URL: e.URL, Events: string(ev), Enabled: e.Enabled,
		Secret: e.Secret, PreviousSecret: e.PreviousSecret, PreviousUntil: utc(e.PreviousUntil),
		CreatedAt: e.CreatedAt.UTC(), UpdatedAt: e.UpdatedAt.UTC()}, nil
}

func (r *endpointRow) endpoint() (webhook.Endpoint, error) {
	e := webhook.Endpoint{ID: r.ID, AccountID: r.AccountID, Name: r.Name, URL: r.URL, Enabled: r.Enabled,
		Secret: r.Secret, PreviousSecret: r.PreviousSecret, PreviousUntil: utc(r.PreviousUntil),
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
	if err := json.Unmarshal([]byte(r.Events), &e.Events); err != nil {
		return webhook.Endpoint{}, fmt.Errorf("sqlstore: endpoint %s events: %w", r.ID, err)
	}
	return e, nil
}

type deliveryRow struct {
	bun.BaseModel `bun:"table:webhook_deliveries"`

	ID             string     `bun:"id,pk"`
	Key            string     `bun:"key"`
	EndpointID     string     `bun:"endpoint_id"`
	AccountID      string     `bun:"account_id"`
	Event          string     `bun:"event"`
	JobID          string     `bun:"job_id"`
	Body           []byte     `bun:"body"`
	State          string     `bun:"state"`
	Attempts       int        `bun:"attempts"`
	NextAttemptAt  *time.Time `bun:"next_attempt_at"`
	LastStatusCode int        `bun:"last_status_code"`
	LastError      string     `bun:"last_error"`
	History        string     `bun:"history"`
	RedeliveryOf   string     `bun:"redelivery_of"`
	CreatedAt      time.Time  `bun:"created_at"`
}

func toDeliveryRow(d webhook.Delivery) (*deliveryRow, error) {
	h := d.History
	if h == nil {
		h = []webhook.Attempt{}
	}
	hist, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	body := d.Body
	if body == nil {
		body = []byte{}
	}
	return &deliveryRow{ID: d.ID, Key: d.Key, EndpointID: d.EndpointID, AccountID: d.AccountID, Event: d.Event,
		JobID: d.JobID, Body: body, State: string(d.State), Attempts: d.Attempts, NextAttemptAt: utc(d.NextAttemptAt),
		LastStatusCode: d.LastStatusCode, LastError: d.LastError, History: string(hist), RedeliveryOf: d.RedeliveryOf,
		CreatedAt: d.CreatedAt.UTC()}, nil
}

func (r *deliveryRow) delivery() (webhook.Delivery, error) {
	d := webhook.Delivery{ID: r.ID, Key: r.Key, EndpointID: r.EndpointID, AccountID: r.AccountID, Event: r.Event,
		JobID: r.JobID, Body: r.Body, State: webhook.State(r.State), Attempts: r.Attempts, NextAttemptAt: utc(r.NextAttemptAt),
		LastStatusCode: r.LastStatusCode, LastError: r.LastError, RedeliveryOf: r.RedeliveryOf, CreatedAt: r.CreatedAt.UTC()}
	if err := json.Unmarshal([]byte(r.History), &d.History); err != nil {
		return webhook.Delivery{}, fmt.Errorf("sqlstore: delivery %s history: %w", r.ID, err)
	}
	if len(d.History) == 0 {
		d.History = nil
	}
	for i := range d.History {
		d.History[i].At = d.History[i].At.UTC()
	}
	return d, nil
}

func rowsDeliveries(rows []deliveryRow) ([]webhook.Delivery, error) {
	out := make([]webhook.Delivery, len(rows))
	for i := range rows {
		d, err := rows[i].delivery()
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}

// CreateEndpoint implements webhook.Store.
func (s *Store) CreateEndpoint(ctx context.Context, e webhook.Endpoint) error {
	r, err := toEndpointRow(e)
	if err != nil {
		return err
	}
	_, err = s.w.NewInsert().Model(r).Exec(ctx)
	return mapErr("create endpoint "+e.ID, err)
}

// GetEndpoint implements webhook.Store.
func (s *Store) GetEndpoint(ctx context.Context, id string) (webhook.Endpoint, error) {
	var r endpointRow
	if err := s.r.NewSelect().Model(&r).Where("id = ?", id).Scan(ctx); err != nil {
		return webhook.Endpoint{}, mapErr("endpoint "+id, err)
	}
	return r.endpoint()
}

// ListEndpoints implements webhook.Store.
func (s *Store) ListEndpoints(ctx context.Context, accountID string) ([]webhook.Endpoint, error) {
	var rows []endpointRow
	if s.postgres {
		if err := s.r.NewSelect().Model(&rows).Where("account_id = ?", accountID).OrderExpr("created_at, id").Scan(ctx); err != nil {
			return nil, mapErr("list endpoints", err)
		}
	} else { // prepared on SQLite, as the job reads are (Store.readJob)
		st, err := s.hot.stmt(ctx, s.r, hotEndpoints)
		if err != nil {
			return nil, err
		}
		rs, err := st.QueryContext(ctx, accountID)
		if err != nil {
			return nil, mapErr("list endpoints", err)
		}
		if err := s.r.ScanRows(ctx, rs, &rows); err != nil {
			return nil, mapErr("list endpoints", err)
		}
	}
	out := make([]webhook.Endpoint, len(rows))
	for i := range rows {
		e, err := rows[i].endpoint()
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

// UpdateEndpoint implements webhook.Store, holding the row (FOR UPDATE on PostgreSQL; SQLite's
// single writer serialises the transaction).
func (s *Store) UpdateEndpoint(ctx context.Context, id string, fn func(*webhook.Endpoint) error) (webhook.Endpoint, error) {
	var out webhook.Endpoint
	err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var r endpointRow
		if err := s.forUpdate(tx.NewSelect().Model(&r).Where("id = ?", id), false).Scan(ctx); err != nil {
			return mapErr("endpoint "+id, err)
		}
		e, err := r.endpoint()
		if err != nil {
			return err
		}
		if err := fn(&e); err != nil {
			return err
		}
		nr, err := toEndpointRow(e)
		if err != nil {
			return err
		}
		nr.ID = id
		if _, err := tx.NewUpdate().Model(nr).WherePK().Exec(ctx); err != nil {
			return mapErr("update endpoint "+id, err)
		}
		out = e
		return nil
	})
	return out, err
}

// DeleteEndpoint implements webhook.Store; its deliveries go with it (ON DELETE CASCADE, and
// explicitly, for a SQLite connection without foreign keys).
func (s *Store) DeleteEndpoint(ctx context.Context, id string) error {
	return s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewDelete().Model((*deliveryRow)(nil)).Where("endpoint_id = ?", id).Exec(ctx); err != nil {
			return mapErr("delete deliveries of "+id, err)
		}
		res, err := tx.NewDelete().Model((*endpointRow)(nil)).Where("id = ?", id).Exec(ctx)
		return affected("endpoint "+id, res, err)
	})
}

// CreateDelivery implements webhook.Store: a key already there inserts nothing and is
// problem.ErrConflict.
func (s *Store) CreateDelivery(ctx context.Context, d webhook.Delivery) error {
	r, err := toDeliveryRow(d)
	if err != nil {
		return err
	}
	res, err := s.w.NewInsert().Model(r).On("CONFLICT (key) DO NOTHING").Exec(ctx)
	if err != nil {
		return mapErr("create delivery "+d.Key, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return errors.Join(fmt.Errorf("delivery %s: %w", d.Key, problem.ErrConflict), err)
	}
	return nil
}

// GetDelivery implements webhook.Store.
func (s *Store) GetDelivery(ctx context.Context, id string) (webhook.Delivery, error) {
	var r deliveryRow
	if err := s.r.NewSelect().Model(&r).Where("id = ?", id).Scan(ctx); err != nil {
		return webhook.Delivery{}, mapErr("delivery "+id, err)
	}
	return r.delivery()
}

// UpdateDelivery implements webhook.Store.
func (s *Store) UpdateDelivery(ctx context.Context, id string, fn func(*webhook.Delivery) error) (webhook.Delivery, error) {
	var out webhook.Delivery
	err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var r deliveryRow
		if err := s.forUpdate(tx.NewSelect().Model(&r).Where("id = ?", id), false).Scan(ctx); err != nil {
			return mapErr("delivery "+id, err)
		}
		d, err := r.delivery()
		if err != nil {
			return err
		}
		if err := fn(&d); err != nil {
			return err
		}
		nr, err := toDeliveryRow(d)
		if err != nil {
			return err
		}
		nr.ID, nr.Key = id, r.Key
		if _, err := tx.NewUpdate().Model(nr).WherePK().Exec(ctx); err != nil {
			return mapErr("update delivery "+id, err)
		}
		out = d
		return nil
	})
	return out, err
}

// ClaimDeliveries implements webhook.Store; concurrent claimers on PostgreSQL skip each other's
// locked rows.
func (s *Store) ClaimDeliveries(ctx context.Context, p webhook.ClaimParams) ([]webhook.Delivery, error) {
	if p.Limit <= 0 {
		return nil, nil
	}
	now := p.Now.UTC().Truncate(time.Microsecond)
	if due, err := s.anyDue(ctx, hotDueWebhooks, now); err != nil || !due {
		return nil, err
	}
	var out []webhook.Delivery
	err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var rows []deliveryRow
		q := tx.NewSelect().Model(&rows).Where("state = ?", string(webhook.StatePending)).
			Where("next_attempt_at <= ?", now).OrderExpr("next_attempt_at, id").Limit(int64(p.Limit))
		if err := s.forUpdate(q, true).Scan(ctx); err != nil {
			return mapErr("claim deliveries", err)
		}
		if len(rows) == 0 {
			return nil
		}
		ds, err := rowsDeliveries(rows)
		if err != nil {
			return err
		}
		ids := make([]string, len(rows))
		for i, r := range rows {
			ids[i] = r.ID
		}
		if _, err := tx.NewUpdate().Model((*deliveryRow)(nil)).Set("next_attempt_at = ?", now.Add(p.Lease)).
			Where("id IN (?)", bun.In(ids)).Exec(ctx); err != nil {
			return mapErr("claim deliveries", err)
		}
		out = ds
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ListDeliveries implements webhook.Store.
func (s *Store) ListDeliveries(ctx context.Context, p webhook.ListParams) (webhook.Page, error) {
	limit := p.NormalizeLimit()
	q := s.r.NewSelect().Model((*deliveryRow)(nil)).Where("endpoint_id = ?", p.EndpointID)
	if p.Cursor != "" {
		t, id, err := webhook.DecodeCursor(p.Cursor)
		if err != nil {
			return webhook.Page{}, err
		}
		q = q.Where("(created_at < ? OR (created_at = ? AND id < ?))", t, t, id)
	}
	var rows []deliveryRow
	if err := q.OrderExpr("created_at DESC, id DESC").Limit(int64(limit+1)).Scan(ctx, &rows); err != nil {
		return webhook.Page{}, mapErr("list deliveries", err)
	}
	ds, err := rowsDeliveries(rows)
	if err != nil {
		return webhook.Page{}, err
	}
	page := webhook.Page{Deliveries: ds}
	if len(ds) > limit {
		page.Deliveries = ds[:limit]
		page.NextCursor = webhook.EncodeCursor(ds[limit-1])
	}
	return page, nil
}
