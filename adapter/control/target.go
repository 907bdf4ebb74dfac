package control

// What a control lane (seed 000: control.stdin.*, control.interrupt.*)
// needs of the session it drives. Each dialect that can host a lane
// implements Target on its own state; the lane runs decoding, checks and
// dedupe on its connection's goroutine and hands the inject or the
// interrupt to the session's loop (Loop.Submit). docs/control/targets.md
// says how each dialect maps them.

import (
	"github.com/ccbridge/ccbridge/mapping/lane000"
)

// WorkerState is the worker's state as a control lane reports it.
type WorkerState string

const (
	// WorkerStarting: a child is being spawned, or has not answered its
	// initialization yet (rpc: initialize; acp: the session's setup).
	WorkerStarting WorkerState = "starting"
	// WorkerIdle: no turn runs. A child that died on its own counts as
	// idle while the session goes on: the next prompt resumes it.
	WorkerIdle WorkerState = "idle"
	// WorkerRunning: a turn is in progress (or prompts wait for the CLI).
	WorkerRunning WorkerState = "running"
	// WorkerExited: no child, and the session has ended (or is ending),
	// so none will start.
	WorkerExited WorkerState = "exited"
)

// Target is a session a control lane drives. Its methods are called on
// the session's loop goroutine only (through the Submit the target was
// handed with); done is called exactly once, on that goroutine, before
// the method returns.
type Target interface {
	// ControlSessionID is the CLI session's id as ccbridge knows it, ""
	// before it is known.
	ControlSessionID() string
	// ControlState is the worker's state now.
	ControlState() WorkerState
	// ControlInject hands text to the worker as one user prompt, sent
	// the way the dialect sends its own (interrupting the running turn
	// first when interrupt). done gets ok with "sent" (written to the
	// CLI, nothing ahead of it) or "queued" (behind a running turn or a
	// child that is starting), or not_live (no child and none can start:
	// the session is ending, or the CLI failed to start), busy (rpc: a
	// run is active), rejected (the text is no valid prompt).
	ControlInject(text []byte, interrupt bool, done func(res lane000.Result, detail string))
	// ControlInterrupt interrupts the running turn in band: ok with
	// "interrupt sent", ok with "no turn running", or not_live with no
	// child.
	ControlInterrupt(done func(res lane000.Result, detail string))
}

// Sessions is implemented by a Target that hosts several CLI sessions
// (acp: one per ACP session). Its own Target methods address the oldest
// session; a lane that is given a session_id looks it up with
// ControlSession, and only a session_id none of them has is not_found.
type Sessions interface {
	// ControlSessions lists the ids of the sessions, oldest first.
	ControlSessions() []string
	// ControlSession is the target of session id; false when the
	// connection has no such session.
	ControlSession(id string) (Target, bool)
}

// IDTarget is a Target that also takes the control request's id with a
// prompt, to name it when the turn that answers it ends.
type IDTarget interface {
	ControlInjectFor(requestID string, text []byte, interrupt bool, done func(res lane000.Result, detail string))
}

// Hook is called once by a dialect's Run, before it serves anything,
// with the session's target and the function that runs work on the
// session's loop (Loop.Submit): a control lane (--control) drives the
// session through them. submit returns false once the session has ended.
type Hook func(t Target, submit func(fn func()) bool)

// Detail strings of the acks the targets give.
const (
	DetailSent          = "sent"
	DetailQueued        = "queued"
	DetailInterrupted   = "interrupt sent"
	DetailNoTurn        = "no turn running"
	DetailShuttingDown  = "ccbridge is shutting down"
	DetailNotRunning    = "the CLI is not running"
	DetailStartFailed   = "the CLI could not be started: "
	DetailRunActive     = "a run is active"
	DetailInterruptedBy = "interrupted by a control request"
)
