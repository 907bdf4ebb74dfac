package worker

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/adapter/control"
	"github.com/ccbridge/ccbridge/mapping/lane000"
	"github.com/ccbridge/ccbridge/screen"
	"github.com/ccbridge/ccbridge/session"
)

// The pty worker's state machine on a fake clock: the test is the loop
// (it calls CLIOutput, Expire and the lane's methods itself, at the
// times it sets) and the program (it writes the output and reads what
// the worker typed).

// stepClock is a Clock the test moves by hand; the loop is not run, so
// its timer is never used.
type stepClock struct{ now time.Time }

func (c *stepClock) Now() time.Time          { return c.now }
func (c *stepClock) NewTimer() adapter.Timer { return adapter.RealClock.NewTimer() }

// typed records what the worker wrote to the program.
type typed struct{ bytes.Buffer }

func (k *typed) Write(b []byte) { k.Buffer.Write(b) }

type ptyHarness struct {
	t     *testing.T
	clock *stepClock
	w     *ptyWorker
	in    *typed
	live  bool
}

func newPTYHarness(t *testing.T) *ptyHarness {
	h := &ptyHarness{t: t, clock: &stepClock{now: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)}, in: &typed{}, live: true}
	pc := PTYConfig{Cols: 40, Rows: 6}
	pc.defaults()
	cfg := &ControlUI{}
	cfg.Defaults() // --control-timeout 5 s
	h.w = &ptyWorker{
		cfg:   cfg,
		pc:    pc,
		log:   slog.New(slog.DiscardHandler),
		loop:  adapter.NewLoop(adapter.LoopConfig{Clock: h.clock}),
		scr:   screen.New(pc.Cols, pc.Rows),
		state: control.WorkerStarting,
	}
	h.w.child = func() ptyWriter {
		if h.live {
			return h.in
		}
		return nil
	}
	return h
}

// at moves the clock by d and runs what is due, as the loop would at its
// timer.
func (h *ptyHarness) at(d time.Duration) {
	h.clock.now = h.clock.now.Add(d)
	if next := h.w.NextDeadline(); !next.IsZero() && !h.clock.now.Before(next) {
		h.w.Expire(h.clock.now)
	}
}

// draw is the program's output.
func (h *ptyHarness) draw(s string) { h.w.CLIOutput(nil, []byte(s)) }

func (h *ptyHarness) state(want control.WorkerState) {
	h.t.Helper()
	if h.w.state != want {
		h.t.Fatalf("state %s, want %s", h.w.state, want)
	}
}

// result records a lane callback's answer.
type result struct {
	res    lane000.Result
	detail string
	n      int
}

func (r *result) done(res lane000.Result, detail string) { r.res, r.detail, r.n = res, detail, r.n+1 }

// idle brings a new worker to idle: something drawn, then stable.
func (h *ptyHarness) idle() {
	h.t.Helper()
	h.draw("\x1b[2J\x1b[H> ")
	h.at(ptySample)
	h.state(control.WorkerStarting)
	h.at(h.w.pc.StableAfter)
	h.state(control.WorkerIdle)
}

func TestPTYStateStartingIdleRunning(t *testing.T) {
	h := newPTYHarness(t)
	// Nothing drawn: starting, and nothing to wait for (no busy polling).
	h.at(10 * time.Second)
	h.state(control.WorkerStarting)
	if d := h.w.NextDeadline(); !d.IsZero() {
		t.Fatalf("a deadline with nothing drawn: %v", d)
	}
	h.draw("hello")
	if d := h.w.NextDeadline(); !d.Equal(h.clock.now.Add(ptySample)) {
		t.Fatalf("the first look at %v, want %v", d, h.clock.now.Add(ptySample))
	}
	// More output within the sample window: still one look.
	h.at(10 * time.Millisecond)
	h.draw(" world")
	h.at(15 * time.Millisecond)
	h.state(control.WorkerStarting)
	// A change just before the screen would be stable puts it off.
	h.at(h.w.pc.StableAfter - time.Millisecond)
	h.draw("!")
	h.at(ptySample)
	h.at(h.w.pc.StableAfter - ptySample)
	h.state(control.WorkerStarting)
	h.at(ptySample)
	h.state(control.WorkerIdle)
	if d := h.w.NextDeadline(); !d.IsZero() {
		t.Fatalf("an idle worker with an unchanging screen has a deadline: %v", d)
	}
	// The program draws on its own: running, then idle again.
	h.draw("\r\nthinking")
	h.at(ptySample)
	h.state(control.WorkerRunning)
	h.at(h.w.pc.StableAfter)
	h.state(control.WorkerIdle)
	// Output that changes no text (a colour) is no change.
	h.draw("\x1b[31m\x1b[0m")
	h.at(ptySample)
	h.state(control.WorkerIdle)
}

