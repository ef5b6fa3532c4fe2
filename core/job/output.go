package job

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"
)

// FileType is the open enum of a File's `type`. Clients tolerate values they do not know.
type FileType string

const (
	FileVideo    FileType = "video"
	FileImage    FileType = "image"
	FileAudio    FileType = "audio"
	FileCaptions FileType = "captions"
	FilePlaylist FileType = "playlist"
	FileData     FileType = "data"
	FileOther    FileType = "other"
)

var typeByExt = map[string]FileType{
	".mp4": FileVideo, ".mkv": FileVideo, ".webm": FileVideo, ".mov": FileVideo, ".avi": FileVideo,
	".ts": FileVideo, ".m4s": FileVideo, ".m4v": FileVideo, ".flv": FileVideo, ".mpg": FileVideo,
	".gif": FileImage, ".png": FileImage, ".jpg": FileImage, ".jpeg": FileImage, ".webp": FileImage,
	".bmp": FileImage, ".tiff": FileImage,
	".mp3": FileAudio, ".wav": FileAudio, ".flac": FileAudio, ".ogg": FileAudio, ".aac": FileAudio,
	".opus": FileAudio, ".m4a": FileAudio, ".oga": FileAudio,
	".srt": FileCaptions, ".vtt": FileCaptions, ".ass": FileCaptions,
	".m3u8": FilePlaylist, ".mpd": FilePlaylist,
	".json": FileData, ".csv": FileData, ".txt": FileData, ".xml": FileData,
}

// TypeOf classifies a file by its name.
func TypeOf(name string) FileType {
	if t, ok := typeByExt[strings.ToLower(path.Ext(name))]; ok {
		return t
	}
	return FileOther
}

// IsManifest reports whether name is an HLS or DASH manifest.
func IsManifest(name string) bool { return TypeOf(name) == FilePlaylist }

// Meta is what probing a file found; each field is present when known.
type Meta struct {
	Format     string `json:"format,omitempty"`
	Width      int    `json:"width,omitempty"`
	Height     int    `json:"height,omitempty"`
	DurationMs int64  `json:"durationMs,omitempty"`
}

// File is one produced file. URL is minted on every read and is never stored.
type File struct {
	URL  string   `json:"url"`
	Path string   `json:"path"`
	Type FileType `json:"type"`
	Size int64    `json:"size"`
	Meta *Meta    `json:"meta,omitempty"`
}

// Pattern is the shape of an Output.
type Pattern string

const (
	PatternSingle Pattern = "single"
	PatternStream Pattern = "stream"
	PatternSet    Pattern = "set"
	PatternData   Pattern = "data"
)

// ParsePattern reads a pattern's name; "" is no pattern (the files decide).
func ParsePattern(s string) (Pattern, error) {
	if p := Pattern(s); p.valid() {
		return p, nil
	}
	return "", fmt.Errorf("unknown output pattern %q", s)
}

func (p Pattern) valid() bool {
	switch p {
	case "", PatternSingle, PatternStream, PatternSet, PatternData:
		return true
	}
	return false
}

// Output is identical for every job type.
type Output struct {
	Data      json.RawMessage `json:"data"`
	File      *File           `json:"file"`
	Files     []File          `json:"files"`
	ExpiresAt *int64          `json:"expiresAt"`
}

// ErrEmptyOutput is returned for a complete job with neither data nor files (invariant 3).
var ErrEmptyOutput = errors.New("output has neither data nor files")

