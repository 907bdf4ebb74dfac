package rpc

import (
	"math"
	"slices"
	"strings"

	"github.com/ccbridge/ccbridge/mapping"
	"github.com/tidwall/gjson"
)

// FromCLI translates one routed CLI event. Events of the current turn
// become agent.event lines of the run that owns it (none once that run is
// cancelled); can_use_tool becomes a ui.*.request (or an answer to the
// CLI at once when the UI cannot ask); the turn's result ends the run
// with final, run.context, run.diagnostics and run.status. now is Unix
// milliseconds.
//
// CLI requests that no dialect shows (hook_callback, elicitation, …) are
// not answered here: the adapter answers them with mapping.AppendAutoReply.
// Nor are the control_response lines to ccbridge's own control requests.
func (t *Translator) FromCLI(e mapping.Event, now int64, out *Output) {
	if e.SessionID != "" && e.SessionID != t.sessionID {
		t.sessionID = strings.Clone(e.SessionID)
	}
	switch e.Kind {
	case mapping.KindSystemInit:
		t.systemInit(e.Body)
		return
	case mapping.KindStatus:
		if m := e.Get("permissionMode"); m.Type == gjson.String {
			t.meta.PermissionMode = strings.Clone(m.Raw)
		}
	case mapping.KindResult:
		t.result(&e, now, out)
		return
	case mapping.KindCanUseTool:
		t.canUseTool(&e, now, out)
		return
	case mapping.KindControlCancelRequest:
		if p := t.byCLI[e.RequestID]; p != nil {
			t.settle(p, ReasonWithdrawn, true, now, out)
		}
		return
	}
	r := t.live()
	if r == nil {
		return
	}
	switch e.Kind {
	case mapping.KindStatus:
		t.status(r, &e, now, out)
	case mapping.KindAPIRetry:
		t.apiRetry(r, &e, now, out)
	case mapping.KindTaskStarted, mapping.KindTaskProgress, mapping.KindTaskUpdated, mapping.KindTaskNotification:
		t.task(r, &e, now, out)
	case mapping.KindToolProgress:
		x := t.event(r, EventToolProgress, 96)
		x.str("tool", e.ToolName)
		x.strOrNull("tool_call_id", e.ParentToolUseID)
		x.rawIf("elapsed_seconds", e.Get("elapsed_time_seconds"))
		out.UI = append(out.UI, x.done(now))
	case mapping.KindMessageStart:
		t.messageStart(r, &e, now, out)
	case mapping.KindMessageDelta:
		if c := t.call; c != nil && e.ParentToolUseID == "" {
			if s := e.Body.Get("delta.stop_reason"); s.Exists() {
				c.stop = strings.Clone(s.Raw)
			}
			c.usage(e.Body.Get("usage"))
		}
	case mapping.KindMessageStop:
		t.messageStop(r, &e, now, out)
	case mapping.KindTextDelta:
		out.UI = append(out.UI, t.delta(r, EventTextDelta, &e, now))
	case mapping.KindThinkingDelta:
		out.UI = append(out.UI, t.delta(r, EventReasoningDelta, &e, now))
	case mapping.KindAssistant:
		t.assistant(r, &e, now, out)
	case mapping.KindToolResult:
		t.toolResults(r, &e, now, out)
	case mapping.KindUserLocalCommand:
		if e.IsError {
			x := t.event(r, EventError, len(e.Text)+64)
			x.str("message", e.Text)
			x.str("source", "slash_command")
			out.UI = append(out.UI, x.done(now))
		} else {
			out.UI = append(out.UI, t.slashText(r, e.Text, "", now))
		}
	case mapping.KindLocalCommandOutput:
		out.UI = append(out.UI, t.slashText(r, e.Text, "", now))
	}
}

