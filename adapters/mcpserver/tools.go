package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mediajobs/mediajobs/adapters/logctx"
	"github.com/mediajobs/mediajobs/adapters/mediatype"
	"github.com/mediajobs/mediajobs/adapters/safehttp"
	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/asset"
	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/jobtype/extractmetadata"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
	"github.com/mediajobs/mediajobs/validator"
)

const instructions = `mediajobs runs media work (FFmpeg commands, burned-in captions, metadata probes) asynchronously.
Typical flow: upload_media for local bytes (or use any https URL directly) → submit_job → get_job with wait: 30 (it answers the moment the job ends, or after 30 s; call again while it runs) until status is complete, failed or cancelled → read output.file.url or output.files[].url (signed, valid one hour; get_job again mints fresh ones).
A job may carry priority (low, normal or high; high on Pro): among waiting jobs higher priority goes first, and within a priority accounts take turns. get_queue shows this account's waiting jobs with their positions (1 runs next); set_job_priority changes a waiting job's priority.
probe_media answers quickly with a file's streams, duration and format. A tool result with isError carries {code, message}: VALIDATION_ERROR means fix the request as the message says; retryAfterSeconds means wait that long and call again. A call answered HTTP 429 Too Many Requests spent the account's per-minute request budget (shared with REST): wait Retry-After seconds and call again.`

const submitJobDescription = `Submit a media processing job; it runs asynchronously. Returns {id, status: "waiting"}. Then call get_job with the id and wait: 30 until status is complete, failed or cancelled.

Job types:
- "ffmpeg": params.command is a real FFmpeg command line starting with "ffmpeg". Inputs are -i https URLs written in the command, or files staged by name through "inputs" (the command then refers to the bare name, e.g. -i clip.mp4). Files read by filters (subtitles=subs.srt, lut3d=, drawtext fontfile=, concat lists) must be given in "inputs", e.g. {"subs.srt": {"content": "1\n00:00:00,000 --> ..."}}. The output is every file the command writes, named in the command (e.g. out.mp4). Optional params: outputFormat (mp4, mkv, webm, mov, avi, ts, gif, png, jpg, mp3, wav, flac, ogg, aac, opus, m4a, srt, vtt; default inferred from the output name), timeout (seconds, 1–900, default 120; plan caps: Free 300, Pro 900), compute (auto, cpu or gpu; default auto: h264_nvenc, hevc_nvenc and av1_nvenc go to a GPU, which needs the Pro plan). About 120 flags are allowed (-i -f -c:v -c:a -vf -af -filter_complex -map -ss -t -r -s -b:v -b:a -crf -preset -an -vn -y -movflags -strict ...); any other flag, and filters or formats that read files, use the network or run code, are rejected with VALIDATION_ERROR naming them. Synthetic sources work too: -f lavfi -i testsrc=duration=2:size=320x240:rate=25. To run several commands as one job, give params.steps (1 to 10 command strings) instead of params.command: they run in order in one work directory, a step reads earlier steps' outputs by bare name (-i web.mp4), the timeout covers them all, a failure says which step, and the outputs are the last step's plus those params.keep lists (e.g. "keep": ["poster.jpg"]). Or run a preset (list_presets shows them: web-mp4, hls-ladder, thumbnail-sprite, loudness-r128, gif-preview and the account's own): give preset and variables in place of params.command, with the inputs the preset reads, e.g. {"preset": "web-mp4", "variables": {"height": 480}, "inputs": {"in.mp4": url}}; a bad value is refused naming params.variables.<name>.
- "caption.burn": burn subtitles into a video. inputs: {"source": video URL, "subtitles": SRT/VTT/ASS URL (optional; without it the audio is transcribed)}. params (all optional): language (ISO-639-1 or auto), fontFamily (Inter), fontSize (48, 8–400), fontColor (#FFFFFF), bold (true), italic, outlineColor (#000000), outlineWidth (2, 0–20), shadow (1, 0–20), boxEnabled (false), boxColor, boxOpacity (0.6), position (bottom, center, top), alignment (left, center, right), marginV (60, 0–2000).
- "extract.metadata": inputs: {"source": media URL}; no params. Its answer is in output.data (prefer probe_media, which waits for it).
- "captions.animate": animated word-level captions.

To have the outputs copied to the account's own bucket once the job completes, give destination: {"id": "dst_..." (list_destinations), "path": "{job_id}/{name}"} (the key template may use {job_id}, {name} (required), {ext}, {date}, {preset}). The copy never changes the job's status or cost; the job.delivered or job.delivery_failed webhook tells how it went.

Output patterns of a complete job (get_job's output): single file (output.file is the file, output.files has one entry), stream (output.file is the .m3u8/.mpd manifest typed playlist, output.files has every segment), set (image sequence, segments, ladders: output.file is null, output.files lists every member), data only (output.data is the answer, output.files is empty).`

