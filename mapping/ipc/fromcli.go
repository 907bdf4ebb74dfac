package ipc

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/ccbridge/ccbridge/internal/jscan"
	"github.com/ccbridge/ccbridge/internal/jsonw"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// AppendCLI is FromCLI writing into a buffer: it appends to dst the lines
// FromCLI would return for ev, each followed by '\n', and returns the
// extended buffer. A text or thinking delta whose session is already
// known, most of a turn's lines, is written straight into dst without
// allocating.
func (t *Translator) AppendCLI(dst []byte, ev *mapping.Event) []byte {
	if (ev.Kind == mapping.KindTextDelta || ev.Kind == mapping.KindThinkingDelta) && (ev.SessionID == "" || ev.SessionID == t.sessionID) {
		return append(t.appendDelta(dst, ev), '\n')
	}
	t.arena, t.inAppend = t.arena[:0], true
	t.scratch = t.FromCLI(*ev, t.scratch[:0])
	t.inAppend = false
	if cap(t.arena) > maxArenaLine {
		t.arena = nil // kept only while lines are small
	}
	for i, l := range t.scratch {
		dst = append(dst, l...)
		dst = append(dst, '\n')
		t.scratch[i] = nil
	}
	return dst
}

// FromCLI appends the ipc lines for one routed CLI event to out (zero or
// more complete JSON objects, each with "ipc_version":2, no trailing
// newline) and returns it. Each appended line is a fresh slice the caller
// owns. Events that mean nothing to a web UI append nothing; unknown ones
// are forwarded raw only with Options.ForwardUnknown.
func (t *Translator) FromCLI(ev mapping.Event, out [][]byte) [][]byte {
	if ev.SessionID != "" && ev.SessionID != t.sessionID {
		t.sessionID = strings.Clone(ev.SessionID)
		out = append(out, appendSessionInit(ev.SessionID))
	}
	switch ev.Kind {
	case mapping.KindSystemInit:
		out = t.systemInit(&ev, out)
	case mapping.KindStatus:
		out = t.status(&ev, out)
	case mapping.KindAPIRetry:
		l := newLine(TypeStatus, 128)
		l.str("state", "api_retry")
		for _, k := range [...]string{"attempt", "max_retries", "retry_delay_ms", "error_status", "error"} {
			l.rawIf(k, ev.Get(k))
		}
		out = append(out, l.done())
	case mapping.KindToolProgress:
		l := newLine(TypeStatus, 128)
		l.str("state", "tool_running")
		l.strOrNull("tool_use_id", ev.ParentToolUseID)
		l.str("tool_name", ev.ToolName)
		l.rawIf("elapsed_time_seconds", ev.Get("elapsed_time_seconds"))
		out = append(out, l.done())
	case mapping.KindCompactBoundary:
		m := ev.Get("compact_metadata")
		l := newLine(TypeCompactBoundary, 96)
		l.raw("trigger", m.Get("trigger"))
		l.raw("pre_tokens", m.Get("pre_tokens"))
		l.rawIf("post_tokens", m.Get("post_tokens"))
		out = append(out, l.done())
	case mapping.KindTaskStarted, mapping.KindTaskProgress, mapping.KindTaskUpdated, mapping.KindTaskNotification:
		out = append(out, taskUpdate(&ev))
	case mapping.KindLocalCommandOutput:
		out = t.slashOutput(&ev, ev.UUID, ev.Text, "", out)
	case mapping.KindAssistant:
		out = t.assistant(&ev, out)
	case mapping.KindUserLocalCommand:
		if ev.IsError {
			out = append(out, AppendError(nil, CodeSlashCommandFailed, ev.Text, true))
		} else {
			out = t.slashOutput(&ev, ev.UUID, ev.Text, "", out)
		}
	case mapping.KindToolResult:
		out = t.toolResults(&ev, out)
	case mapping.KindContentBlockStart:
		m := t.msg(ev.MessageID)
		m.open = ev.Index
		if mapping.IsToolUseBlock(ev.BlockType) {
			t.noteTool(ev.ToolUseID, ev.ToolName, ev.ParentToolUseID, "")
			l := newLine(TypeToolUse, 128)
			l.str("msg_id", ev.MessageID)
			l.str("tool_use_id", ev.ToolUseID)
			l.str("tool_name", ev.ToolName)
			l.raw("input", ev.Body.Get("content_block.input"))
			l.boolean("is_partial", true)
			l.strOrNull("parent_tool_use_id", ev.ParentToolUseID)
			l.int("block_index", ev.Index)
			out = append(out, l.done())
		}
	case mapping.KindContentBlockStop:
		if m, ok := t.msgs[ev.MessageID]; ok {
			m.open = -1
		}
	case mapping.KindTextDelta, mapping.KindThinkingDelta:
		out = append(out, t.appendDelta(nil, &ev))
	case mapping.KindResult:
		out = t.result(&ev, out)
	case mapping.KindCanUseTool:
		out = t.canUseTool(&ev, out)
	case mapping.KindControlCancelRequest:
		if _, ok := t.pending[ev.RequestID]; ok {
			out = append(out, cancelledLine(ev.RequestID, ReasonWithdrawn))
			t.Settle(ev.RequestID)
		}
	case mapping.KindControlResponse:
		out = t.controlResponse(&ev, out)
	default:
		switch {
		case !ev.Kind.Unknown():
		case !gjson.Valid(ev.Line):
			// Checked here only: a line of a known kind has been
			// walked already, and the CLI writes nothing but JSON.
			out = append(out, AppendError(nil, CodeInvalidCLIOutput, invalidCLIOutput(ev.Line), true))
		case t.opt.ForwardUnknown:
			l := newLine(TypeUnknown, len(ev.Line))
			l.rawStr("raw", ev.Line)
			out = append(out, l.done())
		}
	}
	return out
}