func (t *Translator) status(r *run, e *mapping.Event, now int64, out *Output) {
	st := e.Get("status")
	switch {
	case st.Str == "requesting":
		t.requestingAt = now
	case st.Str == "compacting":
		out.UI = append(out.UI, t.compaction(r, EventCompactionStart, now, false, ""))
	case e.Get("compact_result").Exists():
		res := e.Get("compact_result")
		out.UI = append(out.UI, t.compaction(r, EventCompactionComplete, now, res.Str == "success", e.Get("compact_error").Str))
	}
}

func (t *Translator) compaction(r *run, typ string, now int64, compacted bool, errText string) []byte {
	x := t.event(r, typ, 64)
	if typ == EventCompactionComplete {
		x.boolean("compacted", compacted)
		x.strIf("error", errText)
	}
	return x.done(now)
}

// apiRetry: system/api_retry → llm.retry.
func (t *Translator) apiRetry(r *run, e *mapping.Event, now int64, out *Output) {
	status := e.Get("error_status")
	kind := "provider"
	switch {
	case status.Type != gjson.Number:
		kind = "network"
	case status.Int() == 429:
		kind = "rate_limit"
	case status.Int() == 529 || status.Int() == 503 || e.Get("error").Str == "overloaded":
		kind = "overloaded"
	case status.Int() == 408 || status.Int() == 504:
		kind = "timeout"
	}
	x := t.event(r, EventLLMRetry, 192)
	x.str("provider", Provider)
	x.str("failure_kind", kind)
	x.int("next_attempt", e.Get("attempt").Int()+1)
	x.int("max_attempts", e.Get("max_retries").Int()+1)
	x.int("delay_ms", int64(e.Get("retry_delay_ms").Num))
	x.str("delay_source", "backoff")
	if status.Type == gjson.Number {
		x.int("status", status.Int())
	}
	x.rawIf("error", e.Get("error"))
	out.UI = append(out.UI, x.done(now))
}

// taskKeys are copied from system/task_* when present.
var taskKeys = [...]string{"task_id", "description", "task_type", "subagent_type", "status", "summary", "usage", "last_tool_name", "is_backgrounded"}

func (t *Translator) task(r *run, e *mapping.Event, now int64, out *Output) {
	x := t.event(r, EventTask, 256)
	x.str("phase", strings.TrimPrefix(e.Subtype, "task_"))
	x.strOrNull("tool_call_id", e.Get("tool_use_id").Str)
	for _, k := range taskKeys {
		x.rawIf(k, e.Get(k))
	}
	if p := e.Get("patch.status"); p.Exists() && !e.Get("status").Exists() {
		x.raw("status", p.Raw)
	}
	out.UI = append(out.UI, x.done(now))
}

// delta: a text or thinking stream delta → text.delta / reasoning.delta.
func (t *Translator) delta(r *run, typ string, e *mapping.Event, now int64) []byte {
	x := t.event(r, typ, len(e.Text)+96)
	if e.TextRaw != "" {
		x.raw("content", e.TextRaw) // the CLI's JSON string, copied as is
	} else {
		x.str("content", e.Text)
	}
	x.str("message_id", e.MessageID)
	x.int("block_index", int64(e.Index))
	if e.ParentToolUseID != "" {
		x.str("parent_tool_call_id", e.ParentToolUseID)
	}
	return x.done(now)
}

func (t *Translator) slashText(r *run, text, command string, now int64) []byte {
	x := t.event(r, EventText, len(text)+64)
	x.str("content", text)
	x.str("source", "slash_command")
	x.strIf("command", command)
	return x.done(now)
}

