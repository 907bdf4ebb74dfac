package adapter

import (
	"context"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ccbridge/ccbridge/framing"
	"github.com/ccbridge/ccbridge/internal/adaptertest"
	"github.com/ccbridge/ccbridge/session"
)

// memChild is a child process in memory, for the core's unit tests: its
// "CLI" is a function reading stdin lines and writing stdout lines, and
// everything blocks on channels, so the tests run under testing/synctest
// with a fake clock.
type memChild struct {
	pid     int
	inR     *io.PipeReader
	inW     *io.PipeWriter
	outR    *io.PipeReader
	outW    *io.PipeWriter
	done    chan struct{}
	once    sync.Once
	exit    session.Exit
	stopped chan struct{} // closed when asked to stop (Shutdown or Kill)
	stop    sync.Once
}

// memCLI is how a memChild answers: called with each line it reads, it
// returns the lines to write.
type memCLI func(line string) []string

func startMem(pid int, cli memCLI) *memChild {
	c := &memChild{pid: pid, done: make(chan struct{}), stopped: make(chan struct{})}
	c.inR, c.inW = io.Pipe()
	c.outR, c.outW = io.Pipe()
	go func() {
		fr := framing.NewReader(c.inR, 1<<20)
		for {
			line, err := fr.ReadLine()
			if err != nil {
				c.finish(0)
				return
			}
			for _, out := range cli(string(line)) {
				if _, err := io.WriteString(c.outW, out+"\n"); err != nil {
					return
				}
			}
		}
	}()
	return c
}

func (c *memChild) finish(code int) {
	c.once.Do(func() {
		c.exit = session.Exit{Code: code}
		c.outW.Close()
		c.inR.Close()
		close(c.done)
	})
}

func (c *memChild) Pid() int              { return c.pid }
func (c *memChild) Stdin() io.WriteCloser { return c.inW }
func (c *memChild) Stdout() io.Reader     { return c.outR }
func (c *memChild) CloseStdin() error     { return c.inW.Close() }
func (c *memChild) Done() <-chan struct{} { return c.done }
func (c *memChild) Exit() session.Exit    { <-c.done; return c.exit }
func (c *memChild) Kill() error           { c.stop.Do(func() { close(c.stopped) }); c.finish(137); return nil }

// Shutdown takes a second (on the bubble's clock) before the child goes.
func (c *memChild) Shutdown(context.Context) error {
	c.stop.Do(func() { close(c.stopped) })
	time.Sleep(time.Second)
	c.inW.Close()
	<-c.done
	return nil
}

// recorder is a Handler that records what the loop tells it, and lets a
// test script what it does on a UI line.
type recorder struct {
	loop     *Loop
	sup      *Supervisor
	calls    []string
	onLine   func(line string)
	deadline time.Time
	onExpire func(now time.Time)
	// urgent, when set, says which UI lines are urgent (UIUrgent).
	urgent func(line string) bool
}

func (r *recorder) note(s string)                               { r.calls = append(r.calls, s) }
func (r *recorder) UILine(line []byte)                          { r.note("ui " + string(line)); r.onLine(string(line)) }
func (r *recorder) UITooLong(*framing.LineTooLongError)         { r.note("ui too long") }
func (r *recorder) UIEnd()                                      { r.note("ui end"); r.closeLive() }
func (r *recorder) CLILine(p *Proc, line string)                { r.note("cli " + line); r.loop.Emit([]byte(line)) }
func (r *recorder) CLITooLong(*Proc, *framing.LineTooLongError) { r.note("cli too long") }
func (r *recorder) ChildExited(p *Proc, exit session.Exit)      { r.note("exited " + exit.String()) }
func (r *recorder) Interrupt()                                  { r.note("interrupt") }
func (r *recorder) Shutdown(reason string)                      { r.note("shutdown " + reason) }
func (r *recorder) NextDeadline() time.Time                     { return r.deadline }
func (r *recorder) Expire(now time.Time)                        { r.deadline = time.Time{}; r.onExpire(now) }
func (r *recorder) UIUrgent(line []byte) bool                   { return r.urgent != nil && r.urgent(string(line)) }
func (r *recorder) closeLive() {
	if p := r.sup.Live(); p != nil {
		p.CloseStdin()
	}
}

