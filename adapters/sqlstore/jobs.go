package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/schema"

	"github.com/mediajobs/mediajobs/core/job"
)

// jobRow is a job as the jobs table holds it. The JSON parts are text so that the client's
// bytes come back unchanged; a nil or empty RawMessage is NULL and comes back nil.
type jobRow struct {
	bun.BaseModel `bun:"table:jobs"`

	ID           string     `bun:"id,pk"`
	AccountID    string     `bun:"account_id"`
	Type         string     `bun:"type"`
	Inputs       *string    `bun:"inputs"`
	Params       *string    `bun:"params"`
	Class        string     `bun:"class"`
	TimeoutNs    int64      `bun:"timeout_ns"`
	RetryOf      string     `bun:"retry_of,nullzero"`
	BatchID      string     `bun:"batch_id,nullzero"`
	Pattern      string     `bun:"pattern"`
	Priority     int        `bun:"priority"`
	ParentID     string     `bun:"parent_id,nullzero"`
	Split        *string    `bun:"split"`
	Status       string     `bun:"status"`
	Progress     float64    `bun:"progress"`
	ProcessedMs  int64      `bun:"processed_ms"`
	Output       *string    `bun:"output"`
	OutputData   *string    `bun:"output_data"`
	Error        *string    `bun:"error"`
	Cost         *string    `bun:"cost"`
	ComputeMs    int64      `bun:"compute_ms"`
	Attempt      int        `bun:"attempt"`
	Requeues     int        `bun:"requeues"`
	Retries      int        `bun:"retries"`
	Worker       string     `bun:"worker,nullzero"`
	Runner       string     `bun:"runner,nullzero"`
	Avoid        string     `bun:"avoid_runner,nullzero"`
	AvoidUntil   *time.Time `bun:"avoid_until"`
	Uploads      *string    `bun:"uploads"`
	LeaseUntil   *time.Time `bun:"lease_until"`
	CreatedAt    time.Time  `bun:"created_at"`
	UpdatedAt    time.Time  `bun:"updated_at"`
	DispatchedAt *time.Time `bun:"dispatched_at"`
	StartedAt    *time.Time `bun:"started_at"`
	ExecStarted  *time.Time `bun:"exec_started_at"`
	FinishedAt   *time.Time `bun:"finished_at"`
}

func rawText(m json.RawMessage) *string {
	if len(m) == 0 {
		return nil
	}
	s := string(m)
	return &s
}

func textRaw(s *string) json.RawMessage {
	if s == nil {
		return nil
	}
	return json.RawMessage(*s)
}

// jsonText marshals v, nil when v is a nil pointer.
func jsonText[T any](v *T) (*string, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	s := string(b)
	return &s, nil
}

func textJSON[T any](s *string) (*T, error) {
	if s == nil {
		return nil, nil
	}
	v := new(T)
	if err := json.Unmarshal([]byte(*s), v); err != nil {
		return nil, err
	}
	return v, nil
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := t.UTC()
	return &v
}

func toRow(j *job.Job) (*jobRow, error) {
	r := &jobRow{
		ID: j.ID, AccountID: j.AccountID, Type: j.Type, Inputs: rawText(j.Inputs), Params: rawText(j.Params),
		Class: string(j.Class), TimeoutNs: int64(j.Timeout), RetryOf: j.RetryOf, BatchID: j.BatchID, Pattern: string(j.Pattern),
		Priority: j.Priority.Rank(), Status: string(j.Status), Progress: j.Progress, ProcessedMs: j.ProcessedMs, ComputeMs: j.ComputeMs, Attempt: j.Attempt, Requeues: j.Requeues, Retries: j.Retries,
		Worker: j.Worker, Runner: j.Runner, Avoid: j.Avoid, AvoidUntil: utc(j.AvoidUntil), ParentID: j.ParentID, LeaseUntil: utc(j.LeaseUntil), CreatedAt: j.CreatedAt.UTC(), UpdatedAt: j.UpdatedAt.UTC(),
		DispatchedAt: utc(j.DispatchedAt), StartedAt: utc(j.StartedAt), ExecStarted: utc(j.ExecStartedAt), FinishedAt: utc(j.FinishedAt),
	}
	var err error
	if len(j.Uploads) > 0 {
		if r.Uploads, err = jsonText(&j.Uploads); err != nil {
			return nil, fmt.Errorf("job %s: uploads: %w", j.ID, err)
		}
	}
	if j.Output != nil {
		// Data lives in its own column, byte for byte: json.Marshal would compact it.
		o := *j.Output
		o.Data = nil
		if r.Output, err = jsonText(&o); err != nil {
			return nil, fmt.Errorf("job %s: output: %w", j.ID, err)
		}
		r.OutputData = rawText(j.Output.Data)
	}
	if r.Split, err = jsonText(j.Split); err != nil {
		return nil, fmt.Errorf("job %s: split: %w", j.ID, err)
	}
	if r.Error, err = jsonText(j.Error); err != nil {
		return nil, fmt.Errorf("job %s: error: %w", j.ID, err)
	}
	if r.Cost, err = jsonText(j.Cost); err != nil {
		return nil, fmt.Errorf("job %s: cost: %w", j.ID, err)
	}
	return r, nil
}

