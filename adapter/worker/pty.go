package worker

// --ui control --pty: the worker is an interactive program under a
// pseudo-terminal (Claude Code's TUI by default, or the command after
// --), driven by lane 000 the way a person at its terminal would: input
// as one bracketed paste, then the carriage return as a separate write;
// interrupts as keys. What the program draws runs through a terminal
// emulator (screen), and the worker's state comes from the
// screen's stability: starting until the first stable screen, then
// running while it changes and idle once it has not changed for
// --stable-after. docs/protocol/control.md, "pty workers".

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/adapter/control"
	"github.com/ccbridge/ccbridge/framing"
	"github.com/ccbridge/ccbridge/mapping/lane000"
	"github.com/ccbridge/ccbridge/mapping/lanes"
	"github.com/ccbridge/ccbridge/screen"
	"github.com/ccbridge/ccbridge/session"
)

// PTYConfig is --pty's part of --ui control.
type PTYConfig struct {
	// On runs the worker under a pty (--pty).
	On bool
	// Command is the program and its arguments (after --); nil runs the
	// CLI's TUI (--claude) with the session flags.
	Command []string
	// Cols and Rows are the window size (--cols 120, --rows 40).
	Cols, Rows int
	// StableAfter is how long the screen must not change for the worker
	// to be idle (--stable-after 2s).
	StableAfter time.Duration
	// InterruptKeys are written to interrupt (--interrupt-keys; nil: the
	// profile's).
	InterruptKeys []byte
	// Agent names the profile (--agent; "": the command's name chooses,
	// profile.go); Working replaces its working texts (--working-text).
	Agent   string
	Working []string
	// Inline adds the profile's arguments that keep the program off the
	// alternate screen, so that what scrolls away reaches
	// control.worker.scrollback (--inline).
	Inline bool
}

// The pace of a pty worker's screen model.
const (
	// ptySample is the shortest time between two looks at the screen: the
	// output of a burst is taken in, the screen looked at once.
	ptySample = 25 * time.Millisecond
	// ptySettle separates a paste from its carriage return: a program
	// that reads the paste in pieces has it whole before the return.
	ptySettle = 100 * time.Millisecond
	// ptyCRRetry is how long a submitted input may leave the screen
	// unchanged before the carriage return is sent again (a return folded
	// into the paste, or read before it, is lost by some programs; an
	// empty prompt ignores an extra one); ptyCRTries bounds the sends.
	ptyCRRetry = 750 * time.Millisecond
	ptyCRTries = 3
	// ptyPasteShown bounds the wait, after ptySettle, for a program with
	// ready texts (its empty input box's placeholder) to show the paste
	// before the first return: one sent while the placeholder still shows
	// can reach it before the paste does (on a loaded machine), and the
	// placeholder seen after it would ack an input the program never took.
	ptyPasteShown = time.Second
	// ptyStopWithin bounds the stop of a program whose controller is
	// gone: end of input, then SIGTERM, then SIGKILL.
	ptyStopWithin = 3 * time.Second
)

func (p *PTYConfig) defaults() {
	if p.Cols <= 0 {
		p.Cols = 120
	}
	if p.Rows <= 0 {
		p.Rows = 40
	}
	if p.StableAfter <= 0 {
		p.StableAfter = 2 * time.Second
	}
	if len(p.InterruptKeys) == 0 {
		p.InterruptKeys = []byte{0x1b}
	}
}

// profile is the program's profile with the flags' overrides, and its
// arguments added by --inline.
func (p *PTYConfig) profile() (Profile, []string, error) {
	prof, err := profileFor(p.Agent, p.Command)
	if err != nil {
		return Profile{}, nil, err
	}
	if len(p.InterruptKeys) == 0 {
		p.InterruptKeys = prof.InterruptKeys
	}
	if len(p.Working) > 0 {
		prof.Working, prof.WorkingRows = p.Working, 0 // anywhere on the screen
	}
	var inline []string
	if p.Inline {
		if !prof.AltScreen || len(prof.Inline) == 0 {
			return Profile{}, nil, fmt.Errorf("--inline: the %s profile knows no arguments that keep the program off the alternate screen", prof.Name)
		}
		inline = prof.Inline
	}
	return prof, inline, nil
}

