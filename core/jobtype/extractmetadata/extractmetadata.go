package extractmetadata

import (
	"encoding/json"
	"time"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/jobtype/captionburn"
)

// Name is the type's name.
const Name = "extract.metadata"

// Timeout is the time limit the job asks for: probing reads headers only.
const Timeout = 2 * time.Minute

// Metadata is output.data of an extract.metadata job. Fields ffprobe does not know are zero and
// omitted, except format, durationMs, size, bitRate and streams, which are always present.
type Metadata struct {
	// Format is the container, named by its extension where ffprobe's demuxer list has it
	// ("mp4", "mkv", "wav"), else the demuxer's first name.
	Format     string   `json:"format"`
	FormatLong string   `json:"formatLongName,omitempty"`
	DurationMs int64    `json:"durationMs"`
	Size       int64    `json:"size"`
	BitRate    int64    `json:"bitRate"` // bits per second
	Streams    []Stream `json:"streams"`
	// Tags are the container's tags (title, encoder, ...), keys lower-cased.
	Tags map[string]string `json:"tags,omitempty"`
}

// Stream is one stream of the file.
type Stream struct {
	Index int `json:"index"`
	// Type is video, audio, subtitle, data or attachment.
	Type    string `json:"type"`
	Codec   string `json:"codec"`
	Profile string `json:"profile,omitempty"`
	// Video.
	Width       int     `json:"width,omitempty"`
	Height      int     `json:"height,omitempty"`
	FrameRate   float64 `json:"frameRate,omitempty"` // frames per second, 3 decimals
	PixelFormat string  `json:"pixelFormat,omitempty"`
	// Audio.
	SampleRate    int    `json:"sampleRate,omitempty"`
	Channels      int    `json:"channels,omitempty"`
	ChannelLayout string `json:"channelLayout,omitempty"`
	DurationMs    int64  `json:"durationMs,omitempty"`
	BitRate       int64  `json:"bitRate,omitempty"`
	// Language is the stream's language tag (ISO-639-2, as containers store it), if any.
	Language string            `json:"language,omitempty"`
	Tags     map[string]string `json:"tags,omitempty"`
}

// Parse reads the job: one input, source; no params (an empty object is accepted).
func Parse(rawInputs, rawParams json.RawMessage) (string, error) {
	in, err := captionburn.URLInputs(rawInputs, []string{captionburn.InputSource}, nil)
	if err != nil {
		return "", err
	}
	var none struct{}
	if err := captionburn.DecodeParams(rawParams, &none); err != nil {
		return "", err
	}
	return in[captionburn.InputSource], nil
}

// Type is the registered extract.metadata type.
type Type struct{}

// Name is "extract.metadata".
func (Type) Name() string { return Name }

// Prepare validates the request.
func (Type) Prepare(req jobtype.Request, env jobtype.Env) (jobtype.Spec, error) {
	src, err := Parse(req.Inputs, req.Params)
	if err != nil {
		return jobtype.Spec{}, err
	}
	assets, err := captionburn.CheckURLs(map[string]string{captionburn.InputSource: src}, env)
	if err != nil {
		return jobtype.Spec{}, err
	}
	return jobtype.Spec{Class: job.ClassCPU, Timeout: Timeout, Assets: assets}, nil
}
