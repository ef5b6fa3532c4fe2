package job

// Split is the split-and-stitch state of a job that asked for it (params.split "auto"): the
// control plane cut its input into parts, each a part job of its own that any worker of the
// class may take, while the job's own runner encodes the audio and joins the encoded parts. A
// job that runs whole says why in Reason.
type Split struct {
	// Reason says why the job runs whole, when it does; empty while it may still be split and
	// once it has been.
	Reason string `json:"reason,omitempty"`
	// Parts are the part jobs, in the order they join, once the input was cut.
	Parts []SplitPart `json:"parts,omitempty"`
	// Around are the commands the job's own runner runs around the parts, kept so that each
	// heartbeat answers the same plan.
	Around
	// MaxParts is how many parts the job may be cut into, decided when it was claimed (the
	// free slots of its class, at most the operator's cap); Slots is how many slots its class
	// had then: with as many parts as slots, the last part waits for the job's own runner.
	MaxParts int `json:"maxParts,omitempty"`
	Slots    int `json:"slots,omitempty"`
}

// Around are the commands of a split that the job's own runner runs around its parts
// (validator.SplitRun): Audio, writing AudioName, while the parts are encoded; then Trims, which
// cut the parts' lead-outs off; then List written under ListName, and Join, which concatenates
// the parts and muxes the audio in.
type Around struct {
	Audio     []string   `json:"audio,omitempty"`
	AudioName string     `json:"audioName,omitempty"`
	Trims     [][]string `json:"trims,omitempty"`
	ListName  string     `json:"listName,omitempty"`
	List      string     `json:"list,omitempty"`
	Join      []string   `json:"join,omitempty"`
}

// SplitPart is one part of a split job: the part job that encodes it, the file it writes, and
// the stretch of the input it covers, in seconds; it encodes Lead seconds of the input besides,
// before Start and after End, which the join drops (validator.SplitRun.Leads).
type SplitPart struct {
	JobID string  `json:"jobId"`
	Name  string  `json:"name"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	Lead  float64 `json:"lead,omitempty"`
}

// Cut says whether the input was cut into parts.
func (s *Split) Cut() bool { return s != nil && len(s.Parts) > 0 }

// IsPart says whether j is a part of a split job: hidden from lists and the queue, with no
// events and no charge of its own; its parent carries its compute.
func (j *Job) IsPart() bool { return j.ParentID != "" }
