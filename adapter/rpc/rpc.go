package rpc

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/framing"
	"github.com/ccbridge/ccbridge/internal/payload"
	"github.com/ccbridge/ccbridge/internal/version"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/jsonrpc"
	"github.com/ccbridge/ccbridge/mapping/rpc"
	"github.com/ccbridge/ccbridge/session"
	"github.com/ccbridge/ccbridge/session/clifiles"
)

func init() { adapter.Register("rpc", func() adapter.Dialect { return &RPC{} }) }

// Flags adds the rpc dialect's own flags.
func (s *RPC) Flags(fs *flag.FlagSet) {
	fs.BoolVar(&s.Diagnostics, "diagnostics", false, "report per-call usage and a run summary")
	fs.DurationVar(&s.DedupeWindow, "dedupe-window", 10*time.Minute, "how long a request id is remembered: a retry gets the first answer")
}

// RPC runs one session in the rpc dialect (docs/protocol/rpc.md): JSON-RPC
// 2.0 over NDJSON, the UI protocol of seed 002, on top of one CLI child.
//
// It runs on the session core: a Loop whose goroutine owns every piece of
// state (the translator with its runs, sequence numbers and UI requests
// waiting for answers; the control requests awaiting the CLI's answer;
// the dedupe store; the requests in flight), and one Supervisor for the
// CLI child. Shell commands and session files are read off the loop
// (Loop.Go), so an answer or a cancel never waits behind them.
type RPC struct {
	// Settings: a UI line over MaxLine is refused with -32600; a new
	// session without Options.SessionID gets a fresh one, so its id is
	// known at once; CLIMaxLine defaults to the larger of MaxLine and
	// framing.DefaultMaxLine, so that the CLI's own answers are not
	// dropped (a longer line is reported with runtime.error); after
	// InterruptTimeout a cancelled run's CLI is killed and resumed.
	adapter.Settings

	// Diagnostics sends run.diagnostics (--diagnostics).
	Diagnostics bool
	// DedupeWindow is how long a request id is remembered: a retry with the
	// same id, method and params gets the first answer again and repeats no
	// side effect. Default 10 minutes.
	DedupeWindow time.Duration
	// Version is the server version reported by initialize; default
	// version.String().
	Version string
	// Getenv reads HOME, CLAUDE_CONFIG_DIR and SHELL; nil means
	// os.Getenv, after the Child's own Env entries.
	Getenv func(string) string
}

// rpcCtl is a control request ccbridge wrote to the CLI.
type rpcCtl struct {
	subtype  string
	gen      int
	deadline time.Time
	done     func(resp gjson.Result, err *rpc.Error) // nil: nobody waits
	// refused, when set, takes the CLI's refusal (its error's words)
	// instead of done: for tool.call, where a refusal is an answer.
	refused func(msg string)
}

// rpcInflight is a UI request whose answer comes later.
type rpcInflight struct {
	method string
	cancel func() // stops the work, if it can be stopped
}

// rpcLoop is the rpc dialect's handler: the state of one rpc connection,
// owned by the loop's goroutine.
type rpcLoop struct {
	cfg  *RPC
	log  *slog.Logger
	loop *adapter.Loop
	sup  *adapter.Supervisor
	tr   *rpc.Translator
	out  rpc.Output // lines for the UI (moved to the loop by emit) and the CLI

	baseOpts session.Options // the options the connection started with (model updated by model.set)

	ctl     map[string]*rpcCtl
	nextCtl int

	cliInit     string             // the CLI's initialize answer (raw), "" until it came
	initWaiting bool               // the initialize request is out
	initWaiters []func(*rpc.Error) // initialize requests of the UI waiting for it
	models      string             // the CLI's models (raw array)
	skills      string             // the CLI's reload_skills answer (raw)
	model       string             // the model name in use: --model, model.set, or "default"
	resolved    string             // the model id it resolves to, "" if not known

	heldPrompt  []byte // the held run's user line
	prompts     int    // prompts written to the CLI, for probeTurn
	probing     bool   // probeTurn's request is out
	probeAgain  bool   // a line was dropped while it was out
	sessionRuns map[string]string

	dedupe   *rpcDedupe
	inflight map[string]*rpcInflight
	shells   int
	uiCtx    string // latest ui_context (raw)
	runN     int

	cwd  string // the CLI's working directory, absolute, links resolved
	home string // the CLI's config directory (~/.claude)

	outputs outputCache // shell.exec outputs over the cap, for shell.output
}

