package e2e

// End-to-end tests of the acp dialect: the official ACP client library
// (@agentclientprotocol/sdk, pinned in scripts/install-tools.sh) drives
// `ccbridge --ui acp` in front of the real Claude Code CLI and the fake
// Messages API, through testdata/clients/acp_client.mjs (acpClient in
// harness_test.go); raw JSON-RPC lines check the errors for bad input; and
// every golden of mapping/acp is checked against the library's schemas.
// Without node, the library or the CLI the tests are skipped, except under
// CI=true, where they fail.

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/session/clifiles"
)

// TestACPOneSession: the acp scenarios that leave the session idle, each
// a subtest named for the test it was alone, in one connection, one
// session and one CLI (the client's one_session scenario, in phases: see
// acpRun.phase): one CLI start for eleven rules, and one again after each of
// the two kills. The phases that ask for a Write report written.txt at
// their end, as a later phase may write it.
func TestACPOneSession(t *testing.T) {
	t.Parallel()
	tok, steer := token("steer"), "mind "+token("steerw")
	r := runACPScript(t, clientScript("acp_client.mjs"), t.TempDir(), t.TempDir(), 90*time.Second,
		"SCENARIO=one_session", "STEER_PROMPT=STEER "+tok, "STEER_TEXT="+steer)
	api := fakeAPI(t)
	for _, c := range []struct {
		name, phase string
		check       func(t *testing.T, r *acpRun)
	}{
		{"TestACPInitializeNewPrompt", "basic", acpInitializeNewPrompt},
		{"TestACPPermissionRejected", "write_reject", acpPermissionRejected},
		{"TestACPPermissionAllowed", "write_allow", acpPermissionAllowed},
		{"TestACPCancel/midstream", "cancel", acpCancelMidstream},
		{"TestACPCancel/pending_permission", "cancel_permission", acpCancelPendingPermission},
		{"TestACPQuestion/permission", "question_permission", acpQuestionPermission},
		{"TestACPSubagent", "subagent", acpSubagent},
		{"TestACPChildKilledMidPrompt", "child_killed", acpChildKilledMidPrompt},
		{"TestACPPermissionWithdrawnWhenTheCLIDies", "withdrawn", acpPermissionWithdrawnWhenTheCLIDies},
		{"TestSteerACP", "steer", func(t *testing.T, ph *acpRun) {
			useFakeAPI(t, api)
			acpSteer(t, r.phase(t, "basic").response("initialize", 0), ph, tok, steer)
		}},
		{"TestACPModesAndModels", "modes", acpModesAndModels},
	} {
		t.Run(c.name, func(t *testing.T) { c.check(t, r.phase(t, c.phase)) })
	}
}

func acpInitializeNewPrompt(t *testing.T, r *acpRun) {
	init := r.response("initialize", 0).Get("result")
	if init.Get("protocolVersion").Int() != 1 || !init.Get("agentCapabilities.loadSession").Bool() ||
		!init.Get("agentCapabilities.promptCapabilities.image").Bool() || !init.Get("agentCapabilities.promptCapabilities.embeddedContext").Bool() ||
		!init.Get("agentCapabilities.sessionCapabilities.resume").IsObject() || init.Get("authMethods.0.id").Str != "claude-code" {
		t.Errorf("initialize result: %s", init.Raw)
	}
	nw := r.response("session/new", 0).Get("result")
	sid := nw.Get("sessionId").Str
	if sid == "" || nw.Get("modes.currentModeId").Str != "default" || nw.Get("configOptions.#(id==\"model\").currentValue").Str != "default" {
		t.Errorf("session/new result: %.600s", nw.Raw)
	}
	if cmds := r.updates("available_commands_update"); len(cmds) != 1 || cmds[0].Get("update.availableCommands.#").Int() == 0 {
		t.Errorf("want one available_commands_update with commands, got %d", len(cmds))
	}
	if got := chunkText(r.updates("agent_thought_chunk")); got != "Let me think." {
		t.Errorf("thought chunks %q", got)
	}
	if got := chunkText(r.updates("agent_message_chunk")); got != "Hello from the mock model. " {
		t.Errorf("message chunks %q", got)
	}
	if u := r.updates("usage_update"); len(u) != 1 || u[0].Get("update.size").Int() <= 0 || u[0].Get("update.cost.currency").Str != "USD" {
		t.Errorf("usage_update: %v", u)
	}
	if got := r.stopReason(0); got != "end_turn" {
		t.Errorf("stopReason %q, want end_turn", got)
	}
	for _, u := range r.filter(func(e gjson.Result) bool { return e.Get("event").Str == "update" }) {
		if u.Get("sessionId").Str != sid {
			t.Errorf("update for session %q, want %q", u.Get("sessionId").Str, sid)
		}
	}
}

func acpPermissionAllowed(t *testing.T, r *acpRun) {
	reqs := r.requests("session/request_permission")
	if len(reqs) != 1 {
		t.Fatalf("%d permission requests, want 1", len(reqs))
	}
	p := reqs[0].Get("params")
	path := filepath.Join(r.workdir, "written.txt")
	if p.Get("toolCall.kind").Str != "edit" || p.Get("toolCall.rawInput.file_path").Str != path ||
		p.Get("toolCall.content.0.type").Str != "diff" || p.Get("toolCall.locations.0.path").Str != path {
		t.Errorf("permission request tool call: %s", p.Get("toolCall").Raw)
	}
	var kinds []string
	for _, o := range p.Get("options").Array() {
		kinds = append(kinds, o.Get("kind").Str)
	}
	if !slices.Equal(kinds, []string{"allow_always", "allow_once", "reject_once"}) {
		t.Errorf("option kinds %v", kinds)
	}
	if f := r.file(); !f.Get("exists").Bool() || f.Get("content").Str != "hello world\n" {
		t.Errorf("the allowed Write left %s", f.Raw)
	}
	id := p.Get("toolCall.toolCallId").Str
	var done gjson.Result
	for _, u := range r.updates("tool_call_update") {
		if u.Get("update.toolCallId").Str == id && u.Get("update.status").Str == "completed" {
			done = u.Get("update")
		}
	}
	if done.Get("content.0.type").Str != "diff" || done.Get("content.0.path").Str != path ||
		done.Get("content.0.newText").Str != "hello world\n" || done.Get("content.0.oldText").Type != gjson.Null {
		t.Errorf("completed tool call: %s", done.Raw)
	}
	if calls := r.updates("tool_call"); len(calls) != 1 || calls[0].Get("update.toolCallId").Str != id {
		t.Errorf("tool_call updates: %v", calls)
	}
	if got := r.stopReason(0); got != "end_turn" {
		t.Errorf("stopReason %q", got)
	}
}

