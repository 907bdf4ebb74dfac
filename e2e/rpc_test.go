package e2e

// End-to-end tests of the rpc dialect (docs/protocol/rpc.md): `ccbridge
// --ui rpc` in front of the real Claude Code CLI and the fake Messages API;
// the client helpers (rpcConn) are in harness_test.go.

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/rpc"
	"github.com/ccbridge/ccbridge/session/clifiles"
)

// rpcSession is the ccbridge --ui rpc that TestRPCOneSession's scenarios
// share: its working directory (over 200 characters, for
// TestRPCAlignSessionListLongCWD) and HOME.
type rpcSession struct {
	c         *rpcConn
	home, dir string
	runs      []string // TestRPCLineCap: the runs of TestFaultTurnsRPC's scenarios
}

// TestRPCOneSession: the rpc scenarios that leave the connection as they
// found it (no run, the same CLI), each a subtest named for the test it
// was alone, in one ccbridge and one CLI, run after run (see
// inOneSession): one CLI start for nine rules, then the end of input that
// ended each of them, with the dialect's rules checked on every line the
// connection saw (rpcConn.close). Each scenario sends its own initialize
// (a UI may send it again; the UI capabilities are the same, none, but
// TestRPCPermissions', which comes last so that no other runs with them;
// no scenario before it writes written.txt or bash_touched.txt, which it
// looks for). The working directory's long path is
// TestRPCAlignSessionListLongCWD's; --permission-mode default is
// TestSteerRPC's and TestRPCPermissions' (the CLI's default).
func TestRPCOneSession(t *testing.T) {
	t.Parallel()
	open := func(t *testing.T) *rpcSession {
		t.Helper()
		home := t.TempDir()
		dir := filepath.Join(t.TempDir(), strings.Repeat("a", 70), strings.Repeat("b", 70), strings.Repeat("c", 70))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return &rpcSession{c: startRPC(t, []string{"--cwd", dir, "--permission-mode", "default"}, "HOME="+home), home: home, dir: dir}
	}
	bind := func(s *rpcSession, t *testing.T) { s.c.t, s.c.b.t = t, t }
	inOneSession(t, open, bind,
		scenario[*rpcSession]{"TestRPCRunLifecycle", rpcRunLifecycle},
		scenario[*rpcSession]{"TestRPCModelSetRefusesBadNames", rpcModelSetRefusesBadNames},
		scenario[*rpcSession]{"TestRPCInvalidUTF8IsParseError", rpcInvalidUTF8IsParseError},
		scenario[*rpcSession]{"TestRPCAlignResumeRefusedBeforeAnyChild", rpcAlignResumeRefusedBeforeAnyChild},
		scenario[*rpcSession]{"TestRPCAlignSessionListLongCWD", rpcAlignSessionListLongCWD},
		scenario[*rpcSession]{"TestSteerRPC", rpcSteer},
		scenario[*rpcSession]{"TestFaultTurnsRPC/three at once", rpcFaultTurnsThreeAtOnce},
		scenario[*rpcSession]{"TestFaultNoPayloadInWarnings/rpc-debug", func(t *testing.T, s *rpcSession) {
			noPayloadCheck(t, s.c.b, noPayloadRPCDebug, func() {})
		}},
		scenario[*rpcSession]{"TestRPCPermissions", rpcPermissions},
		scenario[*rpcSession]{"end of input", func(t *testing.T, s *rpcSession) { s.c.close() }},
	)
}