// ptyWorker is the handler of --ui control --pty, owned by the loop.
type ptyWorker struct {
	cfg    *ControlUI
	pc     PTYConfig
	prof   Profile
	log    *slog.Logger
	loop   *adapter.Loop
	sup    *adapter.Supervisor
	plane  *control.Plane
	worker lane000.Worker
	scr    *screen.Screen

	state control.WorkerState
	// The screen as last looked at: its generation, its rows, and when
	// its text last changed. sampleAt is the next look (zero: none due,
	// nothing arrived since the last); stableAt is when the screen counts
	// as stable if nothing changes before.
	gen       uint64
	rows      []string
	changedAt time.Time
	sampleAt  time.Time
	stableAt  time.Time
	// seen: the screen has changed since the child started (a first
	// stable screen needs something drawn).
	seen bool
	// working: the screen shows one of the profile's working texts.
	working bool
	// appr is the approval prompt on the screen, nil when none; apprN
	// counts the prompts seen (their ids).
	appr  *approval
	apprN int

	// inj is the input being handed over; queue holds the next ones (a
	// request with interrupt waits for the interrupt's idle).
	inj   *ptyInput
	queue []*ptyInput
	// interrupts wait for the worker to be idle after the interrupt keys.
	interrupts []func(lane000.Result, string)

	ui  laneQueue
	out [][]byte

	// child is the program's terminal to write to, nil when none runs
	// (the live child; tests give their own).
	child func() ptyWriter
}

// ptyWriter is where the worker writes the program's input.
type ptyWriter interface{ Write(b []byte) }

// liveChild is the supervisor's live child as a ptyWriter.
func (w *ptyWorker) liveChild() ptyWriter {
	if p := w.sup.Live(); p != nil {
		return p
	}
	return nil
}

// ptyInput is one injection: pasted, then submitted with "\r" (again
// after ptyCRRetry while the screen does not move), done once the screen
// changed after a return.
type ptyInput struct {
	text      []byte
	done      func(lane000.Result, string)
	submitted bool
	crAt      time.Time // the next return, or the give-up time after the last one
	crGen     uint64    // the screen's generation when the last was sent
	firstCR   time.Time // the first return
	pastedAt  time.Time
	tries     int
	// giveUp: an input still queued then (its interrupt never brought the
	// worker to idle) is given up, as the lane's ack said timeout.
	giveUp time.Time
}

// runPTY serves --ui control --pty.
func (c *ControlUI) runPTY(ctx context.Context, uiIn io.Reader, uiOut io.Writer, signals <-chan os.Signal) (int, error) {
	pc := c.PTY
	prof, inline, err := pc.profile()
	if err != nil {
		return 2, err
	}
	pc.defaults()
	child := c.Child
	child.PTY = true
	child.PTYCols, child.PTYRows = uint16(pc.Cols), uint16(pc.Rows)
	child.Env = append(child.Env[:len(child.Env):len(child.Env)], "TERM=xterm-256color", "COLUMNS="+strconv.Itoa(pc.Cols), "LINES="+strconv.Itoa(pc.Rows))
	if drop, also := prof.DropEnv, child.DropEnv; len(drop) > 0 {
		child.DropEnv = func(name string) bool { return slices.Contains(drop, name) || also != nil && also(name) }
	}
	opts := c.Options
	var base []string
	if len(pc.Command) > 0 {
		// Another program: the session flags are the CLI's, not its.
		path, err := exec.LookPath(pc.Command[0])
		if err != nil {
			return 127, fmt.Errorf("--pty: %w", err)
		}
		child.Path, base = path, append(slices.Clip(pc.Command[1:]), inline...)
		child.LeadArgs = nil
		if child.ProgramEnv != nil {
			child.Env = append(child.Env[:len(child.Env):len(child.Env)], child.ProgramEnv(pc.Command[0])...)
		}
		opts = session.Options{}
	} else {
		opts = opts.WithSessionID()
		opts.Extra = append(slices.Clip(opts.Extra), inline...)
		if child.ProgramEnv != nil {
			child.Env = append(child.Env[:len(child.Env):len(child.Env)], child.ProgramEnv("")...)
		}
	}
	w := &ptyWorker{
		cfg:   c,
		pc:    pc,
		prof:  prof,
		log:   c.Logger,
		loop:  adapter.NewLoop(adapter.LoopConfig{MaxLine: c.MaxLine, Clock: c.Clock, Logger: c.Logger}),
		scr:   screen.New(pc.Cols, pc.Rows),
		state: control.WorkerStarting,
	}
	w.worker = lane000.Worker{Team: c.Control.Team, AgentID: c.Control.AgentID, SessionID: opts.SessionID}
	if w.worker.SessionID == "" {
		w.worker.SessionID = uuid.NewString() // the worker's own id for a program with none
	}
	w.sup = w.loop.NewSupervisor(adapter.SupervisorConfig{Child: child, BaseArgs: base, Transport: adapter.Bytes, Started: w.started})
	w.child = w.liveChild
	plane, err := control.Open(c.Control, c.ControlTimeout, c.Logger, w, w.loop.Submit)
	if err != nil {
		return 2, err
	}
	defer plane.Close()
	w.plane = plane
	if err := plane.Listen(); err != nil {
		return 2, err
	}
	if err := plane.ServeBus(nil); err != nil {
		return 2, fmt.Errorf("--bus: %w", err)
	}
	w.loop.Emit(plane.Lane().CapabilitiesOf(w.worker.SessionID))
	if _, err := w.sup.Start(opts, false); err != nil {
		return 1, err
	}
	return w.loop.Run(ctx, w, uiIn, uiOut, signals)
}

