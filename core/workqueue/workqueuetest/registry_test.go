package workqueuetest_test

import (
	"testing"

	"github.com/mediajobs/mediajobs/core/workqueue"
	"github.com/mediajobs/mediajobs/core/workqueue/workqueuetest"
)

func TestMemoryRegistry(t *testing.T) {
	t.Parallel()
	workqueuetest.TestRegistry(t, workqueuetest.RegistryFeatures{}, func(*testing.T) workqueue.Registry { return workqueuetest.NewMemoryRegistry() })
}

func TestMemoryCredentials(t *testing.T) {
	t.Parallel()
	workqueuetest.TestCredentials(t, workqueuetest.CredentialsFeatures{}, func(*testing.T) workqueue.Credentials { return workqueuetest.NewMemoryCredentials() })
}
