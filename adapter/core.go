package adapter

// The session core: one event loop that every dialect runs on. The loop's
// goroutine owns all session state; the UI's reader, the children's
// readers and background work only hand it messages over channels, so a
// control message (an interrupt, a cancel, an answer) never waits behind
// ordinary work. A dialect is a Handler the loop calls; its children are
// kept by Supervisors (supervisor.go).

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/framing"
	"github.com/ccbridge/ccbridge/session"
)

// Handler is a dialect's part of a session: the loop calls it, on the
// loop's goroutine and one call at a time, for everything that happens.
// What a handler writes to the UI it hands to the loop (Loop.Emit); what
// it writes to a child goes through the child's Proc.
type Handler interface {
	// UILine handles one line of the UI's input; the line is the
	// handler's to keep.
	UILine(line []byte)
	// UITooLong reports a UI line over the limit, which was dropped.
	UITooLong(e *framing.LineTooLongError)
	// UIEnd reports the end of the UI's input. No more input comes; the
	// loop ends once every child has exited and background work is done.
	UIEnd()
	// CLILine handles one line of a live child, without its line break.
	// The line may alias a buffer the loop reuses: copy what is kept.
	CLILine(p *Proc, line string)
	// CLITooLong reports a line of a live child over the limit, which was
	// dropped. e.Head holds the line's first bytes: when they show it was
	// a turn's result, the handler still ends the turn, as that result
	// would have, saying the line was too long (mapping.TooLongResult).
	CLITooLong(p *Proc, e *framing.LineTooLongError)
	// ChildExited reports that the live child of a Supervisor exited
	// without being asked to. The Supervisor has no live child any more;
	// a child it retired itself is not reported here.
	ChildExited(p *Proc, exit session.Exit)
	// Interrupt handles a first SIGINT: interrupt what runs, in band.
	Interrupt()
	// Shutdown ends the session (SIGTERM, SIGHUP, a second SIGINT, the
	// context, or the UI's output gone): settle what is open. The loop
	// then stops every child in stages, and no child starts any more; UI
	// lines that still come are handed over, for the dialect to refuse.
	Shutdown(reason string)
	// Expire handles the deadlines that have passed by now; NextDeadline
	// tells the earliest one left (the zero time for none).
	Expire(now time.Time)
	NextDeadline() time.Time
}

// RawHandler is implemented by a handler whose children write bytes, not
// lines (a pty): their output is handed over as it is read.
type RawHandler interface {
	CLIOutput(p *Proc, b []byte)
}

// UrgentHandler is implemented by a handler whose UI sends lines that
// must not wait for a child's input (an interrupt, a cancel): while a
// child's input is at its bound the loop holds the UI's ordinary lines
// back, and hands an urgent one over at once, ahead of the ordinary ones
// held before it. UIUrgent is called on the loop, only then; it must
// only look at the line.
type UrgentHandler interface {
	UIUrgent(line []byte) bool
}

// Clock is the session core's time: the loop reads it and arms its one
// timer with it. Tests give a fake one, or run the real one under
// testing/synctest.
type Clock interface {
	Now() time.Time
	// NewTimer returns a stopped timer.
	NewTimer() Timer
}

// Timer is a Clock's timer.
type Timer interface {
	C() <-chan time.Time
	// Reset makes the timer fire after d; Stop stops it.
	Reset(d time.Duration)
	Stop()
}

// RealClock is the system's clock, the one a nil Clock means.
var RealClock Clock = realClock{}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTimer() Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return realTimer{t}
}

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time   { return r.t.C }
func (r realTimer) Reset(d time.Duration) { r.t.Reset(d) }
func (r realTimer) Stop()                 { r.t.Stop() }

// LoopConfig is what a loop needs besides its handler. Zero values mean
// defaults.
type LoopConfig struct {
	// MaxLine caps a UI line held whole. Default framing.DefaultMaxLine.
	MaxLine int
	// CLIMaxLine caps a child's line held whole. Default MaxLine.
	CLIMaxLine int
	// ReuseBlocks hands the children's lines over in reused buffers
	// (blockPool): the handler must copy what it keeps of a line.
	ReuseBlocks bool
	// Clock is the loop's time; nil means the real one.
	Clock  Clock
	Logger *slog.Logger
}