// TestRPCRunLifecycle: initialize, a run with its events, bad input of
// every kind, a busy runtime, run.cancel mid-stream (idempotent, retried,
// nothing after cancelled), the dedupe window, and the connection going on.
func rpcRunLifecycle(t *testing.T, s *rpcSession) {
	c := s.c
	init := c.initialize("")
	if init.Get("protocol_version").Str != "0" || init.Get("server.name").Str != "ccbridge" {
		t.Errorf("initialize: %s", init.Raw)
	}
	caps := init.Get("server_capabilities")
	for _, k := range []string{"supports_run_cancel", "supports_ui_requests", "supports_mcp_list", "supports_skills_list", "supports_context_inspect", "supports_shell_exec"} {
		if !caps.Get(k).Bool() {
			t.Errorf("capability %s is not true: %s", k, caps.Raw)
		}
	}
	if !caps.Get("supports_tool_call").Bool() || caps.Get("supports_diagnostics").Bool() {
		t.Errorf("tool.call not claimed, or diagnostics claimed: %s", caps.Raw)
	}
	sid := init.Get("runtime.session_id").Str
	if !mapping.ValidSessionID(sid) || init.Get("runtime.claude_code_version").Str != "2.1.330" {
		t.Errorf("initialize runtime: %s", init.Get("runtime").Raw)
	}

	// A whole run.
	run1, lines, status := c.runText("hello there")
	if status != rpc.StatusCompleted {
		t.Fatalf("%s ended %s", run1, status)
	}
	if findLine(lines, isRunStatus(run1, rpc.StatusRunning)) == nil {
		t.Errorf("no run.status running for %s", run1)
	}
	types := strings.Join(eventTypes(lines, run1), ",")
	for _, want := range []string{"step_start", "reasoning", "text.delta", "text", "step_complete", "final"} {
		if !strings.Contains(","+types+",", ","+want+",") {
			t.Errorf("no %s event in %s", want, types)
		}
	}
	if final := findLine(lines, isEvent(run1, "final")); gjson.GetBytes(final, "params.event.content").Str != "Hello from the mock model. " {
		t.Errorf("final: %s", final)
	}
	ctx := findLine(lines, isMethod(rpc.MethodRunContext))
	if p := gjson.GetBytes(ctx, "params.context_left_percent"); ctx == nil || p.Num < 0 || p.Num > 100 || gjson.GetBytes(ctx, "params.run_id").Str != run1 {
		t.Errorf("run.context: %s", ctx)
	}
	if findLine(lines, isMethod(rpc.MethodRunDiagnostics)) != nil {
		t.Errorf("run.diagnostics without --diagnostics")
	}

	// Bad input: each gets its error and the connection goes on.
	c.send("{this is not json")
	c.rpcError("null", rpc.CodeParseError)
	c.send("\xff\xfe not utf-8")
	c.rpcError("null", rpc.CodeParseError)
	c.send(`[1,2,3]`)
	c.rpcError("null", rpc.CodeInvalidRequest)
	c.send(`{"jsonrpc":"1.0","id":"old","method":"initialize"}`)
	c.rpcError(`"old"`, rpc.CodeInvalidRequest)
	c.rpcError(c.call("does.not.exist", `{}`), rpc.CodeMethodNotFound)
	c.rpcError(c.call("tool.call", `{"name":"x"}`), rpc.CodeInvalidParams)
	c.rpcError(c.call("run.start", `{"input":{"type":"image","text":"x"}}`), rpc.CodeInvalidParams)
	c.rpcError(c.call("run.start", `[1]`), rpc.CodeInvalidParams)
	c.rpcError(c.call("run.start", `{"input":{"type":"text","text":"x"},"session_id":"../../etc"}`), rpc.CodeInvalidParams)
	c.rpcError(c.call("initialize", `{"protocol_version":0}`), rpc.CodeInvalidParams)
	c.rpcError(c.call("run.cancel", `{"run_id":"run-nope"}`), rpc.CodeRunNotFound)
	c.send(`{"jsonrpc":"2.0","id":"ui-999","result":{"ok":true}}`)
	rej := c.until("ui.response.rejected", isMethod(rpc.MethodUIResponseReject))
	if l := rej[len(rej)-1]; gjson.GetBytes(l, "params.id").Str != "ui-999" || gjson.GetBytes(l, "params.error.code").Int() != rpc.CodeInvalidRequest {
		t.Errorf("rejection: %s", l)
	}
	c.send(`{"jsonrpc":"2.0","method":"no.such.notification"}`) // dropped, no answer

	// Busy, then cancel mid-stream.
	run2 := c.start("SLOW please")
	c.until("streaming text", isEvent(run2, "text.delta"))
	c.rpcError(c.call("run.start", `{"input":{"type":"text","text":"hello"}}`), rpc.CodeRuntimeBusy)
	cancelID := `"cancel-1"`
	c.callID(cancelID, "run.cancel", `{"run_id":"`+run2+`","reason":"user pressed stop"}`)
	lines = c.until("the cancel's answer", isReply(cancelID))
	first := lines[len(lines)-1]
	if r := gjson.GetBytes(first, "result"); !r.Get("ok").Bool() || r.Get("status").Str != rpc.StatusCancelled {
		t.Errorf("run.cancel: %s", first)
	}
	st := findLine(c.seen, isRunStatus(run2, rpc.StatusCancelled))
	if st == nil {
		lines = c.until("run.status cancelled", isRunStatus(run2, rpc.StatusCancelled))
		st = lines[len(lines)-1]
	}
	if gjson.GetBytes(st, "params.message").Str != "user pressed stop" {
		t.Errorf("cancelled status: %s", st)
	}
	// The same request again (a retry): the same answer, nothing else.
	c.callID(cancelID, "run.cancel", `{"run_id":"`+run2+`","reason":"user pressed stop"}`)
	lines = c.until("the retried cancel's answer", isReply(cancelID))
	if again := lines[len(lines)-1]; !bytes.Equal(again, first) {
		t.Errorf("retried run.cancel: %s, first %s", again, first)
	}
	// The same id for another request: refused.
	c.callID(cancelID, "run.cancel", `{"run_id":"`+run1+`"}`)
	c.rpcError(cancelID, rpc.CodeInvalidRequest)
	// Idempotent with a new id; a finished run is left as it is.
	if r := c.result(c.call("run.cancel", `{"run_id":"`+run2+`"}`)); !r.Get("ok").Bool() || r.Get("status").Str != rpc.StatusCancelled {
		t.Errorf("second run.cancel: %s", r.Raw)
	}
	if r := c.result(c.call("run.cancel", `{"run_id":"`+run1+`"}`)); r.Get("ok").Bool() || r.Get("status").Str != rpc.StatusCompleted {
		t.Errorf("run.cancel of a completed run: %s", r.Raw)
	}
	// The session goes on; a retried run.start starts one run.
	c.callID(`"start-dup"`, "run.start", `{"input":{"type":"text","text":"hello again"}}`)
	c.callID(`"start-dup"`, "run.start", `{"input":{"type":"text","text":"hello again"}}`)
	lines = c.until("run.start's answer", isReply(`"start-dup"`))
	run3 := gjson.GetBytes(lines[len(lines)-1], "result.run_id").Str
	lines = c.until("the retried run.start's answer", isReply(`"start-dup"`))
	if got := gjson.GetBytes(lines[len(lines)-1], "result.run_id").Str; got != run3 {
		t.Errorf("retried run.start gave %q, first %q", got, run3)
	}
	if _, status := c.finishRun(run3); status != rpc.StatusCompleted {
		t.Errorf("%s after the cancel: %s", run3, status)
	}
	for _, l := range c.quiet(300 * time.Millisecond) {
		if isMethod(rpc.MethodRunStatus)(l) {
			t.Errorf("a second run from a retried run.start: %s", l)
		}
	}
}

// TestRPCShellExec: shell.exec with its exit code, stderr, timeout, output
// caps, cwd rules, a retry, request.cancel, and a program that is missing.
func TestRPCShellExec(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := startRPC(t, []string{"--cwd", dir, "--max-line", "4096"})
	c.initialize("")
	// A line over --max-line is refused whole; the connection goes on.
	c.send(`{"jsonrpc":"2.0","id":"big","method":"shell.exec","params":{"command":"echo ` + strings.Repeat("x", 5000) + `"}}`)
	c.rpcError("null", rpc.CodeInvalidRequest)

	r := c.result(c.call("shell.exec", `{"command":"echo out; echo err >&2; pwd; exit 3"}`))
	real, _ := filepath.EvalSymlinks(dir)
	if r.Get("exit_code").Int() != 3 || r.Get("stdout").Str != "out\n"+real+"\n" || r.Get("stderr").Str != "err\n" ||
		r.Get("signal").Type != gjson.Null || r.Get("truncated.combined").Bool() || r.Get("timed_out").Bool() {
		t.Errorf("shell.exec: %s", r.Raw)
	}
	r = c.result(c.call("shell.exec", `{"argv":["pwd"],"cwd":"sub"}`))
	if r.Get("stdout").Str != filepath.Join(real, "sub")+"\n" || r.Get("exit_code").Int() != 0 {
		t.Errorf("shell.exec argv in sub: %s", r.Raw)
	}
	r = c.result(c.call("shell.exec", `{"command":"sleep 30","timeout_seconds":0.3}`))
	if !r.Get("timed_out").Bool() || r.Get("exit_code").Type != gjson.Null || r.Get("signal").Str != "SIGTERM" {
		t.Errorf("shell.exec timeout: %s", r.Raw)
	}
	r = c.result(c.call("shell.exec", `{"command":"head -c 300000 /dev/zero | tr '\\0' a; echo; echo tail-end"}`))
	out := r.Get("stdout").Str
	if !r.Get("truncated.stdout").Bool() || !r.Get("truncated.combined").Bool() || r.Get("truncated.stderr").Bool() ||
		len(out) > 70000 || !strings.HasSuffix(out, "tail-end\n") || !strings.Contains(out, "bytes omitted]") {
		t.Errorf("shell.exec big output: %d bytes, truncated %s, ends %q", len(out), r.Get("truncated").Raw, tail(out, 40))
	}
	// A retry with the same id does not run the command again.
	counter := filepath.Join(dir, "count.txt")
	for range 2 {
		c.callID(`"once"`, "shell.exec", `{"command":"echo run >> count.txt"}`)
		c.result(`"once"`)
	}
	if data, _ := os.ReadFile(counter); string(data) != "run\n" {
		t.Errorf("a retried shell.exec ran again: %q", data)
	}
	c.rpcError(c.call("shell.exec", `{"command":"ls","cwd":"/etc"}`), rpc.CodeInvalidParams)
	c.rpcError(c.call("shell.exec", `{"command":"ls","cwd":"../.."}`), rpc.CodeInvalidParams)
	c.rpcError(c.call("shell.exec", `{"command":""}`), rpc.CodeInvalidParams)
	c.rpcError(c.call("shell.exec", `{"command":"ls","argv":["ls"]}`), rpc.CodeInvalidParams)
	c.rpcError(c.call("shell.exec", `{"argv":["/nonexistent/program"]}`), rpc.CodeRuntimeInternal)

	// request.cancel stops a running command: -32003 for it, ok for the cancel.
	marker := filepath.Join(dir, "late.txt")
	sleeper := c.call("shell.exec", `{"command":"sleep 20 && touch late.txt"}`)
	waitDescendant(t, c.b.cmd.Process.Pid, "sleep 20")
	cancel := c.call("request.cancel", `{"id":`+sleeper+`}`)
	c.rpcError(sleeper, rpc.CodeUserCancelled)
	if !c.result(cancel).Get("ok").Bool() {
		t.Errorf("request.cancel did not find the command")
	}
	if r := c.result(c.call("request.cancel", `{"id":"nothing"}`)); r.Get("ok").Bool() {
		t.Errorf("request.cancel of nothing: %s", r.Raw)
	}
	c.close()
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the cancelled command went on running")
	}
}

