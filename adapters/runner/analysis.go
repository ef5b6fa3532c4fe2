package runner

import (
	"encoding/json"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mediajobs/mediajobs/core/workqueue"
	"github.com/mediajobs/mediajobs/validator"
)

// An analysis job (validator.Plan.Analysis: a command ending in -f null -) writes no file: its
// answer is what FFmpeg's filters print on stderr, parsed where the filter has a known format,
// with the log itself up to a cap. The log is untrusted (a filter prints what the media makes
// it print, metadata included), so the parser reads it line by line as it is written, keeps
// at most maxAnalysisEntries of each kind, and never fails: what it does not know it leaves to
// the raw log. Parsing as the log is written, rather than from the capped copy, keeps the
// summaries FFmpeg prints at the end (ebur128's, loudnorm's) however long the log grew.

// MaxAnalysisLogBytes is the most of an analysis job's log its data keeps.
const MaxAnalysisLogBytes = 1 << 20

// maxAnalysisEntries bounds each list of Analysis; past it, Truncated is set.
const maxAnalysisEntries = 10000

// maxAnalysisLine is the longest line the parser reads; the rest of a longer line is dropped.
const maxAnalysisLine = 64 << 10

// Analysis is the `data` of an analysis job. Every list is present, empty when the command has
// no such filter.
type Analysis struct {
	// Loudnorm is each loudnorm instance's print_format=json block, its keys in camelCase
	// (inputI, inputTp, inputLra, inputThresh, outputI, ..., targetOffset) and its numbers as
	// numbers; a value that is not a finite number stays a string ("-inf").
	Loudnorm []map[string]any `json:"loudnorm"`
	// EBUR128 is each ebur128 instance's summary.
	EBUR128 []EBUR128 `json:"ebur128"`
	// Silences are silencedetect's intervals, Blacks blackdetect's, in seconds.
	Silences []Interval `json:"silences"`
	Blacks   []Interval `json:"blacks"`
	// Frames are the frames showinfo printed: after select='gt(scene,X)', the scene changes.
	Frames []Frame `json:"frames"`
	// Volumes are volumedetect's measures.
	Volumes []Volume `json:"volumes"`
	// Log is FFmpeg's stderr, its first MaxAnalysisLogBytes; LogTruncated says it was longer.
	Log          string `json:"log"`
	LogTruncated bool   `json:"logTruncated"`
	// Truncated says a list reached maxAnalysisEntries and later entries were dropped.
	Truncated bool `json:"truncated"`
}

// EBUR128 is the summary ebur128 prints at the end; a value is absent when FFmpeg did not print
// it (truePeak and samplePeak need peak=true or peak=sample) or printed no finite number.
type EBUR128 struct {
	Integrated             *float64 `json:"integrated,omitempty"`
	IntegratedThreshold    *float64 `json:"integratedThreshold,omitempty"`
	LoudnessRange          *float64 `json:"loudnessRange,omitempty"`
	LoudnessRangeThreshold *float64 `json:"loudnessRangeThreshold,omitempty"`
	LoudnessRangeLow       *float64 `json:"loudnessRangeLow,omitempty"`
	LoudnessRangeHigh      *float64 `json:"loudnessRangeHigh,omitempty"`
	SamplePeak             *float64 `json:"samplePeak,omitempty"`
	TruePeak               *float64 `json:"truePeak,omitempty"`
}

// Interval is one detected interval; End and Duration are absent for one still open when the
// input ended.
type Interval struct {
	Start    float64  `json:"start"`
	End      *float64 `json:"end,omitempty"`
	Duration *float64 `json:"duration,omitempty"`
}

// Frame is one frame showinfo printed: its number in the filter's output and its time.
type Frame struct {
	N       int64   `json:"n"`
	PtsTime float64 `json:"ptsTime"`
}

// Volume is volumedetect's measure, in dB.
type Volume struct {
	MeanVolume *float64 `json:"meanVolume,omitempty"`
	MaxVolume  *float64 `json:"maxVolume,omitempty"`
}

// analysisLog is the Spec.Stderr of an analysis job: it keeps the log up to its cap and parses
// every line. Writes never fail. It is not safe for concurrent writes (a sandbox copies stderr
// in one goroutine).
type analysisLog struct {
	max     int
	log     []byte
	over    bool
	partial []byte // the line being written, up to maxAnalysisLine
	p       logParser
}

