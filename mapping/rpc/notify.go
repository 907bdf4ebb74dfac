package rpc

import (
	"time"
)

// Notification methods (runtime → UI).
const (
	MethodAgentEvent        = "agent.event"
	MethodRunStatus         = "run.status"
	MethodRunContext        = "run.context"
	MethodRunDiagnostics    = "run.diagnostics"
	MethodUIRequestCanceled = "ui.request.cancelled"
	MethodUIResponseReject  = "ui.response.rejected"
	MethodChildExited       = "runtime.child_exited"
)

// Runtime → UI request methods.
const (
	MethodUIConfirm = "ui.confirm.request"
	MethodUIPick    = "ui.pick.request"
	MethodUIPrompt  = "ui.prompt.request"
)

// AgentEvent types (docs/protocol/rpc.md, "AgentEvent").
const (
	EventText               = "text"
	EventTextDelta          = "text.delta"
	EventReasoning          = "reasoning"
	EventReasoningDelta     = "reasoning.delta"
	EventToolCall           = "tool_call"
	EventToolResult         = "tool_result"
	EventToolProgress       = "tool_progress"
	EventPermission         = "permission"
	EventFinal              = "final"
	EventError              = "error"
	EventLLMRetry           = "llm.retry"
	EventStepStart          = "step_start"
	EventStepComplete       = "step_complete"
	EventCompactionStart    = "compaction_start"
	EventCompactionComplete = "compaction_complete"
	EventTask               = "task"
	EventHiddenUserMessage  = "hidden_user_message"
)

// runStatusLine builds run.status {run_id, status, message?}.
func runStatusLine(runID, status, message string) []byte {
	o := notification(MethodRunStatus, len(runID)+len(message)+32)
	o.str("run_id", runID)
	o.str("status", status)
	o.strIf("message", message)
	return o.endNotification()
}

// ev builds one agent.event: {"jsonrpc":"2.0","method":"agent.event",
// "params":{"run_id":R,"seq":N,"event":{"type":T,…,"timestamp":now}}}.
type ev struct{ w }

func newEvent(runID string, seq int64, typ string, hint int) ev {
	o := notification(MethodAgentEvent, len(runID)+len(typ)+hint+64)
	o.str("run_id", runID)
	o.int("seq", seq)
	o.obj("event")
	o.str("type", typ)
	return ev{o}
}

// done closes the event with its timestamp (when now is not 0).
func (e *ev) done(now int64) []byte {
	if now != 0 {
		e.int("timestamp", now)
	}
	e.end('}')
	return e.endNotification()
}

// event starts an agent.event for run r, taking its next seq.
func (t *Translator) event(r *run, typ string, hint int) ev {
	e := newEvent(r.id, r.seq, typ, hint)
	r.seq++
	return e
}

// uiRequestCancelled builds ui.request.cancelled {id, run_id, reason}; uiID
// is raw JSON.
func uiRequestCancelled(uiID, runID, reason string) []byte {
	o := notification(MethodUIRequestCanceled, 64)
	o.raw("id", uiID)
	o.strOrNull("run_id", runID)
	o.str("reason", reason)
	return o.endNotification()
}

// AppendResponseRejected appends ui.response.rejected: the UI answered a
// runtime → UI request that is unknown, already settled, or gave a result
// of the wrong shape. id is the response's raw id; nothing was done with
// the answer. It carries a JSON-RPC error object because a response cannot
// be answered with an error response.
func AppendResponseRejected(dst []byte, id string, code int, message string) []byte {
	o := notification(MethodUIResponseReject, len(message)+64)
	o.b = append(dst, o.b...)
	o.raw("id", id)
	o.obj("error")
	o.int("code", int64(code))
	o.str("message", message)
	o.end('}')
	return o.endNotification()
}

// AppendChildExited appends runtime.child_exited {exit_code, signal?,
// stderr, session_id, message}: the CLI exited without being asked to;
// the next run.start resumes the session.
func AppendChildExited(dst []byte, exitCode int, signal, stderr, sessionID, message string) []byte {
	o := notification(MethodChildExited, len(stderr)+len(message)+96)
	o.b = append(dst, o.b...)
	o.int("exit_code", int64(exitCode))
	o.strOrNull("signal", signal)
	o.str("stderr", stderr)
	o.strOrNull("session_id", sessionID)
	o.str("message", message)
	return o.endNotification()
}

// isoMillis formats Unix milliseconds as RFC 3339 in UTC.
func isoMillis(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}