// TestRPCPermissions: ui.confirm.request allowed and denied, a wrongly
// shaped answer, an answer to a settled request, and a request cancelled
// with its run.
func rpcPermissions(t *testing.T, s *rpcSession) {
	c, dir := s.c, s.dir
	c.initialize(`{"supports_confirm":true,"supports_pick":true,"supports_prompt":true}`)

	// Allow.
	run := c.start("Please WRITEFILE now")
	lines := c.until("ui.confirm.request", isMethod(rpc.MethodUIConfirm))
	req := lines[len(lines)-1]
	uiID := gjson.GetBytes(req, "id").Raw
	if p := gjson.GetBytes(req, "params"); p.Get("run_id").Str != run || p.Get("tool").Str != "Write" ||
		!strings.HasSuffix(p.Get("args.file_path").Str, "written.txt") || p.Get("title").Str == "" || p.Get("message").Str == "" {
		t.Errorf("ui.confirm.request: %s", req)
	}
	if findLine(lines, isRunStatus(run, rpc.StatusAwaitingUI)) == nil || findLine(lines, isEvent(run, "permission")) == nil {
		t.Errorf("no awaiting_ui status or permission event before the request")
	}
	c.send(`{"jsonrpc":"2.0","id":` + uiID + `,"result":{"ok":true}}`)
	lines, status := c.finishRun(run)
	if status != rpc.StatusCompleted {
		t.Fatalf("run ended %s", status)
	}
	if findLine(lines, isRunStatus(run, rpc.StatusRunning)) == nil {
		t.Errorf("the run did not go back to running after the answer")
	}
	if r := findLine(lines, isEvent(run, "tool_result")); r == nil || gjson.GetBytes(r, "params.event.is_error").Bool() {
		t.Errorf("tool_result after allow: %s", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "written.txt")); err != nil {
		t.Errorf("the allowed Write left no file: %v", err)
	}
	// Answering again: refused, nothing reaches the CLI.
	c.send(`{"jsonrpc":"2.0","id":` + uiID + `,"result":{"ok":false}}`)
	lines = c.until("ui.response.rejected", isMethod(rpc.MethodUIResponseReject))
	if gjson.GetBytes(lines[len(lines)-1], "params.id").Raw != uiID {
		t.Errorf("rejection: %s", lines[len(lines)-1])
	}

	// A wrong answer is refused and the request stays open; then deny.
	run = c.start("BASH now")
	lines = c.until("ui.confirm.request", isMethod(rpc.MethodUIConfirm))
	req = lines[len(lines)-1]
	uiID = gjson.GetBytes(req, "id").Raw
	if gjson.GetBytes(req, "params.danger_level").Str != "danger" || !strings.Contains(gjson.GetBytes(req, "params.message").Str, "touch ") {
		t.Errorf("Bash confirm: %s", req)
	}
	c.send(`{"jsonrpc":"2.0","id":` + uiID + `,"result":{"ok":"yes"}}`)
	c.until("the wrong answer's rejection", isMethod(rpc.MethodUIResponseReject))
	c.send(`{"jsonrpc":"2.0","id":` + uiID + `,"result":{"ok":false,"reason":"not on my machine"}}`)
	lines, status = c.finishRun(run)
	r := findLine(lines, isEvent(run, "tool_result"))
	if status != rpc.StatusCompleted || !gjson.GetBytes(r, "params.event.is_error").Bool() ||
		!strings.Contains(gjson.GetBytes(r, "params.event.result").Str, "not on my machine") {
		t.Errorf("deny: status %s, tool_result %s", status, r)
	}
	if _, err := os.Stat(filepath.Join(dir, "bash_touched.txt")); err == nil {
		t.Errorf("the denied Bash ran")
	}

	// A request open when its run is cancelled is cancelled with it.
	run = c.start("WRITEFILE again")
	lines = c.until("ui.confirm.request", isMethod(rpc.MethodUIConfirm))
	uiID = gjson.GetBytes(lines[len(lines)-1], "id").Raw
	c.result(c.call("run.cancel", `{"run_id":"`+run+`"}`))
	lines = c.seen
	cancelled := findLine(lines, func(l []byte) bool {
		return isMethod(rpc.MethodUIRequestCanceled)(l) && gjson.GetBytes(l, "params.id").Raw == uiID
	})
	if cancelled == nil || gjson.GetBytes(cancelled, "params.reason").Str != rpc.ReasonRunCancelled {
		t.Errorf("ui.request.cancelled: %s", cancelled)
	}
	c.send(`{"jsonrpc":"2.0","id":` + uiID + `,"result":{"ok":true}}`)
	c.until("the late answer's rejection", isMethod(rpc.MethodUIResponseReject))
	if _, _, status := c.runText("hello after"); status != rpc.StatusCompleted {
		t.Errorf("run after the cancel: %s", status)
	}
}

