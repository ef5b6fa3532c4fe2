package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/blob"
	"github.com/mediajobs/mediajobs/core/clock"
	"github.com/mediajobs/mediajobs/core/destination"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/webhook"
)

// DestinationsPorts are what destinations and the delivery of jobs' outputs to them need.
type DestinationsPorts struct {
	Store     destination.Store
	Jobs      job.Store
	Blobs     blob.Store
	Deliverer destination.Deliverer
	Keys      *destination.Keyring
	// URLs vets an endpoint's address before anything is sent to it.
	URLs  URLChecker
	Clock clock.Clock
	// RetryDelays are the waits between a delivery's attempts: it fails after len+1 attempts.
	// Default 5 s, 25 s, 125 s (as webhooks).
	RetryDelays []time.Duration
	Log         *slog.Logger
}

// Destinations is POST/GET/DELETE /destinations, the destination of a job at submit, its
// delivery's state in GET /jobs/{id}, POST /jobs/{id}/deliver, and the copying itself (worked
// by DeliveryService).
type Destinations struct {
	p DestinationsPorts
	// wake tells the DeliveryService that a delivery became due.
	wake chan struct{}
}

// NewDestinations returns the Destinations use case.
func NewDestinations(p DestinationsPorts) (*Destinations, error) {
	if err := need("Destinations", port{"a destination store", p.Store}, port{"a job store", p.Jobs}, port{"a blob store", p.Blobs},
		port{"a deliverer", p.Deliverer}, port{"a keyring", p.Keys}, port{"a URL checker", p.URLs}, port{"a clock", p.Clock}); err != nil {
		return nil, err
	}
	if p.RetryDelays == nil {
		p.RetryDelays = []time.Duration{5 * time.Second, 25 * time.Second, 125 * time.Second}
	}
	if p.Log == nil {
		p.Log = slog.Default()
	}
	return &Destinations{p: p, wake: make(chan struct{}, 1)}, nil
}

// Create checks a destination with a test write (and delete) under its prefix, then saves it
// with its secret sealed. A refusal names the field at fault and saves nothing.
func (s *Destinations) Create(ctx context.Context, a account.Account, p destination.Params) (destination.Destination, error) {
	if err := p.Check(); err != nil {
		return destination.Destination{}, err
	}
	if err := s.p.URLs.CheckURL(ctx, p.Endpoint); err != nil {
		return destination.Destination{}, &problem.Problem{Code: problem.CodeValidation, Field: "endpoint",
			Message: problem.Messagef("endpoint %q cannot be delivered to: %v", p.Endpoint, err)}
	}
	t := destination.Target{Endpoint: p.Endpoint, Bucket: p.Bucket, Region: p.Region, PathStyle: p.PathStyle,
		AccessKeyID: p.AccessKeyID, SecretAccessKey: p.SecretAccessKey}
	var nonce [6]byte
	_, _ = rand.Read(nonce[:])
	checkKey := destination.Key(p.Prefix, mustTemplate("{name}"), destination.Vars{Name: ".mediajobs-check-" + hex.EncodeToString(nonce[:])})
	if err := s.p.Deliverer.Check(ctx, t, checkKey); err != nil {
		field := "endpoint"
		switch {
		case errors.Is(err, destination.ErrCredentials):
			field = "accessKeyId"
			return destination.Destination{}, &problem.Problem{Code: problem.CodeValidation, Field: field,
				Message: problem.Messagef("accessKeyId/secretAccessKey: the test write to bucket %s was refused: %v", p.Bucket, err)}
		case errors.Is(err, destination.ErrNoBucket):
			field = "bucket"
		}
		return destination.Destination{}, &problem.Problem{Code: problem.CodeValidation, Field: field,
			Message: problem.Messagef("%s: the test write to bucket %s at %s failed: %v", field, p.Bucket, p.Endpoint, err)}
	}
	d := destination.Destination{ID: job.NewID("dst"), AccountID: a.ID, Name: p.Name, Endpoint: p.Endpoint, Bucket: p.Bucket,
		Region: p.Region, Prefix: p.Prefix, PathStyle: p.PathStyle, AccessKeyID: p.AccessKeyID, CreatedAt: s.p.Clock.Now().UTC().Truncate(time.Microsecond)}
	sealed, err := s.p.Keys.Seal(p.SecretAccessKey, d.ID)
	if err != nil {
		return destination.Destination{}, err
	}
	d.Secret = sealed
	if err := s.p.Store.CreateDestination(ctx, d); err != nil {
		return destination.Destination{}, err
	}
	return d, nil
}

