package adapter

// A child that stops reading its stdin (childinput.go): the loop goes on
// serving signals, urgent UI lines, deadlines, submitted work and the
// shutdown; it holds the UI's ordinary lines back within a bound; and
// when the child reads again every line reaches it, in order.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ccbridge/ccbridge/framing"
	"github.com/ccbridge/ccbridge/internal/adaptertest"
	"github.com/ccbridge/ccbridge/session"
)

// stuckChild is a child that reads nothing of its stdin until resume (a
// CLI stopped with SIGSTOP). Its stdin is an io.Pipe, so a write to it
// waits until the child reads, and closing it ends such a write. Its
// staged shutdown (Shutdown) closes stdin at once and then, as for a
// stopped process, only the kill at the end of its grace (a second)
// ends it. It has no WriteNow: every line goes through the input's
// goroutine.
type stuckChild struct {
	pid       int
	inR       *io.PipeReader
	inW       *io.PipeWriter
	outR      *io.PipeReader
	outW      *io.PipeWriter
	reading   chan struct{} // closed by resume
	resumed   sync.Once
	lines     chan string // what the child read, in order
	done      chan struct{}
	once      sync.Once
	exit      session.Exit
	shutdowns atomic.Int32
}

func newStuckChild(pid int) *stuckChild {
	c := &stuckChild{pid: pid, reading: make(chan struct{}), lines: make(chan string, 1<<12), done: make(chan struct{})}
	c.inR, c.inW = io.Pipe()
	c.outR, c.outW = io.Pipe()
	go func() {
		select {
		case <-c.reading:
		case <-c.done:
			return
		}
		fr := framing.NewReader(c.inR, 64<<20)
		for {
			line, err := fr.ReadLine()
			if err != nil {
				c.finish(0) // stdin closed: the CLI ends
				return
			}
			c.lines <- string(line)
		}
	}()
	return c
}

// resume lets the child read (SIGCONT).
func (c *stuckChild) resume() { c.resumed.Do(func() { close(c.reading) }) }

func (c *stuckChild) finish(code int) {
	c.once.Do(func() {
		c.exit = session.Exit{Code: code}
		c.outW.Close()
		c.inR.CloseWithError(errors.New("the child exited"))
		close(c.done)
	})
}

func (c *stuckChild) Pid() int              { return c.pid }
func (c *stuckChild) Stdin() io.WriteCloser { return c.inW }
func (c *stuckChild) Stdout() io.Reader     { return c.outR }
func (c *stuckChild) CloseStdin() error     { return c.inW.Close() }
func (c *stuckChild) Done() <-chan struct{} { return c.done }
func (c *stuckChild) Exit() session.Exit    { <-c.done; return c.exit }
func (c *stuckChild) Kill() error           { c.finish(137); return nil }

func (c *stuckChild) Shutdown(context.Context) error {
	c.shutdowns.Add(1)
	c.inW.Close()
	select {
	case <-c.done:
	case <-time.After(time.Second):
		c.finish(137)
	}
	return nil
}

// read returns the next n lines the child read, failing after a minute
// (of the bubble's clock).
func (c *stuckChild) read(t *testing.T, n int) []string {
	t.Helper()
	var got []string
	for len(got) < n {
		select {
		case l := <-c.lines:
			got = append(got, l)
		case <-time.After(time.Minute):
			t.Fatalf("the child read %d lines of %d", len(got), n)
		}
	}
	return got
}

// stuckHarness runs a loop with a recorder and stuckChildren.
type stuckHarness struct {
	rec     *recorder
	ui      *io.PipeWriter
	out     *framing.Reader
	signals chan os.Signal
	kids    []*stuckChild
	done    chan int
	err     error
}

func newStuckHarness(t *testing.T) *stuckHarness {
	t.Helper()
	h := &stuckHarness{signals: make(chan os.Signal, 4), done: make(chan int, 1)}
	log := &adaptertest.LogBuffer{}
	loop := NewLoop(LoopConfig{Logger: slog.New(slog.NewTextHandler(log, nil))})
	h.rec = &recorder{loop: loop, onLine: func(string) {}, onExpire: func(time.Time) {}}
	h.rec.sup = loop.NewSupervisor(SupervisorConfig{Start: func(session.Config) (Child, error) {
		c := newStuckChild(100 + len(h.kids))
		h.kids = append(h.kids, c)
		return c, nil
	}})
	if _, err := h.rec.sup.Start(session.Options{SessionID: "5c3bb572-859f-4ecf-9616-2b9d21f1b011"}, false); err != nil {
		t.Fatal(err)
	}
	uiR, uiW := io.Pipe()
	outR, outW := io.Pipe()
	h.ui, h.out = uiW, framing.NewReader(outR, 1<<20)
	go io.Copy(io.Discard, outR) // a UI that reads everything
	go func() {
		code, err := loop.Run(context.Background(), h.rec, uiR, outW, h.signals)
		h.err = err
		outW.Close()
		h.done <- code
	}()
	return h
}

