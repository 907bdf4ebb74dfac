package worker

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/adapter/control"
	"github.com/ccbridge/ccbridge/framing"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/lane000"
	"github.com/ccbridge/ccbridge/mapping/lane004"
	"github.com/ccbridge/ccbridge/mapping/lanes"
	"github.com/ccbridge/ccbridge/session"
)

func init() { adapter.Register("control", func() adapter.Dialect { return &ControlUI{} }) }

// ControlArgs are the CLI arguments of the control dialect: those of every
// dialect on the core, with the user's prompts echoed back.
var ControlArgs = append(slices.Clip(adapter.CoreArgs), "--replay-user-messages")

// ControlUI is `--ui control`: stdin carries control-lane requests (lane
// 000: control.stdin.request, control.interrupt.request,
// control.capabilities.request), stdout their acks and the worker's
// progress (control.worker.*), so that a TUI or a team daemon drives one
// worker session and shows what it does. docs/protocol/control.md.
type ControlUI struct {
	adapter.Settings
	// PTY runs the worker under a pseudo-terminal (--pty; pty.go).
	PTY PTYConfig
	// Hook, when set, is handed the session's lane 004 once Run has
	// opened the control plane: ccbridge serve drives the worker through
	// it.
	Hook func(Lane004)
}

// Lane004 is one worker's lane 004, for ccbridge serve: the lane that
// takes its requests, its event log, and its status.
type Lane004 struct {
	Lane *control.Lane004
	Log  *control.EventLog
	// Status is the worker's status object (state, thread and turn ids),
	// read on its loop; false once the session has ended.
	Status func() ([]byte, bool)
}

// Flags adds --pty and its flags; the control plane's flags serve
// --control beside every dialect too, so main adds them for all.
func (c *ControlUI) Flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.PTY.On, "pty", false, "run the worker under a pseudo-terminal: the CLI's TUI, or the command after --")
	fs.IntVar(&c.PTY.Cols, "cols", 120, "--pty: the terminal's columns")
	fs.IntVar(&c.PTY.Rows, "rows", 40, "--pty: the terminal's rows")
	fs.DurationVar(&c.PTY.StableAfter, "stable-after", 2*time.Second, "--pty: a screen unchanged this long means the worker is idle")
	fs.Func("interrupt-keys", `--pty: the keys that interrupt the worker, as a Go string literal's body (default "\x1b", ESC)`, func(v string) error {
		k, err := strconv.Unquote(`"` + v + `"`)
		if err != nil || k == "" {
			return fmt.Errorf("not a Go string literal's body: %q", v)
		}
		c.PTY.InterruptKeys = []byte(k)
		return nil
	})
	fs.Func("agent", "--pty: the agent profile ("+strings.Join(ProfileNames(), ", ")+"; default: the command's name chooses)", func(v string) error {
		if _, ok := profiles[v]; !ok {
			return fmt.Errorf("no such profile %q (one of %s)", v, strings.Join(ProfileNames(), ", "))
		}
		c.PTY.Agent = v
		return nil
	})
	fs.Func("working-text", "--pty: a text the agent shows only while it works (replaces its profile's; repeatable)", func(v string) error {
		if v == "" {
			return fmt.Errorf("empty")
		}
		c.PTY.Working = append(c.PTY.Working, v)
		return nil
	})
	fs.BoolVar(&c.PTY.Inline, "inline", false, "--pty: keep the agent off the alternate screen (its profile's arguments, codex --no-alt-screen), so that its history reaches control.worker.scrollback")
}

// controlWorker is the control dialect's handler, owned by the loop.
type controlWorker struct {
	cfg    *ControlUI
	log    *slog.Logger
	loop   *adapter.Loop
	sup    *adapter.Supervisor
	plane  *control.Plane
	worker lane000.Worker
	// ui carries the UI's lines to the lanes (laneQueue).
	ui    laneQueue
	state control.WorkerState
	out   [][]byte

	// prompts are the prompts written to the live child without a result
	// yet, oldest first.
	prompts []controlPrompt
	// interruptID is the in-band interrupt awaiting the CLI's answer, and
	// interrupted the lane's done for it.
	interruptID string
	interrupted []func(lane000.Result, string)

	run    runState          // lane 001
	w4     worker004         // lane 004
	follow *control.Follower // lane 004's stream to stdout, from the first lane-004 line
}

