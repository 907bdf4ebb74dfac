package rpc

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/jsonrpc"
	"github.com/tidwall/gjson"
)

// CLI lines, shaped as the CLI writes them (from testdata/transcripts).
const (
	sid              = "5c3bb572-859f-4ecf-9616-2b9d21f1b011"
	lineStatus       = `{"type":"system","subtype":"status","status":"requesting","session_id":"` + sid + `"}`
	lineMsgStart     = `{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-opus-5-5","content":[],"usage":{"input_tokens":1000,"output_tokens":1,"cache_read_input_tokens":3000,"cache_creation_input_tokens":0}}},"session_id":"` + sid + `","parent_tool_use_id":null,"ttft_ms":26,"api_message_id":"msg_1"}`
	lineDelta        = `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello "}},"session_id":"` + sid + `","parent_tool_use_id":null,"api_message_id":"msg_1"}`
	lineText         = `{"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-opus-5-5","content":[{"type":"text","text":"Hello world"}]},"parent_tool_use_id":null,"session_id":"` + sid + `"}`
	lineToolUse      = `{"type":"assistant","message":{"id":"msg_1","model":"claude-opus-5-5","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"touch x","description":"Touch x"}}]},"parent_tool_use_id":null,"session_id":"` + sid + `"}`
	lineMsgDelta     = `{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":20}},"session_id":"` + sid + `","parent_tool_use_id":null,"api_message_id":"msg_1"}`
	lineMsgStop      = `{"type":"stream_event","event":{"type":"message_stop"},"session_id":"` + sid + `","parent_tool_use_id":null,"api_message_id":"msg_1"}`
	lineResult       = `{"type":"result","subtype":"success","is_error":false,"result":"Hello world","session_id":"` + sid + `","terminal_reason":"completed","total_cost_usd":0.5,"model_usage_since_last_result":{"claude-opus-5-5":{"inputTokens":1000,"outputTokens":20,"cacheReadInputTokens":3000,"cacheCreationInputTokens":0,"costUSD":0.5,"contextWindow":200000}}}`
	lineResultAPIErr = `{"type":"result","subtype":"success","is_error":true,"result":"API Error: 400 nope","session_id":"` + sid + `","terminal_reason":"api_error","api_error_status":400}`
	lineCanUse       = `{"type":"control_request","request_id":"cli-req-1","request":{"subtype":"can_use_tool","tool_name":"Bash","display_name":"Bash","input":{"command":"touch x","description":"Touch x"},"description":"Touch x","permission_suggestions":[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"touch x"}],"behavior":"allow","destination":"localSettings"}],"tool_use_id":"toolu_1"}}`
	lineCancelReq    = `{"type":"control_cancel_request","request_id":"cli-req-1"}`
	lineToolResult   = `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"<tool_use_error>denied</tool_use_error>","is_error":true}]},"parent_tool_use_id":null,"session_id":"` + sid + `","tool_use_result":"Error: denied"}`
	lineAsk          = `{"type":"control_request","request_id":"cli-ask-1","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","display_name":"AskUserQuestion","input":{"questions":[{"question":"Color?","header":"Color","options":[{"label":"Red","description":"Warm"},{"label":"Blue","description":"Cool"}],"multiSelect":false},{"question":"Sizes?","header":"Size","options":[{"label":"S"},{"label":"L"}],"multiSelect":true}]},"tool_use_id":"toolu_2","requires_user_interaction":true}}`
)

type harness struct {
	t   *testing.T
	tr  *Translator
	out Output
	now int64
}

func newHarness(t *testing.T, opt Options) *harness {
	return &harness{t: t, tr: New(opt), now: 1_000_000}
}

// cli feeds CLI lines and returns what they produced.
func (h *harness) cli(lines ...string) Output {
	h.t.Helper()
	h.out.Reset()
	for _, l := range lines {
		h.now += 10
		h.tr.FromCLI(mapping.Route([]byte(l)), h.now, &h.out)
	}
	return h.check()
}

