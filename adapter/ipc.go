package adapter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/ccbridge/ccbridge/framing"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/ipc"
	"github.com/ccbridge/ccbridge/session"
)

// IPCArgs are the CLI arguments of the ipc dialect, before the session
// options and the user's extra arguments.
var IPCArgs = []string{
	"--output-format", "stream-json",
	"--input-format", "stream-json",
	"--verbose",
	"--include-partial-messages",
	"--permission-prompt-tool", "stdio",
	"--replay-user-messages",
}

// IPC runs one session in the ipc dialect (docs/protocol/ipc.md): the UI
// speaks typed messages with ipc_version 2 and never sees stream-json.
//
// One goroutine, the event loop in Run, owns every piece of session state:
// the translator, the child, the turn count, the deadlines. The UI reader
// and the child's reader only read lines and hand them over, so a control
// message (an interrupt, an answer) never waits behind ordinary work.
type IPC struct {
	// Child says how to start the CLI; its Args are built here from
	// IPCArgs and Options.
	Child session.Config

	// Options are the session flags and extra CLI arguments. A new
	// session without a SessionID gets a fresh one, so that the UI knows
	// the id before the first turn.
	Options session.Options

	// MaxLine caps a line held whole, from either side. Default
	// framing.DefaultMaxLine.
	MaxLine int

	// InterruptTimeout bounds the wait for the CLI to acknowledge an
	// interrupt; then the child is stopped and resumed. Default 5 s.
	InterruptTimeout time.Duration

	// ControlTimeout bounds the wait for the CLI's answer to a model,
	// permission-mode or stop-task request. Default 30 s.
	ControlTimeout time.Duration

	// ForwardUnknown forwards CLI lines of unknown types as "unknown".
	ForwardUnknown bool

	Logger *slog.Logger
}

// ipcLoop is the state of one ipc session, owned by Run's goroutine.
type ipcLoop struct {
	cfg *IPC
	log *slog.Logger
	tr  *ipc.Translator
	ui  *framing.Writer
	out [][]byte // lines to send, moved to pending by emit

	// pending holds whole lines, each ending in '\n', not yet written to
	// the UI. The translator writes streamed deltas straight into it.
	pending []byte

	gen       int
	proc      *cliProc        // the live child, or nil
	startOpts session.Options // the options the session was started with
	persisted bool            // the CLI has a session file to resume
	turns     int             // prompts sent to the live child without a result

	retiring     int              // gen of a child being stopped for a respawn, or 0
	respawnNext  *session.Options // started once the retiring child has exited
	startResumed bool             // whether respawnNext continues a saved session
	queued       [][]byte         // UI lines waiting for that respawn

	interruptID string
	deadlines   map[string]time.Time // control requests awaiting the CLI's answer
	timer       *time.Timer

	uiEOF    bool
	stopping bool
	lastInt  time.Time
	exitCode int

	blocks blockPool // the CLI readers' buffers, reused
	cliCh  chan cliBlock
	uiCh   chan uiLine
	stop   chan struct{}
}

// Run serves the session until the UI's input ends (or a shutdown signal)
// and the child has exited. It returns the last child's exit code.
func (s *IPC) Run(ctx context.Context, uiIn io.Reader, uiOut io.Writer, signals <-chan os.Signal) (int, error) {
	loopDefaults(&s.MaxLine, &s.InterruptTimeout, &s.ControlTimeout, &s.Logger, &s.Child)
	opts := withSessionID(s.Options)
	if _, err := session.BuildArgs(IPCArgs, opts); err != nil {
		return 2, err
	}

	l := &ipcLoop{
		cfg:       s,
		log:       s.Logger,
		tr:        ipc.New(ipc.Options{ForwardUnknown: s.ForwardUnknown}),
		ui:        framing.NewWriter(uiOut),
		deadlines: make(map[string]time.Time),
		timer:     time.NewTimer(time.Hour),
		blocks:    newBlockPool(),
		cliCh:     make(chan cliBlock, cliQueue),
		uiCh:      make(chan uiLine, uiQueue),
		stop:      make(chan struct{}),
	}
	l.timer.Stop()
	defer close(l.stop)
	// A fork has no session file of its own until its first turn.
	if err := l.start(opts, (opts.Resume != "" || opts.Continue) && !opts.ForkSession); err != nil {
		return 1, err
	}
	l.emit()
	if err := l.flush(); err != nil {
		l.log.Warn("writing to the UI", "err", err)
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
			l.blocks.put(m.buf) // fromCLI and the translator kept nothing of it
		case <-l.timer.C:
			l.expire()
		case sig := <-signals:
			l.signal(sig)
		}
		l.armTimer()
		l.emit()
		if len(l.cliCh) == 0 && len(l.uiCh) == 0 {
			if err := l.flush(); err != nil && !l.stopping {
				l.log.Warn("writing to the UI; shutting down", "err", err)
				l.shutdown("the UI's output is gone")
			}
		}
	}
	l.emit()
	return l.exitCode, l.flush()
}

