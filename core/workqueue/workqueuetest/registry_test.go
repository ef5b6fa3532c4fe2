package workqueuetest_test

import (
	"testing"

	"github.com/mediajobs/mediajobs/core/workqueue"
	"github.com/mediajobs/mediajobs/core/workqueue/workqueuetest"
)

func TestMemoryRegistry(t *testing.T) {
	t.Parallel()
	workqueuetest.ExerciseRegistry(t, func(*testing.T) workqueue.Registry { return workqueuetest.NewMemoryRegistry() })
}

func TestMemoryCredentials(t *testing.T) {
	t.Parallel()
	workqueuetest.ExerciseCredentials(t, func(*testing.T) workqueue.Credentials { return workqueuetest.NewMemoryCredentials() })
}
