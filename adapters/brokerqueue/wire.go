package brokerqueue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// The calls and their replies are Watermill messages. A call's UUID is its correlation ID; its
// metadata names the operation, the calling worker (the address of the reply), the worker
// token and the deadline; its payload is the operation's JSON body. A reply carries the call's
// correlation ID in its metadata and {data} or {error:{code,message}} as its payload.
const (
	metaOp          = "op"
	metaWorker      = "worker"
	metaToken       = "token"
	metaDeadline    = "deadline"
	metaCorrelation = "correlation_id"
)

// The operations of a call.
const (
	opClaim     = "claim"
	opHeartbeat = "heartbeat"
	opReport    = "report"
)

// Topics are logical names; each broker maps them to its own subjects or tables.
const (
	// topicLeases carries heartbeats and reports, of every class.
	topicLeases = "leases"
	// topicRepliesPrefix + worker ID is the topic of one worker's replies.
	topicRepliesPrefix = "replies."
)

// classes are the compute classes the control plane serves, each with a claims topic and a
// consumer group of its own.
var classes = []job.Class{job.ClassCPU, job.ClassGPU}

// claimsTopic is the topic of the claims of class c.
func claimsTopic(c job.Class) string { return "claims." + string(c) }

// group is the control plane's consumer group of a calls topic: every replica joins it, so each
// call reaches one replica.
func group(topic string) string {
	switch topic {
	case topicLeases:
		return "control-plane-leases"
	}
	return "control-plane-" + topic[len("claims."):]
}

// callTopics are the topics the control plane consumes.
func callTopics() []string {
	topics := []string{topicLeases}
	for _, c := range classes {
		topics = append(topics, claimsTopic(c))
	}
	return topics
}

// MaxClaimWait bounds a claim's long poll, as on the HTTP transport.
const MaxClaimWait = 30 * time.Second

// maxClaim bounds how many jobs one claim takes, as on the HTTP transport.
const maxClaim = 64

// workerIDPattern is what a worker ID may be: a NATS subject token and a short SQL value.
var workerIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,100}$`)

// claimBody is the payload of a claim.
type claimBody struct {
	Class  job.Class `json:"class"`
	Max    int       `json:"max"`
	Worker string    `json:"worker,omitempty"`
	// Version is the worker's build, for `mediajobs workers list`.
	Version string `json:"version,omitempty"`
	WaitMs  int64  `json:"waitMs,omitempty"`
	// Slots is how many jobs the worker runs at once.
	Slots int `json:"slots,omitempty"`
}

// reportBody is the payload of a report.
type reportBody struct {
	Lease  workqueue.Lease  `json:"lease"`
	Result workqueue.Result `json:"result"`
}

// replyBody is the payload of a reply.
type replyBody struct {
	Data  json.RawMessage `json:"data,omitempty"`
	Error *replyError     `json:"error,omitempty"`
}

type replyError struct {
	Code    problem.Code `json:"code"`
	Message string       `json:"message"`
}

// call is a call as the control plane reads it.
type call struct {
	id       string
	op       string
	worker   string
	token    string
	deadline time.Time
	payload  []byte
}

// newCall builds the message of a call.
func newCall(op, worker, token string, deadline time.Time, body any) (*message.Message, error) {
	payload, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("brokerqueue: encoding the %s call: %w", op, err)
	}
	m := message.NewMessage(watermill.NewUUID(), payload)
	m.Metadata.Set(metaOp, op)
	m.Metadata.Set(metaWorker, worker)
	m.Metadata.Set(metaToken, token)
	m.Metadata.Set(metaDeadline, deadline.UTC().Format(time.RFC3339Nano))
	return m, nil
}

// errNoReplyAddress is a call no reply can answer: it names no valid worker.
var errNoReplyAddress = errors.New("the call names no valid worker to reply to")

// readCall reads a call's envelope. Its error is the message of a VALIDATION_ERROR reply, or
// errNoReplyAddress when no reply can be sent.
func readCall(m *message.Message) (call, error) {
	c := call{id: m.UUID, op: m.Metadata.Get(metaOp), worker: m.Metadata.Get(metaWorker), token: m.Metadata.Get(metaToken),
		payload: m.Payload}
	if !workerIDPattern.MatchString(c.worker) {
		return c, errNoReplyAddress
	}
	if c.id == "" || len(c.id) > 64 {
		return c, errNoReplyAddress
	}
	d, err := time.Parse(time.RFC3339Nano, m.Metadata.Get(metaDeadline))
	if err != nil {
		return c, fmt.Errorf("the call's %s metadata %q is not an RFC 3339 time", metaDeadline, m.Metadata.Get(metaDeadline))
	}
	c.deadline = d
	switch c.op {
	case opClaim, opHeartbeat, opReport:
	default:
		return c, fmt.Errorf("the call's %s metadata %q is not claim, heartbeat or report", metaOp, c.op)
	}
	return c, nil
}

// decodeStrict reads a call's JSON payload into v, refusing unknown fields and trailing data,
// as the HTTP transport does.
func decodeStrict(payload []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return problem.Reject(problem.CodeValidation, "the call's body is not valid: %v", err)
	}
	if dec.More() {
		return problem.Reject(problem.CodeValidation, "the call's body has data after its JSON value")
	}
	return nil
}

// newReply builds the reply to call id for worker: data, or the error err.
func newReply(id, worker string, data any, e *replyError) (*message.Message, error) {
	body := replyBody{Error: e}
	if e == nil {
		b, err := json.Marshal(data)
		if err != nil {
			return nil, err
		}
		body.Data = b
	}
	payload, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	m := message.NewMessage(watermill.NewUUID(), payload)
	m.Metadata.Set(metaCorrelation, id)
	m.Metadata.Set(metaWorker, worker)
	return m, nil
}
