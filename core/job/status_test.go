package job_test

import (
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
)

// Every ordered pair of the six statuses: the legal ones succeed, the rest fail with
// ErrIllegalTransition and leave the job as it was.
func TestTransitionTable(t *testing.T) {
	t.Parallel()
	legal := map[[2]job.Status]bool{
		{job.StatusWaiting, job.StatusDispatched}:   true,
		{job.StatusWaiting, job.StatusCancelled}:    true,
		{job.StatusWaiting, job.StatusFailed}:       true, // the account can no longer pay (our extension)
		{job.StatusDispatched, job.StatusRunning}:   true,
		{job.StatusDispatched, job.StatusCancelled}: true,
		{job.StatusDispatched, job.StatusFailed}:    true, // runner lost (our extension)
		{job.StatusRunning, job.StatusComplete}:     true,
		{job.StatusRunning, job.StatusFailed}:       true,
		{job.StatusRunning, job.StatusCancelled}:    true, // user cancel kills the run (our extension)
		{job.StatusDispatched, job.StatusWaiting}:   true, // lease lapsed before the run began (our extension)
		{job.StatusRunning, job.StatusWaiting}:      true, // ... or before its compute began, or handed back
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	out, _ := job.NewOutput([]job.File{{Path: "out.mp4", Size: 1}}, nil, "")
	moves := map[job.Status]func(*job.Job) error{
		job.StatusDispatched: func(j *job.Job) error { return j.Dispatch(now, time.Minute) },
		job.StatusRunning:    func(j *job.Job) error { return j.Start(now, time.Minute) },
		job.StatusComplete:   func(j *job.Job) error { return j.Complete(now, out, 10) },
		job.StatusFailed: func(j *job.Job) error {
			return j.Fail(now, job.NewError(problem.CodeRunnerError, "exit 1", nil), 10)
		},
		job.StatusCancelled: func(j *job.Job) error { return j.Cancel(now) },
		job.StatusWaiting:   func(j *job.Job) error { return j.Requeue(now) },
	}
	for _, from := range job.Statuses {
		for _, to := range job.Statuses {
			t.Run(string(from)+"→"+string(to), func(t *testing.T) {
				t.Parallel()
				want := legal[[2]job.Status{from, to}]
				if got := job.CanTransition(from, to); got != want {
					t.Fatalf("CanTransition = %v, want %v", got, want)
				}
				j := jobIn(t, from)
				move := moves[to]
				before := *j
				err := move(j)
				if want {
					if err != nil {
						t.Fatalf("legal move failed: %v", err)
					}
					if j.Status != to {
						t.Fatalf("status %s, want %s", j.Status, to)
					}
					return
				}
				if !errors.Is(err, job.ErrIllegalTransition) {
					t.Fatalf("illegal move: got %v, want ErrIllegalTransition", err)
				}
				if j.Status != before.Status || j.UpdatedAt != before.UpdatedAt {
					t.Fatalf("illegal move changed the job: %s → %s", before.Status, j.Status)
				}
			})
		}
	}
}

func TestTerminalStatesNeverChange(t *testing.T) {
	t.Parallel()
	for _, s := range job.Statuses {
		if !s.Terminal() {
			continue
		}
		for _, to := range job.Statuses {
			if job.CanTransition(s, to) {
				t.Errorf("terminal %s may move to %s", s, to)
			}
		}
		j := jobIn(t, s)
		if err := j.Heartbeat(time.Now(), time.Minute, 0.5); !errors.Is(err, job.ErrIllegalTransition) {
			t.Errorf("heartbeat on %s: %v", s, err)
		}
	}
}

func TestParseStatus(t *testing.T) {
	t.Parallel()
	for _, s := range job.Statuses {
		got, err := job.ParseStatus(string(s))
		if err != nil || got != s {
			t.Errorf("ParseStatus(%q) = %q, %v", s, got, err)
		}
	}
	for _, bad := range []string{"", "WAITING", "done", "queued"} {
		if _, err := job.ParseStatus(bad); err == nil {
			t.Errorf("ParseStatus(%q) accepted", bad)
		}
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	ok := job.NewParams{ID: "job_x", AccountID: "acc_1", Type: "ffmpeg", Class: job.ClassCPU, Now: time.Now()}
	if j, err := job.New(ok); err != nil || j.Status != job.StatusWaiting {
		t.Fatalf("New: %v, %v", j, err)
	}
	for name, mutate := range map[string]func(*job.NewParams){
		"id prefix": func(p *job.NewParams) { p.ID = "x_1" },
		"account":   func(p *job.NewParams) { p.AccountID = "" },
		"type":      func(p *job.NewParams) { p.Type = "" },
		"class":     func(p *job.NewParams) { p.Class = "tpu" },
	} {
		p := ok
		mutate(&p)
		if _, err := job.New(p); err == nil {
			t.Errorf("%s: New accepted %+v", name, p)
		}
	}
}

// IDs are job_ and 26 characters of [0-9a-v], never repeat, and sort by the millisecond they
// were made in.
func TestNewID(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	valid := regexp.MustCompile(`^job_[0-9a-v]{26}$`)
	prev := job.NewID("job")
	for range 1000 {
		id := job.NewID("job")
		if !valid.MatchString(id) || seen[id] {
			t.Fatalf("bad or repeated id %q", id)
		}
		seen[id] = true
		// The first 9 characters (45 bits) hold all but the last bits of the millisecond:
		// never earlier than the previous ID's.
		if id[:4+9] < prev[:4+9] {
			t.Fatalf("%q made after %q sorts before it", id, prev)
		}
		prev = id
	}
	at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, later := range []time.Duration{time.Millisecond, time.Second, 24 * time.Hour, 100 * 365 * 24 * time.Hour} {
		newID := job.NewIDSource()
		before, after := newID("job", at), newID("job", at.Add(later))
		if after <= before {
			t.Errorf("%q, made %v later than %q, sorts before it", after, later, before)
		}
	}
}

// jobIn builds a job in status s through legal moves.
func jobIn(t *testing.T, s job.Status) *job.Job {
	t.Helper()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	j, err := job.New(job.NewParams{ID: job.NewID("job"), AccountID: "acc_1", Type: "ffmpeg", Class: job.ClassCPU, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := job.NewOutput([]job.File{{Path: "out.mp4", Size: 1}}, nil, "")
	steps := map[job.Status][]func() error{
		job.StatusWaiting:    nil,
		job.StatusDispatched: {func() error { return j.Dispatch(now, time.Minute) }},
		job.StatusRunning:    {func() error { return j.Dispatch(now, time.Minute) }, func() error { return j.Start(now, time.Minute) }},
		job.StatusComplete: {func() error { return j.Dispatch(now, time.Minute) }, func() error { return j.Start(now, time.Minute) },
			func() error { return j.Complete(now, out, 1) }},
		job.StatusFailed: {func() error { return j.Dispatch(now, time.Minute) },
			func() error { return j.Fail(now, job.NewError(problem.CodeRunnerLost, "lost", nil), 0) }},
		job.StatusCancelled: {func() error { return j.Cancel(now) }},
	}
	for _, step := range steps[s] {
		if err := step(); err != nil {
			t.Fatalf("reaching %s: %v", s, err)
		}
	}
	return j
}

// A job goes back to waiting once; the second lapse is refused, so the caller fails it.
func TestRequeueOnce(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	j := jobIn(t, job.StatusDispatched)
	if err := j.Requeue(now); err != nil || j.Status != job.StatusWaiting || j.LeaseUntil != nil || j.Requeues != 1 {
		t.Fatalf("first requeue: %v %+v", err, j)
	}
	if err := j.Dispatch(now, time.Minute); err != nil || j.Attempt != 2 {
		t.Fatalf("dispatch again: %v, attempt %d", err, j.Attempt)
	}
	if err := j.Requeue(now); !errors.Is(err, job.ErrIllegalTransition) || j.Status != job.StatusDispatched {
		t.Fatalf("second requeue: %v, status %s", err, j.Status)
	}
}

func TestExecutingOnlyWhileRunning(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	j := jobIn(t, job.StatusDispatched)
	if err := j.Executing(now); !errors.Is(err, job.ErrIllegalTransition) {
		t.Fatalf("executing while dispatched: %v", err)
	}
	_ = j.Start(now, time.Minute)
	if err := j.Executing(now); err != nil || j.ExecStartedAt == nil {
		t.Fatalf("executing: %v", err)
	}
	first := *j.ExecStartedAt
	if err := j.Executing(now.Add(time.Second)); err != nil || !j.ExecStartedAt.Equal(first) {
		t.Fatal("a second Executing moved the start")
	}
}