// invalidCLIOutput says what was dropped, with the line's start: enough to
// recognise it, never a whole payload.
func invalidCLIOutput(line string) string {
	const show = 80
	head := line
	if len(head) > show {
		head = strings.ToValidUTF8(head[:show], "") + "…"
	}
	return fmt.Sprintf("the CLI wrote a line that is not JSON (%d bytes, starting %q); it was dropped", len(line), head)
}

// metadataKeys are copied from system/init into system_metadata; "version"
// is claude_code_version.
var metadataKeys = [...]string{"cwd", "tools", "model", "permissionMode", "slash_commands", "plugins", "agents", "skills", "mcp_servers"}

func (t *Translator) systemInit(ev *mapping.Event, out [][]byte) [][]byte {
	l := newLine(TypeSystemMetadata, len(ev.Line)/2)
	l.str("session_id", ev.SessionID)
	for _, k := range metadataKeys {
		l.raw(k, ev.Get(k))
	}
	l.raw("version", ev.Get("claude_code_version"))
	l.rawIf("output_style", ev.Get("output_style"))
	return t.setMeta(l.done(), out)
}

// setMeta sends a system_metadata line if it differs from the last one.
func (t *Translator) setMeta(meta []byte, out [][]byte) [][]byte {
	if bytes.Equal(meta, t.meta) {
		return out
	}
	t.meta = meta
	return append(out, bytes.Clone(meta))
}

// patchMeta changes one field of the last system_metadata and sends it when
// that changes it. Before the first system/init there is nothing to patch:
// the next init carries the new value.
func (t *Translator) patchMeta(key string, value gjson.Result, out [][]byte) [][]byte {
	if t.meta == nil || !value.Exists() {
		return out
	}
	meta, err := sjson.SetRawBytes(bytes.Clone(t.meta), key, []byte(value.Raw))
	if err != nil {
		return out
	}
	return t.setMeta(meta, out)
}

func (t *Translator) status(ev *mapping.Event, out [][]byte) [][]byte {
	st := ev.Get("status")
	if mode := ev.Get("permissionMode"); mode.Type == gjson.String {
		out = t.patchMeta("permissionMode", mode, out)
	}
	switch {
	case st.Type == gjson.String:
		l := newLine(TypeStatus, 32)
		l.str("state", st.Str)
		out = append(out, l.done())
	case ev.Get("compact_result").Exists():
		l := newLine(TypeStatus, 64)
		l.str("state", "compacted")
		l.raw("compact_result", ev.Get("compact_result"))
		l.rawIf("compact_error", ev.Get("compact_error"))
		out = append(out, l.done())
	}
	return out
}

