package runner

import (
	"context"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype/captionburn"
	"github.com/mediajobs/mediajobs/core/jobtype/captionsanimate"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/service"
	"github.com/mediajobs/mediajobs/core/subtitle"
)

// Animate executes captions.animate jobs: words from the transcript input (a JSON word list, SRT
// or VTT) or from the transcriber, rendered as karaoke ASS and burned like caption.burn.
type Animate struct {
	FFmpeg      *FFmpeg
	Transcriber captionburn.Transcriber
	Limits      subtitle.Limits
}

// Execute runs one captions.animate job.
func (an *Animate) Execute(ctx context.Context, a service.Assignment, work string, progress func(float64)) service.RunResult {
	req, err := captionsanimate.Parse(a.Inputs, a.Params)
	if err == nil {
		_, err = captionburn.CheckURLs(req.Inputs(), a.AssetURLPrefix)
	}
	if err != nil {
		return service.RunResult{Error: job.NewError(problem.CodeValidation, err.Error(), nil)}
	}
	b := an.FFmpeg.burner(ctx, a, work, progress)
	video, e := b.source(req.Source)
	if e != nil {
		return b.fail(e)
	}
	var words []subtitle.Word
	if req.Transcript != "" {
		data, e := b.readInput(captionburn.InputTranscript, req.Transcript, "transcript.in", an.Limits)
		if e != nil {
			return b.fail(e)
		}
		if words, err = subtitle.ParseTranscript(data, an.Limits); err != nil {
			return b.fail(job.NewError(problem.CodeValidation, "inputs.transcript is not a usable word list, SRT or VTT: "+err.Error(), nil))
		}
	} else if words, e = b.transcribe(an.Transcriber, req.Params.Language); e != nil {
		return b.fail(e)
	}
	return b.burn(subtitle.WriteKaraoke(words, req.Karaoke, video))
}