// Loop is one session's event loop. Everything on it is called from its
// goroutine (Run), by the handler; nothing is safe for other goroutines.
type Loop struct {
	cfg LoopConfig
	log *slog.Logger
	h   Handler

	// host holds the UI's writer (uiwriter.go), Submit, the signals'
	// rule and the clock (host.go); out holds whole lines, each ending in
	// '\n', not yet handed to the writer. Handlers append to out with
	// Emit, or directly through Out.
	host *Host
	out  []byte
	// uiFailed: a write to the UI failed, or its output was given up.
	uiFailed bool

	gen   int
	procs map[int]*Proc // every child not yet exited, live or retired
	sups  map[*Supervisor]struct{}

	bgCount  int
	bgCtx    context.Context
	bgCancel context.CancelFunc

	uiEOF    bool
	stopping bool
	exitCode int
	// exitFixed: the handler set the exit code (ExitWith); children's
	// exits no longer change it.
	exitFixed bool
	timer     Timer

	blocks  blockPool
	uiCh    chan uiLine
	cliCh   chan cliBlock
	asyncCh chan func()

	// The children's input (childinput.go): inFull counts the children
	// whose queued input is at its bound, and inWake is signalled when
	// one goes under it. Meanwhile the UI's ordinary lines are held, in
	// order (held, heldBytes of lines); urgent ones are not.
	inFull    atomic.Int32
	inWake    chan struct{}
	held      []uiLine
	heldBytes int
	urgent    UrgentHandler
}

// NewLoop makes the loop of one session.
func NewLoop(cfg LoopConfig) *Loop {
	if cfg.MaxLine <= 0 {
		cfg.MaxLine = framing.DefaultMaxLine
	}
	if cfg.CLIMaxLine <= 0 {
		cfg.CLIMaxLine = cfg.MaxLine
	}
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	l := &Loop{
		cfg:     cfg,
		log:     cfg.Logger,
		host:    NewHost(cfg.Clock),
		procs:   map[int]*Proc{},
		sups:    map[*Supervisor]struct{}{},
		timer:   cfg.Clock.NewTimer(),
		uiCh:    make(chan uiLine, uiQueue),
		cliCh:   make(chan cliBlock, cliQueue),
		asyncCh: make(chan func(), 16),
		inWake:  make(chan struct{}, 1),
	}
	if cfg.ReuseBlocks {
		l.blocks = newBlockPool()
	}
	l.bgCtx, l.bgCancel = context.WithCancel(context.Background())
	return l
}

// Ending reports whether the session is ending: the UI's input is over,
// or a shutdown began.
func (l *Loop) Ending() bool { return l.uiEOF || l.stopping }

// Stopping reports whether a shutdown began.
func (l *Loop) Stopping() bool { return l.stopping }

// UIEnded reports whether the UI's input is over.
func (l *Loop) UIEnded() bool { return l.uiEOF }

// Run serves the session until the UI's input ends (or a shutdown),
// every child has exited, background work is done and the output is
// written. It returns the last child's exit code and, when some output
// could not be written, why.
//
// The loop never blocks on the UI: its output is written by a goroutine
// of its own (uiWriter). While queueLimit bytes or more wait to be
// written, the loop stops taking the children's output, so that a CLI
// writes no faster than the UI reads and nothing is dropped; the UI's
// input, signals, deadlines and background work are still served, and
// what they emit is queued beyond the bound. A failed write means the UI
// is gone: the session shuts down and its output is dropped. Once a
// shutdown began, output the UI takes none of for stallLimit is given up
// too, so that the staged shutdown and the exit never wait for a UI that
// does not read.
//
// Nor does it block on a child: what it writes to one is queued when the
// child's stdin does not take it, and written by a goroutine of the
// child's (childinput.go). While a child has inputLimit bytes or more
// queued, the loop holds the UI's ordinary lines back (up to uiQueue
// lines or inputLimit bytes, then it stops reading them), so that the UI
// writes no faster than the CLI reads; the UI's urgent lines
// (UrgentHandler), the end of its input once nothing is held, signals,
// deadlines, submitted and background work and the children's exits are
// still served.
func (l *Loop) Run(ctx context.Context, h Handler, in io.Reader, out io.Writer, signals <-chan os.Signal) (int, error) {
	l.h = h
	l.urgent, _ = h.(UrgentHandler)
	l.Start(out)
	defer func() {
		l.bgCancel()
		l.host.End()
		l.host.ui.close()
	}()
	l.push()
	go readUI(in, l.cfg.MaxLine, l.log, l.uiCh, l.host.stop)

	done := ctx.Done()
	for !l.finished() {
		cli := l.cliCh
		paused := l.full()
		if paused {
			cli = nil // backpressure: the CLI waits for the UI
		}
		ui := l.uiCh
		if l.holdingFull() {
			ui = nil // backpressure: the UI waits for the CLI
		}
		select {
		case <-done:
			done = nil
			l.Shutdown("context cancelled")
		case m := <-ui:
			l.takeUI(m)
		case m := <-cli:
			l.fromCLI(m)
			l.blocks.put(m.buf) // the handler kept nothing of it
		case fn := <-l.asyncCh:
			l.bgCount--
			fn()
		case fn := <-l.host.Submitted():
			fn()
		case <-l.timer.C():
			now := l.Now()
			for s := range l.sups {
				s.expire(now)
			}
			if d := h.NextDeadline(); !d.IsZero() && !now.Before(d) {
				h.Expire(now)
			}
		case sig := <-signals:
			l.signal(sig)
		case <-l.host.ui.notify:
			// A write ended: room again, or an error.
		case <-l.inWake:
			// A child's input went under its bound, or ended.
		}
		l.release()
		l.checkUI()
		// Hand the output over when no more input waits (a burst
		// coalesces into few writes without added latency), or when
		// enough is pending that holding more would only cost memory.
		if len(l.out) >= pendingFlush || len(l.uiCh) == 0 && len(l.asyncCh) == 0 && (paused || len(l.cliCh) == 0) {
			l.push()
		}
		l.watchStall()
		l.armTimer()
	}
	return l.exitCode, l.host.ui.result()
}