// ui feeds one UI response line.
func (h *harness) ui(line string) Output {
	h.t.Helper()
	h.out.Reset()
	h.now += 10
	h.tr.FromUI(jsonrpc.Parse([]byte(line)), h.now, &h.out)
	return h.check()
}

func (h *harness) check() Output {
	h.t.Helper()
	for _, l := range append(append([][]byte(nil), h.out.UI...), h.out.CLI...) {
		if !json.Valid(l) || strings.ContainsRune(string(l), '\n') {
			h.t.Fatalf("bad output line: %s", l)
		}
	}
	return Output{UI: append([][]byte(nil), h.out.UI...), CLI: append([][]byte(nil), h.out.CLI...)}
}

func (h *harness) begin(runID string) Output {
	h.out.Reset()
	h.tr.BeginRun(runID, &h.out)
	h.tr.SentPrompt(runID)
	return h.check()
}

func methods(lines [][]byte) []string {
	var ms []string
	for _, l := range lines {
		m := gjson.GetBytes(l, "method").Str
		if m == MethodAgentEvent {
			m += ":" + gjson.GetBytes(l, "params.event.type").Str
		}
		if m == MethodRunStatus {
			m += ":" + gjson.GetBytes(l, "params.status").Str
		}
		ms = append(ms, m)
	}
	return ms
}

func wantMethods(t *testing.T, lines [][]byte, want ...string) {
	t.Helper()
	if got := strings.Join(methods(lines), " "); got != strings.Join(want, " ") {
		t.Errorf("lines:\n got %s\nwant %s", got, strings.Join(want, " "))
	}
}

func TestRunEventsSeqAndEnd(t *testing.T) {
	h := newHarness(t, Options{Diagnostics: true})
	wantMethods(t, h.begin("run-1").UI, "run.status:running")
	out := h.cli(lineStatus, lineMsgStart, lineDelta, lineText, lineMsgDelta, lineMsgStop, lineResult)
	wantMethods(t, out.UI,
		"agent.event:step_start", "agent.event:text.delta", "agent.event:text", "agent.event:step_complete",
		"run.diagnostics", "agent.event:final", "run.context", "run.diagnostics", "run.status:completed")
	for i, l := range out.UI[:4] {
		if got := gjson.GetBytes(l, "params.seq").Int(); got != int64(i) {
			t.Errorf("event %d has seq %d", i, got)
		}
	}
	ctx := out.UI[6]
	// 1000 + 3000 + 20 of 200000 used: 97.99 % left, rounded to 98.
	if p := gjson.GetBytes(ctx, "params.context_left_percent").Num; p != 98 {
		t.Errorf("context_left_percent %v: %s", p, ctx)
	}
	call := gjson.GetBytes(out.UI[4], "params.call")
	if call.Get("usage.input_cached_tokens").Int() != 3000 || call.Get("cache.hit_state").Str != "hit" ||
		call.Get("cache.cache_read_ratio").Num != 0.75 || call.Get("latency_ms").Int() != 50 || call.Get("stop_reason").Str != "end_turn" {
		t.Errorf("llm_call: %s", out.UI[4])
	}
	sum := gjson.GetBytes(out.UI[7], "params.summary")
	if sum.Get("total_calls").Int() != 1 || sum.Get("total_cost_usd").Num != 0.5 || sum.Get("by_model.claude-opus-5-5.cached_input_tokens").Int() != 3000 {
		t.Errorf("run_summary: %s", out.UI[7])
	}
	if final := out.UI[5]; gjson.GetBytes(final, "params.event.content").Str != "Hello world" ||
		gjson.GetBytes(final, "params.event.termination_reason").Str != "normal" {
		t.Errorf("final: %s", final)
	}
	if st, ok := h.tr.RunStatus("run-1"); !ok || st != StatusCompleted || h.tr.ActiveRun() != "" || h.tr.Busy() {
		t.Errorf("after the result: %s %v active %q busy %v", st, ok, h.tr.ActiveRun(), h.tr.Busy())
	}
}