// taskKeys are copied from system/task_* into task_update when present.
var taskKeys = [...]string{"task_id", "tool_use_id", "description", "task_type", "subagent_type", "status", "summary", "usage", "last_tool_name", "is_backgrounded"}

func taskUpdate(ev *mapping.Event) []byte {
	l := newLine(TypeTaskUpdate, 256)
	l.str("event", strings.TrimPrefix(ev.Subtype, "task_"))
	for _, k := range taskKeys {
		l.rawIf(k, ev.Get(k))
	}
	if p := ev.Get("patch.status"); p.Exists() && !ev.Get("status").Exists() {
		l.raw("status", p)
	}
	return l.done()
}

// slashOutput sends the output of a local slash command as assistant_text
// with source "slash_command".
func (t *Translator) slashOutput(ev *mapping.Event, msgID, text, command string, out [][]byte) [][]byte {
	l := newLine(TypeAssistantText, len(text)+160)
	l.str("msg_id", msgID)
	l.int("seq", 0)
	l.str("text", text)
	l.boolean("is_partial", false)
	l.str("status", "complete")
	l.strOrNull("parent_tool_use_id", ev.ParentToolUseID)
	l.str("source", "slash_command")
	if command != "" {
		l.str("command", command)
	}
	return append(out, l.done())
}

// textLine builds one complete assistant_text or thinking_text line (a
// streamed delta's is appendPartial's). raw, when not empty, is text
// already encoded as a JSON string, copied as it is.
func (t *Translator) textLine(typ string, ev *mapping.Event, index int, text, raw, status string) []byte {
	m := t.msg(ev.MessageID)
	l := t.lineFor(typ, max(len(raw), len(text)+len(text)/8)+160)
	l.str("msg_id", ev.MessageID)
	l.int("seq", m.seq)
	m.seq++
	if raw != "" {
		l.b = jsonw.Key(l.b, "text")
		l.b = append(l.b, raw...)
	} else {
		l.str("text", text)
	}
	l.boolean("is_partial", false)
	l.str("status", status)
	l.strOrNull("parent_tool_use_id", ev.ParentToolUseID)
	l.int("block_index", index)
	return l.done()
}

func (t *Translator) noteTool(id, name, parent, plan string) {
	if id == "" {
		return
	}
	if old, ok := t.tools[id]; ok && plan == "" {
		plan = old.plan
	}
	t.tools[strings.Clone(id)] = toolInfo{name: strings.Clone(name), parent: strings.Clone(parent), plan: plan}
}

// assistant maps one assistant frame, normally holding one content block.
func (t *Translator) assistant(ev *mapping.Event, out [][]byte) [][]byte {
	main := ev.ParentToolUseID == ""
	if main && ev.MessageID != "" {
		if t.turnMsgID != ev.MessageID {
			t.turnMsgID = strings.Clone(ev.MessageID)
		}
	}
	if ev.LocalCommand != "" {
		// /cost, /context: a <synthetic> frame carrying the command output.
		ev.Body.Get("content").ForEach(func(_, b gjson.Result) bool {
			if b.Get("type").Str == "text" {
				out = t.slashOutput(ev, ev.MessageID, b.Get("text").Str, ev.LocalCommand, out)
			}
			return true
		})
		return out
	}
	m := t.msg(ev.MessageID)
	status := "complete"
	if ev.Aborted {
		status = "aborted"
	}
	// jscan steps over a block's long text with IndexByte, where gjson
	// would walk it byte by byte several times.
	jscan.Elements(jscan.Get(ev.Body.Raw, "content").Raw, func(b gjson.Result) bool {
		index := m.frames
		if m.open >= 0 {
			index = m.open
		}
		m.frames++
		typ := jscan.Get(b.Raw, "type").Str
		switch {
		case typ == "text":
			tr := jscan.Get(b.Raw, "text")
			if main {
				t.turnText = append(t.turnText[:0], tr.Str...)
			}
			line := t.textLine(TypeAssistantText, ev, index, tr.Str, rawString(tr), status)
			if ev.IsError {
				line = apiErrorText(line, ev)
			}
			out = append(out, line)
		case typ == "thinking":
			tr := jscan.Get(b.Raw, "thinking")
			out = append(out, t.textLine(TypeThinkingText, ev, index, tr.Str, rawString(tr), status))
		case typ == "redacted_thinking":
			line := t.textLine(TypeThinkingText, ev, index, "", "", status)
			out = append(out, append(line[:len(line)-1], `,"redacted":true}`...))
		case mapping.IsToolUseBlock(typ):
			id, name, input := jscan.Get(b.Raw, "id").Str, jscan.Get(b.Raw, "name").Str, jscan.Get(b.Raw, "input")
			plan := ""
			if name == "ExitPlanMode" {
				plan = strings.Clone(input.Get("plan").Str)
			}
			t.noteTool(id, name, ev.ParentToolUseID, plan)
			l := newLine(TypeToolUse, len(input.Raw)+160)
			l.str("msg_id", ev.MessageID)
			l.str("tool_use_id", id)
			l.str("tool_name", name)
			l.raw("input", input)
			l.boolean("is_partial", false)
			l.strOrNull("parent_tool_use_id", ev.ParentToolUseID)
			l.int("block_index", index)
			out = append(out, l.done())
		}
		return true
	})
	return out
}

