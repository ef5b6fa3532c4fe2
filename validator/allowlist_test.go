package validator_test

import (
	"testing"

	"github.com/mediajobs/mediajobs/validator"
)

func TestValueOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		flag string
		want validator.FlagValue
	}{
		{"-vf", validator.ValueGraph},
		{"-filter:a", validator.ValueGraph},
		{"-filter_complex", validator.ValueGraph},
		{"-i", validator.ValueFile},
		{"-passlogfile", validator.ValueFile},
		{"-hls_segment_filename", validator.ValueFile},
		{"-master_pl_name", validator.ValueFile},
		{"-attach", validator.ValueFile},
		{"-crf", validator.ValueOther},
		{"-c:v", validator.ValueOther},
		{"-f", validator.ValueOther},
		{"-y", validator.ValueNone},
		{"-filter_script", validator.ValueNone},
		{"-/vf", validator.ValueNone},
		{"crf", validator.ValueNone},
		{"-", validator.ValueNone},
	} {
		if got := validator.ValueOf(tc.flag); got != tc.want {
			t.Errorf("ValueOf(%q) = %d, want %d", tc.flag, got, tc.want)
		}
	}
}
