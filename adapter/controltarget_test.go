package adapter

// The dialects as control lane targets (controltarget.go), against the
// fake "ctl" CLI, driven the way a lane drives them: through the Submit
// the dialect hands its ControlHook.

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

	"github.com/ccbridge/ccbridge/adapter/control"
	"github.com/ccbridge/ccbridge/internal/adaptertest"
	"github.com/ccbridge/ccbridge/mapping/lane000"
	"github.com/ccbridge/ccbridge/mapping/rpc"
)

func init() {
	// ctl: a CLI for the control targets. It appends its argv to FAKE_LOG
	// and every stdin line after it. A user line answers with an init and
	// a result, unless its text holds WAIT: then an init and a delta, and
	// the turn waits for the next line: an interrupt ends it (its answer,
	// then an error_during_execution result), a user line completes it
	// (result "waited") before its own turn, as the CLI runs a queued
	// prompt after the running one; with STUCK too, user lines leave it
	// waiting (and get no turn). A control_request with request_id
	// "release" (the test writes it) completes a waiting turn and answers
	// the initialize requests held back with FAKE_HOLDINIT=1. Other
	// control requests get a success (initialize's says session_state
	// idle). With FAKE_LINGER=1 it stays a second after the end of its
	// input before it exits.
	adaptertest.Register("ctl", func() {
		logf, _ := os.OpenFile(os.Getenv("FAKE_LOG"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		fmt.Fprintf(logf, "argv %s\n", strings.Join(os.Args[1:], " "))
		sid := "ctl-session"
		for i, a := range os.Args {
			if (a == "--session-id" || a == "--resume") && i+1 < len(os.Args) {
				sid = os.Args[i+1]
			}
			for _, f := range []string{"--session-id=", "--resume="} {
				if v, ok := strings.CutPrefix(a, f); ok {
					sid = v
				}
			}
		}
		out := func(format string, a ...any) { fmt.Printf(format+"\n", a...) }
		result := func(sub, text string) {
			out(`{"type":"result","subtype":%q,"is_error":%v,"result":%q,"stop_reason":"end_turn","terminal_reason":"completed","session_id":%q,"total_cost_usd":0.1}`,
				sub, sub != "success", text, sid)
		}
		answer := func(id, resp string) {
			out(`{"type":"control_response","response":{"subtype":"success","request_id":%q,"response":%s}}`, id, resp)
		}
		hold := os.Getenv("FAKE_HOLDINIT") == "1"
		var held []string
		waiting, stuck := false, false
		stdin := bufio.NewReaderSize(os.Stdin, 1<<20)
		for {
			line, err := stdin.ReadBytes('\n')
			if err != nil {
				if os.Getenv("FAKE_LINGER") == "1" {
					time.Sleep(time.Second)
				}
				return
			}
			fmt.Fprintf(logf, "stdin %s", line)
			typ := gjson.GetBytes(line, "type").Str
			sub := gjson.GetBytes(line, "request.subtype").Str
			id := gjson.GetBytes(line, "request_id").Str
			if typ == "control_request" && id == "release" {
				hold = false
				for _, h := range held {
					answer(h, `{"session_state":"idle"}`)
				}
				held = nil
				if waiting {
					waiting = false
					result("success", "waited")
				}
				continue
			}
			if waiting {
				switch {
				case sub == "interrupt":
					answer(id, `{}`)
					waiting = false
					result("error_during_execution", "")
					continue
				case typ == "user" && stuck:
					continue
				case typ == "user":
					waiting = false
					result("success", "waited")
				}
			}
			switch typ {
			case "user":
				out(`{"type":"system","subtype":"init","session_id":%q,"model":"m","cwd":"/"}`, sid)
				if text := gjson.GetBytes(line, "message.content.0.text").Str; strings.Contains(text, "WAIT") {
					stuck = strings.Contains(text, "STUCK")
					out(`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"working "}},"session_id":%q,"parent_tool_use_id":null,"api_message_id":"msg_1"}`, sid)
					waiting = true
					continue
				}
				result("success", "ok")
			case "control_request":
				if sub == "initialize" && hold {
					held = append(held, id)
					continue
				}
				resp := `{}`
				if sub == "initialize" {
					resp = `{"session_state":"idle"}`
				}
				answer(id, resp)
			}
		}
	})
}

// multiline is an injected prompt that must reach the CLI as one payload.
const multiline = "first line\nsecond line with \"quotes\" and a tab\t\n\nlast ünïcode line"

// ctlHook is what a dialect hands a control lane: its target and Submit.
type ctlHook struct {
	t      *testing.T
	target control.Target
	submit func(func()) bool
	ready  chan struct{}
	log    func() string
}

func newCtlHook(t *testing.T) *ctlHook { return &ctlHook{t: t, ready: make(chan struct{})} }

func (c *ctlHook) hook(target control.Target, submit func(func()) bool) {
	c.target, c.submit = target, submit
	close(c.ready)
}

// on runs fn on the session's goroutine and waits for it.
func (c *ctlHook) on(fn func(control.Target)) {
	c.t.Helper()
	select {
	case <-c.ready:
	case <-time.After(10 * time.Second):
		c.t.Fatal("the dialect never called its ControlHook")
	}
	ran := make(chan struct{})
	if !c.submit(func() { fn(c.target); close(ran) }) {
		c.t.Fatal("Submit: the session has ended")
	}
	<-ran
}

// call runs one inject or interrupt and returns what done was told; done
// must be called exactly once, before the method returns.
func (c *ctlHook) call(fn func(control.Target, func(lane000.Result, string))) string {
	c.t.Helper()
	var got []string
	c.on(func(t control.Target) {
		fn(t, func(res lane000.Result, detail string) { got = append(got, string(res)+": "+detail) })
	})
	if len(got) != 1 {
		c.t.Fatalf("done was called %d times (%q), want once", len(got), got)
	}
	return got[0]
}

func (c *ctlHook) inject(text string, interrupt bool) string {
	c.t.Helper()
	return c.call(func(t control.Target, done func(lane000.Result, string)) {
		t.ControlInject([]byte(text), interrupt, done)
	})
}

func (c *ctlHook) interrupt() string {
	c.t.Helper()
	return c.call(func(t control.Target, done func(lane000.Result, string)) { t.ControlInterrupt(done) })
}

func (c *ctlHook) state() control.WorkerState {
	c.t.Helper()
	var s control.WorkerState
	c.on(func(t control.Target) { s = t.ControlState() })
	return s
}

func (c *ctlHook) sessionID() string {
	c.t.Helper()
	var s string
	c.on(func(t control.Target) { s = t.ControlSessionID() })
	return s
}

// waitState polls the state until it is want.
func (c *ctlHook) waitState(want control.WorkerState) {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := c.state()
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("state %q, want %q", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stdin lists what the CLI read, in order: "user:<text>" for a prompt,
// "interrupt" for an interrupt request, the subtype of other requests.
func (c *ctlHook) stdin() []string {
	var got []string
	for _, l := range strings.Split(c.log(), "\n") {
		line, ok := strings.CutPrefix(l, "stdin ")
		if !ok {
			continue
		}
		switch gjson.Get(line, "type").Str {
		case "user":
			got = append(got, "user:"+gjson.Get(line, "message.content.0.text").Str)
		case "control_request":
			if gjson.Get(line, "request_id").Str != "release" {
				got = append(got, gjson.Get(line, "request.subtype").Str)
			}
		}
	}
	return got
}

// users lists the prompts the CLI read.
func (c *ctlHook) users() []string {
	var us []string
	for _, s := range c.stdin() {
		if u, ok := strings.CutPrefix(s, "user:"); ok {
			us = append(us, u)
		}
	}
	return us
}

// waitStdin waits until the CLI has read want (a suffix of what it read).
func (c *ctlHook) waitStdin(want ...string) {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := c.stdin()
		if len(got) >= len(want) && strings.Join(got[len(got)-len(want):], "|") == strings.Join(want, "|") {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the CLI read %q, want it to end with %q", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// release writes the fake's release line to the live child of sup.
func (c *ctlHook) release(sup func() *Supervisor) {
	c.t.Helper()
	c.on(func(control.Target) {
		sup().Live().Write([]byte(`{"type":"control_request","request_id":"release","request":{"subtype":"noop"}}`))
	})
}

func ctlSettings(t *testing.T, c *ctlHook, env ...string) Settings {
	logFile := filepath.Join(t.TempDir(), "log")
	c.log = func() string { b, _ := os.ReadFile(logFile); return string(b) }
	return Settings{
		Child:            adaptertest.Config(t, "ctl", nil, append([]string{"FAKE_LOG=" + logFile, "HOME=" + t.TempDir(), "CLAUDE_CONFIG_DIR="}, env...)...),
		InterruptTimeout: 5 * time.Second,
		ControlTimeout:   5 * time.Second,
		Logger:           testLogger(t),
		ControlHook:      c.hook,
	}
}

// --- ipc ---

func TestControlIPC(t *testing.T) {
	c := newCtlHook(t)
	s := &IPC{Settings: ctlSettings(t, c)}
	h := adaptertest.StartRunner(t, s.Run)
	sid := gjson.GetBytes(h.NextOf("session_init"), "session_id").Str
	if got := c.sessionID(); got != sid || sid == "" {
		t.Errorf("ControlSessionID %q, want the session's %q", got, sid)
	}
	if st := c.state(); st != control.WorkerIdle {
		t.Errorf("state before any turn %q, want idle", st)
	}
	if got := c.interrupt(); got != "ok: no turn running" {
		t.Errorf("interrupt while idle: %q", got)
	}

	// Idle: one user line with the text, multiline intact; the UI sees
	// its turn end.
	if got := c.inject(multiline, false); got != "ok: sent" {
		t.Fatalf("inject while idle: %q", got)
	}
	if l := h.NextOf("turn_complete"); gjson.GetBytes(l, "result").Str != "ok" {
		t.Fatalf("the injected turn: %s", l)
	}
	if us := c.users(); len(us) != 1 || us[0] != multiline {
		t.Fatalf("the CLI read prompts %q, want exactly the injected text", us)
	}

	// During a turn: queued (the CLI runs it after the running one).
	h.Send(`{"type":"user_message","text":"WAIT"}`)
	h.NextOf("assistant_text")
	if st := c.state(); st != control.WorkerRunning {
		t.Errorf("state during a turn %q, want running", st)
	}
	if got := c.inject("after the wait", false); got != "ok: queued" {
		t.Fatalf("inject during a turn: %q", got)
	}
	if l := h.NextOf("turn_complete"); gjson.GetBytes(l, "result").Str != "waited" {
		t.Fatalf("the running turn: %s", l)
	}
	if l := h.NextOf("turn_complete"); gjson.GetBytes(l, "result").Str != "ok" {
		t.Fatalf("the queued injected turn: %s", l)
	}
	c.waitState(control.WorkerIdle)

	// With interrupt: the interrupt first, then the prompt.
	h.Send(`{"type":"user_message","text":"WAIT again"}`)
	h.NextOf("assistant_text")
	if got := c.inject("instead", true); got != "ok: sent" {
		t.Fatalf("inject with interrupt: %q", got)
	}
	c.waitStdin("user:WAIT again", "interrupt", "user:instead")
	if l := h.NextOf("turn_complete"); gjson.GetBytes(l, "subtype").Str != "error_during_execution" {
		t.Fatalf("the interrupted turn: %s", l)
	}
	if l := h.NextOf("turn_complete"); gjson.GetBytes(l, "result").Str != "ok" {
		t.Fatalf("the injected turn after the interrupt: %s", l)
	}

	// Interrupt a running turn.
	h.Send(`{"type":"user_message","text":"WAIT a third time"}`)
	h.NextOf("assistant_text")
	if got := c.interrupt(); got != "ok: interrupt sent" {
		t.Fatalf("interrupt while running: %q", got)
	}
	c.waitStdin("user:WAIT a third time", "interrupt")
	c.waitState(control.WorkerIdle)

	// Shutting down: nothing can take a prompt.
	var got string
	c.on(func(ct control.Target) {
		ct.(*ipcLoop).loop.Shutdown("test")
		ct.ControlInject([]byte("too late"), false, func(res lane000.Result, d string) { got = string(res) + ": " + d })
	})
	if got != "not_live: "+control.DetailShuttingDown {
		t.Errorf("inject while shutting down: %q", got)
	}
	h.Wait()
	if c.submit(func() { t.Error("work ran after the session ended") }) {
		t.Error("Submit returned true after the session ended")
	}
	if us := c.users(); strings.Contains(strings.Join(us, "|"), "too late") {
		t.Errorf("the CLI read a prompt refused as not_live: %q", us)
	}
}

// TestControlIPCStartingAndRespawn: a prompt injected while a new child
// starts (a session_command) waits for it; one injected after the child
// died resumes the session in a new one, as a user_message does.
func TestControlIPCStartingAndRespawn(t *testing.T) {
	c := newCtlHook(t)
	s := &IPC{Settings: ctlSettings(t, c)}
	h := adaptertest.StartRunner(t, s.Run)
	h.NextOf("session_init")
	var st control.WorkerState
	var got string
	c.on(func(ct control.Target) {
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
	if n := strings.Count(c.log(), "argv"); n != 2 {
		t.Fatalf("%d children started, want 2", n)
	}
	if us := c.users(); len(us) != 1 || us[0] != "to the new child" {
		t.Errorf("prompts %q", us)
	}
	// An injected prompt is tracked like the UI's: when the child dies,
	// the running turn and the queued injected one each get a terminal
	// message.
	h.Send(`{"type":"user_message","text":"WAIT STUCK"}`)
	h.NextOf("assistant_text")
	if got := c.inject("queued behind", false); got != "ok: queued" {
		t.Fatalf("inject during a turn: %q", got)
	}
	c.waitStdin("user:WAIT STUCK", "user:queued behind")
	c.on(func(ct control.Target) { ct.(*ipcLoop).sup.Live().child.Kill() })
	if got := terminalsOf(h, 2); got != "error/child_exited error/child_exited" {
		t.Fatalf("terminal messages after the child died: %q", got)
	}
	c.waitState(control.WorkerIdle)
	if got := c.interrupt(); got != "not_live: "+control.DetailNotRunning {
		t.Errorf("interrupt with no child: %q", got)
	}
	if got := c.inject("revive", false); got != "ok: sent" {
		t.Fatalf("inject after the child died: %q", got)
	}
	h.NextOf("turn_complete")
	if n := strings.Count(c.log(), "argv"); n != 3 {
		t.Errorf("%d children started, want 3", n)
	}
	h.In.Close()
	h.Wait()
}

// --- rpc ---

func TestControlRPC(t *testing.T) {
	c := newCtlHook(t)
	s := &RPC{Settings: ctlSettings(t, c, "FAKE_HOLDINIT=1")}
	h := adaptertest.StartRunner(t, s.Run)
	// The CLI has not answered initialize: starting.
	if st := c.state(); st != control.WorkerStarting {
		t.Errorf("state before the CLI's initialize answer %q, want starting", st)
	}
	rl := func() *Supervisor { return c.target.(*rpcLoop).sup }
	c.release(rl)
	c.waitState(control.WorkerIdle)
	if sid := c.sessionID(); len(sid) != 36 {
		t.Errorf("ControlSessionID %q, want the session's uuid", sid)
	}
	if got := c.interrupt(); got != "ok: no turn running" {
		t.Errorf("interrupt while idle: %q", got)
	}

	// Idle: a run of its own, visible to the UI.
	if got := c.inject(multiline, false); got != "ok: sent" {
		t.Fatalf("inject while idle: %q", got)
	}
	h.Until(status("run-1", "completed"))
	if us := c.users(); len(us) != 1 || us[0] != multiline {
		t.Fatalf("the CLI read prompts %q, want exactly the injected text", us)
	}

	// During a run: busy, and nothing reaches the CLI.
	run := runStart(h, "r2", "WAIT")
	h.Until(func(l []byte) bool { return gjson.GetBytes(l, "method").Str == rpc.MethodAgentEvent })
	if st := c.state(); st != control.WorkerRunning {
		t.Errorf("state during a run %q, want running", st)
	}
	if got := c.inject("refused", false); got != "busy: "+control.DetailRunActive {
		t.Fatalf("inject during a run: %q", got)
	}
	// With interrupt: the run is cancelled, the interrupt written, and
	// the prompt waits for the turn's end.
	if got := c.inject("instead", true); got != "ok: queued" {
		t.Fatalf("inject with interrupt: %q", got)
	}
	h.Until(status(run, "cancelled"))
	h.Until(status("run-3", "completed"))
	c.waitStdin("user:WAIT", "interrupt", "user:instead")

	// Interrupt a running run.
	run = runStart(h, "r4", "WAIT more")
	h.Until(func(l []byte) bool { return gjson.GetBytes(l, "method").Str == rpc.MethodAgentEvent })
	if got := c.interrupt(); got != "ok: interrupt sent" {
		t.Fatalf("interrupt while running: %q", got)
	}
	h.Until(status(run, "cancelled"))
	c.waitStdin("user:WAIT more", "interrupt")
	c.waitState(control.WorkerIdle)

	var got string
	c.on(func(ct control.Target) {
		ct.(*rpcLoop).loop.Shutdown("test")
		ct.ControlInject([]byte("too late"), false, func(res lane000.Result, d string) { got = string(res) + ": " + d })
	})
	if got != "not_live: "+control.DetailShuttingDown {
		t.Errorf("inject while shutting down: %q", got)
	}
	h.Wait()
	if c.submit(func() {}) {
		t.Error("Submit returned true after the session ended")
	}
	if us := c.users(); strings.Contains(strings.Join(us, "|"), "too late") || strings.Contains(strings.Join(us, "|"), "refused") {
		t.Errorf("the CLI read a refused prompt: %q", us)
	}
}

// --- acp ---

func TestControlACP(t *testing.T) {
	c := newCtlHook(t)
	logFile := filepath.Join(t.TempDir(), "log")
	c.log = func() string { b, _ := os.ReadFile(logFile); return string(b) }
	a := &ACP{Settings: Settings{
		Child:            adaptertest.Config(t, "ctl", nil, "FAKE_LOG="+logFile, "FAKE_HOLDINIT=1"),
		InterruptTimeout: 5 * time.Second,
		Logger:           testLogger(t),
		ControlHook:      c.hook,
	}, ClaudeDir: t.TempDir()}
	h := &acpHost{Host: adaptertest.StartRunner(t, a.Run), dir: t.TempDir(), claude: a.ClaudeDir, log: c.log}

	// No session yet.
	if st := c.state(); st != control.WorkerStarting {
		t.Errorf("state with no session %q, want starting", st)
	}
	if got := c.inject("nobody", false); got != "not_live: "+detailNoSession {
		t.Errorf("inject with no session: %q", got)
	}
	h.answer(h.call("initialize", `{"protocolVersion":1}`))
	newID := h.call("session/new", `{"cwd":"`+h.dir+`","mcpServers":[]}`)
	c.waitStdin("initialize")
	// The session is set up: a prompt waits for it.
	if st := c.state(); st != control.WorkerStarting {
		t.Errorf("state during the setup %q, want starting", st)
	}
	if got := c.inject("during setup", false); got != "ok: queued" {
		t.Fatalf("inject during the setup: %q", got)
	}
	var sid string
	c.on(func(ct control.Target) { sid = ct.ControlSessionID() })
	sup := func() *Supervisor { return c.target.(*acpLoop).sessions[sid].sup }
	c.release(sup)
	if r := h.answer(newID); r.Get("result.sessionId").Str != sid {
		t.Fatalf("session/new: %s (the target's session %q)", r.Raw, sid)
	}
	c.waitStdin("initialize", "user:during setup")
	c.waitState(control.WorkerIdle)

	// Idle: sent at once; the client sees the turn, and no request is
	// answered for it.
	if got := c.inject(multiline, false); got != "ok: sent" {
		t.Fatalf("inject while idle: %q", got)
	}
	c.waitStdin("user:" + multiline)

	// During a prompt: queued by ccbridge, sent after the turn.
	p := h.prompt(sid, "WAIT")
	h.until(func(l gjson.Result) bool { return l.Get("params.update.sessionUpdate").Str == "agent_message_chunk" })
	if got := c.inject("queued one", false); got != "ok: queued" {
		t.Fatalf("inject during a turn: %q", got)
	}
	if st := c.state(); st != control.WorkerRunning {
		t.Errorf("state during a turn %q, want running", st)
	}
	if us := c.users(); us[len(us)-1] != "WAIT" {
		t.Fatalf("the queued prompt reached the CLI before the turn ended: %q", us)
	}
	c.release(sup)
	if r := h.answer(p); r.Get("result.stopReason").Str != "end_turn" {
		t.Fatalf("the client's prompt: %s", r.Raw)
	}
	c.waitStdin("user:WAIT", "user:queued one")

	// With interrupt: the interrupt, then the prompt; the client's prompt
	// is answered cancelled.
	c.waitState(control.WorkerIdle)
	p = h.prompt(sid, "WAIT again")
	h.until(func(l gjson.Result) bool { return l.Get("params.update.sessionUpdate").Str == "agent_message_chunk" })
	if got := c.inject("instead", true); got != "ok: queued" {
		t.Fatalf("inject with interrupt: %q", got)
	}
	if r := h.answer(p); r.Get("result.stopReason").Str != "cancelled" {
		t.Fatalf("the interrupted prompt: %s", r.Raw)
	}
	c.waitStdin("user:WAIT again", "interrupt", "user:instead")
	c.waitState(control.WorkerIdle)
	if got := c.interrupt(); got != "ok: no turn running" {
		t.Errorf("interrupt while idle: %q", got)
	}
	p = h.prompt(sid, "WAIT once more")
	h.until(func(l gjson.Result) bool { return l.Get("params.update.sessionUpdate").Str == "agent_message_chunk" })
	if got := c.interrupt(); got != "ok: interrupt sent" {
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
		c.on(func(ct control.Target) { ids = ct.(control.Sessions).ControlSessions() })
	}
	if len(ids) != 2 || ids[0] != sid {
		t.Fatalf("ControlSessions %q, want %s first", ids, sid)
	}
	var second control.Target
	c.on(func(ct control.Target) {
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
	c.on(func(control.Target) { st = second.ControlState() })
	if st != control.WorkerStarting {
		t.Errorf("the second session during its setup: %q", st)
	}
	// Closing the first: its target is gone.
	var first control.Target
	c.on(func(ct control.Target) { first, _ = ct.(control.Sessions).ControlSession(sid) })
	h.answer(h.call("session/close", `{"sessionId":"`+sid+`"}`))
	var got string
	c.on(func(control.Target) {
		st = first.ControlState()
		first.ControlInject([]byte("to a closed session"), false, func(res lane000.Result, d string) { got = string(res) + ": " + d })
	})
	if st != control.WorkerExited || got != "not_live: the session was closed" {
		t.Errorf("a closed session: state %q, inject %q", st, got)
	}
	if got := c.sessionID(); got != ids[1] {
		t.Errorf("ControlSessionID after the first closed: %q, want %s", got, ids[1])
	}
	h.Sigs <- syscall.SIGTERM
	h.Wait()
	if c.submit(func() {}) {
		t.Error("Submit returned true after the session ended")
	}
}

// --- drop-in ---

func TestControlDropIn(t *testing.T) {
	c := newCtlHook(t)
	logFile := filepath.Join(t.TempDir(), "log")
	c.log = func() string { b, _ := os.ReadFile(logFile); return string(b) }
	d := &DropIn{
		Child:       adaptertest.Config(t, "ctl", append(adaptertest.StreamJSONArgs, "--session-id", "dropin-sid"), "FAKE_LOG="+logFile, "FAKE_LINGER=1"),
		Logger:      testLogger(t),
		ControlHook: c.hook,
	}
	h := startHost(t, d)
	if got := c.sessionID(); got != "dropin-sid" {
		t.Errorf("ControlSessionID %q, want the --session-id", got)
	}
	if st := c.state(); st != control.WorkerIdle {
		t.Errorf("state before any turn %q", st)
	}
	if got := c.interrupt(); got != "ok: no turn running" {
		t.Errorf("interrupt while idle: %q", got)
	}
	if got := c.inject(multiline, false); got != "ok: sent" {
		t.Fatalf("inject while idle: %q", got)
	}
	if l := h.Next(); gjson.GetBytes(l, "type").Str != "system" {
		t.Fatalf("the host sees the injected turn: %s", l)
	}
	if l := h.Next(); gjson.GetBytes(l, "result").Str != "ok" {
		t.Fatalf("the injected turn's result: %s", l)
	}
	if us := c.users(); len(us) != 1 || us[0] != multiline {
		t.Fatalf("the CLI read prompts %q", us)
	}
	c.waitState(control.WorkerIdle)

	// During a turn: written behind it (the CLI queues it).
	h.Send(`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"WAIT"}]}}`)
	h.Next() // init
	h.Next() // delta
	if st := c.state(); st != control.WorkerRunning {
		t.Errorf("state during a turn %q", st)
	}
	if got := c.inject("queued", false); got != "ok: queued" {
		t.Fatalf("inject during a turn: %q", got)
	}
	for _, want := range []string{"waited", "ok"} {
		for {
			l := h.Next()
			if gjson.GetBytes(l, "type").Str == "result" {
				if r := gjson.GetBytes(l, "result").Str; r != want {
					t.Fatalf("result %q, want %q", r, want)
				}
				break
			}
		}
	}
	c.waitState(control.WorkerIdle)

	// With interrupt.
	h.Send(`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"WAIT again"}]}}`)
	h.Next()
	h.Next()
	if got := c.inject("instead", true); got != "ok: sent" {
		t.Fatalf("inject with interrupt: %q", got)
	}
	c.waitStdin("user:WAIT again", "interrupt", "user:instead")
	for n := 0; n < 2; {
		l := h.Next()
		if gjson.GetBytes(l, "type").Str == "control_response" {
			t.Fatalf("the host saw the answer to ccbridge's interrupt: %s", l)
		}
		if gjson.GetBytes(l, "type").Str == "result" {
			n++
		}
	}
	c.waitState(control.WorkerIdle)

	// Many host lines while prompts are injected: every line reaches the
	// CLI whole.
	go func() {
		for i := range 200 {
			h.Send(fmt.Sprintf(`{"type":"control_request","request_id":"host-%d","request":{"subtype":"noop","pad":%q}}`, i, strings.Repeat("p", 3000)))
		}
	}()
	for range 20 {
		if got := c.inject(multiline, false); !strings.HasPrefix(got, "ok: ") {
			t.Fatalf("inject beside host lines: %q", got)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(c.log(), `"request_id":"host-`) < 200 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	n := 0
	for _, l := range strings.Split(c.log(), "\n") {
		line, ok := strings.CutPrefix(l, "stdin ")
		if !ok {
			continue
		}
		if !gjson.Valid(line) {
			t.Fatalf("the CLI read a broken line: %.200s", line)
		}
		if gjson.Get(line, "message.content.0.text").Str == multiline {
			n++
		}
	}
	if n != 21 {
		t.Errorf("the CLI read the injected prompt %d times, want 21", n)
	}

	// The host's input ends: nothing can be written any more (the child
	// lingers a second after the end of its input).
	h.In.Close()
	c.waitState(control.WorkerExited)
	if got := c.inject("too late", false); got != "not_live: the CLI's input is closed" {
		t.Errorf("inject after the host's input ended: %q", got)
	}
	if got := c.interrupt(); got != "not_live: the CLI's input is closed" {
		t.Errorf("interrupt after the host's input ended: %q", got)
	}
	h.Rest()
	h.Wait()
	if d.Submit(func() {}) {
		t.Error("Submit returned true after Run returned")
	}
	if strings.Contains(c.log(), "too late") {
		t.Error("the CLI read a prompt refused as not_live")
	}
}

// TestControlDropInRaw: a CLI that does not read stream-json takes no
// injected prompt.
func TestControlDropInRaw(t *testing.T) {
	c := newCtlHook(t)
	d := &DropIn{Child: adaptertest.Config(t, "echo", []string{"-p", "hi"}), ControlHook: c.hook}
	h := startHost(t, d)
	if got := c.inject("x", false); !strings.HasPrefix(got, "not_live: the CLI does not read stream-json") {
		t.Errorf("inject into a raw CLI: %q", got)
	}
	if got := c.interrupt(); !strings.HasPrefix(got, "not_live") {
		t.Errorf("interrupt of a raw CLI: %q", got)
	}
	h.In.Close()
	h.Rest()
	h.Wait()
}
