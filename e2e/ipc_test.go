package e2e

// End-to-end tests of the ipc dialect (docs/protocol/ipc.md): `ccbridge
// --ui ipc` in front of the real Claude Code CLI and the fake Messages API;
// the client helpers are in harness_test.go.

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/session/clifiles"
)

// ipcSession is the ccbridge --ui ipc that TestIPCOneSession's scenarios
// share, and the session it announced.
type ipcSession struct {
	b   *bridge
	sid string
}

// TestIPCOneSession: the ipc scenarios that leave the session as they
// found it (idle, in the same CLI), each a subtest named for the test it
// was alone, in one ccbridge and one CLI session, turn after turn (see
// inOneSession); TestIPCOneSessionFaults runs the others in a second one,
// at the same time: two CLI starts for twenty-five rules, and neither
// half the end-to-end run's last test to finish. The first is the
// session's first turn; the order keeps what one leaves in the working
// directory out of the next one's way (PermissionMode removes its
// written.txt and leaves no Write allowed, Write denied wants no
// written.txt before Write allowed makes one). The broken MCP server is
// TestIPCPermissionMode's; it is disabled there, and no other scenario
// asks about MCP servers.
func TestIPCOneSession(t *testing.T) {
	t.Parallel()
	inOneSession(t, ipcOpen("--", "--mcp-config", ipcBrokenMCP), ipcBind,
		scenario[*ipcSession]{"TestIPCTextWithThinking", ipcTextWithThinking},
		scenario[*ipcSession]{"TestIPCPermissionMode", ipcPermissionMode},
		scenario[*ipcSession]{"TestIPCWrite/denied", ipcWrite(false)},
		scenario[*ipcSession]{"TestIPCWrite/allowed", ipcWrite(true)},
		scenario[*ipcSession]{"TestIPCEditPatch", ipcEditPatch},
		scenario[*ipcSession]{"TestIPCAskUserQuestion/single", ipcAskUserQuestion(ipcQuestion{"ASKUSER please", "Which color do you prefer?", `"Blue"`, "Blue"})},
		scenario[*ipcSession]{"TestIPCAskUserQuestion/multi", ipcAskUserQuestion(ipcQuestion{"ASKMULTI please", "Which toppings do you want?", `["Cheese","Olives"]`, "Cheese,Olives"})},
		scenario[*ipcSession]{"TestIPCFailingTool", ipcFailingTool},
		scenario[*ipcSession]{"TestIPCParallelTools", ipcParallelTools},
		scenario[*ipcSession]{"TestIPCSubagent", ipcSubagent},
		scenario[*ipcSession]{"TestIPCInterruptMidStream", ipcInterruptMidStream},
		scenario[*ipcSession]{"TestIPCInterruptPendingPermission", ipcInterruptPendingPermission},
		scenario[*ipcSession]{"TestIPCSlashCost", ipcSlashCost},
		scenario[*ipcSession]{"TestIPCAPIError", ipcAPIError},
		scenario[*ipcSession]{"TestIPCImageAttachment", ipcImageAttachment},
		scenario[*ipcSession]{"TestIPCQueuedAndIdle", ipcQueuedAndIdle},
	)
}

// TestIPCOneSessionFaults: the rest of TestIPCOneSession's scenarios, bad
// input and turns under faults, in a session of their own.
// TestIPCModelChange comes last but one: it changes the model.
// TestFaultTurnsIPCEndOfInput, last, ends the input and ccbridge with it.
func TestIPCOneSessionFaults(t *testing.T) {
	t.Parallel()
	inOneSession(t, ipcOpen("--", "--mcp-config", ipcBrokenMCP), ipcBind,
		scenario[*ipcSession]{"TestIPCBadInput", ipcBadInput},
		scenario[*ipcSession]{"TestIPCAlignResumeRefusedBeforeAnyChild", ipcAlignResumeRefusedBeforeAnyChild},
		scenario[*ipcSession]{"TestIPCInvalidUTF8IsParseError", ipcInvalidUTF8IsParseError},
		scenario[*ipcSession]{"TestIPCModelChangeAndResumeRefuseBadValues", ipcModelChangeAndResumeRefuseBadValues},
		scenario[*ipcSession]{"TestFaultTurnsIPCMerged", ipcFaultTurnsMerged},
		scenario[*ipcSession]{"TestFaultTurnsIPCCancelQueued", ipcFaultTurnsCancelQueued},
		scenario[*ipcSession]{"TestSteerIPC", ipcSteer},
		scenario[*ipcSession]{"TestIPCModelChange", ipcModelChange},
		scenario[*ipcSession]{"TestFaultTurnsIPCEndOfInput", ipcFaultTurnsEndOfInput},
	)
}

// ipcBrokenMCP is the MCP server TestIPCPermissionMode finds broken.
const ipcBrokenMCP = `{"mcpServers":{"broken":{"command":"/nonexistent/ccbridge-e2e-mcp"}}}`

// ipcOpen opens a shared session (inOneSession): ccbridge --ui ipc with
// args, and the session it announced.
func ipcOpen(args ...string) func(t *testing.T) *ipcSession {
	return func(t *testing.T) *ipcSession {
		t.Helper()
		b := startIPC(t, args...)
		return &ipcSession{b: b, sid: expectSessionInit(t, b)}
	}
}

// ipcBind points the session's helpers, and fakeAPI, at test t (see
// inOneSession).
func ipcBind(s *ipcSession, t *testing.T) {
	s.b.t = t
	useFakeAPI(t, s.b.api)
}

// TestIPCTextWithThinking: session_init before any input; a plain prompt
// streams thinking_text and assistant_text partials then completes, then
// cost_update and one turn_complete.
func ipcTextWithThinking(t *testing.T, s *ipcSession) {
	b, sid := s.b, s.sid
	if extra := quiet(t, b, 300*time.Millisecond); len(extra) > 0 {
		t.Logf("lines before the first prompt besides session_init:\n%s", lastLines(extra, 5))
	}
	lines := turn(t, b, "hello there")
	tc := complete(t, lines)

	if ids := sessionInits(lines); len(ids) != 0 {
		t.Errorf("session_init repeated during the turn: %v", ids)
	}
	meta := ofType(lines, "system_metadata")
	if len(meta) != 1 {
		t.Fatalf("%d system_metadata lines in the first turn, want 1", len(meta))
	}
	for _, f := range []string{"session_id", "cwd", "tools", "model", "permissionMode", "slash_commands", "plugins", "agents", "skills", "mcp_servers", "version"} {
		if !get(meta[0], f).Exists() {
			t.Errorf("system_metadata lacks %s", f)
		}
	}
	if got := get(meta[0], "session_id").Str; got != sid {
		t.Errorf("system_metadata session_id %s, want the announced %s", got, sid)
	}
	if got := get(meta[0], "permissionMode").Str; got != "default" {
		t.Errorf("permissionMode %q, want default", got)
	}
	if !fileIn(filepath.Join(get(meta[0], "cwd").Str, "x"), b.dir, "x") {
		t.Errorf("system_metadata cwd %q, want %s", get(meta[0], "cwd").Str, b.dir)
	}

	// Thinking, then text: partials with the deltas, then the whole block.
	type key struct {
		typ string
		idx int64
	}
	partial := map[key]string{}
	completeText := map[key]string{}
	order := []string{}
	var msgID string
	nextSeq := int64(0)
	for _, l := range lines {
		typ := typeOf(l)
		if typ != "thinking_text" && typ != "assistant_text" {
			continue
		}
		if msgID == "" {
			msgID = get(l, "msg_id").Str
		}
		if get(l, "msg_id").Str != msgID {
			t.Errorf("text from a second message %s in a one-message turn", get(l, "msg_id").Str)
			continue
		}
		if s := get(l, "seq").Int(); s != nextSeq {
			t.Errorf("seq %d, want %d: %.300s", s, nextSeq, l)
		}
		nextSeq++
		if p := get(l, "parent_tool_use_id"); p.Type != gjson.Null {
			t.Errorf("main-thread text with parent_tool_use_id %s", p.Raw)
		}
		k := key{typ, get(l, "block_index").Int()}
		if get(l, "is_partial").Bool() {
			if get(l, "status").Str != "streaming" {
				t.Errorf("partial with status %q: %.300s", get(l, "status").Str, l)
			}
			if _, done := completeText[k]; done {
				t.Errorf("partial after the complete block: %.300s", l)
			}
			partial[k] += get(l, "text").Str
			order = append(order, typ+"/partial")
		} else {
			if get(l, "status").Str != "complete" {
				t.Errorf("complete block with status %q: %.300s", get(l, "status").Str, l)
			}
			completeText[k] = get(l, "text").Str
			order = append(order, typ+"/complete")
		}
	}
	want := []string{"thinking_text/partial", "thinking_text/complete", "assistant_text/partial"}
	if len(order) < 4 || order[0] != want[0] || order[1] != want[1] || order[2] != want[2] || order[len(order)-1] != "assistant_text/complete" {
		t.Errorf("text order %v, want thinking partial, thinking complete, text partials, text complete", order)
	}
	th, tx := key{"thinking_text", 0}, key{"assistant_text", 1}
	if completeText[th] != "Let me think." || partial[th] != completeText[th] {
		t.Errorf("thinking: partials %q, complete %q; want %q", partial[th], completeText[th], "Let me think.")
	}
	if completeText[tx] != "Hello from the mock model. " || partial[tx] != completeText[tx] {
		t.Errorf("text: partials %q, complete %q; want %q", partial[tx], completeText[tx], "Hello from the mock model. ")
	}

	cost := lines[len(lines)-2]
	if tcu := get(cost, "turn_cost_usd"); tcu.Type != gjson.Number || tcu.Float() <= 0 {
		t.Errorf("cost_update turn_cost_usd %s, want a positive number: %.400s", tcu.Raw, cost)
	}
	for _, f := range []string{"total_cost_usd", "num_turns", "duration_ms", "duration_api_ms", "usage", "modelUsage"} {
		if !get(cost, f).Exists() {
			t.Errorf("cost_update lacks %s", f)
		}
	}
	if get(tc, "result").Str != "Hello from the mock model. " || get(tc, "msg_id").Str != msgID ||
		get(tc, "result_class").Str != "success" || get(tc, "api_error").Type != gjson.Null ||
		get(tc, "terminal_reason").Str != "completed" || get(tc, "parent_tool_use_id").Type != gjson.Null {
		t.Errorf("turn_complete: %.600s", tc)
	}

	// A second turn in the same session: no new session_init, same session.
	lines = turn(t, b, "hello again")
	complete(t, lines)
	noSessionChange(t, lines, sid)
}