// harness runs a loop with a recorder and memChildren answering with cli.
type harness struct {
	rec     *recorder
	ui      *io.PipeWriter
	out     *framing.Reader
	outR    *io.PipeReader // the UI's end of the loop's output
	signals chan os.Signal
	starts  []*memChild
	done    chan int
	err     error // Run's, once done has its code
	log     *adaptertest.LogBuffer
}

func newHarness(t *testing.T, cli memCLI) *harness {
	t.Helper()
	h := &harness{signals: make(chan os.Signal, 4), done: make(chan int, 1), log: &adaptertest.LogBuffer{}}
	loop := NewLoop(LoopConfig{Logger: slog.New(slog.NewTextHandler(h.log, nil))})
	h.rec = &recorder{loop: loop, onLine: func(string) {}, onExpire: func(time.Time) {}}
	h.rec.sup = loop.NewSupervisor(SupervisorConfig{Start: func(session.Config) (Child, error) {
		c := startMem(100+len(h.starts), cli)
		h.starts = append(h.starts, c)
		return c, nil
	}})
	if _, err := h.rec.sup.Start(session.Options{SessionID: "5c3bb572-859f-4ecf-9616-2b9d21f1b011"}, false); err != nil {
		t.Fatal(err)
	}
	uiR, uiW := io.Pipe()
	outR, outW := io.Pipe()
	h.ui, h.out, h.outR = uiW, framing.NewReader(outR, 1<<20), outR
	go func() {
		code, err := loop.Run(context.Background(), h.rec, uiR, outW, h.signals)
		h.err = err
		outW.Close()
		h.done <- code
	}()
	return h
}

func (h *harness) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(h.ui, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) next(t *testing.T) string {
	t.Helper()
	line, err := h.out.ReadLine()
	if err != nil {
		t.Fatalf("reading the UI's output: %v", err)
	}
	return string(line)
}

func echoCLI(line string) []string { return []string{line} }

// TestLoopDeadlineRestartsTheChild: a handler's deadline fires on the
// loop's clock (fake, under synctest: no real wait), and the supervisor
// replaces the child: the retired one is stopped, the new one starts only
// once it has exited, and work waiting for a child runs on the new one.
func TestLoopDeadlineRestartsTheChild(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		silent := func(string) []string { return nil } // never answers
		h := newHarness(t, silent)
		r := h.rec
		var armed time.Time
		r.onLine = func(line string) {
			if line == "turn" {
				r.sup.Live().Write([]byte(line))
				armed = r.loop.Now()
				r.deadline = armed.Add(5 * time.Second)
				return
			}
			r.sup.WhenLive(func(err error) {
				if err == nil {
					r.loop.Emit([]byte("on gen " + string(rune('0'+r.sup.Live().Gen))))
				}
			})
		}
		var fired time.Time
		r.onExpire = func(now time.Time) {
			fired = now
			opts, resumed := r.sup.ResumeOpts()
			r.sup.Retire("deadline", time.Second, false)
			r.sup.Respawn(opts, resumed)
		}
		h.send(t, "turn")
		// The deadline fires at 5 s; the retired child takes a second to
		// go, and a line in between waits for the new child.
		time.Sleep(5*time.Second + 100*time.Millisecond)
		h.send(t, "after")
		if got := h.next(t); got != "on gen 2" {
			t.Fatalf("got %q, want the waiting work run on the new child", got)
		}
		if d := fired.Sub(armed); d != 5*time.Second {
			t.Errorf("the deadline fired after %v, want 5s", d)
		}
		if len(h.starts) != 2 {
			t.Fatalf("%d children started, want 2", len(h.starts))
		}
		select {
		case <-h.starts[0].stopped:
		default:
			t.Error("the first child was not stopped")
		}
		h.ui.Close()
		<-h.done
		if slices.ContainsFunc(r.calls, func(c string) bool { return strings.HasPrefix(c, "exited") && strings.Contains(c, "137") }) {
			t.Errorf("the retired child's exit reached the handler: %q", r.calls)
		}
	})
}