func TestNoDiagnosticsWithoutTheOption(t *testing.T) {
	h := newHarness(t, Options{})
	h.begin("run-1")
	for _, m := range methods(h.cli(lineStatus, lineMsgStart, lineMsgDelta, lineMsgStop, lineResult).UI) {
		if m == MethodRunDiagnostics {
			t.Fatal("run.diagnostics without Options.Diagnostics")
		}
	}
}

func TestAPIErrorEndsRunWithError(t *testing.T) {
	h := newHarness(t, Options{})
	h.begin("run-1")
	out := h.cli(lineResultAPIErr)
	wantMethods(t, out.UI, "agent.event:final", "run.status:error")
	if m := gjson.GetBytes(out.UI[1], "params.message").Str; m != "API Error: 400 nope" {
		t.Errorf("message %q", m)
	}
	if r := gjson.GetBytes(out.UI[0], "params.event.termination_reason").Str; r != "api_error" {
		t.Errorf("termination_reason %q", r)
	}
}

func TestCancelledRunEmitsNothingMore(t *testing.T) {
	h := newHarness(t, Options{})
	h.begin("run-1")
	h.cli(lineMsgStart, lineDelta)
	h.out.Reset()
	res := h.tr.CancelRun("run-1", "stop", &h.out)
	if !res.OK || !res.Interrupt || res.Status != StatusCancelled {
		t.Fatalf("CancelRun: %+v", res)
	}
	wantMethods(t, h.check().UI, "run.status:cancelled")
	if !h.tr.Draining() || h.tr.ActiveRun() != "" {
		t.Errorf("draining %v active %q", h.tr.Draining(), h.tr.ActiveRun())
	}
	// The rest of the cancelled turn, its result included, is dropped.
	if out := h.cli(lineDelta, lineText, lineMsgStop, lineResult); len(out.UI) != 0 {
		t.Errorf("lines after cancelled: %s", out.UI)
	}
	if h.tr.Busy() {
		t.Error("the turn did not end at its result")
	}
	// Idempotent; a finished run is left alone; an unknown one is unknown.
	h.out.Reset()
	if again := h.tr.CancelRun("run-1", "", &h.out); !again.OK || again.Interrupt || len(h.out.UI) != 0 {
		t.Errorf("second cancel: %+v %s", again, h.out.UI)
	}
	h.begin("run-2")
	h.cli(lineResult)
	if r := h.tr.CancelRun("run-2", "", &h.out); r.OK || r.Status != StatusCompleted || !r.Known {
		t.Errorf("cancel of a completed run: %+v", r)
	}
	if r := h.tr.CancelRun("run-9", "", &h.out); r.Known {
		t.Errorf("cancel of an unknown run: %+v", r)
	}
}

func TestQueuedRunGetsTheNextTurn(t *testing.T) {
	h := newHarness(t, Options{})
	h.begin("run-1")
	h.tr.CancelRun("run-1", "", &h.out)
	h.begin("run-2") // sent while run-1's turn drains
	if out := h.cli(lineDelta, lineResult); len(out.UI) != 0 {
		t.Fatalf("run-1's rest went out: %s", out.UI)
	}
	out := h.cli(lineDelta, lineResult)
	wantMethods(t, out.UI, "agent.event:text.delta", "agent.event:final", "run.status:completed")
	if gjson.GetBytes(out.UI[0], "params.run_id").Str != "run-2" || gjson.GetBytes(out.UI[0], "params.seq").Int() != 0 {
		t.Errorf("run-2's first event: %s", out.UI[0])
	}
}

func TestHeldRunCancelNeedsNoInterrupt(t *testing.T) {
	h := newHarness(t, Options{})
	h.tr.BeginRun("run-1", &h.out)
	if h.tr.Held() != "run-1" {
		t.Fatal("not held")
	}
	if r := h.tr.CancelRun("run-1", "", &h.out); !r.OK || r.Interrupt || h.tr.Held() != "" {
		t.Errorf("cancel of a held run: %+v held %q", r, h.tr.Held())
	}
}