// TestIPCWrite: a Write allowed (the file is written; tool_use_structured
// type create) and denied (no file; the model is told the message); a
// second answer to the same request is refused with unknown_request.
func ipcWrite(allow bool) func(t *testing.T, s *ipcSession) {
	return func(t *testing.T, s *ipcSession) {
		b := s.b
		var req []byte
		lines := turnAnswering(t, b, "WRITEFILE please", func(r []byte) string {
			if req != nil {
				t.Errorf("a second permission request: %.300s", r)
			}
			req = r
			if allow {
				return allowAnswer(get(r, "request_id").Str)
			}
			return denyAnswer(get(r, "request_id").Str, "Denied by the ipc e2e test")
		})
		tc := complete(t, lines)
		if req == nil {
			t.Fatal("no control_request_forward for the Write")
		}
		path := get(req, "input.file_path").Str
		useID := get(req, "tool_use_id").Str
		if get(req, "tool_name").Str != "Write" || get(req, "is_question").Bool() || !fileIn(path, b.dir, "written.txt") ||
			get(req, "input.content").Str != "hello world\n" || useID == "" || get(req, "request_id").Str == "" {
			t.Errorf("control_request_forward: %.600s", req)
		}
		for _, f := range []string{"display_name", "description", "decision_reason", "blocked_path", "permission_suggestions", "parent_tool_use_id", "requires_user_interaction"} {
			if !get(req, f).Exists() {
				t.Errorf("control_request_forward lacks %s", f)
			}
		}
		// The tool_use is announced partial, then complete, before the request.
		uses := ofType(lines, "tool_use")
		if len(uses) != 2 || !get(uses[0], "is_partial").Bool() || get(uses[1], "is_partial").Bool() ||
			get(uses[0], "tool_use_id").Str != useID || get(uses[1], "tool_use_id").Str != useID ||
			get(uses[1], "input.file_path").Str != path || get(uses[0], "tool_name").Str != "Write" {
			t.Errorf("tool_use lines (want partial then complete for %s):\n%s", useID, lastLines(uses, 4))
		}
		if indexOf(lines, func(l []byte) bool { return typeOf(l) == "tool_use" && !get(l, "is_partial").Bool() }) >
			indexOf(lines, func(l []byte) bool { return typeOf(l) == "control_request_forward" }) {
			t.Errorf("the permission request came before the complete tool_use")
		}
		res := first(lines, func(l []byte) bool { return typeOf(l) == "tool_result" && get(l, "tool_use_id").Str == useID })
		if res == nil {
			t.Fatalf("no tool_result for %s", useID)
		}
		structured := first(lines, func(l []byte) bool {
			return typeOf(l) == "tool_use_structured" && get(l, "tool_use_id").Str == useID
		})
		data, statErr := os.ReadFile(path)
		if allow {
			if get(res, "is_error").Bool() || get(res, "tool_name").Str != "Write" {
				t.Errorf("tool_result of the allowed Write: %.400s", res)
			}
			if statErr != nil || string(data) != "hello world\n" {
				t.Errorf("the allowed Write left %q, %v at %s", data, statErr, path)
			}
			if structured == nil || get(structured, "tool_name").Str != "Write" ||
				get(structured, "structured_result.type").Str != "create" ||
				get(structured, "structured_result.filePath").Str != path ||
				get(structured, "structured_result.content").Str != "hello world\n" {
				t.Errorf("tool_use_structured of the Write (want type create): %.600s", structured)
			}
			if n := get(tc, "permission_denials.#").Int(); n != 0 {
				t.Errorf("permission_denials has %d entries after allow", n)
			}
		} else {
			if !get(res, "is_error").Bool() || !strings.Contains(get(res, "output").Str, "Denied by the ipc e2e test") {
				t.Errorf("tool_result of the denied Write (want is_error and the deny message): %.400s", res)
			}
			if statErr == nil {
				t.Errorf("the denied Write created %s", path)
			}
			if structured != nil {
				t.Errorf("tool_use_structured for a denied Write: %.400s", structured)
			}
			if get(tc, "permission_denials.#").Int() != 1 || get(tc, "permission_denials.0.tool_use_id").Str != useID {
				t.Errorf("turn_complete permission_denials after deny: %.600s", tc)
			}
		}
		// The request is settled: a second answer is refused.
		b.send(allowAnswer(get(req, "request_id").Str))
		e := expectError(t, b, "unknown_request", "request_id")
		if get(e, "request_id").Str != get(req, "request_id").Str || get(e, "in_reply_to").Str != "tool_approval" {
			t.Errorf("unknown_request error: %.400s", e)
		}
		complete(t, turn(t, b, "hello after the Write"))
	}
}

