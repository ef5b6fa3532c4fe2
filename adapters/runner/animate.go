package runner

import (
	"context"

	"github.com/mediajobs/mediajobs/core/jobtype/captionburn"
	"github.com/mediajobs/mediajobs/core/jobtype/captionsanimate"
	"github.com/mediajobs/mediajobs/core/subtitle"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// Animate executes captions.animate jobs: words from the transcript input (a JSON word list, SRT
// or VTT) or from the transcriber, rendered as karaoke ASS and burned like caption.burn.
type Animate struct {
	FFmpeg      *FFmpeg
	Transcriber captionburn.Transcriber
	Limits      subtitle.Limits
}

// Execute runs one captions.animate job.
func (an *Animate) Execute(ctx context.Context, a workqueue.Assignment, work string, h Hooks) workqueue.Result {
	req, err := captionsanimate.Parse(a.Inputs, a.Params)
	if err == nil {
		_, err = captionburn.CheckURLs(req.Inputs(), an.FFmpeg.env(a))
	}
	if err != nil {
		return workqueue.Result{Failure: invalid(err.Error())}
	}
	b := an.FFmpeg.burner(ctx, a, work, h)
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
			return b.fail(invalid("inputs.transcript is not a usable word list, SRT or VTT: " + err.Error()))
		}
	} else if words, e = b.transcribe(an.Transcriber, req.Params.Language); e != nil {
		return b.fail(e)
	}
	return b.burn(subtitle.WriteKaraoke(words, req.Karaoke, video))
}
