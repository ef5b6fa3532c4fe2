package httpapi

import (
	"net/http"
	"time"

	"github.com/uptrace/bunrouter"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/job"
)

// accountView is the answer of GET /account.
type accountView struct {
	ID        string       `json:"id"`
	Plan      account.Plan `json:"plan"`
	Limits    limitsView   `json:"limits"`
	Balance   job.Cost     `json:"balance"`
	Usage     usageView    `json:"usage"`
	Workers   workersView  `json:"workers"`
	CreatedAt int64        `json:"createdAt"`
}

// workersView tells, per compute class, whether runners of the class are online now: a job of a
// class without them waits.
type workersView struct {
	CPU bool `json:"cpu"`
	GPU bool `json:"gpu"`
}

type limitsView struct {
	RequestsPerMinute   int   `json:"requestsPerMinute"`
	ExecutionCapSeconds int   `json:"executionCapSeconds"`
	GPU                 bool  `json:"gpu"`
	Concurrency         int   `json:"concurrency"`
	JobBytes            int64 `json:"jobBytes"`
	JobFiles            int   `json:"jobFiles"`
	StallSeconds        int   `json:"stallSeconds"`
}

// usageView is this month's spending: credits charged since the first of the month (UTC).
type usageView struct {
	Since int64    `json:"since"`
	Spent job.Cost `json:"spent"`
}

func (a *api) account(w http.ResponseWriter, req bunrouter.Request) error {
	sum, err := a.uc.Credits.Summary(req.Context(), caller(req))
	if err != nil {
		return err
	}
	caps, err := a.uc.Runs.Capacity(req.Context())
	if err != nil {
		return err
	}
	acct, l := sum.Account, sum.Limits
	return writeData(w, http.StatusOK, accountView{ID: acct.ID, Plan: acct.Plan, CreatedAt: acct.CreatedAt.UnixMilli(),
		Workers: workersView{CPU: caps[job.ClassCPU], GPU: caps[job.ClassGPU]},
		Limits: limitsView{RequestsPerMinute: l.RequestsPerMinute, ExecutionCapSeconds: int(l.ExecutionCap / time.Second),
			GPU: l.GPU, Concurrency: l.Concurrency, JobBytes: l.JobBytes, JobFiles: l.JobFiles, StallSeconds: l.StallSeconds},
		Balance: billing.Cost(sum.Balance),
		Usage:   usageView{Since: sum.MonthStart.UnixMilli(), Spent: billing.Cost(sum.SpentThisMonth)}})
}

// entryView is one ledger entry.
type entryView struct {
	Kind      billing.Kind `json:"kind"`
	Amount    job.Cost     `json:"amount"`
	JobID     string       `json:"jobId,omitempty"`
	Note      string       `json:"note,omitempty"`
	CreatedAt int64        `json:"createdAt"`
}

// ledgerPage is the answer of GET /account/ledger, shaped like the job listing.
type ledgerPage struct {
	Data       []entryView `json:"data"`
	Pagination pagination  `json:"pagination"`
}

func (a *api) ledger(w http.ResponseWriter, req bunrouter.Request) error {
	cursor, limit, err := pageQuery(req.URL.Query())
	if err != nil {
		return err
	}
	page, err := a.uc.Credits.LedgerPage(req.Context(), caller(req), cursor, limit)
	if err != nil {
		return err
	}
	out := ledgerPage{Data: make([]entryView, len(page.Entries))}
	for i, e := range page.Entries {
		out.Data[i] = entryView{Kind: e.Kind, Amount: billing.Cost(e.Amount), JobID: e.JobID, Note: e.Note, CreatedAt: e.CreatedAt.UnixMilli()}
	}
	if page.NextCursor != "" {
		out.Pagination.NextCursor = &page.NextCursor
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