// NewOutput classifies the produced files into one of the four patterns:
//   - an .m3u8 or .mpd among them: stream, the manifest as `file` typed playlist;
//   - one file: single, unless want is set;
//   - several without a manifest, or any number when want is set: set, `file` null;
//   - none, with data: data only.
//
// want is the pattern the job's command asks for (Job.Pattern): an image sequence or a segment
// command has the set pattern by its command, not by the count of files it happened to write,
// so a client reads its `files` whether it wrote one or many. Empty: the files decide.
//
// A job that writes files has `data` null. With several manifests (an HLS master playlist and its
// variant playlists), the headline is the one the others do not name: the shortest name sorts
// first as a tie-break. URLs are left empty; Sign fills them on every read.
func NewOutput(files []File, data json.RawMessage, want Pattern) (Output, error) {
	if len(files) == 0 {
		if len(data) == 0 || string(data) == "null" {
			return Output{}, ErrEmptyOutput
		}
		return Output{Data: data, Files: []File{}}, nil
	}
	seen := make(map[string]bool, len(files))
	out := Output{Files: make([]File, len(files))}
	for i, f := range files {
		if f.Path == "" || seen[f.Path] {
			return Output{}, fmt.Errorf("output file %d: empty or duplicate path %q", i, f.Path)
		}
		seen[f.Path] = true
		if f.Type == "" {
			f.Type = TypeOf(f.Path)
		}
		if IsManifest(f.Path) {
			f.Type = FilePlaylist
		}
		out.Files[i] = f
	}
	if m := headlineManifest(out.Files); m >= 0 && want != PatternSet {
		out.File = &out.Files[m]
	} else if len(out.Files) == 1 && want != PatternSet {
		out.File = &out.Files[0]
	}
	return out, nil
}

func headlineManifest(files []File) int {
	best := -1
	for i, f := range files {
		if !IsManifest(f.Path) {
			continue
		}
		if best < 0 || len(f.Path) < len(files[best].Path) ||
			(len(f.Path) == len(files[best].Path) && f.Path < files[best].Path) {
			best = i
		}
	}
	return best
}

// Pattern tells which of the four patterns o is.
func (o Output) Pattern() Pattern {
	switch {
	case len(o.Files) == 0:
		return PatternData
	case o.File == nil:
		return PatternSet
	case o.File.Type == FilePlaylist:
		return PatternStream
	default:
		return PatternSingle
	}
}

// Check enforces the four invariants of the spec on o, with URLs already minted:
//  1. file, when not null, is one of files;
//  2. expiresAt is set whenever files is non-empty;
//  3. a complete job has data or a non-empty files;
//  4. URLs are fresh: expiresAt lies after now.
func (o Output) Check(now time.Time) error {
	if o.File != nil {
		found := false
		for _, f := range o.Files {
			if f.Path == o.File.Path && f.URL == o.File.URL {
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("output file %q is not among output files", o.File.Path)
		}
	}
	if len(o.Files) > 0 && o.ExpiresAt == nil {
		return errors.New("output has files but no expiresAt")
	}
	if len(o.Files) == 0 && (len(o.Data) == 0 || string(o.Data) == "null") {
		return ErrEmptyOutput
	}
	if o.ExpiresAt != nil && *o.ExpiresAt <= now.UnixMilli() {
		return fmt.Errorf("output URLs expired at %d", *o.ExpiresAt)
	}
	return nil
}

// Signer mints a URL for one file of a job's output under a pattern, valid until expires.
type Signer interface {
	SignFile(jobID string, p Pattern, file string, expires time.Time) string
}

// Sign returns a copy of o with fresh URLs valid until expires: invariant 4 holds because every
// read mints anew. Data-only outputs keep expiresAt null.
func (o Output) Sign(jobID string, s Signer, expires time.Time) Output {
	out := Output{Data: o.Data, Files: make([]File, len(o.Files))}
	p := o.Pattern()
	for i, f := range o.Files {
		f.URL = s.SignFile(jobID, p, f.Path, expires)
		out.Files[i] = f
		if o.File != nil && o.File.Path == f.Path {
			out.File = &out.Files[i]
		}
	}
	if len(out.Files) > 0 {
		ms := expires.UnixMilli()
		out.ExpiresAt = &ms
	}
	return out
}

// Upload is one output file stored under a job's current attempt, as the control plane counted
// it.
type Upload struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
}