// finished reports whether the session is over: no more input expected,
// no child left, no background work, and the output written (or given
// up).
func (l *Loop) finished() bool {
	return (l.uiEOF || l.stopping) && len(l.procs) == 0 && l.bgCount == 0 &&
		(l.uiFailed || len(l.out) == 0 && l.host.ui.pending() == 0)
}

// full reports whether the UI's output is at its bound: the children's
// output then waits.
func (l *Loop) full() bool {
	return !l.uiFailed && len(l.out)+l.host.ui.pending() >= queueLimit
}

// checkUI shuts the session down when a write to the UI failed: the UI
// is gone. Its output is dropped from then on.
func (l *Loop) checkUI() {
	if l.uiFailed {
		return
	}
	err := l.host.ui.failed()
	if err == nil {
		return
	}
	l.uiFailed = true
	l.out = l.out[:0]
	if !errors.Is(err, ErrUIStalled) {
		l.log.Warn("writing to the UI failed; shutting down", "err", err)
	}
	l.Shutdown("the UI's output is gone")
}

// watchStall gives the output up once a shutdown runs and the UI has
// taken none of it for the Host's StallLimit.
func (l *Loop) watchStall() {
	if !l.stopping || l.uiFailed || !l.host.WatchStall(len(l.out) > 0 || l.host.ui.pending() > 0) {
		return
	}
	l.uiFailed = true
	l.out = l.out[:0]
	lost := l.host.ui.abandon()
	l.log.Warn("the UI has read none of its output while shutting down; giving it up", "for", l.host.StallLimit.String(), "bytes", lost)
}

// inputFull reports whether a child's input is at its bound: the UI's
// ordinary lines then wait.
func (l *Loop) inputFull() bool { return l.inFull.Load() > 0 }

// holdingFull reports whether the UI's lines held back have reached
// their bound: the loop then stops reading the UI's input.
func (l *Loop) holdingFull() bool {
	return len(l.held) > 0 && (len(l.held) >= uiQueue || l.heldBytes >= inputLimit)
}

// takeUI hands a UI message to the handler, or holds it back while a
// child's input is at its bound: an ordinary line, or anything behind a
// line held. An urgent line is never held.
func (l *Loop) takeUI(m uiLine) {
	ordinary := !m.eof && m.tooLong == nil
	switch {
	case len(l.held) == 0 && (!ordinary || !l.inputFull()):
	case ordinary && l.urgent != nil && l.urgent.UIUrgent(m.line):
	default:
		l.held = append(l.held, m)
		l.heldBytes += len(m.line)
		return
	}
	l.fromUI(m)
}

// release hands the UI's lines held back to the handler, in order, for as
// long as no child's input is at its bound.
func (l *Loop) release() {
	for len(l.held) > 0 && !l.inputFull() {
		m := l.held[0]
		l.held[0] = uiLine{}
		l.held = l.held[1:]
		l.heldBytes -= len(m.line)
		l.fromUI(m)
	}
	if len(l.held) == 0 {
		l.held = nil
	}
}

func (l *Loop) fromUI(m uiLine) {
	switch {
	case m.eof:
		l.uiEOF = true
		l.log.Debug("UI input ended")
		l.bgCancel()
		for s := range l.sups {
			s.dropPending()
		}
		l.h.UIEnd()
	case m.tooLong != nil:
		l.h.UITooLong(m.tooLong)
	default:
		l.h.UILine(m.line)
	}
}

func (l *Loop) fromCLI(m cliBlock) {
	p := l.procs[m.gen]
	if p == nil {
		return
	}
	if m.exit != nil {
		delete(l.procs, m.gen)
		p.in.gone()
		if !l.exitFixed {
			l.exitCode = m.exit.Code
		}
		p.sup.exited(p, *m.exit)
		return
	}
	if !p.Live() {
		return // a retired child's last words
	}
	switch {
	case m.tooLong != nil:
		l.h.CLITooLong(p, m.tooLong)
	case m.raw:
		if rh, ok := l.h.(RawHandler); ok {
			rh.CLIOutput(p, []byte(m.lines))
		}
	default:
		for line := range blockLines(m.lines) {
			if !p.Live() {
				return // the child was retired by an earlier line
			}
			if p.sup.rw != nil && p.sup.rewindLine(p, line) {
				continue
			}
			l.h.CLILine(p, line)
		}
	}
}

