package jobtest_test

import (
	"testing"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/job/jobtest"
)

func TestMemoryStore(t *testing.T) {
	t.Parallel()
	jobtest.TestStore(t, jobtest.Features{}, func(*testing.T) job.Store { return jobtest.NewMemory() })
}
