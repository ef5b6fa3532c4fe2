package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/mediajobs/mediajobs/adapters/sandbox"
	"github.com/mediajobs/mediajobs/core/jobtype/captionburn"
	"github.com/mediajobs/mediajobs/core/subtitle"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// Names in a caption job's work directory; none of them is an output.
const (
	localSubtitles = "subtitles.in"
	localAudio     = "speech.wav"
	localScript    = "captions.ass"
	// CaptionOutput is the single file a caption job writes.
	CaptionOutput = "captioned.mp4"
)

// Captions executes caption.burn jobs: fetch, turn the subtitles (or a transcript of the audio)
// into an ASS script, burn it with libass in the sandbox, store the one output.
type Captions struct {
	FFmpeg *FFmpeg
	// Transcriber transcribes when no subtitles are given; nil refuses such jobs.
	Transcriber captionburn.Transcriber
	// Limits bound the subtitle files read; zero fields take subtitle.DefaultLimits.
	Limits subtitle.Limits
}

// Execute runs one caption.burn job.
func (c *Captions) Execute(ctx context.Context, a workqueue.Assignment, work string, h Hooks) workqueue.Result {
	req, err := captionburn.Parse(a.Inputs, a.Params)
	if err == nil {
		_, err = captionburn.CheckURLs(req.Inputs(), c.FFmpeg.env(a))
	}
	if err != nil {
		return workqueue.Result{Failure: invalid(err.Error())}
	}
	b := c.FFmpeg.burner(ctx, a, work, h)
	video, e := b.source(req.Source)
	if e != nil {
		return b.fail(e)
	}
	var script []byte
	if req.Subtitles != "" {
		script, e = b.subtitles(req.Subtitles, req.Params.Style, video, c.Limits)
	} else {
		var words []subtitle.Word
		if words, e = b.transcribe(c.Transcriber, req.Params.Language); e == nil {
			script = subtitle.WriteASS(subtitle.Cues(words, req.Params.MaxCharsPerLine, 2), req.Params.Style, video)
		}
	}
	if e != nil {
		return b.fail(e)
	}
	return b.burn(script)
}

// burner is one caption job's run: the steps share the work directory, the deadline, and the
// compute time they add up.
type burner struct {
	f        *FFmpeg
	ctx      context.Context
	a        workqueue.Assignment
	work     string
	hooks    Hooks
	deadline time.Time
	compute  time.Duration
	inputs   map[string]bool
	meta     video
}

type video struct {
	subtitle.Video
	durationMs int64
	audioCodec string
}

func (f *FFmpeg) burner(ctx context.Context, a workqueue.Assignment, work string, h Hooks) *burner {
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = sandbox.DefaultTimeout
	}
	return &burner{f: f, ctx: ctx, a: a, work: work, hooks: h, deadline: time.Now().Add(timeout),
		inputs: map[string]bool{localSource: true, localSubtitles: true, localAudio: true, localScript: true, "transcript.in": true}}
}

func (b *burner) fail(e *workqueue.Failure) workqueue.Result {
	return workqueue.Result{ComputeMs: b.compute.Milliseconds(), Failure: e}
}

func (b *burner) left() time.Duration { return max(time.Second, time.Until(b.deadline)) }

// source fetches and probes the video.
func (b *burner) source(url string) (subtitle.Video, *workqueue.Failure) {
	if e := b.f.Fetch.Fetch(b.ctx, b.a, url, filepath.Join(b.work, localSource)); e != nil {
		return subtitle.Video{}, e
	}
	if e := refuseList(b.work, localSource, "inputs.source"); e != nil {
		return subtitle.Video{}, e
	}
	b.hooks.Executing()
	md, wall, err := probeMetadata(b.ctx, b.f.Sandbox, b.work, localSource, b.left())
	b.compute += wall
	if err != nil {
		return subtitle.Video{}, exitFail("inputs.source could not be read as media", []byte(err.Error()))
	}
	b.meta.durationMs = md.DurationMs
	for _, s := range md.Streams {
		switch {
		case s.Type == "video" && b.meta.Width == 0 && s.Width > 0 && s.Height > 0:
			b.meta.Width, b.meta.Height = s.Width, s.Height
		case s.Type == "audio" && b.meta.audioCodec == "":
			b.meta.audioCodec = s.Codec
		}
	}
	if b.meta.Width == 0 {
		return subtitle.Video{}, exitFail("inputs.source has no video stream to burn captions into", nil)
	}
	return b.meta.Video, nil
}

// readInput fetches an input and reads it, up to the subtitle size limit.
func (b *burner) readInput(name, url, local string, lim subtitle.Limits) ([]byte, *workqueue.Failure) {
	if e := b.f.Fetch.Fetch(b.ctx, b.a, url, filepath.Join(b.work, local)); e != nil {
		return nil, e
	}
	max := lim.MaxBytes
	if max <= 0 {
		max = subtitle.DefaultLimits.MaxBytes
	}
	fd, err := os.OpenFile(filepath.Join(b.work, local), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, exitFail("inputs."+name+" could not be read", nil)
	}
	defer fd.Close()
	data, err := io.ReadAll(io.LimitReader(fd, int64(max)+1))
	if err != nil {
		return nil, exitFail("inputs."+name+" could not be read", nil)
	}
	return data, nil
}

