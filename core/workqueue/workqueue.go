// Package workqueue is the port between the control plane and its runners: what a runner needs
// to take a job, keep it, and hand back its result, with no database and no signing keys. The
// control plane implements it in process (the embedded default); adapters carry it over HTTP
// and over a message broker, and all of them pass one shared suite (workqueuetest).
package workqueue

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/mediajobs/mediajobs/core/job"
)

// Queue is what a runner asks of the control plane. Every call after Claim names the Lease it
// was given: a lease that expired, that belongs to an older attempt, or whose token is forged is
// refused with ErrLeaseRefused, and the runner must drop the job.
type Queue interface {
	// Claim takes up to Max waiting jobs of a class, waiting up to Wait for one to appear.
	// It returns no jobs (and no error) when none came in time.
	Claim(ctx context.Context, p ClaimParams) ([]Assignment, error)
	// Heartbeat keeps the lease and records progress. The first heartbeat moves the job to
	// running; one with Executing set records that its compute began. Cancelled tells the
	// runner to stop.
	Heartbeat(ctx context.Context, b Beat) (Ack, error)
	// Report ends the attempt with its result. Reporting the same result again is harmless,
	// so a runner re-sends a result it did not see acknowledged.
	Report(ctx context.Context, l Lease, r Result) error
	// OpenAsset reads an uploaded asset the job takes as an input.
	OpenAsset(ctx context.Context, l Lease, assetID string) (io.ReadCloser, error)
	// PutOutput stores one output file of the job, at most max bytes (0: no cap).
	PutOutput(ctx context.Context, l Lease, name string, r io.Reader, max int64) (int64, error)
}

// ErrLeaseRefused is a call on a lease the control plane no longer honours: expired, of an
// older attempt, forged, or of a job that has finished.
var ErrLeaseRefused = errors.New("lease refused")

// ErrUnavailable is a call that did not reach a control plane able to answer (a connection
// refused or cut, a gateway or service unavailable answer): nothing was decided, and the same
// call may be sent again.
var ErrUnavailable = errors.New("control plane unavailable")

// ClaimParams select the work a runner takes.
type ClaimParams struct {
	Class job.Class
	Max   int
	// Worker names the runner, for the operator's logs and the registry of live workers.
	Worker string
	// Version is the runner's build, as `workers list` shows it.
	Version string
	// Wait is how long Claim may wait for work; zero returns at once.
	Wait time.Duration
	// Slots is how many jobs the runner runs at once (Max is how many of them are free): how
	// many parts a split job it takes may be cut into, with the other runners' slots.
	Slots int
}

// Lease is one attempt of a job held by one runner. Token is the attempt's secret: the runner
// proves with it that the lease is its own.
type Lease struct {
	JobID   string `json:"jobId"`
	Attempt int    `json:"attempt"`
	Token   string `json:"token"`
}