// Run serves the connection until the UI's input ends (or a shutdown
// signal) and the child has exited. It returns the last child's exit
// code.
func (s *RPC) Run(ctx context.Context, uiIn io.Reader, uiOut io.Writer, signals <-chan os.Signal) (int, error) {
	if s.DedupeWindow <= 0 {
		s.DedupeWindow = 10 * time.Minute
	}
	s.Defaults()
	if s.Version == "" {
		s.Version = version.String()
	}
	opts := s.Options.WithSessionID()
	if _, err := session.BuildArgs(adapter.CoreArgs, opts); err != nil {
		return 2, err
	}
	l := s.newLoop(opts)
	stop, code, err := s.Begin(l, l.loop, l.sup, opts)
	if err != nil {
		return code, err
	}
	defer stop()
	// Run returns once the background work (the commands) has ended.
	defer l.outputs.close()
	return l.loop.Run(ctx, l, uiIn, uiOut, signals)
}

func (s *RPC) newLoop(opts session.Options) *rpcLoop {
	l := &rpcLoop{
		cfg:     s,
		log:     s.Logger,
		outputs: outputCache{log: s.Logger},
		loop: adapter.NewLoop(adapter.LoopConfig{MaxLine: s.MaxLine, CLIMaxLine: cmp.Or(s.CLIMaxLine, max(s.MaxLine, framing.DefaultMaxLine)),
			Clock: s.Clock, Logger: s.Logger}),
		tr:          rpc.New(rpc.Options{Diagnostics: s.Diagnostics}),
		baseOpts:    opts,
		ctl:         make(map[string]*rpcCtl),
		sessionRuns: make(map[string]string),
		dedupe:      newRPCDedupe(s.DedupeWindow),
		inflight:    make(map[string]*rpcInflight),
		model:       cmp.Or(opts.Model, "default"),
	}
	l.sup = l.loop.NewSupervisor(adapter.SupervisorConfig{Child: s.Child, BaseArgs: adapter.CoreArgs, Getenv: s.Getenv, Started: l.started})
	l.cwd, l.home = l.sup.Dirs()
	return l
}

// getenv reads the child's environment: its Config.Env entries win over
// ccbridge's own.
func (l *rpcLoop) getenv(key string) string {
	return clifiles.Getenv(l.cfg.Child.Env, l.cfg.Getenv, key)
}

// started tells the translator the session id of a new child and asks the
// CLI who it is (initialize), before anything else is written to it.
func (l *rpcLoop) started(p *adapter.Proc) {
	if sid := p.Opts.ID(); sid != "" {
		l.tr.SetSessionID(sid)
	}
	l.initWaiting = true
	l.control("initialize", func(id string) []byte { return mapping.AppendInitialize(nil, id) }, func(resp gjson.Result, err *rpc.Error) {
		l.initWaiting = false
		if err == nil {
			l.cliInit = strings.Clone(resp.Raw)
			if m := resp.Get("models"); m.IsArray() {
				l.models = strings.Clone(m.Raw)
			}
		} else {
			l.log.Warn("the CLI's initialize failed", "err", err.Message)
		}
		wake(&l.initWaiters, err)
	})
}

// CLILine handles one line of the live child.
func (l *rpcLoop) CLILine(p *adapter.Proc, line string) {
	defer l.emit()
	if !gjson.Valid(line) {
		l.log.Warn("the CLI wrote a line that is not JSON", payload.With(l.log, "preview", payload.Preview(line), "size", len(line))...)
		return
	}
	ev := mapping.RouteString(line)
	if ev.Kind.ControlRequest() {
		p.AutoReply(&ev)
	}
	if ev.Kind == mapping.KindControlResponse {
		l.controlResponse(&ev)
		return
	}
	if ev.Kind == mapping.KindSystemInit {
		l.sup.Persisted(ev.SessionID)
		if sid := ev.SessionID; sid != "" {
			if r := l.tr.LastRun(); r != "" {
				l.sessionRuns[strings.Clone(sid)] = r
			}
		}
		if m := ev.Get("model"); m.Type == gjson.String {
			l.resolved = strings.Clone(m.Str)
		}
	}
	l.tr.FromCLI(ev, l.now(), &l.out)
	l.writeCLI()
	if ev.Kind == mapping.KindResult && !l.tr.Draining() {
		l.sup.Interrupted()
		l.sendHeld()
	}
}

// now is the loop's time in Unix milliseconds, the translator's clock.
func (l *rpcLoop) now() int64 { return l.loop.Now().UnixMilli() }