// subtitles fetches the subtitle file and returns the ASS script to burn: an ASS file as is,
// SRT and VTT rendered in style.
func (b *burner) subtitles(url string, style subtitle.Style, v subtitle.Video, lim subtitle.Limits) ([]byte, *workqueue.Failure) {
	data, e := b.readInput(captionburn.InputSubtitles, url, localSubtitles, lim)
	if e != nil {
		return nil, e
	}
	bad := func(err error) *workqueue.Failure {
		return invalid("inputs.subtitles is not a usable SRT, VTT or ASS file: " + err.Error())
	}
	if subtitle.Detect(data) == subtitle.FormatASS {
		if err := subtitle.CheckASS(data, lim); err != nil {
			return nil, bad(err)
		}
		return data, nil
	}
	cues, err := subtitle.Parse(data, lim)
	if err != nil {
		return nil, bad(err)
	}
	return subtitle.WriteASS(cues, style, v), nil
}

// transcribe extracts the audio as 16 kHz mono PCM with the sandboxed FFmpeg and transcribes it.
func (b *burner) transcribe(tr captionburn.Transcriber, language string) ([]subtitle.Word, *workqueue.Failure) {
	if tr == nil {
		return nil, invalid("inputs.subtitles is required: no transcriber is configured")
	}
	if b.meta.audioCodec == "" {
		return nil, exitFail("inputs.source has no audio to transcribe; give inputs.subtitles", nil)
	}
	if e := b.ffmpeg([]string{"-i", localSource, "-map", "0:a:0", "-vn", "-ac", "1", "-ar", "16000", "-c:a", "pcm_s16le", "-f", "wav", localAudio}, nil); e != nil {
		return nil, e
	}
	tctx, cancel := context.WithDeadline(b.ctx, b.deadline)
	defer cancel()
	start := time.Now()
	words, err := tr.Transcribe(tctx, filepath.Join(b.work, localAudio), language)
	b.compute += time.Since(start)
	switch {
	case tctx.Err() != nil && b.ctx.Err() == nil:
		return nil, timeoutFail(fmt.Sprintf("the job ran past its time limit of %d seconds", int(b.a.Timeout/time.Second)), nil)
	case err != nil:
		// The transcriber's error may name its server; the client learns what failed only.
		if b.f.Log != nil {
			b.f.Log.Warn("runner: transcription failed", "job", b.a.Lease.JobID, "err", err)
		}
		return nil, exitFail("transcription failed: the speech recognizer could not transcribe the audio", nil)
	case len(words) == 0:
		return nil, exitFail("transcription found no speech in inputs.source", nil)
	}
	b.hooks.Progress(0.3)
	return words, nil
}

// mp4Audio are the audio codecs copied into the MP4 output as they are; others become AAC.
var mp4Audio = []string{"aac", "mp3", "alac", "ac3", "eac3", "opus", "flac"}

// burn writes the script and renders it onto the video: libx264, audio copied, one MP4.
func (b *burner) burn(script []byte) workqueue.Result {
	if err := os.WriteFile(filepath.Join(b.work, localScript), script, 0o644); err != nil {
		return b.fail(exitFail("writing the caption script failed", nil))
	}
	args := []string{"-i", localSource, "-map", "0:v:0", "-map", "0:a:0?", "-vf", "ass=" + localScript,
		"-c:v", "libx264", "-preset", "veryfast", "-crf", "20", "-pix_fmt", "yuv420p"}
	if b.meta.audioCodec == "" || slices.Contains(mp4Audio, b.meta.audioCodec) {
		args = append(args, "-c:a", "copy")
	} else {
		args = append(args, "-c:a", "aac", "-b:a", "160k")
	}
	args = append(args, "-movflags", "+faststart", "-f", "mp4", CaptionOutput)
	pw := &progressWriter{report: func(outUs int64) {
		if d := b.meta.durationMs * 1000; d > 0 {
			b.hooks.Progress(min(0.3+0.69*float64(outUs)/float64(d), 0.99))
		}
	}}
	if e := b.ffmpeg(args, pw); e != nil {
		return b.fail(e)
	}
	files, inline, err := b.f.collect(b.ctx, b.a, b.work, func(n string) bool { return b.inputs[n] }, nil)
	if err != nil {
		return b.fail(b.f.internal(b.a.Lease.JobID, "storing the output failed", err))
	}
	if len(files) != 1 || files[0].Path != CaptionOutput {
		return b.fail(exitFail(fmt.Sprintf("expected one output %s, found %d files", CaptionOutput, len(files)), nil))
	}
	return workqueue.Result{Files: files, Inline: inline, ComputeMs: b.compute.Milliseconds()}
}

// ffmpeg runs FFmpeg in the sandbox with the time left.
func (b *burner) ffmpeg(args []string, stdout io.Writer) *workqueue.Failure {
	full := append([]string{"-hide_banner", "-nostdin", "-nostats", "-y"}, args...)
	if stdout != nil {
		full = append([]string{"-progress", "pipe:1"}, full...)
	}
	run, err := b.f.Sandbox.Run(b.ctx, sandbox.Spec{Dir: b.work, Program: sandbox.FFmpeg, Args: full, Timeout: b.left(),
		Limits: b.f.limits(b.a), Stdout: stdout})
	b.compute += run.Wall
	switch {
	case run.LimitExceeded != nil:
		return limitFail(run)
	case run.TimedOut:
		return timeoutFail(fmt.Sprintf("the job ran past its time limit of %d seconds", int(b.a.Timeout/time.Second)), run.StderrTail)
	case errors.Is(err, context.Canceled) || b.ctx.Err() != nil:
		return cancelled()
	case err != nil:
		return b.f.internal(b.a.Lease.JobID, "the sandbox could not run FFmpeg", err)
	case run.ExitCode != 0 && diskFull(b.work):
		return b.f.internal(b.a.Lease.JobID, "its disk is full", fmt.Errorf("ffmpeg exited with status %d with %s full", run.ExitCode, b.work))
	case run.ExitCode != 0:
		return exitFail(fmt.Sprintf("ffmpeg exited with status %d", run.ExitCode), run.StderrTail)
	}
	return nil
}
