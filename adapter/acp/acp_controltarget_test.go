package acp

// The acp dialect as a control lane target, against the fake "ctl" CLI,
// driven the way a lane drives it (internal/controltest).

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/adapter/control"
	"github.com/ccbridge/ccbridge/internal/adaptertest"
	"github.com/ccbridge/ccbridge/internal/controltest"
	"github.com/ccbridge/ccbridge/mapping/lane000"
)

func TestControlACP(t *testing.T) {
	c := controltest.New(t)
	logFile := filepath.Join(t.TempDir(), "log")
	c.Log = func() string { b, _ := os.ReadFile(logFile); return string(b) }
	a := &ACP{Settings: adapter.Settings{
		Child:            adaptertest.Config(t, "ctl", nil, "FAKE_LOG="+logFile, "FAKE_HOLDINIT=1"),
		InterruptTimeout: 5 * time.Second,
		Logger:           adaptertest.Logger(t),
		ControlHook:      c.Take,
	}, ClaudeDir: t.TempDir()}
	h := &acpHost{Host: adaptertest.StartRunner(t, a.Run), dir: t.TempDir(), claude: a.ClaudeDir, log: c.Log}

	// No session yet.
	if st := c.State(); st != control.WorkerStarting {
		t.Errorf("state with no session %q, want starting", st)
	}
	if got := c.Inject("nobody", false); got != "not_live: "+detailNoSession {
		t.Errorf("inject with no session: %q", got)
	}
	h.answer(h.call("initialize", `{"protocolVersion":1}`))
	newID := h.call("session/new", `{"cwd":"`+h.dir+`","mcpServers":[]}`)
	c.WaitStdin("initialize")
	// The session is set up: a prompt waits for it.
	if st := c.State(); st != control.WorkerStarting {
		t.Errorf("state during the setup %q, want starting", st)
	}
	if got := c.Inject("during setup", false); got != "ok: queued" {
		t.Fatalf("inject during the setup: %q", got)
	}
	var sid string
	c.On(func(ct control.Target) { sid = ct.ControlSessionID() })
	sup := func() *adapter.Supervisor { return c.Target.(*acpLoop).sessions[sid].sup }
	c.Release(sup)
	if r := h.answer(newID); r.Get("result.sessionId").Str != sid {
		t.Fatalf("session/new: %s (the target's session %q)", r.Raw, sid)
	}
	c.WaitStdin("initialize", "user:during setup")
	c.WaitState(control.WorkerIdle)

	// Idle: sent at once; the client sees the turn, and no request is
	// answered for it.
	if got := c.Inject(controltest.Multiline, false); got != "ok: sent" {
		t.Fatalf("inject while idle: %q", got)
	}
	c.WaitStdin("user:" + controltest.Multiline)

	// During a prompt: queued by ccbridge, sent after the turn.
	p := h.prompt(sid, "WAIT")
	h.until(func(l gjson.Result) bool { return l.Get("params.update.sessionUpdate").Str == "agent_message_chunk" })
	if got := c.Inject("queued one", false); got != "ok: queued" {
		t.Fatalf("inject during a turn: %q", got)
	}
	if st := c.State(); st != control.WorkerRunning {
		t.Errorf("state during a turn %q, want running", st)
	}
	if us := c.Users(); us[len(us)-1] != "WAIT" {
		t.Fatalf("the queued prompt reached the CLI before the turn ended: %q", us)
	}
	c.Release(sup)
	if r := h.answer(p); r.Get("result.stopReason").Str != "end_turn" {
		t.Fatalf("the client's prompt: %s", r.Raw)
	}
	c.WaitStdin("user:WAIT", "user:queued one")

	// With interrupt: the interrupt, then the prompt; the client's prompt
	// is answered cancelled.
	c.WaitState(control.WorkerIdle)
	p = h.prompt(sid, "WAIT again")
	h.until(func(l gjson.Result) bool { return l.Get("params.update.sessionUpdate").Str == "agent_message_chunk" })
	if got := c.Inject("instead", true); got != "ok: queued" {
		t.Fatalf("inject with interrupt: %q", got)
	}
	if r := h.answer(p); r.Get("result.stopReason").Str != "cancelled" {
		t.Fatalf("the interrupted prompt: %s", r.Raw)
	}
	c.WaitStdin("user:WAIT again", "interrupt", "user:instead")
	c.WaitState(control.WorkerIdle)
	if got := c.Interrupt(); got != "ok: no turn running" {
		t.Errorf("interrupt while idle: %q", got)
	}
	p = h.prompt(sid, "WAIT once more")
	h.until(func(l gjson.Result) bool { return l.Get("params.update.sessionUpdate").Str == "agent_message_chunk" })
	if got := c.Interrupt(); got != "ok: interrupt sent" {
		t.Fatalf("interrupt while running: %q", got)
	}
	if r := h.answer(p); r.Get("result.stopReason").Str != "cancelled" {
		t.Fatalf("the interrupted prompt: %s", r.Raw)
	}

	// Several sessions: the lane picks one by id.
	h.call("session/new", `{"cwd":"`+h.dir+`","mcpServers":[]}`)
	var ids []string
	deadline := time.Now().Add(10 * time.Second)
	for len(ids) < 2 && time.Now().Before(deadline) {
		c.On(func(ct control.Target) { ids = ct.(control.Sessions).ControlSessions() })
	}
	if len(ids) != 2 || ids[0] != sid {
		t.Fatalf("ControlSessions %q, want %s first", ids, sid)
	}
	var second control.Target
	c.On(func(ct control.Target) {
		var ok bool
		second, ok = ct.(control.Sessions).ControlSession(ids[1])
		if !ok {
			t.Error("ControlSession of the second session: not found")
		}
		if _, ok := ct.(control.Sessions).ControlSession("nope"); ok {
			t.Error("ControlSession of an unknown id: found")
		}
	})
	var st control.WorkerState
	c.On(func(control.Target) { st = second.ControlState() })
	if st != control.WorkerStarting {
		t.Errorf("the second session during its setup: %q", st)
	}
	// Closing the first: its target is gone.
	var first control.Target
	c.On(func(ct control.Target) { first, _ = ct.(control.Sessions).ControlSession(sid) })
	h.answer(h.call("session/close", `{"sessionId":"`+sid+`"}`))
	var got string
	c.On(func(control.Target) {
		st = first.ControlState()
		first.ControlInject([]byte("to a closed session"), false, func(res lane000.Result, d string) { got = string(res) + ": " + d })
	})
	if st != control.WorkerExited || got != "not_live: the session was closed" {
		t.Errorf("a closed session: state %q, inject %q", st, got)
	}
	if got := c.SessionID(); got != ids[1] {
		t.Errorf("ControlSessionID after the first closed: %q, want %s", got, ids[1])
	}
	h.Sigs <- syscall.SIGTERM
	h.Wait()
	if c.Submit(func() {}) {
		t.Error("Submit returned true after the session ended")
	}
}

// --- drop-in ---
