package service

import (
	"encoding/json"
	"time"

	"github.com/mediajobs/mediajobs/core/clock"
	"github.com/mediajobs/mediajobs/core/job"
)

// View is a job as clients read it over REST and MCP: the spec's fields, plus the request, the
// progress of a running job and its timestamps (our additions).
type View struct {
	ID     string     `json:"id"`
	Type   string     `json:"type"`
	Status job.Status `json:"status"`
	// Priority orders the job among the waiting jobs of its class.
	Priority job.Priority `json:"priority"`
	Progress *float64     `json:"progress,omitempty"`
	// ProcessedMs is the media time a running job has written so far, when its runner knows it.
	ProcessedMs *int64          `json:"processedMs,omitempty"`
	Output      *job.Output     `json:"output,omitempty"`
	Error       *job.Error      `json:"error,omitempty"`
	Cost        *job.Cost       `json:"cost,omitempty"`
	Inputs      json.RawMessage `json:"inputs,omitempty"`
	Params      json.RawMessage `json:"params,omitempty"`
	RetryOf     string          `json:"retryOf,omitempty"`
	BatchID     string          `json:"batchId,omitempty"`
	// Split is how a job that asked to be split (params.split "auto") ran: in how many parts,
	// or, when whole, why.
	Split       *SplitView `json:"split,omitempty"`
	CreatedAt   int64      `json:"createdAt"`
	StartedAt   *int64     `json:"startedAt,omitempty"`
	CompletedAt *int64     `json:"completedAt,omitempty"`
}

// SplitView is a split job's split: Parts is 0 while the job is not cut (yet) and when it runs
// whole, which Reason then explains.
type SplitView struct {
	Parts  int    `json:"parts"`
	Reason string `json:"reason,omitempty"`
}

// Viewer renders jobs for clients, minting fresh file URLs on every read (the spec's invariant
// 4: after expiry, a read mints new ones).
type Viewer struct {
	Signer job.Signer
	Clock  clock.Clock
	// URLTTL is how long a minted URL is valid: one hour by the spec.
	URLTTL time.Duration
}

func (v Viewer) check() error {
	return need("Viewer", port{"a URL signer", v.Signer}, port{"a clock", v.Clock})
}

// View renders a job.
func (v Viewer) View(j *job.Job) View {
	t := j.Timing()
	// The request is echoed as submitted, less the secrets of presigned input URLs.
	out := View{ID: j.ID, Type: j.Type, Status: j.Status, Priority: j.Priority, Error: j.Error, Cost: j.Cost, Inputs: redactJSON(j.Inputs),
		Params: redactJSON(j.Params), RetryOf: j.RetryOf, BatchID: j.BatchID, CreatedAt: t.CreatedAt, StartedAt: t.StartedAt, CompletedAt: t.CompletedAt}
	if j.Split != nil {
		out.Split = &SplitView{Parts: len(j.Split.Parts), Reason: j.Split.Reason}
	}
	if j.Status == job.StatusRunning {
		p := j.Progress
		out.Progress = &p
		if j.ProcessedMs > 0 {
			ms := j.ProcessedMs
			out.ProcessedMs = &ms
		}
	}
	if j.Status == job.StatusComplete && j.Output != nil {
		o := v.Sign(j.ID, *j.Output)
		out.Output = &o
	}
	return out
}

// Sign mints the URLs of an output, valid for URLTTL from now.
func (v Viewer) Sign(jobID string, o job.Output) job.Output {
	return o.Sign(jobID, v.Signer, v.Clock.Now().Add(v.ttl()))
}

func (v Viewer) ttl() time.Duration {
	if v.URLTTL <= 0 {
		return time.Hour
	}
	return v.URLTTL
}