func newAnalysisLog(max int) *analysisLog {
	return &analysisLog{max: max, p: newLogParser()}
}

// analysisLogFor is the log of plan's run when it is an analysis, nil when it is not.
func analysisLogFor(plan *validator.Plan) *analysisLog {
	if !plan.Analysis {
		return nil
	}
	return newAnalysisLog(MaxAnalysisLogBytes)
}

// analysisResult answers a job whose last step measured and succeeded: its data, and no file
// (what a step wrote, a -pass 1's log or a filter's stats file, is not kept).
func (f *FFmpeg) analysisResult(a workqueue.Assignment, l *analysisLog, computeMs int64) workqueue.Result {
	data, err := l.data()
	if err != nil {
		return workqueue.Result{ComputeMs: computeMs, Failure: f.internal(a.Lease.JobID, "encoding the analysis failed", err)}
	}
	return workqueue.Result{Data: data, ComputeMs: max(1, computeMs)}
}

// stderr is l as Spec.Stderr: nil (no writer at all) when l is nil, a job that is no analysis.
func (l *analysisLog) stderr() io.Writer {
	if l == nil {
		return nil
	}
	return l
}

func (l *analysisLog) Write(b []byte) (int, error) {
	n := len(b)
	if room := l.max - len(l.log); room < len(b) {
		l.log = append(l.log, b[:max(room, 0)]...)
		l.over = true
	} else {
		l.log = append(l.log, b...)
	}
	for len(b) > 0 {
		i := strings.IndexAny(string(b), "\r\n")
		if i < 0 {
			l.add(b)
			break
		}
		l.add(b[:i])
		l.p.line(string(l.partial))
		l.partial = l.partial[:0]
		b = b[i+1:]
	}
	return n, nil
}

// add appends to the line being written, up to maxAnalysisLine.
func (l *analysisLog) add(b []byte) {
	if room := maxAnalysisLine - len(l.partial); room < len(b) {
		b = b[:max(room, 0)]
	}
	l.partial = append(l.partial, b...)
}

// analysis ends the log (its last line may lack a newline) and answers what it read.
func (l *analysisLog) analysis() Analysis {
	if len(l.partial) > 0 {
		l.p.line(string(l.partial))
		l.partial = l.partial[:0]
	}
	l.p.end()
	a := l.p.a
	log := l.log
	// Cut on a UTF-8 boundary, so that the JSON string holds what FFmpeg wrote.
	for i := 0; l.over && i < utf8.UTFMax && len(log) > 0 && !utf8.Valid(log); i++ {
		log = log[:len(log)-1]
	}
	a.Log, a.LogTruncated = strings.ToValidUTF8(string(log), "\uFFFD"), l.over
	return a
}

// measured is loudnorm's measurement in the log, by the names {{measured.NAME}} takes
// (ffmpegjob.MeasuredNames): the last loudnorm block's. A value loudnorm printed as text
// ("-inf", for silence) is infinite, which the step that would use it refuses.
func (l *analysisLog) measured() map[string]float64 {
	blocks := l.analysis().Loudnorm
	if len(blocks) == 0 {
		return nil
	}
	out := map[string]float64{}
	for name, key := range map[string]string{"input_i": "inputI", "input_tp": "inputTp", "input_lra": "inputLra",
		"input_thresh": "inputThresh", "target_offset": "targetOffset"} {
		switch v := blocks[len(blocks)-1][key].(type) {
		case float64:
			out[name] = v
		case string:
			out[name] = math.Inf(-1)
		}
	}
	return out
}

// data is the analysis as a job's data.
func (l *analysisLog) data() (json.RawMessage, error) {
	return json.Marshal(l.analysis())
}

// logParser reads FFmpeg's log line by line.
type logParser struct {
	a Analysis
	// json is the loudnorm block being read: its lines from "{" on; inJSON while it is.
	json   strings.Builder
	inJSON bool
	// summary is the ebur128 summary being read, section its current heading.
	summary *EBUR128
	section string
}

func newLogParser() logParser {
	return logParser{a: Analysis{Loudnorm: []map[string]any{}, EBUR128: []EBUR128{}, Silences: []Interval{},
		Blacks: []Interval{}, Frames: []Frame{}, Volumes: []Volume{}}}
}

