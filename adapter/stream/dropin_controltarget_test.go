package stream

// The stream (drop-in) dialect as a control lane target, against the fake "ctl" CLI,
// driven the way a lane drives it (internal/controltest).

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter/control"
	"github.com/ccbridge/ccbridge/internal/adaptertest"
	"github.com/ccbridge/ccbridge/internal/controltest"
)

func TestControlDropIn(t *testing.T) {
	c := controltest.New(t)
	logFile := filepath.Join(t.TempDir(), "log")
	c.Log = func() string { b, _ := os.ReadFile(logFile); return string(b) }
	d := &DropIn{
		Child:       adaptertest.Config(t, "ctl", append(adaptertest.StreamJSONArgs, "--session-id", "dropin-sid"), "FAKE_LOG="+logFile, "FAKE_LINGER=1"),
		Logger:      adaptertest.Logger(t),
		ControlHook: c.Take,
	}
	h := startHost(t, d)
	if got := c.SessionID(); got != "dropin-sid" {
		t.Errorf("ControlSessionID %q, want the --session-id", got)
	}
	if st := c.State(); st != control.WorkerIdle {
		t.Errorf("state before any turn %q", st)
	}
	if got := c.Interrupt(); got != "ok: no turn running" {
		t.Errorf("interrupt while idle: %q", got)
	}
	if got := c.Inject(controltest.Multiline, false); got != "ok: sent" {
		t.Fatalf("inject while idle: %q", got)
	}
	if l := h.Next(); gjson.GetBytes(l, "type").Str != "system" {
		t.Fatalf("the host sees the injected turn: %s", l)
	}
	if l := h.Next(); gjson.GetBytes(l, "result").Str != "ok" {
		t.Fatalf("the injected turn's result: %s", l)
	}
	if us := c.Users(); len(us) != 1 || us[0] != controltest.Multiline {
		t.Fatalf("the CLI read prompts %q", us)
	}
	c.WaitState(control.WorkerIdle)

	// During a turn: written behind it (the CLI queues it).
	h.Send(`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"WAIT"}]}}`)
	h.Next() // init
	h.Next() // delta
	if st := c.State(); st != control.WorkerRunning {
		t.Errorf("state during a turn %q", st)
	}
	if got := c.Inject("queued", false); got != "ok: queued" {
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
	c.WaitState(control.WorkerIdle)

	// With interrupt.
	h.Send(`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"WAIT again"}]}}`)
	h.Next()
	h.Next()
	if got := c.Inject("instead", true); got != "ok: sent" {
		t.Fatalf("inject with interrupt: %q", got)
	}
	c.WaitStdin("user:WAIT again", "interrupt", "user:instead")
	for n := 0; n < 2; {
		l := h.Next()
		if gjson.GetBytes(l, "type").Str == "control_response" {
			t.Fatalf("the host saw the answer to ccbridge's interrupt: %s", l)
		}
		if gjson.GetBytes(l, "type").Str == "result" {
			n++
		}
	}
	c.WaitState(control.WorkerIdle)

	// Many host lines while prompts are injected: every line reaches the
	// CLI whole.
	go func() {
		for i := range 200 {
			h.Send(fmt.Sprintf(`{"type":"control_request","request_id":"host-%d","request":{"subtype":"noop","pad":%q}}`, i, strings.Repeat("p", 3000)))
		}
	}()
	for range 20 {
		if got := c.Inject(controltest.Multiline, false); !strings.HasPrefix(got, "ok: ") {
			t.Fatalf("inject beside host lines: %q", got)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(c.Log(), `"request_id":"host-`) < 200 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	n := 0
	for _, l := range strings.Split(c.Log(), "\n") {
		line, ok := strings.CutPrefix(l, "stdin ")
		if !ok {
			continue
		}
		if !gjson.Valid(line) {
			t.Fatalf("the CLI read a broken line: %.200s", line)
		}
		if gjson.Get(line, "message.content.0.text").Str == controltest.Multiline {
			n++
		}
	}
	if n != 21 {
		t.Errorf("the CLI read the injected prompt %d times, want 21", n)
	}

	// The host's input ends: nothing can be written any more (the child
	// lingers a second after the end of its input).
	h.In.Close()
	c.WaitState(control.WorkerExited)
	if got := c.Inject("too late", false); got != "not_live: the CLI's input is closed" {
		t.Errorf("inject after the host's input ended: %q", got)
	}
	if got := c.Interrupt(); got != "not_live: the CLI's input is closed" {
		t.Errorf("interrupt after the host's input ended: %q", got)
	}
	h.Rest()
	h.Wait()
	if d.Submit(func() {}) {
		t.Error("Submit returned true after Run returned")
	}
	if strings.Contains(c.Log(), "too late") {
		t.Error("the CLI read a prompt refused as not_live")
	}
}

// TestControlDropInRaw: a CLI that does not read stream-json takes no
// injected prompt.
func TestControlDropInRaw(t *testing.T) {
	c := controltest.New(t)
	d := &DropIn{Child: adaptertest.Config(t, "echo", []string{"-p", "hi"}), ControlHook: c.Take}
	h := startHost(t, d)
	if got := c.Inject("x", false); !strings.HasPrefix(got, "not_live: the CLI does not read stream-json") {
		t.Errorf("inject into a raw CLI: %q", got)
	}
	if got := c.Interrupt(); !strings.HasPrefix(got, "not_live") {
		t.Errorf("interrupt of a raw CLI: %q", got)
	}
	h.In.Close()
	h.Rest()
	h.Wait()
}
