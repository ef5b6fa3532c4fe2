package brokerqueue_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/mediajobs/mediajobs/adapters/brokerqueue"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// oneJob stands in for the control plane's service.Runs: it holds one waiting job.
type oneJob struct{ workqueue.Queue }

func (oneJob) Claim(_ context.Context, p workqueue.ClaimParams) ([]workqueue.Assignment, error) {
	return []workqueue.Assignment{{Lease: workqueue.Lease{JobID: "job_1", Attempt: 1, Token: "secret"}, Type: "ffmpeg", Class: p.Class}}, nil
}

// A control plane serves its work queue on a broker; a worker claims through it. Here the
// broker is in process; in a deployment the Server runs in `mediajobs serve` and the Client in
// `mediajobs worker`, each from brokerqueue.OpenServer and brokerqueue.OpenClient with the
// same nats:// or postgres:// URL.
func Example() {
	ctx, stop := context.WithCancel(context.Background())
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	b := brokerqueue.NewGoChannel()

	server, err := brokerqueue.NewServer(b, brokerqueue.SharedToken(oneJob{}, "worker-token"), log)
	if err != nil {
		panic(err)
	}
	done := make(chan error)
	go func() { done <- server.Run(ctx) }()
	<-server.Ready()

	worker, err := brokerqueue.NewClient(b, brokerqueue.ClientConfig{Token: "worker-token", Worker: "gpu-box-1", Log: log})
	if err != nil {
		panic(err)
	}
	work, err := worker.Claim(ctx, workqueue.ClaimParams{Class: job.ClassGPU, Max: 1})
	fmt.Println(len(work), work[0].Lease.JobID, work[0].Class, err)

	_ = worker.Close()
	stop()
	<-done
	_ = server.Close()
	// Output: 1 job_1 gpu <nil>
}