func askBash(t *testing.T, h *harness) (uiID string) {
	t.Helper()
	h.begin("run-1")
	out := h.cli(lineToolUse, lineCanUse)
	wantMethods(t, out.UI, "agent.event:tool_call", "agent.event:permission", "run.status:awaiting_ui", MethodUIConfirm)
	req := out.UI[3]
	p := gjson.GetBytes(req, "params")
	if p.Get("run_id").Str != "run-1" || p.Get("tool").Str != "Bash" || p.Get("message").Str != "touch x" ||
		p.Get("danger_level").Str != "danger" || !p.Get("allow_remember").Bool() || p.Get("args.command").Str != "touch x" {
		t.Errorf("ui.confirm.request: %s", req)
	}
	if len(out.CLI) != 0 {
		t.Errorf("the CLI was answered before the UI: %s", out.CLI)
	}
	return gjson.GetBytes(req, "id").Str
}

func TestConfirmAllowRememberAndDeny(t *testing.T) {
	h := newHarness(t, Options{})
	id := askBash(t, h)
	out := h.ui(`{"jsonrpc":"2.0","id":"` + id + `","result":{"ok":true,"remember":true}}`)
	wantMethods(t, out.UI, "agent.event:permission", "run.status:running")
	if len(out.CLI) != 1 || gjson.GetBytes(out.CLI[0], "response.response.behavior").Str != "allow" ||
		gjson.GetBytes(out.CLI[0], "response.request_id").Str != "cli-req-1" ||
		gjson.GetBytes(out.CLI[0], "response.response.updatedPermissions.0.type").Str != "addRules" ||
		gjson.GetBytes(out.CLI[0], "response.response.toolUseID").Str != "toolu_1" {
		t.Errorf("allow: %s", out.CLI)
	}

	h = newHarness(t, Options{})
	id = askBash(t, h)
	out = h.ui(`{"jsonrpc":"2.0","id":"` + id + `","result":{"ok":false,"reason":"no thanks"}}`)
	if len(out.CLI) != 1 || gjson.GetBytes(out.CLI[0], "response.response.behavior").Str != "deny" ||
		gjson.GetBytes(out.CLI[0], "response.response.message").Str != "no thanks" {
		t.Errorf("deny: %s", out.CLI)
	}
	if st := gjson.GetBytes(out.UI[0], "params.event.state").Str; st != PermDenied {
		t.Errorf("permission state %q", st)
	}
}

func TestAnswersToUnknownSettledOrMalformed(t *testing.T) {
	h := newHarness(t, Options{})
	id := askBash(t, h)
	// Wrong shape: refused, still open.
	out := h.ui(`{"jsonrpc":"2.0","id":"` + id + `","result":{"ok":"yes"}}`)
	wantMethods(t, out.UI, MethodUIResponseReject)
	if len(out.CLI) != 0 || h.tr.PendingRequests() != 1 {
		t.Fatalf("a malformed answer reached the CLI or closed the request: %s", out.CLI)
	}
	h.ui(`{"jsonrpc":"2.0","id":"` + id + `","result":{"ok":true}}`)
	// Again: settled.
	out = h.ui(`{"jsonrpc":"2.0","id":"` + id + `","result":{"ok":true}}`)
	if len(out.CLI) != 0 || !strings.Contains(gjson.GetBytes(out.UI[0], "params.error.message").Str, "already") {
		t.Errorf("second answer: %s %s", out.UI, out.CLI)
	}
	// Never asked.
	out = h.ui(`{"jsonrpc":"2.0","id":17,"result":{"ok":true}}`)
	if len(out.CLI) != 0 || gjson.GetBytes(out.UI[0], "params.id").Raw != "17" ||
		gjson.GetBytes(out.UI[0], "params.error.code").Int() != CodeInvalidRequest {
		t.Errorf("unknown id: %s", out.UI)
	}
}