func mustTemplate(s string) destination.Template {
	t, err := destination.ParseTemplate(s)
	if err != nil {
		panic(err)
	}
	return t
}

// DestinationView is a destination as REST and MCP show it: never its secret, and its access
// key ID masked.
type DestinationView struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Endpoint    string `json:"endpoint"`
	Bucket      string `json:"bucket"`
	Region      string `json:"region"`
	Prefix      string `json:"prefix"`
	PathStyle   bool   `json:"pathStyle"`
	AccessKeyID string `json:"accessKeyId"`
	CreatedAt   string `json:"createdAt"`
}

// ViewDestination is d as the API shows it.
func ViewDestination(d destination.Destination) DestinationView {
	return DestinationView{ID: d.ID, Name: d.Name, Endpoint: d.Endpoint, Bucket: d.Bucket, Region: d.Region, Prefix: d.Prefix,
		PathStyle: d.PathStyle, AccessKeyID: d.MaskedKeyID(), CreatedAt: d.CreatedAt.UTC().Format(time.RFC3339)}
}

// List returns the account's destinations.
func (s *Destinations) List(ctx context.Context, a account.Account) ([]destination.Destination, error) {
	return s.p.Store.ListDestinations(ctx, a.ID)
}

// Get returns one of the account's destinations; another account's is NOT_FOUND.
func (s *Destinations) Get(ctx context.Context, a account.Account, id string) (destination.Destination, error) {
	d, err := s.p.Store.GetDestination(ctx, id)
	if errors.Is(err, problem.ErrNotFound) || (err == nil && d.AccountID != a.ID) {
		return destination.Destination{}, problem.Reject(problem.CodeNotFound, "destination %q not found", id)
	}
	return d, err
}

// Delete removes one of the account's destinations, unless jobs that name it are still to be
// delivered (waiting, running, or delivering): CONFLICT, as deleting it would fail them.
func (s *Destinations) Delete(ctx context.Context, a account.Account, id string) error {
	if _, err := s.Get(ctx, a, id); err != nil {
		return err
	}
	err := s.p.Store.DeleteDestination(ctx, id)
	if errors.Is(err, problem.ErrConflict) {
		return problem.Reject(problem.CodeConflict, "destination %s is named by jobs not yet delivered; delete it once they are", id)
	}
	if errors.Is(err, problem.ErrNotFound) {
		return problem.Reject(problem.CodeNotFound, "destination %q not found", id)
	}
	return err
}

// Reseal re-seals, under the keyring's current key, every secret sealed under another: the
// startup pass of a key rotation. It returns how many it re-sealed.
func (s *Destinations) Reseal(ctx context.Context) (int, error) {
	n := 0
	for {
		ds, err := s.p.Store.ListSealedWith(ctx, s.p.Keys.Current(), 100)
		if err != nil || len(ds) == 0 {
			return n, err
		}
		for _, d := range ds {
			sealed, _, err := s.p.Keys.Reseal(d.Secret, d.ID)
			if err != nil {
				return n, fmt.Errorf("destination %s: %w", d.ID, err)
			}
			if err := s.p.Store.SetSecret(ctx, d.ID, sealed); err != nil && !errors.Is(err, problem.ErrNotFound) {
				return n, err
			}
			n++
		}
	}
}