func (h *stuckHarness) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(h.ui, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// onLoop runs fn on the loop and waits for it.
func (h *stuckHarness) onLoop(fn func()) {
	ran := make(chan struct{})
	h.rec.loop.Submit(func() { fn(); close(ran) })
	<-ran
}

// uiLines are the UI lines the handler was given, in order.
func (h *stuckHarness) uiLines() []string {
	var got []string
	h.onLoop(func() {
		for _, c := range h.rec.calls {
			if l, ok := strings.CutPrefix(c, "ui "); ok {
				got = append(got, l)
			}
		}
	})
	return got
}

// bigLine is more than a child's input holds before the loop holds the
// UI's lines back.
const bigLine = inputLimit + 44<<10

// writeLines is a handler's onLine for these tests: "big" writes a line
// of bigLine bytes to the live child (or the next one), any other line
// itself.
func writeLines(r *recorder) func(string) {
	return func(line string) {
		if line == "big" {
			line += strings.Repeat("x", bigLine-3)
		}
		r.sup.WhenLive(func(err error) {
			if err == nil {
				r.sup.Live().Write([]byte(line))
			}
		})
	}
}

// TestChildInputStoppedChild: a child that reads nothing of its stdin
// does not stop the loop. A line over the input's bound is taken and
// queued; the UI's ordinary lines after it are held back (the loop reads
// up to uiQueue of them, then stops reading: bounded memory), but an
// urgent line is handed over at once, ahead of them; SIGINT, submitted
// work and a handler's deadline are served. When the child reads again,
// every line reaches it in the order written, the held ones are handed
// over in order, and closing its stdin at the UI's end of input comes
// after all of them.
func TestChildInputStoppedChild(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newStuckHarness(t)
		r := h.rec
		r.urgent = func(line string) bool { return strings.HasPrefix(line, "!") }
		r.onLine = writeLines(r)
		h.send(t, "big")
		for i := range 10 {
			h.send(t, fmt.Sprintf("held %d", i))
		}
		h.send(t, "!urgent")
		synctest.Wait()
		if got, want := h.uiLines(), []string{"big", "!urgent"}; !slices.Equal(got, want) {
			t.Fatalf("the handler got %q while the child read nothing, want %q (the urgent line ahead of those held)", got, want)
		}

		// More ordinary lines than the loop may hold: it stops reading
		// the UI, whose writer then blocks.
		const more = 300
		sent := make(chan struct{})
		go func() {
			defer close(sent)
			for i := range more {
				if _, err := fmt.Fprintf(h.ui, "more %d\n", i); err != nil {
					return
				}
			}
		}()
		synctest.Wait()
		select {
		case <-sent:
			t.Fatal("the UI wrote every line while the child read nothing: no backpressure")
		default:
		}
		var held, heldBytes, pending int
		var full bool
		h.onLoop(func() {
			held, heldBytes, full = len(r.loop.held), r.loop.heldBytes, r.loop.inputFull()
			pending = r.sup.Live().in.pending()
		})
		if maxPending := bigLine + len("\n!urgent\n"); !full || held > uiQueue || heldBytes > inputLimit || pending > maxPending {
			t.Errorf("held %d lines (%d bytes), %d bytes queued for the child (full %v), want at most %d lines, %d bytes, %d bytes",
				held, heldBytes, pending, full, uiQueue, inputLimit, maxPending)
		}
		if n := len(h.uiLines()); n != 2 {
			t.Errorf("the handler got %d UI lines while the child read nothing, want 2", n)
		}

		// Signals, submitted work and deadlines are still served.
		h.signals <- syscall.SIGINT
		expired := make(chan time.Time, 1)
		start := time.Now()
		h.onLoop(func() {
			r.onExpire = func(now time.Time) { expired <- now }
			r.deadline = r.loop.Now().Add(5 * time.Second)
		})
		select {
		case at := <-expired:
			if d := at.Sub(start); d != 5*time.Second {
				t.Errorf("the deadline fired after %v, want 5s", d)
			}
		case <-time.After(time.Minute):
			t.Fatal("the handler's deadline did not fire while the child read nothing")
		}
		h.onLoop(func() {
			if !slices.Contains(r.calls, "interrupt") {
				t.Errorf("the SIGINT was not served: %q", r.calls)
			}
		})

		// The child reads again: everything, in order.
		c := h.kids[0]
		c.resume()
		want := []string{"big", "!urgent"}
		for i := range 10 {
			want = append(want, fmt.Sprintf("held %d", i))
		}
		for i := range more {
			want = append(want, fmt.Sprintf("more %d", i))
		}
		got := c.read(t, len(want))
		for i := range got {
			if strings.HasPrefix(got[i], "big") {
				if len(got[i]) != bigLine {
					t.Errorf("the big line arrived with %d bytes, want %d", len(got[i]), bigLine)
				}
				got[i] = "big"
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("the child read %d lines, out of order or not all: first %q", len(got), got[:min(len(got), 14)])
		}
		<-sent
		h.ui.Close() // UIEnd: closeLive, after everything queued
		if code := <-h.done; code != 0 {
			t.Errorf("Run returned %d, want the child's 0: its stdin closed after everything was read", code)
		}
		if n := c.shutdowns.Load(); n != 0 {
			t.Errorf("the child was shut down %d times, want it to end at the close of its stdin", n)
		}
	})
}