// Assignment is a job handed to a runner: everything it needs to run it.
type Assignment struct {
	Lease     Lease           `json:"lease"`
	AccountID string          `json:"accountId"`
	Type      string          `json:"type"`
	Class     job.Class       `json:"class"`
	Inputs    json.RawMessage `json:"inputs,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	// Timeout is the run's deadline: min(params.timeout, plan cap).
	Timeout time.Duration `json:"timeout"`
	// LeaseFor is how long the lease lasts without a heartbeat; a runner beats well within it.
	LeaseFor time.Duration `json:"leaseFor"`
	// AssetURLPrefix tells uploaded-asset URLs from remote ones in the job's inputs.
	AssetURLPrefix string `json:"assetUrlPrefix"`
	// AssetsURL and OutputsURL are where runners outside the control plane's process read the
	// job's uploaded assets (AssetsURL + asset ID) and write its outputs (OutputsURL + file
	// name), with the lease token as their bearer credential. The control plane may answer
	// either with a redirect to presigned storage URLs. Empty for in-process runners.
	AssetsURL  string `json:"assetsUrl,omitempty"`
	OutputsURL string `json:"outputsUrl,omitempty"`
	// Limits are the per-job caps of the account's plan.
	Limits Limits `json:"limits"`
	// SplitParts, above 1, asks the runner of a job that may be split (params.split "auto") to
	// read its input's keyframes and tell them in a heartbeat (Beat.Split): the control plane
	// then cuts the input into at most this many parts, or says why not (Ack.Split).
	SplitParts int `json:"splitParts,omitempty"`
	// SplitWait, above 0, offers to hold the answer of a heartbeat of the job once it is split,
	// for up to this long, until another of its parts is complete (Beat.SplitWait): its runner
	// learns of the last part as it ends, not at its next poll. A control plane that sends none
	// (an older one) answers at once, and the runner polls.
	SplitWait time.Duration `json:"splitWait,omitempty"`
	// Length, above 0, is how much media time the job's command writes, where the control
	// plane knows it (a split job's part: its cut of the input): the runner tells progress
	// against it instead of probing the input for a length.
	Length time.Duration `json:"length,omitempty"`
	// InlineBytes, above 0, is how many bytes of output files the report may carry itself
	// (Result.Inline); a control plane that sends 0 (or none: an older one) takes every file
	// through PutOutput.
	InlineBytes int64 `json:"inlineBytes,omitempty"`
}

// Limits cap what one job may write.
type Limits struct {
	// Bytes is the most the job may write in all; Files the most files it may leave.
	Bytes int64 `json:"bytes"`
	Files int   `json:"files"`
	// StallSeconds is how long the program may make no progress before it is stopped and the
	// job fails RUNNER_STALLED; zero is the runner's default (60).
	StallSeconds int `json:"stallSeconds,omitempty"`
}

// Beat is one heartbeat.
type Beat struct {
	Lease    Lease   `json:"lease"`
	Progress float64 `json:"progress"`
	// ProcessedMs is how much media time the job has written so far, when the runner knows it
	// (FFmpeg's out_time): shown while no Progress can be.
	ProcessedMs int64 `json:"processedMs,omitempty"`
	// Executing says that the job's compute (the FFmpeg step) has begun.
	Executing bool `json:"executing,omitempty"`
	// Split is what the runner read of the input of a job assigned with SplitParts: sent once,
	// before the job's compute begins.
	Split *SplitSource `json:"split,omitempty"`
	// SplitWait, from the runner of a split job waiting for its parts, asks the control plane
	// to hold its answer while no more than PartsComplete of the parts are complete and none
	// failed, for up to this long (at most the assignment's SplitWait).
	SplitWait     time.Duration `json:"splitWait,omitempty"`
	PartsComplete int           `json:"partsComplete,omitempty"`
}

// SplitSource is what a split needs to know of a job's input beyond its command: where it may
// be cut (keyframe times in seconds from the input's start, in order), how long it is, whether
// it has audio, and, when the runner found it cannot be split whatever the command, why.
type SplitSource struct {
	Keyframes []float64 `json:"keyframes,omitempty"`
	Duration  float64   `json:"duration"`
	Audio     bool      `json:"audio"`
	// FrameRate is the video's frame rate in frames per second, 0 when not known: the parts
	// put their keyframes where the whole encode would, which are frame counts.
	FrameRate float64 `json:"frameRate,omitempty"`
	// Width and Height are the video's, SampleRate and Channels the audio's, 0 when not known:
	// they weigh the audio's encode against the video's (validator.SplitAudioShare).
	Width      int `json:"width,omitempty"`
	Height     int `json:"height,omitempty"`
	SampleRate int `json:"sampleRate,omitempty"`
	Channels   int `json:"channels,omitempty"`
	// Reason is one of the Split* sentences below: the control plane shows users no other text
	// of a runner's, which it does not trust.
	Reason string `json:"reason,omitempty"`
	// Trims says that the runner runs a plan's Trims (job.Around) before its join: the parts
	// lead out only for a runner that says so, not for one of an earlier build.
	Trims bool `json:"trims,omitempty"`
}

// The reasons a runner gives for an input it cannot split (SplitSource.Reason). A reason about
// the command is the control plane's own (validator.Splittable).
const (
	SplitNoVideo    = "the input has no video stream"
	SplitSubtitles  = "the input has a subtitle stream, which the whole command would carry into its output and the parts drop"
	SplitUnreadable = "the input's keyframes could not be read"
	SplitNotStill   = "the image overlaid is not one still frame: each part would start it again"
)

// SplitPlan is the control plane's answer to a SplitSource, repeated on each heartbeat of the
// job: either Reason, and the runner runs the command whole, or the parts, which other runners
// encode as jobs of their own, with their states, and the commands the job's own runner runs
// around them: Audio (into AudioName) while the parts are encoded, then, once every part is
// complete, reading each part's file through OpenAsset under its name and writing List under
// ListName, Join, whose output is the job's.
type SplitPlan struct {
	Reason string      `json:"reason,omitempty"`
	Parts  []PartState `json:"parts,omitempty"`
	job.Around
}

// PartState is one part of a split job as its runner sees it.
type PartState struct {
	Name     string     `json:"name"`
	Status   job.Status `json:"status"`
	Progress float64    `json:"progress"`
}

// Done says whether every part is complete.
func (p *SplitPlan) Done() bool {
	return len(p.Parts) > 0 && p.Complete() == len(p.Parts)
}

// Complete is how many of the parts are complete.
func (p *SplitPlan) Complete() int {
	n := 0
	for _, s := range p.Parts {
		if s.Status == job.StatusComplete {
			n++
		}
	}
	return n
}

// InlineFile is an output file carried in a report (Result.Inline).
type InlineFile struct {
	Name string `json:"name"`
	Data []byte `json:"data"`
}

// DefaultInlineBytes is how many bytes of output files a control plane takes inside a report
// (Assignment.InlineBytes): a thumbnail, a caption file or a short clip skips the upload's
// round trip and its write, and a report stays well under the 1 MiB a JSON body may hold.
const DefaultInlineBytes = 256 << 10

// Ack answers a heartbeat.
type Ack struct {
	// Cancelled tells the runner that the job was cancelled: stop it and report.
	Cancelled bool `json:"cancelled"`
	// LeaseUntil is when the lease ends without another heartbeat.
	LeaseUntil time.Time `json:"leaseUntil"`
	// Split answers a job assigned with SplitParts once its runner told its SplitSource.
	Split *SplitPlan `json:"split,omitempty"`
}

// Result is how an attempt ended: the files it stored through PutOutput or carries in Inline,
// or its data; or a Failure.
type Result struct {
	Files []job.File      `json:"files,omitempty"`
	Data  json.RawMessage `json:"data,omitempty"`
	// Inline carries small output files in the report itself, in place of a PutOutput each:
	// at most Assignment.InlineBytes in all, each also named in Files. The control plane stores
	// them under the lease, within the plan's caps, before it takes the result.
	Inline []InlineFile `json:"inline,omitempty"`
	// ComputeMs is the execution time measured by the runner, file transfers excluded.
	ComputeMs int64 `json:"computeMs"`
	// Started tells that the compute step began (billing reads it).
	Started bool     `json:"started"`
	Failure *Failure `json:"failure,omitempty"`
}
