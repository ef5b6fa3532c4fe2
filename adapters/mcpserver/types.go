package mcpserver

import (
	"encoding/json"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mediajobs/mediajobs/core/account"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype/extractmetadata"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
)

// The tools' inputs. Their JSON Schemas are inferred from these types; the jsonschema tags are
// the property descriptions a model reads.

// SubmitJobInput is the request of submit_job: the body of POST /jobs.
type SubmitJobInput struct {
	Type      string         `json:"type" jsonschema:"the job type: ffmpeg, caption.burn, extract.metadata or captions.animate"`
	Inputs    map[string]any `json:"inputs,omitempty" jsonschema:"input files by name. ffmpeg: each key is a bare file name staged in the work directory (the command refers to it by that name); each value is an https URL, an uploaded asset's content URL (see upload_media), {\"url\": \"...\"} or {\"content\": \"...\"} (inline text up to 64 KB: subtitles, concat lists). Inputs given directly as -i URLs in the command need no entry here. caption.burn: {\"source\": url, \"subtitles\": url (optional)}. extract.metadata: {\"source\": url}."`
	Params    map[string]any `json:"params,omitempty" jsonschema:"options of the job type. ffmpeg: {\"command\": \"ffmpeg ...\" (required), \"outputFormat\", \"timeout\" (seconds, 1-900, default 120), \"compute\" (auto, cpu or gpu; default auto), \"split\" (auto or off, Pro: a long encode split across the workers, one job and one charge)}. caption.burn: styling options, all optional. extract.metadata: none."`
	Priority  string         `json:"priority,omitempty" jsonschema:"low, normal or high (default normal): the order among waiting jobs; high needs the Pro plan"`
	Preset    string         `json:"preset,omitempty" jsonschema:"a preset's name (list_presets), in place of params.command (type ffmpeg): the job runs the preset's template with variables; inputs give the preset's inputs (in.mp4 for the built-ins)"`
	Variables map[string]any `json:"variables,omitempty" jsonschema:"the preset's variables by name, e.g. {\"height\": 480}; absent ones take their defaults; a value is one typed argument, never a flag or a path"`
	// Destination is the job's destination: its outputs are copied there once it completes.
	Destination *DestinationRef `json:"destination,omitempty" jsonschema:"one of your destinations (list_destinations) to copy the outputs to once the job completes, with the key template; the job's status and cost never depend on the copy"`
}

// SetJobPriorityInput is the request of set_job_priority: POST /jobs/{id}/priority.
type SetJobPriorityInput struct {
	ID       string `json:"id" jsonschema:"the waiting job's id, job_..."`
	Priority string `json:"priority" jsonschema:"low, normal or high; high needs the Pro plan"`
}

// GetQueueInput is the request of get_queue: the query of GET /queue.
type GetQueueInput struct {
	Limit int `json:"limit,omitempty" jsonschema:"how many waiting jobs to answer, 1 to 1000; default 100"`
}

// GetJobInput is the request of get_job.
type GetJobInput struct {
	ID string `json:"id" jsonschema:"the job's id, job_..., as submit_job returned it"`
	// Wait is GET /jobs/{id}'s wait: seconds to hold the answer until the job ends.
	Wait int `json:"wait,omitempty" jsonschema:"seconds to wait for the job to end before answering, 0 to 60; the answer comes the moment it ends, or after wait seconds with the job as it then stands; default 0, at once"`
}

// ListJobsInput is the request of list_jobs: the query of GET /jobs.
type ListJobsInput struct {
	Status string `json:"status,omitempty" jsonschema:"only jobs in this status: waiting, dispatched, running, complete, failed or cancelled"`
	Type   string `json:"type,omitempty" jsonschema:"only jobs of this type, e.g. ffmpeg"`
	Limit  int    `json:"limit,omitempty" jsonschema:"page size, 1 to 100; default 20"`
	Cursor string `json:"cursor,omitempty" jsonschema:"pagination.nextCursor of the previous page, to read the next one"`
}

// ProbeMediaInput is the request of probe_media.
type ProbeMediaInput struct {
	Source string `json:"source" jsonschema:"the media file to probe: an https URL or an uploaded asset's content URL"`
}

// ValidateCommandInput is the request of validate_command: the body of POST /ffmpeg/validate.
type ValidateCommandInput struct {
	Command string         `json:"command" jsonschema:"the FFmpeg command to check, starting with ffmpeg, as params.command of an ffmpeg job"`
	Inputs  map[string]any `json:"inputs,omitempty" jsonschema:"the job's inputs, as submit_job takes them: bare file name to an https URL, {\"url\": \"...\"} or {\"content\": \"...\"}. Names the command reads that are not given here come back in requiredInputs."`
}

// Validation is the output of validate_command: the data of POST /ffmpeg/validate.
type Validation struct {
	Valid                bool     `json:"valid" jsonschema:"whether an ffmpeg job may run the command"`
	Args                 []string `json:"args,omitempty" jsonschema:"the command's words after ffmpeg, as FFmpeg will get them"`
	InferredOutputFormat string   `json:"inferredOutputFormat,omitempty" jsonschema:"the format of the trailing output, e.g. mp4"`
	RequiredInputs       []string `json:"requiredInputs,omitempty" jsonschema:"bare names the command reads (-i in.mp4, subtitles=subs.srt, concat lists, img%03d.png sequences) that inputs do not give yet: submit_job needs each in its inputs"`
	Error                string   `json:"error,omitempty" jsonschema:"why the command is refused, naming the flag, filter, format or path"`
}

