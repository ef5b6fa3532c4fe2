package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/blob"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/workqueue"
	"github.com/mediajobs/mediajobs/validator"
)

// The files of a lease. A worker reads only the uploaded assets its job names as inputs, and
// writes outputs whose names pass the validator's rule for a file the command writes, within
// the plan's job_files and job_bytes for the whole attempt; every stored output is recorded on
// the job (job.Upload) so that the report can be held to exactly that set.

// active returns the job a lease holds while it runs.
func (s *Runs) active(ctx context.Context, who workqueue.Identity, l workqueue.Lease) (*job.Job, error) {
	if !s.p.Tokens.Valid(l) {
		return nil, s.refused(who, l, "forged lease token")
	}
	j, err := s.p.Jobs.Get(ctx, l.JobID)
	if errors.Is(err, problem.ErrNotFound) {
		return nil, s.refused(who, l, "no such job")
	}
	if err != nil {
		return nil, err
	}
	if err := s.holds(j, who, l); err != nil {
		return nil, err
	}
	if j.Status != job.StatusDispatched && j.Status != job.StatusRunning {
		return nil, s.refused(who, l, "the job is "+string(j.Status))
	}
	return j, nil
}

// openAsset reads an uploaded asset that the lease's job names as an input. Any other asset,
// of the same account or not, is not found: a lease is no key to the account's uploads.
func (s *Runs) openAsset(ctx context.Context, who workqueue.Identity, l workqueue.Lease, assetID string) (io.ReadCloser, error) {
	j, err := s.active(ctx, who, l)
	if err != nil {
		return nil, err
	}
	if r, ok, err := s.openPart(ctx, j, assetID); ok {
		return r, err
	}
	if !slices.Contains(namedAssets(j, s.p.AssetURLPrefix), assetID) {
		s.p.Log.Warn("runner asset read refused: not an input of the job", "job", j.ID, "asset", assetID, "worker", who.Name, "worker_id", who.ID)
		return nil, problem.Reject(problem.CodeNotFound, "asset %q not found", assetID)
	}
	a, err := s.p.Assets.GetAsset(ctx, assetID)
	if errors.Is(err, problem.ErrNotFound) || (err == nil && a.AccountID != j.AccountID) {
		return nil, problem.Reject(problem.CodeNotFound, "asset %q not found", assetID)
	}
	if err != nil {
		return nil, err
	}
	return s.p.Blobs.Open(ctx, blob.AssetKey(a.AccountID, a.ID))
}