// apiErrorText marks the assistant_text of a synthetic API error frame.
func apiErrorText(l []byte, ev *mapping.Event) []byte {
	w := line{b: l[:len(l)-1]}
	w.boolean("is_error", true)
	w.raw("api_error_status", ev.Get("api_error_status"))
	return w.done()
}

// toolResults maps a user frame carrying tool_result blocks, plus the outer
// tool_use_result when it is structured (an object or array; on errors the
// CLI sends a plain string, which carries nothing the tool_result lacks).
func (t *Translator) toolResults(ev *mapping.Event, out [][]byte) [][]byte {
	first := ""
	jscan.Elements(jscan.Get(ev.Body.Raw, "content").Raw, func(b gjson.Result) bool {
		if jscan.Get(b.Raw, "type").Str != "tool_result" {
			return true
		}
		id := jscan.Get(b.Raw, "tool_use_id").Str
		if first == "" {
			first = id
		}
		out = t.cancelForTool(id, out)
		content := jscan.Get(b.Raw, "content")
		l := newLine(TypeToolResult, len(content.Raw)+128)
		l.str("tool_use_id", id)
		l.str("output", mapping.ToolResultText(content))
		if content.IsArray() {
			l.raw("content", content)
		}
		l.boolean("is_error", jscan.Get(b.Raw, "is_error").Type == gjson.True)
		l.strOrNull("parent_tool_use_id", ev.ParentToolUseID)
		if info, ok := t.tools[id]; ok {
			l.str("tool_name", info.name)
		}
		out = append(out, l.done())
		return true
	})
	if r := jscan.Get(ev.Line, "tool_use_result"); r.IsObject() || r.IsArray() {
		l := newLine(TypeToolUseStructured, len(r.Raw)+128)
		l.str("tool_use_id", first)
		l.strOrNull("tool_name", t.tools[first].name)
		l.raw("structured_result", r)
		l.strOrNull("parent_tool_use_id", ev.ParentToolUseID)
		out = append(out, l.done())
	}
	return out
}

// cancelForTool withdraws an open request whose tool already has a result:
// the CLI decided without us (for example it failed the request at stdin
// EOF), so the prompt must go.
func (t *Translator) cancelForTool(toolUseID string, out [][]byte) [][]byte {
	for _, id := range t.order {
		if p := t.pending[id]; p.ToolUseID == toolUseID && toolUseID != "" {
			out = append(out, cancelledLine(id, ReasonResolvedByCLI))
			t.Settle(id)
			break
		}
	}
	return out
}

