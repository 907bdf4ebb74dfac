package acp

// The acp dialect as a control lane's target (control.Target). A
// connection hosts any number of ACP sessions: the lane addresses one by
// its session id (control.Sessions); the connection's own control.Target
// methods address the oldest. An injected prompt is queued the way
// session/prompt queues one (ccbridge holds the queue, never the CLI);
// the client sees its turn's session/update notifications, and no
// session/prompt request is answered for it.

import (
	"slices"
	"unicode/utf8"

	"github.com/ccbridge/ccbridge/adapter/control"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/acp"
	"github.com/ccbridge/ccbridge/mapping/lane000"
)

var (
	_ control.Target   = (*acpLoop)(nil)
	_ control.Sessions = (*acpLoop)(nil)
	_ control.Target   = acpTarget{}
)

// detailNoSession: a connection with no ACP session has no worker yet.
const detailNoSession = "no ACP session: the client has not opened one"

// acpTarget is one ACP session as a control lane's target.
type acpTarget struct {
	l *acpLoop
	s *acpSession
}

// oldest is the connection's oldest session, or nil.
func (l *acpLoop) oldest() *acpSession {
	var first *acpSession
	for _, s := range l.sessions {
		if first == nil || s.n < first.n {
			first = s
		}
	}
	return first
}

func (l *acpLoop) ControlSessions() []string {
	ss := make([]*acpSession, 0, len(l.sessions))
	for _, s := range l.sessions {
		ss = append(ss, s)
	}
	slices.SortFunc(ss, func(a, b *acpSession) int { return a.n - b.n })
	ids := make([]string, len(ss))
	for i, s := range ss {
		ids[i] = s.id
	}
	return ids
}

func (l *acpLoop) ControlSession(id string) (control.Target, bool) {
	s := l.sessions[id]
	if s == nil {
		return nil, false
	}
	return acpTarget{l, s}, true
}

func (l *acpLoop) ControlSessionID() string {
	if s := l.oldest(); s != nil {
		return s.id
	}
	return ""
}

func (l *acpLoop) ControlState() control.WorkerState {
	if s := l.oldest(); s != nil {
		return acpTarget{l, s}.ControlState()
	}
	if l.loop.Ending() {
		return control.WorkerExited
	}
	return control.WorkerStarting
}

func (l *acpLoop) ControlInject(text []byte, interrupt bool, done func(lane000.Result, string)) {
	if s := l.oldest(); s != nil {
		acpTarget{l, s}.ControlInject(text, interrupt, done)
		return
	}
	done(lane000.NotLive, l.noSession())
}

func (l *acpLoop) ControlInterrupt(done func(lane000.Result, string)) {
	if s := l.oldest(); s != nil {
		acpTarget{l, s}.ControlInterrupt(done)
		return
	}
	done(lane000.NotLive, l.noSession())
}

func (l *acpLoop) noSession() string {
	if l.loop.Ending() {
		return control.DetailShuttingDown
	}
	return detailNoSession
}

// closed reports whether the session is no longer the connection's.
func (t acpTarget) closed() bool { return t.l.sessions[t.s.id] != t.s }

func (t acpTarget) ControlSessionID() string { return t.s.id }

func (t acpTarget) ControlState() control.WorkerState {
	s := t.s
	switch {
	case t.closed():
		return control.WorkerExited
	case s.pending != nil || s.sup.Respawning():
		return control.WorkerStarting
	case s.running != nil || len(s.queue) > 0:
		return control.WorkerRunning
	case s.sup.Live() == nil && t.l.loop.Ending():
		return control.WorkerExited
	}
	return control.WorkerIdle
}

func (t acpTarget) ControlInject(text []byte, interrupt bool, done func(lane000.Result, string)) {
	l, s := t.l, t.s
	defer l.emit()
	switch {
	case t.closed():
		done(lane000.NotLive, "the session was closed")
		return
	case l.loop.Ending():
		done(lane000.NotLive, control.DetailShuttingDown)
		return
	case len(text) == 0 || !utf8.Valid(text):
		done(lane000.Rejected, "the prompt must be non-empty UTF-8 text")
		return
	}
	if interrupt && s.running != nil {
		l.interruptTurn(s)
	}
	q := acpQueued{stdin: mapping.AppendUserMessage(nil, mapping.UserOptions{}, mapping.Block{Text: string(text)})}
	if s.running != nil || s.pending != nil || len(s.queue) > 0 || s.sup.Respawning() {
		s.queue = append(s.queue, q)
		done(lane000.OK, control.DetailQueued)
		return
	}
	// Nothing ahead of it: next writes it now, starting a child first
	// when the last one died, and tells took.
	q.took = done
	s.queue = append(s.queue, q)
	l.next(s)
}

func (t acpTarget) ControlInterrupt(done func(lane000.Result, string)) {
	l, s := t.l, t.s
	defer l.emit()
	switch {
	case t.closed():
		done(lane000.NotLive, "the session was closed")
	case s.running != nil:
		l.interruptTurn(s)
		done(lane000.OK, control.DetailInterrupted)
	case s.sup.Live() == nil:
		done(lane000.NotLive, control.DetailNotRunning)
	default:
		done(lane000.OK, control.DetailNoTurn)
	}
}

// interruptTurn interrupts the running turn in band, as session/cancel
// does, but keeps the prompts queued behind it: they run next.
func (l *acpLoop) interruptTurn(s *acpSession) {
	q := s.queue
	s.queue = nil
	l.cancel(s)
	s.queue = q
}

// replyPrompt answers a prompt's session/prompt request; a control
// lane's prompt (id "") has none.
func (l *acpLoop) replyPrompt(id string, result []byte) {
	if id == "" {
		l.log.Debug("a control lane's prompt ended", "result", string(result))
		return
	}
	l.reply(id, result)
}

// failPrompt answers a prompt's session/prompt request with an error; a
// control lane's prompt (id "") has none, and its failure is logged.
func (l *acpLoop) failPrompt(id string, e *acp.Error) {
	if id == "" {
		l.log.Warn("a control lane's prompt failed", "err", e.Message)
		return
	}
	l.fail(id, e)
}

var _ control.Sessions = (*acpLoop)(nil)