type controlPrompt struct {
	uuid, requestID string
	// steers is the turn a steer (lane 004's turn/steer) was written into;
	// "" for a turn of its own. The CLI takes a steer into the running
	// turn at its next tool result, and the turn's result names both; a
	// steer still open when its turn ended runs as a turn of its own.
	steers string
}

// Run serves the session until the UI's input ends (or a shutdown signal)
// and the child has exited.
// RunsCLI reports whether the worker starts the Claude Code CLI: not when
// it runs another program under a pty (the command after --).
func (c *ControlUI) RunsCLI(opts session.Options) bool {
	return !c.PTY.On || len(opts.Extra) == 0
}

func (c *ControlUI) Run(ctx context.Context, uiIn io.Reader, uiOut io.Writer, signals <-chan os.Signal) (int, error) {
	c.Defaults()
	if c.PTY.On {
		// After --: the program to run, not the CLI's arguments.
		c.PTY.Command, c.Options.Extra = c.Options.Extra, nil
		return c.runPTY(ctx, uiIn, uiOut, signals)
	}
	opts := c.Options.WithSessionID()
	if _, err := session.BuildArgs(ControlArgs, opts); err != nil {
		return 2, err
	}
	w := &controlWorker{
		cfg:   c,
		log:   c.Logger,
		loop:  adapter.NewLoop(adapter.LoopConfig{MaxLine: c.MaxLine, CLIMaxLine: c.CLIMaxLine, ReuseBlocks: true, Clock: c.Clock, Logger: c.Logger}),
		state: control.WorkerStarting,
	}
	w.worker = lane000.Worker{Team: c.Control.Team, AgentID: c.Control.AgentID, SessionID: opts.ID()}
	w.run.id, w.run.Model, w.run.max = c.Control.RunID, opts.Model, maxTurns(opts.Extra)
	w.sup = w.loop.NewSupervisor(adapter.SupervisorConfig{Child: c.Child, BaseArgs: ControlArgs, Started: w.started})
	plane, err := control.Open(c.Control, c.ControlTimeout, c.Logger, w, w.loop.Submit)
	if err != nil {
		return 2, err
	}
	defer plane.Close()
	w.plane = plane
	w.loadRun() // where the plane keeps runs (--state-dir, --bus)
	// On the bus the worker's events are kept from the start: a gateway
	// may follow its stream before any request.
	w.w4.active = c.Control.Worker004 || c.Control.Bus.On() || plane.Log004().Latest() > 0
	w.endLostTurns()
	// On the bus before the hook: ccbridge serve --bus answers for its
	// workers once the hook has run.
	if err := plane.ServeBus(w.status004); err != nil {
		return 2, fmt.Errorf("--bus: %w", err)
	}
	if c.Hook != nil {
		c.Hook(Lane004{Lane: plane.Lane004(), Log: plane.Log004(), Status: w.status004})
	}
	if err := plane.Listen(); err != nil {
		return 2, err
	}
	// The first line on a control lane says what it takes.
	w.loop.Emit(plane.Lane().CapabilitiesOf(w.worker.SessionID))
	// Then lane 001's: the run's state (paused, when it was at the end of
	// the last ccbridge on this --state-dir).
	w.publishState()
	if _, err := w.sup.Start(opts, opts.Resumes()); err != nil {
		return 1, err
	}
	return w.loop.Run(ctx, w, uiIn, uiOut, signals)
}

// reply writes one lane answer to the UI; any goroutine.
func (w *controlWorker) reply(line []byte) {
	w.loop.Submit(func() { w.loop.Emit(line) })
}

