package rpc

// The rpc dialect as a control lane target, against the fake "ctl" CLI,
// driven the way a lane drives it (internal/controltest).

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/adapter/control"
	"github.com/ccbridge/ccbridge/internal/adaptertest"
	"github.com/ccbridge/ccbridge/internal/controltest"
	"github.com/ccbridge/ccbridge/mapping/lane000"
	"github.com/ccbridge/ccbridge/mapping/rpc"
)

func TestControlRPC(t *testing.T) {
	c := controltest.New(t)
	s := &RPC{Settings: controltest.Settings(t, c, "FAKE_HOLDINIT=1")}
	h := adaptertest.StartRunner(t, s.Run)
	// The CLI has not answered initialize: starting.
	if st := c.State(); st != control.WorkerStarting {
		t.Errorf("state before the CLI's initialize answer %q, want starting", st)
	}
	rl := func() *adapter.Supervisor { return c.Target.(*rpcLoop).sup }
	c.Release(rl)
	c.WaitState(control.WorkerIdle)
	if sid := c.SessionID(); len(sid) != 36 {
		t.Errorf("ControlSessionID %q, want the session's uuid", sid)
	}
	if got := c.Interrupt(); got != "ok: no turn running" {
		t.Errorf("interrupt while idle: %q", got)
	}

	// Idle: a run of its own, visible to the UI.
	if got := c.Inject(controltest.Multiline, false); got != "ok: sent" {
		t.Fatalf("inject while idle: %q", got)
	}
	h.Until(status("run-1", "completed"))
	if us := c.Users(); len(us) != 1 || us[0] != controltest.Multiline {
		t.Fatalf("the CLI read prompts %q, want exactly the injected text", us)
	}

	// During a run: busy, and nothing reaches the CLI.
	run := runStart(h, "r2", "WAIT")
	h.Until(func(l []byte) bool { return gjson.GetBytes(l, "method").Str == rpc.MethodAgentEvent })
	if st := c.State(); st != control.WorkerRunning {
		t.Errorf("state during a run %q, want running", st)
	}
	if got := c.Inject("refused", false); got != "busy: "+control.DetailRunActive {
		t.Fatalf("inject during a run: %q", got)
	}
	// With interrupt: the run is cancelled, the interrupt written, and
	// the prompt waits for the turn's end.
	if got := c.Inject("instead", true); got != "ok: queued" {
		t.Fatalf("inject with interrupt: %q", got)
	}
	h.Until(status(run, "cancelled"))
	h.Until(status("run-3", "completed"))
	c.WaitStdin("user:WAIT", "interrupt", "user:instead")

	// Interrupt a running run.
	run = runStart(h, "r4", "WAIT more")
	h.Until(func(l []byte) bool { return gjson.GetBytes(l, "method").Str == rpc.MethodAgentEvent })
	if got := c.Interrupt(); got != "ok: interrupt sent" {
		t.Fatalf("interrupt while running: %q", got)
	}
	h.Until(status(run, "cancelled"))
	c.WaitStdin("user:WAIT more", "interrupt")
	c.WaitState(control.WorkerIdle)

	var got string
	c.On(func(ct control.Target) {
		ct.(*rpcLoop).loop.Shutdown("test")
		ct.ControlInject([]byte("too late"), false, func(res lane000.Result, d string) { got = string(res) + ": " + d })
	})
	if got != "not_live: "+control.DetailShuttingDown {
		t.Errorf("inject while shutting down: %q", got)
	}
	h.Wait()
	if c.Submit(func() {}) {
		t.Error("Submit returned true after the session ended")
	}
	if us := c.Users(); strings.Contains(strings.Join(us, "|"), "too late") || strings.Contains(strings.Join(us, "|"), "refused") {
		t.Errorf("the CLI read a refused prompt: %q", us)
	}
}

// --- acp ---
