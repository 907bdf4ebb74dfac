package control

import (
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/ccbridge/ccbridge/framing"
	"github.com/ccbridge/ccbridge/mapping/lane000"
)

// LaneConfig is what a lane-000 receiver needs.
type LaneConfig struct {
	Store  Store
	Audit  *Audit // nil: no audit trail
	Policy lane000.Policy
	// RefRoots are the folders content_ref may point into; none refuses
	// content_ref. RefMax bounds a referenced file (64 MiB when 0).
	RefRoots []string
	RefMax   int64
	// Timeout is how long the worker may take to take an input or an
	// interrupt before the ack says timeout (--control-timeout).
	Timeout time.Duration
	TTL     time.Duration // the dedupe window, for the capabilities
	// Lanes are the lanes the capabilities name; nil: lane 000 alone.
	Lanes  []string
	Now    func() time.Time
	Target Target
	// Submit runs fn on the session's loop; false once the session ended.
	Submit func(fn func()) bool
}

// Lane serves lane 000 (control.stdin.*, control.interrupt.*) for one
// session. Handle may be called from any number of goroutines at once:
// the store makes each request id count once, whoever sends it.
type Lane struct {
	cfg LaneConfig
}

// NewLane returns a lane-000 receiver.
func NewLane(cfg LaneConfig) *Lane {
	if cfg.RefMax <= 0 {
		cfg.RefMax = DefaultRefMax
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	cfg.Policy.RefsAllowed = len(cfg.RefRoots) > 0
	return &Lane{cfg: cfg}
}

// laneID names lane 000 in store keys and audit entries.
const laneID = "000"

// Capabilities returns the control.capabilities line, which a lane writes
// first on every connection.
func (l *Lane) Capabilities() []byte {
	sid, _ := l.sessionID("")
	return l.capabilities(sid, "")
}

// CapabilitiesOf is Capabilities for a session whose id the caller knows
// (on the session's loop, where asking it would wait for itself).
func (l *Lane) CapabilitiesOf(sid string) []byte { return l.capabilities(sid, "") }

// capabilities is the control.capabilities line; requestID, when not "",
// is the control.capabilities.request it answers.
func (l *Lane) capabilities(sid, requestID string) []byte {
	p := l.cfg.Policy
	return lane000.AppendCapabilities(nil, lane000.Capabilities{
		Lanes:       l.cfg.Lanes,
		Types:       []string{"control.stdin.request", "control.interrupt.request", "control.capabilities.request"},
		SoftLimit:   p.SoftLimit,
		HardLimit:   p.HardLimit,
		RefMax:      l.cfg.RefMax,
		RefsAllowed: p.RefsAllowed,
		Durable:     l.cfg.Store.Durable(),
		DedupeTTL:   l.cfg.TTL,
		Team:        p.Team,
		AgentID:     p.AgentID,
		SessionID:   sid,
		RequestID:   requestID,
	}, l.cfg.Now())
}

// TooLong is the answer to a line over the connection's limit, which was
// dropped: control.error, rejected.
func (l *Lane) TooLong(e *framing.LineTooLongError) []byte {
	l.audit("failure", "", "", "", "", "", string(lane000.Rejected), false, "line too long", nil)
	return lane000.AppendProblem(nil, &lane000.Problem{Ack: lane000.TypeError, Result: lane000.Rejected, Error: "too_large",
		Detail: "line of " + strconv.FormatInt(e.Size, 10) + " bytes or more is over the " + strconv.FormatInt(e.Max, 10) + "-byte limit; use content_ref for large input"}, l.cfg.Now())
}

// target is the session a request for session id want goes to (on the
// loop): the one of that id when the Target hosts several, else the
// Target itself.
func (l *Lane) target(want string) Target {
	if s, ok := l.cfg.Target.(Sessions); ok && want != "" {
		if t, ok := s.ControlSession(want); ok {
			return t
		}
	}
	return l.cfg.Target
}

// sessionID asks the session a request for want goes to for its id, on
// its loop; ok is false when the session has ended (or its loop did not
// answer in time).
func (l *Lane) sessionID(want string) (string, bool) {
	res, sid, timedOut := l.onLoop(func(done func(lane000.Result, string)) {
		done(lane000.OK, l.target(want).ControlSessionID())
	})
	return sid, res == lane000.OK && !timedOut
}

// onLoop runs fn on the session's loop and waits, at most Timeout, for fn
// (or what it hands done to) to call done. Submit itself may wait for a
// busy loop: the timeout covers it too. After a timeout fn does nothing
// if the loop has not begun it yet. A session that has ended answers
// NotLive.
func (l *Lane) onLoop(fn func(done func(lane000.Result, string))) (res lane000.Result, detail string, timedOut bool) {
	type outcome struct {
		res    lane000.Result
		detail string
	}
	ch := make(chan outcome, 2)
	var abandoned atomic.Bool
	done := func(res lane000.Result, detail string) { ch <- outcome{res, detail} }
	go func() {
		if !l.cfg.Submit(func() {
			if !abandoned.Load() {
				fn(done)
			}
		}) {
			ch <- outcome{lane000.NotLive, "the worker session has ended"}
		}
	}()
	timer := time.NewTimer(l.cfg.Timeout)
	defer timer.Stop()
	select {
	case o := <-ch:
		return o.res, o.detail, false
	case <-timer.C:
		abandoned.Store(true)
		return "", "", true
	}
}

// Handle answers one line of a controller with exactly one line, through
// reply. It blocks until the worker took the input (or the timeout), so a
// connection's requests are carried out in the order they came.
func (l *Lane) Handle(line []byte, reply func([]byte)) {
	now := l.cfg.Now()
	req, prob := lane000.Decode(line)
	if prob != nil {
		l.audit("failure", prob.RequestID, prob.Team, prob.SessionID, prob.AgentID, "", string(prob.Result), false, prob.Detail, nil)
		reply(lane000.AppendProblem(nil, prob, now))
		return
	}
	if req.Kind == lane000.KindCapabilities {
		sid, _ := l.sessionID("")
		reply(l.capabilities(sid, req.RequestID))
		return
	}
	ev := "request"
	if req.RetryCount > 0 {
		ev = "retry"
	}
	l.audit(ev, req.RequestID, req.Team, req.SessionID, req.AgentID, req.Sender, "", false, "", req.Content)

	sid, live := l.sessionID(req.SessionID)
	if !live {
		l.ack(&req, lane000.NotLive, "the worker session has ended", false, reply)
		return
	}
	prob, warn := lane000.Check(&req, l.cfg.Policy, sid, now)
	if prob != nil {
		l.audit("failure", req.RequestID, req.Team, req.SessionID, req.AgentID, req.Sender, string(prob.Result), false, prob.Detail, nil)
		reply(lane000.AppendProblem(nil, prob, now))
		return
	}
	if warn != "" {
		l.audit("warning", req.RequestID, req.Team, req.SessionID, req.AgentID, req.Sender, "", false, warn, nil)
	}

	key := Key{Lane: laneID, Team: req.Team, SessionID: req.SessionID, AgentID: req.AgentID, RequestID: req.RequestID}
	prev, fresh, err := l.cfg.Store.Begin(key, now)
	switch {
	case errors.Is(err, ErrStoreFull):
		l.ack(&req, lane000.Busy, "too many requests in flight; retry later", false, reply)
		return
	case err != nil:
		l.ack(&req, lane000.InternalError, "the dedupe store failed: "+err.Error(), false, reply)
		return
	}
	if !fresh {
		detail := "duplicate of a request still in flight"
		if !prev.InFlight {
			detail = "duplicate; the first attempt's result: " + prev.Outcome.Result
			if prev.Outcome.Detail != "" {
				detail += " (" + prev.Outcome.Detail + ")"
			}
		}
		l.audit("duplicate", req.RequestID, req.Team, req.SessionID, req.AgentID, req.Sender, string(lane000.OK), true, detail, nil)
		l.ack(&req, lane000.OK, detail, true, reply)
		return
	}

	text := req.Content
	if req.Ref != nil {
		if text, err = ReadRef(l.cfg.RefRoots, *req.Ref, l.cfg.RefMax, now); err != nil {
			l.release(key)
			detail := err.Error()
			if re, ok := err.(*RefError); ok {
				detail = re.Detail
			}
			l.ack(&req, lane000.Rejected, "content_ref: "+detail, false, reply)
			return
		}
	}
	res, detail := l.execute(&req, text)
	switch res {
	case lane000.OK, lane000.Timeout:
		// Done, or maybe done later (the input may still reach the
		// worker): a retry must not repeat it.
		l.finish(key, Outcome{Result: string(res), Detail: detail, At: l.cfg.Now()})
	default:
		// Nothing happened: a retry is judged anew.
		l.release(key)
	}
	if res == lane000.Timeout {
		l.audit("timeout", req.RequestID, req.Team, req.SessionID, req.AgentID, req.Sender, string(res), false, detail, nil)
	}
	l.ack(&req, res, detail, false, reply)
}

// execute hands the request to the worker on its loop and waits for the
// worker to take it, at most Timeout.
func (l *Lane) execute(req *lane000.Request, text []byte) (lane000.Result, string) {
	res, detail, timedOut := l.onLoop(func(done func(lane000.Result, string)) {
		t := l.target(req.SessionID)
		switch {
		case req.Kind == lane000.KindInterrupt:
			t.ControlInterrupt(done)
		default:
			if it, ok := t.(IDTarget); ok {
				it.ControlInjectFor(req.RequestID, text, req.Interrupt, done)
			} else {
				t.ControlInject(text, req.Interrupt, done)
			}
		}
	})
	if timedOut {
		what := "the input"
		if req.Kind == lane000.KindInterrupt {
			what = "the interrupt"
		}
		return lane000.Timeout, "the worker did not take " + what + " within " + l.cfg.Timeout.String()
	}
	return res, detail
}

func (l *Lane) ack(req *lane000.Request, res lane000.Result, detail string, duplicate bool, reply func([]byte)) {
	if !duplicate {
		ev := "ack"
		if res != lane000.OK {
			ev = "failure"
		}
		l.audit(ev, req.RequestID, req.Team, req.SessionID, req.AgentID, req.Sender, string(res), false, detail, nil)
	}
	reply(lane000.AppendAck(nil, req, res, detail, duplicate, l.cfg.Now()))
}

func (l *Lane) finish(k Key, o Outcome) {
	if err := l.cfg.Store.Finish(k, o); err != nil {
		l.audit("failure", k.RequestID, k.Team, k.SessionID, k.AgentID, "", string(lane000.InternalError), false, "recording the outcome: "+err.Error(), nil)
	}
}

func (l *Lane) release(k Key) {
	if err := l.cfg.Store.Release(k); err != nil {
		l.audit("failure", k.RequestID, k.Team, k.SessionID, k.AgentID, "", string(lane000.InternalError), false, "releasing the request: "+err.Error(), nil)
	}
}

func (l *Lane) audit(event, requestID, team, sessionID, agentID, sender, result string, duplicate bool, detail string, payload []byte) {
	if l.cfg.Audit == nil {
		return
	}
	l.cfg.Audit.Log(AuditEvent{
		Event: event, RequestID: requestID, Team: team, SessionID: sessionID, AgentID: agentID,
		Sender: sender, Lane: laneID, Result: result, Duplicate: duplicate, Detail: detail, Payload: payload,
	})
}