func TestUIErrorResponseDenies(t *testing.T) {
	h := newHarness(t, Options{})
	id := askBash(t, h)
	out := h.ui(`{"jsonrpc":"2.0","id":"` + id + `","error":{"code":-32601,"message":"no dialogs here"}}`)
	if len(out.CLI) != 1 || !strings.Contains(gjson.GetBytes(out.CLI[0], "response.response.message").Str, "no dialogs here") {
		t.Errorf("error response: %s", out.CLI)
	}
}

func TestWithdrawnAndResolvedByCLI(t *testing.T) {
	h := newHarness(t, Options{})
	id := askBash(t, h)
	out := h.cli(lineCancelReq)
	wantMethods(t, out.UI, MethodUIRequestCanceled, "agent.event:permission", "run.status:running")
	if gjson.GetBytes(out.UI[0], "params.id").Str != id || gjson.GetBytes(out.UI[0], "params.reason").Str != ReasonWithdrawn {
		t.Errorf("cancelled: %s", out.UI[0])
	}
	if o := h.ui(`{"jsonrpc":"2.0","id":"` + id + `","result":{"ok":true}}`); len(o.CLI) != 0 {
		t.Errorf("an answer to a withdrawn request reached the CLI: %s", o.CLI)
	}

	h = newHarness(t, Options{})
	askBash(t, h)
	out = h.cli(lineToolResult)
	wantMethods(t, out.UI, MethodUIRequestCanceled, "agent.event:permission", "run.status:running", "agent.event:tool_result")
	if r := gjson.GetBytes(out.UI[3], "params.event"); r.Get("result").Str != "denied" || !r.Get("is_error").Bool() || r.Get("tool").Str != "Bash" {
		t.Errorf("tool_result: %s", out.UI[3])
	}
}

func TestRunEndAndCancelSettleRequests(t *testing.T) {
	h := newHarness(t, Options{})
	askBash(t, h)
	out := h.cli(lineResult)
	if gjson.GetBytes(out.UI[0], "params.reason").Str != ReasonRunEnded {
		t.Errorf("at the result: %s", out.UI[0])
	}

	h = newHarness(t, Options{})
	id := askBash(t, h)
	h.out.Reset()
	h.tr.CancelRun("run-1", "", &h.out)
	out = h.check()
	wantMethods(t, out.UI, MethodUIRequestCanceled, "run.status:cancelled")
	if gjson.GetBytes(out.UI[0], "params.id").Str != id || gjson.GetBytes(out.UI[0], "params.reason").Str != ReasonRunCancelled {
		t.Errorf("cancel: %s", out.UI[0])
	}
}

func TestChildExitedEndsRunsAndRequests(t *testing.T) {
	h := newHarness(t, Options{})
	askBash(t, h)
	h.out.Reset()
	h.tr.ChildExited("the CLI exited: killed", 5, &h.out)
	out := h.check()
	wantMethods(t, out.UI, MethodUIRequestCanceled, "agent.event:permission", "run.status:error")
	if gjson.GetBytes(out.UI[0], "params.reason").Str != ReasonChildExited || gjson.GetBytes(out.UI[2], "params.message").Str != "the CLI exited: killed" {
		t.Errorf("child exit: %s", out.UI)
	}
	if h.tr.Busy() || h.tr.PendingRequests() != 0 {
		t.Error("state left after the child's exit")
	}
}

