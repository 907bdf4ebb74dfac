package rpc

import (
	"slices"
	"strconv"
	"strings"

	"github.com/ccbridge/ccbridge/internal/jsonw"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/jsonrpc"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Kinds of permission requests (the "kind" of a permission event).
const (
	KindTool     = "tool"     // a tool asks for permission: ui.confirm.request
	KindQuestion = "question" // AskUserQuestion: ui.pick.request / ui.prompt.request per question
	KindPlan     = "plan"     // ExitPlanMode: ui.confirm.request with the plan
)

// States of a permission event.
const (
	PermRequested = "requested"
	PermAllowed   = "allowed"   // allowed, or the questions answered
	PermDenied    = "denied"    // denied, or a question declined
	PermWithdrawn = "withdrawn" // the CLI withdrew it or decided without the UI
	PermCancelled = "cancelled" // the run ended, was cancelled, or the CLI exited
)

// OtherItemID is the ui.pick.request item that asks for a free-text
// answer (a ui.prompt.request follows).
const OtherItemID = "other"

// pendingReq is one can_use_tool request of the CLI, open until the UI
// answers (possibly over several UI requests: one per question), the CLI
// withdraws it, or its run ends.
type pendingReq struct {
	uiID      string // the UI request now open for it (raw JSON id)
	method    string // that request's method
	items     []string
	cliID     string
	runID     string
	kind      string
	tool      string
	toolUseID string
	input     string // raw request.input
	suggest   string // raw permission_suggestions
	questions []question
	qi        int
	answers   []string // one per question answered so far
	other     bool     // the current ui.prompt.request is the "Other" follow-up
	picked    []string // labels picked along with "Other"
	order     uint64
}

type question struct {
	text, header string
	multi        bool
	options      []option
}

type option struct{ label, description string }

// pendingInOrder lists the open requests in arrival order.
func (t *Translator) pendingInOrder() []*pendingReq {
	ps := make([]*pendingReq, 0, len(t.byCLI))
	for _, p := range t.byCLI {
		ps = append(ps, p)
	}
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && ps[j].order < ps[j-1].order; j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
	return ps
}

// canUseTool asks the UI about a can_use_tool request.
func (t *Translator) canUseTool(e *mapping.Event, now int64, out *Output) {
	r := t.live()
	if r == nil {
		// No run owns the turn (or it was cancelled): nobody can answer.
		out.CLI = append(out.CLI, mapping.AppendDeny(nil, e.RequestID, mapping.Deny{
			Message: "No run is active to ask the user.", ToolUseID: e.ToolUseID}))
		return
	}
	if old := t.byCLI[e.RequestID]; old != nil {
		return // the same request again: it is open already
	}
	req := e.Body
	p := &pendingReq{
		cliID:     strings.Clone(e.RequestID),
		runID:     r.id,
		kind:      KindTool,
		tool:      strings.Clone(e.ToolName),
		toolUseID: strings.Clone(e.ToolUseID),
		input:     strings.Clone(req.Get("input").Raw),
		suggest:   strings.Clone(req.Get("permission_suggestions").Raw),
	}
	if p.input == "" {
		p.input = "{}"
	}
	switch e.ToolName {
	case "AskUserQuestion":
		p.kind = KindQuestion
		p.questions = parseQuestions(req.Get("input.questions"))
	case "ExitPlanMode":
		p.kind = KindPlan
	}
	t.reqOrder++
	p.order = t.reqOrder

	canAsk := t.caps.Confirm
	if p.kind == KindQuestion {
		canAsk = (t.caps.Pick || t.caps.Prompt) && len(p.questions) > 0
	}
	if !canAsk {
		msg := "The user interface cannot confirm tool use."
		if p.kind == KindQuestion {
			msg = "The user interface cannot ask questions."
		}
		out.CLI = append(out.CLI, mapping.AppendDeny(nil, p.cliID, mapping.Deny{Message: msg, ToolUseID: p.toolUseID}))
		x := t.event(r, EventPermission, 128)
		t.permFields(&x.w, p, PermDenied)
		x.str("reason", msg)
		out.UI = append(out.UI, x.done(now))
		return
	}
	t.byCLI[p.cliID] = p
	var line []byte
	if p.kind == KindQuestion {
		line = t.ask(p)
	} else {
		line = t.confirm(p, e)
	}
	// The UI hears why it is asked (the permission event, the run awaiting
	// it) before it is asked.
	x := t.event(r, EventPermission, 128)
	t.permFields(&x.w, p, PermRequested)
	out.UI = append(out.UI, x.done(now))
	t.setStatus(r, StatusAwaitingUI, out)
	out.UI = append(out.UI, line)
}

func (t *Translator) permFields(x *w, p *pendingReq, state string) {
	x.str("tool", p.tool)
	x.strOrNull("tool_call_id", p.toolUseID)
	x.str("kind", p.kind)
	x.str("state", state)
	x.raw("request_id", p.uiID)
}

func parseQuestions(qs gjson.Result) []question {
	var out []question
	qs.ForEach(func(_, q gjson.Result) bool {
		qq := question{text: q.Get("question").Str, header: q.Get("header").Str, multi: q.Get("multiSelect").Bool()}
		q.Get("options").ForEach(func(_, o gjson.Result) bool {
			qq.options = append(qq.options, option{label: o.Get("label").Str, description: o.Get("description").Str})
			return true
		})
		if qq.text != "" {
			out = append(out, qq)
		}
		return true
	})
	return out
}

// register makes uiID the open UI request of p.
func (t *Translator) register(p *pendingReq, method string) string {
	if p.uiID != "" {
		// The previous question's request is answered: a late second
		// answer to it is refused as settled.
		t.reqs.Take(p.uiID)
	}
	p.uiID = t.reqs.Issue(p)
	p.method = method
	return p.uiID
}

// confirm builds ui.confirm.request for a tool or a plan.
func (t *Translator) confirm(p *pendingReq, e *mapping.Event) []byte {
	id := t.register(p, MethodUIConfirm)
	req := e.Body
	title, message, danger := "Allow "+p.tool+"?", "", "normal"
	input := gjson.Parse(p.input)
	switch {
	case p.kind == KindPlan:
		title = "Approve the plan?"
		message = t.tools[p.toolUseID].plan
		if message == "" {
			message = input.Get("plan").Str
		}
	case p.tool == "Bash":
		title, message, danger = "Run command?", input.Get("command").Str, "danger"
	case input.Get("file_path").Type == gjson.String:
		message = input.Get("file_path").Str
	case input.Get("notebook_path").Type == gjson.String:
		message = input.Get("notebook_path").Str
	case input.Get("url").Type == gjson.String:
		message = input.Get("url").Str
	}
	if message == "" {
		message = req.Get("description").Str
	}
	if message == "" {
		message = p.input
	}
	o := request(id, MethodUIConfirm, len(p.input)+len(p.suggest)+len(message)+256)
	o.str("run_id", p.runID)
	o.str("title", title)
	o.str("message", message)
	if p.kind == KindPlan {
		o.str("confirm_label", "Approve")
		o.str("cancel_label", "Reject")
	} else {
		o.str("confirm_label", "Allow")
		o.str("cancel_label", "Deny")
	}
	o.str("danger_level", danger)
	o.boolean("allow_remember", p.suggest != "" && p.suggest != "[]")
	o.boolean("allow_reason", true)
	o.str("kind", p.kind)
	o.str("tool", p.tool)
	o.strOrNull("tool_call_id", p.toolUseID)
	o.raw("args", p.input)
	if dn := req.Get("display_name").Str; dn != "" && dn != p.tool {
		o.str("display_name", dn)
	}
	o.rawIf("description", req.Get("description"))
	o.rawIf("blocked_path", req.Get("blocked_path"))
	o.rawIf("decision_reason", req.Get("decision_reason"))
	if p.suggest != "" {
		o.raw("permission_suggestions", p.suggest)
	}
	if parent := t.tools[p.toolUseID].parent; parent != "" {
		o.str("parent_tool_call_id", parent)
	}
	return o.endNotification()
}

// ask builds the request for the current question: ui.pick.request when
// the UI can pick, else ui.prompt.request.
func (t *Translator) ask(p *pendingReq) []byte {
	q := p.questions[p.qi]
	if t.caps.Pick {
		id := t.register(p, MethodUIPick)
		o := request(id, MethodUIPick, 256+len(q.text)*2)
		o.str("run_id", p.runID)
		o.str("title", q.text)
		o.arr("items")
		p.items = p.items[:0]
		for i, opt := range q.options {
			itemID := strconv.Itoa(i + 1)
			p.items = append(p.items, itemID)
			o.elem()
			o.b = append(o.b, '{')
			o.str("id", itemID)
			o.str("label", opt.label)
			o.strIf("detail", opt.description)
			o.end('}')
		}
		p.items = append(p.items, OtherItemID)
		o.elem()
		o.b = append(o.b, '{')
		o.str("id", OtherItemID)
		o.str("label", "Other…")
		o.str("detail", "Type an answer")
		o.end('}')
		o.end(']')
		o.boolean("multi", q.multi)
		t.questionFields(&o, p, q)
		return o.endNotification()
	}
	return t.prompt(p, q, false)
}

// prompt builds ui.prompt.request for the current question: the free-text
// follow-up of "Other", or the whole question when the UI cannot pick.
func (t *Translator) prompt(p *pendingReq, q question, other bool) []byte {
	id := t.register(p, MethodUIPrompt)
	p.other = other
	message := q.text
	if !other && len(q.options) > 0 {
		labels := make([]string, len(q.options))
		for i, opt := range q.options {
			labels[i] = opt.label
		}
		message += "\nOptions: " + strings.Join(labels, ", ")
	}
	o := request(id, MethodUIPrompt, 256+len(message))
	o.str("run_id", p.runID)
	title := q.header
	if title == "" {
		title = "Question"
	}
	o.str("title", title)
	o.str("message", message)
	o.str("default_value", "")
	o.boolean("multiline", false)
	o.boolean("secret", false)
	t.questionFields(&o, p, q)
	return o.endNotification()
}

func (t *Translator) questionFields(o *w, p *pendingReq, q question) {
	o.strIf("header", q.header)
	o.str("kind", KindQuestion)
	o.str("tool", p.tool)
	o.strOrNull("tool_call_id", p.toolUseID)
	o.int("question_index", int64(p.qi))
	o.int("question_count", int64(len(p.questions)))
}

// FromUI takes the UI's response (or error response) to a runtime → UI
// request. A valid answer produces the CLI's control_response (or the
// next question's request); an answer to an unknown or settled id, or of
// the wrong shape, produces ui.response.rejected and nothing for the CLI
// (a wrongly shaped answer leaves the request open, to be answered again).
// An error response declines the request.
func (t *Translator) FromUI(m jsonrpc.Message, now int64, out *Output) {
	id := m.ID
	p, state := t.reqs.Get(id)
	if state != jsonrpc.IDOpen {
		reason := "no runtime request has the id " + id
		if state == jsonrpc.IDSettled {
			reason = "the runtime request " + id + " was already answered, withdrawn or cancelled"
		}
		out.UI = append(out.UI, AppendResponseRejected(nil, orNull(id), CodeInvalidRequest, reason))
		return
	}
	r := t.runs[p.runID]
	if m.Kind == jsonrpc.KindErrorResponse {
		_, msg := jsonrpc.ErrorCode(m)
		t.decline(p, r, "The user interface could not answer: "+msg, now, out)
		return
	}
	res := m.Result
	reject := func(msg string) {
		out.UI = append(out.UI, AppendResponseRejected(nil, id, CodeInvalidParams, msg))
	}
	switch p.method {
	case MethodUIConfirm:
		ok := res.Get("ok")
		if ok.Type != gjson.True && ok.Type != gjson.False {
			reject("result.ok must be a boolean")
			return
		}
		reason := res.Get("reason")
		if reason.Exists() && reason.Type != gjson.String && reason.Type != gjson.Null {
			reject("result.reason must be a string")
			return
		}
		if ok.Type == gjson.False {
			msg := reason.Str
			if msg == "" {
				msg = mapping.DefaultDenyMessage
				if p.kind == KindPlan {
					msg = "The user rejected the plan."
				}
			}
			t.decline(p, r, msg, now, out)
			return
		}
		a := mapping.Allow{ToolUseID: p.toolUseID}
		switch {
		case p.kind == KindPlan:
			a.UpdatedPermissions = `[{"type":"setMode","mode":"default","destination":"session"}]`
		case res.Get("remember").Type == gjson.True && p.suggest != "" && p.suggest != "[]":
			a.UpdatedPermissions = p.suggest
		}
		out.CLI = append(out.CLI, mapping.AppendAllow(nil, p.cliID, a))
		t.done(p, r, PermAllowed, "", now, out)
	case MethodUIPick:
		ids := res.Get("ids")
		if !ids.IsArray() {
			reject("result.ids must be an array of strings")
			return
		}
		var picked []string
		other, bad := false, ""
		ids.ForEach(func(_, v gjson.Result) bool {
			if v.Type != gjson.String || !slices.Contains(p.items, v.Str) {
				bad = v.Raw
				return false
			}
			if v.Str == OtherItemID {
				other = true
			} else if !slices.Contains(picked, v.Str) {
				picked = append(picked, v.Str)
			}
			return true
		})
		if bad != "" {
			reject("result.ids holds " + bad + ", which is not one of the items offered")
			return
		}
		q := p.questions[p.qi]
		if len(picked) > 1 && !q.multi {
			reject("result.ids picks more than one item of a single-choice question")
			return
		}
		if len(picked) == 0 && !other {
			t.decline(p, r, "The user declined to answer.", now, out)
			return
		}
		labels := make([]string, 0, len(picked))
		for _, id := range picked {
			n, _ := strconv.Atoi(id)
			labels = append(labels, q.options[n-1].label)
		}
		if other {
			p.picked = labels
			out.UI = append(out.UI, t.prompt(p, q, true))
			return
		}
		t.answer(p, r, strings.Join(labels, ","), now, out)
	case MethodUIPrompt:
		v := res.Get("value")
		if v.Type != gjson.String && v.Type != gjson.Null {
			reject("result.value must be a string or null")
			return
		}
		text := strings.TrimSpace(v.Str)
		if v.Type == gjson.Null || text == "" {
			t.decline(p, r, "The user declined to answer.", now, out)
			return
		}
		if p.other && len(p.picked) > 0 {
			text = strings.Join(p.picked, ",") + "," + text
		}
		p.picked = nil
		t.answer(p, r, text, now, out)
	}
}

func orNull(id string) string {
	if id == "" {
		return "null"
	}
	return id
}

// answer records the current question's answer and asks the next one, or
// allows the tool with every answer.
func (t *Translator) answer(p *pendingReq, r *run, text string, now int64, out *Output) {
	p.answers = append(p.answers, text)
	p.qi++
	if p.qi < len(p.questions) {
		out.UI = append(out.UI, t.ask(p))
		return
	}
	ans := []byte{'{'}
	for i, q := range p.questions {
		if i > 0 {
			ans = append(ans, ',')
		}
		ans = jsonw.String(ans, q.text)
		ans = append(ans, ':')
		ans = jsonw.String(ans, p.answers[i])
	}
	ans = append(ans, '}')
	input, err := sjson.SetRawBytes([]byte(p.input), "answers", ans)
	if err != nil {
		input = []byte(p.input)
	}
	out.CLI = append(out.CLI, mapping.AppendAllow(nil, p.cliID, mapping.Allow{UpdatedInput: string(input), ToolUseID: p.toolUseID}))
	t.done(p, r, PermAllowed, "", now, out)
}

// decline denies the request with msg.
func (t *Translator) decline(p *pendingReq, r *run, msg string, now int64, out *Output) {
	out.CLI = append(out.CLI, mapping.AppendDeny(nil, p.cliID, mapping.Deny{Message: msg, ToolUseID: p.toolUseID}))
	t.done(p, r, PermDenied, msg, now, out)
}

// done settles an answered request: permission event, and the run back to
// running when nothing else waits for the UI.
func (t *Translator) done(p *pendingReq, r *run, state, reason string, now int64, out *Output) {
	t.forget(p)
	if r == nil || Terminal(r.status) {
		return
	}
	x := t.event(r, EventPermission, 128)
	t.permFields(&x.w, p, state)
	x.strIf("reason", reason)
	out.UI = append(out.UI, x.done(now))
	t.resume(r, out)
}

// resume puts an awaiting_ui run back to running once no request of it is
// open.
func (t *Translator) resume(r *run, out *Output) {
	if r.status != StatusAwaitingUI {
		return
	}
	for _, q := range t.byCLI {
		if q.runID == r.id {
			return
		}
	}
	t.setStatus(r, StatusRunning, out)
}

func (t *Translator) forget(p *pendingReq) {
	t.reqs.Take(p.uiID)
	delete(t.byCLI, p.cliID)
}

// settle ends a request the UI did not answer: ui.request.cancelled, and,
// when events says so and the run may still emit, a permission event.
func (t *Translator) settle(p *pendingReq, reason string, events bool, now int64, out *Output) {
	t.forget(p)
	out.UI = append(out.UI, uiRequestCancelled(p.uiID, p.runID, reason))
	r := t.runs[p.runID]
	if r == nil || Terminal(r.status) || !events {
		return
	}
	goesOn := reason == ReasonWithdrawn || reason == ReasonResolvedByCLI
	state := PermCancelled
	if goesOn {
		state = PermWithdrawn
	}
	x := t.event(r, EventPermission, 128)
	t.permFields(&x.w, p, state)
	x.str("reason", reason)
	out.UI = append(out.UI, x.done(now))
	if goesOn {
		// The run goes on without the UI's answer; otherwise its end
		// follows at once.
		t.resume(r, out)
	}
}

// settleRun settles every open request of a run.
func (t *Translator) settleRun(runID, reason string, events bool, now int64, out *Output) {
	for _, p := range t.pendingInOrder() {
		if p.runID == runID {
			t.settle(p, reason, events, now, out)
		}
	}
}