func (w *controlWorker) started(p *adapter.Proc) {
	if sid := p.Opts.ID(); sid != "" {
		w.worker.SessionID = sid
	}
	w.sendInit(p)
	w.setState(control.WorkerIdle, "")
	w.emit()
}

func (w *controlWorker) setState(s control.WorkerState, detail string) {
	if w.state == s && detail == "" {
		return
	}
	w.state = s
	w.out = append(w.out, w.worker.AppendState(nil, string(s), detail, w.loop.Now()))
}

func (w *controlWorker) emit() { w.out = w.loop.EmitAll(w.out) }

// UILine queues the line for the lanes (laneQueue).
func (w *controlWorker) UILine(line []byte) { w.ui.push(w.loop, line, w.take, w.endInput) }

// UIUrgent: an interrupt (lane 000's, lane 004's turn/interrupt) is
// taken even while the CLI's input is held back (adapter.UrgentHandler).
func (w *controlWorker) UIUrgent(line []byte) bool { return urgent(line) }

// urgent reports whether a control line is an interrupt.
func urgent(line []byte) bool {
	r := gjson.GetManyBytes(line, "type", "request.method")
	return r[0].Str == lane000.TypeInterruptRequest || r[1].Str == lane004.MethodTurnInterrupt
}

// take starts one UI line on the loop (lane 004's stream begins with a
// peer's first lane-004 line) and returns its lane's work.
func (w *controlWorker) take(line []byte) func() {
	lane, lane001 := w.plane.Lane(), w.plane.Lane001()
	kind := lanes.Classify(line)
	if kind == lanes.Lane004 && w.follow == nil && w.plane.Log004() != nil {
		// The stream from now: this request's receipt is in it.
		w.follow = w.plane.Follow004(w.plane.Log004().Latest(), func(lines [][]byte) bool {
			out := make([][]byte, len(lines))
			copy(out, lines)
			return w.loop.Submit(func() { w.loop.EmitAll(out) })
		})
	}
	follow := w.follow
	return func() {
		switch kind {
		case lanes.Lane001:
			lane001.Handle(line, stdioPeer{w})
		case lanes.Lane004:
			var rewind func(uint64)
			if follow != nil {
				rewind = follow.Rewind
			}
			if receipt, fresh, _ := w.plane.Lane004().Request(line, rewind); receipt != nil && !fresh {
				w.reply(receipt)
			}
		default:
			lane.Handle(line, w.reply)
		}
	}
}

// endInput: the lanes answered every line and no more come; the CLI's
// input closes, so it finishes what runs and exits.
func (w *controlWorker) endInput() {
	if p := w.sup.Live(); p != nil {
		p.CloseStdin()
	}
}

// laneQueue carries a control dialect's UI lines to its lanes one at a
// time, in order, each handled off the loop (the lanes do file work and
// wait for the loop); once the UI's input has ended and no line is left,
// end runs, once. Owned by the loop.
type laneQueue struct {
	lines    [][]byte
	handling bool
	ended    bool
}

// push queues line and starts the oldest unless one is being handled:
// take runs on the loop and returns the line's work for off the loop.
func (q *laneQueue) push(l *adapter.Loop, line []byte, take func([]byte) func(), end func()) {
	q.lines = append(q.lines, line)
	q.next(l, take, end)
}

// close says no more lines come.
func (q *laneQueue) close(l *adapter.Loop, take func([]byte) func(), end func()) {
	q.ended = true
	q.next(l, take, end)
}

func (q *laneQueue) next(l *adapter.Loop, take func([]byte) func(), end func()) {
	if q.handling {
		return
	}
	if len(q.lines) == 0 {
		if q.ended {
			q.ended = false // once
			end()
		}
		return
	}
	line := q.lines[0]
	q.lines = q.lines[1:]
	q.handling = true
	work := take(line)
	l.Go(func(context.Context) func() {
		work()
		return func() {
			q.handling = false
			q.next(l, take, end)
		}
	})
}

