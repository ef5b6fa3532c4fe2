package job_test

import (
	"slices"
	"testing"
	"time"

	"github.com/mediajobs/mediajobs/core/job"
)

// TestIDsSortInTheOrderTheyWereMade: IDs made in one millisecond sort in the order they were
// made, as later milliseconds' do.
func TestIDsSortInTheOrderTheyWereMade(t *testing.T) {
	t.Parallel()
	newID, now := job.NewIDSource(), time.Now()
	var ids []string
	for i := range 1000 {
		ids = append(ids, newID("job", now.Add(time.Duration(i/100)*time.Millisecond)))
	}
	if !slices.IsSorted(ids) {
		t.Fatal("IDs made one after another do not sort in that order")
	}
	if len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Fatal("two IDs are the same")
	}
}