// assistant: one assistant frame (normally one content block).
func (t *Translator) assistant(r *run, e *mapping.Event, now int64, out *Output) {
	main := e.ParentToolUseID == ""
	content := e.Body.Get("content")
	if e.LocalCommand != "" {
		// /cost, /context: a <synthetic> frame holding the command's output.
		content.ForEach(func(_, b gjson.Result) bool {
			if b.Get("type").Str == "text" {
				out.UI = append(out.UI, t.slashText(r, b.Get("text").Str, e.LocalCommand, now))
			}
			return true
		})
		return
	}
	aborted := e.Aborted
	content.ForEach(func(_, b gjson.Result) bool {
		switch typ := b.Get("type").Str; {
		case typ == "text" && e.IsError:
			// The CLI's synthetic "API Error: …" frame.
			x := t.event(r, EventError, len(b.Raw)+96)
			x.str("message", b.Get("text").Str)
			x.rawIf("api_error_status", e.Get("api_error_status"))
			x.rawIf("error", e.Get("error"))
			out.UI = append(out.UI, x.done(now))
		case typ == "text":
			text := b.Get("text").Str
			if main {
				r.text = text
			}
			x := t.event(r, EventText, len(text)+96)
			x.str("content", text)
			x.strIf("message_id", e.MessageID)
			t.parent(&x.w, e)
			if aborted {
				x.boolean("aborted", true)
			}
			out.UI = append(out.UI, x.done(now))
		case typ == "thinking" || typ == "redacted_thinking":
			text := b.Get("thinking").Str
			x := t.event(r, EventReasoning, len(text)+96)
			x.str("content", text)
			x.strIf("message_id", e.MessageID)
			t.parent(&x.w, e)
			if typ == "redacted_thinking" {
				x.boolean("redacted", true)
			}
			out.UI = append(out.UI, x.done(now))
		case mapping.IsToolUseBlock(typ):
			id, name, input := b.Get("id").Str, b.Get("name").Str, b.Get("input")
			info := toolInfo{name: strings.Clone(name), parent: strings.Clone(e.ParentToolUseID)}
			if name == "ExitPlanMode" {
				info.plan = strings.Clone(input.Get("plan").Str)
			}
			t.tools[strings.Clone(id)] = info
			x := t.event(r, EventToolCall, len(input.Raw)+128)
			x.str("tool", name)
			if input.Exists() {
				x.raw("args", input.Raw)
			} else {
				x.raw("args", "{}")
			}
			x.str("tool_call_id", id)
			if dn := displayName(e, id); dn != "" {
				x.str("display_name", dn)
			}
			t.parent(&x.w, e)
			out.UI = append(out.UI, x.done(now))
		}
		return true
	})
}

// displayName finds an MCP tool's display name in tool_use_meta.
func displayName(e *mapping.Event, id string) string {
	name := ""
	e.Get("tool_use_meta").ForEach(func(_, m gjson.Result) bool {
		if m.Get("id").Str == id {
			name = m.Get("display_name").Str
			return false
		}
		return true
	})
	return name
}

func (t *Translator) parent(x *w, e *mapping.Event) {
	if e.ParentToolUseID != "" {
		x.str("parent_tool_call_id", e.ParentToolUseID)
	}
}

// toolResults: a user frame with tool_result blocks → tool_result per
// block. The frame's structured tool_use_result (an object or array) goes
// on the first as "structured"; content blocks that are not text (images)
// as "content". A UI request still open for that tool is withdrawn: the
// CLI decided without us.
func (t *Translator) toolResults(r *run, e *mapping.Event, now int64, out *Output) {
	first := true
	e.Body.Get("content").ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").Str != "tool_result" {
			return true
		}
		id := b.Get("tool_use_id").Str
		for _, p := range t.pendingInOrder() {
			if p.toolUseID != "" && p.toolUseID == id {
				t.settle(p, ReasonResolvedByCLI, true, now, out)
			}
		}
		content := b.Get("content")
		text := mapping.ToolResultText(content)
		info := t.tools[id]
		x := t.event(r, EventToolResult, len(text)+len(b.Raw)/4+128)
		x.str("tool", info.name)
		x.str("result", text)
		x.str("tool_call_id", id)
		x.boolean("is_error", b.Get("is_error").Type == gjson.True)
		if content.IsArray() && hasNonText(content) {
			x.raw("content", content.Raw)
		}
		if first {
			if s := e.Get("tool_use_result"); s.IsObject() || s.IsArray() {
				x.raw("structured", s.Raw)
			}
			first = false
		}
		t.parent(&x.w, e)
		out.UI = append(out.UI, x.done(now))
		return true
	})
}

