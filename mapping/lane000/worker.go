package lane000

import (
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/internal/jsonw"
	"github.com/ccbridge/ccbridge/mapping"
)

// The worker's progress, which `ccbridge --ui control` writes beside the
// acks so that a TUI can show the worker it drives. Every line has type,
// v, at (RFC 3339 UTC), team, agent_id and session_id:
//
//   - control.worker.state: state ("starting", "idle", "running",
//     "exited") and, when there is one, detail;
//   - control.worker.text: text, a piece of the assistant's answer as it
//     streams;
//   - control.worker.tool: tool_use_id, name and input (the tool call's
//     input object, copied as the CLI wrote it), once the call is complete;
//   - control.worker.turn: the end of a turn: result ("success", "error"
//     or "cancelled"), is_error, text (the CLI's result text), num_turns,
//     duration_ms, total_cost_usd, and request_ids, the control requests
//     whose prompts the turn answered, when known.
const (
	TypeWorkerState = "control.worker.state"
	TypeWorkerText  = "control.worker.text"
	TypeWorkerTool  = "control.worker.tool"
	TypeWorkerTurn  = "control.worker.turn"
)

// Worker builds the worker's progress lines. Team and AgentID are the
// worker's identity; SessionID is updated by the caller as the CLI tells
// it.
type Worker struct {
	Team, AgentID, SessionID string
}

// start appends the fields every worker line begins with.
func (w *Worker) start(dst []byte, typ string, now time.Time) []byte {
	dst = append(dst, `{"type":`...)
	dst = jsonw.String(dst, typ)
	dst = append(dst, `,"v":`...)
	dst = strconv.AppendInt(dst, Version, 10)
	dst = append(dst, `,"at":`...)
	dst = jsonw.String(dst, now.UTC().Format(time.RFC3339Nano))
	dst = append(dst, `,"team":`...)
	dst = jsonw.String(dst, w.Team)
	dst = append(dst, `,"agent_id":`...)
	dst = jsonw.String(dst, w.AgentID)
	dst = append(dst, `,"session_id":`...)
	return jsonw.String(dst, w.SessionID)
}

// AppendState appends a control.worker.state line.
func (w *Worker) AppendState(dst []byte, state, detail string, now time.Time) []byte {
	dst = w.start(dst, TypeWorkerState, now)
	dst = append(dst, `,"state":`...)
	dst = jsonw.String(dst, state)
	if detail != "" {
		dst = append(dst, `,"detail":`...)
		dst = jsonw.String(dst, detail)
	}
	return append(dst, '}')
}

// AppendCLI appends the progress lines one CLI event gives (none for most
// kinds) to dst, each ending in a line break, as the session loop's
// pending output takes them. requestIDs names the control requests a
// result answers.
func (w *Worker) AppendCLI(dst []byte, ev *mapping.Event, requestIDs []string, now time.Time) []byte {
	switch ev.Kind {
	case mapping.KindTextDelta:
		if ev.ParentToolUseID != "" {
			return dst // a subagent's text: not the worker's answer
		}
		dst = w.start(dst, TypeWorkerText, now)
		dst = append(dst, `,"text":`...)
		if ev.TextRaw != "" {
			dst = jsonw.Raw(dst, ev.TextRaw)
		} else {
			dst = jsonw.String(dst, ev.Text)
		}
		return append(dst, "}\n"...)
	case mapping.KindAssistant:
		ev.Body.Get("content").ForEach(func(_, block gjson.Result) bool {
			if block.Get("type").Str != "tool_use" {
				return true
			}
			dst = w.start(dst, TypeWorkerTool, now)
			dst = append(dst, `,"tool_use_id":`...)
			dst = jsonw.String(dst, block.Get("id").Str)
			dst = append(dst, `,"name":`...)
			dst = jsonw.String(dst, block.Get("name").Str)
			if in := block.Get("input"); in.IsObject() {
				dst = append(dst, `,"input":`...)
				dst = jsonw.Raw(dst, in.Raw)
			}
			dst = append(dst, "}\n"...)
			return true
		})
		return dst
	case mapping.KindResult:
		dst = w.start(dst, TypeWorkerTurn, now)
		dst = append(dst, `,"result":`...)
		dst = jsonw.String(dst, turnResult(ev))
		dst = append(dst, `,"is_error":`...)
		dst = jsonw.Bool(dst, ev.IsError)
		if t := ev.Get("result"); t.Type == gjson.String {
			dst = append(dst, `,"text":`...)
			dst = jsonw.String(dst, t.Str)
		}
		for _, k := range [...]string{"num_turns", "duration_ms", "total_cost_usd"} {
			if v := ev.Get(k); v.Type == gjson.Number {
				dst = jsonw.Key(dst, k)
				dst = append(dst, v.Raw...)
			}
		}
		dst = append(dst, `,"request_ids":`...)
		dst = jsonw.Strings(dst, requestIDs)
		return append(dst, "}\n"...)
	}
	return dst
}

// turnResult names how a turn ended.
func turnResult(ev *mapping.Event) string {
	switch {
	case strings.HasPrefix(ev.Get("terminal_reason").Str, "aborted_"):
		return "cancelled"
	case ev.IsError || ev.Result != mapping.ResultSuccess:
		return "error"
	}
	return "success"
}

// AppendTurnLost appends the control.worker.turn of a prompt whose turn
// ended without a result (the CLI exited, or was restarted): result
// "error", is_error, text saying why.
func (w *Worker) AppendTurnLost(dst []byte, requestID, why string, now time.Time) []byte {
	dst = w.start(dst, TypeWorkerTurn, now)
	dst = append(dst, `,"result":"error","is_error":true,"text":`...)
	dst = jsonw.String(dst, why)
	var ids []string
	if requestID != "" {
		ids = []string{requestID}
	}
	dst = append(dst, `,"request_ids":`...)
	dst = jsonw.Strings(dst, ids)
	return append(dst, '}')
}