// TestRPCQuestionsAndQueries: AskUserQuestion through ui.pick.request
// (and "Other" through ui.prompt.request, and ui.prompt.request alone for
// a UI that cannot pick), run.diagnostics, and the query methods
// (model.list/set, mcp.list, skills.list, context.inspect).
func TestRPCQuestionsAndQueries(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	skill := filepath.Join(dir, ".claude", "skills", "e2e-skill")
	if err := os.MkdirAll(skill, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("---\nname: e2e-skill\ndescription: A skill of the e2e test\n---\nBody.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startRPC(t, []string{"--cwd", dir, "--diagnostics", "--", "--mcp-config", `{"mcpServers":{"broken":{"command":"/nonexistent/mcp-server"}}}`})
	if !c.initialize("").Get("server_capabilities.supports_diagnostics").Bool() {
		t.Errorf("--diagnostics not announced")
	}

	run := c.start("ASKUSER now")
	lines := c.until("ui.pick.request", isMethod(rpc.MethodUIPick))
	pick := lines[len(lines)-1]
	if p := gjson.GetBytes(pick, "params"); p.Get("title").Str != "Which color do you prefer?" || p.Get("items.1.label").Str != "Blue" ||
		p.Get("items.2.id").Str != rpc.OtherItemID || p.Get("multi").Bool() || p.Get("run_id").Str != run {
		t.Errorf("ui.pick.request: %s", pick)
	}
	c.send(`{"jsonrpc":"2.0","id":` + gjson.GetBytes(pick, "id").Raw + `,"result":{"ids":["` + gjson.GetBytes(pick, "params.items.1.id").Str + `"]}}`)
	lines, status := c.finishRun(run)
	if r := findLine(lines, isEvent(run, "tool_result")); status != rpc.StatusCompleted || !strings.Contains(gjson.GetBytes(r, "params.event.result").Str, `"Blue"`) {
		t.Errorf("pick answer: %s %s", status, r)
	}
	diag := 0
	for _, l := range lines {
		if isMethod(rpc.MethodRunDiagnostics)(l) && gjson.GetBytes(l, "params.run_id").Str == run {
			diag++
			switch gjson.GetBytes(l, "params.kind").Str {
			case "llm_call":
				if call := gjson.GetBytes(l, "params.call"); call.Get("model").Str == "" || call.Get("usage.input_tokens").Int() != 12 || call.Get("latency_ms").Int() < 0 {
					t.Errorf("llm_call: %s", l)
				}
			case "run_summary":
				if s := gjson.GetBytes(l, "params.summary"); s.Get("total_calls").Int() != 2 || s.Get("total_input_tokens").Int() != 24 {
					t.Errorf("run_summary: %s", l)
				}
			}
		}
	}
	if diag != 3 {
		t.Errorf("%d run.diagnostics for a run of two calls, want 2 llm_call + 1 run_summary", diag)
	}

	// "Other": the pick is followed by a prompt.
	run = c.start("ASKMULTI now")
	lines = c.until("ui.pick.request", isMethod(rpc.MethodUIPick))
	pick = lines[len(lines)-1]
	if !gjson.GetBytes(pick, "params.multi").Bool() {
		t.Errorf("multi-select question not multi: %s", pick)
	}
	c.send(`{"jsonrpc":"2.0","id":` + gjson.GetBytes(pick, "id").Raw + `,"result":{"ids":["1","other"]}}`)
	lines = c.until("ui.prompt.request", isMethod(rpc.MethodUIPrompt))
	prompt := lines[len(lines)-1]
	c.send(`{"jsonrpc":"2.0","id":` + gjson.GetBytes(prompt, "id").Raw + `,"result":{"value":"Anchovies"}}`)
	lines, _ = c.finishRun(run)
	if r := findLine(lines, isEvent(run, "tool_result")); !strings.Contains(gjson.GetBytes(r, "params.event.result").Str, "Cheese,Anchovies") {
		t.Errorf("pick + other: %s", r)
	}

	// A UI that cannot pick is asked with ui.prompt.request.
	c.initialize(`{"supports_pick":false}`)
	run = c.start("ASKUSER again")
	lines = c.until("ui.prompt.request", isMethod(rpc.MethodUIPrompt))
	prompt = lines[len(lines)-1]
	if !strings.Contains(gjson.GetBytes(prompt, "params.message").Str, "Red, Blue") {
		t.Errorf("prompt without pick: %s", prompt)
	}
	c.send(`{"jsonrpc":"2.0","id":` + gjson.GetBytes(prompt, "id").Raw + `,"result":{"value":null}}`)
	lines, _ = c.finishRun(run)
	if r := findLine(lines, isEvent(run, "tool_result")); !gjson.GetBytes(r, "params.event.is_error").Bool() {
		t.Errorf("declined question: %s", r)
	}

	// Models.
	ml := c.result(c.call("model.list", `{"include_details":true}`))
	if ml.Get("provider").Str != rpc.Provider || ml.Get("current").Str != "default" || !strings.Contains(ml.Get("models").Raw, `"sonnet"`) ||
		ml.Get("details.default.resolved_model").Str == "" {
		t.Errorf("model.list: %.600s", ml.Raw)
	}
	setID := `"set-1"`
	c.callID(setID, "model.set", `{"name":"sonnet"}`)
	lines = c.until("model.set's answer", isReply(setID))
	first := lines[len(lines)-1]
	if gjson.GetBytes(first, "result.resolved_model").Str != "claude-sonnet-5-5" {
		t.Errorf("model.set: %s", first)
	}
	c.callID(setID, "model.set", `{"name":"sonnet"}`)
	lines = c.until("the retried model.set's answer", isReply(setID))
	if !bytes.Equal(lines[len(lines)-1], first) {
		t.Errorf("retried model.set: %s", lines[len(lines)-1])
	}
	c.rpcError(c.call("model.set", `{"name":"no-such-model"}`), rpc.CodeInvalidParams)
	c.rpcError(c.call("model.set", `{"name":"sonnet","provider":"openai"}`), rpc.CodeInvalidParams)
	if ml := c.result(c.call("model.list", `{}`)); ml.Get("current").Str != "sonnet" || ml.Get("details").Exists() {
		t.Errorf("model.list after model.set: %s", ml.Raw)
	}
	tok := token("SONNET")
	c.runText("hello " + tok)
	if m := modelRequest(t, tok).Model; !strings.Contains(m, "sonnet") {
		t.Errorf("the next call used model %q after model.set sonnet", m)
	}

	// ui_context goes to the model with the prompt, and to context.inspect.
	tok = token("CTX")
	run = c.start0(`{"input":{"type":"text","text":"hello ` + tok + `"},"ui_context":{"cwd":"` + dir + `","active_file":{"path":"` + dir + `/main.go"}}}`)
	c.finishRun(run)
	if !seenByModel(t, tok, "main.go") {
		t.Errorf("the model did not get the ui_context")
	}
	c.send(`{"jsonrpc":"2.0","method":"ui.context.update","params":{"cwd":"` + dir + `","active_file":{"path":"` + dir + `/other.go"}}}`)

	// A forced compaction.
	run = c.start0(`{"input":{"type":"text","text":""},"force_compaction":true}`)
	lines, status = c.finishRun(run)
	if types := strings.Join(eventTypes(lines, run), ","); status != rpc.StatusCompleted || !strings.Contains(types, "compaction_start,compaction_complete") {
		t.Errorf("force_compaction: %s, events %s", status, types)
	}

	// MCP servers, skills, context.
	servers := c.result(c.call("mcp.list", `{"scope":"loaded"}`)).Get("servers")
	if s := servers.Get("0"); s.Get("id").Str != "broken" || (s.Get("state").Str != "error" && s.Get("state").Str != "connecting") {
		t.Errorf("mcp.list: %s", servers.Raw)
	}
	c.rpcError(c.call("mcp.list", `{"scope":"everything"}`), rpc.CodeInvalidParams)
	sk := c.result(c.call("skills.list", `{"force_reload":true}`))
	if s := sk.Get(`skills.#(name=="e2e-skill")`); s.Get("scope").Str != "repo" || !strings.HasSuffix(s.Get("path").Str, "SKILL.md") ||
		s.Get("description").Str != "A skill of the e2e test" || s.Get("mtime_ms").Int() == 0 {
		t.Errorf("skills.list: %.800s", sk.Raw)
	}
	if sk.Get(`skills.#(scope=="builtin")#`).Raw == "[]" {
		t.Errorf("skills.list without built-in skills")
	}
	ci := c.result(c.call("context.inspect", `{"include_agents":true,"include_skills":true}`))
	if real, _ := filepath.EvalSymlinks(dir); ci.Get("runtime_working_dir").Str != real || ci.Get("context_usage.max_tokens").Int() <= 0 ||
		!strings.HasSuffix(ci.Get("ui_context.active_file_path").Str, "other.go") ||
		!ci.Get("agents").IsArray() || !strings.Contains(ci.Get("skills").Raw, "e2e-skill") || ci.Get("model").Str != "claude-sonnet-5-5" {
		t.Errorf("context.inspect: %.800s", ci.Raw)
	}

	// The CLI's newer controls. workspace.suggest of "" lists the top
	// level (the CLI builds its index for other queries on the first
	// question, and finds nothing else until it has).
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := c.result(c.call("workspace.suggest", `{"query":""}`))
	if real, _ := filepath.EvalSymlinks(dir); ws.Get(`suggestions.#(path=="hello.txt").kind`).Str != "file" || ws.Get(`suggestions.#(path==".claude/").kind`).Str != "dir" || ws.Get("cwd").Str != real {
		t.Errorf("workspace.suggest: %s", ws.Raw)
	}
	if r := c.result(c.call("mcp.reconnect", `{"id":"broken"}`)); r.Get("ok").Bool() || !strings.Contains(r.Get("last_error").Str, "ENOENT") {
		t.Errorf("mcp.reconnect of the server that cannot start: %s", r.Raw)
	}
	c.rpcError(c.call("mcp.reconnect", `{"id":"nosuch"}`), rpc.CodeInvalidParams)
	if r := c.result(c.call("mcp.toggle", `{"id":"broken","enabled":false}`)); !r.Get("ok").Bool() {
		t.Errorf("mcp.toggle off: %s", r.Raw)
	}
	if s := c.result(c.call("mcp.list", `{}`)).Get("servers.0"); s.Get("state").Str != "disabled" || s.Get("enabled").Bool() {
		t.Errorf("mcp.list after mcp.toggle off: %s", s.Raw)
	}
	if r := c.result(c.call("session.title", `{"description":"a session of the e2e test","persist":true}`)); r.Get("title").Str != "Fake model session" || !r.Get("persisted").Bool() {
		t.Errorf("session.title: %s", r.Raw)
	}
	sid := ci.Get("session_id").Str
	if s := c.result(c.call("session.list", `{}`)).Get(`sessions.#(session_id=="` + sid + `")`); s.Get("title").Str != "Fake model session" {
		t.Errorf("session.list after session.title with persist: %s", s.Raw)
	}
	c.close()
}

// TestRPCChildDies: a CLI killed mid-run ends the run with error, settles
// its open request, is reported, and the next run.start resumes the
// session in a new CLI; a cancelled turn the CLI does not end in time
// (--interrupt-timeout 1ms) kills and resumes the CLI too.
func TestRPCChildDies(t *testing.T) {
	t.Parallel()
	home, dir := t.TempDir(), t.TempDir()
	c := startRPC(t, []string{"--interrupt-timeout", "1ms", "--cwd", dir}, "HOME="+home)
	sid := c.initialize("").Get("runtime.session_id").Str

	before := token("BEFORE")
	run := c.start("Please WRITEFILE now " + before)
	lines := c.until("ui.confirm.request", isMethod(rpc.MethodUIConfirm))
	uiID := gjson.GetBytes(lines[len(lines)-1], "id").Raw
	// The CLI writes its session file lazily: kill it once the prompt is
	// saved, so that there is something to resume.
	file := filepath.Join(home, ".claude", "projects", clifiles.ProjectDirName(mustReal(t, dir)), sid+".jsonl")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if data, _ := os.ReadFile(file); bytes.Contains(data, []byte(before)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the CLI did not save the prompt in %s", file)
		}
	}
	pid := c.b.childPID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	lines, status := c.finishRun(run)
	if status != rpc.StatusError || !strings.Contains(gjson.GetBytes(lines[len(lines)-1], "params.message").Str, "SIGKILL") {
		t.Errorf("run after the CLI was killed: %s", lines[len(lines)-1])
	}
	cancelled := findLine(lines, isMethod(rpc.MethodUIRequestCanceled))
	if gjson.GetBytes(cancelled, "params.id").Raw != uiID || gjson.GetBytes(cancelled, "params.reason").Str != rpc.ReasonChildExited {
		t.Errorf("the open request: %s", cancelled)
	}
	exited := findLine(append(lines, c.quiet(500*time.Millisecond)...), isMethod(rpc.MethodChildExited))
	if gjson.GetBytes(exited, "params.signal").Str != "SIGKILL" || gjson.GetBytes(exited, "params.session_id").Str != sid {
		t.Errorf("runtime.child_exited: %s", exited)
	}
	groupGone(t, pid)

	// The next run resumes the session in a new CLI.
	after := token("AFTER")
	run = c.start("hello after the crash " + after)
	newPID := c.b.childPID()
	if newPID == pid {
		t.Fatalf("no new CLI")
	}
	if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", newPID)); !bytes.Contains(cmdline, []byte("--resume="+sid)) {
		t.Errorf("the new CLI does not resume %s: %q", sid, cmdline)
	}
	if _, status := c.finishRun(run); status != rpc.StatusCompleted {
		t.Errorf("run after the respawn: %s", status)
	}
	if !seenByModel(t, after, before) {
		t.Errorf("the resumed CLI did not send the conversation before the crash")
	}

	// A cancel the CLI does not finish within --interrupt-timeout: killed
	// and resumed; the run is cancelled all the same.
	run = c.start("SLOW please")
	c.until("streaming", isEvent(run, "text.delta"))
	pid = c.b.childPID()
	c.result(c.call("run.cancel", `{"run_id":"`+run+`"}`))
	for _, l := range c.quiet(1500 * time.Millisecond) {
		if gjson.GetBytes(l, "params.run_id").Str == run && isMethod(rpc.MethodAgentEvent)(l) {
			t.Errorf("an event after cancelled: %.200s", l)
		}
	}
	run = c.start("hello after the restart")
	if _, status := c.finishRun(run); status != rpc.StatusCompleted {
		t.Errorf("run after the restart: %s", status)
	}
	if np := c.b.childPID(); np == pid {
		t.Errorf("the CLI was not restarted after the interrupt timeout")
	}
	if !strings.Contains(c.b.stderr.String(), "restarting it") {
		t.Errorf("no log of the restart")
	}
	c.close()
}

