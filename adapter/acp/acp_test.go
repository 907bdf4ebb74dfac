package acp

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/internal/adaptertest"
	"github.com/ccbridge/ccbridge/session/clifiles"
)

func init() {
	// acp: a small CLI for the acp loop. It appends its argv to FAKE_LOG
	// and every stdin line after it. initialize gets models and commands
	// (or, with FAKE_NOINIT=1, the CLI exits 3 instead); set_permission_mode
	// succeeds (then a system/status) except for dontAsk; a user message
	// answers with a delta and a result, unless its text holds
	//   PERM      a can_use_tool; its answer ends the turn
	//   WITHDRAW  a can_use_tool, then its control_cancel_request and an
	//             interrupted result
	//   ENDPERM   a can_use_tool, then a result at once
	//   HANG      a delta, then nothing more, interrupts ignored
	//   DIE       exit 3 with a last word on stderr
	//   LONG      a delta, a 4 KiB assistant line and a 4 KiB result, then
	//             (with CLAUDE_CODE_SDK_READS_SESSION_STATE=1) idle
	//   TOOLONG   a delta and a 4 KiB result with its keys in the real
	//             CLI's order ("type" last), and no idle after it
	// In a working directory whose name holds "hanginit" it never answers
	// initialize. Run as `auth status --json` or `auth logout` it plays
	// the CLI's auth commands on the login kept in the file FAKE_AUTH.
	adaptertest.Register("acp", func() {
		logf, _ := os.OpenFile(os.Getenv("FAKE_LOG"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		fmt.Fprintf(logf, "argv %s\n", strings.Join(os.Args[1:], " "))
		if len(os.Args) > 2 && os.Args[1] == "auth" {
			fakeAuth(os.Args[2])
			return
		}
		cwd, _ := os.Getwd()
		hangInit := strings.Contains(filepath.Base(cwd), "hanginit")
		out := func(format string, a ...any) { fmt.Printf(format+"\n", a...) }
		const sid = `"session_id":"fake","parent_tool_use_id":null`
		result := func(sub, reason string) {
			out(`{"type":"result","subtype":%q,"is_error":%v,"terminal_reason":%q,"stop_reason":"end_turn","result":"","total_cost_usd":0.1,%s}`,
				sub, sub != "success", reason, sid)
		}
		stdin := bufio.NewReaderSize(os.Stdin, 1<<20)
		hung, waitPerm := false, false
		for {
			line, err := stdin.ReadBytes('\n')
			if err != nil {
				return
			}
			fmt.Fprintf(logf, "stdin %s", line)
			if hung {
				continue
			}
			switch gjson.GetBytes(line, "type").Str {
			case "control_request":
				id := gjson.GetBytes(line, "request_id").Str
				switch gjson.GetBytes(line, "request.subtype").Str {
				case "initialize":
					if hangInit {
						continue
					}
					if os.Getenv("FAKE_NOINIT") == "1" {
						fmt.Fprintln(os.Stderr, "fatal: no init for you")
						os.Exit(3)
					}
					out(`{"type":"control_response","response":{"subtype":"success","request_id":%q,"response":{"commands":[{"name":"compact","description":"Compact","argumentHint":""}],"models":[{"value":"default","displayName":"Default"},{"value":"sonnet","displayName":"Sonnet"}],"current_permission_mode":"default"}}}`, id)
				case "set_permission_mode":
					mode := gjson.GetBytes(line, "request.mode").Str
					if mode == "dontAsk" {
						out(`{"type":"control_response","response":{"subtype":"error","request_id":%q,"error":"Cannot set permission mode","error_code":"invalid_mode"}}`, id)
						continue
					}
					out(`{"type":"control_response","response":{"subtype":"success","request_id":%q,"response":{"mode":%q}}}`, id, mode)
					out(`{"type":"system","subtype":"status","status":null,"permissionMode":%q,%s}`, mode, sid)
				default:
					out(`{"type":"control_response","response":{"subtype":"success","request_id":%q,"response":{}}}`, id)
				}
			case "control_response":
				if waitPerm && gjson.GetBytes(line, "response.request_id").Str == "perm-1" {
					waitPerm = false
					result("success", "completed")
				}
			case "user":
				text := gjson.GetBytes(line, "message.content.0.text").Str
				out(`{"type":"system","subtype":"init","model":"m","cwd":"/",%s}`, sid)
				perm := `{"type":"control_request","request_id":"perm-1","request":{"subtype":"can_use_tool","tool_name":"Write","input":{"file_path":"/x","content":"y"},"tool_use_id":"toolu_1"}}`
				switch {
				case strings.Contains(text, "PERM") && !strings.Contains(text, "ENDPERM"):
					out(perm)
					waitPerm = true
				case strings.Contains(text, "WITHDRAW"):
					out(perm)
					out(`{"type":"control_cancel_request","request_id":"perm-1"}`)
					result("error_during_execution", "aborted_tools")
				case strings.Contains(text, "ENDPERM"):
					out(perm)
					result("success", "completed")
				case strings.Contains(text, "HANG"):
					out(`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"partial "}},"api_message_id":"msg_1",%s}`, sid)
					hung = true
				case strings.Contains(text, "TOOLONG"):
					out(`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}},"api_message_id":"msg_1",%s}`, sid)
					out(`{"duration_api_ms":38,"stop_reason":"max_tokens","session_id":"fake","total_cost_usd":0.1,"is_error":false,"num_turns":1,"subtype":"success","result":%q,"type":"result"}`, strings.Repeat("x", 4096))
				case strings.Contains(text, "LONG"):
					out(`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}},"api_message_id":"msg_1",%s}`, sid)
					long := strings.Repeat("x", 4096)
					out(`{"type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":%q}]},%s}`, long, sid)
					out(`{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"max_tokens"}},%s}`, sid)
					out(`{"type":"result","subtype":"success","is_error":false,"stop_reason":"max_tokens","result":%q,%s}`, long, sid)
					if os.Getenv("CLAUDE_CODE_SDK_READS_SESSION_STATE") == "1" {
						out(`{"type":"system","subtype":"session_state_changed","state":"idle",%s}`, sid)
					}
				case strings.Contains(text, "DIE"):
					fmt.Fprintln(os.Stderr, "fatal: the fake CLI fell over")
					os.Exit(3)
				default:
					out(`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}},"api_message_id":"msg_1",%s}`, sid)
					result("success", "completed")
				}
			}
		}
	})
}

// fakeAuth plays `claude auth status --json` and `claude auth logout`:
// the file FAKE_AUTH holds "stored" while a login is stored.
func fakeAuth(cmd string) {
	state := os.Getenv("FAKE_AUTH")
	b, _ := os.ReadFile(state)
	switch cmd {
	case "status":
		if string(b) == "stored" {
			fmt.Println(`{"loggedIn":true,"authMethod":"claude.ai","storedClaudeAiLogin":true}`)
			return
		}
		fmt.Println(`{"loggedIn":false,"authMethod":"none"}`)
		os.Exit(1)
	case "logout":
		os.WriteFile(state, nil, 0o600)
		fmt.Println("Successfully logged out from your Anthropic account.")
	}
}

// acpHost is an ACP client driving an ACP loop in memory.
type acpHost struct {
	*adaptertest.Host
	log     func() string
	dir     string // the sessions' cwd
	claude  string // the ClaudeDir
	nextID  int
	pending []gjson.Result // lines read while waiting for something else
}

func startACP(t *testing.T, env ...string) *acpHost {
	t.Helper()
	return startACPWith(t, func(*ACP) {}, env...)
}

// startACPWith is startACP with settings of the test's own.
func startACPWith(t *testing.T, set func(*ACP), env ...string) *acpHost {
	t.Helper()
	logFile := filepath.Join(t.TempDir(), "log")
	a := &ACP{
		Settings: adapter.Settings{
			Child:            adaptertest.Config(t, "acp", nil, append([]string{"FAKE_LOG=" + logFile}, env...)...),
			InterruptTimeout: 300 * time.Millisecond,
		},
		ClaudeDir: t.TempDir(),
	}
	set(a)
	h := &acpHost{Host: adaptertest.StartRunner(t, a.Run), dir: t.TempDir(), claude: a.ClaudeDir,
		log: func() string { b, _ := os.ReadFile(logFile); return string(b) }}
	return h
}

// call sends a request and returns its id.
func (h *acpHost) call(method, params string) string {
	h.T.Helper()
	h.nextID++
	id := fmt.Sprint(h.nextID)
	h.Send(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + `}`)
	return id
}

// until reads lines until pred holds, and returns that line.
func (h *acpHost) until(pred func(l gjson.Result) bool) gjson.Result {
	h.T.Helper()
	for {
		l := gjson.ParseBytes(h.Next())
		if pred(l) {
			return l
		}
		h.pending = append(h.pending, l)
	}
}

// answer reads until the answer to request id.
func (h *acpHost) answer(id string) gjson.Result {
	h.T.Helper()
	return h.until(func(l gjson.Result) bool { return l.Get("id").Raw == id && !l.Get("method").Exists() })
}

func isMethod(m string) func(gjson.Result) bool {
	return func(l gjson.Result) bool { return l.Get("method").Str == m }
}

// newSession initializes (once) and opens a session.
func (h *acpHost) newSession() string {
	h.T.Helper()
	if h.nextID == 0 {
		h.answer(h.call("initialize", `{"protocolVersion":1}`))
	}
	r := h.answer(h.call("session/new", `{"cwd":"`+h.dir+`","mcpServers":[]}`))
	sid := r.Get("result.sessionId").Str
	if sid == "" {
		h.T.Fatalf("session/new: %s", r.Raw)
	}
	return sid
}

func (h *acpHost) prompt(sid, text string) string {
	return h.call("session/prompt", `{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"`+text+`"}]}`)
}

func TestACPSetupFailure(t *testing.T) {
	h := startACP(t, "FAKE_NOINIT=1")
	h.answer(h.call("initialize", `{"protocolVersion":1}`))
	r := h.answer(h.call("session/new", `{"cwd":"`+h.dir+`","mcpServers":[]}`))
	if r.Get("error.code").Int() != -32603 || !strings.Contains(r.Get("error.data.stderr").Str, "no init for you") ||
		r.Get("error.data.exitCode").Int() != 3 {
		t.Fatalf("session/new with a CLI that died: %s", r.Raw)
	}
	// The connection goes on.
	if r := h.answer(h.call("session/list", `{}`)); !r.Get("result.sessions").IsArray() {
		t.Errorf("session/list after the failure: %s", r.Raw)
	}
}

func TestACPInterruptTimeoutKillsAndResumes(t *testing.T) {
	h := startACP(t)
	sid := h.newSession()
	id := h.prompt(sid, "HANG")
	h.until(func(l gjson.Result) bool { return l.Get("params.update.sessionUpdate").Str == "agent_message_chunk" })
	queued := h.prompt(sid, "after the hang")
	start := time.Now()
	h.Send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"` + sid + `"}}`)
	if r := h.answer(queued); r.Get("result.stopReason").Str != "cancelled" {
		t.Errorf("queued prompt: %s", r.Raw)
	}
	if r := h.answer(id); r.Get("result.stopReason").Str != "cancelled" {
		t.Fatalf("hung prompt: %s", r.Raw)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("answered after %v, before the 300 ms deadline", d)
	}
	// A session file now exists: the next prompt resumes it.
	dir := filepath.Join(h.claude, "projects", clifiles.ProjectDirName(h.dir))
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, sid+".jsonl"), []byte(`{"type":"user","cwd":"`+h.dir+`","message":{"role":"user","content":"HANG"}}`+"\n"), 0o644)
	if r := h.answer(h.prompt(sid, "again")); r.Get("result.stopReason").Str != "end_turn" {
		t.Fatalf("prompt after the kill: %s", r.Raw)
	}
	if log := h.log(); !strings.Contains(log, "--resume="+sid) || strings.Count(log, "argv ") != 2 {
		t.Errorf("the second CLI did not resume the session:\n%s", log)
	}
}

func TestACPWithdrawnPermission(t *testing.T) {
	h := startACP(t)
	sid := h.newSession()
	id := h.prompt(sid, "WITHDRAW")
	req := h.until(isMethod("session/request_permission"))
	cancel := h.until(isMethod("$/cancel_request"))
	if cancel.Get("params.requestId").Raw != req.Get("id").Raw {
		t.Fatalf("$/cancel_request %s for request %s", cancel.Raw, req.Get("id").Raw)
	}
	if r := h.answer(id); r.Get("result.stopReason").Str != "cancelled" {
		t.Errorf("prompt: %s", r.Raw)
	}
	// The late answer never reaches the CLI.
	h.Send(`{"jsonrpc":"2.0","id":` + req.Get("id").Raw + `,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`)
	if r := h.answer(h.prompt(sid, "hello")); r.Get("result.stopReason").Str != "end_turn" {
		t.Fatalf("next prompt: %s", r.Raw)
	}
	if strings.Contains(h.log(), `"request_id":"perm-1"`) {
		t.Errorf("an answer to the withdrawn request was written to the CLI:\n%s", h.log())
	}
}

func TestACPTurnEndSettlesPermission(t *testing.T) {
	h := startACP(t)
	sid := h.newSession()
	id := h.prompt(sid, "ENDPERM")
	req := h.until(isMethod("session/request_permission"))
	cancel := h.until(isMethod("$/cancel_request"))
	if cancel.Get("params.requestId").Raw != req.Get("id").Raw {
		t.Fatalf("$/cancel_request %s", cancel.Raw)
	}
	if r := h.answer(id); r.Get("result.stopReason").Str != "end_turn" {
		t.Errorf("prompt: %s", r.Raw)
	}
}

func TestACPPermissionAnswered(t *testing.T) {
	h := startACP(t)
	sid := h.newSession()
	id := h.prompt(sid, "PERM")
	req := h.until(isMethod("session/request_permission"))
	// An answer to an id never used is ignored; the real one goes through.
	h.Send(`{"jsonrpc":"2.0","id":4242,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`)
	h.Send(`{"jsonrpc":"2.0","id":` + req.Get("id").Raw + `,"result":{"outcome":{"outcome":"selected","optionId":"allow_always"}}}`)
	if r := h.answer(id); r.Get("result.stopReason").Str != "end_turn" {
		t.Fatalf("prompt: %s", r.Raw)
	}
	log := h.log()
	if !strings.Contains(log, `"request_id":"perm-1","response":{"behavior":"allow","updatedPermissions":[{"type":"addRules","rules":[{"toolName":"Write"}],"behavior":"allow","destination":"session"}],"toolUseID":"toolu_1"}`) {
		t.Errorf("the allow was not written:\n%s", log)
	}
	if strings.Count(log, `"request_id":"perm-1"`) != 1 {
		t.Errorf("the answer was written more than once:\n%s", log)
	}
}

func TestACPSetModeAndModel(t *testing.T) {
	h := startACP(t)
	sid := h.newSession()
	if r := h.answer(h.call("session/set_mode", `{"sessionId":"`+sid+`","modeId":"acceptEdits"}`)); r.Get("result").Raw != "{}" {
		t.Errorf("set_mode: %s", r.Raw)
	}
	if r := h.answer(h.call("session/set_mode", `{"sessionId":"`+sid+`","modeId":"dontAsk"}`)); r.Get("error.code").Int() != -32602 {
		t.Errorf("set_mode the CLI refuses: %s", r.Raw)
	}
	r := h.answer(h.call("session/set_config_option", `{"sessionId":"`+sid+`","configId":"model","value":"sonnet"}`))
	if r.Get(`result.configOptions.#(id=="model").currentValue`).Str != "sonnet" || r.Get(`result.configOptions.#(id=="mode").currentValue`).Str != "acceptEdits" {
		t.Errorf("set_config_option: %s", r.Raw)
	}
	// The CLI's own status line repeats the mode the client set: no update.
	for _, l := range h.pending {
		if l.Get("params.update.sessionUpdate").Str == "current_mode_update" {
			t.Errorf("an update for the client's own mode change: %s", l.Raw)
		}
	}
	// A respawned CLI keeps the mode and model.
	h.answer(h.prompt(sid, "DIE"))
	h.answer(h.prompt(sid, "hello"))
	argv := strings.Split(h.log(), "argv ")
	if last := argv[len(argv)-1]; !strings.Contains(last, "--model=sonnet") || !strings.Contains(last, "--permission-mode=acceptEdits") {
		t.Errorf("respawn flags: %s", last)
	}
}

func TestACPChildDiesMidTurn(t *testing.T) {
	h := startACP(t)
	sid := h.newSession()
	r := h.answer(h.prompt(sid, "DIE"))
	if r.Get("error.code").Int() != -32603 || r.Get("error.data.exitCode").Int() != 3 ||
		!strings.Contains(r.Get("error.data.stderr").Str, "fell over") {
		t.Fatalf("prompt whose CLI died: %s", r.Raw)
	}
	if r := h.answer(h.prompt(sid, "hello")); r.Get("result.stopReason").Str != "end_turn" {
		t.Fatalf("prompt after the death: %s", r.Raw)
	}
}

func TestACPSIGINTCancelsAndEOFEnds(t *testing.T) {
	h := startACP(t)
	sid := h.newSession()
	id := h.prompt(sid, "HANG")
	h.until(func(l gjson.Result) bool { return l.Get("params.update.sessionUpdate").Str == "agent_message_chunk" })
	h.Sigs <- syscall.SIGINT
	if r := h.answer(id); r.Get("result.stopReason").Str != "cancelled" {
		t.Fatalf("prompt after SIGINT: %s", r.Raw)
	}
	h.In.Close()
	h.Rest()
	if code := h.Wait(); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

func TestACPCloseAndLoadUnknown(t *testing.T) {
	h := startACP(t)
	sid := h.newSession()
	id := h.prompt(sid, "HANG")
	h.until(func(l gjson.Result) bool { return l.Get("params.update.sessionUpdate").Str == "agent_message_chunk" })
	closeID := h.call("session/close", `{"sessionId":"`+sid+`"}`)
	if r := h.answer(id); r.Get("result.stopReason").Str != "cancelled" {
		t.Errorf("prompt of the closed session: %s", r.Raw)
	}
	if r := h.answer(closeID); r.Get("result").Raw != "{}" {
		t.Errorf("close: %s", r.Raw)
	}
	if r := h.answer(h.call("session/close", `{"sessionId":"`+sid+`"}`)); r.Get("error.code").Int() != -32002 {
		t.Errorf("second close: %s", r.Raw)
	}
	if r := h.answer(h.call("session/resume", `{"sessionId":"`+sid+`","cwd":"`+h.dir+`"}`)); r.Get("error.code").Int() != -32002 {
		t.Errorf("resume without a session file: %s", r.Raw)
	}
}

// TestACPLongCwd: the session files of a cwd whose folder name the CLI
// shortens (over 200 characters) are found by the CLI's hash, as rpc finds
// them, and not in another folder with the same first 200 characters.
func TestACPLongCwd(t *testing.T) {
	h := startACP(t)
	cwd := filepath.Join(h.dir, strings.Repeat("d", 220))
	other := filepath.Join(h.dir, strings.Repeat("d", 220)+"x")
	const sid, otherSID = "5b0d2c43-0000-4000-8000-000000000001", "5b0d2c43-0000-4000-8000-000000000002"
	if err := os.Mkdir(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct{ cwd, sid string }{{cwd, sid}, {other, otherSID}} {
		dir := filepath.Join(h.claude, "projects", clifiles.ProjectDirName(f.cwd))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		line := `{"type":"user","cwd":"` + f.cwd + `","message":{"role":"user","content":"hello"}}` + "\n"
		if err := os.WriteFile(filepath.Join(dir, f.sid+".jsonl"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h.answer(h.call("initialize", `{"protocolVersion":1}`))
	r := h.answer(h.call("session/list", `{"cwd":"`+cwd+`"}`))
	if ss := r.Get("result.sessions"); ss.Get("#").Int() != 1 || ss.Get("0.sessionId").Str != sid || ss.Get("0.title").Str != "hello" {
		t.Errorf("session/list: %s", r.Raw)
	}
	if r := h.answer(h.call("session/resume", `{"sessionId":"`+otherSID+`","cwd":"`+cwd+`"}`)); r.Get("error.code").Int() != -32002 {
		t.Errorf("resume of the other cwd's session: %s", r.Raw)
	}
	if r := h.answer(h.call("session/resume", `{"sessionId":"`+sid+`","cwd":"`+cwd+`"}`)); !r.Get("result").Exists() {
		t.Fatalf("session/resume: %s", r.Raw)
	}
	if log := h.log(); !strings.Contains(log, "--resume="+sid) {
		t.Errorf("the CLI was not started with --resume:\n%s", log)
	}
}

// writeSessionFile writes the session file of sid for h.dir, with lines.
func (h *acpHost) writeSessionFile(sid string, lines []string) {
	h.T.Helper()
	dir := filepath.Join(h.claude, "projects", clifiles.ProjectDirName(h.dir))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		h.T.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, sid+".jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		h.T.Fatal(err)
	}
}

// TestACPLoadReplaysInBatches: a history read in many batches (off the
// loop) reaches the client whole and in order, and the load answer (which
// waits for the CLI's initialize answer, held meanwhile) comes after it.
// A session/cancel sent during the replay is answered in between.
func TestACPLoadReplaysInBatches(t *testing.T) {
	h := startACP(t)
	live := h.newSession()
	hang := h.prompt(live, "HANG")
	h.until(func(l gjson.Result) bool { return l.Get("params.update.sessionUpdate").Str == "agent_message_chunk" })
	queued := h.prompt(live, "queued")

	const sid, n = "5b0d2c43-0000-4000-8000-000000000003", 3000
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf(`{"type":"user","cwd":%q,"uuid":"u%d","message":{"role":"user","content":"line %d"}}`, h.dir, i, i)
	}
	h.writeSessionFile(sid, lines)
	load := h.call("session/load", `{"sessionId":"`+sid+`","cwd":"`+h.dir+`","mcpServers":[]}`)
	h.Send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"` + live + `"}}`)
	got, cancelledAt := 0, -1
	hangDone := false
	for {
		l := gjson.ParseBytes(h.Next())
		switch {
		case l.Get("id").Raw == hang:
			// Killed after the interrupt timeout, maybe during the replay.
			if l.Get("result.stopReason").Str != "cancelled" {
				t.Fatalf("hung prompt: %s", l.Raw)
			}
			hangDone = true
		case l.Get("id").Raw == queued:
			if l.Get("result.stopReason").Str != "cancelled" {
				t.Fatalf("queued prompt: %s", l.Raw)
			}
			cancelledAt = got
		case l.Get("params.sessionId").Str == sid:
			if want := fmt.Sprintf("line %d", got); l.Get("params.update.content.text").Str != want {
				t.Fatalf("replayed update %d: %s", got, l.Raw)
			}
			got++
		case l.Get("id").Raw == load:
			if got != n || !l.Get("result.configOptions").IsArray() {
				t.Fatalf("load answered after %d of %d updates: %s", got, n, l.Raw)
			}
			if cancelledAt < 0 {
				t.Fatalf("the load was answered before the cancel")
			}
			if !hangDone {
				if r := h.answer(hang); r.Get("result.stopReason").Str != "cancelled" {
					t.Fatalf("hung prompt: %s", r.Raw)
				}
			}
			if r := h.answer(h.prompt(sid, "after the load")); r.Get("result.stopReason").Str != "end_turn" {
				t.Fatalf("prompt after the load: %s", r.Raw)
			}
			return
		}
	}
}

// TestACPCLILineTooLong: CLI lines over CLIMaxLine are dropped and
// reported with _ccbridge/error; the turn, whose result was one of them,
// ends when the CLI is idle, with the stop reason of the last message;
// the session goes on.
func TestACPCLILineTooLong(t *testing.T) {
	h := startACPWith(t, func(a *ACP) { a.CLIMaxLine = 1000 })
	sid := h.newSession()
	id := h.prompt(sid, "LONG")
	for range 2 {
		e := h.until(isMethod("_ccbridge/error"))
		if e.Get("params.sessionId").Str != sid || e.Get("params.code").Str != "line_too_long" ||
			!strings.Contains(e.Get("params.message").Str, "1000-byte limit (--max-cli-line)") || e.Get("id").Exists() {
			t.Errorf("notification: %s", e.Raw)
		}
	}
	if r := h.answer(id); r.Get("result.stopReason").Str != "max_tokens" {
		t.Fatalf("prompt with the long lines: %s", r.Raw)
	}
	if r := h.answer(h.prompt(sid, "hello")); r.Get("result.stopReason").Str != "end_turn" {
		t.Fatalf("next prompt: %s", r.Raw)
	}
}

// TestACPLoadUnresumable: session/load and session/resume of a session
// whose file holds no user or assistant message are refused with -32002
// before any CLI starts; a prompt sent meanwhile gets -32002 too.
func TestACPLoadUnresumable(t *testing.T) {
	h := startACP(t)
	const sid = "5b0d2c43-0000-4000-8000-000000000004"
	h.writeSessionFile(sid, []string{`{"type":"queue-operation","operation":"enqueue","sessionId":"` + sid + `"}`})
	h.answer(h.call("initialize", `{"protocolVersion":1}`))
	load := h.call("session/load", `{"sessionId":"`+sid+`","cwd":"`+h.dir+`","mcpServers":[]}`)
	prompt := h.prompt(sid, "hello")
	if r := h.answer(load); r.Get("error.code").Int() != -32002 || !strings.Contains(r.Get("error.message").Str, "has no conversation to resume") {
		t.Errorf("session/load: %s", r.Raw)
	}
	if r := h.answer(prompt); r.Get("error.code").Int() != -32002 {
		t.Errorf("prompt for the session being loaded: %s", r.Raw)
	}
	if r := h.answer(h.call("session/resume", `{"sessionId":"`+sid+`","cwd":"`+h.dir+`"}`)); r.Get("error.code").Int() != -32002 {
		t.Errorf("session/resume: %s", r.Raw)
	}
	if log := h.log(); strings.Contains(log, "argv") {
		t.Errorf("a CLI was started:\n%s", log)
	}
}

// TestACPCLIResultTooLong: a result line over CLIMaxLine, with its keys in
// the real CLI's order ("type" after the long text), ends its turn at
// once, with the stop reason it held, though the CLI never says it is
// idle; the prompt queued behind it runs and is answered.
func TestACPCLIResultTooLong(t *testing.T) {
	h := startACPWith(t, func(a *ACP) { a.CLIMaxLine = 1000 })
	sid := h.newSession()
	first := h.prompt(sid, "TOOLONG")
	second := h.prompt(sid, "hello")
	e := h.until(isMethod("_ccbridge/error"))
	if e.Get("params.code").Str != "line_too_long" {
		t.Errorf("notification: %s", e.Raw)
	}
	if r := h.answer(first); r.Get("result.stopReason").Str != "max_tokens" {
		t.Fatalf("prompt whose result was too long: %s", r.Raw)
	}
	if r := h.answer(second); r.Get("result.stopReason").Str != "end_turn" {
		t.Fatalf("prompt queued behind it: %s", r.Raw)
	}
}

// acp: prompts queued behind a running one are answered "cancelled" at the
// client's end of input and at a shutdown; the running one gets its
// answer when its child goes.
func TestACPQueuedPromptsAnsweredAtTheEnd(t *testing.T) {
	for _, end := range []string{"end of input", "SIGTERM"} {
		t.Run(end, func(t *testing.T) {
			h := startACP(t)
			sid := h.newSession()
			ids := []string{h.prompt(sid, "HANG"), h.prompt(sid, "two"), h.prompt(sid, "three")}
			h.until(func(l gjson.Result) bool { return l.Get("params.update.sessionUpdate").Str == "agent_message_chunk" })
			if end == "SIGTERM" {
				h.Sigs <- syscall.SIGTERM
			} else {
				h.In.Close()
			}
			got := map[string]int{}
			var stops []string
			for _, l := range h.Rest() {
				r := gjson.ParseBytes(l)
				for _, id := range ids {
					if r.Get("id").Raw == id && !r.Get("method").Exists() {
						got[id]++
						stops = append(stops, r.Get("result.stopReason").Str+r.Get("error.message").Str)
					}
				}
			}
			for _, id := range ids {
				if got[id] != 1 {
					t.Errorf("prompt %s: %d answers, want 1 (answers %q)", id, got[id], stops)
				}
			}
		})
	}
}

// TestACPForkLogoutCancelRequest: session/fork starts a new session's CLI
// with --resume <the session> --fork-session --session-id <the fork>, and
// refuses a session without a file; logout runs the CLI's logout and says
// whether a stored login was removed; $/cancel_request answers a
// session/new still being set up -32800 and stops its CLI.
func TestACPForkLogoutCancelRequest(t *testing.T) {
	auth := filepath.Join(t.TempDir(), "auth")
	os.WriteFile(auth, []byte("stored"), 0o600)
	h := startACP(t, "FAKE_AUTH="+auth)
	sid := h.newSession()
	if r := h.answer(h.prompt(sid, "hello")); r.Get("result.stopReason").Str != "end_turn" {
		t.Fatalf("prompt: %s", r.Raw)
	}
	if r := h.answer(h.call("session/fork", `{"sessionId":"`+sid+`","cwd":"`+h.dir+`"}`)); r.Get("error.code").Int() != -32002 {
		t.Errorf("fork of a session without a file: %s", r.Raw)
	}
	dir := filepath.Join(h.claude, "projects", clifiles.ProjectDirName(h.dir))
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, sid+".jsonl"), []byte(`{"type":"user","cwd":"`+h.dir+`","message":{"role":"user","content":"hello"}}`+"\n"), 0o644)
	r := h.answer(h.call("session/fork", `{"sessionId":"`+sid+`","cwd":"`+h.dir+`"}`))
	fork := r.Get("result.sessionId").Str
	if fork == "" || fork == sid || !r.Get("result.configOptions").IsArray() || !r.Get("result.modes").IsObject() {
		t.Fatalf("fork: %s", r.Raw)
	}
	if r := h.answer(h.prompt(fork, "in the fork")); r.Get("result.stopReason").Str != "end_turn" {
		t.Fatalf("prompt in the fork: %s", r.Raw)
	}
	if r := h.answer(h.prompt(sid, "in the original")); r.Get("result.stopReason").Str != "end_turn" {
		t.Fatalf("the original session after the fork: %s", r.Raw)
	}
	if log := h.log(); !strings.Contains(log, "--resume="+sid+" --fork-session --session-id="+fork) {
		t.Errorf("the fork's CLI was not started as a fork:\n%s", log)
	}

	if r := h.answer(h.call("logout", `{}`)); r.Get("result._meta.ccbridge.authCleared").Type != gjson.True {
		t.Errorf("logout of a stored login: %s", r.Raw)
	}
	if r := h.answer(h.call("logout", `{}`)); r.Get("result._meta.ccbridge.authCleared").Type != gjson.False {
		t.Errorf("logout with nothing stored: %s", r.Raw)
	}
	if log := h.log(); strings.Count(log, "argv auth logout") != 2 || strings.Count(log, "argv auth status --json") != 4 {
		t.Errorf("logout did not run the CLI's auth commands:\n%s", log)
	}

	hang := filepath.Join(t.TempDir(), "hanginit")
	os.Mkdir(hang, 0o755)
	id := h.call("session/new", `{"cwd":"`+hang+`","mcpServers":[]}`)
	// Wait for its CLI to be started (it logs its argv), then cancel.
	for strings.Count(h.log(), "argv --output-format") < 3 {
		time.Sleep(5 * time.Millisecond)
	}
	h.Send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":` + id + `}}`)
	if r := h.answer(id); r.Get("error.code").Int() != -32800 {
		t.Fatalf("cancelled session/new: %s", r.Raw)
	}
	// The connection goes on, and the cancel of an answered request does
	// nothing.
	h.Send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":` + id + `}}`)
	if r := h.answer(h.call("session/list", `{}`)); !r.Get("result.sessions").IsArray() {
		t.Errorf("session/list after the cancel: %s", r.Raw)
	}
}
