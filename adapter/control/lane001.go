package control

import (
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/ccbridge/ccbridge/mapping/lane001"
)

// Target001 is the run lane 001 steers. Its methods are called on the
// session's loop only (through Lane001Config.Submit); each command calls
// done exactly once, on the loop, and writes the events the command
// causes (STATE, ABORT) only after done returned, so that the RESULT
// comes first.
type Target001 interface {
	// RunID names the run (--run-id, else the session id).
	RunID() string
	// StateLine is the run's STATE event now.
	StateLine() []byte
	Pause(done func(lane001.Result))
	Resume(done func(lane001.Result))
	Cancel(done func(lane001.Result))
	Escalate(model, reason string, done func(lane001.Result))
}

// Peer is the controller a lane-001 line came from.
type Peer interface {
	// Send writes a line to it from the lane's goroutine.
	Send(line []byte)
	// SendOnLoop writes a line to it from the session's loop, in order
	// with the events the target writes there.
	SendOnLoop(line []byte)
}

// Lane001Config is what a lane-001 receiver needs.
type Lane001Config struct {
	// Store dedupes request ids (lane 001's window: DedupeWindow001).
	Store Store
	Audit *Audit // nil: no audit trail
	Now   func() time.Time
	// Target is the run; nil when the dialect cannot be paused, and then
	// every request is answered invalid_state with Refusal.
	Target  Target001
	Refusal string
	// Submit runs fn on the session's loop; false once the session ended.
	Submit func(fn func()) bool
	Logger *slog.Logger
}

// DedupeWindow001 is how long lane 001 remembers a request id (the seed's
// five minutes).
const DedupeWindow001 = 5 * time.Minute

// laneID001 names lane 001 in store keys and audit entries.
const laneID001 = "001"

// Lane001 serves lane 001 (seed 001: pause, resume, cancel, escalate).
// Handle may be called from any number of goroutines at once.
type Lane001 struct {
	cfg Lane001Config
}

// NewLane001 returns a lane-001 receiver.
func NewLane001(cfg Lane001Config) *Lane001 {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Lane001{cfg: cfg}
}

// Handle answers one line: a refusal (RESULT bad_request, or ERROR with
// no readable request_id; nothing for a line that is itself an answer),
// or an ACK at once and then the RESULT. It returns once the RESULT is
// written, so a connection's requests are carried out in order.
func (l *Lane001) Handle(line []byte, p Peer) {
	req, prob := lane001.Decode(line)
	if prob != nil {
		l.audit("failure", prob.RequestID, prob.Target.RunID, lane001.CodeBadRequest, prob.Message)
		if prob.NoReply {
			l.cfg.Logger.Warn("control lane 001: a line that is an answer, not a request, was ignored", "reason", prob.Message)
			return
		}
		p.Send(lane001.AppendProblem(nil, prob, l.cfg.Now()))
		return
	}
	// The ACK says the request arrived, before anything is judged.
	p.Send(lane001.AppendAck(nil, &req, l.cfg.Now()))
	l.audit("request", req.RequestID, req.Target.RunID, "", req.Command)

	key := Key{Lane: laneID001, RequestID: req.RequestID}
	prev, fresh, err := l.cfg.Store.Begin(key, l.cfg.Now())
	switch {
	case errors.Is(err, ErrStoreFull):
		l.result(p, &req, lane001.Result{Status: lane001.StatusFailure, Code: lane001.CodeInvalidState, Message: "too many requests in flight; retry later"})
		return
	case err != nil:
		l.result(p, &req, lane001.Result{Status: lane001.StatusFailure, Code: lane001.CodeInvalidState, Message: "the dedupe store failed: " + err.Error()})
		return
	case !fresh && prev.InFlight:
		l.audit("duplicate", req.RequestID, req.Target.RunID, lane001.CodeDuplicate, "in flight")
		l.result(p, &req, lane001.Result{Status: lane001.StatusFailure, Code: lane001.CodeDuplicate, Message: "request " + req.RequestID + " is still in flight"})
		return
	case !fresh:
		// Done before: the same RESULT again, nothing run twice.
		l.audit("duplicate", req.RequestID, req.Target.RunID, prev.Outcome.Result, "cached result")
		l.result(p, &req, decodeOutcome001(prev.Outcome))
		return
	}

	res := l.execute(key, &req, p)
	l.audit("result", req.RequestID, req.Target.RunID, res.Status, res.Code+" "+res.Message)
}

