package acp

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/internal/jsonw"
	"github.com/ccbridge/ccbridge/mapping"
)

// DefaultContextWindow is the context size reported in usage_update until
// a result names the model's real one.
const DefaultContextWindow = 200000

// planTask is one entry of the CLI's task list.
type planTask struct {
	id, subject, status string
}

// isPlanTool reports the todo tools, shown as plan updates rather than
// tool calls: TodoWrite (the whole list in its input) and the task tools
// of CLIs that replaced it (CLAUDE_CODE_ENABLE_TODO_TOOLS=1 in 2.1.330:
// TaskCreate, TaskUpdate, TaskList, TaskGet, whose results carry the
// changes).
func isPlanTool(name string) bool {
	switch name {
	case "TodoWrite", "TaskCreate", "TaskUpdate", "TaskList", "TaskGet":
		return true
	}
	return false
}

// tool is what the Translator knows of one tool call.
type tool struct {
	name    string
	input   string // the complete input (raw JSON), "" until the assistant frame
	parent  string // the subagent's Agent tool_use id, or ""
	hidden  bool   // a todo tool: shown as a plan, not as a tool call
	shown   bool   // a tool_call was sent
	running bool   // a tool_call_update in_progress was sent
}

// Translator turns one ACP session's CLI events into session/update
// notification lines. It is not safe for concurrent use.
type Translator struct {
	// Config is the session's mode and model and their options. The
	// adapter fills it from the CLI's initialize response and changes it
	// when the client sets a mode or model; the Translator changes Mode
	// when the CLI reports a new permission mode.
	Config Config

	sessionID string
	sid       []byte // sessionID as a JSON string
	tools     map[string]*tool
	streamed  map[string]bool // API message ids seen in stream_events this turn

	tasks []planTask // the CLI's task list (TaskCreate, TaskUpdate, TaskList), shown as the plan

	ctxInput, ctxOutput int64 // context tokens of the latest model call
	ctxSize             int64
	cost                float64
	haveCost            bool
	called              bool // a model call started since the last usage_update
}

// NewTranslator returns a Translator for session sessionID.
func NewTranslator(sessionID string) *Translator {
	return &Translator{
		Config:    Config{Mode: "default", Model: "default", Modes: Modes(false, false), Models: []Model{{Value: "default", Name: "Default"}}},
		sessionID: sessionID,
		sid:       jsonw.String(nil, sessionID),
		tools:     map[string]*tool{},
		streamed:  map[string]bool{},
		ctxSize:   DefaultContextWindow,
	}
}

// SessionID returns the session's id.
func (t *Translator) SessionID() string { return t.sessionID }

// AppendChunkLine is FromCLI's hot path: when ev is a streamed text or
// thinking delta, it appends FromCLI's one notification for it, and a line
// break, to dst (a UI's pending output) and reports true; otherwise it
// appends nothing and reports false. It allocates nothing once dst has
// room.
func (t *Translator) AppendChunkLine(dst []byte, ev *mapping.Event) ([]byte, bool) {
	var kind string
	switch ev.Kind {
	case mapping.KindTextDelta:
		kind = "agent_message_chunk"
	case mapping.KindThinkingDelta:
		kind = "agent_thought_chunk"
	default:
		return dst, false
	}
	if ev.Text == "" {
		return dst, true
	}
	return append(t.appendDelta(dst, kind, ev), '\n'), true
}