func TestQuestionsPickOtherAndPrompt(t *testing.T) {
	h := newHarness(t, Options{})
	h.begin("run-1")
	out := h.cli(lineAsk)
	pick := out.UI[len(out.UI)-1]
	if gjson.GetBytes(pick, "method").Str != MethodUIPick || gjson.GetBytes(pick, "params.items.#").Int() != 3 ||
		gjson.GetBytes(pick, "params.question_count").Int() != 2 {
		t.Fatalf("pick: %s", pick)
	}
	id := gjson.GetBytes(pick, "id").Str
	// An item that was not offered, and two picks for one choice: refused.
	if o := h.ui(`{"jsonrpc":"2.0","id":"` + id + `","result":{"ids":["9"]}}`); gjson.GetBytes(o.UI[0], "method").Str != MethodUIResponseReject {
		t.Errorf("unknown item: %s", o.UI)
	}
	if o := h.ui(`{"jsonrpc":"2.0","id":"` + id + `","result":{"ids":["1","2"]}}`); gjson.GetBytes(o.UI[0], "method").Str != MethodUIResponseReject {
		t.Errorf("two items of a single choice: %s", o.UI)
	}
	out = h.ui(`{"jsonrpc":"2.0","id":"` + id + `","result":{"ids":["2"]}}`)
	pick2 := out.UI[0]
	if gjson.GetBytes(pick2, "method").Str != MethodUIPick || !gjson.GetBytes(pick2, "params.multi").Bool() || len(out.CLI) != 0 {
		t.Fatalf("second question: %s", out.UI)
	}
	id2 := gjson.GetBytes(pick2, "id").Str
	out = h.ui(`{"jsonrpc":"2.0","id":"` + id2 + `","result":{"ids":["1","other"]}}`)
	prompt := out.UI[0]
	if gjson.GetBytes(prompt, "method").Str != MethodUIPrompt {
		t.Fatalf("other: %s", out.UI)
	}
	// The first question's request is settled now.
	if o := h.ui(`{"jsonrpc":"2.0","id":"` + id + `","result":{"ids":["1"]}}`); !strings.Contains(gjson.GetBytes(o.UI[0], "params.error.message").Str, "already") {
		t.Errorf("late answer to the first question: %s", o.UI)
	}
	out = h.ui(`{"jsonrpc":"2.0","id":"` + gjson.GetBytes(prompt, "id").Str + `","result":{"value":"XL"}}`)
	if len(out.CLI) != 1 {
		t.Fatalf("no answer to the CLI: %s", out.UI)
	}
	ans := gjson.GetBytes(out.CLI[0], "response.response")
	if ans.Get("behavior").Str != "allow" || ans.Get("updatedInput.answers.Color?").Str != "Blue" ||
		ans.Get(`updatedInput.answers.Sizes?`).Str != "S,XL" || ans.Get("updatedInput.questions.#").Int() != 2 {
		t.Errorf("answers: %s", out.CLI[0])
	}
}

func TestQuestionCapabilities(t *testing.T) {
	h := newHarness(t, Options{})
	h.tr.SetUICapabilities(UICapabilities{Confirm: true, Prompt: true})
	h.begin("run-1")
	out := h.cli(lineAsk)
	req := out.UI[len(out.UI)-1]
	if gjson.GetBytes(req, "method").Str != MethodUIPrompt || !strings.Contains(gjson.GetBytes(req, "params.message").Str, "Options: Red, Blue") {
		t.Fatalf("prompt without pick: %s", req)
	}
	out = h.ui(`{"jsonrpc":"2.0","id":"` + gjson.GetBytes(req, "id").Str + `","result":{"value":null}}`)
	if len(out.CLI) != 1 || gjson.GetBytes(out.CLI[0], "response.response.behavior").Str != "deny" {
		t.Errorf("a cancelled prompt must decline: %s", out.CLI)
	}

	h = newHarness(t, Options{})
	h.tr.SetUICapabilities(UICapabilities{})
	h.begin("run-1")
	out = h.cli(lineAsk, lineCanUse)
	if len(out.CLI) != 2 || h.tr.PendingRequests() != 0 {
		t.Fatalf("a UI without requests must get nothing to answer: %s", out.UI)
	}
	for _, l := range out.CLI {
		if gjson.GetBytes(l, "response.response.behavior").Str != "deny" {
			t.Errorf("not denied: %s", l)
		}
	}
}