// finish records the outcome of request key (once).
func (l *Lane001) finish(key Key, req *lane001.Request, res lane001.Result) {
	if err := l.cfg.Store.Finish(key, Outcome{Result: res.Status, Detail: encodeOutcome001(res), At: l.cfg.Now()}); err != nil {
		l.audit("failure", req.RequestID, req.Target.RunID, "", "recording the outcome: "+err.Error())
	}
}

// execute runs the command on the session's loop, which writes its RESULT
// there (before the events it causes), and returns that result.
func (l *Lane001) execute(key Key, req *lane001.Request, p Peer) lane001.Result {
	ch := make(chan lane001.Result, 1)
	notActive := lane001.Result{Status: lane001.StatusFailure, Code: lane001.CodeNotFound, Message: "Run " + req.Target.RunID + " is not active"}
	if l.cfg.Target == nil {
		res := lane001.Result{Status: lane001.StatusFailure, Code: lane001.CodeInvalidState, Message: l.cfg.Refusal}
		l.finish(key, req, res)
		l.result(p, req, res)
		return res
	}
	ok := l.cfg.Submit(func() {
		t := l.cfg.Target
		done := func(res lane001.Result) {
			// Recorded before it is sent: a controller that saw the
			// RESULT gets it again for a retry, even after a crash.
			l.finish(key, req, res)
			p.SendOnLoop(lane001.AppendResult(nil, req, res, l.cfg.Now()))
			ch <- res
		}
		if req.Target.RunID != t.RunID() {
			done(notActive)
			return
		}
		switch req.Command {
		case lane001.CommandPause:
			t.Pause(done)
		case lane001.CommandResume:
			t.Resume(done)
		case lane001.CommandCancel:
			t.Cancel(done)
		case lane001.CommandEscalate:
			t.Escalate(req.Model, req.Reason, done)
		}
	})
	if !ok {
		// The session is over: its run is no longer active.
		l.finish(key, req, notActive)
		l.result(p, req, notActive)
		return notActive
	}
	// A loop that ends before it ran fn never answers: look every second.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case res := <-ch:
			return res
		case <-tick.C:
			if !l.cfg.Submit(func() {}) {
				select {
				case res := <-ch:
					return res
				default:
				}
				l.finish(key, req, notActive)
				l.result(p, req, notActive)
				return notActive
			}
		}
	}
}

func (l *Lane001) result(p Peer, req *lane001.Request, res lane001.Result) {
	p.Send(lane001.AppendResult(nil, req, res, l.cfg.Now()))
}

// outcome001 is a RESULT's payload as an Outcome's Detail keeps it.
type outcome001 struct {
	Code          string `json:"code,omitempty"`
	Message       string `json:"message,omitempty"`
	PreviousModel string `json:"previous_model,omitempty"`
	NewModel      string `json:"new_model,omitempty"`
}

func encodeOutcome001(r lane001.Result) string {
	b, _ := json.Marshal(outcome001{r.Code, r.Message, r.PreviousModel, r.NewModel})
	return string(b)
}

func decodeOutcome001(o Outcome) lane001.Result {
	if o.Result != lane001.StatusSuccess && o.Result != lane001.StatusFailure {
		// In flight when a durable store's ccbridge stopped (OpenStore
		// ends such entries): whether it ran is not known.
		return lane001.Result{Status: lane001.StatusFailure, Code: lane001.CodeInvalidState,
			Message: "the request was in flight when ccbridge stopped; whether it took effect is not known"}
	}
	var d outcome001
	_ = json.Unmarshal([]byte(o.Detail), &d) // a damaged entry gives a bare status
	return lane001.Result{Status: o.Result, Code: d.Code, Message: d.Message, PreviousModel: d.PreviousModel, NewModel: d.NewModel}
}

func (l *Lane001) audit(event, requestID, runID, result, detail string) {
	if l.cfg.Audit == nil {
		return
	}
	l.cfg.Audit.Log(AuditEvent{Event: event, RequestID: requestID, SessionID: runID, Lane: laneID001, Result: result, Detail: detail})
}
