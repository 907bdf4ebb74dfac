package ipc

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
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/framing"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/ipc"
	"github.com/ccbridge/ccbridge/session"
)

// IPCArgs are the CLI arguments of the ipc dialect, before the session
// options and the user's extra arguments.
var IPCArgs = append(slices.Clip(adapter.CoreArgs), "--replay-user-messages")

func init() { adapter.Register("ipc", func() adapter.Dialect { return &IPC{} }) }

// Flags adds the ipc dialect's own flags.
func (s *IPC) Flags(fs *flag.FlagSet) {
	fs.BoolVar(&s.ForwardUnknown, "forward-unknown", false, `forward CLI messages of unknown types as {"type":"unknown"}`)
	fs.BoolVar(&s.EchoInput, "echo-input", false, `echo each user_message, tool_approval and question_answer the session takes, in order with the other lines, with "echo":true`)
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
	adapter.Settings

	// ForwardUnknown forwards CLI lines of unknown types as "unknown".
	ForwardUnknown bool

	// EchoInput writes each user_message, tool_approval and
	// question_answer the session takes back to the UI (with "echo":
	// true) where it falls among the other lines, so that a UI that
	// replays the stream (the web UI, after a reload, or in a second tab)
	// shows the prompts and knows which requests were answered.
	EchoInput bool
}

// ipcLoop is the ipc dialect's handler: the state of one ipc session,
// owned by the loop's goroutine.
type ipcLoop struct {
	cfg  *IPC
	log  *slog.Logger
	loop *adapter.Loop
	sup  *adapter.Supervisor
	tr   *ipc.Translator
	out  [][]byte // lines to send, moved to the loop by emit

	// prompts are the prompts written to the live child that have no
	// terminal message yet, oldest first (see ipcPrompt).
	prompts []*ipcPrompt

	interruptID string
	deadlines   map[string]time.Time // control requests awaiting the CLI's answer
}

// ipcPrompt is a prompt written to the CLI. Each one gets exactly one
// terminal message, in the order the UI sent them: its own turn's, the
// turn of an earlier prompt it was merged into (marked "merged"), a
// turn_cancelled when the CLI dropped it from its queue, or an error when
// the CLI died or its result was lost. A terminal message known before
// the ones of the prompts ahead of it waits for them.
type ipcPrompt struct {
	id  string // its client uuid, which the CLI echoes
	end []byte // its terminal message, once known (steerEnded: none)
	// steer: a steer message, written into the running turn. The CLI
	// takes it after the turn's next tool result (taken: its replay came,
	// and steer_taken was sent), and the turn's result ends it with no
	// terminal message of its own; a steer not taken when the turn ends
	// runs as a turn of its own and gets that turn's terminal message.
	steer, taken bool
	// completed: the CLI reported it done (command_lifecycle) while an
	// earlier prompt was still open, whose turn it joined.
	completed bool
}

// steerEnded is the end of a steer its turn took: nothing is sent.
var steerEnded = []byte{}

// Run serves the session until the UI's input ends (or a shutdown signal)
// and the child has exited. It returns the last child's exit code.
func (s *IPC) Run(ctx context.Context, uiIn io.Reader, uiOut io.Writer, signals <-chan os.Signal) (int, error) {
	s.Defaults()
	opts := s.Options.WithSessionID()
	if _, err := session.BuildArgs(IPCArgs, opts); err != nil {
		return 2, err
	}
	l := s.newLoop()
	stop, code, err := s.Begin(l, l.loop, l.sup, opts)
	if err != nil {
		return code, err
	}
	defer stop()
	l.emit()
	return l.loop.Run(ctx, l, uiIn, uiOut, signals)
}

func (s *IPC) newLoop() *ipcLoop {
	l := &ipcLoop{
		cfg:       s,
		log:       s.Logger,
		loop:      adapter.NewLoop(adapter.LoopConfig{MaxLine: s.MaxLine, CLIMaxLine: s.CLIMaxLine, ReuseBlocks: true, Clock: s.Clock, Logger: s.Logger}),
		tr:        ipc.New(ipc.Options{ForwardUnknown: s.ForwardUnknown, NewPromptID: uuid.NewString, Echo: s.EchoInput}),
		deadlines: make(map[string]time.Time),
	}
	l.sup = l.loop.NewSupervisor(adapter.SupervisorConfig{Child: s.Child, BaseArgs: IPCArgs, Started: l.started})
	return l
}