func (r *jobRow) job() (*job.Job, error) {
	j := &job.Job{
		ID: r.ID, AccountID: r.AccountID, Type: r.Type, Inputs: textRaw(r.Inputs), Params: textRaw(r.Params),
		Class: job.Class(r.Class), Timeout: time.Duration(r.TimeoutNs), RetryOf: r.RetryOf, BatchID: r.BatchID, Pattern: job.Pattern(r.Pattern),
		Priority: job.PriorityOfRank(r.Priority), Status: job.Status(r.Status), Progress: r.Progress, ProcessedMs: r.ProcessedMs, ComputeMs: r.ComputeMs, Attempt: r.Attempt, Requeues: r.Requeues, Retries: r.Retries,
		Worker: r.Worker, Runner: r.Runner, Avoid: r.Avoid, AvoidUntil: utc(r.AvoidUntil), ParentID: r.ParentID,
		LeaseUntil: utc(r.LeaseUntil), CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
		DispatchedAt: utc(r.DispatchedAt), StartedAt: utc(r.StartedAt), ExecStartedAt: utc(r.ExecStarted), FinishedAt: utc(r.FinishedAt),
	}
	var err error
	if r.Uploads != nil {
		if err := json.Unmarshal([]byte(*r.Uploads), &j.Uploads); err != nil {
			return nil, fmt.Errorf("job %s: uploads: %w", r.ID, err)
		}
	}
	if j.Output, err = textJSON[job.Output](r.Output); err != nil {
		return nil, fmt.Errorf("job %s: output: %w", r.ID, err)
	}
	if j.Output != nil {
		j.Output.Data = textRaw(r.OutputData)
		// The headline file is one of the files: point at it, as job.NewOutput does.
		if f := j.Output.File; f != nil {
			for i := range j.Output.Files {
				if j.Output.Files[i].Path == f.Path && j.Output.Files[i].URL == f.URL {
					j.Output.File = &j.Output.Files[i]
					break
				}
			}
		}
	}
	if j.Split, err = textJSON[job.Split](r.Split); err != nil {
		return nil, fmt.Errorf("job %s: split: %w", r.ID, err)
	}
	if j.Error, err = textJSON[job.Error](r.Error); err != nil {
		return nil, fmt.Errorf("job %s: error: %w", r.ID, err)
	}
	if j.Cost, err = textJSON[job.Cost](r.Cost); err != nil {
		return nil, fmt.Errorf("job %s: cost: %w", r.ID, err)
	}
	return j, nil
}