func acpPermissionRejected(t *testing.T, r *acpRun) {
	if r.file().Get("exists").Bool() {
		t.Errorf("the rejected Write created the file")
	}
	failed := r.filter(func(e gjson.Result) bool {
		return e.Get("update.sessionUpdate").Str == "tool_call_update" && e.Get("update.status").Str == "failed"
	})
	if len(failed) != 1 {
		t.Errorf("%d failed tool calls, want 1", len(failed))
	}
	if got := r.stopReason(0); got != "end_turn" {
		t.Errorf("stopReason %q", got)
	}
}

func acpCancelMidstream(t *testing.T, r *acpRun) {
	if res := r.response("session/prompt", 0); res.Get("result.stopReason").Str != "cancelled" {
		t.Errorf("cancelled prompt answered %s", res.Raw)
	}
	if got := r.stopReason(1); got != "end_turn" {
		t.Errorf("the prompt after the cancel: %q", got)
	}
	// Nothing of the cancelled turn arrives after its answer.
	cancelledAt := r.index(func(e gjson.Result) bool { return e.Get("result.stopReason").Str == "cancelled" })
	if n := len(chunkText(r.updates("agent_message_chunk"))); n == 0 || n > 50*len("counting ")+len("Hello from the mock model. ") {
		t.Errorf("message text of %d bytes", n)
	}
	for _, e := range r.events[cancelledAt:] {
		if strings.Contains(e.Get("update.content.text").Str, "counting") {
			t.Errorf("a chunk of the cancelled turn after its answer: %s", e.Raw)
		}
	}
}

func acpCancelPendingPermission(t *testing.T, r *acpRun) {
	if res := r.response("session/prompt", 0); res.Get("result.stopReason").Str != "cancelled" {
		t.Errorf("cancelled prompt answered %s", res.Raw)
	}
	if r.file().Get("exists").Bool() {
		t.Errorf("the Write whose permission was cancelled ran")
	}
	if got := r.stopReason(1); got != "end_turn" {
		t.Errorf("the prompt after the cancel: %q", got)
	}
}

func TestACPLoadListResume(t *testing.T) {
	t.Parallel()
	r := acpClient(t, "load")
	sid := r.response("session/new", 0).Get("result.sessionId").Str
	for i := range 2 {
		list := r.response("session/list", i).Get("result.sessions")
		s := list.Get(`#(sessionId=="` + sid + `")`)
		if s.Get("cwd").Str != r.workdir || s.Get("title").Str != "hello there" || s.Get("updatedAt").Str == "" {
			t.Errorf("session/list %d: %s", i, list.Raw)
		}
	}
	// Conn b: the replay arrives before the load answer.
	loadAt := r.index(func(e gjson.Result) bool {
		return e.Get("event").Str == "response" && e.Get("conn").Str == "b" && e.Get("method").Str == "session/load"
	})
	var replay []gjson.Result
	for _, e := range r.events[:loadAt] {
		if e.Get("event").Str == "update" && e.Get("conn").Str == "b" {
			replay = append(replay, e.Get("update"))
		}
	}
	var kinds, users []string
	for _, u := range replay {
		kinds = append(kinds, u.Get("sessionUpdate").Str)
		if u.Get("sessionUpdate").Str == "user_message_chunk" {
			users = append(users, u.Get("content.text").Str)
		}
	}
	if !slices.Equal(users, []string{"hello there", "WRITEFILE please"}) {
		t.Errorf("replayed user messages %q", users)
	}
	for _, k := range []string{"agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update"} {
		if !slices.Contains(kinds, k) {
			t.Errorf("the replay has no %s: %v", k, kinds)
		}
	}
	if res := r.events[loadAt]; !res.Get("result.configOptions").IsArray() {
		t.Errorf("session/load result: %s", res.Raw)
	}
	if got := r.stopReason(2); got != "end_turn" {
		t.Errorf("prompt after load: %q", got)
	}
	if e := r.response("session/load", 1); e.Get("error.code").Int() != -32002 {
		t.Errorf("load of an unknown session: %s", e.Raw)
	}
	// Conn c: resume replays nothing, and the session goes on.
	resumeAt := r.index(func(e gjson.Result) bool { return e.Get("method").Str == "session/resume" })
	for _, e := range r.events[:resumeAt] {
		if e.Get("conn").Str == "c" && e.Get("event").Str == "update" {
			t.Errorf("session/resume replayed: %s", e.Raw)
		}
	}
	if r.events[resumeAt].Get("error").Exists() {
		t.Errorf("session/resume: %s", r.events[resumeAt].Raw)
	}
	if got := r.stopReason(3); got != "end_turn" {
		t.Errorf("prompt after resume: %q", got)
	}
	if c := r.response("session/close", 0); c.Get("error").Exists() {
		t.Errorf("session/close: %s", c.Raw)
	}
	if e := r.response("session/prompt", 4); e.Get("error.code").Int() != -32002 {
		t.Errorf("prompt after close: %s", e.Raw)
	}
}

