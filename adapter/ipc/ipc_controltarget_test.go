//go:build unix

package ipc

// The ipc dialect as a control lane target, against the fake "ctl" CLI,
// driven the way a lane drives it (internal/controltest).

import (
	"strings"
	"syscall"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter/control"
	"github.com/ccbridge/ccbridge/internal/adaptertest"
	"github.com/ccbridge/ccbridge/internal/controltest"
	"github.com/ccbridge/ccbridge/mapping/lane000"
)

func TestControlIPC(t *testing.T) {
	c := controltest.New(t)
	s := &IPC{Settings: controltest.Settings(t, c)}
	h := adaptertest.StartRunner(t, s.Run)
	sid := gjson.GetBytes(h.NextOf("session_init"), "session_id").Str
	if got := c.SessionID(); got != sid || sid == "" {
		t.Errorf("ControlSessionID %q, want the session's %q", got, sid)
	}
	if st := c.State(); st != control.WorkerIdle {
		t.Errorf("state before any turn %q, want idle", st)
	}
	if got := c.Interrupt(); got != "ok: no turn running" {
		t.Errorf("interrupt while idle: %q", got)
	}

	// Idle: one user line with the text, controltest.Multiline intact; the UI sees
	// its turn end.
	if got := c.Inject(controltest.Multiline, false); got != "ok: sent" {
		t.Fatalf("inject while idle: %q", got)
	}
	if l := h.NextOf("turn_complete"); gjson.GetBytes(l, "result").Str != "ok" {
		t.Fatalf("the injected turn: %s", l)
	}
	if us := c.Users(); len(us) != 1 || us[0] != controltest.Multiline {
		t.Fatalf("the CLI read prompts %q, want exactly the injected text", us)
	}

	// During a turn: queued (the CLI runs it after the running one).
	h.Send(`{"type":"user_message","text":"WAIT"}`)
	h.NextOf("assistant_text")
	if st := c.State(); st != control.WorkerRunning {
		t.Errorf("state during a turn %q, want running", st)
	}
	if got := c.Inject("after the wait", false); got != "ok: queued" {
		t.Fatalf("inject during a turn: %q", got)
	}
	if l := h.NextOf("turn_complete"); gjson.GetBytes(l, "result").Str != "waited" {
		t.Fatalf("the running turn: %s", l)
	}
	if l := h.NextOf("turn_complete"); gjson.GetBytes(l, "result").Str != "ok" {
		t.Fatalf("the queued injected turn: %s", l)
	}
	c.WaitState(control.WorkerIdle)

	// With interrupt: the interrupt first, then the prompt.
	h.Send(`{"type":"user_message","text":"WAIT again"}`)
	h.NextOf("assistant_text")
	if got := c.Inject("instead", true); got != "ok: sent" {
		t.Fatalf("inject with interrupt: %q", got)
	}
	c.WaitStdin("user:WAIT again", "interrupt", "user:instead")
	if l := h.NextOf("turn_complete"); gjson.GetBytes(l, "subtype").Str != "error_during_execution" {
		t.Fatalf("the interrupted turn: %s", l)
	}
	if l := h.NextOf("turn_complete"); gjson.GetBytes(l, "result").Str != "ok" {
		t.Fatalf("the injected turn after the interrupt: %s", l)
	}

	// Interrupt a running turn.
	h.Send(`{"type":"user_message","text":"WAIT a third time"}`)
	h.NextOf("assistant_text")
	if got := c.Interrupt(); got != "ok: interrupt sent" {
		t.Fatalf("interrupt while running: %q", got)
	}
	c.WaitStdin("user:WAIT a third time", "interrupt")
	c.WaitState(control.WorkerIdle)

	// Shutting down: nothing can take a prompt.
	var got string
	c.On(func(ct control.Target) {
		ct.(*ipcLoop).loop.Shutdown("test")
		ct.ControlInject([]byte("too late"), false, func(res lane000.Result, d string) { got = string(res) + ": " + d })
	})
	if got != "not_live: "+control.DetailShuttingDown {
		t.Errorf("inject while shutting down: %q", got)
	}
	h.Wait()
	if c.Submit(func() { t.Error("work ran after the session ended") }) {
		t.Error("Submit returned true after the session ended")
	}
	if us := c.Users(); strings.Contains(strings.Join(us, "|"), "too late") {
		t.Errorf("the CLI read a prompt refused as not_live: %q", us)
	}
}

// TestControlIPCStartingAndRespawn: a prompt injected while a new child
// starts (a session_command) waits for it; one injected after the child
// died resumes the session in a new one, as a user_message does.
func TestControlIPCStartingAndRespawn(t *testing.T) {
	c := controltest.New(t)
	s := &IPC{Settings: controltest.Settings(t, c)}
	h := adaptertest.StartRunner(t, s.Run)
	h.NextOf("session_init")
	var st control.WorkerState
	var got string
	c.On(func(ct control.Target) {
		l := ct.(*ipcLoop)
		l.UILine([]byte(`{"type":"session_command","command":"new"}`))
		st = ct.ControlState()
		ct.ControlInject([]byte("to the new child"), false, func(res lane000.Result, d string) { got = string(res) + ": " + d })
	})
	if st != control.WorkerStarting || got != "ok: queued" {
		t.Fatalf("while the child is replaced: state %q, inject %q; want starting and queued", st, got)
	}
	if l := h.NextOf("turn_complete"); gjson.GetBytes(l, "result").Str != "ok" {
		t.Fatalf("the injected turn on the new child: %s", l)
	}
	if n := strings.Count(c.Log(), "argv"); n != 2 {
		t.Fatalf("%d children started, want 2", n)
	}
	if us := c.Users(); len(us) != 1 || us[0] != "to the new child" {
		t.Errorf("prompts %q", us)
	}
	// An injected prompt is tracked like the UI's: when the child dies,
	// the running turn and the queued injected one each get a terminal
	// message.
	h.Send(`{"type":"user_message","text":"WAIT STUCK"}`)
	h.NextOf("assistant_text")
	if got := c.Inject("queued behind", false); got != "ok: queued" {
		t.Fatalf("inject during a turn: %q", got)
	}
	c.WaitStdin("user:WAIT STUCK", "user:queued behind")
	c.On(func(ct control.Target) { syscall.Kill(ct.(*ipcLoop).sup.Live().Pid(), syscall.SIGKILL) })
	if got := terminalsOf(h, 2); got != "error/child_exited error/child_exited" {
		t.Fatalf("terminal messages after the child died: %q", got)
	}
	c.WaitState(control.WorkerIdle)
	if got := c.Interrupt(); got != "not_live: "+control.DetailNotRunning {
		t.Errorf("interrupt with no child: %q", got)
	}
	if got := c.Inject("revive", false); got != "ok: sent" {
		t.Fatalf("inject after the child died: %q", got)
	}
	h.NextOf("turn_complete")
	if n := strings.Count(c.Log(), "argv"); n != 3 {
		t.Errorf("%d children started, want 3", n)
	}
	h.In.Close()
	h.Wait()
}

// --- rpc ---