const setJobPriorityDescription = `Change a waiting job's priority (low, normal or high; high needs the Pro plan), as POST /jobs/{id}/priority does, and answer the job as get_job shows it. The job takes its place among the waiting jobs by the new priority: every waiting high job is claimed before any normal one, normal before low, and within a priority accounts take turns. A job no longer waiting keeps its priority and the call is refused with CONFLICT; a job of another account is NOT_FOUND.`

const getQueueDescription = `Show this account's waiting jobs in the order they will be claimed, as GET /queue does: data is a list of {position, class, job}, cpu jobs first, where position counts every account's waiting jobs of that class (1 is claimed next; other accounts' jobs are counted, never shown) and job is as get_job shows it. limit is 1 to 1000, default 100. It is a snapshot: submits, claims and priority changes move it.`

const getJobDescription = `Read a job: status (waiting, dispatched, running, complete, failed, cancelled), progress (0–1, while running), output (when complete: data, file, files, expiresAt), error (when failed: code, message, detail with FFmpeg's stderr tail, retryable) and cost. Give wait (seconds, up to 60) to have the answer come the moment the job ends, or after that many seconds with the job as it then stands; call again while it runs. Without wait it answers at once. File URLs are signed and valid for one hour; calling get_job again mints fresh ones.`

const listJobsDescription = `List this account's jobs, newest first, as get_job shows them. Filter by status or type; page with limit (1–100, default 20) and cursor (pagination.nextCursor of the previous page; null on the last page).`

const probeMediaDescription = `Probe a media file with ffprobe and answer synchronously: container format, duration (durationMs), size, bit rate, and every stream (codec, width, height, frame rate, pixel format, sample rate, channels, language, tags). source is an https URL or an uploaded asset's content URL. It runs an extract.metadata job, billed like one; data is that job's output.data. If the probe takes longer than a few seconds, the answer has status not yet complete and no data: poll get_job with jobId until it is complete and read output.data.`

const getAccountDescription = `Show this account: its credit balance, this month's spending, its plan (free or pro) and the plan's limits: requests per minute (shared by REST and MCP), execution cap in seconds, whether GPU jobs are allowed, concurrent jobs, and the bytes and files a job may write.`

const uploadMediaDescription = `Store a file for use as a job input and return its content URL (url), usable wherever a job accepts an input URL (inputs values, -i arguments). Give exactly one of: url (an https URL to fetch, public addresses only) or content (the bytes, base64, at most 16 MiB decoded). name (e.g. subs.srt) sets the file name and, without contentType, its media type.`

const validateCommandDescription = `Check an FFmpeg command before submitting it as an ffmpeg job, as POST /ffmpeg/validate does; free, nothing runs. Returns {valid, args, inferredOutputFormat, requiredInputs} or {valid: false, error} where error names the refused flag, filter, format or path. Give the job's inputs (same shape as submit_job) to check them too; names the command reads by bare name (-i in.mp4, subtitles=subs.srt, concat lists, image sequences such as img%03d.png) that inputs do not give come back in requiredInputs, and submit_job refuses the job until each is in its inputs.`