func acpModesAndModels(t *testing.T, r *acpRun) {
	if res := r.response("session/set_mode", 0); res.Get("error").Exists() {
		t.Errorf("set_mode acceptEdits: %s", res.Raw)
	}
	firstPrompt := r.index(func(e gjson.Result) bool { return e.Get("method").Str == "session/prompt" })
	for _, e := range r.events[:firstPrompt] {
		if e.Get("event").Str == "request" {
			t.Errorf("a permission request in acceptEdits mode: %s", e.Raw)
		}
	}
	if _, err := os.Stat(filepath.Join(r.workdir, "written.txt")); err != nil {
		t.Errorf("the Write in acceptEdits mode: %v", err)
	}
	opts := r.response("session/set_config_option", 0).Get("result.configOptions")
	if opts.Get(`#(id=="model").currentValue`).Str != "sonnet" || opts.Get(`#(id=="mode").currentValue`).Str != "acceptEdits" {
		t.Errorf("config options after the model change: %s", opts.Raw)
	}
	if e := r.response("session/set_mode", 1); e.Get("error.code").Int() != -32602 {
		t.Errorf("set_mode to an unknown mode: %s", e.Raw)
	}
	if e := r.response("session/set_config_option", 1); e.Get("error.code").Int() != -32602 {
		t.Errorf("an unknown model: %s", e.Raw)
	}
	if v := r.response("session/set_config_option", 2).Get(`result.configOptions.#(id=="mode").currentValue`).Str; v != "plan" {
		t.Errorf("mode after set_config_option plan: %q", v)
	}
	reqs := r.requests("session/request_permission")
	if len(reqs) != 1 || reqs[0].Get("params.toolCall.kind").Str != "switch_mode" ||
		reqs[0].Get(`params.options.#(optionId=="acceptEdits").kind`).Str != "allow_always" {
		t.Fatalf("plan exit permission requests: %v", reqs)
	}
	if m := r.updates("current_mode_update"); len(m) != 1 || m[0].Get("update.currentModeId").Str != "acceptEdits" {
		t.Errorf("current_mode_update after the plan exit: %v", m)
	}
	if c := r.updates("config_option_update"); len(c) == 0 || c[len(c)-1].Get(`update.configOptions.#(id=="mode").currentValue`).Str != "acceptEdits" {
		t.Errorf("config_option_update after the plan exit: %v", c)
	}
	if got := r.stopReason(1); got != "end_turn" {
		t.Errorf("stopReason %q", got)
	}
}

// acpQuestionAnswered checks that the question was answered Blue and the
// prompt ended.
func acpQuestionAnswered(t *testing.T, r *acpRun) {
	t.Helper()
	var found bool
	for _, u := range r.updates("tool_call_update") {
		if u.Get("update.status").Str == "completed" && strings.Contains(u.Get("update.content.0.content.text").Str, `="Blue"`) {
			found = true
		}
	}
	if !found {
		t.Errorf("no completed AskUserQuestion tool call with the answer Blue")
	}
	if got := r.stopReason(0); got != "end_turn" {
		t.Errorf("stopReason %q", got)
	}
}

// TestACPQuestion: AskUserQuestion through an elicitation form, for a
// client that offers one (its permission variant is in TestACPOneSession).
func TestACPQuestion(t *testing.T) {
	t.Parallel()
	t.Run("elicitation", func(t *testing.T) {
		t.Parallel()
		r := acpClient(t, "question_elicitation")
		reqs := r.requests("elicitation/create")
		if len(reqs) != 1 {
			t.Fatalf("%d elicitation requests", len(reqs))
		}
		p := reqs[0].Get("params")
		if p.Get("mode").Str != "form" || p.Get("requestedSchema.properties.q0.oneOf.#").Int() != 2 || p.Get("toolCallId").Str == "" {
			t.Errorf("elicitation params: %s", p.Raw)
		}
		if n := len(r.requests("session/request_permission")); n != 0 {
			t.Errorf("%d permission requests besides the elicitation", n)
		}
		acpQuestionAnswered(t, r)
	})
}

// TestACPQuestion/permission: a client without elicitation gets the
// question as a permission request whose options are the answers.
func acpQuestionPermission(t *testing.T, r *acpRun) {
	reqs := r.requests("session/request_permission")
	if len(reqs) != 1 {
		t.Fatalf("%d permission requests", len(reqs))
	}
	var names []string
	for _, o := range reqs[0].Get("params.options").Array() {
		names = append(names, o.Get("name").Str)
	}
	if !slices.Contains(names, "Red") || !slices.Contains(names, "Blue") {
		t.Errorf("question options %v", names)
	}
	acpQuestionAnswered(t, r)
}

func TestACPTwoSessions(t *testing.T) {
	t.Parallel()
	r := acpClient(t, "two_sessions")
	ids := r.filter(func(e gjson.Result) bool { return e.Get("event").Str == "sessions" })[0].Get("ids").Array()
	a, b := ids[0].Str, ids[1].Str
	if a == b {
		t.Fatalf("two sessions with one id %q", a)
	}
	if pids := r.filter(func(e gjson.Result) bool { return e.Get("event").Str == "cli_pids" })[0].Get("pids.#").Int(); pids != 2 {
		t.Errorf("%d CLI children for two sessions, want 2", pids)
	}
	text := map[string]string{}
	for _, u := range r.updates("agent_message_chunk") {
		text[u.Get("sessionId").Str] += u.Get("update.content.text").Str
	}
	if !strings.HasPrefix(text[a], "counting ") || text[b] != "Hello from the mock model. " {
		t.Errorf("text by session: %q", text)
	}
	for i := range 2 {
		if got := r.stopReason(i); got != "end_turn" {
			t.Errorf("prompt %d: %q", i, got)
		}
	}
}

// TestACPChildKilledMidPrompt: the first kill of the session's CLI, so
// the new one is its generation 2.
func acpChildKilledMidPrompt(t *testing.T, r *acpRun) {
	res := r.response("session/prompt", 0)
	if res.Get("error.code").Int() != -32603 || !strings.Contains(res.Get("error.message").Str, "exited during the turn") ||
		res.Get("error.data.exitCode").Int() != 128+int64(syscall.SIGKILL) {
		t.Errorf("the prompt whose CLI was killed: %s", res.Raw)
	}
	if n := len(r.responses("session/prompt")); n != 2 {
		t.Errorf("%d prompt answers, want 2", n)
	}
	if got := r.stopReason(1); got != "end_turn" {
		t.Errorf("the prompt after the crash: %q", got)
	}
	killed := r.filter(func(e gjson.Result) bool { return e.Get("event").Str == "killing" })[0].Get("pids.0").Int()
	after := r.filter(func(e gjson.Result) bool { return e.Get("event").Str == "cli_pids" })[0].Get("pids")
	if after.Get("#").Int() != 1 || after.Get("0").Int() == killed {
		t.Errorf("CLI children after the crash: %s (killed %d)", after.Raw, killed)
	}
	sid := r.updates("agent_message_chunk")[0].Get("sessionId").Str
	if !strings.Contains(r.stderr, `"gen":2,"resume":"`+sid+`"`) {
		t.Errorf("the new CLI was not started with --resume")
	}
}

