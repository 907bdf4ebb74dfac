package adapter

import (
	"cmp"
	"context"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/framing"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/rpc"
	"github.com/ccbridge/ccbridge/session"
	"github.com/ccbridge/ccbridge/session/clifiles"
)

// RPCArgs are the CLI arguments of the rpc dialect, before the session
// options and the user's extra arguments.
var RPCArgs = []string{
	"--output-format", "stream-json",
	"--input-format", "stream-json",
	"--verbose",
	"--include-partial-messages",
	"--permission-prompt-tool", "stdio",
}

func init() { Register("rpc", func() Dialect { return &RPC{} }) }

// Flags adds the rpc dialect's own flags.
func (s *RPC) Flags(fs *flag.FlagSet) {
	fs.BoolVar(&s.Diagnostics, "diagnostics", false, "report per-call usage and a run summary")
	fs.DurationVar(&s.DedupeWindow, "dedupe-window", 10*time.Minute, "how long a request id is remembered: a retry gets the first answer")
}

// Runner fills in the common settings.
func (s *RPC) Runner(c DialectConfig) (Runner, error) {
	s.Child, s.Options, s.MaxLine, s.CLIMaxLine = c.Child, c.Options, c.MaxLine, c.CLIMaxLine
	s.InterruptTimeout, s.ControlTimeout, s.Logger = c.InterruptTimeout, c.ControlTimeout, c.Logger
	return s, nil
}

// RPC runs one session in the rpc dialect (docs/protocol/rpc.md): JSON-RPC
// 2.0 over NDJSON, the UI protocol of seed 002, on top of one CLI child.
//
// One goroutine, the event loop in Run, owns every piece of state: the
// translator (runs, their sequence numbers, the UI requests waiting for
// answers), the child, the control requests awaiting the CLI's answer,
// the dedupe store, the requests in flight. The UI reader, the child's
// reader and the background work (shell commands, session files) hand
// their results to the loop over channels, so an answer or a cancel never
// waits behind ordinary work.
type RPC struct {
	// Child says how to start the CLI; its Args are built from RPCArgs
	// and Options.
	Child session.Config
	// Options are the session flags and extra CLI arguments. A new session
	// without a SessionID gets a fresh one, so its id is known at once.
	Options session.Options
	// MaxLine caps a UI line held whole (--max-line); a longer one is
	// refused with -32600. Default framing.DefaultMaxLine. CLI lines are
	// capped at framing.DefaultMaxLine (or MaxLine, if larger): the CLI's
	// own answers must never be dropped.
	MaxLine int
	// CLIMaxLine, when set, caps a CLI line instead.
	CLIMaxLine int
	// InterruptTimeout bounds the wait for a cancelled run's turn to end
	// after the in-band interrupt; then the CLI is killed and resumed in a
	// new process. Default 5 s.
	InterruptTimeout time.Duration
	// ControlTimeout bounds the wait for the CLI's answer to a control
	// request (list_models, set_model, mcp_status, …). Default 30 s.
	ControlTimeout time.Duration
	// Diagnostics sends run.diagnostics (--diagnostics).
	Diagnostics bool
	// DedupeWindow is how long a request id is remembered: a retry with the
	// same id, method and params gets the first answer again and repeats no
	// side effect. Default 10 minutes.
	DedupeWindow time.Duration
	// Version is the server version reported by initialize; default
	// adapter.Version.
	Version string
	// Getenv reads HOME, CLAUDE_CONFIG_DIR and SHELL; nil means
	// os.Getenv, after the Child's own Env entries.
	Getenv func(string) string

	Logger *slog.Logger
}

// rpcCtl is a control request ccbridge wrote to the CLI.
type rpcCtl struct {
	subtype  string
	gen      int
	deadline time.Time
	done     func(resp gjson.Result, err *rpc.Error) // nil: nobody waits
}

// rpcInflight is a UI request whose answer comes later.
type rpcInflight struct {
	method string
	cancel func() // stops the work, if it can be stopped
}

