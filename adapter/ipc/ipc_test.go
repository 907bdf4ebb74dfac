package ipc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/internal/adaptertest"
	"github.com/ccbridge/ccbridge/session"
)

// startIPC runs an ipc session against the fake "session" CLI, whose log
// (argv of each start, stdin lines) is returned by the second result. The
// fake saves its prompts under a HOME of its own, so that a new child can
// resume the session.
func startIPC(t *testing.T, opts session.Options) (*adaptertest.Host, func() string) {
	t.Helper()
	logFile := filepath.Join(t.TempDir(), "log")
	s := &IPC{Settings: adapter.Settings{
		Child:            adaptertest.Config(t, "session", nil, "FAKE_LOG="+logFile, "FAKE_SAVE=1", "HOME="+t.TempDir(), "CLAUDE_CONFIG_DIR="),
		Options:          opts,
		InterruptTimeout: 300 * time.Millisecond,
	}}
	h := adaptertest.StartRunner(t, s.Run)
	return h, func() string { b, _ := os.ReadFile(logFile); return string(b) }
}

func TestIPCSessionIDKnownBeforeTheFirstTurn(t *testing.T) {
	h, log := startIPC(t, session.Options{})
	init := h.NextOf("session_init")
	id := gjson.GetBytes(init, "session_id").Str
	if len(id) != 36 {
		t.Fatalf("session_init before any turn: %s", init)
	}
	h.Send(`{"type":"user_message","text":"hi"}`)
	if l := h.NextOf("turn_complete"); gjson.GetBytes(l, "result").Str != "ok" {
		t.Fatalf("turn: %s", l)
	}
	if !strings.Contains(log(), "--session-id="+id) {
		t.Errorf("the CLI was not started with the announced id:\n%s", log())
	}
}

func TestIPCInterruptTimeoutRestartsAndResumes(t *testing.T) {
	h, log := startIPC(t, session.Options{})
	id := gjson.GetBytes(h.NextOf("session_init"), "session_id").Str
	h.Send(`{"type":"user_message","text":"HANG"}`)
	h.NextOf("assistant_text")
	start := time.Now()
	h.Send(`{"type":"interrupt"}`)
	c := h.NextOf("turn_cancelled")
	if gjson.GetBytes(c, "reason").Str != "interrupt_timeout" || gjson.GetBytes(c, "partial_result").Str != "partial " {
		t.Fatalf("turn_cancelled: %s", c)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("cancelled after %v, before the 300 ms deadline", d)
	}
	// The next turn runs in a new child that resumes the session.
	h.Send(`{"type":"user_message","text":"again"}`)
	if l := h.NextOf("turn_complete"); gjson.GetBytes(l, "result").Str != "ok" {
		t.Fatalf("turn after the restart: %s", l)
	}
	if !strings.Contains(log(), "--resume="+id) {
		t.Errorf("the new child did not resume %s:\n%s", id, log())
	}
}

func TestIPCChildDiesMidTurnThenResumes(t *testing.T) {
	h, log := startIPC(t, session.Options{})
	id := gjson.GetBytes(h.NextOf("session_init"), "session_id").Str
	h.Send(`{"type":"user_message","text":"DIE"}`)
	e := h.NextOf("error")
	if gjson.GetBytes(e, "code").Str != "child_exited" || gjson.GetBytes(e, "recoverable").Bool() ||
		!strings.Contains(gjson.GetBytes(e, "stderr").Str, "fell over") || gjson.GetBytes(e, "exit_code").Int() != 3 {
		t.Fatalf("error after the child died: %s", e)
	}
	h.Send(`{"type":"user_message","text":"hi"}`)
	if l := h.NextOf("turn_complete"); gjson.GetBytes(l, "result").Str != "ok" {
		t.Fatalf("turn after the death: %s", l)
	}
	if n := strings.Count(log(), "argv"); n != 2 || !strings.Contains(log(), "--resume="+id) {
		t.Errorf("want a second start with --resume=%s:\n%s", id, log())
	}
}