func acpPermissionWithdrawnWhenTheCLIDies(t *testing.T, r *acpRun) {
	if n := len(r.requests("session/request_permission")); n != 1 {
		t.Fatalf("%d permission requests", n)
	}
	aborted := r.filter(func(e gjson.Result) bool { return e.Get("event").Str == "aborted" })
	if len(aborted) != 1 {
		t.Errorf("the open permission request was not withdrawn ($/cancel_request)")
	}
	if res := r.response("session/prompt", 0); res.Get("error.code").Int() != -32603 {
		t.Errorf("prompt whose CLI died: %s", res.Raw)
	}
	if got := r.stopReason(1); got != "end_turn" {
		t.Errorf("the prompt after the crash: %q", got)
	}
	if r.file().Get("exists").Bool() {
		t.Errorf("the Write ran without permission")
	}
	if !strings.Contains(r.stderr, "answer to a request already settled") {
		t.Errorf("the late answer was not dropped as settled")
	}
}

func acpSubagent(t *testing.T, r *acpRun) {
	var agentID string
	for _, c := range r.updates("tool_call") {
		if c.Get("update._meta.claudeCode.toolName").Str == "Agent" {
			agentID = c.Get("update.toolCallId").Str
		}
	}
	if agentID == "" {
		t.Fatalf("no Agent tool call")
	}
	var nested int
	for _, c := range r.updates("tool_call") {
		if c.Get("update._meta.claudeCode.parentToolUseId").Str == agentID {
			nested++
			if c.Get("update.kind").Str != "read" {
				t.Errorf("the subagent's tool call: %s", c.Raw)
			}
		}
	}
	if nested != 1 {
		t.Errorf("%d tool calls with the Agent as parent, want 1", nested)
	}
	if got := r.stopReason(0); got != "end_turn" {
		t.Errorf("stopReason %q", got)
	}
}

func TestACPMCPServers(t *testing.T) {
	t.Parallel()
	r := acpClient(t, "mcp")
	var done bool
	for _, u := range r.updates("tool_call_update") {
		if u.Get("update._meta.claudeCode.toolName").Str == "mcp__sdkmcp__echo" && u.Get("update.status").Str == "completed" &&
			u.Get("update.content.0.content.text").Str == "echo: ping from-env" {
			done = true
		}
	}
	if !done {
		t.Errorf("the MCP server given in session/new did not answer the model's call")
	}
	if got := r.stopReason(0); got != "end_turn" {
		t.Errorf("stopReason %q", got)
	}
}

// TestACPBadInput writes raw JSON-RPC lines: each bad one gets its
// error, and the connection goes on to a normal turn.
func TestACPBadInput(t *testing.T) {
	t.Parallel()
	b := startBridge(t, []string{"--ui", "acp"})
	expect := func(line string, check func(resp []byte) bool) {
		t.Helper()
		b.send(line)
		resp := b.until("the answer to "+line, func(l []byte) bool { return !gjson.GetBytes(l, "method").Exists() })
		if got := resp[len(resp)-1]; !check(got) {
			t.Errorf("%s\n → %s", line, got)
		}
	}
	errCode := func(id string, code int64) func([]byte) bool {
		return func(r []byte) bool {
			return gjson.GetBytes(r, "id").Raw == id && gjson.GetBytes(r, "error.code").Int() == code
		}
	}
	ok := func(id string) func([]byte) bool {
		return func(r []byte) bool { return gjson.GetBytes(r, "id").Raw == id && gjson.GetBytes(r, "result").Exists() }
	}
	expect(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`, errCode("1", -32600))
	expect(`{not json`, errCode("null", -32700))
	expect(`[{"jsonrpc":"2.0","id":2,"method":"initialize"}]`, errCode("null", -32600))
	expect(`{"jsonrpc":"1.0","id":3,"method":"initialize"}`, errCode("3", -32600))
	expect(`{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"one"}}`, errCode("4", -32602))
	expect(`{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":7}}`, func(r []byte) bool {
		return ok("5")(r) && gjson.GetBytes(r, "result.protocolVersion").Int() == 1
	})
	expect(`{"jsonrpc":"2.0","id":"six","method":"no/such/method","params":{}}`, errCode(`"six"`, -32601))
	// A notification of an unknown method and a response to an unknown
	// request get no answer; the next request is answered.
	b.send(`{"jsonrpc":"2.0","method":"no/such/notification","params":{}}`)
	b.send(`{"jsonrpc":"2.0","id":999,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`)
	b.send(`{"jsonrpc":"2.0","id":998,"error":{"code":-32603,"message":"boom"}}`)
	expect(`{"jsonrpc":"2.0","id":7,"method":"authenticate","params":{"methodId":"nope"}}`, errCode("7", -32602))
	expect(`{"jsonrpc":"2.0","id":8,"method":"authenticate","params":{"methodId":"claude-code"}}`, ok("8"))
	expect(`{"jsonrpc":"2.0","id":9,"method":"session/new","params":{"cwd":"relative/dir","mcpServers":[]}}`, errCode("9", -32602))
	expect(`{"jsonrpc":"2.0","id":10,"method":"session/new","params":{"cwd":"`+b.dir+`"}}`, errCode("10", -32602))
	expect(`{"jsonrpc":"2.0","id":11,"method":"session/prompt","params":{"sessionId":"nope","prompt":[{"type":"text","text":"hi"}]}}`, errCode("11", -32002))
	expect(`{"jsonrpc":"2.0","id":12,"method":"session/load","params":{"sessionId":"nope","cwd":"`+b.dir+`","mcpServers":[]}}`, errCode("12", -32002))
	expect(`{"jsonrpc":"2.0","id":13,"method":"session/new","params":{"cwd":"`+b.dir+`","mcpServers":[{"name":"x"}]}}`, errCode("13", -32602))
	var sid string
	expect(`{"jsonrpc":"2.0","id":14,"method":"session/new","params":{"cwd":"`+b.dir+`","mcpServers":[]}}`, func(r []byte) bool {
		sid = gjson.GetBytes(r, "result.sessionId").Str
		return ok("14")(r) && sid != ""
	})
	prompt := func(id, content string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":` + content + `}}`
	}
	expect(prompt("15", `[]`), errCode("15", -32602))
	expect(prompt("16", `[{"type":"audio","data":"AAAA","mimeType":"audio/wav"}]`), errCode("16", -32602))
	expect(prompt("17", `[{"type":"image","data":"bm90IGFuIGltYWdl","mimeType":"image/png"}]`), errCode("17", -32602))
	expect(prompt("18", `"hello"`), errCode("18", -32602))
	expect(`{"jsonrpc":"2.0","id":19,"method":"session/set_mode","params":{"sessionId":"`+sid+`","modeId":"nope"}}`, errCode("19", -32602))
	expect(`{"jsonrpc":"2.0","id":20,"method":"session/set_config_option","params":{"sessionId":"`+sid+`","configId":"nope","value":"x"}}`, errCode("20", -32602))
	// And the connection goes on: a turn.
	b.send(prompt("21", `[{"type":"text","text":"hello"}]`))
	lines := b.until("the turn's answer", func(l []byte) bool { return gjson.GetBytes(l, "id").Raw == "21" })
	if got := gjson.GetBytes(lines[len(lines)-1], "result.stopReason").Str; got != "end_turn" {
		t.Errorf("the turn after the bad input: %s", lines[len(lines)-1])
	}
	if n := count(lines, func(l []byte) bool {
		return gjson.GetBytes(l, "params.update.sessionUpdate").Str == "agent_message_chunk"
	}); n == 0 {
		t.Errorf("no message chunks in the turn")
	}
	// The end of the input stops the CLI; nothing is left behind.
	pid := b.childPID()
	b.stdin.Close()
	if rest := b.rest(); len(rest) != 0 {
		t.Errorf("lines after the end of the input: %q", rest)
	}
	if code := b.wait(); code != 0 {
		t.Errorf("exit code %d", code)
	}
	groupGone(t, pid)
}