// writeCLI writes the translator's lines for the CLI.
func (l *rpcLoop) writeCLI() {
	if p := l.sup.Live(); p != nil {
		for _, line := range l.out.CLI {
			p.Write(line)
		}
	}
	clear(l.out.CLI)
	l.out.CLI = l.out.CLI[:0]
}

// control writes a control request; done gets the answer, a timeout or the
// child's exit.
func (l *rpcLoop) control(subtype string, build func(reqID string) []byte, done func(gjson.Result, *rpc.Error)) {
	p := l.sup.Live()
	if p == nil {
		if done != nil {
			done(gjson.Result{}, rpc.Internal("the CLI is not running"))
		}
		return
	}
	l.nextCtl++
	id := "ccbridge-" + strconv.Itoa(l.nextCtl)
	l.ctl[id] = &rpcCtl{subtype: subtype, gen: p.Gen, deadline: l.loop.Now().Add(l.cfg.ControlTimeout), done: done}
	p.Write(build(id))
}

// controlRefusable is control for a request whose refusal by the CLI is
// an answer: done gets the CLI's words in refusal, and err only when the
// CLI is not running or did not answer in time.
func (l *rpcLoop) controlRefusable(subtype string, build func(reqID string) []byte, done func(resp gjson.Result, refusal string, err *rpc.Error)) {
	l.control(subtype, build, func(resp gjson.Result, err *rpc.Error) { done(resp, "", err) })
	if c, ok := l.ctl["ccbridge-"+strconv.Itoa(l.nextCtl)]; ok {
		c.refused = func(msg string) { done(gjson.Result{}, msg, nil) }
	}
}

// appendControl builds a control request of body ({"subtype":…}).
func appendControl(reqID, body string) []byte {
	return mapping.AppendControlRequest(nil, reqID, body)
}

// simpleControl builds a control request with only a subtype.
func simpleControl(subtype string) func(string) []byte {
	return func(id string) []byte {
		return mapping.AppendControlRequest(nil, id, `{"subtype":"`+subtype+`"}`)
	}
}

func (l *rpcLoop) controlResponse(ev *mapping.Event) {
	c, ok := l.ctl[ev.RequestID]
	if !ok {
		return // not ours
	}
	delete(l.ctl, ev.RequestID)
	if c.done == nil {
		return
	}
	if ev.IsError {
		msg := ev.Body.Get("error").Str
		if msg == "" {
			msg = c.subtype + " failed"
		}
		if c.refused != nil {
			c.refused(msg)
			return
		}
		c.done(gjson.Result{}, rpc.Internal("the CLI refused "+c.subtype+": "+msg))
		return
	}
	c.done(ev.Body.Get("response"), nil)
}

// failControls fails every control request waiting on child gen.
func (l *rpcLoop) failControls(gen int, why string) {
	for id, c := range l.ctl {
		if c.gen != gen {
			continue
		}
		delete(l.ctl, id)
		if c.done != nil {
			c.done(gjson.Result{}, rpc.Internal(why))
		}
	}
}

// CLITooLong reports a CLI line over the limit (--max-cli-line), which was
// dropped, with runtime.error; the session goes on. A line whose head
// shows it was the turn's result ends the run as that result would have,
// with status error saying the line was too long. While a turn is in
// flight any other line may still have been the result (its head did not
// tell), and nothing else would end its run: the CLI is then asked for its
// state (see probeTurn).
func (l *rpcLoop) CLITooLong(p *adapter.Proc, e *framing.LineTooLongError) {
	defer l.emit()
	l.log.Warn("a CLI line over --max-cli-line was dropped", "size", e.Size, "max", e.Max)
	run := ""
	if l.tr.Busy() && l.tr.Held() == "" {
		run = l.tr.ActiveRun()
	}
	msg := fmt.Sprintf("a CLI line of %d bytes or more is over the %d-byte limit (--max-cli-line); it was dropped", e.Size, e.Max)
	l.out.UI = append(l.out.UI, appendRuntimeError(run, l.tr.SessionID(), rpc.CodeRuntimeInternal, msg, "cli_line_too_long", e.Size, e.Max))
	if line, ok := mapping.TooLongResult(e.Head, e.Size, e.Max, false); ok {
		l.log.Warn("the CLI's result line was over --max-cli-line; the run ends with an error", "size", e.Size, "max", e.Max)
		l.CLILine(p, line)
		return
	}
	if l.tr.Busy() && mapping.SkippedType(e.Head) == "" {
		l.probeTurn(e.Max)
	}
}