func (w *ptyWorker) started(*adapter.Proc) {
	w.seen = false
	w.setState(control.WorkerStarting, "")
	w.emit()
}

func (w *ptyWorker) emit() { w.out = w.loop.EmitAll(w.out) }

func (w *ptyWorker) setState(s control.WorkerState, detail string) {
	if w.state == s && detail == "" {
		return
	}
	w.state = s
	w.out = append(w.out, w.worker.AppendState(nil, string(s), detail, w.loop.Now()))
}

// CLIOutput takes the program's output into the screen; the screen is
// looked at ptySample later, once for the whole burst.
func (w *ptyWorker) CLIOutput(_ *adapter.Proc, b []byte) {
	w.scr.Write(b)
	if r := w.scr.Replies(); len(r) > 0 {
		if c := w.child(); c != nil {
			c.Write(r) // the terminal's answers to the program's queries
		}
	}
	if w.sampleAt.IsZero() {
		w.sampleAt = w.loop.Now().Add(ptySample)
	}
}

// sample looks at the screen: what scrolled away and what changed goes
// to the controller, a change makes the worker running, and an input
// waiting for the screen to move is done.
func (w *ptyWorker) sample(now time.Time) {
	w.sampleAt = time.Time{}
	if lines := w.scr.Scrolled(); len(lines) > 0 {
		w.out = append(w.out, w.worker.AppendScrollback(nil, lines, now))
	}
	gen := w.scr.Gen()
	if gen == w.gen {
		return
	}
	w.gen = gen
	rows := w.scr.Lines()
	if diff := screen.Diff(w.rows, rows); len(diff) > 0 {
		col, row := w.scr.Cursor()
		w.out = append(w.out, w.worker.AppendScreen(nil, screenRows(diff), col, row, w.pc.Cols, w.pc.Rows, now))
	}
	w.rows = rows
	w.changedAt, w.stableAt, w.seen = now, now.Add(w.pc.StableAfter), true
	if w.state == control.WorkerIdle {
		w.setState(control.WorkerRunning, "")
	}
	w.working = w.prof.working(rows)
	w.approvals(rows, now)
	if in := w.inj; in != nil && in.submitted && gen != in.crGen && (w.working || w.prof.ready(rows)) {
		w.inj = nil
		in.done(lane000.OK, "the screen changed after the input was submitted")
		w.next()
	}
}

func screenRows(rows []screen.Row) []lane000.ScreenRow {
	out := make([]lane000.ScreenRow, len(rows))
	for i, r := range rows {
		out[i] = lane000.ScreenRow{N: r.N, Text: r.Text}
	}
	return out
}