func hasNonText(content gjson.Result) bool {
	found := false
	content.ForEach(func(_, c gjson.Result) bool {
		if c.Get("type").Str != "text" {
			found = true
			return false
		}
		return true
	})
	return found
}

// llmCall is one main-thread model call, from message_start to
// message_stop.
type llmCall struct {
	id, model            string
	requestAt, startAt   int64
	ttft                 int64
	input, output        int64
	cacheRead, cacheMake int64
	stop                 string // raw stop_reason
	seq                  int
}

// usage reads a Messages API usage object; absent fields keep their value.
func (c *llmCall) usage(u gjson.Result) {
	if v := u.Get("input_tokens"); v.Exists() {
		c.input = v.Int()
	}
	if v := u.Get("output_tokens"); v.Exists() {
		c.output = v.Int()
	}
	if v := u.Get("cache_read_input_tokens"); v.Exists() {
		c.cacheRead = v.Int()
	}
	if v := u.Get("cache_creation_input_tokens"); v.Exists() {
		c.cacheMake = v.Int()
	}
}

// contextTokens is what the call left in the context: its whole input
// plus its output.
func (c *llmCall) contextTokens() int64 { return c.input + c.cacheRead + c.cacheMake + c.output }

func (t *Translator) messageStart(r *run, e *mapping.Event, now int64, out *Output) {
	if e.ParentToolUseID != "" {
		return // subagents do not stream; nothing to measure
	}
	msg := e.Body.Get("message")
	c := &llmCall{id: strings.Clone(e.MessageID), model: strings.Clone(msg.Get("model").Str), startAt: now}
	c.ttft = e.Get("ttft_ms").Int()
	c.requestAt = t.requestingAt
	if c.requestAt == 0 || c.requestAt > now {
		c.requestAt = now - c.ttft
	}
	t.requestingAt = 0
	c.usage(msg.Get("usage"))
	r.steps++
	c.seq = r.steps - 1
	t.call = c
	x := t.event(r, EventStepStart, 96)
	x.str("step_id", c.id)
	x.str("title", c.model)
	x.int("step_number", int64(r.steps))
	out.UI = append(out.UI, x.done(now))
}

func (t *Translator) messageStop(r *run, e *mapping.Event, now int64, out *Output) {
	c := t.call
	if c == nil || e.ParentToolUseID != "" {
		return
	}
	t.call = nil
	r.calls[c.model]++
	r.last = c
	status := "completed"
	if e.Get("abandoned_blocks").Exists() {
		status = "error"
	}
	x := t.event(r, EventStepComplete, 96)
	x.str("step_id", c.id)
	x.str("status", status)
	x.int("duration_ms", max(now-c.startAt, 0))
	out.UI = append(out.UI, x.done(now))
	if t.opt.Diagnostics {
		out.UI = append(out.UI, llmCallLine(r.id, c, now))
	}
}

