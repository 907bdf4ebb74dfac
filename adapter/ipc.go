package adapter

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/tidwall/sjson"

	"github.com/ccbridge/ccbridge/framing"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/ipc"
	"github.com/ccbridge/ccbridge/session"
)

// IPCArgs are the CLI arguments of the ipc dialect, before the session
// options and the user's extra arguments.
var IPCArgs = append(slices.Clip(coreArgs), "--replay-user-messages")

func init() { Register("ipc", func() Dialect { return &IPC{} }) }

// Flags adds the ipc dialect's own flags.
func (s *IPC) Flags(fs *flag.FlagSet) {
	fs.BoolVar(&s.ForwardUnknown, "forward-unknown", false, `forward CLI messages of unknown types as {"type":"unknown"}`)
}

// IPC runs one session in the ipc dialect (docs/protocol/ipc.md): the UI
// speaks typed messages with ipc_version 2 and never sees stream-json.
//
// One goroutine, the event loop in Run, owns every piece of session state:
// the translator, the child, the turn count, the deadlines. The UI reader
// and the child's reader only read lines and hand them over, so a control
// message (an interrupt, an answer) never waits behind ordinary work.
type IPC struct {
	// Settings: a new session without Options.SessionID gets a fresh
	// one, so that the UI knows the id before the first turn; CLIMaxLine
	// defaults to MaxLine.
	Settings

	// ForwardUnknown forwards CLI lines of unknown types as "unknown".
	ForwardUnknown bool
}

// ipcLoop is the ipc dialect's handler: the state of one ipc session,
// owned by the loop's goroutine.
type ipcLoop struct {
	cfg  *IPC
	log  *slog.Logger
	loop *Loop
	sup  *Supervisor
	tr   *ipc.Translator
	out  [][]byte // lines to send, moved to the loop by emit

	turns int // prompts sent to the live child without a result

	interruptID string
	deadlines   map[string]time.Time // control requests awaiting the CLI's answer
}

// Run serves the session until the UI's input ends (or a shutdown signal)
// and the child has exited. It returns the last child's exit code.
func (s *IPC) Run(ctx context.Context, uiIn io.Reader, uiOut io.Writer, signals <-chan os.Signal) (int, error) {
	s.defaults()
	opts := withSessionID(s.Options)
	if _, err := session.BuildArgs(IPCArgs, opts); err != nil {
		return 2, err
	}
	l := s.newLoop()
	// A fork has no session file of its own until its first turn.
	if _, err := l.sup.Start(opts, (opts.Resume != "" || opts.Continue) && !opts.ForkSession); err != nil {
		return 1, err
	}
	l.emit()
	return l.loop.Run(ctx, l, uiIn, uiOut, signals)
}

func (s *IPC) newLoop() *ipcLoop {
	l := &ipcLoop{
		cfg:       s,
		log:       s.Logger,
		loop:      NewLoop(LoopConfig{MaxLine: s.MaxLine, CLIMaxLine: s.CLIMaxLine, ReuseBlocks: true, Clock: s.Clock, Logger: s.Logger}),
		tr:        ipc.New(ipc.Options{ForwardUnknown: s.ForwardUnknown}),
		deadlines: make(map[string]time.Time),
	}
	l.sup = l.loop.NewSupervisor(SupervisorConfig{Child: s.Child, BaseArgs: IPCArgs, Started: l.started})
	return l
}

// started resets the per-child state and tells the UI the session id.
func (l *ipcLoop) started(p *Proc) {
	defer l.emit()
	l.turns = 0
	switch o := p.Opts; {
	case o.SessionID != "":
		l.out = l.tr.SetSessionID(o.SessionID, l.out)
	case o.Resume != "" && !o.ForkSession:
		l.out = l.tr.SetSessionID(o.Resume, l.out)
	}
}

func (l *ipcLoop) UIEnd() {
	if p := l.sup.Live(); p != nil {
		p.CloseStdin()
	}
}

func (l *ipcLoop) UITooLong(e *framing.LineTooLongError) {
	l.emitError("line_too_long", fmt.Sprintf("UI line of %d bytes or more is over the %d-byte limit (--max-line); it was dropped", e.Size, e.Max), true)
	l.emit()
}

func (l *ipcLoop) UILine(line []byte) {
	defer l.emit()
	if l.sup.Respawning() {
		// A respawn is under way: keep the line for the new child. Answers
		// and interrupts for the old one are refused by the translator.
		l.sup.Wait(func(err error) {
			if err != errShuttingDown {
				l.UILine(line)
			}
		})
		return
	}
	cmd, err := l.tr.FromUI(line)
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
		if l.sup.Live() == nil && !l.respawnForInput() {
			l.tr.Untrack(cmd.RequestID)
			return
		}
	}
	p := l.sup.Live()
	if p == nil {
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
		l.sup.Interrupting(l.cfg.InterruptTimeout, l.interruptTimedOut)
	case ipc.CmdPermissionMode, ipc.CmdModelChange, ipc.CmdStopTask:
		l.deadlines[cmd.RequestID] = l.loop.Now().Add(l.cfg.ControlTimeout)
	}
	p.Write(cmd.Stdin)
}