func (h *Handler) addTools() {
	add(h, &mcp.Tool{Name: "submit_job", Title: "Submit a media job", Description: submitJobDescription,
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: ptr(true), DestructiveHint: ptr(false)}}, h.submitJob)
	add(h, &mcp.Tool{Name: "get_job", Title: "Get a job", Description: getJobDescription,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}}, h.getJob)
	add(h, &mcp.Tool{Name: "list_jobs", Title: "List jobs", Description: listJobsDescription,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}}, h.listJobs)
	add(h, &mcp.Tool{Name: "probe_media", Title: "Probe a media file", Description: probeMediaDescription,
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: ptr(true), DestructiveHint: ptr(false)}}, h.probeMedia)
	add(h, &mcp.Tool{Name: "get_account", Title: "Get the account", Description: getAccountDescription,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}}, h.getAccount)
	add(h, &mcp.Tool{Name: "upload_media", Title: "Upload a media file", Description: uploadMediaDescription,
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: ptr(true), DestructiveHint: ptr(false)}}, h.uploadMedia)
	add(h, &mcp.Tool{Name: "validate_command", Title: "Validate an FFmpeg command", Description: validateCommandDescription,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}}, h.validateCommand)
	add(h, &mcp.Tool{Name: "set_job_priority", Title: "Change a waiting job's priority", Description: setJobPriorityDescription,
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: ptr(false), OpenWorldHint: ptr(false)}}, h.setJobPriority)
	add(h, &mcp.Tool{Name: "get_queue", Title: "Get the queue", Description: getQueueDescription,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}}, h.getQueue)
	h.addPresetTools()
	h.addDestinationTools()
}

func (h *Handler) setJobPriority(ctx context.Context, a account.Account, in SetJobPriorityInput) (service.View, string, error) {
	if in.ID == "" {
		return service.View{}, "", problem.Reject(problem.CodeValidation, "id is required")
	}
	v, err := h.uc.Jobs.SetPriority(ctx, a, in.ID, in.Priority)
	if err != nil {
		return service.View{}, "", err
	}
	return v, fmt.Sprintf("Job %s is %s with priority %s; get_queue shows its position.", v.ID, v.Status, v.Priority), nil
}

func (h *Handler) getQueue(ctx context.Context, a account.Account, in GetQueueInput) (Queue, string, error) {
	if in.Limit < 0 || in.Limit > job.MaxQueueLimit {
		return Queue{}, "", problem.Reject(problem.CodeValidation, "limit %d must be from 1 to %d", in.Limit, job.MaxQueueLimit)
	}
	entries, err := h.uc.Jobs.Queue(ctx, a, in.Limit)
	if err != nil {
		return Queue{}, "", err
	}
	q := Queue{Data: entries}
	if q.Data == nil {
		q.Data = []service.QueueEntry{}
	}
	if len(q.Data) == 0 {
		return q, "No waiting jobs.", nil
	}
	first := q.Data[0]
	return q, fmt.Sprintf("%d waiting job(s); the first, %s (%s, %s), is at position %d of the %s queue.",
		len(q.Data), first.Job.ID, first.Job.Priority, first.Class, first.Position, first.Class), nil
}

func (h *Handler) validateCommand(_ context.Context, _ account.Account, in ValidateCommandInput) (Validation, string, error) {
	opts := validator.Options{AssetURLPrefix: h.uc.Uploads.URLPrefix(), AllowPrivateNetworks: h.opts.AllowPrivateNetworks}
	if in.Inputs != nil {
		raw, err := json.Marshal(in.Inputs)
		if err != nil {
			return Validation{}, "", err
		}
		if opts.Inputs, err = validator.ParseJobInputs(raw); err != nil {
			return Validation{}, "", problem.Reject(problem.CodeValidation, "%s", err.Error())
		}
	}
	r := validator.Validate(in.Command, opts)
	out := Validation{Valid: r.Valid, Args: r.Args, InferredOutputFormat: r.InferredOutputFormat, RequiredInputs: r.RequiredInputs, Error: r.Error}
	switch {
	case !r.Valid:
		return out, "invalid: " + r.Error, nil
	case len(r.RequiredInputs) > 0:
		return out, "valid; the job's inputs must give: " + strings.Join(r.RequiredInputs, ", "), nil
	}
	return out, "valid; output format " + r.InferredOutputFormat, nil
}

func ptr[T any](v T) *T { return &v }

func (h *Handler) submitJob(ctx context.Context, a account.Account, in SubmitJobInput) (SubmittedJob, string, error) {
	in, err := in.withPreset()
	if err != nil {
		return SubmittedJob{}, "", err
	}
	body, err := json.Marshal(in)
	if err != nil {
		return SubmittedJob{}, "", err
	}
	req, err := jobtype.DecodeRequest(body)
	if err != nil {
		return SubmittedJob{}, "", err
	}
	j, err := h.uc.Submit.Submit(ctx, a, req)
	if err != nil {
		return SubmittedJob{}, "", err
	}
	h.log.InfoContext(logctx.WithJob(ctx, j.ID), "job submitted", "type", j.Type, "class", j.Class, "account", j.AccountID, "via", "mcp")
	return SubmittedJob{ID: j.ID, Status: j.Status},
		fmt.Sprintf("Job %s (%s) is %s. Call get_job with id %q and wait 30 until it is complete, failed or cancelled.", j.ID, j.Type, j.Status, j.ID), nil
}