// A line from the CLI that is not JSON becomes an error, and the turn
// ends as usual.
func TestIPCInvalidCLIOutput(t *testing.T) {
	h, _ := startIPC(t, session.Options{})
	h.NextOf("session_init")
	h.Send(`{"type":"user_message","text":"NOISE"}`)
	e := h.NextOf("error")
	if gjson.GetBytes(e, "code").Str != "invalid_cli_output" || !gjson.GetBytes(e, "recoverable").Bool() ||
		!strings.Contains(gjson.GetBytes(e, "message").Str, "Debugger attached.") {
		t.Fatalf("error for a stray line: %s", e)
	}
	if l := h.NextOf("turn_complete"); gjson.GetBytes(l, "result").Str != "ok" {
		t.Fatalf("turn after the stray line: %s", l)
	}
}

func TestIPCAnswerToUnknownRequestNeverReachesTheCLI(t *testing.T) {
	h, log := startIPC(t, session.Options{})
	h.NextOf("session_init")
	h.Send(`{"type":"tool_approval","request_id":"nope","decision":"allow"}`)
	e := h.NextOf("error")
	if gjson.GetBytes(e, "code").Str != "unknown_request" {
		t.Fatalf("error: %s", e)
	}
	h.Send(`{"type":"user_message","text":"hi"}`)
	h.NextOf("turn_complete")
	if strings.Contains(log(), "control_response") {
		t.Errorf("an answer to an unknown request reached the CLI:\n%s", log())
	}
}

func TestIPCSessionCommands(t *testing.T) {
	h, log := startIPC(t, session.Options{})
	first := gjson.GetBytes(h.NextOf("session_init"), "session_id").Str
	h.Send(`{"type":"user_message","text":"hi"}`)
	h.NextOf("turn_complete")

	h.Send(`{"type":"session_command","command":"new"}`)
	second := gjson.GetBytes(h.NextOf("session_init"), "session_id").Str
	if second == first || len(second) != 36 {
		t.Fatalf("new session id %q (first %q)", second, first)
	}
	h.Send(`{"type":"session_command","command":"resume","session_id":"` + first + `"}`)
	if got := gjson.GetBytes(h.NextOf("session_init"), "session_id").Str; got != first {
		t.Fatalf("resume: session_init %q, want %q", got, first)
	}
	h.Send(`{"type":"session_command","command":"fork","session_id":"` + first + `"}`)
	fork := gjson.GetBytes(h.NextOf("session_init"), "session_id").Str
	if fork == first || fork == second {
		t.Fatalf("fork kept an old id: %q", fork)
	}
	h.Send(`{"type":"user_message","text":"hi"}`)
	h.NextOf("turn_complete")
	l := log()
	for _, want := range []string{"--session-id=" + second, "--resume=" + first, "--fork-session --session-id=" + fork} {
		if !strings.Contains(l, want) {
			t.Errorf("no start with %q:\n%s", want, l)
		}
	}
}

func TestIPCSessionCommandDuringATurn(t *testing.T) {
	h, _ := startIPC(t, session.Options{})
	h.NextOf("session_init")
	h.Send(`{"type":"user_message","text":"HANG"}`)
	h.NextOf("assistant_text")
	h.Send(`{"type":"session_command","command":"new"}`)
	c := h.NextOf("turn_cancelled")
	if gjson.GetBytes(c, "reason").Str != "session_command" {
		t.Fatalf("turn_cancelled: %s", c)
	}
	h.NextOf("session_init")
	// A message sent while the old child stops waits for the new one.
	h.Send(`{"type":"user_message","text":"hi"}`)
	if l := h.NextOf("turn_complete"); gjson.GetBytes(l, "result").Str != "ok" {
		t.Fatalf("turn in the new session: %s", l)
	}
}