// Expire runs what is due: a look at the screen, the screen becoming
// stable, an input's return, a carriage return sent again.
func (w *ptyWorker) Expire(now time.Time) {
	defer w.emit()
	if !w.sampleAt.IsZero() && !now.Before(w.sampleAt) {
		w.sample(now)
	}
	if !w.stableAt.IsZero() && !now.Before(w.stableAt) {
		w.stableAt = time.Time{}
		w.stable()
	}
	if in := w.inj; in != nil && !in.crAt.IsZero() && !now.Before(in.crAt) {
		w.submit(in, now)
	}
	if a := w.appr; a != nil && a.answer != nil && !a.keyAt.IsZero() && !now.Before(a.keyAt) {
		w.press(a, now)
	}
	if a := w.appr; a != nil && a.answer != nil && !now.Before(a.answer.giveUp) {
		in := a.answer
		a.answer, a.chosen = nil, nil
		in.done(lane000.Timeout, "the approval prompt still shows after its choice's key")
	}
	for len(w.queue) > 0 && !now.Before(w.queue[0].giveUp) {
		in := w.queue[0]
		w.queue = w.queue[1:]
		in.done(lane000.Timeout, "the program never became idle to take it")
	}
}

// NextDeadline is the earliest of the looks and waits due.
func (w *ptyWorker) NextDeadline() time.Time {
	d := adapter.Earliest(w.sampleAt, w.stableAt)
	if w.inj != nil {
		d = adapter.Earliest(d, w.inj.crAt)
	}
	if len(w.queue) > 0 {
		d = adapter.Earliest(d, w.queue[0].giveUp)
	}
	if a := w.appr; a != nil && a.answer != nil {
		d = adapter.Earliest(adapter.Earliest(d, a.answer.giveUp), a.keyAt)
	}
	return d
}

// stable: the screen has not changed for --stable-after. The worker is
// idle; interrupts waiting for that are done, and the next input goes.
func (w *ptyWorker) stable() {
	if w.state == control.WorkerExited || !w.seen {
		return
	}
	if w.inj != nil {
		return // an input in hand: the worker is not idle before its ack
	}
	if w.working {
		return // its status line says it works: running, however still
	}
	if w.state != control.WorkerIdle {
		w.setState(control.WorkerIdle, "")
	}
	for _, done := range w.interrupts {
		done(lane000.OK, "the screen is stable after the interrupt keys")
	}
	w.interrupts = nil
	w.next()
}

// ControlSessionID implements control.Target.
func (w *ptyWorker) ControlSessionID() string { return w.worker.SessionID }

// ControlState implements control.Target.
func (w *ptyWorker) ControlState() control.WorkerState { return w.state }

// ControlInject hands text to the program: not_live while it starts or
// after it exited, busy while it works (unless interrupt, which
// interrupts first and waits for idle), else pasted and submitted; ok
// once the screen moved after the return.
func (w *ptyWorker) ControlInject(text []byte, interrupt bool, done func(lane000.Result, string)) {
	defer w.emit()
	switch {
	case w.child() == nil || w.state == control.WorkerExited:
		done(lane000.NotLive, "the program is not running")
		return
	case w.state == control.WorkerStarting:
		done(lane000.NotLive, "the program is starting: its screen has not been stable yet")
		return
	case w.appr != nil && !interrupt:
		w.answer(text, done)
		return
	case w.state == control.WorkerRunning && !interrupt:
		done(lane000.Busy, "the program is working (its screen changes); ask with interrupt to interrupt it first")
		return
	}
	in := &ptyInput{text: pasteSafe(text), done: done, giveUp: w.loop.Now().Add(w.cfg.ControlTimeout)}
	if w.state == control.WorkerRunning {
		w.keys()
		w.interrupts = append(w.interrupts, func(lane000.Result, string) {})
	}
	w.queue = append(w.queue, in)
	w.next()
}

