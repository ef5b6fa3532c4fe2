// Package brokerqueue is the work queue (workqueue.Queue) carried over a message broker with
// Watermill, on NATS JetStream or PostgreSQL: the transport of `mediajobs worker --control
// nats://…|postgres://…`, for workers that share a broker with the control plane rather than
// reach its HTTP API. Claims, heartbeats and reports are calls answered through the broker
// (request/reply); the bytes of assets and outputs go over HTTP to the URLs each assignment
// carries (httpqueue.Files), since they do not belong on a broker.
//
// # Calls and replies
//
// A call is a message whose UUID is its correlation ID, with metadata naming the operation
// (claim, heartbeat, report), the calling worker's ID, the worker token and a deadline (wait +
// ClientConfig.Timeout from now), and the operation's JSON as its payload. The Server checks the
// token (a wrong or missing one is logged and answered UNAUTHORIZED), drops a call whose
// deadline passed (a claim answered after its worker gave up would hand out jobs nobody runs),
// acknowledges the call at once, handles it in a goroutine of its own against the control
// plane's service.Runs, and publishes the answer, {data} or {error:{code,message}}, to the
// calling worker. A claim's long poll is Runs.Claim's wait (up to MaxClaimWait, ending a second
// before the deadline), so it never holds the broker's consumer. The Client returns ErrNoAnswer
// when no answer comes by the deadline, workqueue.ErrLeaseRefused for CONFLICT, and
// ErrUnauthorized for UNAUTHORIZED; the runner agent retries, and Report is idempotent.
//
// The calls carry the worker token in their metadata; anyone who can read the broker can read
// it, so the broker is part of the deployment's trusted network, as the database is. The
// deadline is an absolute time: workers' clocks must agree with the control plane's within a
// few seconds (NTP); a worker whose clock is far behind sees every call time out, and the
// control plane logs each as dropped, late.
//
// # Topology
//
//   - claims.cpu and claims.gpu carry the claims of each compute class, consumed by the
//     consumer groups control-plane-cpu and control-plane-gpu; leases carries heartbeats and
//     reports, consumed by control-plane-leases. Every control-plane replica joins every group,
//     and a group hands each message to one member, so each call is handled by exactly one
//     replica, however many run. A group per class keeps one class's claims from queueing
//     behind another's, and lets the broker show each class's backlog.
//   - replies.<worker ID> carries the answers to one worker; only that worker reads it. A
//     worker ID is its name and a random suffix, so two workers never share replies.
//
// Each job reaches exactly one worker because of three things together: the claim that hands
// it out is a conditional update in the job store (waiting → dispatched, one winner); each
// claim call is handled once (the consumer group, and an acknowledgement before the work, so
// a call is never redelivered to a second replica while the first handles it); and its answer
// goes to the caller only. A claim answered after its worker gave up (lost in transit, or the
// worker stopped waiting) hands its jobs back (KindHandBack), which puts them back in the
// queue at once; and were that answer lost too, the lease lapses and the sweep requeues them.
//
// # NATS JetStream
//
// One stream (NATSConfig.Stream, default MEDIAJOBS_RUNNER, not the bus's), on disk, holds the
// subjects "<stream lower-cased>.<topic>", with interest retention: a message lives until the
// consumers it matches acknowledged it, and a reply to a worker with no consumer is dropped
// at once. The stream and the three durable pull consumers are created (or updated to this
// configuration) explicitly by every Client and Server at Dial, and bound to by Watermill's
// JetStream subscriber; no subscriber deletes them when it stops, so one replica stopping
// leaves the groups to the others, and calls published while no control plane runs wait in
// them, to be answered when one starts (or dropped, if their deadline passed). Each worker
// reads its replies through an ephemeral consumer of its own, filtered on its subject, that
// delivers only new messages; the worker deletes it when it closes, and JetStream does after
// two minutes without the worker.
//
// A subscription whose consumer stops serving it is made again, consumer and all: one deleted
// under it, or one that answers no pull request for three heartbeats in a row (a server that
// restarted without its store, or lost the consumer's pull requests). A stream gone with the
// server's state is made again first. Calls sent meanwhile go unanswered, and their workers
// call again. A call taken off the old subscription and not yet handed on is not
// acknowledged: the consumer delivers it again after its AckWait (10 s), and that counts
// towards its MaxDeliver (3). Subscribing again backs off as every retry of the service does
// (core/retry: doubling from 100 ms to 5 s, jittered), and starts again from 100 ms only after
// a subscription that served for 5 s, so that a consumer the server keeps refusing is not made
// again ten times a second.
//
// # PostgreSQL
//
// Watermill's SQL Pub/Sub (watermill-sql v3, through pgx) with one table per topic in the
// URL's search_path: brokerqueue_claims_cpu, brokerqueue_claims_gpu, brokerqueue_leases and
// brokerqueue_replies, and their offset tables. The control plane's consumer groups read the
// calls tables (a group's offset row is locked while one member reads, so each call goes to
// one); every worker reads the one replies table as a consumer group of its own, whose select
// keeps only the rows addressed to it. Subscribers poll every PostgresConfig.PollInterval (50
// ms), so a call and its answer wait up to one interval each. Every control-plane replica
// deletes the calls and replies older than PostgresConfig.Retention (5 minutes), and the
// offsets of workers that have nothing left to read, so the tables do not grow. Watermill
// delivers a row only once every transaction older than the one that wrote it has ended (so
// that offsets never skip a row committed late): a transaction left open anywhere on the
// database server holds every call back until it ends.
//
// NATS answers within a millisecond or two; PostgreSQL within one or two poll intervals. The
// benchmark BenchmarkRoundTrip measures both.
package brokerqueue