// TestRPCSessions: session.list and session.history from the CLI's session
// files, resuming an older session with run.start, and the session error
// codes -32004, -32005, -32006.
func TestRPCSessions(t *testing.T) {
	t.Parallel()
	home, dir := t.TempDir(), t.TempDir()
	env := "HOME=" + home

	// An earlier connection leaves a session behind.
	c := startRPC(t, []string{"--cwd", dir}, env)
	old := c.initialize("").Get("runtime.session_id").Str
	before := token("BEFORE")
	if _, _, status := c.runText("hello from before " + before); status != rpc.StatusCompleted {
		t.Fatalf("first run: %s", status)
	}
	c.close()

	c = startRPC(t, []string{"--cwd", dir}, env)
	cur := c.initialize("").Get("runtime.session_id").Str
	list := c.result(c.call("session.list", `{"limit":10}`)).Get("sessions")
	s := list.Get(`#(session_id=="` + old + `")`)
	if s.Get("last_user_message").Str != "hello from before "+before || s.Get("message_count").Int() != 2 || s.Get("updated_at").Str == "" {
		t.Errorf("session.list: %s", list.Raw)
	}
	c.rpcError(c.call("session.list", `{"limit":0}`), rpc.CodeInvalidParams)

	hid := c.call("session.history", `{"session_id":"`+old+`"}`)
	lines := c.until("session.history's answer", isReply(hid))
	res := gjson.GetBytes(lines[len(lines)-1], "result")
	events := lines[:len(lines)-1]
	histRun := old + ":1"
	types := strings.Join(eventTypes(events, histRun), ",")
	if types != "hidden_user_message,reasoning,text,final" || res.Get("runs").Int() != 1 || res.Get("events_sent").Int() != 4 || res.Get("truncated").Bool() {
		t.Errorf("session.history: events %s, result %s", types, res.Raw)
	}
	if e := findLine(events, isEvent(histRun, "hidden_user_message")); gjson.GetBytes(e, "params.event.content").Str != "hello from before "+before {
		t.Errorf("history prompt: %s", e)
	}
	if r := c.result(c.call("session.history", `{"session_id":"`+old+`","max_events":2}`)); r.Get("events_sent").Int() != 2 || !r.Get("truncated").Bool() {
		t.Errorf("session.history max_events: %s", r.Raw)
	}
	missing := uuid.NewString()
	c.rpcError(c.call("session.history", `{"session_id":"`+missing+`"}`), rpc.CodeSessionNotFound)
	c.rpcError(c.call("run.start", `{"input":{"type":"text","text":"x"},"session_id":"`+missing+`"}`), rpc.CodeSessionNotFound)
	c.rpcError(c.call("session.history", `{"session_id":"not-a-session"}`), rpc.CodeInvalidParams)
	broken := uuid.NewString()
	projects := filepath.Join(home, ".claude", "projects", clifiles.ProjectDirName(mustReal(t, dir)))
	if err := os.Mkdir(filepath.Join(projects, broken+".jsonl"), 0o755); err != nil {
		t.Fatal(err)
	}
	c.rpcError(c.call("session.history", `{"session_id":"`+broken+`"}`), rpc.CodeSessionLoadFailed)
	c.rpcError(c.call("run.start", `{"input":{"type":"text","text":"x"},"session_id":"`+broken+`"}`), rpc.CodeSessionLoadFailed)

	// Resume the old session: the new turn lands in its file.
	again := token("AGAIN")
	res = c.result(c.call("run.start", `{"input":{"type":"text","text":"hello again `+again+`"},"session_id":"`+old+`"}`))
	if _, status := c.finishRun(res.Get("run_id").Str); status != rpc.StatusCompleted {
		t.Fatalf("resumed run: %s", status)
	}
	if !seenByModel(t, again, before) {
		t.Errorf("the resumed run did not carry the old session's conversation")
	}
	list = c.result(c.call("session.list", `{}`)).Get("sessions")
	if s := list.Get(`#(session_id=="` + old + `")`); s.Get("message_count").Int() != 4 || s.Get("last_user_message").Str != "hello again "+again {
		t.Errorf("the old session after resuming it: %s (current %s)", list.Raw, cur)
	}

	// A session folder that cannot be read: the working directory's
	// project folder is a file now (in the same connection, which has no
	// run: a connection of its own would start a CLI only for this).
	if err := os.Rename(projects, projects+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(projects, []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.rpcError(c.call("session.list", `{}`), rpc.CodeSessionListFailed)
	c.close()
}

// ---- what every dialect on the session core does the same way (docs/design.md)

// alignProjectDir is where the CLI started by c (HOME home, --cwd dir)
// keeps its session files; it is created if missing.
func alignProjectDir(t *testing.T, home, dir string) string {
	t.Helper()
	p := clifiles.ProjectDir(filepath.Join(home, ".claude"), mustReal(t, dir))
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// alignStarts counts the CLIs ccbridge started, from its log (the
// supervisor's line, which names the child's generation).
func alignStarts(c *rpcConn) int {
	n := 0
	for _, l := range strings.Split(c.b.stderr.String(), "\n") {
		if gjson.Get(l, "msg").Str == "claude started" && gjson.Get(l, "gen").Exists() {
			n++
		}
	}
	return n
}

// TestRPCLineCap: the rpc scenarios with a CLI line cap, each a
// subtest named for the test it was alone, in one ccbridge and one CLI
// (see inOneSession), then three of TestFaultTurnsRPC's cases (the CLI
// stopped with a run held): cancel held, kill (a resumed CLI after it),
// and the end of input with the dialect's rules checked on every line.
// --grace and --term-grace 300ms are TestFaultTurnsRPC's. The cap is TestRPCAlignCLILineTooLong's
// (--max-cli-line 100000: under it the text deltas still pass, which it
// checks); the 300 kB lines of TestFaultToolongRPC are over it as over
// tooLongCap. The log level is info, which TestFaultNoPayloadInWarnings/rpc
// is about (the CLI starts TestRPCAlignCLILineTooLong counts are logged
// at info).
func TestRPCLineCap(t *testing.T) {
	t.Parallel()
	open := func(t *testing.T) *rpcSession {
		return &rpcSession{c: startRPC(t, []string{"--max-cli-line", "100000", "--grace", "300ms", "--term-grace", "300ms"}, "CCBRIDGE_LOG_LEVEL=info")}
	}
	bind := func(s *rpcSession, t *testing.T) { s.c.t, s.c.b.t = t, t }
	inOneSession(t, open, bind,
		scenario[*rpcSession]{"TestRPCAlignCLILineTooLong", rpcAlignCLILineTooLong},
		scenario[*rpcSession]{"TestFaultToolongRPC", rpcToolong},
		scenario[*rpcSession]{"TestFaultNoPayloadInWarnings/rpc", func(t *testing.T, s *rpcSession) {
			noPayloadCheck(t, s.c.b, noPayloadRPC, func() {})
		}},
		scenario[*rpcSession]{"TestFaultTurnsRPC/cancel held", rpcFaultTurnsCancelHeld},
		scenario[*rpcSession]{"TestFaultTurnsRPC/kill", rpcFaultTurnsKill},
		scenario[*rpcSession]{"TestFaultTurnsRPC/end of input", rpcFaultTurnsEndOfInput},
	)
}

// TestRPCAlignCLILineTooLong: with --max-cli-line 100000, BIGTEXT 300000
// makes the CLI write an assistant line and a result line over the limit.
// Each is reported with runtime.error on the run; the CLI, asked, is idle,
// so the run ends with error; the text still reached the UI as deltas, and
// the next run works in the same CLI.
func rpcAlignCLILineTooLong(t *testing.T, s *rpcSession) {
	c := s.c
	c.initialize("")
	pid := c.b.childPID()

	run := c.start("BIGTEXT 300000")
	lines, status := c.finishRun(run)
	var dropped []gjson.Result
	deltas := 0
	for _, l := range lines {
		switch {
		case isMethod("runtime.error")(l):
			dropped = append(dropped, gjson.GetBytes(l, "params"))
		case isEvent(run, rpc.EventTextDelta)(l):
			deltas += len(gjson.GetBytes(l, "params.event.content").Str)
		}
	}
	if len(dropped) == 0 {
		t.Fatalf("no runtime.error for the lines over the limit; the run ended %s", lines[len(lines)-1])
	}
	for _, p := range dropped {
		if p.Get("run_id").Str != run || p.Get("error.code").Int() != rpc.CodeRuntimeInternal ||
			p.Get("error.data.reason").Str != "cli_line_too_long" || p.Get("error.data.limit").Int() != 100000 ||
			p.Get("error.data.size").Int() < 300000 || !strings.Contains(p.Get("error.message").Str, "--max-cli-line") {
			t.Errorf("runtime.error: %s", p.Raw)
		}
	}
	if status != rpc.StatusError || !strings.Contains(gjson.GetBytes(lines[len(lines)-1], "params.message").Str, "--max-cli-line") {
		t.Errorf("the run ended %s", lines[len(lines)-1])
	}
	if deltas != 300000 {
		t.Errorf("%d bytes of text.delta, want 300000", deltas)
	}

	if _, _, status := c.runText("hello after the long line"); status != rpc.StatusCompleted {
		t.Errorf("the next run: %s", status)
	}
	if c.b.childPID() != pid || alignStarts(c) != 1 {
		t.Errorf("the CLI was replaced (%d started)", alignStarts(c))
	}
}

// TestRPCAlignResumeRefusedBeforeAnyChild: run.start into a session whose
// file holds only a line that is no message, or that has no file, is
// refused with -32005 / -32004 before any CLI is stopped or started; the
// connection goes on in the CLI it had.
func rpcAlignResumeRefusedBeforeAnyChild(t *testing.T, s *rpcSession) {
	c, home, dir := s.c, s.home, s.dir
	c.initialize("")
	if _, _, status := c.runText("hello first"); status != rpc.StatusCompleted {
		t.Fatalf("first run: %s", status)
	}
	pid := c.b.childPID()
	starts := alignStarts(c) // the CLIs started so far, one unless a scenario before restarted it

	empty := uuid.NewString()
	file := filepath.Join(alignProjectDir(t, home, dir), empty+".jsonl")
	entry := `{"type":"summary","summary":"a summary and no conversation","leafUuid":"` + uuid.NewString() + `"}` + "\n"
	if err := os.WriteFile(file, []byte(entry), 0o644); err != nil {
		t.Fatal(err)
	}
	e := c.rpcError(c.call("run.start", `{"input":{"type":"text","text":"x"},"session_id":"`+empty+`"}`), rpc.CodeSessionLoadFailed)
	if !strings.Contains(e.Get("message").Str, "no user or assistant message") {
		t.Errorf("-32005: %s", e.Raw)
	}
	c.rpcError(c.call("run.start", `{"input":{"type":"text","text":"x"},"session_id":"`+uuid.NewString()+`"}`), rpc.CodeSessionNotFound)

	if err := syscall.Kill(pid, 0); err != nil || c.b.childPID() != pid || alignStarts(c) != starts {
		t.Errorf("a CLI was stopped or started: pid %d (%v), %d started, %d before", pid, err, alignStarts(c), starts)
	}
	if _, _, status := c.runText("hello again"); status != rpc.StatusCompleted {
		t.Errorf("the run after the refusals: %s", status)
	}
	if c.b.childPID() != pid || alignStarts(c) != starts {
		t.Errorf("the CLI was replaced (%d started, %d before)", alignStarts(c), starts)
	}
}

// TestRPCAlignCancelWhileReadingABigSession: session.history and then
// session.list read a session file of about 100 MB, off the loop. While
// each read runs, cheap requests (request.cancel of an id not in flight)
// and then the request.cancel of the read are answered at once: the
// median of the five answers within 50 ms (the median, so that one stall
// of a shared machine does not decide), and the read's cancel finds it
// still under way (ok:true). A loop busy with the file would answer none of
// them before the read's end, and the cancel would then find nothing.
//
// Not parallel: the other tests' CLIs would share the two cores with the
// measurement.
func TestRPCAlignCancelWhileReadingABigSession(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	c := startRPC(t, []string{"--cwd", dir}, "HOME="+home)
	c.initialize("")

	sid := uuid.NewString()
	path := filepath.Join(alignProjectDir(t, home, dir), sid+".jsonl")
	size := writeBigSession(t, path, sid, 100<<20)

	for _, method := range []string{rpc.MethodSessionHistory, rpc.MethodSessionList} {
		params := `{"session_id":"` + sid + `"}`
		if method == rpc.MethodSessionList {
			params = `{"limit":5}`
		}
		id := c.call(method, params)
		time.Sleep(100 * time.Millisecond) // the read is under way
		var took []time.Duration
		for range 4 {
			d, _ := alignTimedCall(c, rpc.MethodRequestCancel, `{"id":"not-in-flight"}`)
			took = append(took, d)
		}
		d, got := alignTimedCall(c, rpc.MethodRequestCancel, `{"id":`+id+`}`)
		took = append(took, d)
		t.Logf("%s of a %d-byte file: answers while it is read in %v (the last: its request.cancel)", method, size, took)
		slices.Sort(took)
		if took[len(took)/2] >= 50*time.Millisecond {
			t.Errorf("%s: answers while the file is read took %v, want a median under 50ms", method, took)
		}
		if ok := gjson.GetBytes(got[len(got)-1], "result.ok"); !ok.Bool() {
			t.Errorf("%s: the read had ended before the cancel: %s", method, got[len(got)-1])
		}
		if r := findLine(got, isReply(id)); gjson.GetBytes(r, "error.code").Int() != rpc.CodeUserCancelled {
			t.Errorf("%s: the cancelled request's answer: %.300s", method, r)
		}
	}
	c.close()
}

// alignTimedCall sends a request and reads to its answer; it returns the
// time that took and the lines read.
func alignTimedCall(c *rpcConn, method, params string) (time.Duration, [][]byte) {
	c.t.Helper()
	start := time.Now()
	id := c.call(method, params)
	var got [][]byte
	for {
		l, err := c.read(rpcWait)
		if err != nil {
			c.t.Fatalf("waiting for the answer to %s: %v", method, err)
		}
		got = append(got, l)
		if isReply(id)(l) {
			return time.Since(start), got
		}
	}
}

// writeBigSession writes a session file of about size bytes: prompts and
// answers of 1 KB, all of them replayable.
func writeBigSession(t *testing.T, path, sid string, size int) int {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	text := strings.Repeat("lorem ipsum ", 85)
	n := 0
	for i := 0; n < size; i++ {
		ts := time.Unix(1_700_000_000+int64(i), 0).UTC().Format(time.RFC3339)
		k := strconv.Itoa(i)
		m, _ := w.WriteString(`{"type":"user","message":{"role":"user","content":"prompt ` + k + `"},"sessionId":"` + sid + `","timestamp":"` + ts + `","uuid":"u` + k + `"}` + "\n")
		n += m
		m, _ = w.WriteString(`{"type":"assistant","message":{"id":"msg_` + k + `","role":"assistant","content":[{"type":"text","text":"` + text + `"}]},"sessionId":"` + sid + `","timestamp":"` + ts + `","uuid":"a` + k + `"}` + "\n")
		n += m
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRPCAlignSessionListLongCWD: a real turn in a working directory whose
// path is over 200 characters (the CLI then names its project folder by a
// cut name and a hash) is found by session.list.
func rpcAlignSessionListLongCWD(t *testing.T, s *rpcSession) {
	c, home, dir := s.c, s.home, s.dir
	if n := len(mustReal(t, dir)); n <= 200 {
		t.Fatalf("the working directory has %d characters, want over 200", n)
	}
	sid := c.initialize("").Get("runtime.session_id").Str
	if _, _, status := c.runText("hello from a long path"); status != rpc.StatusCompleted {
		t.Fatalf("run: %s", status)
	}
	if name := clifiles.ProjectDirName(mustReal(t, dir)); len(name) <= 201 {
		t.Errorf("project folder name %q is not cut and hashed", name)
	}
	var listed gjson.Result
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		list := c.result(c.call(rpc.MethodSessionList, `{}`)).Get("sessions")
		if listed = list.Get(`#(session_id=="` + sid + `")`); listed.Exists() || time.Now().After(deadline) {
			break
		}
	}
	if listed.Get("last_user_message").Str != "hello from a long path" || listed.Get("message_count").Int() < 1 {
		entries, _ := os.ReadDir(filepath.Join(home, ".claude", "projects"))
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("session.list does not list %s: %s (project folders: %q)", sid, listed.Raw, names)
	}
}

// TestRPCToolCallLogoutShellCache: one session with the real CLI.
// initialize reports the CLI's theme (tui.theme, from its .claude.json);
// tool.call of Read returns the file through the CLI's read_file, a path
// the CLI may not read is ok false with its words, an unknown tool is a
// typed -32602; auth.logout runs the CLI's logout and reports that no
// stored login was cleared (the fake model's key is in the environment);
// a shell.exec output over the cap has a cache id, and shell.output and
// tool.call of tool_output_cache read it back whole.
func TestRPCToolCallLogoutShellCache(t *testing.T) {
	t.Parallel()
	dir, cfg := t.TempDir(), t.TempDir()
	const content = "hello from the file\n"
	os.WriteFile(filepath.Join(dir, "hello.txt"), []byte(content), 0o644)
	os.WriteFile(filepath.Join(cfg, ".claude.json"), []byte(`{"theme":"light"}`), 0o600)
	c := startRPC(t, []string{"--cwd", dir}, "CLAUDE_CONFIG_DIR="+cfg)
	init := c.initialize("")
	if !init.Get("server_capabilities.supports_tool_call").Bool() || init.Get("tui.theme").Str != "light" {
		t.Errorf("initialize: %s", init.Raw)
	}
	r := c.result(c.call("tool.call", `{"name":"Read","arguments":{"file_path":"hello.txt"}}`))
	if !r.Get("ok").Bool() || r.Get("result.contents").Str != content {
		t.Errorf("tool.call Read: %s", r.Raw)
	}
	r = c.result(c.call("tool.call", `{"name":"Read","arguments":{"file_path":"/etc/hostname"}}`))
	if r.Get("ok").Bool() || !strings.Contains(r.Get("result.error").Str, "read denied") {
		t.Errorf("tool.call Read outside the working directory: %s", r.Raw)
	}
	if e := c.rpcError(c.call("tool.call", `{"name":"Bash","arguments":{"command":"ls"}}`), rpc.CodeInvalidParams); e.Get("data.reason").Str != "unknown_tool" {
		t.Errorf("unknown tool: %s", e.Raw)
	}
	r = c.result(c.call("auth.logout", `{}`))
	if !r.Get("ok").Bool() || r.Get("auth_cleared").Type != gjson.False || r.Get("session_cleared").Type != gjson.False {
		t.Errorf("auth.logout: %s", r.Raw)
	}
	r = c.result(c.call("shell.exec", `{"command":"head -c 300000 /dev/zero | tr '\\0' a; echo; echo tail-end"}`))
	id := r.Get("stdout_cache_id").Str
	if !r.Get("truncated.stdout").Bool() || id == "" || r.Get("stderr_cache_id").Exists() {
		t.Fatalf("shell.exec over the cap: %.300s", r.Raw)
	}
	want := strings.Repeat("a", 300000) + "\ntail-end\n"
	r = c.result(c.call("shell.output", `{"cache_id":`+jsonStr(id)+`}`))
	if r.Get("content").Str != want || !r.Get("complete").Bool() || !r.Get("eof").Bool() || r.Get("total_bytes").Int() != int64(len(want)) {
		t.Errorf("shell.output: %d bytes, %s", len(r.Get("content").Str), r.Get("total_bytes").Raw)
	}
	r = c.result(c.call("tool.call", `{"name":"tool_output_cache","arguments":{"cache_id":`+jsonStr(id)+`,"offset":299990}}`))
	if !r.Get("ok").Bool() || r.Get("result.content").Str != want[299990:] {
		t.Errorf("tool.call tool_output_cache: %s", r.Raw)
	}
	c.rpcError(c.call("shell.output", `{"cache_id":"shell-out-404-stdout"}`), rpc.CodeInvalidParams)
	c.close()
}
