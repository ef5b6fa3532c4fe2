package validator_test

import (
	"encoding/json"
	"fmt"

	"github.com/mediajobs/mediajobs/validator"
)

func ExampleValidate() {
	r := validator.Validate(`ffmpeg -i https://cdn.example.com/in.mov -vf "scale=1280:-2" -c:v libx264 -crf 23 out.mp4`, validator.Options{})
	data, _ := json.Marshal(r)
	fmt.Println(string(data))
	fmt.Println(r.Plan.Downloads[0].Name, r.Plan.Args, r.Plan.Compute, r.Plan.Pattern)

	r = validator.Validate(`ffmpeg -i https://cdn.example.com/in.mp4 -vf "'mo'vie=/etc/passwd" out.mp4`, validator.Options{})
	data, _ = json.Marshal(r)
	fmt.Println(string(data))
	fmt.Println(r.Err.Layer)
	// Output:
	// {"valid":true,"args":["-i","https://cdn.example.com/in.mov","-vf","scale=1280:-2","-c:v","libx264","-crf","23","out.mp4"],"inferredOutputFormat":"mp4"}
	// input_0.mov [-i input_0.mov -vf scale=1280:-2 -c:v libx264 -crf 23 out.mp4] cpu single
	// {"valid":false,"error":"filter \"movie\" is not allowed"}
	// filters
}

func ExampleValidate_stagedInputs() {
	opts := validator.Options{
		Inputs: map[string]validator.Input{
			"subs.srt": {Inline: true, ContentSize: 812},
			"talk.mp4": {URL: "https://cdn.example.com/talk.mp4"},
		},
		Compute: "cpu",
	}
	r := validator.Validate("ffmpeg -i talk.mp4 -vf subtitles=subs.srt -c:v h264_nvenc captioned.mp4", opts)
	fmt.Println(r.Valid, r.Error)

	opts.Compute = "auto"
	r = validator.Validate("ffmpeg -i talk.mp4 -vf subtitles=subs.srt -c:v h264_nvenc captioned.mp4", opts)
	fmt.Println(r.Valid, r.Plan.Compute, r.Plan.Downloads)
	// Output:
	// false encoder h264_nvenc needs a GPU but compute is cpu
	// true gpu [{https://cdn.example.com/talk.mp4 talk.mp4}]
}
