package job_test

import (
	"testing"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
)

// FuzzDecodeCursor: a cursor comes from the query string; any string is either a cursor this
// service made or a VALIDATION_ERROR, never a panic.
func FuzzDecodeCursor(f *testing.F) {
	f.Add("")
	f.Add("MTcwMDAwMDAwMDAwMDAwMHxqb2JfYWJj")
	f.Add("!!!")
	f.Fuzz(func(t *testing.T, s string) {
		at, id, err := job.DecodeCursor(s)
		if err != nil {
			if problem.CodeOf(err) != problem.CodeValidation {
				t.Fatalf("rejection with code %s", problem.CodeOf(err))
			}
			return
		}
		j := &job.Job{ID: id, CreatedAt: at}
		if _, id2, err := job.DecodeCursor(job.EncodeCursor(j)); err != nil || id2 != id {
			t.Fatalf("re-encoded cursor does not round-trip: %v", err)
		}
	})
}