// finished reports whether the session is over: no child, none coming, and
// no more input expected.
func (l *ipcLoop) finished() bool {
	return l.proc == nil && l.retiring == 0 && (l.uiEOF || l.stopping)
}

// start spawns a child with opts. resumed says whether the session already
// has a session file.
func (l *ipcLoop) start(opts session.Options, resumed bool) error {
	child, err := startCLI(l.cfg.Child, IPCArgs, opts)
	if err != nil {
		return err
	}
	l.gen++
	l.proc = newCLIProc(l.gen, child, l.log)
	l.startOpts = opts
	l.persisted = resumed
	l.turns = 0
	l.log.Info("claude started", "pid", child.Pid(), "gen", l.gen, "resume", opts.Resume,
		"continue", opts.Continue, "fork", opts.ForkSession, "session_id", opts.SessionID)
	go readCLI(l.proc, l.cfg.MaxLine, l.blocks, l.cliCh, l.stop)
	switch {
	case opts.SessionID != "":
		l.out = l.tr.SetSessionID(opts.SessionID, l.out)
	case opts.Resume != "" && !opts.ForkSession:
		l.out = l.tr.SetSessionID(opts.Resume, l.out)
	}
	return nil
}

func (l *ipcLoop) fromUI(m uiLine) {
	switch {
	case m.eof:
		l.uiEOF = true
		l.log.Debug("UI input ended")
		if l.proc != nil {
			l.proc.closeStdin()
		}
		l.respawnNext, l.queued = nil, nil
		return
	case m.tooLong != nil:
		l.emitError("line_too_long", fmt.Sprintf("UI line of %d bytes or more is over the %d-byte limit (--max-line); it was dropped", m.tooLong.Size, m.tooLong.Max), true)
		return
	}
	if l.respawnNext != nil {
		// A respawn is under way: keep the line for the new child. Answers
		// and interrupts for the old one are refused by the translator.
		l.queued = append(l.queued, m.line)
		return
	}
	cmd, err := l.tr.FromUI(m.line)
	if err != nil {
		var e *ipc.Error
		if errors.As(err, &e) {
			l.out = append(l.out, e.AppendIPC(nil))
		} else {
			l.emitError("invalid_input", err.Error(), true)
		}
		return
	}
	l.command(cmd)
}

// command carries out one valid UI command.
func (l *ipcLoop) command(cmd ipc.Command) {
	switch cmd.Kind {
	case ipc.CmdSessionCommand:
		l.sessionCommand(cmd.Respawn)
		return
	case ipc.CmdUserMessage, ipc.CmdPermissionMode, ipc.CmdModelChange:
		if l.proc == nil && !l.respawnForInput() {
			l.tr.Untrack(cmd.RequestID)
			return
		}
	}
	if l.proc == nil {
		// Answers, interrupts and task stops need a live child; without
		// one there is nothing they could reach.
		l.tr.Untrack(cmd.RequestID)
		l.emitError("no_session", fmt.Sprintf("%s: the CLI is not running", cmd.Kind), true)
		return
	}
	switch cmd.Kind {
	case ipc.CmdUserMessage:
		l.turns++
	case ipc.CmdInterrupt:
		if l.turns == 0 {
			// Nothing runs: the CLI answers an idle interrupt, and no
			// turn needs cancelling.
			break
		}
		l.interruptID = cmd.RequestID
		l.deadlines[cmd.RequestID] = time.Now().Add(l.cfg.InterruptTimeout)
	case ipc.CmdPermissionMode, ipc.CmdModelChange, ipc.CmdStopTask:
		l.deadlines[cmd.RequestID] = time.Now().Add(l.cfg.ControlTimeout)
	}
	l.proc.write(cmd.Stdin)
}

// respawnForInput restarts a child that died, so that new input reaches
// the same conversation: --resume when the session has a file, else the
// options it was started with. It reports whether a child now runs.
func (l *ipcLoop) respawnForInput() bool {
	opts, resumed := l.resumeOpts()
	if err := l.start(opts, resumed); err != nil {
		l.emitError("spawn_failed", err.Error(), false)
		return false
	}
	return true
}