// next starts the oldest queued input once the worker is idle and no
// input is being handed over.
func (w *ptyWorker) next() {
	if w.inj != nil || len(w.queue) == 0 || w.state != control.WorkerIdle || w.appr != nil {
		return
	}
	p := w.child()
	if p == nil {
		for _, in := range w.queue {
			in.done(lane000.NotLive, "the program is not running")
		}
		w.queue = nil
		return
	}
	in := w.queue[0]
	w.queue = w.queue[1:]
	w.inj = in
	p.Write(bracketed(in.text))
	in.pastedAt = w.loop.Now()
	in.crAt = in.pastedAt.Add(ptySettle)
}

// submit writes the carriage return (again, while the screen has not
// moved since the last one); after ptyCRTries the input waits for the
// lane's timeout.
func (w *ptyWorker) submit(in *ptyInput, now time.Time) {
	p := w.child()
	if p == nil {
		w.inj = nil
		in.done(lane000.NotLive, "the program exited")
		return
	}
	if in.tries >= ptyCRTries {
		giveUp := in.firstCR.Add(w.cfg.ControlTimeout)
		if now.Before(giveUp) {
			in.crAt = giveUp
			return
		}
		// The program never took it: the lane's ack said timeout; the
		// inputs behind it go on, and the worker may be idle again.
		w.inj = nil
		in.done(lane000.Timeout, "the screen did not change after "+strconv.Itoa(in.tries)+" returns")
		w.stableAt = now
		return
	}
	if in.tries > 0 {
		w.log.Info("pty worker: the screen did not move after the carriage return; sending it again", "try", in.tries+1)
	}
	if in.tries == 0 && len(w.prof.Ready) > 0 && w.prof.ready(w.rows) && now.Before(in.pastedAt.Add(ptySettle+ptyPasteShown)) {
		// The placeholder still shows: the paste is not on the screen
		// yet. Look again at the next sample.
		in.crAt = now.Add(ptySample)
		return
	}
	if in.tries == 0 {
		in.firstCR = now
	}
	in.tries++
	in.submitted = true
	in.crGen = w.scr.Gen()
	p.Write([]byte{'\r'})
	in.crAt = now.Add(ptyCRRetry)
}

// bracketed is text as one bracketed paste.
func bracketed(text []byte) []byte {
	b := make([]byte, 0, len(text)+12)
	b = append(b, "\x1b[200~"...)
	b = append(b, text...)
	return append(b, "\x1b[201~"...)
}

// pasteSafe drops ESC from text, so that a paste cannot end itself early
// (ESC[201~) or carry keys; line breaks become "\r", as a terminal sends
// them when text is pasted.
func pasteSafe(text []byte) []byte {
	out := make([]byte, 0, len(text))
	for i := 0; i < len(text); i++ {
		switch c := text[i]; c {
		case 0x1b:
		case '\r':
			if i+1 < len(text) && text[i+1] == '\n' {
				continue
			}
			out = append(out, '\r')
		case '\n':
			out = append(out, '\r')
		default:
			out = append(out, c)
		}
	}
	return out
}

// ControlInterrupt writes the interrupt keys; ok once the screen is
// stable again (idle). An approval prompt waiting on a still screen gets
// the keys too (they answer it as the agent reads them: Codex's and
// Gemini's "No").
func (w *ptyWorker) ControlInterrupt(done func(lane000.Result, string)) {
	defer w.emit()
	switch {
	case w.child() == nil || w.state == control.WorkerExited:
		done(lane000.NotLive, "the program is not running")
	case w.state == control.WorkerIdle && w.appr == nil:
		done(lane000.OK, "no turn running: the screen is stable")
	default:
		w.keys()
		w.interrupts = append(w.interrupts, done)
	}
}

// keys writes the interrupt keys (never a signal).
func (w *ptyWorker) keys() {
	if p := w.child(); p != nil {
		p.Write(w.pc.InterruptKeys)
	}
}

// UILine: control.screen.request is answered here; every other line goes
// to lane 000, one at a time, off the loop.
func (w *ptyWorker) UILine(line []byte) {
	if gjson.GetBytes(line, "type").Str == lane000.TypeScreenRequest {
		defer w.emit()
		w.sample(w.loop.Now()) // what scrolled away comes before the screen
		w.out = append(w.out, w.ScreenAnswer(gjson.GetBytes(line, "request_id").Str))
		return
	}
	w.ui.push(w.loop, line, w.take, w.endInput)
}