// filterOf splits a log line "[Parsed_loudnorm_0 @ 0x55...] rest" into the filter's name
// ("loudnorm") and rest; ok is false for a line without such a prefix.
func filterOf(line string) (name, rest string, ok bool) {
	if !strings.HasPrefix(line, "[") {
		return "", "", false
	}
	end := strings.IndexByte(line, ']')
	if end < 0 {
		return "", "", false
	}
	ctx, _, _ := strings.Cut(line[1:end], " @ ")
	ctx = strings.TrimPrefix(ctx, "Parsed_")
	if i := strings.LastIndexByte(ctx, '_'); i > 0 {
		if _, err := strconv.Atoi(ctx[i+1:]); err == nil {
			ctx = ctx[:i]
		}
	}
	return ctx, strings.TrimSpace(line[end+1:]), true
}

func (p *logParser) line(line string) {
	if p.inJSON {
		p.jsonLine(line)
		return
	}
	if p.summary != nil {
		if p.summaryLine(line) {
			return
		}
		p.endSummary()
	}
	name, rest, ok := filterOf(line)
	if !ok {
		return
	}
	switch name {
	case "loudnorm":
		if rest == "" || strings.HasPrefix(rest, "{") {
			p.inJSON = true
			p.json.Reset()
			if rest != "" {
				p.jsonLine(rest)
			}
		}
	case "ebur128":
		if rest == "Summary:" && len(p.a.EBUR128) < maxAnalysisEntries {
			p.summary, p.section = &EBUR128{}, ""
		} else if rest == "Summary:" {
			p.a.Truncated = true
		}
	case "silencedetect":
		p.silence(rest)
	case "blackdetect":
		p.black(rest)
	case "showinfo":
		p.frame(rest)
	case "volumedetect":
		p.volume(rest)
	}
}

// end finishes a block the log stopped inside.
func (p *logParser) end() {
	if p.summary != nil {
		p.endSummary()
	}
	p.inJSON = false
}

// jsonLine adds a line to loudnorm's block; the block ends at a line that is "}".
func (p *logParser) jsonLine(line string) {
	t := strings.TrimSpace(line)
	if p.json.Len() == 0 && !strings.HasPrefix(t, "{") {
		p.inJSON = false // not print_format=json: another line of loudnorm's
		return
	}
	if p.json.Len()+len(t) > maxAnalysisLine {
		p.inJSON = false
		return
	}
	p.json.WriteString(t)
	p.json.WriteByte('\n')
	if t != "}" {
		return
	}
	p.inJSON = false
	var raw map[string]any
	if json.Unmarshal([]byte(p.json.String()), &raw) != nil {
		return
	}
	if len(p.a.Loudnorm) >= maxAnalysisEntries {
		p.a.Truncated = true
		return
	}
	m := make(map[string]any, len(raw))
	// In key order, the first of two keys that read alike in camelCase ("a_b", "aB") wins.
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		v := raw[k]
		if s, ok := v.(string); ok {
			if f, ok := finite(s); ok {
				v = f
			}
		}
		if _, dup := m[camel(k)]; !dup {
			m[camel(k)] = v
		}
	}
	p.a.Loudnorm = append(p.a.Loudnorm, m)
}

// camel turns loudnorm's snake_case keys into the API's camelCase: input_tp → inputTp.
func camel(k string) string {
	var b strings.Builder
	up := false
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c == '_':
			up = b.Len() > 0
		case up && c >= 'a' && c <= 'z':
			b.WriteByte(c - 'a' + 'A')
			up = false
		default:
			b.WriteByte(c)
			up = false
		}
	}
	return b.String()
}