func (h *Handler) getJob(ctx context.Context, a account.Account, in GetJobInput) (service.JobWithDelivery, string, error) {
	if in.ID == "" {
		return service.JobWithDelivery{}, "", problem.Reject(problem.CodeValidation, "id is required")
	}
	wait, err := service.WaitFor(in.Wait)
	if err != nil {
		return service.JobWithDelivery{}, "", err
	}
	v, err := h.uc.Jobs.Wait(ctx, a, in.ID, wait)
	if err != nil {
		return service.JobWithDelivery{}, "", err
	}
	out, err := h.uc.Destinations.WithDelivery(ctx, a, v)
	if err != nil {
		return service.JobWithDelivery{}, "", err
	}
	return out, summarize(v) + deliverySummary(out.Delivery), nil
}

// summarize says in a line where a job stands and what to do next.
func summarize(v service.View) string {
	switch v.Status {
	case job.StatusComplete:
		o := v.Output
		switch {
		case o == nil:
			return fmt.Sprintf("Job %s is complete.", v.ID)
		case o.File != nil:
			return fmt.Sprintf("Job %s is complete: %s (%s, %d bytes) at %s; %d file(s) in all; URLs valid for one hour.",
				v.ID, o.File.Path, o.File.Type, o.File.Size, o.File.URL, len(o.Files))
		case len(o.Files) > 0:
			return fmt.Sprintf("Job %s is complete: a set of %d files in output.files; URLs valid for one hour.", v.ID, len(o.Files))
		default:
			return fmt.Sprintf("Job %s is complete: its answer is in output.data.", v.ID)
		}
	case job.StatusFailed:
		if v.Error != nil {
			return fmt.Sprintf("Job %s failed with %s: %s (retryable: %t).", v.ID, v.Error.Code, v.Error.Message, v.Error.Retryable)
		}
		return fmt.Sprintf("Job %s failed.", v.ID)
	case job.StatusCancelled:
		return fmt.Sprintf("Job %s was cancelled.", v.ID)
	default:
		s := fmt.Sprintf("Job %s is %s", v.ID, v.Status)
		switch {
		case v.Progress != nil && *v.Progress > 0, v.Progress != nil && v.ProcessedMs == nil:
			s += fmt.Sprintf(" (%.0f%%)", *v.Progress*100)
		case v.ProcessedMs != nil:
			s += fmt.Sprintf(" (%s of media written; its length is not known)", (time.Duration(*v.ProcessedMs) * time.Millisecond).Round(100*time.Millisecond))
		}
		return s + "; call get_job again with wait 30."
	}
}

func (h *Handler) listJobs(ctx context.Context, a account.Account, in ListJobsInput) (JobPage, string, error) {
	p := job.ListParams{Limit: in.Limit, Cursor: in.Cursor}
	if in.Status != "" {
		st, err := job.ParseStatus(in.Status)
		if err != nil {
			return JobPage{}, "", problem.Reject(problem.CodeValidation, "status %q is not one of waiting, dispatched, running, complete, failed, cancelled", in.Status)
		}
		p.Status = st
	}
	if in.Type != "" {
		if _, ok := h.uc.Types.Lookup(in.Type); !ok {
			return JobPage{}, "", problem.Reject(problem.CodeValidation, "type %q is not a job type; one of: %s", in.Type, strings.Join(h.uc.Types.Names(), ", "))
		}
		p.Type = in.Type
	}
	if in.Limit < 0 || in.Limit > job.MaxListLimit {
		return JobPage{}, "", problem.Reject(problem.CodeValidation, "limit %d must be from 1 to %d", in.Limit, job.MaxListLimit)
	}
	if in.Cursor != "" {
		if _, _, err := job.DecodeCursor(in.Cursor); err != nil {
			return JobPage{}, "", err
		}
	}
	views, next, err := h.uc.Jobs.List(ctx, a, p)
	if err != nil {
		return JobPage{}, "", err
	}
	page := JobPage{Data: views}
	if page.Data == nil {
		page.Data = []service.View{}
	}
	summary := fmt.Sprintf("%d job(s).", len(views))
	if next != "" {
		page.Pagination.NextCursor = &next
		summary += " More: call list_jobs with cursor " + next + "."
	}
	return page, summary, nil
}