// namedAssets lists the uploaded assets a job's request names: every {prefix}{id}/… inside a
// string of its inputs or params (a command names them inside params.command), read after JSON
// decoding (so an escaped "\/" reads as "/").
func namedAssets(j *job.Job, prefix string) []string {
	var ids []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			// Anywhere in the string: a command names its inputs inside params.command.
			for rest := v; prefix != ""; {
				i := strings.Index(rest, prefix)
				if i < 0 {
					break
				}
				rest = rest[i+len(prefix):]
				if id, _, ok := strings.Cut(rest, "/"); ok && id != "" {
					ids = append(ids, id)
				}
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	for _, raw := range []json.RawMessage{j.Inputs, j.Params} {
		var v any
		if json.Unmarshal(raw, &v) == nil {
			walk(v)
		}
	}
	return ids
}

// capsOf is the per-job caps of the plan of an account; an unknown account has the strictest
// (Free).
func (s *Runs) capsOf(ctx context.Context, accountID string) billing.Plan {
	plan := account.PlanFree
	if a, err := s.p.Accounts.GetAccount(ctx, accountID); err == nil {
		plan = a.Plan
	}
	return s.p.Pricing.Plan(plan)
}

// checkStored is a successful report's look at what the lease stored, before its
// transaction: the plan's caps, and each recorded output's size in storage. A job gone or of
// another attempt is left to the report's own checks.
func (s *Runs) checkStored(ctx context.Context, who workqueue.Identity, l workqueue.Lease) (*job.Job, billing.Plan, error) {
	j, err := s.p.Jobs.Get(ctx, l.JobID)
	if errors.Is(err, problem.ErrNotFound) {
		return nil, s.p.Pricing.Plan(account.PlanFree), nil
	}
	if err != nil {
		return nil, billing.Plan{}, err
	}
	caps := s.capsOf(ctx, j.AccountID)
	if j.Attempt != l.Attempt {
		return j, caps, nil
	}
	return j, caps, s.storedAsRecorded(ctx, who, j, l)
}

// storeInline stores the files a report carries (Result.Inline) as PutOutput would store them:
// names the validator lets a command write, each once and none stored under the lease already,
// no more bytes than the assignment allowed (InlineBytes), and within the plan's caps together
// with the files stored under the lease. j is the job as the report found it; nothing is
// written for a job the report will not finish (ended, or not this worker's lease). It returns
// the uploads that the write taking the result records (addInline); a report that is not taken
// deletes them again (dropInline).
func (s *Runs) storeInline(ctx context.Context, who workqueue.Identity, l workqueue.Lease, j *job.Job, caps billing.Plan, files []workqueue.InlineFile) ([]job.Upload, error) {
	if len(files) == 0 || j == nil || j.Status.Terminal() {
		return nil, nil // nothing carried, or the report is refused or was taken already: its write says which
	}
	if err := s.holds(j, who, l); err != nil {
		return nil, err
	}
	var total int64
	named := map[string]bool{}
	carried := make([]job.Upload, 0, len(files))
	for _, f := range files {
		if err := checkOutputName(f.Name); err != nil {
			return nil, s.refusedFiles(who, l, err)
		}
		if named[f.Name] {
			return nil, s.refusedFiles(who, l, problem.Reject(problem.CodeConflict, "the result carries %s twice", f.Name))
		}
		named[f.Name] = true
		total += int64(len(f.Data))
		carried = append(carried, job.Upload{Name: f.Name, Size: int64(len(f.Data))})
	}
	ups, err := addInline(j.Uploads, carried)
	if err != nil {
		return nil, s.refusedFiles(who, l, err)
	}
	if most := inlineBytes(caps); total > most {
		return nil, s.refusedFiles(who, l, problem.Reject(problem.CodePayloadTooLarge,
			"the result carries %d bytes of files, past the %d a report may carry: store them with PutOutput", total, most))
	}
	if sum, n := uploadedBesides(ups, ""); n > caps.JobFiles || sum > caps.JobBytes {
		return nil, s.refusedFiles(who, l, problem.Reject(problem.CodePayloadTooLarge,
			"the result's files take the job past its limit of %d files or %d bytes", caps.JobFiles, caps.JobBytes))
	}
	stored := make([]job.Upload, 0, len(files))
	for _, f := range files {
		n, err := s.p.Blobs.Put(ctx, blob.AttemptOutputKey(j.AccountID, j.ID, l.Attempt, f.Name), bytes.NewReader(f.Data), int64(len(f.Data)))
		if err != nil {
			s.dropInline(ctx, l, stored)
			return nil, err
		}
		stored = append(stored, job.Upload{Name: f.Name, Size: n})
	}
	return stored, nil
}

// inlineBytes is how many bytes of output files a report may carry under plan
// (Assignment.InlineBytes): DefaultInlineBytes, within the job's own cap.
func inlineBytes(plan billing.Plan) int64 {
	return min(workqueue.DefaultInlineBytes, plan.JobBytes)
}

// addInline is the lease's uploads with the files a report carried, none of which may have
// been stored under the lease already: a carried file never replaces an upload (whose bytes a
// refused report would otherwise take with it).
func addInline(ups, inline []job.Upload) ([]job.Upload, error) {
	for _, in := range inline {
		if slices.ContainsFunc(ups, func(u job.Upload) bool { return u.Name == in.Name }) {
			return nil, problem.Reject(problem.CodeConflict, "the result carries %s, which was stored under this lease already", in.Name)
		}
	}
	return append(slices.Clone(ups), inline...), nil
}

// dropInline deletes the files storeInline stored for a report whose write did not take them:
// each that the job, read again, does not record (as an upload of its attempt, or an output).
// The job's own record decides, not the write's error: a write may commit and fail to say so,
// a resent report may lose the race to its first sending, and another attempt may since have
// stored a file of the same name. A job that cannot be read keeps the files. The files are the
// lease's attempt's (AttemptOutputKey): those of an attempt that is not the job's are no one's.
func (s *Runs) dropInline(ctx context.Context, l workqueue.Lease, ups []job.Upload) {
	jobID := l.JobID
	if len(ups) == 0 {
		return
	}
	ctx = context.WithoutCancel(ctx) // the worker's request may be what ended
	j, err := s.p.Jobs.Get(ctx, jobID)
	if err != nil {
		s.p.Log.Warn("reading a job to clean up a refused report's files failed", "job", jobID, "err", err)
		return
	}
	recorded := storedNames(j)
	for _, u := range ups {
		if recorded[u.Name] && j.Attempt == l.Attempt {
			continue
		}
		if err := s.p.Blobs.Delete(ctx, blob.AttemptOutputKey(j.AccountID, j.ID, l.Attempt, u.Name)); err != nil {
			s.p.Log.Warn("deleting a file of a refused report failed", "job", j.ID, "file", u.Name, "err", err)
		}
	}
}

// storedNames is the names of the files a job records: its attempt's uploads and its outputs.
func storedNames(j *job.Job) map[string]bool {
	names := map[string]bool{}
	for _, u := range j.Uploads {
		names[u.Name] = true
	}
	if j.Output != nil {
		for _, f := range j.Output.Files {
			names[f.Path] = true
		}
	}
	return names
}

// putOutput stores one output file of the lease's job, within the plan's caps for the whole
// attempt: a new name past job_files, or bytes past what job_bytes leaves after the files
// already stored, is refused (413) and nothing is kept. max, when smaller, caps this file. The
// stored file is recorded on the job; a name the validator would not let a command write is
// refused (409).
func (s *Runs) putOutput(ctx context.Context, who workqueue.Identity, l workqueue.Lease, name string, r io.Reader, max int64) (int64, error) {
	j, err := s.active(ctx, who, l)
	if err != nil {
		return 0, err
	}
	if err := checkOutputName(name); err != nil {
		return 0, s.refusedFiles(who, l, err)
	}
	caps := s.capsOf(ctx, j.AccountID)
	others, files := uploadedBesides(j.Uploads, name)
	if files+1 > caps.JobFiles {
		return 0, s.refusedFiles(who, l, problem.Reject(problem.CodePayloadTooLarge,
			"output %s would be file %d of the job, past its limit of %d files (job_files)", name, files+1, caps.JobFiles))
	}
	limit := caps.JobBytes - others
	if max > 0 && max < limit {
		limit = max
	}
	if limit <= 0 {
		return 0, s.refusedFiles(who, l, problem.Reject(problem.CodePayloadTooLarge,
			"output %s: the job's outputs already hold its limit of %d bytes (job_bytes)", name, caps.JobBytes))
	}
	key := blob.AttemptOutputKey(j.AccountID, j.ID, l.Attempt, name)
	n, err := s.p.Blobs.Put(ctx, key, r, limit)
	if errors.Is(err, blob.ErrTooLarge) {
		return 0, s.refusedFiles(who, l, problem.Reject(problem.CodePayloadTooLarge,
			"output %s is larger than the %d bytes the job's limit of %d bytes (job_bytes) leaves", name, limit, caps.JobBytes))
	}
	if err != nil {
		return 0, err
	}
	// Record it under the lease, checking the caps again: another upload of the attempt may
	// have landed meanwhile.
	recorded := false
	_, err = s.p.Jobs.Update(ctx, j.ID, func(j *job.Job) error {
		recorded = j.Attempt == l.Attempt && slices.ContainsFunc(j.Uploads, func(u job.Upload) bool { return u.Name == name })
		if err := s.holds(j, who, l); err != nil {
			return err
		}
		if j.Status != job.StatusDispatched && j.Status != job.StatusRunning {
			return s.refused(who, l, "the job is "+string(j.Status))
		}
		others, files := uploadedBesides(j.Uploads, name)
		if files+1 > caps.JobFiles || others+n > caps.JobBytes {
			return problem.Reject(problem.CodePayloadTooLarge, "output %s takes the job past its limit of %d files or %d bytes", name, caps.JobFiles, caps.JobBytes)
		}
		j.Uploads = slices.DeleteFunc(j.Uploads, func(u job.Upload) bool { return u.Name == name })
		j.Uploads = append(j.Uploads, job.Upload{Name: name, Size: n})
		return nil
	})
	if err != nil {
		// A name recorded before keeps its blob (the report checks its size); any other is no
		// one's: an attempt that is not the job's any more wrote under keys of its own.
		if !recorded {
			_ = s.p.Blobs.Delete(context.WithoutCancel(ctx), key)
		}
		if problem.CodeOf(err) == problem.CodePayloadTooLarge {
			return 0, s.refusedFiles(who, l, err)
		}
		return 0, err
	}
	return n, nil
}

// storedAsRecorded checks that each output recorded under the lease is stored with the size
// recorded: two uploads of one name racing could otherwise leave more bytes in storage than
// the record (and the plan's job_bytes) allows.
func (s *Runs) storedAsRecorded(ctx context.Context, who workqueue.Identity, j *job.Job, l workqueue.Lease) error {
	for _, u := range j.Uploads {
		b, err := s.p.Blobs.Open(ctx, blob.AttemptOutputKey(j.AccountID, j.ID, l.Attempt, u.Name))
		if err != nil {
			if errors.Is(err, problem.ErrNotFound) {
				return s.refusedFiles(who, l, problem.Reject(problem.CodeConflict, "output %s is recorded but not stored", u.Name))
			}
			return err
		}
		size := b.Size()
		_ = b.Close()
		if size != u.Size {
			return s.refusedFiles(who, l, problem.Reject(problem.CodeConflict,
				"output %s holds %d bytes in storage, not the %d recorded: store it once more", u.Name, size, u.Size))
		}
	}
	return nil
}

// uploadedBesides sums the bytes and counts the files stored under the attempt, name excepted
// (storing a name again replaces it).
func uploadedBesides(ups []job.Upload, name string) (bytes int64, files int) {
	for _, u := range ups {
		if u.Name != name {
			bytes += u.Size
			files++
		}
	}
	return bytes, files
}

// checkReport holds a successful report's files to what the lease stored: the same set of
// names, each one a name the validator lets a command write, within the plan's caps; the sizes
// are the control plane's, not the worker's. It returns the files to record.
func (s *Runs) checkReport(j *job.Job, who workqueue.Identity, files []job.File, caps billing.Plan) ([]job.File, error) {
	l := workqueue.Lease{JobID: j.ID, Attempt: j.Attempt}
	if len(files) > caps.JobFiles {
		return nil, s.refusedFiles(who, l, problem.Reject(problem.CodePayloadTooLarge,
			"the result names %d files, past the job's limit of %d (job_files)", len(files), caps.JobFiles))
	}
	stored := make(map[string]int64, len(j.Uploads))
	for _, u := range j.Uploads {
		stored[u.Name] = u.Size
	}
	out := make([]job.File, len(files))
	var total int64
	named := map[string]bool{}
	for i, f := range files {
		if err := checkOutputName(f.Path); err != nil {
			return nil, s.refusedFiles(who, l, err)
		}
		if named[f.Path] {
			return nil, s.refusedFiles(who, l, problem.Reject(problem.CodeConflict, "the result names %s twice", f.Path))
		}
		size, ok := stored[f.Path]
		if !ok {
			return nil, s.refusedFiles(who, l, problem.Reject(problem.CodeConflict,
				"the result names %s, which was not stored under this lease", f.Path))
		}
		named[f.Path] = true
		f.Size, f.URL = size, ""
		total += size
		out[i] = f
	}
	for _, u := range j.Uploads {
		if !named[u.Name] {
			return nil, s.refusedFiles(who, l, problem.Reject(problem.CodeConflict,
				"the result leaves out %s, which was stored under this lease", u.Name))
		}
	}
	if total > caps.JobBytes {
		return nil, s.refusedFiles(who, l, problem.Reject(problem.CodePayloadTooLarge,
			"the result's files hold %d bytes, past the job's limit of %d (job_bytes)", total, caps.JobBytes))
	}
	return out, nil
}

// checkOutputName accepts the names the validator lets a command write: a bare name of
// letters, digits, '.', '_', '-' and '+', not starting with '.' or '-', without "..".
func checkOutputName(name string) error {
	if err := validator.CheckFileName(name); err != nil {
		return problem.Reject(problem.CodeConflict, "output name %q is refused: %v", name, err)
	}
	return nil
}

// refusedFiles logs a refusal of a lease's files with the worker's identity, and returns err.
func (s *Runs) refusedFiles(who workqueue.Identity, l workqueue.Lease, err error) error {
	s.p.Log.Warn("runner files refused", "job", l.JobID, "attempt", l.Attempt, "worker", who.Name, "worker_id", who.ID, "reason", err.Error())
	return err
}

// openOutput opens the output file name of job j as the attempt that completed it stored it
// (AttemptOutputKey); a job completed on a later attempt before attempts had keys of their own
// stored it under the first attempt's.
func openOutput(ctx context.Context, blobs blob.Store, j *job.Job, name string) (blob.Blob, error) {
	b, err := blobs.Open(ctx, blob.AttemptOutputKey(j.AccountID, j.ID, j.Attempt, name))
	if errors.Is(err, problem.ErrNotFound) && j.Attempt > 1 {
		return blobs.Open(ctx, blob.OutputKey(j.AccountID, j.ID, name))
	}
	return b, err
}
