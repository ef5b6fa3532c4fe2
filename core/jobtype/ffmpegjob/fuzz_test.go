package ffmpegjob_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/jobtype"
	"github.com/mediajobs/mediajobs/core/jobtype/ffmpegjob"
	"github.com/mediajobs/mediajobs/core/problem"
)

// FuzzPrepare feeds untrusted request bodies through the whole submit-side parse: decoding,
// inputs and params, and the validator. It must never panic, and every rejection must be a
// VALIDATION_ERROR.
func FuzzPrepare(f *testing.F) {
	f.Add(`{"type":"ffmpeg","params":{"command":"ffmpeg -f lavfi -i testsrc=d=1 out.mp4"}}`)
	f.Add(`{"type":"ffmpeg","inputs":{"a.srt":{"content":"1"}},"params":{"command":"ffmpeg -f lavfi -i testsrc -vf subtitles=a.srt o.mp4","timeout":5}}`)
	f.Add(`{"type":"ffmpeg","inputs":{"in.mp4":"https://example.com/a.mp4"},"params":{"command":"ffmpeg -i in.mp4 o.webm","compute":"cpu"}}`)
	f.Add(`{"type":"ffmpeg","params":{"command":"ffmpeg -i /etc/passwd o.mp4","inputs":{"x":{"url":"file:///etc/passwd"}}}}`)
	f.Add(`{"type":"ffmpeg","params":{"timeout":1e99}}`)
	f.Add(`{"type":"ffmpeg","params":{"steps":["ffmpeg -f lavfi -i testsrc=d=1 a.mp4","ffmpeg -i a.mp4 -r 1 f_%03d.png"],"keep":["a.mp4"]}}`)
	f.Add(`{"type":"ffmpeg","params":{"steps":["ffmpeg -i https://a.example/x.mp4 a.mp4","ffmpeg -i https://b.example/x.mp4 b.mp4"]}}`)
	f.Fuzz(func(t *testing.T, body string) {
		req, err := jobtype.DecodeRequest([]byte(body))
		if err != nil {
			if problem.CodeOf(err) != problem.CodeValidation {
				t.Fatalf("decode rejection with code %s: %v", problem.CodeOf(err), err)
			}
			return
		}
		spec, err := ffmpegjob.Type{}.Prepare(req, jobtype.Env{AssetURLPrefix: "https://api.test/assets/"})
		if err != nil {
			if problem.CodeOf(err) != problem.CodeValidation {
				t.Fatalf("rejection with code %s: %v", problem.CodeOf(err), err)
			}
			return
		}
		if spec.Class != job.ClassCPU && spec.Class != job.ClassGPU {
			t.Fatalf("accepted with class %q", spec.Class)
		}
		// An accepted request stages only path-safe names.
		r, _ := ffmpegjob.Parse(req.Inputs, req.Params)
		for name := range r.Inputs {
			if name == "" || strings.ContainsAny(name, "/\\\x00") || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "-") {
				raw, _ := json.Marshal(name)
				t.Fatalf("accepted input name %s", raw)
			}
		}
	})
}
