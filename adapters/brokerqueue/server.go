package brokerqueue

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/mediajobs/mediajobs/core/problem"
	"github.com/mediajobs/mediajobs/core/workqueue"
)

// Server is the control plane's side of the broker transport: it consumes the workers' calls
// as a member of the control plane's consumer groups, answers each through queue (the
// control plane's service.Runs), and publishes the answer to the calling worker.
type Server struct {
	b    Broker
	auth Authenticator
	log  *slog.Logger
	// inFlight bounds the calls handled at once; long-poll claims hold a slot while they wait.
	inFlight chan struct{}
	ready    chan struct{}

	mu      sync.Mutex
	running bool
	stop    context.CancelFunc
	done    chan struct{}
	closed  bool
}

// maxInFlight is how many calls a Server handles at once; past it, a call is answered
// SERVICE_UNAVAILABLE at once and its worker retries.
const maxInFlight = 4096

// replyMargin is the time a reply is given to reach its worker before the call's deadline: a
// claim's wait ends that much before it.
const replyMargin = time.Second

// Authenticator tells whose a call's worker credential is, and answers with the work queue as
// that worker may use it (service.Runs.As of its identity); a credential it does not accept is
// an error (UNAUTHORIZED). It runs once per call.
type Authenticator func(ctx context.Context, secret string) (workqueue.Queue, error)

// SharedToken is the Authenticator of one shared token: a call carrying it gets queue, any
// other is refused. For a set-up with a single credential, and for tests.
func SharedToken(queue workqueue.Queue, token string) Authenticator {
	return func(_ context.Context, secret string) (workqueue.Queue, error) {
		if token == "" || subtle.ConstantTimeCompare([]byte(secret), []byte(token)) != 1 {
			return nil, problem.Reject(problem.CodeUnauthorized, "a valid worker credential is required")
		}
		return queue, nil
	}
}

// NewServer returns a Server over b that answers each call through the queue auth gives for
// the call's credential. The Server owns b.
func NewServer(b Broker, auth Authenticator, log *slog.Logger) (*Server, error) {
	switch {
	case b == nil:
		return nil, errors.New("brokerqueue: NewServer needs a broker")
	case auth == nil:
		return nil, errors.New("brokerqueue: NewServer needs an authenticator of the workers' credentials")
	}
	if log == nil {
		log = slog.Default()
	}
	return &Server{b: b, auth: auth, log: log, inFlight: make(chan struct{}, maxInFlight),
		ready: make(chan struct{})}, nil
}

// Ready is closed once Run has subscribed to every calls topic.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Run consumes calls until ctx ends or Close is called; then it stops taking calls, ends the
// claims waiting for work (their workers get an empty answer at once), waits for every call in
// hand to be answered, and returns. It returns an error when it could not subscribe.
func (s *Server) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.running || s.closed {
		s.mu.Unlock()
		return errors.New("brokerqueue: the Server is already running, or closed")
	}
	s.running = true
	ctx, cancel := context.WithCancel(ctx)
	s.stop, s.done = cancel, make(chan struct{})
	s.mu.Unlock()
	defer close(s.done)
	defer cancel()

	// Calls in hand outlive ctx long enough to be answered; claims end with it.
	answer := context.WithoutCancel(ctx)
	var readers, handlers sync.WaitGroup
	for _, topic := range callTopics() {
		msgs, err := s.b.consume(ctx, topic)
		if err != nil {
			cancel()
			readers.Wait()
			handlers.Wait()
			return fmt.Errorf("brokerqueue: subscribe to %s: %w", topic, err)
		}
		readers.Go(func() {
			for m := range msgs {
				// Acknowledged at once: the answer is a message of its own, and a long poll must
				// not hold the consumer. A replica that dies now loses the call; its worker
				// times out and calls again.
				m.Ack()
				s.take(ctx, answer, topic, m, &handlers)
			}
		})
	}
	close(s.ready)
	if p, ok := s.b.(interface {
		prune(context.Context) error
		pruneEvery() time.Duration
	}); ok {
		readers.Go(func() { s.prune(ctx, p.prune, p.pruneEvery()) })
	}
	<-ctx.Done()
	readers.Wait()
	handlers.Wait()
	return nil
}

// Close stops Run, waits for it to return, and closes the broker.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	stop, done := s.stop, s.done
	s.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
	return s.b.close()
}

