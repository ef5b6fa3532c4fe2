package sqlstore

import (
	"context"
	"time"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/workqueue"
	"github.com/uptrace/bun"
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

var _ workqueue.Credentials = (*Store)(nil)

// credentialRow is a worker credential as the worker_credentials table holds it.
type credentialRow struct {
	bun.BaseModel `bun:"table:worker_credentials"`

	ID         string     `bun:"id,pk"`
	Name       string     `bun:"name"`
	Class      string     `bun:"class"`
	SecretHash string     `bun:"secret_hash"`
	CreatedAt  time.Time  `bun:"created_at"`
	RevokedAt  *time.Time `bun:"revoked_at"`
	LastSeen   *time.Time `bun:"last_seen"`
	Version    string     `bun:"version,nullzero"`
}

func (r credentialRow) credential() workqueue.Credential {
	return workqueue.Credential{ID: r.ID, Name: r.Name, Class: job.Class(r.Class), CreatedAt: r.CreatedAt.UTC(),
		RevokedAt: utc(r.RevokedAt), LastSeen: utc(r.LastSeen), Version: r.Version}
}

// CreateCredential stores a worker credential; a name in use is problem.ErrConflict.
func (s *Store) CreateCredential(ctx context.Context, c workqueue.Credential, hash string) error {
	r := &credentialRow{ID: c.ID, Name: c.Name, Class: string(c.Class), SecretHash: hash,
		CreatedAt: c.CreatedAt.UTC().Truncate(time.Microsecond), RevokedAt: utc(c.RevokedAt), LastSeen: utc(c.LastSeen), Version: c.Version}
	_, err := s.w.NewInsert().Model(r).Exec(ctx)
	return mapErr("worker credential "+c.Name, err)
}

// CredentialByHash returns the credential of a secret's hash, revoked or not.
func (s *Store) CredentialByHash(ctx context.Context, hash string) (workqueue.Credential, error) {
	var r credentialRow
	if err := s.r.NewSelect().Model(&r).Where("secret_hash = ?", hash).Scan(ctx); err != nil {
		return workqueue.Credential{}, mapErr("worker credential", err)
	}
	return r.credential(), nil
}

// CredentialByID returns the credential of an ID, revoked or not.
func (s *Store) CredentialByID(ctx context.Context, id string) (workqueue.Credential, error) {
	var r credentialRow
	if err := s.r.NewSelect().Model(&r).Where("id = ?", id).Scan(ctx); err != nil {
		return workqueue.Credential{}, mapErr("worker credential "+id, err)
	}
	return r.credential(), nil
}

// ListCredentials returns every credential by name.
func (s *Store) ListCredentials(ctx context.Context) ([]workqueue.Credential, error) {
	var rows []credentialRow
	if err := s.r.NewSelect().Model(&rows).OrderExpr("name").Scan(ctx); err != nil {
		return nil, mapErr("worker credentials", err)
	}
	out := make([]workqueue.Credential, len(rows))
	for i, r := range rows {
		out[i] = r.credential()
	}
	return out, nil
}

// RevokeCredential marks the credential of that ID or name revoked; an earlier revocation stands.
func (s *Store) RevokeCredential(ctx context.Context, idOrName string, at time.Time) (workqueue.Credential, error) {
	var r credentialRow
	err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewUpdate().Model((*credentialRow)(nil)).Set("revoked_at = ?", at.UTC().Truncate(time.Microsecond)).
			Where("(id = ? OR name = ?) AND revoked_at IS NULL", idOrName, idOrName).Exec(ctx); err != nil {
			return err
		}
		return tx.NewSelect().Model(&r).Where("id = ? OR name = ?", idOrName, idOrName).Limit(1).Scan(ctx)
	})
	if err != nil {
		return workqueue.Credential{}, mapErr("worker credential "+idOrName, err)
	}
	return r.credential(), nil
}

// TouchCredential records a claim made with the credential.
func (s *Store) TouchCredential(ctx context.Context, id, version string, at time.Time) error {
	_, err := s.w.NewUpdate().Model((*credentialRow)(nil)).
		Set("last_seen = ?", at.UTC().Truncate(time.Microsecond)).Set("version = ?", version).
		Where("id = ?", id).Exec(ctx)
	return mapErr("worker credential "+id, err)
}