func TestCanUseToolWithoutARunIsDenied(t *testing.T) {
	h := newHarness(t, Options{})
	out := h.cli(lineCanUse)
	if len(out.UI) != 0 || len(out.CLI) != 1 || gjson.GetBytes(out.CLI[0], "response.response.behavior").Str != "deny" {
		t.Errorf("no run: %s %s", out.UI, out.CLI)
	}
}

func TestPlanConfirm(t *testing.T) {
	h := newHarness(t, Options{})
	h.begin("run-1")
	out := h.cli(
		`{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"toolu_p","name":"ExitPlanMode","input":{"plan":"1. a\n2. b"}}]},"parent_tool_use_id":null,"session_id":"s"}`,
		`{"type":"control_request","request_id":"p1","request":{"subtype":"can_use_tool","tool_name":"ExitPlanMode","input":{},"tool_use_id":"toolu_p","requires_user_interaction":true}}`)
	req := out.UI[len(out.UI)-1]
	if gjson.GetBytes(req, "params.message").Str != "1. a\n2. b" || gjson.GetBytes(req, "params.kind").Str != KindPlan {
		t.Fatalf("plan confirm: %s", req)
	}
	out = h.ui(`{"jsonrpc":"2.0","id":"` + gjson.GetBytes(req, "id").Str + `","result":{"ok":true}}`)
	if gjson.GetBytes(out.CLI[0], "response.response.updatedPermissions.0.mode").Str != "default" {
		t.Errorf("plan allow: %s", out.CLI)
	}
}

func TestDropTurnsKeepsHeldRun(t *testing.T) {
	h := newHarness(t, Options{})
	h.begin("run-1")
	h.tr.CancelRun("run-1", "", &h.out)
	h.tr.BeginRun("run-2", &h.out) // held behind the draining turn
	h.out.Reset()
	h.tr.DropTurns("restarted", 1, &h.out)
	if out := h.check(); len(out.UI) != 0 || h.tr.Busy() || h.tr.Held() != "run-2" {
		t.Errorf("DropTurns: %s busy %v held %q", out.UI, h.tr.Busy(), h.tr.Held())
	}
}

func TestSubagentAndSlashEvents(t *testing.T) {
	h := newHarness(t, Options{})
	h.begin("run-1")
	out := h.cli(
		`{"type":"assistant","message":{"id":"m2","content":[{"type":"tool_use","id":"toolu_s","name":"Read","input":{"file_path":"a"}}]},"parent_tool_use_id":"toolu_agent","session_id":"s"}`,
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_s","content":[{"type":"text","text":"abc"}]}]},"parent_tool_use_id":"toolu_agent","session_id":"s","tool_use_result":{"type":"text"}}`,
		`{"type":"user","message":{"role":"user","content":"<local-command-stdout>Compacted </local-command-stdout>"},"session_id":"s","parent_tool_use_id":null}`,
		`{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":600,"error_status":429,"error":"rate_limit","session_id":"s"}`,
	)
	wantMethods(t, out.UI, "agent.event:tool_call", "agent.event:tool_result", "agent.event:text", "agent.event:llm.retry")
	if gjson.GetBytes(out.UI[0], "params.event.parent_tool_call_id").Str != "toolu_agent" ||
		gjson.GetBytes(out.UI[1], "params.event.tool").Str != "Read" || gjson.GetBytes(out.UI[1], "params.event.structured.type").Str != "text" {
		t.Errorf("subagent: %s", out.UI[:2])
	}
	if gjson.GetBytes(out.UI[2], "params.event.source").Str != "slash_command" {
		t.Errorf("slash: %s", out.UI[2])
	}
	if r := gjson.GetBytes(out.UI[3], "params.event"); r.Get("failure_kind").Str != "rate_limit" || r.Get("next_attempt").Int() != 2 || r.Get("max_attempts").Int() != 11 {
		t.Errorf("llm.retry: %s", out.UI[3])
	}
}