// probeTurn asks the CLI whether the turn in flight is still running,
// after a dropped line: a second initialize, which the CLI answers with
// its session_state. "idle" with no result seen means the result was the
// line dropped: the turn is over, its run ends with error and a held run
// goes. One probe is out at a time; a line dropped meanwhile asks again
// once it is answered.
func (l *rpcLoop) probeTurn(limit int64) {
	if l.probing {
		l.probeAgain = true
		return
	}
	l.probing = true
	sent := l.prompts
	l.control("initialize", func(id string) []byte { return mapping.AppendInitialize(nil, id) }, func(resp gjson.Result, err *rpc.Error) {
		l.probing = false
		again := l.probeAgain
		l.probeAgain = false
		switch {
		case err != nil || l.prompts != sent || !l.tr.Busy():
			// The CLI went, or the turn ended, or another one began.
		case resp.Get("session_state").Str == "idle":
			l.log.Warn("the CLI is idle: the line it dropped was the turn's result")
			l.tr.DropTurns("the CLI's result for this run was over the "+strconv.FormatInt(limit, 10)+
				"-byte limit (--max-cli-line) and was dropped", l.now(), &l.out)
			l.sup.Interrupted()
			l.sendHeld()
		case again:
			l.probeTurn(limit)
		}
	})
}

// ChildExited reports a child that exited without being asked to: runs in
// flight end with error, open requests are settled, and the UI hears
// runtime.child_exited. The next run.start (or a method that needs the
// CLI) resumes the session in a new child.
func (l *rpcLoop) ChildExited(p *adapter.Proc, exit session.Exit) {
	defer l.emit()
	msg := "the CLI exited: " + exit.String()
	l.childGone(p.Gen, msg, true)
	if l.loop.Ending() {
		return
	}
	sig := ""
	if exit.Signal != 0 {
		sig = exit.Signal.String()
		if n := session.SignalName(exit.Signal); n != "" {
			sig = n
		}
	}
	l.out.UI = append(l.out.UI, rpc.AppendChildExited(nil, exit.Code, sig, exit.Stderr, l.tr.SessionID(),
		msg+"; the next run.start resumes the session"))
	if l.tr.Held() != "" {
		// A run waits for the CLI: bring it back now.
		opts, resumed := l.sup.ResumeOpts()
		l.respawn("", opts, resumed, false)
	}
}

// childGone settles what depended on child gen, which exited (or is
// being retired): its control requests fail with why, the runs in flight
// end with error (and, when it exited, the open UI requests are settled),
// and nothing more is written to it.
func (l *rpcLoop) childGone(gen int, why string, exited bool) {
	l.failControls(gen, why)
	if exited {
		l.tr.ChildExited(why, l.now(), &l.out)
	} else {
		l.tr.DropTurns(why, l.now(), &l.out)
	}
	clear(l.out.CLI)
	l.out.CLI = l.out.CLI[:0]
}

// respawn retires the live child, if any (see retire), and starts one with
// opts once it has exited; the held run then goes to the new child.
func (l *rpcLoop) respawn(why string, opts session.Options, resumed, kill bool) {
	if p := l.sup.Live(); p != nil {
		l.childGone(p.Gen, why, false)
	}
	within := l.cfg.InterruptTimeout
	if kill {
		within = 0
	}
	l.sup.Replace(why, within, kill, opts, resumed, func(err error) {
		defer l.emit()
		if err != nil {
			if err != adapter.ErrShuttingDown {
				l.spawnFailed(err)
			}
			return
		}
		l.sendHeld()
	})
}

// spawnFailed ends the held run, which waited for a child that could not
// be started.
func (l *rpcLoop) spawnFailed(err error) {
	l.log.Error("starting claude", "err", err)
	if id := l.tr.Held(); id != "" {
		l.tr.CancelRun(id, "the CLI could not be started: "+err.Error(), &l.out) // the run never reached a CLI
		l.heldPrompt = nil
	}
}

// rpcErr is the error of work that waited for a child that did not come.
func (l *rpcLoop) rpcErr(err error) *rpc.Error {
	switch {
	case err != adapter.ErrShuttingDown:
		return &rpc.Error{Code: rpc.CodeSessionLoadFailed, Message: err.Error()}
	case l.loop.UIEnded() && !l.loop.Stopping():
		return rpc.Internal("the UI's input ended")
	}
	return rpc.Internal(err.Error())
}