// FromCLI appends the session/update lines one CLI event gives (often
// none) to out. The caller checks each line once at the boundary
// (gjson.Valid): raw subtrees of the line are copied into the output.
func (t *Translator) FromCLI(ev *mapping.Event, out [][]byte) [][]byte {
	switch ev.Kind {
	case mapping.KindTextDelta:
		if ev.Text != "" {
			out = append(out, t.appendDelta(nil, "agent_message_chunk", ev))
		}
	case mapping.KindThinkingDelta:
		if ev.Text != "" {
			out = append(out, t.appendDelta(nil, "agent_thought_chunk", ev))
		}
	case mapping.KindMessageStart:
		if ev.MessageID != "" {
			t.streamed[ev.MessageID] = true
		}
		if ev.ParentToolUseID == "" {
			t.called = true
			u := ev.Body.Get("message.usage")
			t.ctxInput = u.Get("input_tokens").Int() + u.Get("cache_creation_input_tokens").Int() + u.Get("cache_read_input_tokens").Int()
			t.ctxOutput = u.Get("output_tokens").Int()
		}
	case mapping.KindMessageDelta:
		if ev.ParentToolUseID == "" {
			if o := ev.Body.Get("usage.output_tokens"); o.Exists() {
				t.ctxOutput = o.Int()
			}
		}
	case mapping.KindContentBlockStart:
		if mapping.IsToolUseBlock(ev.BlockType) {
			out = t.toolStart(ev.ToolUseID, ev.ToolName, ev.ParentToolUseID, ev.Body.Get("content_block.input"), out)
		}
	case mapping.KindAssistant:
		out = t.assistant(ev, out)
	case mapping.KindToolResult:
		out = t.toolResults(ev.Body.Get("content"), ev.Get("tool_use_result"), ev.ParentToolUseID, out)
	case mapping.KindUserLocalCommand:
		if ev.Text != "" {
			out = append(out, t.appendChunk(nil, "agent_message_chunk", ev.Text, ev.UUID, ""))
		}
	case mapping.KindLocalCommandOutput:
		if ev.Text != "" {
			out = append(out, t.appendChunk(nil, "agent_message_chunk", ev.Text, ev.UUID, ""))
		}
	case mapping.KindStatus:
		if m := ev.Get("permissionMode"); m.Type == gjson.String && m.Str != "" && m.Str != t.Config.Mode {
			out = t.ModeChanged(m.Str, out)
		}
	case mapping.KindSessionTitleChanged:
		if title := ev.Get("title"); title.Type == gjson.String {
			line := appendUpdateHead(nil, t.sid, "session_info_update")
			line = append(line, `,"title":`...)
			line = jsonw.String(line, title.Str)
			out = append(out, appendUpdateTail(line))
		}
	case mapping.KindCompactBoundary:
		if post := ev.Get("compact_metadata.post_tokens"); post.Exists() {
			t.ctxInput, t.ctxOutput = post.Int(), 0
			out = append(out, t.appendUsage(nil))
		}
	case mapping.KindToolProgress:
		out = t.ToolRunning(ev.ParentToolUseID, out)
	case mapping.KindResult:
		var window int64
		ev.Get("modelUsage").ForEach(func(_, m gjson.Result) bool {
			window = max(window, m.Get("contextWindow").Int())
			return true
		})
		if window > 0 {
			t.ctxSize = window
		}
		if c := ev.Get("total_cost_usd"); c.Type == gjson.Number {
			t.cost, t.haveCost = c.Num, true
		}
		if t.called {
			out = append(out, t.appendUsage(nil))
		}
		clear(t.streamed)
		clear(t.tools)
	}
	return out
}

// appendDelta returns the chunk notification of a streamed delta: the hot
// path. The delta's text is copied as the CLI wrote it (ev.TextRaw, a
// JSON string from a line the caller validated), not decoded and encoded
// again.
func (t *Translator) appendDelta(dst []byte, kind string, ev *mapping.Event) []byte {
	raw := ev.TextRaw
	if raw == "" || raw[0] != '"' {
		return t.appendChunk(dst, kind, ev.Text, ev.MessageID, ev.ParentToolUseID)
	}
	if dst == nil {
		dst = make([]byte, 0, 200+len(raw)+len(t.sid)+len(ev.MessageID))
	}
	dst = appendUpdateHead(dst, t.sid, kind)
	dst = append(dst, `,"content":{"type":"text","text":`...)
	dst = append(dst, raw...)
	dst = append(dst, '}')
	if ev.MessageID != "" {
		dst = append(dst, `,"messageId":`...)
		dst = jsonw.String(dst, ev.MessageID)
	}
	dst = appendMeta(dst, "", ev.ParentToolUseID)
	return appendUpdateTail(dst)
}

