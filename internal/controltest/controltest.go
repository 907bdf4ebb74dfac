// Package controltest drives a dialect the way a control lane does: a
// Lane takes the target and Submit a dialect hands its ControlHook, and
// the fake "ctl" CLI (registered here with the shared fake CLI modes of
// adaptertest) logs what it reads. For the adapter packages' tests only.
package controltest

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/adapter/control"
	"github.com/ccbridge/ccbridge/internal/adaptertest"
	"github.com/ccbridge/ccbridge/mapping/lane000"
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
	adaptertest.Share("ctl", func() {
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

// Multiline is an injected prompt that must reach the CLI as one payload.
const Multiline = "first line\nsecond line with \"quotes\" and a tab\t\n\nlast ünïcode line"

// Lane stands for a control lane: it takes what a dialect hands its
// ControlHook (its target and Submit) and drives the session with them.
type Lane struct {
	t *testing.T
	// Target and Submit are what the dialect handed its ControlHook.
	Target control.Target
	Submit func(func()) bool
	ready  chan struct{}
	// Log is what the fake CLI logged: its argv and every line it read.
	Log func() string
}

// New is a Lane for the test t.
func New(t *testing.T) *Lane { return &Lane{t: t, ready: make(chan struct{})} }

// Take is the dialect's ControlHook.
func (c *Lane) Take(target control.Target, submit func(func()) bool) {
	c.Target, c.Submit = target, submit
	close(c.ready)
}

// On runs fn on the session's goroutine and waits for it.
func (c *Lane) On(fn func(control.Target)) {
	c.t.Helper()
	select {
	case <-c.ready:
	case <-time.After(10 * time.Second):
		c.t.Fatal("the dialect never called its ControlHook")
	}
	ran := make(chan struct{})
	if !c.Submit(func() { fn(c.Target); close(ran) }) {
		c.t.Fatal("Submit: the session has ended")
	}
	<-ran
}

// Call runs one inject or interrupt and returns what done was told; done
// must be called exactly once, before the method returns.
func (c *Lane) Call(fn func(control.Target, func(lane000.Result, string))) string {
	c.t.Helper()
	var got []string
	c.On(func(t control.Target) {
		fn(t, func(res lane000.Result, detail string) { got = append(got, string(res)+": "+detail) })
	})
	if len(got) != 1 {
		c.t.Fatalf("done was called %d times (%q), want once", len(got), got)
	}
	return got[0]
}

// Inject injects text as a lane would.
func (c *Lane) Inject(text string, interrupt bool) string {
	c.t.Helper()
	return c.Call(func(t control.Target, done func(lane000.Result, string)) {
		t.ControlInject([]byte(text), interrupt, done)
	})
}

// Interrupt interrupts as a lane would.
func (c *Lane) Interrupt() string {
	c.t.Helper()
	return c.Call(func(t control.Target, done func(lane000.Result, string)) { t.ControlInterrupt(done) })
}

// State is the target's ControlState.
func (c *Lane) State() control.WorkerState {
	c.t.Helper()
	var s control.WorkerState
	c.On(func(t control.Target) { s = t.ControlState() })
	return s
}

// SessionID is the target's ControlSessionID.
func (c *Lane) SessionID() string {
	c.t.Helper()
	var s string
	c.On(func(t control.Target) { s = t.ControlSessionID() })
	return s
}

// WaitState polls the state until it is want.
func (c *Lane) WaitState(want control.WorkerState) {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := c.State()
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("state %q, want %q", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Stdin lists what the CLI read, in order: "user:<text>" for a prompt,
// "interrupt" for an interrupt request, the subtype of other requests.
func (c *Lane) Stdin() []string {
	var got []string
	for _, l := range strings.Split(c.Log(), "\n") {
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

// Users lists the prompts the CLI read.
func (c *Lane) Users() []string {
	var us []string
	for _, s := range c.Stdin() {
		if u, ok := strings.CutPrefix(s, "user:"); ok {
			us = append(us, u)
		}
	}
	return us
}

// WaitStdin waits until the CLI has read want (a suffix of what it read).
func (c *Lane) WaitStdin(want ...string) {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := c.Stdin()
		if len(got) >= len(want) && strings.Join(got[len(got)-len(want):], "|") == strings.Join(want, "|") {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the CLI read %q, want it to end with %q", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Release writes the fake's release line to the live child of sup.
func (c *Lane) Release(sup func() *adapter.Supervisor) {
	c.t.Helper()
	c.On(func(control.Target) {
		sup().Live().Write([]byte(`{"type":"control_request","request_id":"release","request":{"subtype":"noop"}}`))
	})
}

// Settings are a session's settings against the fake "ctl" CLI, with c
// as its ControlHook.
func Settings(t *testing.T, c *Lane, env ...string) adapter.Settings {
	logFile := filepath.Join(t.TempDir(), "log")
	c.Log = func() string { b, _ := os.ReadFile(logFile); return string(b) }
	return adapter.Settings{
		Child:            adaptertest.Config(t, "ctl", nil, append([]string{"FAKE_LOG=" + logFile, "HOME=" + t.TempDir(), "CLAUDE_CONFIG_DIR="}, env...)...),
		InterruptTimeout: 5 * time.Second,
		ControlTimeout:   5 * time.Second,
		Logger:           adaptertest.Logger(t),
		ControlHook:      c.Take,
	}
}

// --- ipc ---