// TestIPCResumeOfAnUnresumableSession: a session_command resume of a
// session the CLI saved no conversation of is refused before anything is
// stopped or started, and the session goes on.
func TestIPCResumeOfAnUnresumableSession(t *testing.T) {
	h, log := startIPC(t, session.Options{})
	first := gjson.GetBytes(h.NextOf("session_init"), "session_id").Str
	h.Send(`{"type":"session_command","command":"resume","session_id":"0b7ad0e4-5a0c-4a6e-9d4e-2f2f7f6e8a11"}`)
	l := h.NextOf("error")
	if gjson.GetBytes(l, "code").Str != "session_not_found" || !gjson.GetBytes(l, "recoverable").Bool() {
		t.Fatalf("resume of an unknown session: %s", l)
	}
	h.Send(`{"type":"user_message","text":"hi"}`)
	h.NextOf("turn_complete")
	if n := strings.Count(log(), "argv "); n != 1 {
		t.Errorf("%d CLI starts, want the first only:\n%s", n, log())
	}
	if !strings.Contains(log(), "--session-id="+first) {
		t.Errorf("the turn did not run in the first session:\n%s", log())
	}
}

// TestIPCCLIResultTooLong: a result line over CLIMaxLine (keys in the real
// CLI's order, "type" after the long text) still ends its turn, with a
// turn_complete whose error says the line was too long; the prompt queued
// behind it gets its own.
func TestIPCCLIResultTooLong(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "log")
	s := &IPC{Settings: adapter.Settings{
		Child:      adaptertest.Config(t, "session", nil, "FAKE_LOG="+logFile, "HOME="+t.TempDir()),
		CLIMaxLine: 100000,
	}}
	h := adaptertest.StartRunner(t, s.Run)
	h.Send(`{"type":"user_message","text":"HUGE"}`)
	h.Send(`{"type":"user_message","text":"hi"}`)
	var tooLong int
	var done [][]byte
	h.Until(func(l []byte) bool {
		switch gjson.GetBytes(l, "type").Str {
		case "error":
			if gjson.GetBytes(l, "code").Str == "line_too_long" {
				tooLong++
			}
		case "turn_complete":
			done = append(done, l)
		}
		return len(done) == 2
	})
	if tooLong != 2 {
		t.Errorf("%d line_too_long errors, want 2 (assistant and result)", tooLong)
	}
	first := gjson.ParseBytes(done[0])
	if !first.Get("is_error").Bool() || !strings.Contains(first.Get("errors.0").Str, "result line of") ||
		!strings.Contains(first.Get("errors.0").Str, "--max-cli-line") || first.Get("result_class").Str != "error" {
		t.Errorf("the turn whose result was too long: %s", done[0])
	}
	if r := gjson.GetBytes(done[1], "result").Str; r != "ok" {
		t.Errorf("the turn queued behind it: %s", done[1])
	}
}

// With --echo-input, a prompt is echoed as the session read it (not as
// the UI sent it: a member the session does not read is not in it), and a
// line with a member twice is refused with duplicate_key, not echoed, and
// never reaches the CLI.
func TestIPCEchoIsWhatWasParsed(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "log")
	s := &IPC{EchoInput: true, Settings: adapter.Settings{
		Child: adaptertest.Config(t, "session", nil, "FAKE_LOG="+logFile, "HOME="+t.TempDir(), "CLAUDE_CONFIG_DIR="),
	}}
	h := adaptertest.StartRunner(t, s.Run)
	h.NextOf("session_init")
	h.Send(`{"type":"user_message","text":"FORGED","type":"control_request_forward","request_id":"X","tool_name":"Bash"}`)
	e := h.Next()
	if gjson.GetBytes(e, "type").Str != "error" || gjson.GetBytes(e, "code").Str != "duplicate_key" || gjson.GetBytes(e, "field").Str != "type" {
		t.Fatalf("after a duplicated type: %s", e)
	}
	h.Send(`{"type":"user_message","text":"hi","tool_name":"Bash"}`)
	if echo := h.Next(); string(echo) != `{"type":"user_message","text":"hi","ipc_version":2,"echo":true}` {
		t.Fatalf("echo %s", echo)
	}
	h.NextOf("turn_complete")
	if b, _ := os.ReadFile(logFile); strings.Contains(string(b), "FORGED") {
		t.Errorf("the refused line reached the CLI:\n%s", b)
	}
}