// plan checks a job request's destination at submit: one of the account's, and a valid path
// template. It returns the delivery to create with the job, or a rejection naming the field.
func (s *Destinations) plan(ctx context.Context, a account.Account, req jobtype.Request) (*destination.Delivery, error) {
	r := req.Destination
	if r == nil {
		return nil, nil
	}
	reject := func(field, format string, args ...any) error {
		return &problem.Problem{Code: problem.CodeValidation, Field: field, Message: field + ": " + fmt.Sprintf(format, args...)}
	}
	if s == nil {
		return nil, reject("destination", "this server delivers to no destination")
	}
	if r.ID == "" {
		return nil, reject("destination.id", "is required: the ID of one of your destinations (GET /destinations)")
	}
	d, err := s.p.Store.GetDestination(ctx, r.ID)
	if errors.Is(err, problem.ErrNotFound) || (err == nil && d.AccountID != a.ID) {
		return nil, reject("destination.id", "%q is not one of your destinations", r.ID)
	}
	if err != nil {
		return nil, err
	}
	path := r.Path
	if path == "" {
		path = destination.DefaultPath
	}
	if _, err := destination.ParseTemplate(path); err != nil {
		return nil, reject("destination.path", "%v", err)
	}
	now := s.p.Clock.Now().UTC().Truncate(time.Microsecond)
	return &destination.Delivery{AccountID: a.ID, DestinationID: d.ID, Path: path, Preset: presetName(req.Params),
		State: destination.StateAwaiting, Round: 1, CreatedAt: now, UpdatedAt: now}, nil
}

// presetName is the {preset} of a job's params: params.preset as a client names it (a string),
// or as a stored job records it ({name, version, variables}), which a retry submits again.
// A job without one has "".
func presetName(params json.RawMessage) string {
	var p struct {
		Preset json.RawMessage `json:"preset"`
	}
	if json.Unmarshal(params, &p) != nil || len(p.Preset) == 0 {
		return ""
	}
	var name string
	if json.Unmarshal(p.Preset, &name) == nil {
		return name
	}
	var rec struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(p.Preset, &rec) // anything else names no preset
	return rec.Name
}

