package control

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/internal/jsonw"
	"github.com/ccbridge/ccbridge/mapping/lane004"
)

// Target004 is the worker lane 004 drives. Do is called on the session's
// loop only (through Lane004Config.Submit) and calls done exactly once,
// on the loop; the events the request causes (turn/started, say) are
// published after done returned, so that the receipt comes first.
type Target004 interface {
	Do(req *lane004.Request, done func(Receipt004))
}

// Receipt004 is a request's outcome: a worker.response (OK, Response) or
// a worker.error (Code, Message, Details).
type Receipt004 struct {
	OK       bool
	Response string // raw JSON, when OK
	Code     string
	Message  string
	Details  string // raw JSON object, or ""
}

// Fail004 is an error receipt.
func Fail004(code, message string) Receipt004 {
	return Receipt004{Code: code, Message: message}
}

// Lane004Config is what a lane-004 receiver needs.
type Lane004Config struct {
	WorkerID string
	// Store keeps each request id's receipt (the whole line, its seq in
	// it), so that a retry gets it again and nothing runs twice.
	Store Store
	Audit *Audit // nil: no audit trail
	Now   func() time.Time
	// Target is the worker; nil when the dialect has none, and then every
	// request is refused worker_unavailable with Refusal.
	Target  Target004
	Refusal string
	// Log is the worker's event log: every receipt made is appended to it,
	// and those who follow the worker's stream read it there.
	Log *EventLog
	// Submit runs fn on the session's loop; false once the session ended.
	Submit func(fn func()) bool
	Logger *slog.Logger
}

// laneID004 names lane 004 in store keys and audit entries.
const laneID004 = "004"

// Lane004 serves lane 004 (seed 004: thread and turn requests, exactly
// one receipt each). Request may be called from any number of goroutines
// at once.
type Lane004 struct {
	cfg Lane004Config
	mu  sync.Mutex
	// flights are the requests being carried out in this process, which
	// a duplicate waits for.
	flights map[string]*flight
}

type flight struct {
	done chan struct{}
	line []byte
}

// NewLane004 returns a lane-004 receiver.
func NewLane004(cfg Lane004Config) *Lane004 {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Lane004{cfg: cfg, flights: make(map[string]*flight)}
}

// WorkerID is the worker's id, as receipts carry it.
func (l *Lane004) WorkerID() string { return l.cfg.WorkerID }