// GetAccountInput is the request of get_account: nothing.
type GetAccountInput struct{}

// UploadMediaInput is the request of upload_media: exactly one of url and content.
type UploadMediaInput struct {
	URL         string `json:"url,omitempty" jsonschema:"an https URL to fetch and store (public addresses only)"`
	Content     string `json:"content,omitempty" jsonschema:"the file's bytes, base64 (standard alphabet), at most 16 MiB decoded"`
	Name        string `json:"name,omitempty" jsonschema:"the file name to keep, e.g. subs.srt; its extension names the content type only where the bytes cannot tell (Matroska, MPEG-TS, subtitles)"`
	ContentType string `json:"contentType,omitempty" jsonschema:"ignored, kept for compatibility: the stored media type is sniffed from the bytes"`
}

// The tools' outputs: the JSON the REST API answers with, inside its { data } envelope.

// SubmittedJob is the output of submit_job: the answer of POST /jobs.
type SubmittedJob struct {
	ID     string     `json:"id"`
	Status job.Status `json:"status"`
}

// JobPage is the output of list_jobs: the body of GET /jobs.
type JobPage struct {
	Data       []service.View `json:"data"`
	Pagination Pagination     `json:"pagination"`
}

// Queue is the output of get_queue: the body of GET /queue, the account's waiting jobs in the
// order they are claimed, each with its position among every account's waiting jobs of its class.
type Queue struct {
	Data []service.QueueEntry `json:"data"`
}

// Pagination says where the next page starts.
type Pagination struct {
	// NextCursor is null on the last page.
	NextCursor *string `json:"nextCursor"`
}

// Probe is the output of probe_media: the extract.metadata job that answered it and, once it is
// complete, its output.data.
type Probe struct {
	JobID  string     `json:"jobId"`
	Status job.Status `json:"status"`
	// Data is the job's output.data: present when status is complete.
	Data  *extractmetadata.Metadata `json:"data,omitempty"`
	Error *job.Error                `json:"error,omitempty"`
	Cost  *job.Cost                 `json:"cost,omitempty"`
}

// Account is the output of get_account: the answer of GET /account.
type Account struct {
	ID     string       `json:"id"`
	Plan   account.Plan `json:"plan"`
	Limits Limits       `json:"limits"`
	// Balance is the credits the account holds, as GET /account shows it.
	Balance job.Cost `json:"balance"`
	// Usage is this month's spending (UTC).
	Usage     Usage `json:"usage"`
	CreatedAt int64 `json:"createdAt"`
}

// Limits are the plan's limits.
type Limits struct {
	RequestsPerMinute   int   `json:"requestsPerMinute"`
	ExecutionCapSeconds int   `json:"executionCapSeconds"`
	GPU                 bool  `json:"gpu"`
	Concurrency         int   `json:"concurrency"`
	JobBytes            int64 `json:"jobBytes"`
	JobFiles            int   `json:"jobFiles"`
	StallSeconds        int   `json:"stallSeconds"`
}

// Usage is the credits charged since the first of the month (UTC), Since in Unix ms.
type Usage struct {
	Since int64    `json:"since"`
	Spent job.Cost `json:"spent"`
}

// Upload is the output of upload_media: the answer of POST /uploads.
type Upload struct {
	ID          string `json:"id"`
	URL         string `json:"url"`
	Name        string `json:"name"`
	ContentType string `json:"contentType"`
	Size        int64  `json:"size"`
}

// ToolError is the structured content of a tool result with isError: the REST error's
// { code, message }, plus, when REST would send Retry-After (SERVICE_UNAVAILABLE of a full or
// unreachable store), the seconds to wait. A call over the rate limit never gets here: it is
// answered HTTP 429 before the tool runs (Handler.budget).
type ToolError struct {
	Code              problem.Code `json:"code"`
	Message           string       `json:"message"`
	RetryAfterSeconds int          `json:"retryAfterSeconds,omitempty"`
}

// schemaFor infers the JSON Schema of T. Raw JSON (a job's inputs, params and output.data) is an
// object or null; enums of the domain list their values.
func schemaFor[T any]() *jsonschema.Schema {
	statuses := make([]any, len(job.Statuses))
	for i, s := range job.Statuses {
		statuses[i] = string(s)
	}
	plans := []any{string(account.PlanFree), string(account.PlanPro)}
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage](): {Types: []string{"object", "null"}},
		reflect.TypeFor[job.Status]():      {Type: "string", Enum: statuses},
		reflect.TypeFor[job.Class]():       {Type: "string", Enum: []any{string(job.ClassCPU), string(job.ClassGPU)}},
		reflect.TypeFor[job.Priority]():    {Type: "string", Enum: []any{string(job.PriorityLow), string(job.PriorityNormal), string(job.PriorityHigh)}},
		reflect.TypeFor[account.Plan]():    {Type: "string", Enum: plans},
		reflect.TypeFor[job.FileType]():    {Type: "string", Description: "video, image, audio, captions, playlist, data or other; tolerate other values"},
		reflect.TypeFor[problem.Code]():    {Type: "string"},
	}})
	if err != nil {
		// The types are ours and fixed: a failure is a programming mistake caught by any test.
		panic("mcpserver: schema of " + reflect.TypeFor[T]().String() + ": " + err.Error())
	}
	return s
}