func (w *controlWorker) UITooLong(e *framing.LineTooLongError) {
	w.loop.Emit(lane000.AppendProblem(nil, &lane000.Problem{Ack: lane000.TypeError, Result: lane000.Rejected, Error: "too_large",
		Detail: "line too long: over the " + strconv.FormatInt(e.Max, 10) + "-byte limit (--max-line); use content_ref for large input"}, w.loop.Now()))
}

// UIEnd: no more requests. Once the lane has answered those it has, the
// CLI's input closes; it finishes what runs and exits.
func (w *controlWorker) UIEnd() { w.ui.close(w.loop, w.take, w.endInput) }

func (w *controlWorker) CLITooLong(p *adapter.Proc, e *framing.LineTooLongError) {
	w.log.Warn("a CLI line over --max-cli-line was dropped", "size", e.Size, "max", e.Max)
	if line, ok := mapping.TooLongResult(e.Head, e.Size, e.Max, false); ok {
		w.CLILine(p, line)
	}
}

func (w *controlWorker) CLILine(p *adapter.Proc, line string) {
	defer w.emit()
	ev := mapping.RouteString(line)
	if w.runCLI(p, &ev) {
		return
	}
	defer w.syncState()
	w.items004(&ev)
	if ev.Kind == mapping.KindControlCancelRequest {
		if a, ok := w.w4.approvals[ev.RequestID]; ok {
			w.resolved(ev.RequestID, a, "withdrawn")
		}
	}
	if ev.Kind.ControlRequest() && !p.AutoReply(&ev) && ev.Kind == mapping.KindCanUseTool && !w.approvalRequested(&ev) {
		// Nobody on a control lane answers permission requests.
		p.Write(mapping.AppendDeny(nil, ev.RequestID, mapping.Deny{
			Message: "no one can answer permission requests on a control lane; give the worker --permission-mode or --allowedTools",
		}))
	}
	var ids []string
	switch ev.Kind {
	case mapping.KindSystemInit:
		w.sup.Persisted(ev.SessionID)
		if ev.SessionID != "" && ev.SessionID != w.worker.SessionID {
			w.worker.SessionID = strings.Clone(ev.SessionID) // the line's buffer is reused
		}
		w.loadRun() // --continue: the run's id is known now
		w.setState(control.WorkerRunning, "")
	case mapping.KindResult:
		ids = w.endPrompts(&ev)
		w.promoteSteers()
		w.run.Iter++
		w.saveRun()
	case mapping.KindUserReplay:
		w.steerTaken(ev.Get("uuid").Str)
	case mapping.KindControlResponse:
		if ev.RequestID != "" && ev.RequestID == w.interruptID {
			w.interruptID = ""
			w.sup.Interrupted()
			w.settleInterrupt(lane000.OK, "interrupted")
		}
	}
	w.emit() // the state lines first
	out := w.loop.Out()
	*out = w.worker.AppendCLI(*out, &ev, ids, w.loop.Now())
	if ev.Kind == mapping.KindResult && len(w.prompts) == 0 {
		w.setState(control.WorkerIdle, "")
		w.releaseInput()
	}
}

// endPrompts removes the prompts a result answers and returns their
// control request ids: those the CLI names (user_message_uuids), else the
// oldest.
func (w *controlWorker) endPrompts(ev *mapping.Event) []string {
	var ids []string
	named := ev.Get("user_message_uuids").Array()
	if len(named) == 0 && len(w.prompts) > 0 {
		ids = append(ids, w.prompts[0].requestID)
		if w.prompts[0].steers == "" {
			w.turnEnded(w.prompts[0].uuid, ev)
		}
		w.prompts = w.prompts[1:]
		return compact(ids)
	}
	for _, n := range named {
		for i, p := range w.prompts {
			if p.uuid == n.Str {
				ids = append(ids, p.requestID)
				if p.steers == "" {
					w.turnEnded(p.uuid, ev)
				}
				w.prompts = slices.Delete(w.prompts, i, i+1)
				break
			}
		}
	}
	return compact(ids)
}