// appendChunk appends one message chunk notification with text content.
func (t *Translator) appendChunk(dst []byte, kind, text, msgID, parent string) []byte {
	if dst == nil {
		dst = make([]byte, 0, 200+len(text)+len(t.sid)+len(msgID))
	}
	dst = appendUpdateHead(dst, t.sid, kind)
	dst = append(dst, `,"content":{"type":"text","text":`...)
	dst = jsonw.String(dst, text)
	dst = append(dst, '}')
	if msgID != "" {
		dst = append(dst, `,"messageId":`...)
		dst = jsonw.String(dst, msgID)
	}
	dst = appendMeta(dst, "", parent)
	return appendUpdateTail(dst)
}

func (t *Translator) appendUsage(dst []byte) []byte {
	t.called = false
	dst = appendUpdateHead(dst, t.sid, "usage_update")
	dst = append(dst, `,"used":`...)
	dst = jsonw.Int(dst, max(t.ctxInput+t.ctxOutput, 0))
	dst = append(dst, `,"size":`...)
	dst = jsonw.Int(dst, t.ctxSize)
	if t.haveCost {
		dst = append(dst, `,"cost":{"amount":`...)
		dst = jsonw.Float(dst, t.cost)
		dst = append(dst, `,"currency":"USD"}`...)
	}
	return appendUpdateTail(dst)
}

// ModeChanged records a permission mode the CLI switched to (a plan exit,
// a setMode permission update) and appends current_mode_update and
// config_option_update.
func (t *Translator) ModeChanged(mode string, out [][]byte) [][]byte {
	t.Config.Mode = mode
	if !t.Config.HasMode(mode) {
		t.Config.Modes = append(t.Config.Modes, modeByID(mode))
	}
	line := appendUpdateHead(nil, t.sid, "current_mode_update")
	line = append(line, `,"currentModeId":`...)
	line = jsonw.String(line, mode)
	out = append(out, appendUpdateTail(line))
	return append(out, t.AppendConfigUpdate(nil))
}

// AppendConfigUpdate appends a config_option_update with every option.
func (t *Translator) AppendConfigUpdate(dst []byte) []byte {
	dst = appendUpdateHead(dst, t.sid, "config_option_update")
	dst = append(dst, `,"configOptions":`...)
	dst = t.Config.AppendConfigOptions(dst)
	return appendUpdateTail(dst)
}

// toolFor returns the tool call id, recorded at its first sighting.
func (t *Translator) toolFor(id, name, parent string) *tool {
	tl := t.tools[id]
	if tl == nil {
		tl = &tool{name: name, parent: parent, hidden: isPlanTool(name)}
		t.tools[id] = tl
	}
	return tl
}

// toolStart announces a tool call whose block just started streaming.
func (t *Translator) toolStart(id, name, parent string, input gjson.Result, out [][]byte) [][]byte {
	if id == "" {
		return out
	}
	tl := t.toolFor(id, name, parent)
	if tl.hidden || tl.shown {
		return out
	}
	tl.shown = true
	line := appendUpdateHead(nil, t.sid, "tool_call")
	line = appendToolFields(line, id, name, input, "pending")
	line = appendMeta(line, name, parent)
	return append(out, appendUpdateTail(line))
}