func (t *Translator) canUseTool(ev *mapping.Event, out [][]byte) [][]byte {
	req := ev.Body
	info := t.tools[ev.ToolUseID]
	input := req.Get("input")
	isQuestion := ev.ToolName == "AskUserQuestion" || ev.ToolName == "ExitPlanMode"
	p := &Pending{
		RequestID:       strings.Clone(ev.RequestID),
		ToolName:        strings.Clone(ev.ToolName),
		ToolUseID:       strings.Clone(ev.ToolUseID),
		ParentToolUseID: info.parent,
		Input:           strings.Clone(input.Raw),
		IsQuestion:      isQuestion,
	}
	if _, dup := t.pending[p.RequestID]; !dup {
		t.order = append(t.order, p.RequestID)
	}
	t.pending[p.RequestID] = p

	l := newLine(TypeControlRequestForward, len(req.Raw)+256)
	l.str("request_id", ev.RequestID)
	l.str("tool_name", ev.ToolName)
	if dn := req.Get("display_name"); dn.Type == gjson.String {
		l.raw("display_name", dn)
	} else {
		l.str("display_name", ev.ToolName)
	}
	l.raw("description", req.Get("description"))
	if input.Exists() {
		l.raw("input", input)
	} else {
		l.rawStr("input", "{}")
	}
	l.raw("decision_reason", req.Get("decision_reason"))
	l.raw("blocked_path", req.Get("blocked_path"))
	l.raw("permission_suggestions", req.Get("permission_suggestions"))
	l.boolean("is_question", isQuestion)
	l.strOrNull("tool_use_id", ev.ToolUseID)
	l.strOrNull("parent_tool_use_id", info.parent)
	l.boolean("requires_user_interaction", req.Get("requires_user_interaction").Type == gjson.True)
	for _, k := range [...]string{"title", "decision_reason_type", "agent_id", "mcp_server"} {
		l.rawIf(k, req.Get(k))
	}
	if info.plan != "" {
		l.str("plan", info.plan)
	}
	return append(out, l.done())
}

func (t *Translator) controlResponse(ev *mapping.Event, out [][]byte) [][]byte {
	subtype, ours := t.outbound[ev.RequestID]
	if !ours {
		// The echo of our own answer to a CLI request (with
		// --replay-user-messages), or a stray: drop it.
		return out
	}
	delete(t.outbound, ev.RequestID)
	if q, ok := t.queries[ev.RequestID]; ok {
		delete(t.queries, ev.RequestID)
		return append(out, t.queryAnswer(q, ev))
	}
	if ev.IsError {
		msg := ev.Body.Get("error").Str
		if msg == "" {
			msg = subtype + " failed"
		}
		l := newLine(TypeError, len(msg)+128)
		l.str("code", CodeControlRequestFailed)
		l.str("message", msg)
		l.boolean("recoverable", true)
		l.str("request_id", ev.RequestID)
		l.str("subtype", subtype)
		l.rawIf("cli_error_code", ev.Body.Get("error_code"))
		return append(out, l.done())
	}
	if subtype == "set_model" {
		if m := ev.Body.Get("response.model"); m.Type == gjson.String {
			out = t.patchMeta("model", m, out)
		}
	}
	return out
}

func (t *Translator) result(ev *mapping.Event, out [][]byte) [][]byte {
	out = t.CancelPending(ReasonTurnEnded, out)
	total := ev.Get("total_cost_usd")
	l := newLine(TypeCostUpdate, 1024)
	l.raw("total_cost_usd", total)
	l.float("turn_cost_usd", t.turnCost(ev, total))
	for _, k := range [...]string{"num_turns", "duration_ms", "duration_api_ms", "usage", "modelUsage"} {
		l.raw(k, ev.Get(k))
	}
	out = append(out, l.done())
	if total.Type == gjson.Number {
		t.prevTotal = total.Num
	}

	msgID := t.turnMsgID
	if ev.Result == mapping.ResultInterrupted {
		partial := ev.Get("result")
		l := newLine(TypeTurnCancelled, len(partial.Raw)+len(t.turnText)+192)
		if partial.Type == gjson.String && partial.Str != "" {
			l.raw("partial_result", partial)
		} else {
			l.str("partial_result", string(t.turnText))
		}
		l.raw("reason", ev.Get("terminal_reason"))
		l.strOrNull("msg_id", msgID)
		l.str("subtype", ev.Subtype)
		l.boolean("is_error", ev.IsError)
		l.raw("terminal_reason", ev.Get("terminal_reason"))
		out = append(out, l.done())
		t.endTurn()
		return out
	}
	res := ev.Get("result")
	l = newLine(TypeTurnComplete, len(res.Raw)+256)
	l.strOrNull("msg_id", msgID)
	l.raw("result", res)
	l.str("subtype", ev.Subtype)
	l.boolean("is_error", ev.IsError)
	l.raw("terminal_reason", ev.Get("terminal_reason"))
	l.b = append(l.b, `,"api_error":`...)
	if ev.Result == mapping.ResultAPIError {
		l.b = append(l.b, '{')
		l.raw("status", ev.Get("api_error_status"))
		l.raw("type", ev.Get("api_error_type"))
		l.raw("message", res)
		l.b = append(l.b, '}')
	} else {
		l.b = append(l.b, "null"...)
	}
	l.str("result_class", ev.Result.String())
	l.raw("stop_reason", ev.Get("stop_reason"))
	for _, k := range [...]string{"errors", "local_command", "permission_denials", "structured_output"} {
		l.rawIf(k, ev.Get(k))
	}
	l.strOrNull("parent_tool_use_id", ev.ParentToolUseID)
	out = append(out, l.done())
	t.endTurn()
	return out
}