// sessionCommand replaces the child for new, resume, continue or fork.
func (l *ipcLoop) sessionCommand(r ipc.Respawn) {
	opts := l.cfg.Options
	opts.Resume, opts.Continue, opts.ForkSession, opts.SessionID = "", false, false, ""
	resumed := false
	switch r.Mode {
	case ipc.RespawnNew:
		opts.SessionID = uuid.NewString()
	case ipc.RespawnResume:
		opts.Resume, resumed = r.SessionID, true
	case ipc.RespawnContinue:
		opts.Continue, resumed = true, true
	case ipc.RespawnFork:
		if r.SessionID == "" {
			opts.Continue = true
		} else {
			opts.Resume = r.SessionID
		}
		opts.ForkSession = true
		opts.SessionID = uuid.NewString()
	}
	if _, err := session.BuildArgs(IPCArgs, opts); err != nil {
		l.emitError("invalid_value", "session_command: "+err.Error(), true)
		return
	}
	if l.proc == nil {
		if err := l.start(opts, resumed); err != nil {
			l.emitError("spawn_failed", err.Error(), false)
		}
		return
	}
	if l.turns > 0 {
		// Stop the running turn in band first, so that the session file
		// is complete before the child goes.
		if cmd, err := l.tr.FromUI([]byte(`{"type":"interrupt","cancel_queued":true}`)); err == nil {
			l.proc.write(cmd.Stdin)
			l.tr.Untrack(cmd.RequestID)
		}
		l.cancelTurns("session_command")
	}
	l.retireAndRespawn("session_command", opts, resumed)
}

// retireAndRespawn stops the live child and starts one with opts once it
// has exited.
func (l *ipcLoop) retireAndRespawn(why string, opts session.Options, resumed bool) {
	l.retire(why)
	l.respawnNext = &opts
	l.startResumed = resumed
}

// retire stops the live child; its exit starts respawnNext, if set.
func (l *ipcLoop) retire(why string) {
	p := l.proc
	l.proc = nil
	l.retiring = p.gen
	l.turns = 0
	l.interruptID = ""
	clear(l.deadlines)
	l.out = l.tr.CancelPending(why, l.out)
	l.tr.ResetProcess()
	l.log.Info("stopping claude", "gen", p.gen, "reason", why)
	p.stopWithin(l.cfg.InterruptTimeout)
}