// signal: the Host's rule; a first SIGINT goes to the handler.
func (l *Loop) signal(sig os.Signal) {
	if why := l.host.Signal(sig); why != "" {
		l.Shutdown(why)
		return
	}
	l.h.Interrupt()
}

// Shutdown ends the session: the handler settles what is open,
// background work is cancelled, every child is stopped in stages and no
// child starts any more.
func (l *Loop) Shutdown(reason string) {
	if l.stopping {
		return
	}
	l.stopping = true
	l.log.Info("shutting down", "reason", reason)
	l.bgCancel()
	for s := range l.sups {
		s.dropPending()
	}
	l.h.Shutdown(reason)
	for _, p := range l.procs {
		p.Stop()
	}
}

func (l *Loop) armTimer() {
	l.timer.Stop()
	next := Earliest(l.h.NextDeadline(), l.host.StallDeadline())
	for s := range l.sups {
		next = Earliest(Earliest(next, s.interruptAt), s.rewindDeadline())
	}
	if !next.IsZero() {
		l.timer.Reset(max(next.Sub(l.Now()), 0))
	}
}

// Now is the loop's clock's time.
func (l *Loop) Now() time.Time { return l.host.Now() }

// Start begins serving: out receives the UI lines. Call it before Run
// when the handler must write something before the first input (Run
// calls it otherwise).
func (l *Loop) Start(out io.Writer) { l.host.Start(out) }

// Submit runs fn on the loop's goroutine, as a handler call, for a
// goroutine outside the session (a control lane's connection): Host's
// Submit. The loop serves it in every state, also while it holds the
// children's output back for a UI that does not read.
func (l *Loop) Submit(fn func()) bool { return l.host.Submit(fn) }

// Done is closed once the loop has ended: what waits for work it
// submitted (Submit) waits for Done too.
func (l *Loop) Done() <-chan struct{} { return l.host.Done() }

// Go runs work in the background, off the loop: file reads, session
// replays, commands. The function work returns then runs on the loop. ctx
// is cancelled when the UI's input ends or the session shuts down; the
// loop does not end before every piece of work has handed its result
// back, so the hand-over never waits for a loop that is gone.
func (l *Loop) Go(work func(ctx context.Context) func()) {
	l.bgCount++
	go func() { l.asyncCh <- work(l.bgCtx) }()
}

// ExitWith sets the code Run returns, whatever the children's exits: a
// handler that ends its child itself (a pty worker hangs up on its
// program) says the session ended as it should.
func (l *Loop) ExitWith(code int) { l.exitCode, l.exitFixed = code, true }

// Emit queues one line for the UI. A line that holds a line break would
// break the UI's framing: it is dropped and logged (no translator builds
// one; the fuzz targets check).
func (l *Loop) Emit(line []byte) {
	if bytes.IndexByte(line, '\n') >= 0 {
		l.log.Error("dropped an outbound line that holds a line break", "type", gjson.GetBytes(line, "type").Str)
		return
	}
	l.out = append(l.out, line...)
	l.out = append(l.out, '\n')
}

// EmitAll queues lines for the UI and empties the slice for reuse.
func (l *Loop) EmitAll(lines [][]byte) [][]byte {
	for _, line := range lines {
		l.Emit(line)
	}
	clear(lines)
	return lines[:0]
}

// Out is the pending output, for a handler that appends whole lines
// (each ending in '\n') to it directly.
func (l *Loop) Out() *[]byte { return &l.out }

// Flush hands the pending output to the UI's writer now, without waiting
// for it to be written (Run does so on its own whenever it is idle). It
// returns the error of a failed write, if one failed.
func (l *Loop) Flush() error {
	if l.host.ui == nil {
		return nil
	}
	l.push()
	return l.host.ui.failed()
}

// pendingFlush is how many bytes of whole lines the loop collects before
// handing them over without waiting to be idle; pendingKeep is the
// largest buffer kept for reuse after one huge line.
const (
	pendingFlush = 64 << 10
	pendingKeep  = 4 << 20
)

// push hands the pending output to the UI's writer, and takes an empty
// buffer back: the two swap, nothing is copied.
func (l *Loop) push() {
	if l.host.ui == nil || len(l.out) == 0 {
		return
	}
	if l.uiFailed {
		l.out = l.out[:0]
		return
	}
	l.out = l.host.ui.swap(framing.ValidUTF8(l.out)) // nothing but UTF-8 reaches the UI
}