// sendHeld writes the held run's prompt once the CLI can take it: a child
// runs and no cancelled turn is still draining.
func (l *rpcLoop) sendHeld() {
	id := l.tr.Held()
	p := l.sup.Live()
	if id == "" || p == nil || l.sup.Respawning() || l.tr.Draining() {
		return
	}
	p.Write(l.heldPrompt)
	l.heldPrompt = nil
	l.prompts++
	l.tr.SentPrompt(id)
	if sid := l.tr.SessionID(); sid != "" {
		l.sessionRuns[sid] = id
	}
}

// Expire handles deadlines that have passed.
func (l *rpcLoop) Expire(now time.Time) {
	defer l.emit()
	for id, c := range l.ctl {
		if now.Before(c.deadline) {
			continue
		}
		delete(l.ctl, id)
		l.log.Warn("the CLI did not answer a control request in time", "subtype", c.subtype, "request_id", id)
		if c.done != nil {
			c.done(gjson.Result{}, rpc.Internal("the CLI did not answer "+c.subtype+" within "+l.cfg.ControlTimeout.String()))
		}
	}
	l.dedupe.expire(now)
}

// interruptTimedOut: the cancelled turn did not end in time (the
// supervisor's deadline): the CLI is killed and the session resumed in a
// new one.
func (l *rpcLoop) interruptTimedOut() {
	defer l.emit()
	if !l.tr.Draining() {
		return
	}
	l.log.Warn("the CLI did not end the cancelled turn in time; restarting it", "timeout", l.cfg.InterruptTimeout)
	opts, resumed := l.sup.ResumeOpts()
	l.respawn("the CLI was restarted after an interrupt", opts, resumed, true)
}

func (l *rpcLoop) NextDeadline() time.Time {
	next := l.dedupe.nextExpiry()
	for _, c := range l.ctl {
		next = adapter.Earliest(next, c.deadline)
	}
	return next
}

// Interrupt handles SIGINT: the active run is cancelled, as run.cancel
// does.
func (l *rpcLoop) Interrupt() {
	defer l.emit()
	if id := l.tr.ActiveRun(); id != "" {
		l.cancelRun(id, "interrupted (SIGINT)")
	}
}

// Shutdown ends the held run, whose prompt no CLI will take now (as the
// UI's end of input does); the loop stops the child, and the runs in
// flight end when it exits (ChildExited).
func (l *rpcLoop) Shutdown(reason string) {
	defer l.emit()
	if id := l.tr.Held(); id != "" {
		l.tr.CancelRun(id, "ccbridge is shutting down ("+reason+")", &l.out)
		l.heldPrompt = nil
	}
}

// emit hands the lines for the UI to the loop.
func (l *rpcLoop) emit() { l.out.UI = l.loop.EmitAll(l.out.UI) }

// respond sends the response to a request and remembers it for retries.
func (l *rpcLoop) respond(id string, line []byte) {
	l.out.UI = append(l.out.UI, line)
	l.dedupe.answer(id, line)
}

func (l *rpcLoop) respondErr(id string, e *rpc.Error) {
	l.respond(id, e.AppendResponse(nil, id))
}

// wake empties a list of waiters and calls each with err (nil: go on).
// The list is emptied first, so a waiter may add itself again.
func wake(list *[]func(*rpc.Error), err *rpc.Error) {
	ws := *list
	*list = nil
	for _, w := range ws {
		w(err)
	}
}

// methodRuntimeError is the notification of an error that belongs to no
// request (docs/protocol/rpc.md, "runtime.error").
const methodRuntimeError = "runtime.error"

// appendRuntimeError builds runtime.error {run_id, session_id, error:
// {code, message, data: {reason, size, limit}}}: run_id is the run whose
// turn was in flight, null when none.
func appendRuntimeError(runID, sessionID string, code int, message, reason string, size, limit int64) []byte {
	params := []byte(`{"run_id":null,"session_id":null,"error":{"code":0,"message":"","data":{"reason":"","size":0,"limit":0}}}`)
	if runID != "" {
		params, _ = sjson.SetBytes(params, "run_id", runID)
	}
	if sessionID != "" {
		params, _ = sjson.SetBytes(params, "session_id", sessionID)
	}
	params, _ = sjson.SetBytes(params, "error.code", code)
	params, _ = sjson.SetBytes(params, "error.message", message)
	params, _ = sjson.SetBytes(params, "error.data.reason", reason)
	params, _ = sjson.SetBytes(params, "error.data.size", size)
	params, _ = sjson.SetBytes(params, "error.data.limit", limit)
	return jsonrpc.AppendNotification(nil, methodRuntimeError, string(params))
}