// TestChildInputShutdownStoppedChild: SIGTERM while a child reads nothing
// and its input's writer waits in a write: the staged shutdown runs at
// once (its first stage closes stdin, which ends the write), and Run
// returns when the child is gone (the stuck child's grace: a second),
// not waiting for what was queued.
func TestChildInputShutdownStoppedChild(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newStuckHarness(t)
		r := h.rec
		r.onLine = writeLines(r)
		h.send(t, "big")
		h.send(t, "after")
		synctest.Wait()
		start := time.Now()
		h.signals <- syscall.SIGTERM
		select {
		case code := <-h.done:
			if took := time.Since(start); took != time.Second {
				t.Errorf("Run returned %v after SIGTERM, want the child's 1s", took)
			}
			if code != 137 {
				t.Errorf("Run returned %d, want the killed child's 137", code)
			}
		case <-time.After(time.Minute):
			t.Fatal("Run did not return after SIGTERM while the child read nothing")
		}
		if n := h.kids[0].shutdowns.Load(); n != 1 {
			t.Errorf("the child was shut down %d times, want 1", n)
		}
		if !slices.Contains(r.calls, "ui after") {
			t.Errorf("the line held back was not handed over once the child stopped: %q", r.calls)
		}
		h.ui.Close()
	})
}

// TestChildInputInterruptDeadline: an urgent line (an interrupt) to a
// child that reads nothing is served: its write is queued behind the
// rest, and its deadline fires on time; the child is replaced, and the
// new one reads what comes next.
func TestChildInputInterruptDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newStuckHarness(t)
		r := h.rec
		r.urgent = func(line string) bool { return line == "interrupt" }
		var fired time.Duration
		start := time.Now()
		r.onLine = func(line string) {
			writeLines(r)(line)
			if line != "interrupt" {
				return
			}
			r.sup.Interrupting(2*time.Second, func() {
				fired = time.Since(start)
				r.loop.Emit([]byte("cancelled"))
				opts, resumed := r.sup.ResumeOpts()
				r.sup.Replace("interrupt timeout", 500*time.Millisecond, false, opts, resumed, func(error) {})
			})
		}
		h.send(t, "big")
		h.send(t, "held")
		h.send(t, "interrupt")
		synctest.Wait()
		time.Sleep(5 * time.Second)
		var kids []*stuckChild
		h.onLoop(func() { kids = slices.Clone(h.kids) })
		if fired != 2*time.Second {
			t.Fatalf("the interrupt's deadline fired after %v, want 2s", fired)
		}
		if len(kids) != 2 {
			t.Fatalf("%d children started, want 2: the stuck one replaced", len(kids))
		}
		next := kids[1]
		next.resume()
		h.send(t, "hello")
		// The line held back behind the big one went to the new child.
		if got := next.read(t, 2); !slices.Equal(got, []string{"held", "hello"}) {
			t.Errorf("the new child read %q, want the held line and the next one", got)
		}
		h.ui.Close()
		<-h.done
	})
}

// TestChildInputCloseFlushesFirst: CloseStdin on a child that is slow to
// read closes its stdin only once every line written before is written;
// a line written after it is dropped.
func TestChildInputCloseFlushesFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		loop := NewLoop(LoopConfig{})
		c := newStuckChild(7)
		sup := loop.NewSupervisor(SupervisorConfig{Start: func(session.Config) (Child, error) { return c, nil }})
		p, err := sup.Start(session.Options{}, false)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 100 {
			p.Write([]byte(fmt.Sprintf("line %d %s", i, strings.Repeat("y", 10<<10))))
		}
		p.CloseStdin()
		p.Write([]byte("too late"))
		synctest.Wait()
		select {
		case <-c.done:
			t.Fatal("the child's stdin was closed before it read what was written")
		default:
		}
		c.resume()
		got := c.read(t, 100)
		<-c.done
		for i, l := range got {
			if !strings.HasPrefix(l, fmt.Sprintf("line %d ", i)) {
				t.Fatalf("line %d read is %.20q", i, l)
			}
		}
		if len(c.lines) != 0 {
			t.Errorf("the child read %q after the close", <-c.lines)
		}
		if c.exit.Code != 0 {
			t.Errorf("the child ended with %d, want 0 (its stdin closed)", c.exit.Code)
		}
	})
}