// TestACPGoldenSchema checks every line of testdata/acp/*.golden (the
// acp translation of every recorded transcript and session file) against
// the ACP client library's own schemas.
func TestACPGoldenSchema(t *testing.T) {
	t.Parallel()
	node, zod := nodeModule(t, "@agentclientprotocol/sdk/dist/v1/schema/zod.gen.js", "the ACP client library")
	cmd := exec.Command(node, clientScript("acp_validate.mjs"))
	cmd.Env = append(os.Environ(), "ACP_ZOD="+zod, "GOLDEN_DIR="+filepath.Join(repoRoot, "testdata", "acp"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("acp_validate.mjs: %v\n%s", err, tail(string(out), 4000))
	}
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	last := gjson.ParseBytes(lines[len(lines)-1])
	if last.Get("event").Str != "done" || last.Get("checked").Int() < 1000 {
		t.Fatalf("validation did not finish: %s", tail(string(out), 4000))
	}
	for _, l := range lines[:len(lines)-1] {
		t.Errorf("%s", l)
	}
	for _, kind := range []string{"plan", "tool_call", "tool_call_update", "user_message_chunk", "agent_thought_chunk",
		"usage_update", "current_mode_update", "config_option_update", "available_commands_update", "session_info_update"} {
		if last.Get("counts").Get("session/update:"+kind).Int() == 0 {
			t.Errorf("no %s in the goldens was checked", kind)
		}
	}
}

// ---- what every dialect on the session core does the same way (docs/design.md)

// alignPrelude is the start of every script: the library, an output of
// one JSON object a line, and connect, which starts one ccbridge (in dir,
// with extra arguments) and returns a connection to it:
//
//	call(method, params)   a request; prints its response (with the time)
//	notify(method, params) a notification
//	when(pred)             resolves with the first printed event pred holds for
//	close()                ends ccbridge's input and waits for its exit
//
// Every session/update and _ccbridge/error is printed, with the time in
// milliseconds (performance.now). Permission requests are allowed.
const alignPrelude = `
import { pathToFileURL } from 'node:url';
import { spawn } from 'node:child_process';
import { Readable, Writable } from 'node:stream';
import { performance } from 'node:perf_hooks';

const acp = await import(pathToFileURL(process.env.ACP_SDK).href);
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const cwd = process.env.WORKDIR;
const origError = console.error;
console.error = (...args) => {
  out({ event: 'sdk_error', message: args.map((a) => (typeof a === 'string' ? a : JSON.stringify(a))).join(' ') });
  origError(...args);
};
const clientCaps = { protocolVersion: 1, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false }, clientInfo: { name: 'ccbridge-align', version: '1.0.0' } };

function connect(name, extraArgs = [], dir = cwd) {
  const child = spawn(process.env.CCBRIDGE_BIN, ['--ui', 'acp', ...extraArgs], { cwd: dir, env: process.env, stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const waiters = [];
  const seen = (e) => {
    e.at = performance.now();
    out(e);
    for (const w of [...waiters]) {
      if (w.pred(e)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(e);
      }
    }
    return e;
  };
  const app = acp.client({ name })
    .onNotification('session/update', ({ params }) => seen({ event: 'update', conn: name, sessionId: params.sessionId, update: params.update }))
    .onNotification('_ccbridge/error', (p) => p, ({ params }) => seen({ event: 'ccbridge_error', conn: name, params }))
    .onRequest('session/request_permission', async () => ({ outcome: { outcome: 'selected', optionId: 'allow' } }));
  const conn = app.connect(acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)));
  const call = async (method, params, tag) => {
    try {
      const result = await conn.agent.request(method, params);
      return seen({ event: 'response', conn: name, method, tag, result: result ?? null });
    } catch (err) {
      return seen({ event: 'response', conn: name, method, tag, error: { code: err.code, message: err.message, data: err.data } });
    }
  };
  const when = (pred) => new Promise((resolve) => waiters.push({ pred, resolve }));
  const close = async () => {
    child.stdin.end();
    const e = await exited;
    out({ event: 'exit', conn: name, ...e });
    conn.close();
  };
  return { child, call, notify: (m, p) => conn.agent.notify(m, p), when, close };
}

async function newSession(c, dir = cwd) {
  await c.call('initialize', clientCaps);
  const s = await c.call('session/new', { cwd: dir, mcpServers: [] });
  if (s.error) throw new Error('session/new failed: ' + s.error.message);
  return s.result.sessionId;
}

const prompt = (c, sessionId, text, tag) => c.call('session/prompt', { sessionId, prompt: [{ type: 'text', text }] }, tag);
`

// alignEnv is one test's ccbridge environment: its working directory and
// its HOME (whose .claude holds the CLI's session files).
type alignEnv struct {
	t       *testing.T
	workdir string
	home    string
}

func newAlignEnv(t *testing.T) *alignEnv {
	return &alignEnv{t: t, workdir: t.TempDir(), home: t.TempDir()}
}

// projectDir is the CLI's folder of session files for dir.
func (a *alignEnv) projectDir(dir string) string {
	a.t.Helper()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		a.t.Fatal(err)
	}
	return clifiles.ProjectDir(filepath.Join(a.home, ".claude"), real)
}

