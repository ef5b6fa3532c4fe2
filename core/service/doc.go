// Package service holds the application's use cases, each over only the ports it needs and
// checked at construction: Auth (who calls), Submit (the submit gate, retry), Jobs (read, list,
// downloads), Cancel, Runs (the control plane's side of the work queue: claim, heartbeat,
// report, the lease sweep), Uploads, Webhooks and FanOut, Batches, Credits, and the outbox
// Relay. It owns no I/O: REST, MCP and the runners are thin drivers of these methods.
//
// Each rule of the spec lives in one place: the transition table in core/job, the charge of a
// terminal job in billing.Pricing.BillFor (applied here by settleBill only), the error code of a
// run's outcome in workqueue.Failure.Error, the request budget in ratelimit.Gate.
package service
