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
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/tidwall/gjson"
)

func TestACPInitializeNewPrompt(t *testing.T) {
	t.Parallel()
	r := acpClient(t, "basic")
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

func TestACPPermissionAllowed(t *testing.T) {
	t.Parallel()
	r := acpClient(t, "write_allow")
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
	if data, err := os.ReadFile(path); err != nil || string(data) != "hello world\n" {
		t.Errorf("the allowed Write left %q (%v)", data, err)
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

func TestACPPermissionRejected(t *testing.T) {
	t.Parallel()
	r := acpClient(t, "write_reject")
	if _, err := os.Stat(filepath.Join(r.workdir, "written.txt")); err == nil {
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

func TestACPCancel(t *testing.T) {
	t.Parallel()
	t.Run("midstream", func(t *testing.T) {
		t.Parallel()
		r := acpClient(t, "cancel")
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
	})
	t.Run("pending_permission", func(t *testing.T) {
		t.Parallel()
		r := acpClient(t, "cancel_permission")
		if res := r.response("session/prompt", 0); res.Get("result.stopReason").Str != "cancelled" {
			t.Errorf("cancelled prompt answered %s", res.Raw)
		}
		if _, err := os.Stat(filepath.Join(r.workdir, "written.txt")); err == nil {
			t.Errorf("the Write whose permission was cancelled ran")
		}
		if got := r.stopReason(1); got != "end_turn" {
			t.Errorf("the prompt after the cancel: %q", got)
		}
	})
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

func TestACPModesAndModels(t *testing.T) {
	t.Parallel()
	r := acpClient(t, "modes")
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

func TestACPQuestion(t *testing.T) {
	t.Parallel()
	answered := func(r *acpRun) {
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
		answered(r)
	})
	t.Run("permission", func(t *testing.T) {
		t.Parallel()
		r := acpClient(t, "question_permission")
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
		answered(r)
	})
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

func TestACPChildKilledMidPrompt(t *testing.T) {
	t.Parallel()
	r := acpClient(t, "child_killed")
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
	sid := r.response("session/new", 0).Get("result.sessionId").Str
	if !strings.Contains(r.stderr, `"gen":2,"resume":"`+sid+`"`) {
		t.Errorf("the new CLI was not started with --resume")
	}
}

func TestACPPermissionWithdrawnWhenTheCLIDies(t *testing.T) {
	t.Parallel()
	r := acpClient(t, "withdrawn")
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
	if _, err := os.Stat(filepath.Join(r.workdir, "written.txt")); err == nil {
		t.Errorf("the Write ran without permission")
	}
	if !strings.Contains(r.stderr, "answer to a request already settled") {
		t.Errorf("the late answer was not dropped as settled")
	}
}

func TestACPSubagent(t *testing.T) {
	t.Parallel()
	r := acpClient(t, "subagent")
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