// assistant handles a complete assistant frame: text and thinking that
// were not streamed (subagents, API error frames, local command output),
// and the full input of tool calls.
func (t *Translator) assistant(ev *mapping.Event, out [][]byte) [][]byte {
	streamed := ev.MessageID != "" && t.streamed[ev.MessageID]
	msgID := ev.MessageID
	if msgID == "" {
		msgID = ev.UUID
	}
	ev.Body.Get("content").ForEach(func(_, b gjson.Result) bool {
		switch typ := b.Get("type").Str; {
		case typ == "text":
			if !streamed {
				if text := b.Get("text").Str; text != "" {
					out = append(out, t.appendChunk(nil, "agent_message_chunk", text, msgID, ev.ParentToolUseID))
				}
			}
		case typ == "thinking":
			if !streamed {
				if text := b.Get("thinking").Str; text != "" {
					out = append(out, t.appendChunk(nil, "agent_thought_chunk", text, msgID, ev.ParentToolUseID))
				}
			}
		case mapping.IsToolUseBlock(typ):
			out = t.toolInput(b.Get("id").Str, b.Get("name").Str, ev.ParentToolUseID, b.Get("input"), out)
		}
		return true
	})
	return out
}

// toolInput records a tool call's complete input and shows it: a plan for
// TodoWrite, else a tool_call (first sighting) or a tool_call_update that
// refines the streamed announcement with title, locations, raw input and
// the proposed diff.
func (t *Translator) toolInput(id, name, parent string, input gjson.Result, out [][]byte) [][]byte {
	if id == "" {
		return out
	}
	tl := t.toolFor(id, name, parent)
	tl.input = input.Raw
	if tl.hidden {
		if name != "TodoWrite" {
			return out // the task tools change the plan with their results
		}
		line := appendUpdateHead(nil, t.sid, "plan")
		line = appendPlanEntries(line, input)
		line = appendMeta(line, "", parent)
		return append(out, appendUpdateTail(line))
	}
	kind, status := "tool_call_update", ""
	if !tl.shown {
		kind, status = "tool_call", "pending"
		tl.shown = true
	}
	line := appendUpdateHead(nil, t.sid, kind)
	line = appendToolFields(line, id, name, input, status)
	line = appendInputContent(line, name, input, "")
	line = appendMeta(line, name, parent)
	return append(out, appendUpdateTail(line))
}

// appendToolFields appends the members of a ToolCall / ToolCallUpdate
// that describe it: toolCallId, title, kind, status (when not ""),
// rawInput and locations.
func appendToolFields(dst []byte, id, name string, input gjson.Result, status string) []byte {
	dst = append(dst, `,"toolCallId":`...)
	dst = jsonw.String(dst, id)
	dst = append(dst, `,"title":`...)
	dst = jsonw.String(dst, ToolTitle(name, input))
	dst = append(dst, `,"kind":"`...)
	dst = append(dst, ToolKind(name)...)
	dst = append(dst, '"')
	if status != "" {
		dst = append(dst, `,"status":"`...)
		dst = append(dst, status...)
		dst = append(dst, '"')
	}
	raw := input.Raw
	if !input.IsObject() {
		raw = "{}"
	}
	dst = append(dst, `,"rawInput":`...)
	dst = append(dst, raw...)
	return appendLocations(dst, name, input)
}

// toolResults finishes the tool calls whose tool_result blocks a user
// frame carries: status completed or failed, the result as content (a
// whole-file diff for Edit and Write) and the structured result as
// rawOutput.
func (t *Translator) toolResults(content, structured gjson.Result, parent string, out [][]byte) [][]byte {
	n := 0
	content.ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").Str != "tool_result" {
			return true
		}
		n++
		id := b.Get("tool_use_id").Str
		if id == "" {
			return true
		}
		tl := t.tools[id]
		delete(t.tools, id)
		if tl != nil && tl.hidden {
			if !b.Get("is_error").Bool() && n == 1 && t.taskResult(tl.name, structured) {
				out = append(out, t.appendTaskPlan(nil, tl.parent))
			}
			return true
		}
		name := ""
		if tl != nil {
			name = tl.name
			if parent == "" {
				parent = tl.parent
			}
		}
		s := structured
		if n > 1 {
			s = gjson.Result{} // the structured result belongs to the first block
		}
		status := "completed"
		if b.Get("is_error").Bool() {
			status = "failed"
		}
		line := appendUpdateHead(nil, t.sid, "tool_call_update")
		line = append(line, `,"toolCallId":`...)
		line = jsonw.String(line, id)
		line = append(line, `,"status":"`...)
		line = append(line, status...)
		line = append(line, '"')
		line = appendResultContent(line, name, b, s)
		switch {
		case s.Exists():
			line = append(line, `,"rawOutput":`...)
			line = append(line, s.Raw...)
		case b.Get("content").Exists():
			line = append(line, `,"rawOutput":`...)
			line = append(line, b.Get("content").Raw...)
		}
		line = appendMeta(line, name, parent)
		out = append(out, appendUpdateTail(line))
		return true
	})
	return out
}