// compact drops empty ids (prompts that no request id came with).
func compact(ids []string) []string {
	return slices.DeleteFunc(ids, func(s string) bool { return s == "" })
}

func (w *controlWorker) ChildExited(_ *adapter.Proc, exit session.Exit) {
	defer w.emit()
	now := w.loop.Now()
	for _, p := range w.prompts {
		if p.steers != "" {
			continue // its turn's end says it
		}
		w.out = append(w.out, w.worker.AppendTurnLost(nil, p.requestID, "the CLI exited during the turn: "+exit.String(), now))
		w.turnCompleted(p.uuid, "failed", "the CLI exited during the turn: "+exit.String())
	}
	w.prompts = nil
	for id, a := range w.w4.approvals {
		w.resolved(id, a, "cli_exited")
	}
	w.interruptID = ""
	w.settleInterrupt(lane000.OK, "the CLI exited; nothing runs")
	detail := exit.String()
	if !w.loop.Ending() {
		detail += "; the next input resumes the session"
	}
	w.runExited(exit.Code)
	w.setState(control.WorkerExited, detail)
}

func (w *controlWorker) settleInterrupt(res lane000.Result, detail string) {
	for _, done := range w.interrupted {
		done(res, detail)
	}
	w.interrupted = nil
}

// ControlSessionID implements control.Target.
func (w *controlWorker) ControlSessionID() string { return w.worker.SessionID }

// ControlState implements control.Target.
func (w *controlWorker) ControlState() control.WorkerState { return w.state }

// ControlInject implements control.Target.
func (w *controlWorker) ControlInject(text []byte, interrupt bool, done func(lane000.Result, string)) {
	w.ControlInjectFor("", text, interrupt, done)
}

// ControlInjectFor sends text as one user prompt, interrupting the running
// turn first when asked; the turn that answers it names requestID. While
// the run is paused (lane 001) the prompt waits for resume.
func (w *controlWorker) ControlInjectFor(requestID string, text []byte, interrupt bool, done func(lane000.Result, string)) {
	if (w.run.Paused || len(w.run.heldIn) > 0) && !w.loop.Ending() {
		defer w.emit()
		if p := w.sup.Live(); interrupt && p != nil && len(w.prompts) > 0 {
			w.interrupt(p, nil)
		}
		w.run.heldIn = append(w.run.heldIn, heldInput{requestID: requestID, text: bytes.Clone(text)})
		detail := "held: the run is paused (lane 001); it runs as a turn of its own after resume"
		if !w.run.Paused {
			detail = "queued behind the prompts held by the last pause"
		}
		done(lane000.OK, detail)
		return
	}
	w.inject(requestID, text, interrupt, done)
}

// inject sends text as one user prompt (ControlInjectFor).
func (w *controlWorker) inject(requestID string, text []byte, interrupt bool, done func(lane000.Result, string)) {
	w.sendPrompt(requestID, uuid.NewString(), []mapping.Block{{Kind: mapping.BlockText, Text: string(text)}}, interrupt, done)
}

// send sends blocks as one user prompt whose uuid is id (lane 004's
// turn id), queued behind a running turn.
func (w *controlWorker) send(requestID, id string, blocks []mapping.Block, done func(lane000.Result, string)) {
	w.sendPrompt(requestID, id, blocks, false, done)
}

func (w *controlWorker) sendPrompt(requestID, id string, blocks []mapping.Block, interrupt bool, done func(lane000.Result, string)) {
	defer w.emit()
	defer w.syncState()
	if w.loop.Ending() {
		done(lane000.NotLive, "the worker session is ending")
		return
	}
	if w.sup.Live() == nil && !w.sup.Respawning() {
		opts, resumed := w.sup.ResumeOpts()
		w.setState(control.WorkerStarting, "") // started sets idle
		if _, err := w.sup.Start(opts, resumed); err != nil {
			w.setState(control.WorkerExited, "the CLI could not start: "+err.Error())
			done(lane000.NotLive, "the CLI could not start: "+err.Error())
			return
		}
	}
	w.sup.WhenLive(func(err error) {
		defer w.emit()
		defer w.syncState()
		p := w.sup.Live()
		if err != nil || p == nil {
			done(lane000.NotLive, "no CLI runs")
			return
		}
		detail := "sent"
		if len(w.prompts) > 0 {
			detail = "queued behind the running turn"
			if interrupt {
				w.interrupt(p, nil)
				detail = "sent after an interrupt of the running turn"
			}
		}
		w.prompts = append(w.prompts, controlPrompt{uuid: id, requestID: requestID})
		p.Write(mapping.AppendUserMessage(nil, mapping.UserOptions{UUID: id}, blocks...))
		done(lane000.OK, detail)
		w.turnStarted(id)
	})
}