// finite reads a finite number; "-inf", "nan" and anything else are not.
func finite(s string) (float64, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// summaryLine reads one line of ebur128's summary; false when the line is past its end (a line
// that is neither blank nor indented).
func (p *logParser) summaryLine(line string) bool {
	if strings.TrimSpace(line) == "" {
		return true
	}
	if line[0] != ' ' && line[0] != '\t' {
		return false
	}
	key, value, ok := strings.Cut(strings.TrimSpace(line), ":")
	if !ok {
		return true
	}
	value = strings.TrimSpace(value)
	if value == "" {
		p.section = key
		return true
	}
	num, _, _ := strings.Cut(value, " ")
	f, ok := finite(num)
	if !ok {
		return true
	}
	s := p.summary
	var dst **float64
	switch p.section + "/" + key {
	case "Integrated loudness/I":
		dst = &s.Integrated
	case "Integrated loudness/Threshold":
		dst = &s.IntegratedThreshold
	case "Loudness range/LRA":
		dst = &s.LoudnessRange
	case "Loudness range/Threshold":
		dst = &s.LoudnessRangeThreshold
	case "Loudness range/LRA low":
		dst = &s.LoudnessRangeLow
	case "Loudness range/LRA high":
		dst = &s.LoudnessRangeHigh
	case "Sample peak/Peak":
		dst = &s.SamplePeak
	case "True peak/Peak":
		dst = &s.TruePeak
	default:
		return true
	}
	*dst = &f
	return true
}

func (p *logParser) endSummary() {
	p.a.EBUR128 = append(p.a.EBUR128, *p.summary)
	p.summary = nil
}

// fields reads "key: value | key: value" and "key:value key:value" alike into the values of the
// keys asked for, each a finite number; a key absent or not a number is not in the map.
func fields(rest string, keys ...string) map[string]float64 {
	out := map[string]float64{}
	for _, k := range keys {
		i := strings.Index(rest, k+":")
		if i < 0 || (i > 0 && rest[i-1] != ' ' && rest[i-1] != '|') {
			continue
		}
		v := strings.TrimLeft(rest[i+len(k)+1:], " ")
		if j := strings.IndexAny(v, " |"); j >= 0 {
			v = v[:j]
		}
		if f, ok := finite(v); ok {
			out[k] = f
		}
	}
	return out
}

func (p *logParser) silence(rest string) {
	f := fields(rest, "silence_start", "silence_end", "silence_duration")
	if s, ok := f["silence_start"]; ok {
		if len(p.a.Silences) >= maxAnalysisEntries {
			p.a.Truncated = true
		} else {
			p.a.Silences = append(p.a.Silences, Interval{Start: s})
		}
	}
	if e, ok := f["silence_end"]; ok {
		g := map[string]float64{"e": e}
		if d, ok := f["silence_duration"]; ok {
			g["d"] = d
		}
		p.endOpen(&p.a.Silences, g)
	}
}

func (p *logParser) black(rest string) {
	f := fields(rest, "black_start", "black_end", "black_duration")
	s, ok := f["black_start"]
	if !ok {
		return
	}
	if len(p.a.Blacks) >= maxAnalysisEntries {
		p.a.Truncated = true
		return
	}
	iv := Interval{Start: s}
	if e, ok := f["black_end"]; ok {
		iv.End = &e
	}
	if d, ok := f["black_duration"]; ok {
		iv.Duration = &d
	}
	p.a.Blacks = append(p.a.Blacks, iv)
}

// endOpen closes the last open interval of list with g's end "e" and duration "d", or adds a
// closed one when none is open.
func (p *logParser) endOpen(list *[]Interval, g map[string]float64) {
	e := g["e"]
	var d *float64
	if v, ok := g["d"]; ok {
		d = &v
	}
	if n := len(*list); n > 0 && (*list)[n-1].End == nil {
		(*list)[n-1].End, (*list)[n-1].Duration = &e, d
		return
	}
	if len(*list) >= maxAnalysisEntries {
		p.a.Truncated = true
		return
	}
	iv := Interval{End: &e, Duration: d}
	if d != nil {
		iv.Start = e - *d
	}
	*list = append(*list, iv)
}

func (p *logParser) frame(rest string) {
	if !strings.HasPrefix(rest, "n:") {
		return
	}
	f := fields(rest, "n", "pts_time")
	n, okN := f["n"]
	t, okT := f["pts_time"]
	if !okN || !okT || n < 0 || n > math.MaxInt32 {
		return
	}
	if len(p.a.Frames) >= maxAnalysisEntries {
		p.a.Truncated = true
		return
	}
	p.a.Frames = append(p.a.Frames, Frame{N: int64(n), PtsTime: t})
}

func (p *logParser) volume(rest string) {
	key, value, ok := strings.Cut(rest, ":")
	if !ok {
		return
	}
	num, _, _ := strings.Cut(strings.TrimSpace(value), " ")
	f, ok := finite(num)
	if !ok {
		return
	}
	switch key {
	case "mean_volume":
		if len(p.a.Volumes) >= maxAnalysisEntries {
			p.a.Truncated = true
			return
		}
		p.a.Volumes = append(p.a.Volumes, Volume{MeanVolume: &f})
	case "max_volume":
		if n := len(p.a.Volumes); n > 0 && p.a.Volumes[n-1].MaxVolume == nil {
			p.a.Volumes[n-1].MaxVolume = &f
		}
	}
}