// turnCost is the cost of the turn that just ended: the sum of
// model_usage_since_last_result[*].costUSD when the CLI sends it (exact,
// also after --resume, whose totals include the saved session's cost), else
// the difference from the previous total_cost_usd of this process.
func (t *Translator) turnCost(ev *mapping.Event, total gjson.Result) float64 {
	if since := ev.Get("model_usage_since_last_result"); since.IsObject() {
		sum := 0.0
		since.ForEach(func(_, m gjson.Result) bool {
			sum += m.Get("costUSD").Num
			return true
		})
		return sum
	}
	if total.Type != gjson.Number {
		return 0
	}
	if d := total.Num - t.prevTotal; d > 0 {
		return d
	}
	return 0
}

// rawString is a JSON string value as the CLI encoded it, for copying into
// an outbound line; "" for anything else, which textLine then encodes.
func rawString(r gjson.Result) string {
	if r.Type == gjson.String {
		return r.Raw
	}
	return ""
}

// appendDelta appends the partial assistant_text or thinking_text line of
// a delta to dst, or to a new slice of the right size when dst is nil. The
// fields that do not change between the deltas of one block are encoded
// once per block and copied.
func (t *Translator) appendDelta(dst []byte, ev *mapping.Event) []byte {
	typ := TypeThinkingText
	if ev.Kind == mapping.KindTextDelta {
		typ = TypeAssistantText
		if ev.ParentToolUseID == "" {
			// Kept for a turn that ends without a result (CancelTurn).
			if ev.MessageID != t.streamMsg || ev.Index != t.streamIndex {
				t.streamMsg, t.streamIndex = strings.Clone(ev.MessageID), ev.Index
				t.streamText = t.streamText[:0]
			}
			if len(t.streamText) < maxStreamText {
				t.streamText = append(t.streamText, ev.Text[:min(len(ev.Text), maxStreamText-len(t.streamText))]...)
			}
		}
	}
	m := t.msg(ev.MessageID)
	if key := (partKey{typ: typ, parent: ev.ParentToolUseID, index: ev.Index}); m.partHead == nil || m.partKey != key {
		head := newLine(typ, len(ev.MessageID)+32)
		head.str("msg_id", ev.MessageID)
		head.b = jsonw.Key(head.b, "seq")
		// A leading byte that is not '{' makes Key write the comma.
		tail := line{b: append(make([]byte, 0, 128), '.')}
		tail.boolean("is_partial", true)
		tail.str("status", "streaming")
		tail.strOrNull("parent_tool_use_id", ev.ParentToolUseID)
		tail.int("block_index", ev.Index)
		m.partHead, m.partTail = head.b, tail.done()[1:]
		key.parent = strings.Clone(key.parent) // typ is a constant
		m.partKey = key
	}
	size := len(ev.TextRaw)
	if ev.TextRaw == "" {
		size = len(ev.Text) + len(ev.Text)/8 + 2 // room for escapes
	}
	if need := len(m.partHead) + len(m.partTail) + size + 24; dst == nil {
		dst = make([]byte, 0, need)
	} else {
		dst = slices.Grow(dst, need)
	}
	dst = append(dst, m.partHead...)
	dst = jsonw.Int(dst, int64(m.seq))
	m.seq++
	dst = jsonw.Key(dst, "text")
	if ev.TextRaw != "" {
		dst = append(dst, ev.TextRaw...)
	} else {
		dst = jsonw.String(dst, ev.Text)
	}
	return append(dst, m.partTail...)
}