// rpcLoop is the state of one rpc connection, owned by Run's goroutine.
type rpcLoop struct {
	cfg *RPC
	log *slog.Logger
	tr  *rpc.Translator
	out rpc.Output
	ui  *framing.Writer

	gen        int
	proc       *cliProc
	respawning int              // gen of a child killed for a respawn, or 0
	respawn    *session.Options // started once that child has exited
	waiters    []func(*rpc.Error)
	baseOpts   session.Options // the options the connection started with (model updated by model.set)
	liveOpts   session.Options // the options of the live child
	persisted  bool            // the session has a file the CLI can resume

	ctl     map[string]*rpcCtl
	nextCtl int

	cliInit     string             // the CLI's initialize answer (raw), "" until it came
	initWaiting bool               // the initialize request is out
	initWaiters []func(*rpc.Error) // initialize requests of the UI waiting for it
	models      string             // the CLI's models (raw array)
	skills      string             // the CLI's reload_skills answer (raw)
	model       string             // the model name in use: --model, model.set, or "default"
	resolved    string             // the model id it resolves to, "" if not known

	heldPrompt  []byte    // the held run's user line
	drainUntil  time.Time // a cancelled run's turn must end by then
	sessionRuns map[string]string

	dedupe   *rpcDedupe
	inflight map[string]*rpcInflight
	shells   int
	uiCtx    string // latest ui_context (raw)
	runN     int

	cwd  string // the CLI's working directory, absolute, links resolved
	home string // the CLI's config directory (~/.claude)

	lastInt  time.Time
	uiEOF    bool
	stopping bool
	exitCode int
	timer    *time.Timer
	bg       sync.WaitGroup
	bgCount  int

	cliCh   chan cliBlock
	uiCh    chan uiLine
	asyncCh chan func()
	stop    chan struct{}
	ctx     context.Context
	cancel  context.CancelFunc
}

// Run serves the connection until the UI's input ends (or a shutdown
// signal) and the child has exited. It returns the last child's exit
// code.
func (s *RPC) Run(ctx context.Context, uiIn io.Reader, uiOut io.Writer, signals <-chan os.Signal) (int, error) {
	if s.DedupeWindow <= 0 {
		s.DedupeWindow = 10 * time.Minute
	}
	loopDefaults(&s.MaxLine, &s.InterruptTimeout, &s.ControlTimeout, &s.Logger, &s.Child)
	if s.Version == "" {
		s.Version = Version
	}
	opts := withSessionID(s.Options)
	if _, err := session.BuildArgs(RPCArgs, opts); err != nil {
		return 2, err
	}

	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l := &rpcLoop{
		cfg:         s,
		log:         s.Logger,
		tr:          rpc.New(rpc.Options{Diagnostics: s.Diagnostics}),
		ui:          framing.NewWriter(uiOut),
		baseOpts:    opts,
		ctl:         make(map[string]*rpcCtl),
		sessionRuns: make(map[string]string),
		dedupe:      newRPCDedupe(s.DedupeWindow),
		inflight:    make(map[string]*rpcInflight),
		model:       "default",
		timer:       time.NewTimer(time.Hour),
		cliCh:       make(chan cliBlock, cliQueue),
		uiCh:        make(chan uiLine, uiQueue),
		asyncCh:     make(chan func(), 16),
		stop:        make(chan struct{}),
		ctx:         lctx,
		cancel:      cancel,
	}
	if opts.Model != "" {
		l.model = opts.Model
	}
	l.timer.Stop()
	l.resolveDirs()
	defer func() {
		cancel()
		close(l.stop)
		l.bg.Wait()
	}()
	if err := l.start(opts, opts.Resume != "" || opts.Continue); err != nil {
		return 1, err
	}
	go readUI(uiIn, s.MaxLine, l.log, l.uiCh, l.stop)

	done := ctx.Done()
	for !l.finished() {
		select {
		case <-done:
			done = nil
			l.shutdown("context cancelled")
		case m := <-l.uiCh:
			l.fromUI(m)
		case m := <-l.cliCh:
			l.fromCLI(m)
		case fn := <-l.asyncCh:
			fn()
		case <-l.timer.C:
			l.expire()
		case sig := <-signals:
			l.signal(sig)
		}
		l.armTimer()
		if len(l.cliCh) == 0 && len(l.uiCh) == 0 && len(l.asyncCh) == 0 {
			if err := l.flush(); err != nil {
				l.log.Warn("writing to the UI; shutting down", "err", err)
				l.shutdown("the UI's output is gone")
			}
		}
	}
	return l.exitCode, l.flush()
}