// ControlInterrupt implements control.Target: the CLI's answer to the
// in-band interrupt is the worker taking it.
func (w *controlWorker) ControlInterrupt(done func(lane000.Result, string)) {
	defer w.emit()
	p := w.sup.Live()
	switch {
	case p == nil:
		done(lane000.NotLive, "no CLI runs")
	case len(w.prompts) == 0:
		done(lane000.OK, "no turn running")
	default:
		w.interrupt(p, done)
	}
}

// interrupt writes an in-band interrupt unless one is awaiting its answer.
func (w *controlWorker) interrupt(p *adapter.Proc, done func(lane000.Result, string)) {
	if done != nil {
		w.interrupted = append(w.interrupted, done)
	}
	if w.interruptID != "" {
		return
	}
	w.interruptID = "ccb-int-" + uuid.NewString()
	p.Write(mapping.AppendInterrupt(nil, w.interruptID, false))
	w.sup.Interrupting(w.cfg.InterruptTimeout, w.interruptTimedOut)
}

// interruptUnanswered is the detail of an interrupt the CLI did not
// answer in time: the turn ended all the same, with the CLI replaced.
const interruptUnanswered = "the CLI did not answer the interrupt; it was restarted"

// interruptTimedOut: the CLI did not answer the interrupt; the session
// goes on in a new child, as in every dialect.
func (w *controlWorker) interruptTimedOut() {
	defer w.emit()
	w.interruptID = ""
	w.log.Warn("interrupt not acknowledged; restarting claude", "timeout", w.cfg.InterruptTimeout)
	now := w.loop.Now()
	for _, p := range w.prompts {
		if p.steers != "" {
			continue
		}
		w.out = append(w.out, w.worker.AppendTurnLost(nil, p.requestID, "interrupted; the CLI did not answer the interrupt and was restarted", now))
		w.turnCompleted(p.uuid, "interrupted", "")
	}
	w.prompts = nil
	w.settleInterrupt(lane000.OK, interruptUnanswered)
	opts, resumed := w.sup.ResumeOpts()
	w.setState(control.WorkerStarting, "restarting after an unanswered interrupt")
	w.sup.Replace("interrupt_timeout", w.cfg.InterruptTimeout, true, opts, resumed, func(error) {})
}

// Interrupt handles SIGINT: the running turn is interrupted.
func (w *controlWorker) Interrupt() {
	defer w.emit()
	if p := w.sup.Live(); p != nil && len(w.prompts) > 0 {
		w.interrupt(p, nil)
	}
}

func (w *controlWorker) Shutdown(string)         {}
func (w *controlWorker) Expire(time.Time)        {}
func (w *controlWorker) NextDeadline() time.Time { return time.Time{} }

// stdioPeer is the UI of the control dialect as a lane-001 peer.
type stdioPeer struct{ w *controlWorker }

func (s stdioPeer) Send(line []byte) { s.w.reply(line) }

func (s stdioPeer) SendOnLoop(line []byte) {
	s.w.emit()
	s.w.loop.Emit(line)
}

// maxTurns is the value of --max-turns among the CLI's extra arguments,
// 0 when absent or not a number.
func maxTurns(extra []string) int {
	n, _ := strconv.Atoi(session.ArgValue(extra, "--max-turns"))
	return max(n, 0)
}