func (h *Handler) probeMedia(ctx context.Context, a account.Account, in ProbeMediaInput) (Probe, string, error) {
	inputs, err := json.Marshal(map[string]string{"source": in.Source})
	if err != nil {
		return Probe{}, "", err
	}
	j, err := h.uc.Submit.Submit(ctx, a, jobtype.Request{Type: extractmetadata.Name, Inputs: inputs})
	if err != nil {
		return Probe{}, "", err
	}
	v, err := h.await(ctx, a, j.ID)
	if err != nil {
		return Probe{}, "", err
	}
	p := Probe{JobID: v.ID, Status: v.Status, Error: v.Error, Cost: v.Cost}
	switch v.Status {
	case job.StatusComplete:
		if v.Output == nil {
			return Probe{}, "", fmt.Errorf("probe job %s is complete without output", v.ID)
		}
		var m extractmetadata.Metadata
		if err := json.Unmarshal(v.Output.Data, &m); err != nil {
			return Probe{}, "", fmt.Errorf("probe job %s: output.data: %w", v.ID, err)
		}
		p.Data = &m
		return p, fmt.Sprintf("%s: %s, %d ms, %d stream(s), %d bytes.", in.Source, m.Format, m.DurationMs, len(m.Streams), m.Size), nil
	case job.StatusFailed:
		if v.Error != nil {
			return Probe{}, "", problem.Reject(v.Error.Code, "probe job %s failed: %s", v.ID, v.Error.Message)
		}
		return Probe{}, "", problem.Reject(problem.CodeRunnerError, "probe job %s failed", v.ID)
	case job.StatusCancelled:
		return Probe{}, "", problem.Reject(problem.CodeCancelled, "probe job %s was cancelled", v.ID)
	default:
		return p, fmt.Sprintf("The probe (job %s) is still %s; call get_job with id %q and wait 30, and read output.data when it is complete.", v.ID, v.Status, v.ID), nil
	}
}

// await polls a job until it is terminal or ProbeWait passes, and returns it as last seen.
func (h *Handler) await(ctx context.Context, a account.Account, id string) (service.View, error) {
	ctx, cancel := context.WithTimeout(ctx, h.opts.ProbeWait)
	defer cancel()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		v, err := h.uc.Jobs.Get(context.WithoutCancel(ctx), a, id)
		if err != nil || v.Status.Terminal() {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, nil
		case <-t.C:
		}
	}
}

func (h *Handler) getAccount(ctx context.Context, a account.Account, _ GetAccountInput) (Account, string, error) {
	sum, err := h.uc.Credits.Summary(ctx, a)
	if err != nil {
		return Account{}, "", err
	}
	l := sum.Limits
	out := Account{ID: a.ID, Plan: a.Plan, CreatedAt: a.CreatedAt.UnixMilli(), Limits: Limits{
		RequestsPerMinute: l.RequestsPerMinute, ExecutionCapSeconds: int(l.ExecutionCap / time.Second), GPU: l.GPU,
		Concurrency: l.Concurrency, JobBytes: l.JobBytes, JobFiles: l.JobFiles, StallSeconds: l.StallSeconds},
		Balance: billing.Cost(sum.Balance),
		Usage:   Usage{Since: sum.MonthStart.UnixMilli(), Spent: billing.Cost(sum.SpentThisMonth)}}
	return out, fmt.Sprintf("Account %s on the %s plan: balance %s (%s spent this month); %d requests per minute, jobs up to %d s, %d at once, GPU %t.",
		a.ID, a.Plan, out.Balance.Formatted, out.Usage.Spent.Formatted, l.RequestsPerMinute, out.Limits.ExecutionCapSeconds,
		l.Concurrency, l.GPU), nil
}

