package runner

import (
	"context"
	"encoding/json"

	"github.com/mediajobs/mediajobs/core/service"
)

// BusReporter sends reports on the bus topic the control plane listens to.
type BusReporter struct {
	Bus service.Publisher
}

// Report publishes r on service.TopicRunner.
func (b BusReporter) Report(ctx context.Context, r service.RunnerReport) error {
	payload, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return b.Bus.Publish(ctx, service.TopicRunner, payload)
}
