package adapter

import (
	"io"
	"os"
	"syscall"
	"time"
)

// InterruptWindow is how close a second SIGINT must follow the first to
// shut the session down instead of interrupting again.
const InterruptWindow = 2 * time.Second

// Host is what every session runner of the core shares, whether it hands
// lines to a Handler (Loop) or relays bytes itself (drop-in's relay, in
// the stream dialect): the UI's output, written by a goroutine of its
// own, with the rule for a UI that stops reading during a shutdown; the
// work other goroutines submit; the rule for signals; and the clock.
// They are written once, here. The runner's goroutine owns a Host;
// Submit and Done are safe for any goroutine.
type Host struct {
	clock Clock
	ui    *uiWriter

	// submitCh carries work from outside the session (Submit); it is
	// unbuffered, so work handed over always runs. stop is closed when
	// the runner ends (End).
	submitCh chan func()
	stop     chan struct{}

	// StallLimit: once a shutdown began, output the UI takes none of for
	// this long is given up. NewHost sets it to 2 s.
	StallLimit time.Duration
	// While a shutdown runs with output pending, stallAt is when the
	// output is given up unless the UI has taken some of it since
	// (written, the writer's progress then).
	stallAt time.Time
	written int64

	lastInt time.Time // the last SIGINT that interrupted
}

// NewHost makes a Host on clock (nil: the real one).
func NewHost(clock Clock) *Host {
	if clock == nil {
		clock = RealClock
	}
	return &Host{clock: clock, StallLimit: stallLimit, submitCh: make(chan func()), stop: make(chan struct{})}
}

// Start begins writing the UI's output to out; later calls do nothing.
func (h *Host) Start(out io.Writer) {
	if h.ui == nil {
		h.ui = newUIWriter(out)
	}
}

// Now is the clock's time; NewTimer makes a stopped timer of the clock.
func (h *Host) Now() time.Time  { return h.clock.Now() }
func (h *Host) NewTimer() Timer { return h.clock.NewTimer() }

// Submitted is the work Submit hands over, for the runner's select: it
// runs each function it takes.
func (h *Host) Submitted() <-chan func() { return h.submitCh }

// Submit runs fn on the runner's goroutine, for a goroutine outside the
// session (a control lane's connection). It returns once the runner has
// taken fn (fn then runs, or is running), or false at once when the
// runner has ended: fn never runs then. Called before the runner
// starts, it waits for it. Safe for concurrent use; not from the
// runner's own goroutine (fn would wait for itself).
func (h *Host) Submit(fn func()) bool {
	select {
	case h.submitCh <- fn:
		return true
	case <-h.stop:
		return false
	}
}

// End marks the runner as ended: Submit refuses work from then on, and
// Done is closed. Call it once.
func (h *Host) End() { close(h.stop) }

// Done is closed once the runner has ended.
func (h *Host) Done() <-chan struct{} { return h.stop }

// Signal applies the rule for the process's signals: SIGTERM, SIGHUP and
// a second SIGINT within InterruptWindow shut the session down, and
// Signal says why; a first SIGINT interrupts what runs (Signal returns
// "").
func (h *Host) Signal(sig os.Signal) (shutdown string) {
	now := h.Now()
	switch {
	case sig != os.Interrupt && sig != syscall.SIGINT:
		return sig.String()
	case !h.lastInt.IsZero() && now.Sub(h.lastInt) < InterruptWindow:
		return "second SIGINT"
	}
	h.lastInt = now
	return ""
}

// WatchStall applies the rule for a UI that stops reading while a
// shutdown runs: given that output is pending, it reports true once the
// UI has taken none of it for StallLimit; the runner then gives the
// output up (the caller abandons the writer). Call it whenever the
// runner wakes during a shutdown; StallDeadline says when to wake.
func (h *Host) WatchStall(pending bool) bool {
	if !pending {
		h.stallAt = time.Time{} // nothing to wait for
		return false
	}
	now := h.Now()
	if w := h.ui.progress(); h.stallAt.IsZero() || w != h.written {
		h.stallAt, h.written = now.Add(h.StallLimit), w
		return false
	}
	return !now.Before(h.stallAt)
}

// StallDeadline is when WatchStall must run next, or the zero time.
func (h *Host) StallDeadline() time.Time { return h.stallAt }

// The UI's output, for a runner that writes it itself (drop-in's relay);
// the Loop writes through Emit and Flush. Start must have been called.

// Write writes p to the UI after what was queued before it (the writer
// of uiwriter.go): a runner's pumps write through it from their own
// goroutines. It fails once a write failed or the output was given up.
func (h *Host) Write(p []byte) (int, error) { return h.ui.Write(p) }

// Queue queues the whole lines in b without waiting and without a bound
// (for the few lines a runner writes from its own goroutine), and
// returns an empty buffer for the next ones.
func (h *Host) Queue(b []byte) []byte { return h.ui.swap(b) }

// Pending is how many bytes wait to be written.
func (h *Host) Pending() int { return h.ui.pending() }

// Failed is the error of a failed write, or of output given up.
func (h *Host) Failed() error { return h.ui.failed() }

// Wrote is signalled when a write ends (room again, an error, or nothing
// left to write): a runner that waits for its output selects on it.
func (h *Host) Wrote() <-chan struct{} { return h.ui.notify }

// GiveUp drops what was not written and fails the writes still to come;
// it returns how many bytes were lost.
func (h *Host) GiveUp() int64 { return h.ui.abandon() }

// Close stops the writer once what is queued is written (or given up);
// Result is then the error of the writes, if one failed.
func (h *Host) Close()        { h.ui.close() }
func (h *Host) Result() error { return h.ui.result() }