// Request carries out one request line and returns its receipt once it
// exists. fresh reports a receipt made now and published in the worker's
// event log (those who follow the stream get it there); otherwise it is
// a duplicate's cached receipt, or a refusal that is no event of the log
// (the line could not be read as a request, the worker has no lane 004,
// or the receipt store failed: a seq-less internal_error, nothing
// recorded), which the caller writes to its peer itself. decoded is the
// request, when the line could be read as one; it is nil for a line that
// answers nothing (a worker.* line echoed back), and then receipt is nil.
//
// A ccbridge/events/replay request is carried out here, not by the
// target: replay (nil where the peer follows no stream, as over HTTP,
// whose stream is asked for by its cursor) moves the peer's stream back
// to the cursor, before the receipt is published, so that the events
// come before it.
func (l *Lane004) Request(line []byte, replay func(after uint64)) (receipt []byte, fresh bool, decoded *lane004.Request) {
	req, prob := lane004.Decode(line)
	if prob != nil && prob.NoReply {
		l.cfg.Logger.Warn("control lane 004: a line that is a worker event, not a request, was ignored")
		return nil, false, nil
	}
	if prob != nil && !prob.HasID {
		l.audit("failure", "", lane004.CodeInvalidRequest, prob.Message)
		return lane004.AppendProblem(nil, l.cfg.WorkerID, prob, l.cfg.Now()), false, nil
	}
	if prob != nil {
		req = lane004.Request{RequestID: prob.RequestID, Method: prob.Method}
	}
	if l.cfg.Target == nil {
		p := &lane004.Problem{RequestID: req.RequestID, HasID: true, Method: req.Method, Code: lane004.CodeWorkerUnavailable, Message: l.cfg.Refusal}
		return lane004.AppendProblem(nil, l.cfg.WorkerID, p, l.cfg.Now()), false, &req
	}
	l.audit("request", req.RequestID, req.Method, "")

	key := Key{Lane: laneID004, AgentID: l.cfg.WorkerID, RequestID: req.RequestID}
	l.mu.Lock()
	if f, ok := l.flights[req.RequestID]; ok {
		l.mu.Unlock()
		<-f.done
		l.audit("duplicate", req.RequestID, req.Method, "in flight")
		return f.line, false, &req
	}
	// The flight first, then the store, outside the lock: a store on the
	// bus answers in round trips, which requests of other ids need not
	// wait for; a duplicate meanwhile waits for this one's answer.
	f := &flight{done: make(chan struct{})}
	l.flights[req.RequestID] = f
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.flights, req.RequestID)
		l.mu.Unlock()
		close(f.done)
	}()
	prev, isNew, err := l.cfg.Store.Begin(key, l.cfg.Now())
	switch {
	case errors.Is(err, ErrStoreFull):
		f.line = l.refuse(&req, lane004.CodeWorkerUnavailable, "too many requests in flight; retry later")
		return f.line, false, &req
	case errors.Is(err, ErrBusDown):
		// Nothing claimed, nothing run: a retry once the bus is back.
		f.line = l.refuse(&req, lane004.CodeWorkerUnavailable, "this worker has lost the bus (NATS), where its receipts are kept, and is reconnecting; retry later")
		return f.line, false, &req
	case err != nil:
		f.line = l.refuse(&req, lane004.CodeInternalError, "the receipt store failed: "+err.Error())
		return f.line, false, &req
	case !isNew && receiptLine(prev.Outcome.Detail):
		// Done before: the same receipt, nothing run twice.
		l.audit("duplicate", req.RequestID, req.Method, "cached receipt")
		f.line = []byte(prev.Outcome.Detail)
		return f.line, false, &req
	}
	var recorded bool
	switch {
	case !isNew && prev.InFlight:
		// Left in flight by this process: its receipt could not be
		// recorded (its caller was told so). Whether it took effect is
		// not known to the store, and this says so, once.
		f.line, recorded = l.publish(key, &req, Fail004(lane004.CodeInternalError,
			"the request's receipt could not be recorded when it was carried out; whether it took effect is not known"))
	case !isNew:
		// In flight when the last ccbridge on this --state-dir stopped:
		// whether it took effect is not known, and this says so, once.
		f.line, recorded = l.publish(key, &req, Fail004(lane004.CodeInternalError,
			"the request was in flight when ccbridge stopped; whether it took effect is not known"))
	case prob != nil:
		f.line, recorded = l.publish(key, &req, Fail004(prob.Code, prob.Message))
	case req.Method == lane004.MethodReplay:
		f.line, recorded = l.publish(key, &req, l.replay(&req, replay))
	default:
		f.line, recorded = l.execute(key, &req)
	}
	return f.line, recorded, &req
}

// replay moves the peer's stream back to the request's cursor; the
// receipt says where the stream resumes.
func (l *Lane004) replay(req *lane004.Request, replay func(uint64)) Receipt004 {
	if replay == nil {
		return Fail004(lane004.CodeInvalidRequest, "this connection follows no stream to replay: ask the stream for the events after your cursor (GET .../stream?after=N)")
	}
	latest, oldest := l.cfg.Log.Latest(), l.cfg.Log.Oldest()
	o := jsonw.NewObj(nil).Int("after", int64(req.After)).Int("latest_seq", int64(latest))
	if req.After+1 < oldest || req.After > latest {
		o.Int("resume_after", int64(oldest-1))
	} else {
		o.Raw("resume_after", "")
	}
	replay(req.After)
	return Receipt004{OK: true, Response: o.String()}
}

// Follow writes the log's events after cursor to send, oldest first, as
// they come, until send returns false, stop is closed or the log is
// closed; flush, when not nil, runs after each batch. A cursor whose
// events are no longer kept first gets a worker.cursor_stale line (seq
// 0), and the stream goes on after its resume_after. A cursor sent on
// rewind moves the stream back to it (a replay); one ahead of the
// stream's is ignored. The stream takes a rewind before it reads the log
// again: on an unbuffered channel, a sender that got its cursor taken
// knows that everything published after is sent after the replay.
func (l *Lane004) Follow(cursor uint64, send func(seq uint64, line []byte) bool, flush func() bool, rewind <-chan uint64, stop <-chan struct{}) {
	var buf [][]byte
	for {
		select {
		case c := <-rewind:
			cursor = min(cursor, c)
		default:
		}
		changed, before := l.cfg.Log.Changed(), l.cfg.Log.Latest()
		lines, stale, resume := l.cfg.Log.After(cursor, 256, buf[:0])
		buf = lines
		if stale {
			if !send(0, lane004.AppendCursorStale(nil, l.cfg.WorkerID, cursor, resume, l.cfg.Log.Latest(), l.cfg.Now())) {
				return
			}
			cursor = resume
		}
		for _, line := range lines {
			// Seqs are consecutive but where damaged lines were dropped
			// (EventLog's open): each line says its own.
			cursor = gjson.GetBytes(line, "seq").Uint()
			if !send(cursor, line) {
				return
			}
		}
		clear(buf)
		if len(lines) > 0 || stale {
			if flush != nil && !flush() {
				return
			}
			continue
		}
		select {
		case <-changed:
			if l.cfg.Log.Latest() == before {
				return // woken with nothing new: the log was closed
			}
		case c := <-rewind:
			cursor = min(cursor, c)
		case <-stop:
			return
		}
	}
}