// respawnForInput restarts a child that died, so that new input reaches
// the same conversation. It reports whether a child now runs.
func (l *ipcLoop) respawnForInput() bool {
	opts, resumed := l.sup.ResumeOpts()
	if _, err := l.sup.Start(opts, resumed); err != nil {
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
	if err := l.sup.Check(opts); err != nil {
		l.emitError("invalid_value", "session_command: "+err.Error(), true)
		return
	}
	if opts.Resume != "" {
		// Refused before anything is stopped or started: the CLI would
		// exit at once with "No conversation found".
		if err := l.sup.CheckResume(opts.Resume); err != nil {
			l.emitError("session_not_found", "session_command: "+err.Error(), true)
			return
		}
	}
	p := l.sup.Live()
	if p == nil {
		if _, err := l.sup.Start(opts, resumed); err != nil {
			l.emitError("spawn_failed", err.Error(), false)
		}
		return
	}
	if l.turns > 0 {
		// Stop the running turn in band first, so that the session file
		// is complete before the child goes.
		if cmd, err := l.tr.FromUI([]byte(`{"type":"interrupt","cancel_queued":true}`)); err == nil {
			p.Write(cmd.Stdin)
			l.tr.Untrack(cmd.RequestID)
		}
		l.cancelTurns("session_command")
	}
	l.retireAndRespawn("session_command", opts, resumed)
}

// retireAndRespawn stops the live child and starts one with opts once it
// has exited.
func (l *ipcLoop) retireAndRespawn(why string, opts session.Options, resumed bool) {
	l.turns = 0
	l.interruptID = ""
	clear(l.deadlines)
	l.out = l.tr.CancelPending(why, l.out)
	l.tr.ResetProcess()
	l.sup.Replace(why, l.cfg.InterruptTimeout, false, opts, resumed, func(err error) {
		if err != nil {
			l.emitError("spawn_failed", err.Error(), false)
			l.emit()
		}
	})
}

// CLITooLong reports a CLI line over the limit (--max-cli-line), which was
// dropped, with a line_too_long error. When the line was the turn's result
// the turn still ends: its terminal message says the line was too long.
func (l *ipcLoop) CLITooLong(p *Proc, e *framing.LineTooLongError) {
	l.emitError("line_too_long", fmt.Sprintf("a CLI line of %d bytes or more is over the %d-byte limit (--max-cli-line); it was dropped", e.Size, e.Max), true)
	l.emit()
	if line, ok := tooLongResult(e, false); ok {
		l.log.Warn("the CLI's result line was over --max-cli-line; the turn ends with an error", "size", e.Size, "max", e.Max)
		l.CLILine(p, line)
	}
}

// CLILine handles one line of the live child.
func (l *ipcLoop) CLILine(p *Proc, line string) {
	ev := mapping.RouteString(line)
	if ev.Kind.Unknown() {
		l.log.Debug("a CLI line of an unknown type", "kind", ev.Kind.String(), "type", ev.Type, "subtype", ev.Subtype, "bytes", len(line))
	}
	if ev.Kind.ControlRequest() {
		p.AutoReply(&ev)
	}
	// l.out is empty here: every entry point emits before it returns.
	out := l.loop.Out()
	*out = l.tr.AppendCLI(*out, &ev)
	switch ev.Kind {
	case mapping.KindSystemInit:
		l.sup.Persisted(ev.SessionID)
	case mapping.KindResult:
		if l.turns > 0 {
			l.turns--
		}
		if l.turns == 0 && l.interruptID != "" {
			l.sup.Interrupted()
			l.interruptID = ""
		}
	case mapping.KindControlResponse:
		if _, open := l.tr.Outstanding(ev.RequestID); !open {
			delete(l.deadlines, ev.RequestID)
			if ev.RequestID == l.interruptID {
				l.sup.Interrupted()
				l.interruptID = "" // acknowledged; the result follows
			}
		}
	}
	l.emit()
}

// ChildExited reports a child that died on its own. An open turn ends
// with an error carrying the child's last stderr; the next input respawns
// it.
func (l *ipcLoop) ChildExited(_ *Proc, exit session.Exit) {
	defer l.emit()
	if l.loop.Ending() {
		return
	}
	for id := range l.deadlines {
		l.emitError("control_request_failed", "the CLI exited before answering "+id, true)
	}
	if l.interruptID != "" {
		l.emitError("control_request_failed", "the CLI exited before answering "+l.interruptID, true)
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

// Expire handles the control requests the CLI did not answer in time.
func (l *ipcLoop) Expire(now time.Time) {
	defer l.emit()
	for id, at := range l.deadlines {
		if now.Before(at) {
			continue
		}
		delete(l.deadlines, id)
		if _, open := l.tr.Outstanding(id); !open {
			continue
		}
		l.tr.Untrack(id)
		l.emitError("control_timeout", "the CLI did not answer "+id+" in time", true)
	}
}

// interruptTimedOut: the CLI did not acknowledge the interrupt in time
// (the supervisor's deadline). The turn is reported cancelled, and the
// session goes on in a new child.
func (l *ipcLoop) interruptTimedOut() {
	defer l.emit()
	l.tr.Untrack(l.interruptID)
	l.interruptID = ""
	l.log.Warn("interrupt not acknowledged; restarting claude", "timeout", l.cfg.InterruptTimeout)
	l.cancelTurns("interrupt_timeout")
	opts, resumed := l.sup.ResumeOpts()
	l.retireAndRespawn("interrupt_timeout", opts, resumed)
}

func (l *ipcLoop) NextDeadline() time.Time {
	var next time.Time
	for _, at := range l.deadlines {
		next = earliest(next, at)
	}
	return next
}

// Interrupt handles SIGINT: an interrupt, as if the UI had sent one.
func (l *ipcLoop) Interrupt() {
	if cmd, err := l.tr.FromUI([]byte(`{"type":"interrupt"}`)); err == nil {
		l.command(cmd)
	}
	l.emit()
}

func (l *ipcLoop) Shutdown(string) {}

func (l *ipcLoop) emitError(code, msg string, recoverable bool) {
	l.out = append(l.out, ipc.AppendError(nil, code, msg, recoverable))
}

// emit hands the lines in l.out to the loop.
func (l *ipcLoop) emit() { l.out = l.loop.EmitAll(l.out) }