// finished reports whether the connection is over: no child, none coming,
// no background work, and no more input expected.
func (l *rpcLoop) finished() bool {
	return l.proc == nil && l.respawning == 0 && l.bgCount == 0 && (l.uiEOF || l.stopping)
}

// resolveDirs finds the CLI's working directory and config directory, for
// the session files and the shell.
func (l *rpcLoop) resolveDirs() {
	dir := l.cfg.Child.Dir
	if dir == "" {
		dir, _ = os.Getwd()
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	l.cwd = dir
	l.home = clifiles.ConfigDir(l.getenv)
}

// getenv reads the child's environment: its Config.Env entries win over
// ccbridge's own.
func (l *rpcLoop) getenv(key string) string {
	return clifiles.Getenv(l.cfg.Child.Env, l.cfg.Getenv, key)
}

// goBG runs work in the background; the function it returns then runs on
// the loop.
func (l *rpcLoop) goBG(work func() func()) {
	l.bgCount++
	l.bg.Add(1)
	go func() {
		defer l.bg.Done()
		fn := work()
		select {
		case l.asyncCh <- func() { l.bgCount--; fn() }:
		case <-l.stop:
		}
	}()
}

// start spawns a child with opts. resumed says whether the session already
// has a file.
func (l *rpcLoop) start(opts session.Options, resumed bool) error {
	child, err := startCLI(l.cfg.Child, RPCArgs, opts)
	if err != nil {
		return err
	}
	l.gen++
	l.proc = newCLIProc(l.gen, child, l.log)
	l.liveOpts = opts
	l.persisted = resumed
	l.log.Info("claude started", "pid", child.Pid(), "gen", l.gen, "resume", opts.Resume,
		"continue", opts.Continue, "fork", opts.ForkSession, "session_id", opts.SessionID)
	go readCLI(l.proc, cmp.Or(l.cfg.CLIMaxLine, max(l.cfg.MaxLine, framing.DefaultMaxLine)), nil, l.cliCh, l.stop)
	switch {
	case opts.SessionID != "":
		l.tr.SetSessionID(opts.SessionID)
	case opts.Resume != "" && !opts.ForkSession:
		l.tr.SetSessionID(opts.Resume)
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
	wake(&l.waiters, nil)
	return nil
}

func (l *rpcLoop) fromCLI(m cliBlock) {
	live := l.proc != nil && m.gen == l.proc.gen
	if m.exit != nil {
		l.exitCode = m.exit.Code
		switch {
		case m.gen == l.respawning:
			l.respawning = 0
			l.log.Info("claude stopped", "gen", m.gen, "code", m.exit.Code)
			if next := l.respawn; next != nil && !l.stopping && !l.uiEOF {
				l.respawn = nil
				if err := l.start(*next, true); err != nil {
					l.spawnFailed(err)
				}
				l.sendHeld()
			}
		case live:
			l.childExited(*m.exit)
		}
		return
	}
	if !live {
		return // a retired child's last words
	}
	if m.tooLong != nil {
		l.log.Warn("a CLI line over --max-line was dropped", "size", m.tooLong.Size, "max", m.tooLong.Max)
		return
	}
	for line := range blockLines(m.lines) {
		if l.proc == nil || l.proc.gen != m.gen {
			return // the child was retired by an earlier line
		}
		l.fromCLILine(line)
	}
}

// fromCLILine handles one line of the live child.
func (l *rpcLoop) fromCLILine(line string) {
	if !gjson.Valid(line) {
		l.log.Warn("the CLI wrote a line that is not JSON", "preview", preview(line))
		return
	}
	ev := mapping.RouteString(line)
	if ev.Kind.ControlRequest() {
		if reply, ok := mapping.AppendAutoReply(nil, &ev); ok {
			l.proc.write(reply)
		}
	}
	if ev.Kind == mapping.KindControlResponse {
		l.controlResponse(&ev)
		return
	}
	if ev.Kind == mapping.KindSystemInit {
		l.persisted = true
		if sid := ev.SessionID; sid != "" {
			if r := l.tr.LastRun(); r != "" {
				l.sessionRuns[strings.Clone(sid)] = r
			}
		}
		if m := ev.Get("model"); m.Type == gjson.String {
			l.resolved = strings.Clone(m.Str)
		}
	}
	l.tr.FromCLI(ev, time.Now().UnixMilli(), &l.out)
	l.writeCLI()
	if ev.Kind == mapping.KindResult && !l.tr.Draining() {
		l.drainUntil = time.Time{}
		l.sendHeld()
	}
}

// writeCLI writes the translator's lines for the CLI.
func (l *rpcLoop) writeCLI() {
	for _, line := range l.out.CLI {
		if l.proc != nil {
			l.proc.write(line)
		}
	}
	clear(l.out.CLI)
	l.out.CLI = l.out.CLI[:0]
}

// control writes a control request; done gets the answer, a timeout or the
// child's exit.
func (l *rpcLoop) control(subtype string, build func(reqID string) []byte, done func(gjson.Result, *rpc.Error)) {
	if l.proc == nil {
		if done != nil {
			done(gjson.Result{}, rpc.Internal("the CLI is not running"))
		}
		return
	}
	l.nextCtl++
	id := "ccbridge-" + strconv.Itoa(l.nextCtl)
	l.ctl[id] = &rpcCtl{subtype: subtype, gen: l.proc.gen, deadline: time.Now().Add(l.cfg.ControlTimeout), done: done}
	l.proc.write(build(id))
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

// childExited reports a child that exited without being asked to: runs in
// flight end with error, open requests are settled, and the UI hears
// runtime.child_exited. The next run.start (or a method that needs the
// CLI) resumes the session in a new child.
func (l *rpcLoop) childExited(exit session.Exit) {
	gen := l.proc.gen
	l.proc = nil
	l.log.Info("claude exited", "code", exit.Code, "signal", exit.Signal)
	msg := "the CLI exited: " + exit.String()
	l.failControls(gen, msg)
	l.tr.ChildExited(msg, time.Now().UnixMilli(), &l.out)
	l.drainUntil = time.Time{}
	clear(l.out.CLI)
	l.out.CLI = l.out.CLI[:0]
	if l.uiEOF || l.stopping {
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
		if err := l.respawnNow(); err != nil {
			l.spawnFailed(err)
		}
		l.sendHeld()
	}
}

// resumeOpts are the options of a new child for the same conversation:
// --resume when the session has a file, else the options it started with.
//
// A CLI killed early may not have written its session file yet (it writes
// it lazily); --resume would then fail at once with "No conversation
// found". In that case the session starts afresh under the same id.
func (l *rpcLoop) resumeOpts() (session.Options, bool) {
	opts := l.liveOpts
	opts.Model = l.baseOpts.Model
	sid := l.tr.SessionID()
	switch {
	case sid == "":
		return opts, false
	case l.persisted && clifiles.Resumable(l.sessionFile(sid)):
		return opts.ResumeFrom(sid), true
	case rpc.ValidSessionID(sid):
		if l.persisted {
			l.log.Warn("the CLI saved nothing of the session; starting it afresh under the same id", "session_id", sid)
		}
		opts.Resume, opts.Continue, opts.ForkSession, opts.SessionID = "", false, false, sid
	}
	return opts, false
}

// respawnNow starts a child for the session when none runs.
func (l *rpcLoop) respawnNow() error {
	if l.proc != nil {
		return nil
	}
	opts, resumed := l.resumeOpts()
	return l.start(opts, resumed)
}

// spawnFailed ends what waited for a child that could not be started.
func (l *rpcLoop) spawnFailed(err error) {
	l.log.Error("starting claude", "err", err)
	if id := l.tr.Held(); id != "" {
		l.tr.CancelRun(id, "", &l.out) // the run never reached a CLI
	}
	wake(&l.waiters, &rpc.Error{Code: rpc.CodeSessionLoadFailed, Message: err.Error()})
}

// withChild runs fn once a child runs: at once, after the respawn under
// way, or after starting one now.
func (l *rpcLoop) withChild(fn func(*rpc.Error)) {
	switch {
	case l.proc != nil:
		fn(nil)
	case l.respawning != 0:
		l.waiters = append(l.waiters, fn)
	case l.stopping:
		fn(rpc.Internal("ccbridge is shutting down"))
	default:
		if err := l.respawnNow(); err != nil {
			fn(&rpc.Error{Code: rpc.CodeSessionLoadFailed, Message: err.Error()})
			return
		}
		fn(nil)
	}
}

// sendHeld writes the held run's prompt once the CLI can take it: a child
// runs and no cancelled turn is still draining.
func (l *rpcLoop) sendHeld() {
	id := l.tr.Held()
	if id == "" || l.proc == nil || l.respawning != 0 || l.tr.Draining() {
		return
	}
	l.proc.write(l.heldPrompt)
	l.heldPrompt = nil
	l.tr.SentPrompt(id)
	if sid := l.tr.SessionID(); sid != "" {
		l.sessionRuns[sid] = id
	}
}

// expire handles deadlines that have passed.
func (l *rpcLoop) expire() {
	now := time.Now()
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
	if !l.drainUntil.IsZero() && !now.Before(l.drainUntil) {
		l.drainUntil = time.Time{}
		if l.tr.Draining() && l.proc != nil {
			l.restartAfterInterrupt()
		}
	}
	l.dedupe.expire(now)
}

// restartAfterInterrupt stops a CLI whose cancelled turn did not end in
// time and resumes the session in a new one.
func (l *rpcLoop) restartAfterInterrupt() {
	l.log.Warn("the CLI did not end the cancelled turn in time; restarting it", "timeout", l.cfg.InterruptTimeout)
	p := l.proc
	opts, resumed := l.resumeOpts()
	l.proc = nil
	l.failControls(p.gen, "the CLI was restarted")
	l.tr.DropTurns("the CLI was restarted after an interrupt", time.Now().UnixMilli(), &l.out)
	if err := p.child.Kill(); err != nil {
		l.log.Debug("killing claude", "err", err)
	}
	l.respawning = p.gen
	if l.uiEOF || l.stopping {
		return // nothing more will come to run in a new one
	}
	if !resumed {
		// Nothing saved to resume: start afresh with the same options.
		l.respawning = 0
		if err := l.start(opts, false); err != nil {
			l.spawnFailed(err)
		}
		l.sendHeld()
		return
	}
	l.respawn = &opts
}

func (l *rpcLoop) armTimer() {
	next := earliest(l.drainUntil, l.dedupe.nextExpiry())
	for _, c := range l.ctl {
		next = earliest(next, c.deadline)
	}
	armTimer(l.timer, next)
}

func (l *rpcLoop) signal(sig os.Signal) {
	if why := shutdownReason(sig, &l.lastInt); why != "" {
		l.shutdown(why)
		return
	}
	if id := l.tr.ActiveRun(); id != "" {
		l.cancelRun(id, "interrupted (SIGINT)")
	}
}

// shutdown ends the connection: no more input is taken, background work
// is cancelled, the child is stopped in stages.
func (l *rpcLoop) shutdown(why string) {
	if l.stopping {
		return
	}
	l.stopping = true
	l.respawn = nil
	l.cancel()
	l.log.Info("shutting down", "reason", why)
	if p := l.proc; p != nil {
		p.stop()
	}
	wake(&l.waiters, rpc.Internal("ccbridge is shutting down"))
}

// flush writes the pending UI lines.
func (l *rpcLoop) flush() error {
	var err error
	l.out.UI, err = flushLines(l.ui, l.out.UI)
	return err
}

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