// UIUrgent: an interrupt, and a screen request (answered on the loop,
// writing nothing to the program), are taken even while the program's
// input is held back (adapter.UrgentHandler).
func (w *ptyWorker) UIUrgent(line []byte) bool {
	return urgent(line) || gjson.GetBytes(line, "type").Str == lane000.TypeScreenRequest
}

// ScreenAnswer is the control.screen answer to a control.screen.request:
// the whole screen, every row. On the loop only.
func (w *ptyWorker) ScreenAnswer(requestID string) []byte {
	rows := w.scr.Lines()
	all := make([]lane000.ScreenRow, len(rows))
	for i, r := range rows {
		all[i] = lane000.ScreenRow{N: i, Text: r}
	}
	col, row := w.scr.Cursor()
	return w.worker.AppendScreenAnswer(nil, requestID, string(w.state), w.scr.AltScreen(), all, col, row, w.pc.Cols, w.pc.Rows, w.loop.Now())
}

// take returns a UI line's lane work: lane 000's, the others refused.
func (w *ptyWorker) take(line []byte) func() {
	lane := w.plane.Lane()
	return func() {
		if k := lanes.Classify(line); k == lanes.Lane001 || k == lanes.Lane004 {
			w.reply(lane000.AppendProblem(nil, &lane000.Problem{Ack: lane000.TypeError, Result: lane000.Rejected, Error: "unsupported",
				Detail: "a pty worker takes lane 000 only (control.stdin.request, control.interrupt.request, control.screen.request)"}, time.Now()))
			return
		}
		lane.Handle(line, w.reply)
	}
}

// endInput: the controller is gone. The program is stopped as a closed
// terminal would stop it (end of input means nothing to a TUI), in
// stages, and ccbridge ends as asked.
func (w *ptyWorker) endInput() {
	if w.sup.Retire("the controller's input ended", ptyStopWithin, false) != nil {
		w.loop.ExitWith(0)
	}
}

func (w *ptyWorker) reply(line []byte) { w.loop.Submit(func() { w.loop.Emit(line) }) }

func (w *ptyWorker) UITooLong(e *framing.LineTooLongError) {
	w.loop.Emit(lane000.AppendProblem(nil, &lane000.Problem{Ack: lane000.TypeError, Result: lane000.Rejected, Error: "too_large",
		Detail: "line too long: over the " + strconv.FormatInt(e.Max, 10) + "-byte limit (--max-line)"}, w.loop.Now()))
}

// UIEnd: once the lane answered what it has, the program is stopped.
func (w *ptyWorker) UIEnd() { w.ui.close(w.loop, w.take, w.endInput) }

// CLILine is not called: a pty child's output is bytes (CLIOutput).
func (w *ptyWorker) CLILine(*adapter.Proc, string) {}

func (w *ptyWorker) CLITooLong(*adapter.Proc, *framing.LineTooLongError) {}

// ChildExited: the program is gone; what waits on it is told, and the
// screen's last lines are sent.
func (w *ptyWorker) ChildExited(_ *adapter.Proc, exit session.Exit) {
	defer w.emit()
	now := w.loop.Now()
	w.sample(now)
	if in := w.inj; in != nil {
		w.inj = nil
		in.done(lane000.NotLive, "the program exited: "+exit.String())
	}
	for _, in := range w.queue {
		in.done(lane000.NotLive, "the program exited: "+exit.String())
	}
	w.queue = nil
	for _, done := range w.interrupts {
		done(lane000.OK, "the program exited")
	}
	w.interrupts = nil
	if a := w.appr; a != nil && a.answer != nil {
		in := a.answer
		a.answer, a.chosen = nil, nil
		in.done(lane000.NotLive, "the program exited before it took the choice: "+exit.String())
	}
	w.approvals(nil, now)
	w.stableAt, w.sampleAt = time.Time{}, time.Time{}
	w.setState(control.WorkerExited, exit.String())
}

// Interrupt handles SIGINT: the interrupt keys.
func (w *ptyWorker) Interrupt() {
	if w.state == control.WorkerRunning {
		w.keys()
	}
}

func (w *ptyWorker) Shutdown(string) {}