func (l *ipcLoop) fromCLI(m cliBlock) {
	live := l.proc != nil && m.gen == l.proc.gen
	if m.exit != nil {
		l.exitCode = m.exit.Code
		switch {
		case m.gen == l.retiring:
			l.retiring = 0
			l.log.Info("claude stopped", "gen", m.gen, "code", m.exit.Code)
			if next := l.respawnNext; next != nil {
				l.respawnNext = nil
				if err := l.start(*next, l.startResumed); err != nil {
					l.emitError("spawn_failed", err.Error(), false)
				}
				queued := l.queued
				l.queued = nil
				for _, line := range queued {
					l.fromUI(uiLine{line: line})
				}
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
		l.emitError("line_too_long", fmt.Sprintf("a CLI line of %d bytes or more is over the %d-byte limit (--max-line); it was dropped", m.tooLong.Size, m.tooLong.Max), true)
		return
	}
	for line := range blockLines(m.lines) {
		if l.proc == nil || l.proc.gen != m.gen {
			return // the child was retired by an earlier line
		}
		l.fromCLILine(line)
		l.emit()
	}
}

// fromCLILine handles one line of the live child.
func (l *ipcLoop) fromCLILine(line string) {
	ev := mapping.RouteString(line)
	if ev.Kind.Unknown() {
		l.log.Debug("a CLI line of an unknown type", "kind", ev.Kind.String(), "type", ev.Type, "subtype", ev.Subtype, "bytes", len(line))
	}
	if ev.Kind.ControlRequest() {
		if reply, ok := mapping.AppendAutoReply(nil, &ev); ok {
			l.proc.write(reply)
		}
	}
	// l.out is empty here: fromCLI emits after every line.
	l.pending = l.tr.AppendCLI(l.pending, &ev)
	switch ev.Kind {
	case mapping.KindSystemInit:
		l.persisted = true
	case mapping.KindResult:
		if l.turns > 0 {
			l.turns--
		}
		if l.turns == 0 && l.interruptID != "" {
			delete(l.deadlines, l.interruptID)
			l.interruptID = ""
		}
	case mapping.KindControlResponse:
		if _, open := l.tr.Outstanding(ev.RequestID); !open {
			delete(l.deadlines, ev.RequestID)
			if ev.RequestID == l.interruptID {
				l.interruptID = "" // acknowledged; the result follows
			}
		}
	}
}

// childExited reports a child that died on its own. An open turn ends with
// an error carrying the child's last stderr; the next input respawns it.
func (l *ipcLoop) childExited(exit session.Exit) {
	l.proc = nil
	l.log.Info("claude exited", "code", exit.Code, "signal", exit.Signal)
	if l.uiEOF || l.stopping {
		return
	}
	for id := range l.deadlines {
		l.emitError("control_request_failed", "the CLI exited before answering "+id, true)
	}
	clear(l.deadlines)
	l.interruptID = ""
	l.out = l.tr.CancelPending("child_exited", l.out)
	// One terminal message per turn: the running one and every queued
	// one the CLI will now never run.
	msgs := []string{"the CLI exited: " + exit.String() + "; the next user_message resumes the session"}
	if l.turns > 0 {
		msgs[0] = "the CLI exited during the turn: " + exit.String() + "; the next user_message resumes the session"
		for range l.turns - 1 {
			msgs = append(msgs, "the CLI exited before running this queued prompt: "+exit.String())
		}
	}
	for _, msg := range msgs {
		line := ipc.AppendError(nil, "child_exited", msg, l.turns == 0)
		line, _ = sjson.SetBytes(line, "exit_code", exit.Code)
		line, _ = sjson.SetBytes(line, "stderr", exit.Stderr)
		l.out = append(l.out, line)
	}
	l.turns = 0
	l.tr.ResetProcess()
}

// cancelTurns ends the running turn and every queued one with
// turn_cancelled, for turns ccbridge stops itself.
func (l *ipcLoop) cancelTurns(reason string) {
	for range l.turns {
		l.out = l.tr.CancelTurn(reason, l.out)
	}
	l.turns = 0
}

// expire handles deadlines that have passed.
func (l *ipcLoop) expire() {
	now := time.Now()
	for id, at := range l.deadlines {
		if now.Before(at) {
			continue
		}
		delete(l.deadlines, id)
		if _, open := l.tr.Outstanding(id); !open {
			continue
		}
		l.tr.Untrack(id)
		if id != l.interruptID || l.proc == nil {
			l.emitError("control_timeout", "the CLI did not answer "+id+" in time", true)
			continue
		}
		// The CLI did not acknowledge the interrupt: stop it, report the
		// turn cancelled, and resume the session in a new child.
		l.log.Warn("interrupt not acknowledged; restarting claude", "timeout", l.cfg.InterruptTimeout)
		l.cancelTurns("interrupt_timeout")
		opts, resumed := l.resumeOpts()
		l.retireAndRespawn("interrupt_timeout", opts, resumed)
	}
}

// resumeOpts are the options that continue this session in a new child:
// --resume when the session has a file, else the options it was started
// with; resumed says which.
func (l *ipcLoop) resumeOpts() (opts session.Options, resumed bool) {
	opts, resumed = l.startOpts, l.persisted
	if sid := l.tr.SessionID(); l.persisted && sid != "" {
		opts = opts.ResumeFrom(sid)
	}
	return opts, resumed
}

func (l *ipcLoop) armTimer() {
	var next time.Time
	for _, at := range l.deadlines {
		next = earliest(next, at)
	}
	armTimer(l.timer, next)
}

func (l *ipcLoop) signal(sig os.Signal) {
	if why := shutdownReason(sig, &l.lastInt); why != "" {
		l.shutdown(why)
		return
	}
	if cmd, err := l.tr.FromUI([]byte(`{"type":"interrupt"}`)); err == nil {
		l.command(cmd)
	}
}

// shutdown ends the session: no more input is taken, the child is stopped
// in stages.
func (l *ipcLoop) shutdown(why string) {
	if l.stopping {
		return
	}
	l.stopping = true
	l.respawnNext, l.queued = nil, nil
	l.log.Info("shutting down", "reason", why)
	if p := l.proc; p != nil {
		p.stop()
	}
}

func (l *ipcLoop) emitError(code, msg string, recoverable bool) {
	l.out = append(l.out, ipc.AppendError(nil, code, msg, recoverable))
}

// emit moves the lines in l.out to the pending output, which is written
// once 64 KiB are pending; the loop flushes whenever it has nothing more
// to read.
func (l *ipcLoop) emit() {
	for i, line := range l.out {
		if bytes.IndexByte(line, '\n') >= 0 {
			// The translator never builds one (FuzzRoute checks); were
			// it to, the UI's framing would break.
			l.log.Error("dropped an outbound line that holds a line break", "type", gjson.GetBytes(line, "type").Str)
		} else {
			l.pending = append(l.pending, line...)
			l.pending = append(l.pending, '\n')
		}
		l.out[i] = nil
	}
	l.out = l.out[:0]
	if len(l.pending) >= pendingFlush {
		if err := l.flush(); err != nil {
			l.log.Debug("writing to the UI", "err", err)
		}
	}
}

// pendingFlush is how many bytes of whole lines the loop collects before
// writing them without waiting to be idle; pendingKeep is the largest
// buffer it keeps for reuse after one huge line.
const (
	pendingFlush = 64 << 10
	pendingKeep  = 4 << 20
)

// flush writes the pending lines in one write. After a failed write it
// keeps returning that error.
func (l *ipcLoop) flush() error {
	err := l.ui.WriteBlock(l.pending)
	if cap(l.pending) > pendingKeep {
		l.pending = nil
	}
	l.pending = l.pending[:0]
	return err
}