func TestPTYInjectPasteThenReturn(t *testing.T) {
	h := newPTYHarness(t)
	var r result
	h.w.ControlInject([]byte("hi"), false, r.done)
	if r.res != lane000.NotLive || !strings.Contains(r.detail, "starting") {
		t.Fatalf("inject while starting: %s %q", r.res, r.detail)
	}
	h.idle()
	r = result{}
	h.w.ControlInject([]byte("line one\nline two \x1b[201~\x1b"), false, r.done)
	if got, want := h.in.String(), "\x1b[200~line one\rline two [201~\x1b[201~"; got != want {
		t.Fatalf("typed %q, want %q (one paste, ESC dropped, line breaks as returns)", got, want)
	}
	h.in.Reset()
	// The return is a write of its own, after the settle.
	h.at(ptySettle - time.Millisecond)
	if h.in.Len() != 0 {
		t.Fatalf("typed %q before the settle", h.in.String())
	}
	h.at(time.Millisecond)
	if h.in.String() != "\r" {
		t.Fatalf("typed %q after the settle, want a lone return", h.in.String())
	}
	if r.n != 0 {
		t.Fatalf("answered before the screen moved: %s", r.res)
	}
	h.draw("\r\n> line one")
	h.at(ptySample)
	if r.n != 1 || r.res != lane000.OK {
		t.Fatalf("after the screen moved: %d answers, %s %q", r.n, r.res, r.detail)
	}
	h.state(control.WorkerRunning)
	// Busy while it works, unless the request interrupts.
	var busy result
	h.w.ControlInject([]byte("more"), false, busy.done)
	if busy.res != lane000.Busy {
		t.Fatalf("inject while running: %s", busy.res)
	}
}

func TestPTYReturnSentAgain(t *testing.T) {
	h := newPTYHarness(t)
	h.idle()
	var r result
	h.w.ControlInject([]byte("x"), false, r.done)
	h.at(ptySettle)
	h.in.Reset()
	// The program ignores the return: it is sent again, at most ptyCRTries times.
	for i := 1; i < ptyCRTries; i++ {
		h.at(ptyCRRetry)
		if h.in.String() != strings.Repeat("\r", i) {
			t.Fatalf("after %d retries typed %q", i, h.in.String())
		}
	}
	h.at(ptyCRRetry)
	h.at(ptyCRRetry)
	if got := strings.Count(h.in.String(), "\r"); got != ptyCRTries-1 {
		t.Fatalf("%d returns sent again, want %d", got, ptyCRTries-1)
	}
	if r.n != 0 {
		t.Fatalf("answered without the screen moving: %s", r.res)
	}
	// --control-timeout after the first return the input is given up
	// (the lane's ack said timeout), and the worker is idle again.
	h.at(h.w.cfg.ControlTimeout - ptyCRTries*ptyCRRetry)
	if r.n != 1 || r.res != lane000.Timeout {
		t.Fatalf("after --control-timeout: %d answers, %s", r.n, r.res)
	}
	h.at(0)
	h.state(control.WorkerIdle)
	var next result
	h.w.ControlInject([]byte("y"), false, next.done)
	if !strings.HasSuffix(h.in.String(), "\x1b[200~y\x1b[201~") {
		t.Fatalf("the next input was not pasted: typed %q", h.in.String())
	}
}