// carried is the destination request of a job being retried: the one its failed job named,
// with the same path, or nil.
func (s *Destinations) carried(ctx context.Context, jobID string) (*destination.Request, error) {
	if s == nil {
		return nil, nil
	}
	d, err := s.p.Store.GetJobDelivery(ctx, jobID)
	if errors.Is(err, problem.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &destination.Request{ID: d.DestinationID, Path: d.Path}, nil
}

// Attach saves a job's delivery before the job itself, so that a job is never saved without
// the delivery it asked for (a delivery whose job failed to save is never started).
func (s *Destinations) attach(ctx context.Context, j *job.Job, d *destination.Delivery) error {
	d.JobID = j.ID
	err := s.p.Store.CreateJobDelivery(ctx, *d)
	if errors.Is(err, problem.ErrNotFound) {
		return &problem.Problem{Code: problem.CodeValidation, Field: "destination.id", Message: problem.Messagef("destination.id: %q was deleted", d.DestinationID)}
	}
	return err
}

// JobDelivery is a job's delivery (to its destination) as GET /jobs/{id} and the delivery events show it.
type JobDelivery struct {
	Status      string             `json:"status"`
	Destination string             `json:"destination"`
	Path        string             `json:"path"`
	Files       []destination.File `json:"files"`
	Error       *string            `json:"error"`
}

func jobDelivery(d destination.Delivery) JobDelivery {
	v := JobDelivery{Status: string(d.State), Destination: d.DestinationID, Path: d.Path, Files: d.Files}
	if d.State == destination.StateAwaiting {
		v.Status = string(destination.StatePending)
	}
	if v.Files == nil {
		v.Files = []destination.File{}
	}
	if d.Error != "" {
		v.Error = &d.Error
	}
	return v
}

// JobWithDelivery is a job as GET /jobs/{id} and MCP get_job show it: the job, and its
// delivery when it names a destination.
type JobWithDelivery struct {
	View
	Delivery *JobDelivery `json:"delivery,omitempty"`
}

// WithDelivery is v with its delivery; s may be nil (a server that delivers nowhere).
func (s *Destinations) WithDelivery(ctx context.Context, a account.Account, v View) (JobWithDelivery, error) {
	if s == nil {
		return JobWithDelivery{View: v}, nil
	}
	d, err := s.Status(ctx, a, v.ID)
	return JobWithDelivery{View: v, Delivery: d}, err
}

// Status is the delivery of one of the account's jobs; nil for a job without a destination.
func (s *Destinations) Status(ctx context.Context, a account.Account, jobID string) (*JobDelivery, error) {
	d, err := s.p.Store.GetJobDelivery(ctx, jobID)
	if errors.Is(err, problem.ErrNotFound) || (err == nil && d.AccountID != a.ID) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	v := jobDelivery(d)
	return &v, nil
}

// Redeliver is POST /jobs/{id}/deliver: a complete job's delivery, failed or done, starts
// again in a new round (after the destination was fixed, or to copy again).
func (s *Destinations) Redeliver(ctx context.Context, a account.Account, jobID string) (JobDelivery, error) {
	j, err := ownJob(ctx, s.p.Jobs, a, jobID)
	if err != nil {
		return JobDelivery{}, err
	}
	if j.Status != job.StatusComplete {
		return JobDelivery{}, problem.Reject(problem.CodeConflict, "job %s is %s; only a complete job's outputs are delivered", jobID, j.Status)
	}
	now := s.p.Clock.Now()
	d, err := s.p.Store.UpdateJobDelivery(ctx, jobID, func(d *destination.Delivery) error {
		if d.State == destination.StatePending || d.State == destination.StateAwaiting {
			return problem.Reject(problem.CodeConflict, "job %s's delivery is already pending", jobID)
		}
		d.State, d.Attempts, d.Round, d.Error, d.Files = destination.StatePending, 0, d.Round+1, "", nil
		d.NextAttemptAt, d.UpdatedAt = &now, now
		return nil
	})
	if errors.Is(err, problem.ErrNotFound) {
		return JobDelivery{}, problem.Reject(problem.CodeConflict, "job %s names no destination", jobID)
	}
	if err != nil {
		return JobDelivery{}, err
	}
	s.signal()
	return jobDelivery(d), nil
}

// HandleEvent follows a job's terminal event (TopicEvents): a complete job's delivery becomes
// due; a failed or cancelled job's fails, as there is nothing to deliver. A job without a
// destination is skipped. It is idempotent.
func (s *Destinations) HandleEvent(ctx context.Context, m job.Message) error {
	var ev Event
	if err := json.Unmarshal(m.Payload, &ev); err != nil {
		return fmt.Errorf("event %s: %w", m.Key, err)
	}
	switch ev.Event {
	case webhook.EventJobCompleted, webhook.EventJobFailed, webhook.EventJobCancelled:
	default:
		return nil
	}
	// Most jobs name no destination: a read says so without taking the store's write lock.
	switch d, err := s.p.Store.GetJobDelivery(ctx, ev.JobID); {
	case errors.Is(err, problem.ErrNotFound):
		return nil
	case err != nil:
		return err
	case d.State != destination.StateAwaiting:
		return nil
	}
	now, due := s.p.Clock.Now(), false
	_, err := s.p.Store.UpdateJobDelivery(ctx, ev.JobID, func(d *destination.Delivery) error {
		if d.State != destination.StateAwaiting {
			return errSkip
		}
		d.UpdatedAt = now
		if ev.Event == webhook.EventJobCompleted {
			d.State, d.NextAttemptAt, due = destination.StatePending, &now, true
			return nil
		}
		d.State, d.Error = destination.StateFailed, "the job did not complete; there was nothing to deliver"
		return nil
	})
	if errors.Is(err, problem.ErrNotFound) || errors.Is(err, errSkip) {
		return nil
	}
	if due && err == nil {
		s.signal()
	}
	return err
}

func (s *Destinations) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

var errSkip = errors.New("nothing to change")

// DeliverDue copies the outputs of the deliveries due now, one pass of the DeliveryService;
// it returns how many it finished (delivered or failed for good).
func (s *Destinations) DeliverDue(ctx context.Context) (int, error) {
	ds, err := s.p.Store.ClaimJobDeliveries(ctx, destination.ClaimParams{Limit: 8, Lease: 10 * time.Minute, Now: s.p.Clock.Now()})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, d := range ds {
		done, err := s.deliver(ctx, d)
		if err != nil {
			return n, fmt.Errorf("delivery of %s: %w", d.JobID, err)
		}
		if done {
			n++
		}
	}
	return n, nil
}

// deliver makes one attempt at a delivery: every file PUT under its key. All delivered emits
// job.delivered; a failure is retried after the next delay, and the last one emits
// job.delivery_failed. The job itself, its status and its charge, is never changed.
func (s *Destinations) deliver(ctx context.Context, d destination.Delivery) (finished bool, err error) {
	j, err := s.p.Jobs.Get(ctx, d.JobID)
	if err != nil {
		return false, err
	}
	files, fatal := s.copyFiles(ctx, j, d)
	failed := fatal != ""
	for _, f := range files {
		failed = failed || f.Error != ""
	}
	now := s.p.Clock.Now()
	d.Files, d.Attempts, d.UpdatedAt = files, d.Attempts+1, now
	event := webhook.EventJobDelivered
	switch {
	case !failed:
		d.State, d.Error, d.NextAttemptAt = destination.StateDelivered, "", nil
	case d.Attempts <= len(s.p.RetryDelays) && fatal == "":
		next := now.Add(s.p.RetryDelays[d.Attempts-1])
		d.Error, d.NextAttemptAt = failureText(fatal, files), &next
		return false, s.save(ctx, d)
	default:
		d.State, d.Error, d.NextAttemptAt = destination.StateFailed, failureText(fatal, files), nil
		event = webhook.EventJobDeliveryFailed
	}
	// The event is written first, keyed by the round: a crash before the delivery is saved
	// copies again and writes the same key, which the outbox keeps once.
	body, err := json.Marshal(Event{Event: event, JobID: j.ID, Timing: j.Timing(), Delivery: new(jobDelivery(d))})
	if err != nil {
		return false, err
	}
	if _, err := s.p.Jobs.Update(ctx, j.ID, func(j *job.Job) error {
		j.Emit(TopicEvents, fmt.Sprintf("%s:%s:%d", event, j.ID, d.Round), body)
		return nil
	}); err != nil {
		return false, err
	}
	err = s.save(ctx, d)
	if event == webhook.EventJobDeliveryFailed {
		s.p.Log.Warn("delivery to a destination failed", "job", j.ID, "destination", d.DestinationID, "err", d.Error)
	}
	return err == nil, err
}

// save writes an attempt's outcome, unless a POST /jobs/{id}/deliver began a new round
// meanwhile: that round's attempts own the delivery now.
func (s *Destinations) save(ctx context.Context, d destination.Delivery) error {
	_, err := s.p.Store.UpdateJobDelivery(ctx, d.JobID, func(cur *destination.Delivery) error {
		if cur.Round != d.Round {
			return errSkip
		}
		*cur = d
		return nil
	})
	if errors.Is(err, errSkip) {
		return nil
	}
	return err
}

func failureText(fatal string, files []destination.File) string {
	if fatal != "" {
		return fatal
	}
	bad := 0
	first := ""
	for _, f := range files {
		if f.Error != "" {
			if bad == 0 {
				first = f.Name + ": " + f.Error
			}
			bad++
		}
	}
	return fmt.Sprintf("%d of %d files were not delivered; first, %s", bad, len(files), first)
}

// copyFiles PUTs each output file of j under its key. fatal is a failure no retry mends (the
// destination deleted, its secret sealed under a key the server no longer holds).
func (s *Destinations) copyFiles(ctx context.Context, j *job.Job, d destination.Delivery) (files []destination.File, fatal string) {
	dst, err := s.p.Store.GetDestination(ctx, d.DestinationID)
	if errors.Is(err, problem.ErrNotFound) {
		return nil, fmt.Sprintf("destination %s was deleted", d.DestinationID)
	}
	if err != nil {
		return nil, "the destination could not be read: " + err.Error()
	}
	secret, err := s.p.Keys.Open(dst.Secret, dst.ID)
	if err != nil {
		return nil, "the destination's secret cannot be opened: " + err.Error()
	}
	tmpl, err := destination.ParseTemplate(d.Path)
	if err != nil {
		return nil, "destination.path: " + err.Error()
	}
	t := destination.Target{Endpoint: dst.Endpoint, Bucket: dst.Bucket, Region: dst.Region, PathStyle: dst.PathStyle,
		AccessKeyID: dst.AccessKeyID, SecretAccessKey: secret}
	day := j.CreatedAt
	if j.FinishedAt != nil {
		day = *j.FinishedAt
	}
	for _, f := range outputFiles(j.Output) {
		key := destination.Key(dst.Prefix, tmpl, destination.Vars{JobID: j.ID, Name: f.Path, Preset: d.Preset, Date: day})
		out := destination.File{Name: f.Path, Key: key, Size: f.Size}
		out.ETag, out.Error = s.putFile(ctx, t, j, f.Path, key)
		files = append(files, out)
	}
	return files, ""
}

func (s *Destinations) putFile(ctx context.Context, t destination.Target, j *job.Job, name, key string) (etag, failure string) {
	b, err := openOutput(ctx, s.p.Blobs, j, name)
	if err != nil {
		return "", "the output could not be read: " + err.Error()
	}
	defer b.Close()
	etag, err = s.p.Deliverer.Put(ctx, t, key, b, b.Size())
	if err != nil {
		return "", err.Error()
	}
	return etag, ""
}

// outputFiles are a job's files, each once: the playlist or single file, then the rest.
func outputFiles(o *job.Output) []job.File {
	if o == nil {
		return nil
	}
	var out []job.File
	seen := map[string]bool{}
	add := func(f job.File) {
		if !seen[f.Path] {
			seen[f.Path] = true
			out = append(out, f)
		}
	}
	if o.File != nil {
		add(*o.File)
	}
	for _, f := range o.Files {
		add(f)
	}
	return out
}

// DeliveryConfig configures the DeliveryService.
type DeliveryConfig struct {
	// Interval is how often due deliveries are looked for with no wake-up; default one second.
	Interval time.Duration
	Log      *slog.Logger
}

// DeliveryService copies complete jobs' outputs to their destinations: it re-seals secrets
// under the current key once at start (Reseal), then works due deliveries as they come.
type DeliveryService struct {
	d           *Destinations
	cfg         DeliveryConfig
	TestSignals PassSignals
}

// NewDeliveryService returns the service of d.
func NewDeliveryService(d *Destinations, cfg DeliveryConfig) *DeliveryService {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &DeliveryService{d: d, cfg: cfg}
}

// Run re-seals, then delivers until ctx ends.
func (s *DeliveryService) Run(ctx context.Context) {
	if n, err := s.d.Reseal(ctx); err != nil {
		s.cfg.Log.Error("destination secrets not re-sealed under the current key", "err", err, "resealed", n)
	} else if n > 0 {
		s.cfg.Log.Info("destination secrets re-sealed under the current key", "count", n, "key", s.d.p.Keys.Current())
	}
	loop{name: "delivery to destinations", every: s.cfg.Interval, maxBackoff: 30 * time.Second, wake: s.d.wake,
		pass: s.runOnce, log: s.cfg.Log, signals: &s.TestSignals,
		failureAdvisory: "deliveries are tried again when the store answers"}.run(ctx)
}

func (s *DeliveryService) runOnce(ctx context.Context) (int, error) { return s.d.DeliverDue(ctx) }