func TestRunIDsAreEvicted(t *testing.T) {
	h := newHarness(t, Options{})
	for i := 0; i < maxEnded+10; i++ {
		id := "run-" + itoa(i)
		h.begin(id)
		h.cli(lineResult)
	}
	if _, ok := h.tr.RunStatus("run-0"); ok {
		t.Error("the oldest run was not forgotten")
	}
	if st, ok := h.tr.RunStatus("run-" + itoa(maxEnded+9)); !ok || st != StatusCompleted {
		t.Error("the newest run was forgotten")
	}
}

func TestDeltaTextCopiedRaw(t *testing.T) {
	h := newHarness(t, Options{})
	h.begin("run-1")
	line := `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"say \"hi\"\n\u2028\u00e9"}},"session_id":"s","parent_tool_use_id":null,"api_message_id":"m"}`
	out := h.cli(line)
	if got := gjson.GetBytes(out.UI[0], "params.event.content").Str; got != "say \"hi\"\n\u2028é" {
		t.Errorf("content %q", got)
	}
	if !strings.Contains(string(out.UI[0]), `"content":"say \"hi\"\n\u2028\u00e9"`) {
		t.Errorf("the CLI's bytes were not kept: %s", out.UI[0])
	}
}

// A steer taken into the running turn ends with it (the result names
// it); one the CLI runs as a turn of its own after the result keeps the
// run going until that turn's result; a steer of a run that is not the
// CLI's running turn is refused with -32002.
func TestSteerEndsWithTheResultThatAnswersIt(t *testing.T) {
	h := newHarness(t, Options{})
	if e := h.tr.Steer("run-9", "s0"); e == nil || e.Code != CodeRunNotFound {
		t.Errorf("steer of an unknown run: %v", e)
	}
	h.tr.BeginRun("run-1", &h.out)
	if e := h.tr.Steer("run-1", "s0"); e == nil || e.Code != CodeRunNotFound {
		t.Errorf("steer of a run not sent yet: %v", e)
	}
	h.tr.SentPrompt("run-1")
	if e := h.tr.Steer("run-1", "s1"); e != nil {
		t.Fatalf("steer: %v", e)
	}
	res := func(uuids string) string {
		return strings.Replace(lineResult, `"type":"result",`, `"type":"result","user_message_uuids":[`+uuids+`],`, 1)
	}
	// Taken: the turn's result names the prompt and the steer.
	out := h.cli(lineDelta, res(`"p1","s1"`))
	wantMethods(t, out.UI, "agent.event:text.delta", "agent.event:final", "run.status:completed")
	if e := h.tr.Steer("run-1", "s2"); e == nil || e.Code != CodeRunNotFound {
		t.Errorf("steer of an ended run: %v", e)
	}

	// Not taken: the run goes on through the turn the steer runs as.
	h.begin("run-2")
	if e := h.tr.Steer("run-2", "s3"); e != nil {
		t.Fatalf("steer: %v", e)
	}
	if out := h.cli(lineDelta, res(`"p2"`)); strings.Contains(strings.Join(methods(out.UI), " "), "run.status") {
		t.Fatalf("the run ended before its steer was answered: %s", methods(out.UI))
	}
	if h.tr.ActiveRun() != "run-2" || !h.tr.Busy() {
		t.Errorf("after the first result: active %q busy %v", h.tr.ActiveRun(), h.tr.Busy())
	}
	out = h.cli(lineDelta, res(`"s3"`))
	wantMethods(t, out.UI, "agent.event:text.delta", "agent.event:final", "run.status:completed")
	if gjson.GetBytes(out.UI[0], "params.run_id").Str != "run-2" {
		t.Errorf("the steer's turn is not run-2's: %s", out.UI[0])
	}
	if h.tr.Busy() || h.tr.ActiveRun() != "" {
		t.Errorf("after the steer's result: busy %v active %q", h.tr.Busy(), h.tr.ActiveRun())
	}
}