// take reads one call and hands it to a goroutine of its own.
func (s *Server) take(ctx, answer context.Context, topic string, m *message.Message, handlers *sync.WaitGroup) {
	c, err := readCall(m)
	switch {
	case errors.Is(err, errNoReplyAddress):
		s.log.Warn("brokerqueue: dropped a call with no valid worker to answer", "topic", topic, "worker", c.worker, "op", c.op)
		return
	case err != nil:
		s.reply(c, nil, problem.Reject(problem.CodeValidation, "%s", err.Error()))
		return
	}
	if late := time.Since(c.deadline); late > 0 {
		// Its worker gave up: an answer now would hand out jobs nobody runs. A worker whose
		// clock runs behind the control plane's shows here as calls that are always late.
		s.log.Info("brokerqueue: dropped a call whose deadline passed (if this repeats, check the worker's clock)",
			"worker", c.worker, "op", c.op, "late", late.Round(time.Millisecond))
		return
	}
	select {
	case s.inFlight <- struct{}{}:
	default:
		s.reply(c, nil, problem.Reject(problem.CodeUnavailable, "the control plane has %d calls in hand; call again", maxInFlight))
		return
	}
	handlers.Go(func() {
		defer func() { <-s.inFlight }()
		base := answer
		if c.op == opClaim {
			base = ctx
		}
		hctx, cancel := context.WithDeadline(base, c.deadline)
		defer cancel()
		queue, err := s.auth(hctx, c.token)
		if err != nil {
			if problem.CodeOf(err) == problem.CodeUnauthorized {
				s.log.Warn("brokerqueue: runner call refused", "worker", c.worker, "op", c.op, "topic", topic, "reason", err.Error())
				err = problem.Reject(problem.CodeUnauthorized, "a valid worker credential is required: a token of `mediajobs workers create`, or the MEDIAJOBS_WORKER_TOKEN of serve")
			}
			s.reply(c, nil, err)
			return
		}
		data, err := s.handle(hctx, queue, topic, c)
		s.reply(c, data, err)
	})
}

// handle runs one call against the queue.
func (s *Server) handle(ctx context.Context, queue workqueue.Queue, topic string, c call) (any, error) {
	switch c.op {
	case opClaim:
		var body claimBody
		if err := decodeStrict(c.payload, &body); err != nil {
			return nil, err
		}
		if topic != claimsTopic(body.Class) {
			return nil, problem.Reject(problem.CodeValidation, "a claim of class %q came on %s", body.Class, topic)
		}
		if body.Max < 1 || body.Max > maxClaim {
			return nil, problem.Reject(problem.CodeValidation, "max %d is not between 1 and %d", body.Max, maxClaim)
		}
		wait := min(time.Duration(max(body.WaitMs, 0))*time.Millisecond, MaxClaimWait, time.Until(c.deadline)-replyMargin)
		work, err := queue.Claim(ctx, workqueue.ClaimParams{Class: body.Class, Max: body.Max, Worker: body.Worker, Version: body.Version, Wait: max(wait, 0), Slots: min(max(body.Slots, 0), maxClaim)})
		if work == nil {
			work = []workqueue.Assignment{}
		}
		return work, err
	case opHeartbeat, opReport:
		if topic != topicLeases {
			return nil, problem.Reject(problem.CodeValidation, "a %s came on %s", c.op, topic)
		}
	}
	if c.op == opHeartbeat {
		var b workqueue.Beat
		if err := decodeStrict(c.payload, &b); err != nil {
			return nil, err
		}
		return queue.Heartbeat(ctx, b)
	}
	var r reportBody
	if err := decodeStrict(c.payload, &r); err != nil {
		return nil, err
	}
	return struct{}{}, queue.Report(ctx, r.Lease, r.Result)
}

// reply publishes the answer to call c: data, or err as {code, message}. A refused lease says
// only that; its cause is in the control plane's log. An internal error is logged here and
// reaches the worker as a generic message.
func (s *Server) reply(c call, data any, err error) {
	var e *replyError
	switch p, ok := problem.As(err); {
	case err == nil:
	case errors.Is(err, workqueue.ErrLeaseRefused):
		e = &replyError{Code: problem.CodeConflict, Message: "lease refused: the job is no longer held by this lease"}
	case ok && p.Code != problem.CodeInternal:
		e = &replyError{Code: p.Code, Message: p.Message}
	default:
		s.log.Error("brokerqueue: a runner call failed", "worker", c.worker, "op", c.op, "err", err)
		e = &replyError{Code: problem.CodeInternal, Message: "the control plane failed to answer; call again"}
	}
	m, merr := newReply(c.id, c.worker, data, e)
	if merr == nil {
		merr = s.b.publish(topicRepliesPrefix+c.worker, m)
	}
	if merr != nil {
		s.log.Warn("brokerqueue: could not publish a reply; the worker will call again", "worker", c.worker, "op", c.op, "err", merr)
	}
}

// prune runs the broker's pruning now and every interval until ctx ends.
func (s *Server) prune(ctx context.Context, prune func(context.Context) error, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := prune(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("brokerqueue: pruning old calls and replies failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