// TestLoopSignals: a first SIGINT goes to the handler, a second within
// 2 s (on the loop's clock) shuts the session down and stops the child;
// SIGINTs further apart are two interrupts.
func TestLoopSignals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, echoCLI)
		h.signals <- syscall.SIGINT
		synctest.Wait()
		time.Sleep(3 * time.Second)
		h.signals <- syscall.SIGINT
		synctest.Wait()
		time.Sleep(time.Second)
		h.signals <- syscall.SIGINT
		<-h.done
		h.ui.Close() // ends the UI's reader
		want := []string{"interrupt", "interrupt", "shutdown second SIGINT"}
		if got := h.rec.calls; !slices.Equal(got[:min(len(got), 3)], want) {
			t.Errorf("calls %q, want %q first", got, want)
		}
		select {
		case <-h.starts[0].stopped:
		default:
			t.Error("the child was not stopped")
		}
	})
}

// TestLoopBackgroundWork: work handed to Go runs off the loop, so lines
// keep flowing while it runs; its result comes back on the loop, and the
// loop does not end before it has.
func TestLoopBackgroundWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, echoCLI)
		r := h.rec
		release := make(chan struct{})
		r.onLine = func(line string) {
			switch line {
			case "slow":
				r.loop.Go(func(context.Context) func() {
					<-release
					return func() { r.loop.Emit([]byte("slow done")) }
				})
			default:
				r.sup.Live().Write([]byte(line))
			}
		}
		h.send(t, "slow")
		h.send(t, "quick")
		if got := h.next(t); got != "quick" {
			t.Fatalf("got %q while the slow work ran, want the quick line", got)
		}
		h.ui.Close()
		synctest.Wait()
		select {
		case <-h.done:
			t.Fatal("the loop ended with background work still running")
		default:
		}
		close(release)
		if got := h.next(t); got != "slow done" {
			t.Fatalf("got %q, want the slow work's result", got)
		}
		<-h.done
	})
}

// TestSupervisorStartsNothingOnceEnding: a respawn asked for after the
// shutdown began (here by a deadline that fires while the child is
// stopping) starts no child, which nothing would stop, and the work
// waiting for it hears why; the session ends.
func TestSupervisorStartsNothingOnceEnding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(string) []string { return nil })
		r := h.rec
		r.onLine = func(string) { r.deadline = r.loop.Now().Add(500 * time.Millisecond) }
		var waited error
		r.onExpire = func(time.Time) {
			opts, resumed := r.sup.ResumeOpts()
			r.sup.Retire("deadline", time.Second, false)
			r.sup.Wait(func(err error) { waited = err })
			r.sup.Respawn(opts, resumed)
		}
		h.send(t, "turn")
		synctest.Wait()
		h.signals <- syscall.SIGTERM // the child takes a second to go
		<-h.done
		h.ui.Close()
		time.Sleep(2 * time.Second) // the retire's own stop, still waiting on the bubble's clock
		if len(h.starts) != 1 {
			t.Errorf("%d children started, want 1: none once the session is ending", len(h.starts))
		}
		if waited != ErrShuttingDown {
			t.Errorf("the waiting work got %v, want ErrShuttingDown", waited)
		}
	})
}

// TestSupervisorInterruptDeadline: an interrupt's deadline is the
// supervisor's: it fires after the timeout on the loop's clock unless
// the dialect says the turn ended, and its reaction replaces the child.
func TestSupervisorInterruptDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(string) []string { return nil })
		r := h.rec
		start := r.loop.Now()
		var fired []time.Duration
		r.onLine = func(line string) {
			switch line {
			case "interrupt":
				r.sup.Interrupting(5*time.Second, func() {
					fired = append(fired, r.loop.Now().Sub(start))
					opts, resumed := r.sup.ResumeOpts()
					r.sup.Replace("interrupt timeout", 0, true, opts, resumed, func(error) {})
				})
			case "ended":
				r.sup.Interrupted()
			}
		}
		h.send(t, "interrupt")
		time.Sleep(time.Second)
		h.send(t, "ended") // the turn ended in time: nothing fires
		time.Sleep(10 * time.Second)
		h.send(t, "interrupt")
		time.Sleep(10 * time.Second)
		h.ui.Close()
		<-h.done
		if want := []time.Duration{16 * time.Second}; !slices.Equal(fired, want) {
			t.Errorf("the deadline fired at %v, want %v", fired, want)
		}
		if len(h.starts) != 2 {
			t.Errorf("%d children started, want 2 (the second after the timeout)", len(h.starts))
		}
	})
}