// receiptLine reports whether a stored outcome is a receipt (a store's
// recovery writes its own marker over entries left in flight).
func receiptLine(detail string) bool {
	return gjson.Get(detail, "event_type").Str != "" && gjson.Get(detail, "payload.request_id").Exists()
}

// refuse answers a request with a seq-less worker.error, no event of the
// log, and audits it. It records nothing: the request's store entry, if
// it has one, stays as it is.
func (l *Lane004) refuse(req *lane004.Request, code, message string) []byte {
	p := &lane004.Problem{RequestID: req.RequestID, HasID: true, Method: req.Method, Code: code, Message: message}
	l.audit("failure", req.RequestID, req.Method, message)
	return lane004.AppendProblem(nil, l.cfg.WorkerID, p, l.cfg.Now())
}

// publish makes the receipt and records it: the store keeps it for
// retries and the event log publishes it, one commit under --state-dir.
// recorded is false when that failed: nothing is recorded, and line is a
// seq-less internal_error for the caller alone (the request's entry stays
// in flight, so that a retry runs nothing and gets an internal_error
// receipt of its own).
func (l *Lane004) publish(key Key, req *lane004.Request, r Receipt004) (line []byte, recorded bool) {
	now := l.cfg.Now()
	status := "ok"
	if !r.OK {
		status = r.Code
	}
	line, err := l.cfg.Log.AppendReceipt(l.cfg.Store, key, status, now, func(seq uint64) []byte {
		if r.OK {
			return lane004.AppendResponse(nil, l.cfg.WorkerID, seq, req.RequestID, req.Method, r.Response, now)
		}
		return lane004.AppendError(nil, l.cfg.WorkerID, seq, req.RequestID, req.Method, r.Code, r.Message, lane004.Retryable(r.Code), r.Details, now)
	})
	if err != nil { // refuse audits it
		return l.refuse(req, lane004.CodeInternalError, "the receipt could not be recorded ("+err.Error()+
			"); the request may have taken effect, and a retry of this request_id runs nothing and gets an internal_error receipt"), false
	}
	if !r.OK {
		status = r.Code + " " + r.Message
	}
	l.audit("result", req.RequestID, req.Method, status)
	return line, true
}

// execute runs the request on the session's loop and returns its receipt
// (see publish for recorded).
func (l *Lane004) execute(key Key, req *lane004.Request) ([]byte, bool) {
	type answer struct {
		line     []byte
		recorded bool
	}
	ch := make(chan answer, 1)
	gone := Fail004(lane004.CodeWorkerUnavailable, "the worker's session has ended")
	// The first receipt wins: a done that came after the loop was given
	// up for gone publishes nothing.
	var once sync.Once
	publish := func(r Receipt004) (a answer, first bool) {
		once.Do(func() {
			a.line, a.recorded = l.publish(key, req, r)
			first = true
		})
		return a, first
	}
	ok := l.cfg.Submit(func() {
		l.cfg.Target.Do(req, func(r Receipt004) {
			if a, first := publish(r); first {
				ch <- a
			}
		})
	})
	if !ok {
		a, _ := publish(gone)
		return a.line, a.recorded
	}
	// A loop that ends before it ran the request never answers: look
	// every second.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case a := <-ch:
			return a.line, a.recorded
		case <-tick.C:
			if !l.cfg.Submit(func() {}) {
				if a, first := publish(gone); first {
					return a.line, a.recorded
				}
				a := <-ch // done won the race: its receipt is on its way
				return a.line, a.recorded
			}
		}
	}
}

func (l *Lane004) audit(event, requestID, method, detail string) {
	if l.cfg.Audit == nil {
		return
	}
	l.cfg.Audit.Log(AuditEvent{Event: event, RequestID: requestID, SessionID: l.cfg.WorkerID, Lane: laneID004, Result: method, Detail: detail})
}