// TestIPCEditPatch: Read (auto-allowed) then Edit (allowed): the Edit's
// tool_use_structured carries the structuredPatch hunk.
func ipcEditPatch(t *testing.T, s *ipcSession) {
	b := s.b
	target := filepath.Join(b.dir, "edit_target.txt")
	if err := os.WriteFile(target, []byte("line one\nline two\nline three\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var asked []string
	lines := turnAnswering(t, b, "EDITFILE please", func(r []byte) string {
		asked = append(asked, get(r, "tool_name").Str)
		return allowAll(r)
	})
	complete(t, lines)
	if len(asked) != 1 || asked[0] != "Edit" {
		t.Errorf("permission requests for %v, want only Edit", asked)
	}
	edit := first(lines, func(l []byte) bool {
		return typeOf(l) == "tool_use_structured" && get(l, "tool_name").Str == "Edit"
	})
	if edit == nil {
		t.Fatalf("no tool_use_structured for the Edit:\n%s", lastLines(lines, 10))
	}
	want := `[" line one","-line two","+line 2 (edited)"," line three"]`
	hunk := get(edit, "structured_result.structuredPatch.0")
	if got := hunk.Get("lines").Raw; got != want || hunk.Get("oldStart").Int() != 1 || get(edit, "structured_result.structuredPatch.#").Int() != 1 {
		t.Errorf("structuredPatch %s, want one hunk with lines %s", get(edit, "structured_result.structuredPatch").Raw, want)
	}
	if get(edit, "structured_result.oldString").Str != "line two" || get(edit, "structured_result.newString").Str != "line 2 (edited)" {
		t.Errorf("Edit structured_result: %.600s", edit)
	}
	useID := get(edit, "tool_use_id").Str
	if first(lines, func(l []byte) bool {
		return typeOf(l) == "tool_use" && get(l, "tool_use_id").Str == useID && get(l, "tool_name").Str == "Edit"
	}) == nil {
		t.Errorf("tool_use_structured names %s, which no Edit tool_use had", useID)
	}
	if data, _ := os.ReadFile(target); string(data) != "line one\nline 2 (edited)\nline three\n" {
		t.Errorf("edit_target.txt after the Edit: %q", data)
	}
	read := first(lines, func(l []byte) bool {
		return typeOf(l) == "tool_result" && get(l, "tool_name").Str == "Read"
	})
	if read == nil || !strings.Contains(get(read, "output").Str, "line two") {
		t.Errorf("tool_result of the Read: %.400s", read)
	}
}

// ipcQuestion is a question the fake model asks when prompted, and its
// answer.
type ipcQuestion struct{ prompt, question, answer, want string }

// TestIPCAskUserQuestion: a single-select and a multi-select question,
// answered with question_answer (labels comma-joined for multi-select).
func ipcAskUserQuestion(c ipcQuestion) func(t *testing.T, s *ipcSession) {
	return func(t *testing.T, s *ipcSession) {
		b := s.b
		b.send(userMessage(c.prompt))
		lines := ipcUntil(t, b, "the question", func(l []byte) bool {
			if isTerminal(l) {
				t.Fatalf("the turn ended before the question: %.400s", l)
			}
			return typeOf(l) == "control_request_forward"
		})
		req := lines[len(lines)-1]
		id := get(req, "request_id").Str
		if get(req, "tool_name").Str != "AskUserQuestion" || !get(req, "is_question").Bool() ||
			!get(req, "requires_user_interaction").Bool() || get(req, "input.questions.0.question").Str != c.question {
			t.Fatalf("control_request_forward for the question: %.600s", req)
		}
		// An answer to a question the request does not ask is refused
		// and leaves the request open.
		b.send(`{"type":"question_answer","request_id":` + jsonStr(id) + `,"answers":{"Which pet?":"Cat"}}`)
		expectError(t, b, "invalid_value", "")
		b.send(`{"type":"question_answer","request_id":` + jsonStr(id) + `,"answers":{` + jsonStr(c.question) + `:` + c.answer + `}}`)
		rest := finishTurn(t, b, nil)
		complete(t, rest)
		useID := get(req, "tool_use_id").Str
		st := first(rest, func(l []byte) bool {
			return typeOf(l) == "tool_use_structured" && get(l, "tool_use_id").Str == useID
		})
		if st == nil || get(st, "structured_result.answers").Get(gjson.Escape(c.question)).Str != c.want {
			t.Errorf("tool_use_structured answers (want %q): %.600s", c.want, st)
		}
		res := first(rest, func(l []byte) bool { return typeOf(l) == "tool_result" && get(l, "tool_use_id").Str == useID })
		if res == nil || get(res, "is_error").Bool() || !strings.Contains(get(res, "output").Str, `="`+c.want+`"`) {
			t.Errorf("tool_result of the question (want =%q): %.400s", c.want, res)
		}
		if n := len(ofType(rest, "control_request_cancelled")); n != 0 {
			t.Errorf("%d control_request_cancelled for an answered question", n)
		}
	}
}

// TestIPCFailingTool: a Read of a missing file gives tool_result is_error
// true, without the <tool_use_error> wrapping, and the turn completes.
func ipcFailingTool(t *testing.T, s *ipcSession) {
	b := s.b
	lines := turn(t, b, "READMISSING please")
	tc := complete(t, lines)
	res := ofType(lines, "tool_result")
	if len(res) != 1 {
		t.Fatalf("%d tool_result lines, want 1", len(res))
	}
	out := get(res[0], "output").Str
	if !get(res[0], "is_error").Bool() || get(res[0], "tool_name").Str != "Read" ||
		strings.Contains(out, "tool_use_error") || !strings.Contains(out, "does not exist") {
		t.Errorf("tool_result of the failing Read: %.400s", res[0])
	}
	if st := ofType(lines, "tool_use_structured"); len(st) != 0 {
		t.Errorf("tool_use_structured for a failed tool: %.400s", st[0])
	}
	if get(tc, "result").Str != "The file is missing. " {
		t.Errorf("turn_complete result: %.400s", tc)
	}
}

// TestIPCParallelTools: one assistant message with a Read and two Bash
// calls; both Bash prompts allowed; three results.
func ipcParallelTools(t *testing.T, s *ipcSession) {
	b := s.b
	if err := os.WriteFile(filepath.Join(b.dir, "hello.txt"), []byte("hello world\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var asked []string
	lines := turnAnswering(t, b, "PARALLEL please", func(r []byte) string {
		asked = append(asked, get(r, "tool_name").Str)
		return allowAll(r)
	})
	complete(t, lines)
	if len(asked) != 2 || asked[0] != "Bash" || asked[1] != "Bash" {
		t.Errorf("permission requests for %v, want two Bash", asked)
	}
	var uses [][]byte
	for _, l := range ofType(lines, "tool_use") {
		if !get(l, "is_partial").Bool() {
			uses = append(uses, l)
		}
	}
	if len(uses) != 3 {
		t.Fatalf("%d complete tool_use lines, want 3", len(uses))
	}
	ids := map[string]bool{}
	for i, u := range uses {
		if get(u, "msg_id").Str != get(uses[0], "msg_id").Str || get(u, "block_index").Int() != int64(i+1) {
			t.Errorf("tool_use %d not block %d of the one message: %.300s", i, i+1, u)
		}
		ids[get(u, "tool_use_id").Str] = true
	}
	if len(ids) != 3 {
		t.Errorf("tool_use ids not distinct: %v", ids)
	}
	results := ofType(lines, "tool_result")
	if len(results) != 3 {
		t.Errorf("%d tool_result lines, want 3", len(results))
	}
	for _, r := range results {
		if !ids[get(r, "tool_use_id").Str] || get(r, "is_error").Bool() {
			t.Errorf("tool_result: %.300s", r)
		}
		delete(ids, get(r, "tool_use_id").Str)
	}
	if len(ids) != 0 {
		t.Errorf("no tool_result for %v", ids)
	}
	for _, f := range []string{"p1.txt", "p2.txt"} {
		if _, err := os.Stat(filepath.Join(b.dir, f)); err != nil {
			t.Errorf("the allowed Bash did not create %s", f)
		}
	}
}

// TestIPCSubagent: the subagent's tool calls and results carry
// parent_tool_use_id = the Agent tool_use id; the main thread's null.
func ipcSubagent(t *testing.T, s *ipcSession) {
	b := s.b
	if err := os.WriteFile(filepath.Join(b.dir, "hello.txt"), []byte("hello world\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lines := turnAnswering(t, b, "SUBAGENT please", allowAll)
	tc := complete(t, lines)
	agent := first(lines, func(l []byte) bool {
		return typeOf(l) == "tool_use" && get(l, "tool_name").Str == "Agent" && !get(l, "is_partial").Bool()
	})
	if agent == nil {
		t.Fatalf("no Agent tool_use:\n%s", lastLines(lines, 10))
	}
	agentID := get(agent, "tool_use_id").Str
	if get(agent, "parent_tool_use_id").Type != gjson.Null {
		t.Errorf("the Agent tool_use is nested: %.300s", agent)
	}
	read := first(lines, func(l []byte) bool { return typeOf(l) == "tool_use" && get(l, "tool_name").Str == "Read" })
	if read == nil || get(read, "parent_tool_use_id").Str != agentID {
		t.Fatalf("the subagent's Read tool_use (want parent_tool_use_id %s): %.400s", agentID, read)
	}
	readRes := first(lines, func(l []byte) bool {
		return typeOf(l) == "tool_result" && get(l, "tool_use_id").Str == get(read, "tool_use_id").Str
	})
	if readRes == nil || get(readRes, "parent_tool_use_id").Str != agentID || !strings.Contains(get(readRes, "output").Str, "hello world") {
		t.Errorf("the subagent's Read tool_result (want parent_tool_use_id %s): %.400s", agentID, readRes)
	}
	agentRes := first(lines, func(l []byte) bool { return typeOf(l) == "tool_result" && get(l, "tool_use_id").Str == agentID })
	if agentRes == nil || get(agentRes, "parent_tool_use_id").Type != gjson.Null || get(agentRes, "is_error").Bool() {
		t.Errorf("the Agent's tool_result (main thread): %.400s", agentRes)
	}
	if indexOf(lines, func(l []byte) bool { return typeOf(l) == "tool_result" && get(l, "tool_use_id").Str == agentID }) <
		indexOf(lines, func(l []byte) bool { return typeOf(l) == "tool_result" && get(l, "parent_tool_use_id").Str == agentID }) {
		t.Errorf("the Agent's result came before its subagent's tool result")
	}
	if first(lines, func(l []byte) bool { return typeOf(l) == "task_update" && get(l, "tool_use_id").Str == agentID }) == nil {
		t.Errorf("no task_update for the subagent %s", agentID)
	}
	for _, l := range lines {
		if typeOf(l) == "assistant_text" && get(l, "parent_tool_use_id").Type == gjson.Null {
			continue
		}
		if p := get(l, "parent_tool_use_id"); p.Type == gjson.String && p.Str != agentID {
			t.Errorf("a line nested under an unknown tool_use %s: %.300s", p.Str, l)
		}
	}
	if get(tc, "parent_tool_use_id").Type != gjson.Null || get(tc, "result").Str != "Done. " {
		t.Errorf("turn_complete: %.400s", tc)
	}
}

// TestIPCInterruptMidStream: interrupt while text streams ends the turn with
// turn_cancelled (aborted_streaming); the session goes on.
func ipcInterruptMidStream(t *testing.T, s *ipcSession) {
	b, sid := s.b, s.sid
	b.send(userMessage("SLOW please"))
	ipcUntil(t, b, "streaming text", func(l []byte) bool {
		if isTerminal(l) {
			t.Fatalf("the turn ended before it streamed: %.400s", l)
		}
		return typeOf(l) == "assistant_text" && get(l, "is_partial").Bool()
	})
	start := time.Now()
	b.send(`{"type":"interrupt"}`)
	lines := finishTurn(t, b, nil)
	last := lines[len(lines)-1]
	if typeOf(last) != "turn_cancelled" || get(last, "reason").Str != "aborted_streaming" {
		t.Fatalf("the interrupted turn ended with %.400s", last)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("the turn ended %v after the interrupt (the full stream takes 5 s)", d)
	}
	if p := get(last, "partial_result").Str; !strings.HasPrefix(p, "counting ") || len(p) >= 450 {
		t.Errorf("partial_result %q, want the text streamed so far", p)
	}
	aborted := first(lines, func(l []byte) bool {
		return typeOf(l) == "assistant_text" && !get(l, "is_partial").Bool()
	})
	if aborted == nil || get(aborted, "status").Str != "aborted" {
		t.Errorf("the cut-off block's final assistant_text (want status aborted): %.300s", aborted)
	}
	if n := len(ofType(lines, "turn_complete")); n != 0 {
		t.Errorf("%d turn_complete in an interrupted turn", n)
	}
	lines = turn(t, b, "hello after the interrupt")
	complete(t, lines)
	noSessionChange(t, lines, sid)
}

// TestIPCInterruptPendingPermission: interrupt while a permission prompt is
// open: control_request_cancelled for it, then turn_cancelled; an answer to
// the withdrawn request is refused; the session goes on.
func ipcInterruptPendingPermission(t *testing.T, s *ipcSession) {
	b := s.b
	b.send(userMessage("BASH please"))
	lines := ipcUntil(t, b, "the permission request", func(l []byte) bool {
		if isTerminal(l) {
			t.Fatalf("the turn ended before the permission request: %.400s", l)
		}
		return typeOf(l) == "control_request_forward"
	})
	req := lines[len(lines)-1]
	id := get(req, "request_id").Str
	if get(req, "tool_name").Str != "Bash" {
		t.Fatalf("permission request: %.400s", req)
	}
	b.send(`{"type":"interrupt"}`)
	lines = finishTurn(t, b, nil)
	last := lines[len(lines)-1]
	if typeOf(last) != "turn_cancelled" {
		t.Fatalf("the turn ended with %.400s", last)
	}
	cancelled := ofType(lines, "control_request_cancelled")
	if len(cancelled) != 1 || get(cancelled[0], "request_id").Str != id || get(cancelled[0], "reason").Str != "withdrawn" {
		t.Errorf("control_request_cancelled (want one, %s, withdrawn):\n%s", id, lastLines(cancelled, 3))
	}
	if get(last, "reason").Str != "aborted_tools" {
		t.Errorf("turn_cancelled reason %q, want aborted_tools", get(last, "reason").Str)
	}
	if _, err := os.Stat(filepath.Join(b.dir, "bash_touched.txt")); err == nil {
		t.Errorf("the withdrawn Bash ran")
	}
	b.send(allowAnswer(id))
	e := expectError(t, b, "unknown_request", "request_id")
	if get(e, "request_id").Str != id {
		t.Errorf("unknown_request error: %.400s", e)
	}
	complete(t, turn(t, b, "hello after the interrupt"))
}

// TestIPCSlashCost: /cost gives an assistant_text with source
// slash_command and a turn_complete.
func ipcSlashCost(t *testing.T, s *ipcSession) {
	b := s.b
	complete(t, turn(t, b, "hello there"))
	lines := turn(t, b, "/cost")
	tc := complete(t, lines)
	texts := ofType(lines, "assistant_text")
	if len(texts) != 1 {
		t.Fatalf("%d assistant_text lines for /cost, want 1:\n%s", len(texts), lastLines(texts, 4))
	}
	at := texts[0]
	if get(at, "source").Str != "slash_command" || get(at, "is_partial").Bool() || !strings.Contains(get(at, "text").Str, "cost") {
		t.Errorf("/cost assistant_text: %.600s", at)
	}
	if get(tc, "local_command").Str != "cost" {
		t.Errorf("turn_complete local_command %q, want cost", get(tc, "local_command").Str)
	}
	if n := len(ofType(lines, "thinking_text")); n != 0 {
		t.Errorf("/cost reached the model (%d thinking_text lines)", n)
	}
}

// TestIPCAPIError: an HTTP 400 from the API ends the turn with
// turn_complete, is_error true and api_error set; the session goes on.
func ipcAPIError(t *testing.T, s *ipcSession) {
	b := s.b
	lines := turn(t, b, "APIERR400 now")
	tc := lines[len(lines)-1]
	if typeOf(tc) != "turn_complete" || !get(tc, "is_error").Bool() || get(tc, "result_class").Str != "api_error" ||
		get(tc, "terminal_reason").Str != "api_error" {
		t.Fatalf("turn_complete of the API error: %.600s", tc)
	}
	ae := get(tc, "api_error")
	if !ae.IsObject() || ae.Get("status").Int() != 400 || ae.Get("type").Str != "invalid_request_error" || ae.Get("message").Str == "" {
		t.Errorf("api_error %s, want {status 400, type invalid_request_error, message}", ae.Raw)
	}
	text := first(lines, func(l []byte) bool { return typeOf(l) == "assistant_text" && !get(l, "is_partial").Bool() })
	if text == nil || !get(text, "is_error").Bool() || get(text, "api_error_status").Int() != 400 {
		t.Errorf("assistant_text of the API error: %.400s", text)
	}
	complete(t, turn(t, b, "hello after the error"))
}

// TestIPCImageAttachment: a PNG attachment reaches the model as one image.
func ipcImageAttachment(t *testing.T, s *ipcSession) {
	b := s.b
	lines := turn(t, b, userMessage("IMAGECHECK what is in this image?", imageAttachment("image/png", pngB64)))
	complete(t, lines)
	text := first(lines, func(l []byte) bool { return typeOf(l) == "assistant_text" && !get(l, "is_partial").Bool() })
	if text == nil || get(text, "text").Str != "I received 1 image block(s). " {
		t.Errorf("reply to the image (want 1 image block): %.400s", text)
	}
}

// TestIPCModelChange: model_change answers with "Set model to" and a
// system_metadata with the new model, and the next turn uses it. The
// model before the change is another: the one the API was asked for, and
// the system_metadata's when the turn is the session's first (only the
// first turn has one; TestIPCTextWithThinking checks that it has).
func ipcModelChange(t *testing.T, s *ipcSession) {
	b := s.b
	before := token("before")
	lines := turn(t, b, "hello "+before)
	complete(t, lines)
	if meta := ofType(lines, "system_metadata"); len(meta) > 0 && get(meta[0], "model").Str == "claude-sonnet-4-5" {
		t.Fatalf("system_metadata of the first turn: %.300s", meta)
	}
	if r := modelRequestIn(t, b.api, before); r.Model == "" || r.Model == "claude-sonnet-4-5" {
		t.Fatalf("the turn before model_change asked the API for model %q", r.Model)
	}

	b.send(`{"type":"model_change","model":"claude-sonnet-4-5"}`)
	var sawText, sawMeta bool
	for !sawText || !sawMeta {
		l, err := recv(t, b, 10*time.Second)
		if err != nil {
			t.Fatalf("after model_change: %v (Set model text %v, system_metadata %v)", err, sawText, sawMeta)
		}
		switch {
		case typeOf(l) == "assistant_text":
			sawText = true
			if get(l, "source").Str != "slash_command" || get(l, "text").Str != "Set model to `claude-sonnet-4-5`" {
				t.Errorf("assistant_text after model_change: %.400s", l)
			}
		case typeOf(l) == "system_metadata":
			sawMeta = true
			if get(l, "model").Str != "claude-sonnet-4-5" {
				t.Errorf("system_metadata after model_change: model %q", get(l, "model").Str)
			}
		case typeOf(l) == "error" || isTerminal(l):
			t.Fatalf("after model_change: %.400s", l)
		default:
			t.Logf("after model_change: %.300s", l)
		}
	}
	tok := token("modelcheck")
	lines = turn(t, b, "hello "+tok)
	complete(t, lines)
	for _, m := range ofType(lines, "system_metadata") {
		if get(m, "model").Str != "claude-sonnet-4-5" {
			t.Errorf("system_metadata after the change has model %q", get(m, "model").Str)
		}
	}
	if r := modelRequestIn(t, b.api, tok); r.Model != "claude-sonnet-4-5" {
		t.Errorf("the turn after model_change asked the API for model %q", r.Model)
	}

	b.send(`{"type":"model_change","model":""}`)
	expectError(t, b, "invalid_value", "model")
}

// TestIPCPermissionMode: permission_mode acceptEdits gives a
// system_metadata with it, and a Write runs without a prompt; an invalid
// mode is a control_request_failed error; back to default.
func ipcPermissionMode(t *testing.T, s *ipcSession) {
	b := s.b
	complete(t, turn(t, b, "hello there"))

	// Queries to the CLI (the query message), each answered by its
	// query_result: the top level of the working directory, the context,
	// the MCP server that cannot start, disabling it, a persisted title.
	query := func(id, body string) []byte {
		t.Helper()
		b.send(`{"type":"query","id":"` + id + `",` + body + `}`)
		lines := ipcUntil(t, b, "query_result "+id, func(l []byte) bool {
			if typeOf(l) == "error" {
				t.Fatalf("query %s: %.400s", id, l)
			}
			return typeOf(l) == "query_result" && get(l, "id").Str == id
		})
		return lines[len(lines)-1]
	}
	if err := os.WriteFile(filepath.Join(b.dir, "hello.txt"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := query("f", `"query":"file_suggestions","text":""`); !get(r, "ok").Bool() || !get(r, `result.suggestions.#(path=="hello.txt")`).Exists() {
		t.Errorf("file_suggestions: %.600s", r)
	}
	if r := query("c", `"query":"context_usage"`); get(r, "result.totalTokens").Int() <= 0 || get(r, "result.maxTokens").Int() <= 0 {
		t.Errorf("context_usage: %.600s", r)
	}
	if r := query("m", `"query":"mcp_status"`); get(r, `result.mcpServers.#(name=="broken").status`).Str != "failed" ||
		!strings.Contains(get(r, `result.mcpServers.#(name=="broken").error`).Str, "ENOENT") {
		t.Errorf("mcp_status: %.600s", r)
	}
	if r := query("r", `"query":"mcp_reconnect","server":"broken"`); get(r, "ok").Bool() || get(r, "code").Str != "control_request_failed" || !strings.Contains(get(r, "error").Str, "ENOENT") {
		t.Errorf("mcp_reconnect of the server that cannot start: %.600s", r)
	}
	if r := query("d", `"query":"mcp_toggle","server":"broken","enabled":false`); !get(r, "ok").Bool() {
		t.Errorf("mcp_toggle: %.600s", r)
	}
	if r := query("t", `"query":"session_title","description":"a session of the e2e test","persist":true`); get(r, "result.title").Str != "Fake model session" {
		t.Errorf("session_title: %.600s", r)
	}

	waitMode := func(mode string) {
		t.Helper()
		lines := ipcUntil(t, b, "system_metadata with permissionMode "+mode, func(l []byte) bool {
			if typeOf(l) == "error" || isTerminal(l) {
				t.Fatalf("after permission_mode %s: %.400s", mode, l)
			}
			return typeOf(l) == "system_metadata"
		})
		if got := get(lines[len(lines)-1], "permissionMode").Str; got != mode {
			t.Errorf("system_metadata permissionMode %q, want %q", got, mode)
		}
	}
	b.send(`{"type":"permission_mode","mode":"acceptEdits"}`)
	waitMode("acceptEdits")

	lines := turn(t, b, "WRITEFILE please") // fails on a permission request
	complete(t, lines)
	if data, err := os.ReadFile(filepath.Join(b.dir, "written.txt")); err != nil || string(data) != "hello world\n" {
		t.Errorf("Write in acceptEdits: %q, %v", data, err)
	}
	for _, m := range ofType(lines, "system_metadata") {
		if get(m, "permissionMode").Str != "acceptEdits" {
			t.Errorf("system_metadata in the acceptEdits turn: permissionMode %q", get(m, "permissionMode").Str)
		}
	}

	b.send(`{"type":"permission_mode","mode":"bogusMode"}`)
	e := expectError(t, b, "control_request_failed", "")
	if get(e, "subtype").Str != "set_permission_mode" || get(e, "cli_error_code").Str != "invalid_mode" || get(e, "request_id").Str == "" {
		t.Errorf("error for an invalid mode: %.400s", e)
	}

	b.send(`{"type":"permission_mode","mode":"default"}`)
	waitMode("default")
	if err := os.Remove(filepath.Join(b.dir, "written.txt")); err != nil {
		t.Fatal(err)
	}
	var asked int
	lines = turnAnswering(t, b, "WRITEFILE please", func(r []byte) string {
		asked++
		return denyAnswer(get(r, "request_id").Str, "no")
	})
	complete(t, lines)
	if asked != 1 {
		t.Errorf("%d permission requests for a Write in default mode, want 1", asked)
	}
}

// TestIPCSessionCommands: new, resume, fork and continue respawn the CLI;
// session_init carries the resulting id, and the model sees the history of
// the resumed or forked session (the fake model's request bodies).
func ipcSessionCommands(t *testing.T, s *ipcSession) {
	b, s1 := s.b, s.sid
	tokA := token("alpha")
	complete(t, turn(t, b, "hello "+tokA))

	// new: a fresh id at once, and a fresh conversation.
	b.send(`{"type":"session_command","command":"new"}`)
	lines := ipcUntil(t, b, "session_init after new", isType("session_init"))
	s2 := get(lines[len(lines)-1], "session_id").Str
	if s2 == s1 || s2 == "" {
		t.Fatalf("session_init after new: %s (first session %s)", s2, s1)
	}
	tokB := token("bravo")
	lines = turn(t, b, "hello "+tokB)
	complete(t, lines)
	noSessionChange(t, lines, s2)
	if seenByModel(t, tokB, tokA) {
		t.Errorf("the new session's model call holds the first session's prompt")
	}

	// resume the first session: session_init with its id; its history.
	b.send(`{"type":"session_command","command":"resume","session_id":"` + s1 + `"}`)
	lines = ipcUntil(t, b, "session_init after resume", isType("session_init"))
	if got := get(lines[len(lines)-1], "session_id").Str; got != s1 {
		t.Fatalf("session_init after resume: %s, want %s", got, s1)
	}
	tokC := token("charlie")
	lines = turn(t, b, "hello "+tokC)
	complete(t, lines)
	noSessionChange(t, lines, s1)
	if !seenByModel(t, tokC, tokA) {
		t.Errorf("after resume the model did not get the first session's history")
	}

	// fork the current (first) session: a new id; the history goes along.
	b.send(`{"type":"session_command","command":"fork"}`)
	lines = ipcUntil(t, b, "session_init after fork", isType("session_init"))
	s3 := get(lines[len(lines)-1], "session_id").Str
	if s3 == s1 || s3 == s2 || s3 == "" {
		t.Fatalf("session_init after fork: %s (earlier %s, %s)", s3, s1, s2)
	}
	tokD := token("delta")
	lines = turn(t, b, "hello "+tokD)
	complete(t, lines)
	noSessionChange(t, lines, s3)
	if !seenByModel(t, tokD, tokA) || !seenByModel(t, tokD, tokC) {
		t.Errorf("after fork the model did not get the forked session's history")
	}

	// continue: the most recent session in the cwd (the fork), announced
	// when the first turn reveals it.
	b.send(`{"type":"session_command","command":"new"}`)
	lines = ipcUntil(t, b, "session_init after new", isType("session_init"))
	s4 := get(lines[len(lines)-1], "session_id").Str
	if s4 == s3 || s4 == s1 {
		t.Fatalf("session_init after the second new: %s", s4)
	}
	b.send(`{"type":"session_command","command":"continue"}`)
	tokE := token("echo")
	lines = turn(t, b, "hello "+tokE)
	complete(t, lines)
	if ids := sessionInits(lines); len(ids) != 1 || ids[0] != s3 {
		t.Errorf("session_init after continue: %v, want [%s] (the most recent session)", ids, s3)
	}
	if !seenByModel(t, tokE, tokD) {
		t.Errorf("after continue the model did not get the most recent session's history")
	}

	b.send(`{"type":"session_command","command":"reboot"}`)
	expectError(t, b, "invalid_value", "command")
	s.sid = s3 // the session ccbridge is in now, for the next scenario
}

// TestIPCStartFlags: the session flags ccbridge starts with. A new session
// and --resume (also with --fork-session) are announced at once; --continue
// only when the first turn reveals the id.
func TestIPCStartFlags(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	cwd := t.TempDir()
	start := func(args ...string) *bridge {
		t.Helper()
		return startBridge(t, append([]string{"--ui", "ipc", "--cwd", cwd}, args...), "HOME="+home)
	}
	stop := func(b *bridge) {
		t.Helper()
		b.stdin.Close()
		for _, l := range b.rest() {
			checkIPCLine(t, l)
			if isTerminal(l) {
				t.Errorf("a terminal message after EOF on an idle session: %.300s", l)
			}
		}
		if code := b.wait(); code != 0 {
			t.Logf("exit code %d at EOF after a completed turn", code)
		}
	}

	b := start()
	s1 := expectSessionInit(t, b)
	tokA := token("alpha")
	lines := turn(t, b, "hello "+tokA)
	complete(t, lines)
	noSessionChange(t, lines, s1)
	stop(b)

	b = start("--resume", s1)
	if got := expectSessionInit(t, b); got != s1 {
		t.Errorf("--resume %s announced %s", s1, got)
	}
	tokB := token("bravo")
	lines = turn(t, b, "hello "+tokB)
	complete(t, lines)
	noSessionChange(t, lines, s1)
	if !seenByModel(t, tokB, tokA) {
		t.Errorf("--resume: the model did not get the session's history")
	}
	stop(b)

	b = start("--resume", s1, "--fork-session")
	fork := expectSessionInit(t, b)
	if fork == s1 {
		t.Fatalf("--fork-session announced the resumed id %s", s1)
	}
	tokC := token("charlie")
	lines = turn(t, b, "hello "+tokC)
	complete(t, lines)
	noSessionChange(t, lines, fork)
	if !seenByModel(t, tokC, tokB) {
		t.Errorf("--fork-session: the model did not get the session's history")
	}
	stop(b)

	b = start("--continue")
	if early := quiet(t, b, 1500*time.Millisecond); len(early) != 0 {
		t.Errorf("--continue: lines before the first turn:\n%s", lastLines(early, 4))
	}
	tokD := token("delta")
	lines = turn(t, b, "hello "+tokD)
	complete(t, lines)
	if ids := sessionInits(lines); len(ids) != 1 || ids[0] != fork {
		t.Errorf("--continue: session_init %v, want [%s] (the most recent session)", ids, fork)
	}
	if i, j := indexOf(lines, isType("session_init")), indexOf(lines, isType("system_metadata")); i >= 0 && j >= 0 && i > j {
		t.Errorf("--continue: session_init after system_metadata")
	}
	if !seenByModel(t, tokD, tokC) {
		t.Errorf("--continue: the model did not get the most recent session's history")
	}
	stop(b)
}

// TestIPCChildKilled: the ipc scenarios that replace the CLI and then go
// on in the same session (after a kill the next user_message resumes it
// in a new CLI; session_command resume of the session starts one), each a
// subtest named for the test it was alone, one after the other in one
// ccbridge (see inOneSession): one CLI start, and one again after each
// kill or resume, where each scenario alone started two. "first turn
// streaming" is the session's first turn; TestIPCSessionCommands, which
// leaves ccbridge in another session (its id then the session's), the
// last but one, before TestFaultTurnsIPCKilled/during shutdown, which ends
// ccbridge. None lets a Bash run, whose
// file two of them check is not there. --interrupt-timeout 2s is
// TestFaultStdinIPCStoppedCLI/interrupt's; the others send no interrupt
// message.
func TestIPCChildKilled(t *testing.T) {
	t.Parallel()
	inOneSession(t, ipcOpen("--interrupt-timeout", "2s"), ipcBind,
		scenario[*ipcSession]{"TestIPCChildKilledOtherTimes/first turn streaming", ipcKilledFirstTurnStreaming},
		scenario[*ipcSession]{"TestIPCChildKilledMidTurn", ipcChildKilledMidTurn},
		scenario[*ipcSession]{"TestIPCChildKilledOtherTimes/with a queued prompt", ipcKilledWithAQueuedPrompt},
		scenario[*ipcSession]{"TestIPCChildKilledOtherTimes/between turns", ipcKilledBetweenTurns},
		scenario[*ipcSession]{"TestFaultTurnsIPCKilled/input open", ipcFaultTurnsKilledInputOpen},
		scenario[*ipcSession]{"TestIPCSessionCommandMidTurn", ipcSessionCommandMidTurn},
		scenario[*ipcSession]{"TestFaultStdinIPCStoppedCLI/interrupt", ipcStoppedCLIInterrupt},
		scenario[*ipcSession]{"TestIPCSessionCommands", ipcSessionCommands},
		scenario[*ipcSession]{"TestFaultTurnsIPCKilled/during shutdown", ipcFaultTurnsKilled("during shutdown")},
	)
}

// ipcStoppedCLIInterrupt is TestFaultStdinIPCStoppedCLI/interrupt; it
// stops the CLI and reads /proc, so only Linux runs it
// (fault_stdin_test.go).
var ipcStoppedCLIInterrupt = func(t *testing.T, _ *ipcSession) { t.Skip("Linux only: SIGSTOP and /proc") }

// TestIPCChildKilledMidTurn: the CLI is killed while a permission prompt is
// open: control_request_cancelled for it, the turn ends with one error
// child_exited (recoverable false); the next user_message resumes the same
// session in a new CLI.
func ipcChildKilledMidTurn(t *testing.T, s *ipcSession) {
	b, sid := s.b, s.sid
	tokA := token("alpha")
	complete(t, turn(t, b, "hello "+tokA))

	b.send(userMessage("BASH please"))
	lines := ipcUntil(t, b, "the permission request", func(l []byte) bool {
		if isTerminal(l) {
			t.Fatalf("the turn ended before the permission request: %.400s", l)
		}
		return typeOf(l) == "control_request_forward"
	})
	reqID := get(lines[len(lines)-1], "request_id").Str
	pid := killChild(t, b)
	lines = finishTurn(t, b, nil)
	last := lines[len(lines)-1]
	if typeOf(last) != "error" || get(last, "code").Str != "child_exited" || get(last, "recoverable").Type != gjson.False {
		t.Fatalf("the killed turn ended with %.400s", last)
	}
	msg := strings.ToLower(get(last, "message").Str)
	if !strings.Contains(msg, "sigkill") && !strings.Contains(msg, "killed") && !strings.Contains(msg, "signal") {
		t.Errorf("child_exited message does not say the CLI was killed: %q", get(last, "message").Str)
	}
	if get(last, "exit_code").Int() != int64(128+syscall.SIGKILL) || get(last, "stderr").Type != gjson.String {
		t.Errorf("child_exited error without exit_code %d and the stderr tail: %.400s", 128+int(syscall.SIGKILL), last)
	}
	cancelled := ofType(lines, "control_request_cancelled")
	if len(cancelled) != 1 || get(cancelled[0], "request_id").Str != reqID || get(cancelled[0], "reason").Str != "child_exited" {
		t.Errorf("control_request_cancelled for the open prompt %s (want reason child_exited):\n%s", reqID, lastLines(cancelled, 3))
	}
	for _, typ := range []string{"turn_complete", "turn_cancelled"} {
		if n := len(ofType(lines, typ)); n != 0 {
			t.Errorf("%d %s besides the child_exited error", n, typ)
		}
	}
	// An answer to the cancelled prompt is refused (no CLI runs now:
	// unknown_request or no_session are both documented).
	b.send(allowAnswer(reqID))
	if l, err := recv(t, b, ipcWait); err != nil || typeOf(l) != "error" || get(l, "recoverable").Type != gjson.True ||
		(get(l, "code").Str != "unknown_request" && get(l, "code").Str != "no_session") {
		t.Errorf("answer to the cancelled prompt: %v %.400s", err, l)
	}
	for _, x := range quiet(t, b, 200*time.Millisecond) {
		t.Errorf("another line after the refused answer: %.400s", x)
	}

	tokB := token("bravo")
	lines = turn(t, b, "hello "+tokB)
	complete(t, lines)
	noSessionChange(t, lines, sid)
	if ids := sessionInits(lines); len(ids) != 0 {
		t.Errorf("the resumed session was announced again: %v", ids)
	}
	if np := b.childPID(); np == pid {
		t.Errorf("the CLI was not respawned (pid %d)", np)
	}
	if !seenByModelIn(t, b.api, tokB, tokA) {
		t.Errorf("the respawned CLI did not resume the session's history")
	}
	if _, err := os.Stat(filepath.Join(b.dir, "bash_touched.txt")); err == nil {
		t.Errorf("the Bash of the killed turn ran")
	}
}

// killChild SIGKILLs the CLI and returns its pid.
func killChild(t *testing.T, b *bridge) int {
	t.Helper()
	pid := b.childPID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestIPCChildKilledOtherTimes: the CLI killed while text streams in the
// session's first turn (error recoverable false), and between turns (error
// recoverable true, not a terminal message); either way the next
// user_message continues the same session.
func ipcKilledFirstTurnStreaming(t *testing.T, s *ipcSession) {
	b, sid := s.b, s.sid
	tokA := token("alpha")
	b.send(userMessage("SLOW " + tokA))
	ipcUntil(t, b, "streaming text", func(l []byte) bool {
		if isTerminal(l) {
			t.Fatalf("the turn ended before it streamed: %.400s", l)
		}
		return typeOf(l) == "assistant_text" && get(l, "is_partial").Bool()
	})
	killChild(t, b)
	lines := finishTurn(t, b, nil)
	last := lines[len(lines)-1]
	if typeOf(last) != "error" || get(last, "code").Str != "child_exited" || get(last, "exit_code").Int() != int64(128+syscall.SIGKILL) {
		t.Fatalf("the killed turn ended with %.400s", last)
	}
	tokB := token("bravo")
	lines = turn(t, b, "hello "+tokB)
	complete(t, lines)
	noSessionChange(t, lines, sid)
	if ids := sessionInits(lines); len(ids) != 0 {
		t.Errorf("the session was announced again: %v", ids)
	}
	if !seenByModelIn(t, b.api, tokB, tokA) {
		t.Errorf("the respawned CLI did not resume the session's history")
	}
}

func ipcKilledWithAQueuedPrompt(t *testing.T, s *ipcSession) {
	// Two prompts are outstanding when the CLI dies: each must still
	// end with exactly one terminal message.
	b, sid := s.b, s.sid
	file := sessionFile(t, b.home, b.dir, sid)
	data, _ := os.ReadFile(file)
	before := count(bytes.Split(data, []byte("\n")), isEnqueue)
	b.send(userMessage("SLOW please"))
	ipcUntil(t, b, "streaming text", func(l []byte) bool {
		if isTerminal(l) {
			t.Fatalf("the turn ended before it streamed: %.400s", l)
		}
		return typeOf(l) == "assistant_text" && get(l, "is_partial").Bool()
	})
	b.send(userMessage("hello queued"))
	// The CLI has read it once it has saved its second enqueue.
	waitSessionFile(t, file, "the queued prompt", before+2, isEnqueue)
	killChild(t, b)
	lines := ipcUntil(t, b, "the first terminal message", isTerminal)
	lines = append(lines, quiet(t, b, 2*time.Second)...)
	var terminals []string
	for _, l := range lines {
		if isTerminal(l) {
			terminals = append(terminals, typeOf(l)+"/"+get(l, "code").Str+get(l, "reason").Str)
		}
	}
	if len(terminals) != 2 {
		t.Errorf("%d terminal messages %v for the 2 outstanding prompts when the CLI died, want 2", len(terminals), terminals)
	}
	complete(t, turn(t, b, "hello after"))
}

func ipcKilledBetweenTurns(t *testing.T, s *ipcSession) {
	b, sid := s.b, s.sid
	tokA := token("alpha")
	complete(t, turn(t, b, "hello "+tokA))
	killChild(t, b)
	l, err := recv(t, b, ipcWait)
	if err != nil || typeOf(l) != "error" || get(l, "code").Str != "child_exited" || get(l, "recoverable").Type != gjson.True {
		t.Fatalf("after the idle CLI was killed: %v %.400s", err, l)
	}
	for _, x := range quiet(t, b, ipcQuiet) {
		t.Errorf("another line after child_exited: %.400s", x)
	}
	tokB := token("bravo")
	lines := turn(t, b, "hello "+tokB)
	complete(t, lines)
	noSessionChange(t, lines, sid)
	if !seenByModelIn(t, b.api, tokB, tokA) {
		t.Errorf("the respawned CLI did not resume the session's history")
	}
}

// TestIPCForkKilledBeforeFirstTurn: ccbridge started with --resume ID
// --fork-session announces the fork's id; the CLI dies before the fork's
// first turn; the next user_message goes on in the fork, with the resumed
// history.
func TestIPCForkKilledBeforeFirstTurn(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), t.TempDir()
	start := func(args ...string) *bridge {
		t.Helper()
		return startBridge(t, append([]string{"--ui", "ipc", "--cwd", cwd}, args...), "HOME="+home)
	}
	b := start()
	s1 := expectSessionInit(t, b)
	tokA := token("alpha")
	complete(t, turn(t, b, "hello "+tokA))
	b.stdin.Close()
	b.rest()
	b.wait()

	b = start("--resume", s1, "--fork-session")
	fork := expectSessionInit(t, b)
	if fork == s1 {
		t.Fatalf("the fork was announced with the resumed id")
	}
	execed(t, b.childPID()) // the CLI has started
	killChild(t, b)
	l, err := recv(t, b, ipcWait)
	if err != nil || typeOf(l) != "error" || get(l, "code").Str != "child_exited" || get(l, "recoverable").Type != gjson.True {
		t.Fatalf("after the idle CLI was killed: %v %.400s", err, l)
	}
	tokB := token("bravo")
	lines := turn(t, b, "hello "+tokB)
	complete(t, lines)
	noSessionChange(t, lines, fork)
	if !seenByModel(t, tokB, tokA) {
		t.Errorf("the fork's first turn did not get the resumed history")
	}
}

// TestIPCSessionCommandMidTurn: a session_command while a permission prompt
// is open cancels the prompt and the turn (one turn_cancelled, reason
// session_command); the resumed session goes on.
func ipcSessionCommandMidTurn(t *testing.T, s *ipcSession) {
	b, sid := s.b, s.sid
	tokA := token("alpha")
	complete(t, turn(t, b, "hello "+tokA))
	b.send(userMessage("BASH please"))
	lines := ipcUntil(t, b, "the permission request", func(l []byte) bool {
		if isTerminal(l) {
			t.Fatalf("the turn ended before the permission request: %.400s", l)
		}
		return typeOf(l) == "control_request_forward"
	})
	reqID := get(lines[len(lines)-1], "request_id").Str
	b.send(`{"type":"session_command","command":"resume"}`)
	lines = finishTurn(t, b, nil)
	last := lines[len(lines)-1]
	if typeOf(last) != "turn_cancelled" || get(last, "reason").Str != "session_command" {
		t.Fatalf("the turn ended with %.400s", last)
	}
	cancelled := ofType(lines, "control_request_cancelled")
	if len(cancelled) != 1 || get(cancelled[0], "request_id").Str != reqID {
		t.Errorf("control_request_cancelled for the open prompt %s:\n%s", reqID, lastLines(cancelled, 3))
	}
	tokB := token("bravo")
	lines = turn(t, b, "hello "+tokB)
	complete(t, lines)
	noSessionChange(t, lines, sid)
	if ids := sessionInits(lines); len(ids) != 0 {
		t.Errorf("resuming the current session announced it again: %v", ids)
	}
	if !seenByModelIn(t, b.api, tokB, tokA) {
		t.Errorf("after resume the model did not get the session's history")
	}
	if _, err := os.Stat(filepath.Join(b.dir, "bash_touched.txt")); err == nil {
		t.Errorf("the Bash of the cancelled turn ran")
	}
}

// TestIPCQueuedAndIdle: two prompts sent at once get one turn_complete
// each; an interrupt while idle does nothing.
func ipcQueuedAndIdle(t *testing.T, s *ipcSession) {
	b, sid := s.b, s.sid
	b.send(userMessage("hello one"))
	b.send(userMessage("hello two"))
	first := ipcUntil(t, b, "the first turn's end", isTerminal)
	complete(t, first)
	second := finishTurn(t, b, nil)
	complete(t, second)
	noSessionChange(t, append(first, second...), sid)

	b.send(`{"type":"interrupt"}`)
	for _, l := range quiet(t, b, time.Second) {
		t.Errorf("output after an interrupt while idle: %.400s", l)
	}
	complete(t, turn(t, b, "hello three"))
}

// TestIPCBadInput: every malformed inbound line gives one recoverable error
// naming the problem, nothing reaches the CLI, and the session goes on.
func ipcBadInput(t *testing.T, s *ipcSession) {
	b := s.b
	refused := token("refused")
	big := base64.StdEncoding.EncodeToString(append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 5<<20)...))
	jpeg := base64.StdEncoding.EncodeToString([]byte{0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 'J', 'F', 'I', 'F', 0})
	// 10 bytes: base64 with "==" padding, sent without it.
	unpadded := strings.TrimRight(base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\n\x00\x00")), "=")
	bmp := base64.StdEncoding.EncodeToString([]byte("BM\x3a\x00\x00\x00\x00\x00\x00\x00\x36\x00\x00\x00"))
	cases := []struct {
		name, line, code, field, inReplyTo string
	}{
		{"malformed JSON", `{this is not json`, "invalid_json", "", ""},
		{"not UTF-8", "{\"type\":\"user_message\",\"text\":\"\xff\xfe\"}", "invalid_json", "", ""},
		{"not an object", `["user_message"]`, "invalid_json", "", ""},
		{"unknown type", `{"type":"frobnicate"}`, "unknown_type", "type", "frobnicate"},
		{"no type", `{"text":"hello"}`, "missing_field", "type", ""},
		{"type not a string", `{"type":7}`, "wrong_type", "type", ""},
		{"user_message without text", `{"type":"user_message"}`, "missing_field", "text", "user_message"},
		{"text of the wrong type", `{"type":"user_message","text":42}`, "wrong_type", "text", "user_message"},
		{"attachments not an array", userMessage(refused)[:len(userMessage(refused))-1] + `,"attachments":"x"}`, "wrong_type", "attachments", "user_message"},
		{"attachment without content", userMessage(refused, `{"kind":"image","media_type":"image/png"}`), "missing_field", "attachments.0.content", "user_message"},
		{"bmp attachment", userMessage(refused, imageAttachment("image/bmp", bmp)), "attachment_refused", "attachments.0", "user_message"},
		{"attachment over 5 MB", userMessage(refused, imageAttachment("image/png", big)), "attachment_refused", "attachments.0", "user_message"},
		{"jpeg bytes as png", userMessage(refused, imageAttachment("image/png", jpeg)), "attachment_refused", "attachments.0", "user_message"},
		{"base64 not padded", userMessage(refused, imageAttachment("image/png", unpadded)), "attachment_refused", "attachments.0", "user_message"},
		{"tool_approval without request_id", `{"type":"tool_approval","decision":"allow"}`, "missing_field", "request_id", "tool_approval"},
		{"decision out of its set", `{"type":"tool_approval","request_id":"R1","decision":"maybe"}`, "invalid_value", "decision", "tool_approval"},
		{"answer to an unknown request", `{"type":"tool_approval","request_id":"no-such-request","decision":"allow"}`, "unknown_request", "request_id", "tool_approval"},
		{"question for an unknown request", `{"type":"question_answer","request_id":"no-such-request","answers":{"Q?":"A"}}`, "unknown_request", "request_id", "question_answer"},
		{"answers of the wrong type", `{"type":"question_answer","request_id":"no-such-request","answers":"A"}`, "wrong_type", "answers", "question_answer"},
		{"permission_mode without mode", `{"type":"permission_mode"}`, "missing_field", "mode", "permission_mode"},
		{"cancel_queued not a bool", `{"type":"interrupt","cancel_queued":"yes"}`, "wrong_type", "cancel_queued", "interrupt"},
		{"stop_task with a number", `{"type":"stop_task","task_id":5}`, "wrong_type", "task_id", "stop_task"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b.send(c.line)
			e := expectError(t, b, c.code, c.field)
			if c.inReplyTo != "" && get(e, "in_reply_to").Str != c.inReplyTo {
				t.Errorf("in_reply_to %q, want %q: %.300s", get(e, "in_reply_to").Str, c.inReplyTo, e)
			}
		})
	}
	// The session goes on; none of the refused prompts reached the model.
	tok := token("after")
	lines := turn(t, b, userMessage("hello "+tok, `{"kind":"text","name":"notes.txt","content":"attached `+tok+`"}`))
	complete(t, lines)
	r := modelRequestIn(t, b.api, tok)
	if !bytes.Contains(r.Body, []byte("hello "+tok)) || !bytes.Contains(r.Body, []byte("attached "+tok)) {
		t.Errorf("the model did not get both the text and the text attachment")
	}
	if bytes.Contains(r.Body, []byte(refused)) {
		t.Errorf("a refused user_message reached the model")
	}
	// A bad line mid-turn does not disturb the turn.
	b.send(userMessage("SLOW please"))
	ipcUntil(t, b, "streaming text", func(l []byte) bool {
		return typeOf(l) == "assistant_text" && get(l, "is_partial").Bool()
	})
	b.send(`{"type":"frobnicate"}`)
	lines = ipcUntil(t, b, "the error", isType("error"))
	if e := lines[len(lines)-1]; get(e, "code").Str != "unknown_type" || get(e, "recoverable").Type != gjson.True {
		t.Errorf("mid-turn error: %.300s", e)
	}
	b.send(`{"type":"interrupt"}`)
	lines = finishTurn(t, b, nil)
	if typeOf(lines[len(lines)-1]) != "turn_cancelled" {
		t.Errorf("the turn after a mid-turn bad line ended with %.300s", lines[len(lines)-1])
	}
}

// ---- what every dialect on the session core does the same way (docs/design.md)

// TestIPCLineCap: the two ipc scenarios with a CLI line cap, each a
// subtest named for the test it was alone, in one ccbridge and one CLI
// session (see inOneSession). The cap is TestIPCAlignCLILineTooLong's
// (--max-cli-line 100000); a 300 kB text's assistant and result lines,
// which TestFaultToolongIPC is about, are over it as over tooLongCap.
// TestFaultTurnsIPCKilled/after the end of input comes last: it ends the
// input and kills the CLI, and ccbridge ends.
func TestIPCLineCap(t *testing.T) {
	t.Parallel()
	inOneSession(t, ipcOpen("--max-cli-line", "100000"), ipcBind,
		scenario[*ipcSession]{"TestIPCAlignCLILineTooLong", ipcAlignCLILineTooLong},
		scenario[*ipcSession]{"TestFaultToolongIPC", ipcToolong},
		scenario[*ipcSession]{"TestFaultTurnsIPCKilled/after the end of input", ipcFaultTurnsKilled("after the end of input")},
	)
}

// TestIPCAlignCLILineTooLong: a CLI line over --max-cli-line (here the
// assistant message and the result of a 300 kB text) is dropped and
// reported as error line_too_long; the turn, whose result was dropped,
// still ends (turn_complete with is_error), and the session goes on.
func ipcAlignCLILineTooLong(t *testing.T, s *ipcSession) {
	b := s.b
	lines := turn(t, b, "BIGTEXT 300000")
	e := first(lines, func(l []byte) bool { return typeOf(l) == "error" && get(l, "code").Str == "line_too_long" })
	if e == nil || !get(e, "recoverable").Bool() || !strings.Contains(get(e, "message").Str, "CLI line") {
		t.Errorf("line_too_long error: %.400s", e)
	}
	if end := lines[len(lines)-1]; typeOf(end) != "turn_complete" || !get(end, "is_error").Bool() {
		t.Errorf("the turn whose result was dropped ended with %.400s", end)
	}
	if len(ofType(lines, "assistant_text")) == 0 {
		t.Errorf("no text streamed before the long line; the lines:\n%s", lastLines(lines, 8))
	}
	complete(t, turn(t, b, "hello "+token("after")))
}

// TestIPCAlignResumeRefusedBeforeAnyChild: a session_command resume of a
// session whose file holds no conversation is refused with
// session_not_found before the CLI is stopped, and the session goes on in
// the same CLI.
func ipcAlignResumeRefusedBeforeAnyChild(t *testing.T, s *ipcSession) {
	b, sid := s.b, s.sid
	home, cwd := b.home, b.dir
	complete(t, turn(t, b, "hello "+token("first")))
	pid := b.childPID()

	real, err := filepath.EvalSymlinks(cwd)
	if err != nil {
		t.Fatal(err)
	}
	dir := clifiles.ProjectDir(filepath.Join(home, ".claude"), real)
	const empty = "0b7ad0e4-5a0c-4a6e-9d4e-2f2f7f6e8a11"
	if err := os.WriteFile(filepath.Join(dir, empty+".jsonl"), []byte(`{"type":"summary","summary":"nothing said"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{empty, "5a4b0c1d-0000-4000-8000-000000000000"} {
		b.send(`{"type":"session_command","command":"resume","session_id":"` + id + `"}`)
		l, err := recv(t, b, ipcWait)
		if err != nil || typeOf(l) != "error" || get(l, "code").Str != "session_not_found" || !get(l, "recoverable").Bool() {
			t.Fatalf("resume of %s: %v %.400s", id, err, l)
		}
	}
	lines := turn(t, b, "hello "+token("second"))
	complete(t, lines)
	noSessionChange(t, lines, sid)
	if b.childPID() != pid {
		t.Errorf("the CLI was replaced (pid %d, then %d)", pid, b.childPID())
	}
}