func (h *Handler) uploadMedia(ctx context.Context, a account.Account, in UploadMediaInput) (Upload, string, error) {
	if (in.URL == "") == (in.Content == "") {
		return Upload{}, "", problem.Reject(problem.CodeValidation, "give exactly one of url and content")
	}
	if in.Name != "" {
		if err := asset.CheckName(in.Name); err != nil {
			return Upload{}, "", err
		}
	}
	var (
		body io.Reader
		head []byte
	)
	name := in.Name
	if in.Content != "" {
		b, err := h.decodeContent(in.Content)
		if err != nil {
			return Upload{}, "", err
		}
		if len(b) == 0 {
			return Upload{}, "", problem.Reject(problem.CodeValidation, "content is empty")
		}
		body, head = bytes.NewReader(b), b[:min(len(b), mediatype.SniffLen)]
	} else {
		resp, err := h.fetch(ctx, in.URL)
		if err != nil {
			return Upload{}, "", err
		}
		defer resp.Body.Close()
		br := bufio.NewReaderSize(resp.Body, 64<<10)
		if _, err := br.Peek(1); err != nil {
			return Upload{}, "", problem.Reject(problem.CodeInputFetchFailed, "url %s answered an empty body", redact(in.URL))
		}
		head, _ = br.Peek(mediatype.SniffLen) // short only at the end of the body
		body = br
		if name == "" {
			name = nameOf(resp.Request.URL)
		}
	}
	// As for POST /uploads: the type is sniffed from the bytes, never taken from the caller
	// (in.ContentType) or the remote server.
	contentType := mediatype.Sniff(head, name)
	as, err := h.uc.Uploads.Upload(ctx, a, name, contentType, body)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) {
			return Upload{}, "", problem.Reject(problem.CodeInputFetchFailed, "url %s could not be read to the end", redact(in.URL))
		}
		return Upload{}, "", err
	}
	out := Upload{ID: as.ID, URL: h.uc.Uploads.URL(as.ID), Name: as.Name, ContentType: as.ContentType, Size: as.Size}
	return out, fmt.Sprintf("Stored %s (%d bytes). Use %s as a job input URL.", out.Name, out.Size, out.URL), nil
}

// decodeContent decodes base64 content, refusing more than MaxInline bytes before decoding.
func (h *Handler) decodeContent(s string) ([]byte, error) {
	s = strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
	if int64(base64.StdEncoding.DecodedLen(len(s))) > h.opts.MaxInline+2 {
		return nil, problem.Reject(problem.CodePayloadTooLarge, "content exceeds the %d byte limit; upload larger files by url", h.opts.MaxInline)
	}
	enc := base64.StdEncoding
	if !strings.HasSuffix(s, "=") && len(s)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	b, err := enc.DecodeString(s)
	if err != nil {
		return nil, problem.Reject(problem.CodeValidation, "content is not base64: %v", err)
	}
	if int64(len(b)) > h.opts.MaxInline {
		return nil, problem.Reject(problem.CodePayloadTooLarge, "content exceeds the %d byte limit; upload larger files by url", h.opts.MaxInline)
	}
	return b, nil
}

// fetch GETs an input URL through the SSRF-guarded client.
func (h *Handler) fetch(ctx context.Context, raw string) (*http.Response, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, problem.Reject(problem.CodeValidation, "url %q is not an absolute URL", raw)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return nil, problem.Reject(problem.CodeValidation, "url %q is not usable: it cannot be requested", raw)
	}
	resp, err := h.opts.Fetch.Do(req)
	if err != nil {
		var blocked *safehttp.BlockedError
		switch {
		case errors.As(err, &blocked), errors.Is(err, safehttp.ErrBlockedAddress):
			return nil, problem.Reject(problem.CodeValidation, "url %s is refused: its address is on a private, loopback or reserved range", redact(raw))
		case errors.Is(err, safehttp.ErrScheme):
			return nil, problem.Reject(problem.CodeValidation, "url %s is refused: only https URLs are fetched", redact(raw))
		default:
			// The cause (a resolver's address, a raw network error) is the operator's to read.
			h.log.Warn("mcpserver: upload_media url could not be fetched", "url", redact(raw), "err", err)
			return nil, problem.Reject(problem.CodeInputFetchFailed, "url %s could not be fetched: %s", redact(raw), safehttp.Reason(err))
		}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		resp.Body.Close()
		return nil, problem.Reject(problem.CodeInputFetchFailed, "url %s could not be fetched: the server answered %s", redact(raw), resp.Status)
	}
	return resp, nil
}

// redact drops a URL's query and credentials, which for presigned URLs are secrets.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.RawQuery, u.User = "", nil
	return u.String()
}

// nameOf is the last segment of a URL's path, when it is a plain file name.
func nameOf(u *url.URL) string {
	n := path.Base(u.Path)
	if n == "." || n == "/" || asset.CheckName(n) != nil {
		return "upload"
	}
	return n
}