// run runs script after alignPrelude (see runACPScript).
func (a *alignEnv) run(script string) *acpRun {
	a.t.Helper()
	file := filepath.Join(a.t.TempDir(), "align.mjs")
	body := alignPrelude + "\ntry {\n" + script + "\n  out({ event: 'done' });\n  process.exit(0);\n} catch (err) {\n  out({ event: 'error', message: String(err?.stack ?? err) });\n  process.exit(1);\n}\n"
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		a.t.Fatal(err)
	}
	return runACPScript(a.t, file, a.home, a.workdir, 150*time.Second)
}

// tagged returns the response to the request the script tagged tag.
func tagged(r *acpRun, tag string) gjson.Result {
	r.t.Helper()
	i := r.index(func(e gjson.Result) bool { return e.Get("event").Str == "response" && e.Get("tag").Str == tag })
	if i < 0 {
		r.t.Fatalf("no response tagged %q", tag)
	}
	return r.events[i]
}

// TestACPAlignOneSession: TestACPAlignSessionListLongCWD and
// TestACPAlignCLILineTooLong in one run of the client (one ccbridge with
// --max-cli-line 100000 in a working directory of over 200 characters, one
// session, one CLI), each a subtest named for the test it was alone: one
// CLI start where they took two. The session's first prompt is
// TestACPAlignSessionListLongCWD's, which the list gives as its title;
// TestACPAlignCLILineTooLong's prompts follow, and it counts the text
// streamed after that first prompt's answer. A second connection lists
// the sessions once the first has closed.
func TestACPAlignOneSession(t *testing.T) {
	t.Parallel()
	a := newAlignEnv(t)
	long := filepath.Join(a.workdir, strings.Repeat("d", 120), strings.Repeat("e", 120))
	if err := os.MkdirAll(long, 0o755); err != nil {
		t.Fatal(err)
	}
	r := a.run(fmt.Sprintf(`
  const dir = %q;
  const c = connect('a', ['--max-cli-line', '100000'], dir);
  const sid = await newSession(c, dir);
  out({ event: 'session', sid });
  await prompt(c, sid, 'hello from a long cwd', 'prompt');
  await prompt(c, sid, 'BIGTEXT 300000', 'big');
  await prompt(c, sid, 'hello', 'after');
  await c.close();
  const d = connect('b');
  await d.call('initialize', clientCaps);
  await d.call('session/list', { cwd: dir }, 'list cwd');
  await d.call('session/list', {}, 'list all');
  await d.call('session/list', { cwd }, 'list parent');
  await d.close();
`, long))
	t.Run("TestACPAlignSessionListLongCWD", func(t *testing.T) {
		r.t = t
		acpAlignSessionListLongCWD(t, a, r, long)
	})
	t.Run("TestACPAlignCLILineTooLong", func(t *testing.T) {
		r.t = t
		acpAlignCLILineTooLong(t, r)
	})
}

// TestACPAlignCLILineTooLong: with --max-cli-line 100000, BIGTEXT
// 300000 makes the CLI write an assistant line and a result line of about
// 300 KB. Each is dropped and reported with _ccbridge/error; the text
// still streams (its deltas are 64 KiB), the turn ends when the CLI is
// idle, and the next prompt works. In TestACPAlignOneSession's run, after
// the prompt tagged "prompt".
func acpAlignCLILineTooLong(t *testing.T, r *acpRun) {
	sid := r.filter(func(e gjson.Result) bool { return e.Get("event").Str == "session" })[0].Get("sid").Str
	errs := r.filter(func(e gjson.Result) bool { return e.Get("event").Str == "ccbridge_error" })
	if len(errs) == 0 {
		t.Fatalf("no _ccbridge/error notification")
	}
	for _, e := range errs {
		p := e.Get("params")
		if p.Get("sessionId").Str != sid || p.Get("code").Str != "line_too_long" ||
			!strings.Contains(p.Get("message").Str, "over the 100000-byte limit (--max-cli-line)") {
			t.Errorf("notification: %s", e.Raw)
		}
	}
	big, before := tagged(r, "big"), tagged(r, "prompt")
	if big.Get("result.stopReason").Str != "end_turn" {
		t.Errorf("the prompt with the long lines: %s", big.Raw)
	}
	bigAt := r.index(func(e gjson.Result) bool { return e.Get("tag").Str == "big" })
	if n := len(chunkText(r.filter(func(e gjson.Result) bool {
		return e.Get("event").Str == "update" && e.Get("update.sessionUpdate").Str == "agent_message_chunk" &&
			e.Get("at").Float() > before.Get("at").Float() && e.Get("at").Float() <= big.Get("at").Float()
	}))); n != 300000 {
		t.Errorf("the long turn streamed %d bytes of text, want 300000", n)
	}
	if i := r.index(func(e gjson.Result) bool { return e.Get("event").Str == "ccbridge_error" }); i > bigAt {
		t.Errorf("the notification came after the prompt's answer")
	}
	if after := tagged(r, "after"); after.Get("result.stopReason").Str != "end_turn" {
		t.Errorf("the prompt after: %s", after.Raw)
	}
}