func TestPTYInterrupt(t *testing.T) {
	h := newPTYHarness(t)
	h.idle()
	var r result
	h.w.ControlInterrupt(r.done)
	if r.res != lane000.OK || !strings.Contains(r.detail, "no turn") || h.in.Len() != 0 {
		t.Fatalf("interrupt of an idle worker: %s %q, typed %q", r.res, r.detail, h.in.String())
	}
	h.draw("working")
	h.at(ptySample)
	h.state(control.WorkerRunning)
	r = result{}
	h.w.ControlInterrupt(r.done)
	if h.in.String() != "\x1b" {
		t.Fatalf("typed %q to interrupt, want ESC", h.in.String())
	}
	h.draw(" [interrupted]")
	h.at(ptySample)
	if r.n != 0 {
		t.Fatal("the interrupt answered before the screen was stable")
	}
	h.at(h.w.pc.StableAfter)
	if r.n != 1 || r.res != lane000.OK {
		t.Fatalf("the interrupt: %d answers, %s", r.n, r.res)
	}
	h.state(control.WorkerIdle)

	// Inject with interrupt while running: the keys, then the paste once idle.
	h.draw(" again")
	h.at(ptySample)
	h.in.Reset()
	var in result
	h.w.ControlInject([]byte("next"), true, in.done)
	if h.in.String() != "\x1b" {
		t.Fatalf("typed %q, want the interrupt keys first", h.in.String())
	}
	h.at(h.w.pc.StableAfter)
	if !strings.HasSuffix(h.in.String(), "\x1b[200~next\x1b[201~") {
		t.Fatalf("typed %q once idle, want the paste", h.in.String())
	}
}

func TestPTYExited(t *testing.T) {
	h := newPTYHarness(t)
	h.idle()
	var r result
	h.w.ControlInject([]byte("x"), false, r.done)
	h.live = false
	h.w.ChildExited(nil, session.Exit{Code: -1, Signal: 9})
	h.state(control.WorkerExited)
	if r.res != lane000.NotLive {
		t.Fatalf("the input in hand when the program died: %s", r.res)
	}
	r = result{}
	h.w.ControlInject([]byte("y"), false, r.done)
	if r.res != lane000.NotLive {
		t.Fatalf("inject after the exit: %s", r.res)
	}
	r = result{}
	h.w.ControlInterrupt(r.done)
	if r.res != lane000.NotLive {
		t.Fatalf("interrupt after the exit: %s", r.res)
	}
	if d := h.w.NextDeadline(); !d.IsZero() {
		t.Fatalf("a deadline after the exit: %v", d)
	}
}

func TestPTYScreenLines(t *testing.T) {
	h := newPTYHarness(t)
	for i := range 10 {
		h.draw("line " + string(rune('0'+i)) + "\r\n")
	}
	h.at(ptySample)
	h.w.emit()
	var scrolled []string
	var screens int
	for _, l := range bytes.Split(bytes.TrimSpace(*h.w.loop.Out()), []byte{'\n'}) {
		switch {
		case bytes.Contains(l, []byte(lane000.TypeWorkerScrollback)):
			for _, s := range gjson.GetBytes(l, "lines").Array() {
				scrolled = append(scrolled, s.Str)
			}
		case bytes.Contains(l, []byte(lane000.TypeWorkerScreen)):
			screens++
		}
	}
	// 6 rows: lines 0 to 4 scrolled off (the cursor is on the empty last row).
	if strings.Join(scrolled, ",") != "line 0,line 1,line 2,line 3,line 4" {
		t.Errorf("scrolled %q", scrolled)
	}
	if screens != 1 {
		t.Errorf("%d screen lines for one look, want 1", screens)
	}
}

// An input queued behind an interrupt that never brings the worker to
// idle (a program that ignores the keys) is given up at
// --control-timeout, and the next input is not stuck behind it.
func TestPTYQueuedInputGivenUp(t *testing.T) {
	h := newPTYHarness(t)
	h.idle()
	h.draw("working")
	h.at(ptySample)
	h.state(control.WorkerRunning)
	var r result
	h.w.ControlInject([]byte("x"), true, r.done)
	// The program keeps drawing: never stable, never idle.
	for elapsed := time.Duration(0); elapsed < h.w.cfg.ControlTimeout-time.Second; elapsed += time.Second {
		h.draw(".")
		h.at(ptySample)
		h.at(time.Second - ptySample)
	}
	if r.n != 0 {
		t.Fatalf("answered before --control-timeout: %s", r.res)
	}
	h.draw(".")
	h.at(time.Second)
	if r.n != 1 || r.res != lane000.Timeout || len(h.w.queue) != 0 {
		t.Fatalf("after --control-timeout: %d answers, %s, %d queued", r.n, r.res, len(h.w.queue))
	}
	if strings.Contains(h.in.String(), "\x1b[200~") {
		t.Fatalf("the given-up input was pasted: %q", h.in.String())
	}
}