func rowsJobs(rows []jobRow) ([]*job.Job, error) {
	out := make([]*job.Job, 0, len(rows))
	for i := range rows {
		j, err := rows[i].job()
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, nil
}

// Create saves a new job; an existing ID is problem.ErrConflict.
func (s *Store) Create(ctx context.Context, j *job.Job) error {
	r, err := toRow(j)
	if err != nil {
		return err
	}
	return s.group.create(ctx, r)
}

// Get returns a job or problem.ErrNotFound.
func (s *Store) Get(ctx context.Context, id string) (*job.Job, error) {
	if s.postgres {
		var r jobRow
		if err := s.r.NewSelect().Model(&r).Where("id = ?", id).Scan(ctx); err != nil {
			return nil, mapErr("job "+id, err)
		}
		return r.job()
	}
	st, err := s.hot.stmt(ctx, s.r, hotJob)
	if err != nil {
		return nil, err
	}
	return s.readJob(ctx, st, id)
}

// readJob reads job id with st, a prepared hotJob or hotJobLocked. The job reads are prepared
// on SQLite only, whose parsing is this process's CPU: PostgreSQL parses on its server, and a
// statement it prepared fails for good once a migration changes a column's type under it.
func (s *Store) readJob(ctx context.Context, st *sql.Stmt, id string) (*job.Job, error) {
	var r jobRow
	if err := s.scanOne(ctx, st, id, &r, "job "+id); err != nil {
		return nil, err
	}
	return r.job()
}

// scanOne reads the one row the prepared st answers for arg into dst, a bun model; no row is
// problem.ErrNotFound, and every error is mapErr's, named what.
func (s *Store) scanOne(ctx context.Context, st *sql.Stmt, arg any, dst any, what string) error {
	rows, err := st.QueryContext(ctx, arg)
	if err != nil {
		return mapErr(what, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return mapErr(what, err)
		}
		return mapErr(what, sql.ErrNoRows)
	}
	if err := s.r.ScanRow(ctx, rows, dst); err != nil {
		return mapErr(what, err)
	}
	return mapErr(what, rows.Close())
}

// forUpdate locks the selected rows on PostgreSQL. SQLite has no row locks: its write
// transactions begin IMMEDIATE on the one writer connection, which serialises them.
func (s *Store) forUpdate(q *bun.SelectQuery, skipLocked bool) *bun.SelectQuery {
	switch {
	case !s.postgres:
		return q
	case skipLocked:
		return q.For("UPDATE SKIP LOCKED")
	default:
		return q.For("UPDATE")
	}
}

// Update loads the job with its row locked, calls fn and writes back what fn left, in one
// transaction. fn's error rolls back and is returned as is.
func (s *Store) Update(ctx context.Context, id string, fn func(*job.Job) error) (*job.Job, error) {
	var out *job.Job
	emitted := false
	stmts, err := s.writerStmts(ctx, hotJobLocked, hotJobWrite, hotOutbox, hotLedgerAppend, hotBalanceAdd)
	if err != nil {
		return nil, err
	}
	locked, write, outbox, ledger := stmts[0], stmts[1], stmts[2], stmts[3:]
	err = s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		j, err := s.readLocked(ctx, tx, locked, id)
		if err != nil {
			return err
		}
		if err := fn(j); err != nil {
			return err
		}
		j.ID = id
		if err := s.writeChange(ctx, tx, write, outbox, ledger, j); err != nil {
			return err
		}
		emitted = len(j.Outbox) > 0
		j.Outbox = nil
		out = j
		return nil
	})
	if err != nil {
		return nil, err
	}
	if emitted {
		s.outboxWritten()
	}
	return out, nil
}

// readLocked reads job id in tx with its row locked (on PostgreSQL; SQLite's write transaction
// holds the database), through locked, the prepared hotJobLocked, where there is one.
func (s *Store) readLocked(ctx context.Context, tx bun.Tx, locked *sql.Stmt, id string) (*job.Job, error) {
	if locked == nil {
		var r jobRow
		if err := s.forUpdate(tx.NewSelect().Model(&r).Where("id = ?", id), false).Scan(ctx); err != nil {
			return nil, mapErr("job "+id, err)
		}
		return r.job()
	}
	st := tx.StmtContext(ctx, locked)
	defer st.Close()
	return s.readJob(ctx, st, id)
}