// taskResult applies a task tool's structured result to the task list
// and reports whether the list changed.
func (t *Translator) taskResult(name string, r gjson.Result) bool {
	find := func(id string) int {
		for i, k := range t.tasks {
			if k.id == id {
				return i
			}
		}
		return -1
	}
	switch name {
	case "TaskCreate":
		task := r.Get("task")
		id := task.Get("id").String()
		if id == "" || find(id) >= 0 {
			return false
		}
		status := task.Get("status").Str
		if status == "" {
			status = "pending"
		}
		t.tasks = append(t.tasks, planTask{id, task.Get("subject").Str, status})
		return true
	case "TaskUpdate":
		i := find(r.Get("taskId").String())
		if i < 0 || !r.Get("success").Bool() {
			return false
		}
		to := r.Get("statusChange.to").Str
		if to == "deleted" {
			t.tasks = append(t.tasks[:i], t.tasks[i+1:]...)
			return true
		}
		if to == "" {
			return false
		}
		t.tasks[i].status = to
		return true
	case "TaskList":
		list := r.Get("tasks")
		if !list.IsArray() {
			return false
		}
		t.tasks = t.tasks[:0]
		list.ForEach(func(_, k gjson.Result) bool {
			t.tasks = append(t.tasks, planTask{k.Get("id").String(), k.Get("subject").Str, k.Get("status").Str})
			return true
		})
		return true
	}
	return false
}

// appendTaskPlan appends a plan update with the task list.
func (t *Translator) appendTaskPlan(dst []byte, parent string) []byte {
	dst = appendUpdateHead(dst, t.sid, "plan")
	dst = append(dst, `,"entries":[`...)
	n := 0
	for _, k := range t.tasks {
		if k.subject == "" {
			continue
		}
		status := k.status
		switch status {
		case "pending", "in_progress", "completed":
		default:
			status = "pending"
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = append(dst, `{"content":`...)
		dst = jsonw.String(dst, k.subject)
		dst = append(dst, `,"priority":"medium","status":"`...)
		dst = append(dst, status...)
		dst = append(dst, `"}`...)
	}
	dst = append(dst, ']')
	dst = appendMeta(dst, "", parent)
	return appendUpdateTail(dst)
}

// ToolRunning appends a tool_call_update with status in_progress for a
// shown tool call, once: when its permission request was allowed, or its
// first progress heartbeat arrived.
func (t *Translator) ToolRunning(id string, out [][]byte) [][]byte {
	tl := t.tools[id]
	if tl == nil || tl.hidden || !tl.shown || tl.running {
		return out
	}
	tl.running = true
	line := appendUpdateHead(nil, t.sid, "tool_call_update")
	line = append(line, `,"toolCallId":`...)
	line = jsonw.String(line, id)
	line = append(line, `,"status":"in_progress"`...)
	line = appendMeta(line, tl.name, tl.parent)
	return append(out, appendUpdateTail(line))
}

// toolPlan returns the plan a model's ExitPlanMode tool_use carried.
func (t *Translator) toolPlan(id string) string {
	if tl := t.tools[id]; tl != nil && tl.input != "" {
		return gjson.Get(tl.input, "plan").Str
	}
	return ""
}

// isWrapper reports user text the CLI adds around prompts, which a replay
// does not show.
func isWrapper(s string) bool {
	return strings.HasPrefix(s, "<system-reminder>") || strings.HasPrefix(s, "<local-command-caveat>") ||
		strings.HasPrefix(s, "[Request interrupted")
}