// TestACPAlignResumeRefusedBeforeAnyChild: session/load and session/resume of a session
// whose file holds no user or assistant message, or has no file, are
// refused with -32002 before any CLI starts.
func TestACPAlignResumeRefusedBeforeAnyChild(t *testing.T) {
	t.Parallel()
	a := newAlignEnv(t)
	const empty, missing = "5b0d2c43-0000-4000-8000-0000000000e1", "5b0d2c43-0000-4000-8000-0000000000e2"
	dir := a.projectDir(a.workdir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// What the CLI leaves when it is stopped before the first message.
	content := `{"type":"queue-operation","operation":"enqueue","timestamp":"2026-11-24T08:00:00.000Z","sessionId":"` + empty + `"}` + "\n" +
		`{"type":"summary","summary":"nothing yet","leafUuid":"x"}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, empty+".jsonl"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	r := a.run(fmt.Sprintf(`
  const c = connect('a');
  await c.call('initialize', clientCaps);
  for (const [sessionId, what] of [[%q, 'empty'], [%q, 'missing']]) {
    await c.call('session/load', { sessionId, cwd, mcpServers: [] }, 'load ' + what);
    await c.call('session/resume', { sessionId, cwd }, 'resume ' + what);
  }
  await c.close();
`, empty, missing))
	for _, tag := range []string{"load empty", "resume empty", "load missing", "resume missing"} {
		e := tagged(r, tag)
		msg := e.Get("error.message").Str
		if e.Get("error.code").Int() != -32002 {
			t.Errorf("%s: %s", tag, e.Raw)
		}
		if strings.HasSuffix(tag, "empty") && !strings.Contains(msg, "has no conversation to resume") {
			t.Errorf("%s: %s", tag, e.Raw)
		}
		if strings.HasSuffix(tag, "missing") && !strings.Contains(msg, "no session") {
			t.Errorf("%s: %s", tag, e.Raw)
		}
	}
	if strings.Contains(r.stderr, `"msg":"claude started"`) {
		t.Errorf("a CLI was started")
	}
	if updates := r.filter(func(e gjson.Result) bool { return e.Get("event").Str == "update" }); len(updates) != 0 {
		t.Errorf("updates for sessions that cannot be resumed: %v", updates)
	}
}

// TestACPAlignCancelWhileReadingABigSession: a session/cancel is handled within
// 250 ms (a few on a quiet machine) while a session file of about 100 MB is being read for
// session/load (and a session/list runs): the prompt it cancels, waiting
// behind a running one, is answered at once, before the load.
func TestACPAlignCancelWhileReadingABigSession(t *testing.T) {
	a := newAlignEnv(t)
	const sid = "5b0d2c43-0000-4000-8000-0000000000b1"
	dir := a.projectDir(a.workdir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, sid+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	user := func(text string, i int) {
		fmt.Fprintf(w, `{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":%q},"uuid":"u-%d","timestamp":"2026-11-24T08:00:00.000Z","cwd":%q,"sessionId":%q}`+"\n", text, i, a.workdir, sid)
	}
	user("the start of a long history", 0)
	// Lines of about 120 bytes that the replay reads and leaves out.
	for n, size := 0, 0; size < 100<<20; n++ {
		m, _ := fmt.Fprintf(w, `{"type":"progress","uuid":"p-%07d","data":{"type":"hook_progress","n":%d},"sessionId":%q}`+"\n", n, n, sid)
		size += m
	}
	user("the end of a long history", 1)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if fi, err := os.Stat(f.Name()); err != nil || fi.Size() < 90<<20 {
		t.Fatalf("the session file: %v %v", fi, err)
	}
	r := a.run(fmt.Sprintf(`
  const c = connect('a');
  const live = await newSession(c);
  const slow = prompt(c, live, 'SLOW please', 'slow');
  await c.when((e) => e.event === 'update' && e.sessionId === live && e.update.sessionUpdate === 'agent_message_chunk');
  const queued = prompt(c, live, 'hello', 'queued');
  const load = c.call('session/load', { sessionId: %q, cwd, mcpServers: [] }, 'load');
  const list = c.call('session/list', { cwd }, 'list');
  // The replay is under way once its first update has come.
  await c.when((e) => e.event === 'update' && e.sessionId === %[1]q);
  const sent = performance.now();
  await c.notify('session/cancel', { sessionId: live });
  const answer = await queued;
  out({ event: 'latency', ms: answer.at - sent, sent });
  await Promise.all([slow, load, list]);
  await c.close();
`, sid))
	lat := r.filter(func(e gjson.Result) bool { return e.Get("event").Str == "latency" })[0]
	t.Logf("session/cancel answered %.1f ms after it was sent, during the replay", lat.Get("ms").Float())
	if q := tagged(r, "queued"); q.Get("result.stopReason").Str != "cancelled" {
		t.Fatalf("the cancelled prompt: %s", q.Raw)
	}
	// A few milliseconds on a quiet machine; the bound leaves room for a
	// loaded one (two cores, the rest of the suite beside it: 67 ms seen)
	// and still fails a cancel that waits for the 100 MB read (seconds).
	if ms := lat.Get("ms").Float(); ms >= 250 {
		t.Errorf("the cancel took effect after %.1f ms, want < 250 ms", ms)
	}
	load := tagged(r, "load")
	if load.Get("error").Exists() {
		t.Errorf("session/load: %s", load.Raw)
	}
	if load.Get("at").Float() <= tagged(r, "queued").Get("at").Float() {
		t.Errorf("the load was answered before the cancel: the replay was over before the cancel was sent")
	}
	var users []string
	for _, e := range r.filter(func(e gjson.Result) bool { return e.Get("sessionId").Str == sid }) {
		if e.Get("at").Float() < load.Get("at").Float() {
			users = append(users, e.Get("update.content.text").Str)
		}
	}
	if len(users) != 2 || users[0] != "the start of a long history" || users[1] != "the end of a long history" {
		t.Errorf("the replay before the load's answer: %q", users)
	}
	if s := tagged(r, "list").Get("result.sessions").Get(`#(sessionId=="` + sid + `")`); s.Get("title").Str != "the start of a long history" {
		t.Errorf("session/list: %s", tagged(r, "list").Raw)
	}
	if s := tagged(r, "slow"); s.Get("result.stopReason").Str != "cancelled" {
		t.Errorf("the running prompt: %s", s.Raw)
	}
}

// TestACPAlignSessionListLongCWD: session/list with a working directory of
// more than 200 characters finds the session a real turn created there
// (the CLI shortens that folder's name and adds a hash). In
// TestACPAlignOneSession's run of a, whose session's cwd is long.
func acpAlignSessionListLongCWD(t *testing.T, a *alignEnv, r *acpRun, long string) {
	sid := r.filter(func(e gjson.Result) bool { return e.Get("event").Str == "session" })[0].Get("sid").Str
	if got := tagged(r, "prompt").Get("result.stopReason").Str; got != "end_turn" {
		t.Fatalf("the turn: %q", got)
	}
	if len(long) <= 200 {
		t.Fatalf("the cwd has %d characters", len(long))
	}
	for _, tag := range []string{"list cwd", "list all"} {
		ss := tagged(r, tag).Get("result.sessions")
		s := ss.Get(`#(sessionId=="` + sid + `")`)
		if s.Get("cwd").Str != long || s.Get("title").Str != "hello from a long cwd" {
			t.Errorf("%s: %s", tag, ss.Raw)
		}
	}
	if ss := tagged(r, "list cwd").Get("result.sessions"); ss.Get("#").Int() != 1 {
		t.Errorf("list cwd: %s", ss.Raw)
	}
	if ss := tagged(r, "list parent").Get("result.sessions"); ss.Get("#").Int() != 0 {
		t.Errorf("the parent folder lists the long one's session: %s", ss.Raw)
	}
	entries, _ := os.ReadDir(filepath.Join(a.home, ".claude", "projects"))
	for _, e := range entries {
		if len(e.Name()) <= 200 {
			t.Errorf("the CLI's project folder %q is not a shortened one", e.Name())
		}
	}
}

// TestACPForkLogoutTerminalLogin: one connection with the real CLI. The
// initialize answer of a client that can run terminal auth offers the
// terminal method; session/fork answers a new session whose first prompt
// carries the forked conversation (the fake model's request holds the
// first session's prompt); logout answers, and says no stored login was
// cleared (the fake model's key is in the environment). Then ccbridge
// run with the terminal method's args reaches the CLI's own login: it
// prints the sign-in address and asks for the code (no network needed;
// the process group is killed there).
func TestACPForkLogoutTerminalLogin(t *testing.T) {
	t.Parallel()
	a := newAlignEnv(t)
	first, second := token("forkfirst"), token("forksecond")
	r := a.run(`
  const c = connect('a');
  await c.call('initialize', { ...clientCaps, clientCapabilities: { ...clientCaps.clientCapabilities, auth: { terminal: true } } }, 'init');
  const s = await c.call('session/new', { cwd, mcpServers: [] });
  await prompt(c, s.result.sessionId, '` + first + `', 'first');
  const f = await c.call('session/fork', { sessionId: s.result.sessionId, cwd, mcpServers: [] }, 'fork');
  if (f.error) throw new Error('session/fork: ' + f.error.message);
  await prompt(c, f.result.sessionId, '` + second + `', 'second');
  await c.call('logout', {}, 'logout');
  await c.close();
`)
	term := tagged(r, "init").Get(`result.authMethods.#(type=="terminal")`)
	if term.Get("id").Str == "" || !term.Get("args").IsArray() {
		t.Fatalf("no terminal auth method: %s", tagged(r, "init").Raw)
	}
	fork := tagged(r, "fork").Get("result")
	sid := r.response("session/new", 0).Get("result.sessionId").Str
	if fork.Get("sessionId").Str == "" || fork.Get("sessionId").Str == sid || !fork.Get("configOptions").IsArray() {
		t.Errorf("session/fork: %s", fork.Raw)
	}
	if tagged(r, "second").Get("result.stopReason").Str != "end_turn" {
		t.Errorf("prompt in the fork: %s", tagged(r, "second").Raw)
	}
	if !seenByModel(t, second, first) {
		t.Errorf("the fork's first prompt does not carry the forked conversation (%q)", first)
	}
	if l := tagged(r, "logout"); l.Get("error").Exists() || l.Get("result._meta.ccbridge.authCleared").Type != gjson.False {
		t.Errorf("logout: %s", l.Raw)
	}

	var args []string
	for _, v := range term.Get("args").Array() {
		args = append(args, v.Str)
	}
	cmd := exec.Command(ccbridgeBin, append([]string{"--ui", "acp"}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "CCBRIDGE_CLAUDE="+realCLI(t), "BROWSER=/bin/true", "DISPLAY=")
	cmd.Dir = a.workdir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, _ := cmd.StdinPipe()
	defer stdin.Close()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	}()
	got := make(chan string, 1)
	go func() {
		var seen strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := out.Read(buf)
			seen.Write(buf[:n])
			if strings.Contains(seen.String(), "Paste code here") || err != nil {
				got <- seen.String()
				return
			}
		}
	}()
	select {
	case s := <-got:
		if !strings.Contains(s, "claude.ai/oauth/authorize") || !strings.Contains(s, "Paste code here") {
			t.Errorf("the terminal method did not reach the CLI's login; it printed %q", s)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("the terminal method printed no sign-in address in 30 s")
	}
}
