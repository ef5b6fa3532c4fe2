package validator

import (
	"net/netip"
	"strconv"
	"strings"
)

// Options is what the validator knows of the job around the command. The zero value validates a
// bare command as POST /ffmpeg/validate does: no staged inputs, compute auto, default timeout.
type Options struct {
	// Inputs are the job's `inputs`, by staged name. A command may refer to these names bare.
	Inputs map[string]Input `json:"inputs,omitempty"`
	// OutputFormat is params.outputFormat; empty means infer it.
	OutputFormat string `json:"outputFormat,omitempty"`
	// Compute is params.compute: "", "auto", "cpu" or "gpu".
	Compute string `json:"compute,omitempty"`
	// Timeout is params.timeout in seconds; 0 means the default (120).
	Timeout int `json:"timeout,omitempty"`
	// AssetURLPrefix is "{base_url}/assets/": a URL with this prefix and the form
	// <prefix><asset_id>/content is an uploaded asset and is accepted whatever its scheme.
	AssetURLPrefix string `json:"assetUrlPrefix,omitempty"`
	// AllowPrivateNetworks are the address ranges the operator opened to the input fetcher
	// (MEDIAJOBS_ALLOW_PRIVATE_NETWORKS): an input URL on an address inside one is not refused
	// as non-public, and a localhost name is not when one holds 127.0.0.1 or ::1. Empty, every
	// non-public address is refused (NonPublic).
	AllowPrivateNetworks []netip.Prefix `json:"allowPrivateNetworks,omitempty"`
}

// Input is one entry of a job's `inputs`: a remote URL or inline content.
type Input struct {
	URL string `json:"url,omitempty"`
	// ContentSize is the byte length of inline `content`; Inline tells content from URL.
	ContentSize int  `json:"contentSize,omitempty"`
	Inline      bool `json:"inline,omitempty"`
}

// Result is the answer of POST /ffmpeg/validate. Its JSON form is exactly the endpoint's `data`:
// {valid, args, inferredOutputFormat, requiredInputs?} or {valid:false, error}.
type Result struct {
	Valid                bool     `json:"valid"`
	Args                 []string `json:"args,omitempty"`
	InferredOutputFormat string   `json:"inferredOutputFormat,omitempty"`
	// RequiredInputs are the bare names the command reads (-i in.mp4, subtitles=subs.srt, a
	// concat list, an image-sequence pattern such as img%03d.png) that Options.Inputs does not
	// provide yet, in the order the command names them. A job must supply every one: a pre-check
	// answers valid with the list, and a job submission with any left is refused
	// (MissingInputsError).
	RequiredInputs []string `json:"requiredInputs,omitempty"`
	Error          string   `json:"error,omitempty"`

	// Err is the structured rejection for Go callers; nil when Valid.
	Err *Error `json:"-"`
	// Plan tells the runner how to execute an accepted command; nil when not Valid.
	Plan *Plan `json:"-"`
}

// Plan is how the runner executes an accepted command.
type Plan struct {
	// Downloads are the remote files to fetch into the work directory before the run: every
	// URL `-i` argument and every URL entry of Options.Inputs, each with its local name.
	Downloads []Download
	// Args are the arguments after "ffmpeg", with every input URL replaced by its local name.
	Args []string
	// Outputs are the output names the command writes: bare names or numbered patterns
	// ("frame_%03d.png"); for HLS and DASH the manifest name.
	Outputs []string
	// Compute is "cpu" or "gpu".
	Compute string
	// Pattern is the output pattern the command is expected to produce:
	// "single", "stream" or "set"; "data" when it writes no file at all (every output is
	// -f null -), Outputs being empty.
	Pattern string
	// Analysis says that the command measures: its output is -f null -, which writes nothing,
	// and what its filters print (loudnorm, ebur128, silencedetect, blackdetect, showinfo) is
	// the answer. Pattern is then "data" and Outputs empty.
	Analysis bool
	// SideFiles are the other names the command may write in the work directory: HLS and
	// segment-list names, DASH templates, filter stats and log files. Every one is a bare name.
	SideFiles []string
}

// Download is one remote input to fetch into the work directory under Name.
type Download struct {
	URL  string
	Name string
}

// Error is a rejection: which layer refused, the flag or value it concerns, and a message that
// names it.
type Error struct {
	Layer   string // "syntax", "flags", "inputs", "formats", "filters", "options", "paths", "limits", "outputs"
	Flag    string // the offending flag, when there is one
	Value   string // the offending value, when there is one
	Message string
}

func (e *Error) Error() string { return e.Message }

// MissingInputsError is the rejection of a job whose command reads names its inputs do not
// provide (Result.RequiredInputs); nil when there are none. A pre-check (POST /ffmpeg/validate)
// answers such a command as valid, a job submission must not.
func (r *Result) MissingInputsError() *Error {
	if !r.Valid || len(r.RequiredInputs) == 0 {
		return nil
	}
	names := make([]string, len(r.RequiredInputs))
	for i, n := range r.RequiredInputs {
		names[i] = strconv.Quote(n)
		if isNumbered(n) {
			names[i] += " (an image sequence: stage its numbered frames, the first at -start_number)"
		}
	}
	what := "input " + names[0] + ", which inputs does not provide"
	if len(names) > 1 {
		what = "inputs " + strings.Join(names, ", ") + ", which inputs do not provide"
	}
	return &Error{Layer: layerInputs, Value: r.RequiredInputs[0],
		Message: "the command reads " + what + ": add each name to inputs (a URL or inline content)"}
}