// started resets the per-child state and tells the UI the session id.
func (l *ipcLoop) started(p *adapter.Proc) {
	defer l.emit()
	l.endPrompts(nil) // none is open: every way a child goes ends them
	if sid := p.Opts.ID(); sid != "" {
		l.out = l.tr.SetSessionID(sid, l.out)
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
			defer l.emit()
			if err != adapter.ErrShuttingDown {
				l.UILine(line)
				return
			}
			// The session ended before a CLI could take the line: a
			// prompt still gets its terminal message.
			if gjson.GetBytes(line, "type").Str == "user_message" {
				l.echo(ipc.Echo(line))
				l.emitError("shutting_down", "ccbridge is shutting down; the prompt was not sent to the CLI", false)
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
	if cmd.Kind == ipc.CmdSteer && (l.firstOpen() == nil || l.interruptID != "" || l.sup.Live() == nil) {
		l.emitError("no_turn", "steer: no turn is running (or it is being interrupted); send a user_message", true)
		return
	}
	if cmd.Kind == ipc.CmdUserMessage && l.sup.Rewinding() {
		// Refused like a bad line (no echo, no terminal message): the
		// conversation is being cut.
		l.emitError("rewind_"+adapter.RewindBusy, "user_message: a rewind is running; send the prompt after its rewind_result", true)
		return
	}
	l.echo(cmd.Echo)
	l.command(cmd)
}

// echo writes a prompt or an answer the session took back to the UI,
// with --echo-input: the message as the translator read it (Command.Echo,
// ipc.Echo), never the UI's line as it was sent, which a reader that
// keeps another of two duplicated members would take for something else.
func (l *ipcLoop) echo(b []byte) {
	if l.cfg.EchoInput && b != nil {
		l.out = append(l.out, b)
	}
}

// command carries out one valid UI command.
func (l *ipcLoop) command(cmd ipc.Command) {
	switch cmd.Kind {
	case ipc.CmdSessionCommand:
		l.sessionCommand(cmd.Respawn)
		return
	case ipc.CmdRewind:
		l.rewind(cmd.Rewind)
		return
	case ipc.CmdUserMessage, ipc.CmdPermissionMode, ipc.CmdModelChange:
		if l.sup.Live() == nil && !l.respawnForInput() {
			l.tr.Untrack(cmd.RequestID)
			return
		}
	}
	p := l.sup.Live()
	if p == nil && cmd.Kind == ipc.CmdQuery {
		// A query starts no CLI: it asks the one that runs.
		l.out = append(l.out, l.tr.FailQuery(cmd.RequestID, ipc.QueryNoSession, "the CLI is not running; the next user_message starts it"))
		return
	}
	if p == nil {
		// Answers, interrupts and task stops need a live child; without
		// one there is nothing they could reach.
		l.tr.Untrack(cmd.RequestID)
		l.emitError("no_session", fmt.Sprintf("%s: the CLI is not running", cmd.Kind), true)
		return
	}
	switch cmd.Kind {
	case ipc.CmdUserMessage:
		l.prompts = append(l.prompts, &ipcPrompt{id: cmd.PromptID})
	case ipc.CmdSteer:
		l.prompts = append(l.prompts, &ipcPrompt{id: cmd.PromptID, steer: true})
	case ipc.CmdInterrupt:
		if len(l.prompts) == 0 {
			// Nothing runs: the CLI answers an idle interrupt, and no
			// turn needs cancelling.
			break
		}
		l.interruptID = cmd.RequestID
		l.sup.Interrupting(l.cfg.InterruptTimeout, l.interruptTimedOut)
	case ipc.CmdPermissionMode, ipc.CmdModelChange, ipc.CmdStopTask, ipc.CmdQuery:
		l.deadlines[cmd.RequestID] = l.loop.Now().Add(l.cfg.ControlTimeout)
	}
	p.Write(cmd.Stdin)
}

// rewind goes back as r says, between turns only: a prompt still open
// (running or queued) makes it an error rewind_busy. The result is a
// rewind_result, a failure an error rewind_<code> (adapter.Rewind*).
func (l *ipcLoop) rewind(r ipc.Rewind) {
	if len(l.prompts) > 0 {
		l.emitError("rewind_"+adapter.RewindBusy, "rewind: a turn is running; wait for its end or interrupt it", true)
		return
	}
	req := adapter.RewindRequest{Turns: r.Turns, UserMessageID: r.UserMessageID, Files: r.Files, DryRun: r.DryRun}
	l.sup.Rewind(req, func(res adapter.RewindResult, err *adapter.RewindError) {
		defer l.emit()
		if err != nil {
			l.emitError("rewind_"+err.Code, err.Error(), true)
			return
		}
		l.out = append(l.out, ipc.AppendRewindResult(nil, ipc.RewindResult{
			DryRun: res.DryRun, UserMessageID: res.UserMessageID, Prompt: res.Prompt, Turns: res.Turns, Kept: res.Kept,
			Files: res.Files, Insertions: res.Insertions, Deletions: res.Deletions,
		}))
	})
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
	if len(l.prompts) > 0 {
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
	l.endPrompts(nil)
	l.interruptID = ""
	clear(l.deadlines)
	l.out = l.tr.CancelPending(why, l.out)
	l.out = l.tr.FailQueries(ipc.QueryRestarted, "the CLI was replaced ("+why+") before it answered", l.out)
	l.tr.ResetProcess()
	l.sup.Replace(why, l.cfg.InterruptTimeout, false, opts, resumed, func(err error) {
		// A session that ends first starts no child: nothing failed.
		if err != nil && err != adapter.ErrShuttingDown {
			l.emitError("spawn_failed", err.Error(), false)
			l.emit()
		}
	})
}

// CLITooLong reports a CLI line over the limit (--max-cli-line), which was
// dropped, with a line_too_long error. When the line was the turn's result
// the turn still ends: its terminal message says the line was too long.
func (l *ipcLoop) CLITooLong(p *adapter.Proc, e *framing.LineTooLongError) {
	l.emitError("line_too_long", fmt.Sprintf("a CLI line of %d bytes or more is over the %d-byte limit (--max-cli-line); it was dropped", e.Size, e.Max), true)
	l.emit()
	if line, ok := mapping.TooLongResult(e.Head, e.Size, e.Max, false); ok {
		l.log.Warn("the CLI's result line was over --max-cli-line; the turn ends with an error", "size", e.Size, "max", e.Max)
		l.CLILine(p, line)
	}
}

// CLILine handles one line of the live child.
func (l *ipcLoop) CLILine(p *adapter.Proc, line string) {
	ev := mapping.RouteString(line)
	if ev.Kind.Unknown() {
		l.log.Debug("a CLI line of an unknown type", "kind", ev.Kind.String(), "type", ev.Type, "subtype", ev.Subtype, "bytes", len(line))
	}
	if ev.Kind.ControlRequest() {
		p.AutoReply(&ev)
	}
	if ev.Kind == mapping.KindResult {
		l.result(&ev)
	} else {
		// l.out is empty here: every entry point emits before it returns.
		out := l.loop.Out()
		*out = l.tr.AppendCLI(*out, &ev)
	}
	switch ev.Kind {
	case mapping.KindSystemInit:
		l.sup.Persisted(ev.SessionID)
	case mapping.KindResult:
		if len(l.prompts) == 0 && l.interruptID != "" {
			l.sup.Interrupted()
			l.interruptID = ""
		}
	case mapping.KindCommandLifecycle:
		l.lifecycle(&ev)
	case mapping.KindUserReplay:
		l.steerTaken(ev.UUID)
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

// result ends the prompts a result answers: the CLI names them
// (user_message_uuids), several when it merged queued prompts into one
// turn. The first gets the turn's terminal message, each other one a copy
// marked merged. A prompt ahead of them still open cannot be running any
// more: its own result was lost.
func (l *ipcLoop) result(ev *mapping.Event) {
	lines := l.tr.FromCLI(*ev, nil)
	term := lines[len(lines)-1]
	l.out = append(l.out, lines[:len(lines)-1]...)
	ids := ev.Get("user_message_uuids")
	if !ids.IsArray() {
		ids = ev.Get("user_message_uuid")
	}
	first := -1
	for i, p := range l.prompts {
		if p.end != nil || !hasString(ids, p.id) {
			continue
		}
		if p.taken {
			p.end = steerEnded
			continue
		}
		if first < 0 {
			first, p.end = i, term
		} else {
			p.end = ipc.MarkMerged(term)
		}
	}
	// A steer the CLI had not taken when the turn ended runs as a turn of
	// its own: it is a prompt now.
	for _, p := range l.prompts {
		if p.end == nil && p.steer && !p.taken {
			p.steer = false
		}
	}
	switch {
	case first >= 0:
		for _, p := range l.prompts[:first] {
			if p.end == nil {
				p.end = resultLost()
			}
		}
	case ids.Exists():
		// Every prompt it names has its terminal message already.
		l.log.Debug("a result for prompts that were ended already")
	default:
		// A result that names no prompt (none was open, or a CLI that
		// does not echo uuids): it ends the oldest open one.
		if p := l.firstOpen(); p != nil {
			p.end = term
		} else {
			l.out = append(l.out, term)
		}
	}
	l.flushPrompts()
}

// lifecycle follows the CLI's command_lifecycle for the prompts: one the
// CLI dropped from its queue (an interrupt with cancel_queued) gets
// turn_cancelled; one completed without its result seen (the result line
// was over --max-cli-line) gets an error, as its turn is over.
func (l *ipcLoop) lifecycle(ev *mapping.Event) {
	id := ev.Get("command_uuid").Str
	var p *ipcPrompt
	for _, q := range l.prompts {
		if q.end == nil && q.id != "" && q.id == id {
			p = q
			break
		}
	}
	if p == nil {
		return
	}
	switch state := ev.Get("state").Str; state {
	case "completed":
		if q := l.firstOpen(); q != p {
			// It joined the turn of an earlier prompt (a steer, or a
			// prompt the CLI took mid-turn): that turn's result ends it.
			p.completed = true
			return
		}
		p.end = resultLost()
		for _, q := range l.prompts {
			if q.end == nil && q.completed {
				q.end = resultLost()
				if q.taken {
					q.end = steerEnded
				}
			}
		}
	case "cancelled":
		p.end = ipc.AppendQueuedCancelled(nil, ipc.ReasonCancelQueued)
	case "discarded", "refused":
		p.end = ipc.AppendQueuedCancelled(nil, state)
	}
	l.flushPrompts()
}

// steerTaken marks the steer whose replay the CLI wrote (it takes a steer
// into the running turn after the next tool result) and says so.
func (l *ipcLoop) steerTaken(id string) {
	for _, p := range l.prompts {
		if p.steer && !p.taken && p.end == nil && p.id != "" && p.id == id {
			p.taken = true
			l.out = append(l.out, ipc.AppendSteerTaken(nil))
			return
		}
	}
}

// resultLost is the terminal message of a prompt whose turn ended without
// a result ccbridge saw.
func resultLost() []byte {
	return ipc.AppendError(nil, "result_lost", "the CLI ended the turn, but its result line was not seen (a CLI line over --max-cli-line is dropped)", false)
}

func (l *ipcLoop) firstOpen() *ipcPrompt {
	for _, p := range l.prompts {
		if p.end == nil {
			return p
		}
	}
	return nil
}

// flushPrompts sends the terminal messages known, in the order of the
// prompts, up to the first prompt still open.
func (l *ipcLoop) flushPrompts() {
	n := 0
	for _, p := range l.prompts {
		if p.end == nil {
			break
		}
		if len(p.end) > 0 {
			l.out = append(l.out, p.end)
		}
		n++
	}
	clear(l.prompts[:n])
	l.prompts = l.prompts[n:]
	if len(l.prompts) == 0 {
		l.prompts = nil
	}
}

// endPrompts ends every prompt still open: end(i, open) is the terminal
// message of the i-th of them (nil: none can be open).
func (l *ipcLoop) endPrompts(end func(i, open int) []byte) {
	i, open := 0, 0
	for _, p := range l.prompts {
		if p.end == nil && p.taken {
			p.end = steerEnded // its turn's end says it
		}
	}
	for _, p := range l.prompts {
		if p.end == nil {
			open++
		}
	}
	for _, p := range l.prompts {
		if p.end == nil && end != nil {
			p.end = end(i, open)
			i++
		}
		if len(p.end) > 0 {
			l.out = append(l.out, p.end)
		}
	}
	clear(l.prompts)
	l.prompts = nil
}

func hasString(r gjson.Result, s string) bool {
	if s == "" {
		return false
	}
	if !r.IsArray() {
		return r.Str == s
	}
	found := false
	r.ForEach(func(_, v gjson.Result) bool {
		found = v.Str == s
		return !found
	})
	return found
}

// ChildExited reports a child that died on its own. An open turn ends
// with an error carrying the child's last stderr, and so does every
// prompt queued behind it, also after the UI's end of input and during a
// shutdown; the next input respawns it.
func (l *ipcLoop) ChildExited(_ *adapter.Proc, exit session.Exit) {
	defer l.emit()
	ending := l.loop.Ending()
	if ending && len(l.prompts) == 0 {
		return // the CLI finished every prompt and went, as asked
	}
	l.out = l.tr.FailQueries(ipc.QueryCLIExited, "the CLI exited before it answered", l.out)
	for id := range l.deadlines {
		if _, open := l.tr.Outstanding(id); open {
			l.emitError("control_request_failed", "the CLI exited before answering "+id, true)
		}
	}
	if l.interruptID != "" {
		l.emitError("control_request_failed", "the CLI exited before answering "+l.interruptID, true)
	}
	clear(l.deadlines)
	l.interruptID = ""
	l.out = l.tr.CancelPending("child_exited", l.out)
	// One terminal message per prompt: the running one and every queued
	// one the CLI will now never run.
	next := "; the next user_message resumes the session"
	if ending {
		next = ""
	}
	exited := func(msg string, recoverable bool) []byte {
		line := ipc.AppendError(nil, "child_exited", msg, recoverable)
		line, _ = sjson.SetBytes(line, "exit_code", exit.Code)
		line, _ = sjson.SetBytes(line, "stderr", exit.Stderr)
		return line
	}
	if len(l.prompts) == 0 {
		l.out = append(l.out, exited("the CLI exited: "+exit.String()+next, true))
	}
	l.endPrompts(func(i, _ int) []byte {
		if i == 0 {
			return exited("the CLI exited during the turn: "+exit.String()+next, false)
		}
		return exited("the CLI exited before running this queued prompt: "+exit.String(), false)
	})
	l.tr.ResetProcess()
}

// cancelTurns ends the running turn and every queued one with
// turn_cancelled, for turns ccbridge stops itself.
func (l *ipcLoop) cancelTurns(reason string) {
	l.out = l.tr.CancelPending(reason, l.out)
	var lines [][]byte
	l.endPrompts(func(int, int) []byte {
		// The first carries the text streamed so far; CancelTurn then
		// forgets it.
		lines = l.tr.CancelTurn(reason, lines[:0])
		return lines[len(lines)-1]
	})
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
		if l.tr.IsQuery(id) {
			l.out = append(l.out, l.tr.FailQuery(id, ipc.QueryTimeout, "the CLI did not answer in time"))
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
		next = adapter.Earliest(next, at)
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

// UIUrgent: an interrupt is served even while the CLI's input is held
// back (adapter.UrgentHandler): its deadline must run.
func (l *ipcLoop) UIUrgent(line []byte) bool {
	return gjson.GetBytes(line, "type").Str == "interrupt"
}

func (l *ipcLoop) emitError(code, msg string, recoverable bool) {
	l.out = append(l.out, ipc.AppendError(nil, code, msg, recoverable))
}

// emit hands the lines in l.out to the loop.
func (l *ipcLoop) emit() { l.out = l.loop.EmitAll(l.out) }
