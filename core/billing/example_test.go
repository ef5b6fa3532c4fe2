package billing_test

import (
	"fmt"

	"github.com/mediajobs/mediajobs/core/billing"
	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
)

// One rule charges every terminal job: compute used, rounded up to whole seconds with a minimum
// of one once the FFmpeg step began, at the class's price; timeouts and service faults are free.
func ExamplePricing_BillFor() {
	p := billing.Default()
	outcomes := []billing.Outcome{
		{Status: job.StatusComplete, Started: true, ComputeMs: 1500, Class: job.ClassCPU},
		{Status: job.StatusComplete, Started: true, ComputeMs: 200, Class: job.ClassCPU},
		{Status: job.StatusComplete, Started: true, ComputeMs: 3000, Class: job.ClassGPU},
		{Status: job.StatusFailed, Code: problem.CodeRunnerError, Started: true, ComputeMs: 800, Class: job.ClassCPU},
		{Status: job.StatusFailed, Code: problem.CodeRunnerTimeout, Started: true, ComputeMs: 300_000, Class: job.ClassCPU},
		{Status: job.StatusFailed, Code: problem.CodeInputFetchFailed, Class: job.ClassCPU},
		{Status: job.StatusCancelled, Class: job.ClassCPU},
	}
	for _, o := range outcomes {
		b := p.BillFor(o)
		fmt.Printf("%-9s %-18s %6dms %s: %s\n", o.Status, o.Code, o.ComputeMs, o.Class, billing.Format(b.Amount))
	}
	// Output:
	// complete                       1500ms cpu: 2 credits
	// complete                        200ms cpu: 1 credit
	// complete                       3000ms gpu: 30 credits
	// failed    RUNNER_ERROR          800ms cpu: 1 credit
	// failed    RUNNER_TIMEOUT     300000ms cpu: 0 credits
	// failed    INPUT_FETCH_FAILED      0ms cpu: 0 credits
	// cancelled                         0ms cpu: 0 credits
}