// llmCallLine builds run.diagnostics kind llm_call.
func llmCallLine(runID string, c *llmCall, now int64) []byte {
	o := notification(MethodRunDiagnostics, 512)
	o.str("run_id", runID)
	o.str("kind", "llm_call")
	o.obj("call")
	o.str("run_id", runID)
	o.int("seq", int64(c.seq))
	o.str("provider", Provider)
	o.str("model", c.model)
	o.str("request_ts", isoMillis(c.requestAt))
	o.str("response_ts", isoMillis(now))
	o.int("latency_ms", max(now-c.requestAt, 0))
	o.raw("stop_reason", c.stop)
	o.obj("usage")
	o.int("input_tokens", c.input)
	o.int("output_tokens", c.output)
	o.int("total_tokens", c.contextTokens())
	o.int("input_cached_tokens", c.cacheRead)
	o.int("input_cache_creation_tokens", c.cacheMake)
	o.end('}')
	o.obj("cache")
	whole := c.input + c.cacheRead + c.cacheMake
	switch {
	case c.cacheRead > 0:
		o.str("hit_state", "hit")
	case whole > 0:
		o.str("hit_state", "miss")
	default:
		o.str("hit_state", "unknown")
	}
	o.int("cache_read_tokens", c.cacheRead)
	o.int("cache_creation_tokens", c.cacheMake)
	if whole > 0 {
		o.float("cache_read_ratio", round(float64(c.cacheRead)/float64(whole), 4))
	} else {
		o.raw("cache_read_ratio", "null")
	}
	o.end('}')
	o.raw("cost_usd", "null")
	o.str("provider_meta_summary", "message_id="+c.id+" ttft_ms="+itoa(int(c.ttft)))
	o.end('}')
	return o.endNotification()
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// result ends the head turn: open requests are settled (run_ended); a
// live run gets final, run.context, the diagnostics summary and its
// terminal run.status. A cancelled run's result is swallowed.
func (t *Translator) result(e *mapping.Event, now int64, out *Output) {
	r := t.head()
	if r == nil {
		return // a result for no prompt of ours (a failed --resume prints one at once)
	}
	t.learnWindows(e)
	if !Terminal(r.status) && r.answered(e) {
		// A steer came too late for this turn: the CLI runs it as the
		// next one, and the run goes on into it.
		t.endTurn()
		return
	}
	t.settleRun(r.id, ReasonRunEnded, true, now, out)
	if !Terminal(r.status) {
		t.finish(r, e, now, out)
	}
	t.popTurn()
}

// learnWindows remembers each model's context window from a result.
func (t *Translator) learnWindows(e *mapping.Event) {
	for _, k := range [...]string{"modelUsage", "model_usage_since_last_result"} {
		e.Get(k).ForEach(func(m, u gjson.Result) bool {
			if w := u.Get("contextWindow").Int(); w > 0 {
				t.windows[strings.Clone(m.Str)] = w
			}
			return true
		})
	}
}

func (t *Translator) finish(r *run, e *mapping.Event, now int64, out *Output) {
	res := e.Get("result")
	status, reason := StatusCompleted, "normal"
	switch e.Result {
	case mapping.ResultInterrupted:
		status = StatusCancelled
	case mapping.ResultMaxTurns:
		status, reason = StatusError, "max_steps"
	case mapping.ResultAPIError:
		status, reason = StatusError, "api_error"
	case mapping.ResultBudget:
		status, reason = StatusError, "budget"
	case mapping.ResultStructuredOutput:
		status, reason = StatusError, "structured_output"
	case mapping.ResultError:
		status, reason = StatusError, "error"
	}
	message := ""
	if status != StatusCompleted {
		message = res.Str
		if errs := e.Get("errors"); message == "" && errs.IsArray() {
			var parts []string
			errs.ForEach(func(_, s gjson.Result) bool {
				parts = append(parts, s.Str)
				return true
			})
			message = strings.Join(parts, "; ")
		}
		if message == "" {
			message = e.Subtype
		}
	}
	if status != StatusCancelled {
		content := r.text
		if res.Type == gjson.String {
			content = res.Str
		}
		x := t.event(r, EventFinal, len(content)+256)
		x.str("content", content)
		x.str("termination_reason", reason)
		x.boolean("is_error", e.IsError)
		x.str("subtype", e.Subtype)
		x.rawIf("terminal_reason", e.Get("terminal_reason"))
		x.rawIf("stop_reason", e.Get("stop_reason"))
		x.rawIf("num_turns", e.Get("num_turns"))
		x.rawIf("duration_ms", e.Get("duration_ms"))
		x.rawIf("total_cost_usd", e.Get("total_cost_usd"))
		x.rawIf("usage", e.Get("usage"))
		x.rawIf("permission_denials", e.Get("permission_denials"))
		x.rawIf("structured_output", e.Get("structured_output"))
		if e.LocalCommand != "" {
			x.str("local_command", e.LocalCommand)
		}
		out.UI = append(out.UI, x.done(now))
		if c := r.last; c != nil {
			if w := t.windows[c.model]; w > 0 {
				left := 100 * float64(w-c.contextTokens()) / float64(w)
				o := notification(MethodRunContext, 64)
				o.str("run_id", r.id)
				o.float("context_left_percent", round(min(max(left, 0), 100), 1))
				o.int("context_tokens", c.contextTokens())
				o.int("context_window", w)
				out.UI = append(out.UI, o.endNotification())
			}
		}
		if t.opt.Diagnostics {
			out.UI = append(out.UI, runSummaryLine(r, e))
		}
	}
	t.end(r, status, message, out)
}

// runSummaryLine builds run.diagnostics kind run_summary from the CLI's
// per-turn usage (model_usage_since_last_result: every model call of the
// turn, subagents included) and the calls ccbridge counted.
func runSummaryLine(r *run, e *mapping.Event) []byte {
	type agg struct {
		calls, in, out, cached, created int64
		cost                            float64
		costKnown                       bool
	}
	var models []string
	byModel := map[string]*agg{}
	get := func(m string) *agg {
		if a, ok := byModel[m]; ok {
			return a
		}
		a := &agg{}
		byModel[m] = a
		models = append(models, m)
		return a
	}
	if since := e.Get("model_usage_since_last_result"); since.IsObject() {
		since.ForEach(func(m, u gjson.Result) bool {
			a := get(m.Str)
			a.in, a.out = u.Get("inputTokens").Int(), u.Get("outputTokens").Int()
			a.cached, a.created = u.Get("cacheReadInputTokens").Int(), u.Get("cacheCreationInputTokens").Int()
			if c := u.Get("costUSD"); c.Type == gjson.Number {
				a.cost, a.costKnown = c.Num, true
			}
			return true
		})
	} else if u := e.Get("usage"); u.IsObject() && r.last != nil {
		a := get(r.last.model)
		a.in, a.out = u.Get("input_tokens").Int(), u.Get("output_tokens").Int()
		a.cached, a.created = u.Get("cache_read_input_tokens").Int(), u.Get("cache_creation_input_tokens").Int()
	}
	for m, n := range r.calls {
		if _, ok := byModel[m]; !ok {
			get(m)
		}
		byModel[m].calls = int64(n)
	}
	slices.Sort(models)
	var total agg
	costKnown := false
	for _, m := range models {
		a := byModel[m]
		total.calls += a.calls
		total.in += a.in
		total.out += a.out
		total.cached += a.cached
		total.created += a.created
		if a.costKnown {
			total.cost += a.cost
			costKnown = true
		}
	}
	o := notification(MethodRunDiagnostics, 512+128*len(models))
	o.str("run_id", r.id)
	o.str("kind", "run_summary")
	o.obj("summary")
	o.int("total_calls", total.calls)
	o.int("total_tokens", total.in+total.out+total.cached+total.created)
	o.int("total_input_tokens", total.in)
	o.int("total_output_tokens", total.out)
	o.int("total_cached_input_tokens", total.cached)
	o.int("total_cache_creation_tokens", total.created)
	if costKnown {
		o.float("total_cost_usd", total.cost)
	} else {
		o.raw("total_cost_usd", "null")
	}
	o.obj("by_model")
	for _, m := range models {
		a := byModel[m]
		o.objEsc(m)
		o.int("calls", a.calls)
		o.int("input_tokens", a.in)
		o.int("output_tokens", a.out)
		o.int("cached_input_tokens", a.cached)
		o.int("cache_creation_tokens", a.created)
		o.int("total_tokens", a.in+a.out+a.cached+a.created)
		if a.costKnown {
			o.float("cost_usd", a.cost)
		} else {
			o.raw("cost_usd", "null")
		}
		o.end('}')
	}
	o.end('}')
	o.end('}')
	return o.endNotification()
}