// UpdateMany loads the jobs with their rows locked (in ID order, so that concurrent bulk updates
// cannot deadlock), calls fn on each, and writes back the changed ones with their outbox
// messages, all in one transaction.
func (s *Store) UpdateMany(ctx context.Context, ids []string, fn func(*job.Job) error) ([]*job.Job, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	stmts, err := s.writerStmts(ctx, hotJobWrite, hotOutbox, hotLedgerAppend, hotBalanceAdd)
	if err != nil {
		return nil, err
	}
	write, outbox, ledger := stmts[0], stmts[1], stmts[2:]
	var out []*job.Job
	emitted := false
	err = s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		out, emitted = out[:0], false
		var rows []jobRow
		if err := s.forUpdate(tx.NewSelect().Model(&rows).Where("id IN (?)", bun.In(ids)).OrderExpr("id"), false).Scan(ctx); err != nil {
			return mapErr("jobs", err)
		}
		byID := make(map[string]*jobRow, len(rows))
		for i := range rows {
			byID[rows[i].ID] = &rows[i]
		}
		for _, id := range ids {
			r, ok := byID[id]
			if !ok {
				continue
			}
			delete(byID, id) // an ID given twice is one job
			j, err := r.job()
			if err != nil {
				return err
			}
			err = fn(j)
			if errors.Is(err, job.ErrSkip) {
				continue
			}
			if err != nil {
				return err
			}
			j.ID = id
			if err := s.writeChange(ctx, tx, write, outbox, ledger, j); err != nil {
				return err
			}
			emitted = emitted || len(j.Outbox) > 0
			j.Outbox = nil
			out = append(out, j)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if emitted {
		s.outboxWritten()
	}
	return out, nil
}

// writeChange writes a job change in tx: its row (write), its messages (enqueue, through
// outbox) and the charges among them (chargeIn, through ledger), each statement writerStmts'
// or nil.
func (s *Store) writeChange(ctx context.Context, tx bun.Tx, write, outbox *sql.Stmt, ledger []*sql.Stmt, j *job.Job) error {
	if err := s.write(ctx, tx, write, j); err != nil {
		return err
	}
	if err := enqueue(ctx, tx, outbox, j.Outbox, j.UpdatedAt); err != nil {
		return err
	}
	return chargeIn(ctx, tx, ledger, j.Outbox, j.UpdatedAt)
}

// write writes j's row in tx, through prepared, the hotJobWrite from writerStmts, or bun's
// update where it is nil (PostgreSQL).
func (s *Store) write(ctx context.Context, tx bun.Tx, prepared *sql.Stmt, j *job.Job) error {
	r, err := toRow(j)
	if err != nil {
		return err
	}
	if prepared == nil {
		_, err = tx.NewUpdate().Model(r).WherePK().Exec(ctx)
	} else {
		_, err = tx.StmtContext(ctx, prepared).ExecContext(ctx, jobWriteArgs(tx.Dialect(), r)...)
	}
	return mapErr("update job "+j.ID, err)
}

// jobColumns are the columns of jobRow that an update writes (all but the key), in the order
// of jobWriteText's SET and of jobWriteArgs.
func jobColumns(d schema.Dialect) []*schema.Field {
	var out []*schema.Field
	for _, f := range d.Tables().Get(reflect.TypeFor[jobRow]()).DataFields {
		if !f.SkipUpdate() {
			out = append(out, f)
		}
	}
	return out
}

// jobWriteText is the UPDATE of a whole job row by its ID, every column a parameter: those of
// jobColumns, then the ID.
func jobWriteText(db *bun.DB) string {
	var set []string
	for _, f := range jobColumns(db.Dialect()) {
		set = append(set, string(f.SQLName)+" = ?")
	}
	return `UPDATE "jobs" SET ` + strings.Join(set, ", ") + ` WHERE "id" = ?`
}

// jobWriteArgs are r's values for jobWriteText, bound as bun writes them into its own text: a
// time as timeText (SQLite compares stored times as text), NULL for a nil pointer and for an
// empty nullzero column.
func jobWriteArgs(d schema.Dialect, r *jobRow) []any {
	v := reflect.ValueOf(r).Elem()
	fields := jobColumns(d)
	args := make([]any, 0, len(fields)+1)
	for _, f := range fields {
		fv := f.Value(v)
		switch {
		case f.NullZero && fv.IsZero(), fv.Kind() == reflect.Pointer && fv.IsNil():
			args = append(args, nil)
			continue
		case fv.Kind() == reflect.Pointer:
			fv = fv.Elem()
		}
		if t, ok := fv.Interface().(time.Time); ok {
			args = append(args, timeText(d, t))
		} else {
			args = append(args, fv.Interface())
		}
	}
	return append(args, r.ID)
}

// List returns an account's jobs newest first by (created_at, id), a keyset page at a time.
func (s *Store) List(ctx context.Context, p job.ListParams) (job.Page, error) {
	limit := p.NormalizeLimit()
	// A split job's parts are its own business: never listed.
	q := s.r.NewSelect().Model((*jobRow)(nil)).Where("account_id = ?", p.AccountID).Where("parent_id IS NULL")
	if p.Status != "" {
		q = q.Where("status = ?", string(p.Status))
	}
	if p.Type != "" {
		q = q.Where("type = ?", p.Type)
	}
	if p.Cursor != "" {
		t, id, err := job.DecodeCursor(p.Cursor)
		if err != nil {
			return job.Page{}, err
		}
		q = q.Where("(created_at, id) < (?, ?)", t, id)
	}
	var rows []jobRow
	if err := q.OrderExpr("created_at DESC, id DESC").Limit(int64(limit+1)).Scan(ctx, &rows); err != nil {
		return job.Page{}, mapErr("list jobs", err)
	}
	jobs, err := rowsJobs(rows)
	if err != nil {
		return job.Page{}, err
	}
	page := job.Page{Jobs: jobs}
	if len(jobs) > limit {
		page.Jobs = jobs[:limit]
		page.NextCursor = job.EncodeCursor(jobs[limit-1])
	}
	return page, nil
}

// Claim moves up to p.Limit waiting jobs of p.Class, in the order of job.Order, to dispatched
// through job.Dispatch. On PostgreSQL concurrent claimers skip each other's locked rows; a
// cancel committed first has left the row, and one in flight holds it.
func (s *Store) Claim(ctx context.Context, p job.ClaimParams) ([]*job.Job, error) {
	if p.Limit <= 0 {
		return nil, nil
	}
	// Nothing waiting of the class, no write transaction (hotAnyWaiting). A job that commits
	// just after the read wakes the claimer (service.Runs waits for it from before the claim),
	// as it would had the claim itself run a moment earlier.
	if waiting, err := s.any(ctx, hotAnyWaiting, string(p.Class)); err != nil || !waiting {
		return nil, err
	}
	var prepared *sql.Stmt
	if !s.postgres {
		// Prepared before the transaction, which holds SQLite's one writer connection.
		st, err := s.hot.claim(ctx, s.w, s.claimText(p))
		if err != nil {
			return nil, err
		}
		prepared = st
	}
	stmts, err := s.writerStmts(ctx, hotJobWrite, hotJobLocked)
	if err != nil {
		return nil, err
	}
	var out []*job.Job
	err = s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		// Claims take turns (on PostgreSQL; SQLite's single writer serialises them already): a
		// claim looks only at each account's first p.Limit jobs of each priority, so one that
		// skipped another claim's locked rows could miss the jobs behind them.
		if err := s.lockClaims(ctx, tx); err != nil {
			return err
		}
		ids, err := s.claimIDs(ctx, tx, p, prepared)
		if err != nil {
			return mapErr("claim jobs", err)
		}
		if len(ids) == 0 {
			return nil
		}
		jobs, err := s.claimedRows(ctx, tx, stmts[1], ids)
		if err != nil {
			return err
		}
		for i, j := range jobs {
			if err := p.Dispatch(j, i); err != nil {
				return err
			}
			if err := s.write(ctx, tx, stmts[0], j); err != nil {
				return err
			}
		}
		out = jobs
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// claimText is the text of the prepared statement of a claim of p (claimQuery with params).
// It depends only on the class, the limit and the plans' caps, and bun took 41 µs to write it,
// which every claim paid to find its statement: it is kept by those, for up to maxClaims of
// them.
func (s *Store) claimText(p job.ClaimParams) string {
	var key strings.Builder
	fmt.Fprintf(&key, "%s/%d", p.Class, p.Limit)
	for _, plan := range slices.Sorted(maps.Keys(p.Concurrency)) {
		fmt.Fprintf(&key, "/%q=%d", plan, p.Concurrency[plan])
	}
	s.hot.mu.Lock()
	text, ok := s.hot.claimTexts[key.String()]
	s.hot.mu.Unlock()
	if ok {
		return text
	}
	text = s.claimQuery(s.w, p, true).String()
	s.hot.mu.Lock()
	defer s.hot.mu.Unlock()
	if s.hot.claimTexts == nil {
		s.hot.claimTexts = map[string]string{}
	}
	if len(s.hot.claimTexts) < s.hot.maxClaims {
		s.hot.claimTexts[key.String()] = text
	}
	return text
}

// claimedRows reads the rows of the claimed ids, in their order: on SQLite one by one through
// locked, the prepared hotJobLocked (a claim takes one job a slot, mostly one, and bun's text
// of the read was a statement to parse at every claim); on PostgreSQL, where locked is nil,
// all in one query.
func (s *Store) claimedRows(ctx context.Context, tx bun.Tx, locked *sql.Stmt, ids []string) ([]*job.Job, error) {
	if locked != nil {
		jobs := make([]*job.Job, 0, len(ids))
		for _, id := range ids {
			j, err := s.readLocked(ctx, tx, locked, id)
			if err != nil {
				return nil, err
			}
			jobs = append(jobs, j)
		}
		return jobs, nil
	}
	var rows []jobRow
	if err := tx.NewSelect().Model(&rows).Where("id IN (?)", bun.In(ids)).Scan(ctx); err != nil {
		return nil, mapErr("claim jobs", err)
	}
	place := make(map[string]int, len(ids))
	for i, id := range ids {
		place[id] = i
	}
	slices.SortFunc(rows, func(a, b jobRow) int { return place[a.ID] - place[b.ID] })
	return rowsJobs(rows)
}

// claimQuery is a claim's choice of up to p.Limit job IDs, on db; with params, the runner and
// the time are the parameters ?1 and ?2 of a statement to prepare (claimIDs). Only the IDs are
// ordered and locked, then the chosen rows read: ordering whole rows (their inputs and params)
// spilled a backlog's sort to disk. The status is checked on the row itself as well: PostgreSQL
// checks a row it waited for again against the locked table's own conditions only, not the
// subquery's.
func (s *Store) claimQuery(db bun.IDB, p job.ClaimParams, params bool) *bun.SelectQuery {
	groups, ranked := s.candidates(db, p, params)
	if len(p.Concurrency) > 0 {
		ranked = withinCaps(db, ranked, p)
	}
	q := db.NewSelect().With("grp", groups).TableExpr("jobs AS job_row").ColumnExpr("job_row.id").
		Join("JOIN (?) AS o ON o.id = job_row.id", ranked).
		Where("job_row.status = ?", string(job.StatusWaiting)).OrderExpr(claimOrder).Limit(int64(p.Limit))
	if s.postgres {
		q = q.For("UPDATE OF job_row SKIP LOCKED")
	}
	return q
}

// claimIDs runs a claim's choice of job IDs (claimQuery) in tx. On PostgreSQL bun writes it out
// whole and the server parses it; on SQLite, where parsing it took a third of a claim's time,
// it runs prepared: one statement for each text (a class, a limit, the plans' caps), kept with
// the store's hot statements, with the runner and the time as its parameters (candidates).
func (s *Store) claimIDs(ctx context.Context, tx bun.Tx, p job.ClaimParams, prepared *sql.Stmt) ([]string, error) {
	var ids []string
	if prepared == nil {
		err := s.claimQuery(tx, p, false).Scan(ctx, &ids)
		return ids, err
	}
	st := tx.StmtContext(ctx, prepared)
	defer st.Close()
	rows, err := st.QueryContext(ctx, p.Runner, timeText(tx.Dialect(), p.Now))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// claimOrder is job.Order over the columns of ranked: priority, turn, the account served
// least recently (never served first), age.
const claimOrder = "o.priority DESC, o.turn, CASE WHEN o.served IS NULL THEN 0 ELSE 1 END, o.served, o.created_at, o.id"

// ranked is the waiting jobs of a class with what job.Order sorts them by: turn, the job's rank
// among its account's waiting jobs of its priority, and served, the account's latest dispatch
// of the class.
func (s *Store) ranked(tx bun.IDB, class job.Class) *bun.SelectQuery {
	// served is looked up once for each account with waiting jobs (an index probe of
	// jobs_served), not once for each of their waiting jobs: a backlog of 10,000 made that
	// 10,000 probes a claim.
	// The grouping keeps PostgreSQL from pulling the lookup up into the join, where it ran once
	// a row again.
	served := tx.NewSelect().TableExpr("jobs AS a").ColumnExpr("a.account_id").
		ColumnExpr("(SELECT MAX(d.dispatched_at) FROM jobs AS d WHERE d.account_id = a.account_id AND d.class = ?) AS served", string(class)).
		Where("a.status = ?", string(job.StatusWaiting)).Where("a.class = ?", string(class)).GroupExpr("a.account_id")
	return tx.NewSelect().TableExpr("jobs AS w").Join("JOIN (?) AS s ON s.account_id = w.account_id", served).
		ColumnExpr("w.id, w.account_id, w.priority, w.created_at, s.served").
		ColumnExpr("ROW_NUMBER() OVER (PARTITION BY w.account_id, w.priority ORDER BY w.created_at, w.id) AS turn").
		Where("w.status = ?", string(job.StatusWaiting)).Where("w.class = ?", string(class))
}

// candidates is what a claim of up to limit jobs of a class chooses from, with what job.Order
// and the caps sort and filter them by. Only each account's oldest limit waiting jobs of each
// priority can be among the first limit in claim order: a later one has limit jobs of its own
// account and priority ahead of it, each ahead of it in the order and within the cap whenever
// it is. So a claim reads those, from the index jobs_waiting, and not every waiting job of the
// class: a backlog of 10,000 made each claim rank all 10,000.
//
// groups (the CTE grp) has one row for each account and priority with waiting jobs: n, their
// number; served, the account's latest dispatch of the class; and (bc, bi), the created_at and
// ID of its limit-th oldest job, or of its newest when it has fewer. The candidates carry turn
// (the job's rank in its group, which is its turn: its group's older jobs are all candidates)
// and higher, the account's waiting jobs of the class of a higher priority.
//
// A job that avoids the claiming runner (job.Job.Avoid) until after p.Now is left out of all
// three, as if it were not waiting.
func (s *Store) candidates(tx bun.IDB, p job.ClaimParams, params bool) (groups, cands *bun.SelectQuery) {
	class, limit := p.Class, p.Limit
	// claimable leaves out, of the jobs under alias, those that avoid the claiming runner; with
	// params, the runner and the time are the parameters ?1 and ?2 (claimQuery).
	var runner, now any = p.Runner, p.Now.UTC()
	if params {
		runner, now = bun.Safe("?1"), bun.Safe("?2")
	}
	claimable := func(alias string) (string, any, any) {
		return "(" + alias + ".avoid_runner IS NULL OR " + alias + ".avoid_runner <> ? OR " + alias + ".avoid_until <= ?)", runner, now
	}
	// boundary is the created_at or ID of a group's offset-th oldest waiting job (from 0), or
	// of its newest where dir is DESC.
	boundary := func(col, dir string, offset int) *bun.SelectQuery {
		return tx.NewSelect().TableExpr("jobs AS x").ColumnExpr(col).
			Where("x.status = ?", string(job.StatusWaiting)).Where("x.class = ?", string(class)).Where(claimable("x")).
			Where("x.account_id = g.account_id").Where("x.priority = g.priority").
			OrderExpr("x.created_at " + dir + ", x.id " + dir).Limit(1).Offset(int64(offset))
	}
	groups = tx.NewSelect().TableExpr("jobs AS g").
		ColumnExpr("g.account_id, g.priority, COUNT(*) AS n").
		ColumnExpr("(SELECT MAX(d.dispatched_at) FROM jobs AS d WHERE d.account_id = g.account_id AND d.class = ?) AS served", string(class)).
		ColumnExpr("COALESCE((?), (?)) AS bc", boundary("x.created_at", "", limit-1), boundary("x.created_at", "DESC", 0)).
		ColumnExpr("COALESCE((?), (?)) AS bi", boundary("x.id", "", limit-1), boundary("x.id", "DESC", 0)).
		Where("g.status = ?", string(job.StatusWaiting)).Where("g.class = ?", string(class)).Where(claimable("g")).
		GroupExpr("g.account_id, g.priority")
	cands = tx.NewSelect().TableExpr("grp").
		Join("JOIN jobs AS w ON w.account_id = grp.account_id AND w.priority = grp.priority").
		ColumnExpr("w.id, w.account_id, w.priority, w.created_at, w.parent_id, grp.served").
		ColumnExpr("ROW_NUMBER() OVER (PARTITION BY w.account_id, w.priority ORDER BY w.created_at, w.id) AS turn").
		ColumnExpr("(SELECT COALESCE(SUM(h.n), 0) FROM grp AS h WHERE h.account_id = w.account_id AND h.priority > w.priority) AS higher").
		Where("w.status = ?", string(job.StatusWaiting)).Where("w.class = ?", string(class)).Where(claimable("w")).
		Where("(w.created_at, w.id) <= (grp.bc, grp.bi)")
	return groups, cands
}

// withinCaps keeps the candidates that fit their account's concurrency cap: the account's
// dispatched and running jobs plus the job's rank among its waiting ones (higher priority
// first, then oldest: those of a higher priority, then its turn) stay within the cap of its
// plan. Accounts whose plan has no cap, or that the accounts table lacks, pass, and so do a
// split job's parts, which are neither counted nor capped: their job is (a split job waiting
// for its parts must not hold the slots they need).
func withinCaps(tx bun.IDB, ranked *bun.SelectQuery, p job.ClaimParams) *bun.SelectQuery {
	caps := "CASE a.plan"
	var args []any
	// In a fixed order, so that the claim's text, and its prepared statement, stay the same.
	for _, plan := range slices.Sorted(maps.Keys(p.Concurrency)) {
		caps += " WHEN ? THEN ?"
		args = append(args, plan, p.Concurrency[plan])
	}
	caps += " END"
	capped := tx.NewSelect().TableExpr("(?) AS r", ranked).
		Join("LEFT JOIN accounts AS a ON a.id = r.account_id").
		ColumnExpr("r.*").
		ColumnExpr("r.higher + r.turn AS rn").
		ColumnExpr(caps+" AS cap", args...).
		// Each account's active jobs are counted once, not once for each of its waiting jobs.
		Join("LEFT JOIN (?) AS x ON x.account_id = r.account_id", tx.NewSelect().TableExpr("jobs AS x").
			ColumnExpr("x.account_id, COUNT(*) AS n").Where("x.status IN (?)",
			bun.List([]string{string(job.StatusDispatched), string(job.StatusRunning)})).Where("x.parent_id IS NULL").GroupExpr("x.account_id")).
		ColumnExpr("COALESCE(x.n, 0) AS active")
	return tx.NewSelect().TableExpr("(?) AS c", capped).ColumnExpr("c.*").Where("c.cap IS NULL OR c.parent_id IS NOT NULL OR c.active + c.rn <= c.cap")
}

// Queue returns an account's waiting jobs with their positions among all the waiting jobs of
// their class in claim order, cpu first.
func (s *Store) Queue(ctx context.Context, p job.QueueParams) ([]job.Queued, error) {
	limit := p.NormalizeLimit()
	var out []job.Queued
	for _, class := range []job.Class{job.ClassCPU, job.ClassGPU} {
		if len(out) == limit {
			break
		}
		positioned := s.r.NewSelect().TableExpr("(?) AS o", s.ranked(s.r, class)).
			ColumnExpr("o.id, o.account_id").ColumnExpr("ROW_NUMBER() OVER (ORDER BY " + claimOrder + ") AS position")
		var rows []struct {
			jobRow
			Position int `bun:"position"`
		}
		err := s.r.NewSelect().Model((*jobRow)(nil)).ColumnExpr("job_row.*").ColumnExpr("q.position").
			Join("JOIN (?) AS q ON q.id = job_row.id", positioned).
			Where("q.account_id = ?", p.AccountID).Where("job_row.parent_id IS NULL").OrderExpr("q.position").Limit(int64(limit-len(out))).Scan(ctx, &rows)
		if err != nil {
			return nil, mapErr("queue", err)
		}
		for i := range rows {
			j, err := rows[i].job()
			if err != nil {
				return nil, err
			}
			out = append(out, job.Queued{Job: j, Position: rows[i].Position})
		}
	}
	return out, nil
}

// lockClaims makes claims take turns on PostgreSQL, where two capped claimers could otherwise
// each count an account's running jobs before the other's commit and both take its last slot,
// and a claim could skip another's locked candidates and miss the jobs behind them (see
// candidates). SQLite's single writer already serialises them.
func (s *Store) lockClaims(ctx context.Context, tx bun.Tx) error {
	if !s.postgres {
		return nil
	}
	_, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", claimLockID)
	return mapErr("claim lock", err)
}

// claimLockID is the advisory lock of capped claims ("mjclaim" in ASCII).
const claimLockID = 0x6d6a636c61696d

// HeldBy returns the IDs of the dispatched or running jobs the worker credential holds.
func (s *Store) HeldBy(ctx context.Context, worker string, limit int) ([]string, error) {
	return s.heldBy(ctx, "worker", worker, limit)
}

// HeldByRunner returns the IDs of the dispatched or running jobs the runner holds.
func (s *Store) HeldByRunner(ctx context.Context, runner string, limit int) ([]string, error) {
	return s.heldBy(ctx, "runner", runner, limit)
}

// heldBy returns the IDs of the dispatched or running jobs whose column (worker or runner) is
// holder, up to limit.
func (s *Store) heldBy(ctx context.Context, column, holder string, limit int) ([]string, error) {
	if limit <= 0 || holder == "" {
		return nil, nil
	}
	var ids []string
	err := s.r.NewSelect().Model((*jobRow)(nil)).Column("id").
		Where("? = ?", bun.Ident(column), holder).
		Where("status IN (?)", bun.List([]string{string(job.StatusDispatched), string(job.StatusRunning)})).
		OrderExpr("id").Limit(int64(limit)).Scan(ctx, &ids)
	return ids, mapErr("jobs held by "+column+" "+holder, err)
}

// Expired returns the IDs of dispatched or running jobs whose lease ended before now.
func (s *Store) Expired(ctx context.Context, now time.Time, limit int) ([]string, error) {
	if limit <= 0 {
		return nil, nil
	}
	var ids []string
	err := s.r.NewSelect().Model((*jobRow)(nil)).Column("id").
		Where("status IN (?)", bun.List([]string{string(job.StatusDispatched), string(job.StatusRunning)})).
		Where("lease_until < ?", now.UTC()).
		OrderExpr("id").Limit(int64(limit)).Scan(ctx, &ids)
	if err != nil {
		return nil, mapErr("expired jobs", err)
	}
	return ids, nil
}
