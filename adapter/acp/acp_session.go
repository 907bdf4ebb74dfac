package acp

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/adapter/control"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/acp"
	"github.com/ccbridge/ccbridge/mapping/jsonrpc"
	"github.com/ccbridge/ccbridge/mapping/lane000"
	"github.com/ccbridge/ccbridge/session"
)

// acpSession is one ACP session: its Supervisor (which keeps its CLI
// children), its translator, and the client requests it still owes an
// answer.
type acpSession struct {
	id    string
	n     int // the connection's n-th session
	setup acp.SessionSetup
	// mcpFile holds the client's MCP servers for --mcp-config, in the
	// connection's private folder; "" when there are none.
	mcpFile string
	// sup keeps the session's children; sup.Opts (model, mode and extra
	// arguments) are the flags of the next one.
	sup *adapter.Supervisor
	tr  *acp.Translator

	initResp     string // the CLI's initialize answer (raw), once known
	commandsSent bool

	// pending is the session/new, load or resume request waiting for the
	// session file's lookup, the CLI's initialize answer and the replay,
	// or nil.
	pending *acpSetup

	// replaying: session/load's replay is being sent. The child's lines
	// wait in held meanwhile, so that the client sees the whole history
	// first, then what the CLI said (its initialize answer), as when the
	// replay did not share the loop.
	replaying bool
	held      []string

	running *acpTurn    // the prompt the CLI is working on, or nil
	queue   []acpQueued // prompts waiting for it (or for the setup)

	controls map[string]*acpControl // mode and model changes awaiting the CLI, by CLI request id
}

type acpSetup struct {
	id       string // the client's request id (raw JSON)
	method   string
	forkOf   string    // session/fork: the session forked
	initID   string    // the CLI request id of initialize, once the child runs
	deadline time.Time // for the CLI's initialize answer, once the child runs
}

type acpTurn struct {
	id        string // the session/prompt request id (raw JSON); "" for a control lane's prompt
	cancelled bool

	dropped    bool   // a CLI line of the turn was over the limit
	stopReason string // of the model's last message (message_delta)
	// steers are the uuids of the steers written into the turn that no
	// result has named yet: the prompt is answered with the result that
	// answers the last of them.
	steers []string
}

type acpQueued struct {
	id    string // the session/prompt request id; "" for a control lane's prompt (ControlInject)
	stdin []byte
	// took, when set, is told whether the prompt reached the CLI (a
	// control lane's prompt taken at once).
	took func(res lane000.Result, detail string)
}

type acpControl struct {
	clientID string
	configID string // acp.ConfigMode or acp.ConfigModel
	value    string
	config   bool // answer with the config options (set_config_option), else {}
	deadline time.Time
}

func (s *acpSession) deadlines() []time.Time {
	var ds []time.Time
	if s.pending != nil && !s.replaying {
		ds = append(ds, s.pending.deadline)
	}
	for _, c := range s.controls {
		ds = append(ds, c.deadline)
	}
	return ds
}

// sessionFor finds the session a request names, or says why not.
func (l *acpLoop) sessionFor(method string, params gjson.Result) (*acpSession, *acp.Error) {
	id := params.Get("sessionId")
	if id.Type != gjson.String || id.Str == "" {
		return nil, acp.InvalidParams(method + ": sessionId must be a non-empty string")
	}
	s := l.sessions[id.Str]
	if s == nil {
		return nil, acp.NotFound(method + ": no session " + strconv.Quote(id.Str) + " in this connection")
	}
	return s, nil
}

// setup serves session/new, session/load, session/resume and
// session/fork. A session to load, resume or fork is looked up off the
// loop first: without a file that holds a conversation the CLI can
// resume, the request fails before any child starts. A fork is a new
// session (a fresh id) whose CLI starts with --resume <the session>
// --fork-session --session-id <the fork>: it carries the conversation as
// the session's file holds it, and the session goes on unchanged.
func (l *acpLoop) setup(id, method string, params gjson.Result) {
	st, err := acp.ParseSessionSetup(method, params)
	if err != nil {
		l.fail(id, err)
		return
	}
	forkOf := ""
	switch method {
	case acp.MethodSessionNew:
		st.SessionID = uuid.NewString()
	case acp.MethodSessionFork:
		forkOf, st.SessionID = st.SessionID, uuid.NewString()
	}
	if s := l.sessions[st.SessionID]; s != nil && method != acp.MethodSessionNew && method != acp.MethodSessionFork {
		// The session runs in this connection already: load replays its
		// file, resume has nothing to do.
		if s.pending != nil {
			l.fail(id, acp.InvalidParams(method+": the session is still being set up"))
			return
		}
		if method == acp.MethodSessionLoad {
			l.reload(id, s)
			return
		}
		l.reply(id, s.tr.Config.AppendSetupResult(nil, ""))
		return
	}
	s, err := l.newSession(st)
	if err != nil {
		l.fail(id, err)
		return
	}
	s.pending = &acpSetup{id: id, method: method, forkOf: forkOf}
	l.cancellable[id] = func() { l.cancelSetup(s, id) }
	if method == acp.MethodSessionNew {
		l.startSession(s, "")
		return
	}
	lookup := cmp.Or(forkOf, st.SessionID)
	l.loop.Go(func(context.Context) func() {
		path, err := l.findSession(method, st.CWD, lookup)
		return func() {
			defer l.emit()
			l.found(s, path, err)
		}
	})
}

// cancelSetup serves $/cancel_request for session/new, load, resume or
// fork id of session s while it is being set up: the request is answered
// -32800 and the session closed (its child, if one started, is stopped).
func (l *acpLoop) cancelSetup(s *acpSession, id string) {
	ps := s.pending
	if ps == nil || ps.id != id || l.sessions[s.id] != s {
		return
	}
	s.pending = nil
	l.fail(id, errCancelled(ps.method))
	l.closeSession(s, "its setup was cancelled")
}

// sessionStateEnv makes the CLI report system/session_state_changed
// (running, requires_action, idle after each result), as the Agent SDK
// has it do.
const sessionStateEnv = "CLAUDE_CODE_SDK_READS_SESSION_STATE"

// newSession makes session st and its Supervisor, and adds it to the
// connection. The client's MCP servers go to the CLI in a file of the
// connection's private folder, never on its command line: their
// environment and headers hold secrets, and every local user can read a
// process's arguments. The file stays while the session does (each child
// of the session, a respawn included, reads it when it starts).
func (l *acpLoop) newSession(st acp.SessionSetup) (*acpSession, *acp.Error) {
	var mcpFile string
	if st.MCPConfig != "" {
		var err error
		if mcpFile, err = l.private.WriteFile("mcp-*.json", []byte(st.MCPConfig)); err != nil {
			return nil, acp.Internal("passing the MCP servers to the CLI: " + err.Error())
		}
	}
	l.created++
	s := &acpSession{
		n:        l.created,
		mcpFile:  mcpFile,
		id:       st.SessionID,
		setup:    st,
		tr:       acp.NewTranslator(st.SessionID),
		controls: map[string]*acpControl{},
	}
	child := l.cfg.Child
	child.Dir = st.CWD
	child.Logger = l.log.With("session", s.id)
	if l.cfg.childEnv(sessionStateEnv) == "" {
		// The CLI then says when it is idle: the end of a turn whose
		// result line was over the limit.
		child.Env = append(slices.Clip(child.Env), sessionStateEnv+"=1")
	}
	s.sup = l.loop.NewSupervisor(adapter.SupervisorConfig{
		Child:    child,
		BaseArgs: adapter.CoreArgs,
		Logger:   child.Logger,
		// The session files are where session/load finds them (ClaudeDir),
		// and a file without a conversation is not resumable.
		Resumable: func(sid string) error {
			if _, err := l.findSession(acp.MethodSessionResume, st.CWD, sid); err != nil {
				return err
			}
			return nil
		},
	})
	opts := l.cfg.Options
	opts.Extra = nil
	if mcpFile != "" {
		opts.Extra = append(opts.Extra, "--mcp-config="+mcpFile)
	}
	for _, d := range st.AddDirs {
		opts.Extra = append(opts.Extra, "--add-dir="+d)
	}
	opts.Extra = append(opts.Extra, l.cfg.Options.Extra...)
	s.sup.Opts = opts
	l.sessions[s.id] = s
	l.bySup[s.sup] = s
	return s, nil
}

// found goes on with session/load or resume once the session's file was
// looked up (path, or the error for the client).
func (l *acpLoop) found(s *acpSession, path string, err *acp.Error) {
	if l.sessions[s.id] != s {
		return // closed meanwhile; the request was answered then
	}
	ps := s.pending
	switch {
	case err != nil:
		l.fail(ps.id, err)
	case l.loop.Ending():
		l.fail(ps.id, acp.Internal(ps.method+": ccbridge is shutting down"))
	default:
		l.startSession(s, path)
		return
	}
	l.abandon(s)
}

// startSession starts the session's first child (--resume for a session
// that has a file, else --session-id) and sends it initialize; the setup
// request is answered once the CLI has answered and, for session/load,
// the file at path has been replayed.
func (l *acpLoop) startSession(s *acpSession, path string) {
	ps := s.pending
	opts, resumed := s.sup.Opts, false
	switch ps.method {
	case acp.MethodSessionNew:
		opts.SessionID = s.id
	case acp.MethodSessionFork:
		// The fork's file is written with its first turn, as a new
		// session's is (Supervisor.ResumeOpts starts an unsaved fork
		// again as a fork).
		opts.Resume, opts.ForkSession, opts.SessionID = ps.forkOf, true, s.id
	default:
		opts, resumed = opts.ResumeFrom(s.id), true
	}
	p, err := s.sup.Start(opts, resumed)
	if err != nil {
		l.fail(ps.id, startError("starting the Claude Code CLI: ", err))
		l.abandon(s)
		return
	}
	l.nextCtl++
	ps.initID = "ccbridge-init-" + strconv.Itoa(l.nextCtl)
	ps.deadline = l.loop.Now().Add(l.cfg.SetupTimeout)
	p.Write(mapping.AppendInitialize(nil, ps.initID))
	if ps.method == acp.MethodSessionLoad {
		s.replaying = true
		l.replay(s, s.tr, path, func(complete bool) { l.replayed(s, complete) })
	}
}

// replayed goes on with session/load once its replay has been sent: the
// CLI's lines held meanwhile are handled now, in order.
func (l *acpLoop) replayed(s *acpSession, complete bool) {
	if l.sessions[s.id] != s {
		return // the setup failed, or the session was closed: answered then
	}
	if !complete {
		ps := s.pending
		s.pending = nil
		l.fail(ps.id, acp.Internal(ps.method+": ccbridge is shutting down"))
		l.closeSession(s, "shutting down")
		return
	}
	s.replaying = false
	held := s.held
	s.held = nil
	for _, line := range held {
		p := s.sup.Live()
		if p == nil || l.sessions[s.id] != s {
			return
		}
		l.cliLine(s, p, line)
	}
}

// reload serves session/load for a session running in this connection:
// its file is replayed (with a translator of its own: the session's
// serves the running turn), then the request answered.
func (l *acpLoop) reload(id string, s *acpSession) {
	cwd := s.setup.CWD
	l.loop.Go(func(context.Context) func() {
		path := l.sessionFile(cwd, s.id)
		return func() {
			defer l.emit()
			answer := func(complete bool) {
				switch {
				case !complete && l.sessions[s.id] != s:
					l.fail(id, acp.Internal(acp.MethodSessionLoad+": the session was closed"))
				case !complete:
					l.fail(id, acp.Internal(acp.MethodSessionLoad+": ccbridge is shutting down"))
				default:
					l.reply(id, s.tr.Config.AppendSetupResult(nil, ""))
				}
			}
			if path == "" {
				answer(true)
				return
			}
			l.replay(s, acp.NewTranslator(s.id), path, answer)
		}
	})
}

// abandon forgets a session whose setup failed before its child started,
// as if it had never been: the prompts sent for it meanwhile get -32002.
func (l *acpLoop) abandon(s *acpSession) {
	for _, q := range s.queue {
		l.failPrompt(q.id, acp.NotFound(acp.MethodSessionPrompt+": no session "+strconv.Quote(s.id)+" in this connection"))
	}
	s.queue = nil
	s.pending = nil
	l.forget(s)
}

// forget takes a session out of the connection; its children, retired,
// stop on their own.
func (l *acpLoop) forget(s *acpSession) {
	delete(l.sessions, s.id)
	delete(l.bySup, s.sup)
	s.sup.Close()
	if s.mcpFile != "" {
		if err := l.private.RemoveFile(s.mcpFile); err != nil {
			l.log.Warn("removing the session's MCP configuration", "session", s.id, "err", err)
		}
	}
}

// startError is the client's error for a child that could not start.
func startError(what string, err error) *acp.Error {
	msg, _ := strings.CutPrefix(err.Error(), "starting the CLI: ") // the supervisor's words for what is said here
	return acp.Internal(what + msg)
}

// setupDone answers the session/new, load or resume request once the CLI
// answered initialize.
func (l *acpLoop) setupDone(s *acpSession, ev *mapping.Event) {
	ps := s.pending
	s.pending = nil
	if ev.IsError {
		l.fail(ps.id, acp.Internal(ps.method+": the CLI refused initialize: "+ev.Body.Get("error").Str))
		l.closeSession(s, "setup failed")
		return
	}
	resp := ev.Body.Get("response")
	s.initResp = resp.Raw
	s.tr.Config = acp.ConfigFromInitialize(resp, s.sup.Opts.Model, l.allowBypass)
	sid := ""
	if ps.method == acp.MethodSessionNew || ps.method == acp.MethodSessionFork {
		sid = s.id
	}
	l.reply(ps.id, s.tr.Config.AppendSetupResult(nil, sid))
	if resp.Get("commands").IsArray() {
		s.commandsSent = true
		l.out = append(l.out, acp.AppendAvailableCommands(nil, s.id, resp, gjson.Result{}))
	}
	l.log.Info("session ready", "session", s.id, "method", ps.method, "mode", s.tr.Config.Mode)
	l.next(s)
}

// prompt serves session/prompt: the prompt runs now, or after the running
// one (prompts are held by ccbridge, never queued in the CLI, so that a
// cancel answers them at once).
func (l *acpLoop) prompt(id string, params gjson.Result) {
	s, err := l.sessionFor(acp.MethodSessionPrompt, params)
	if err != nil {
		l.fail(id, err)
		return
	}
	blocks, err := acp.PromptBlocks(params.Get("prompt"))
	if err != nil {
		l.fail(id, err)
		return
	}
	if l.loop.Ending() {
		// The queues were answered already; nothing would run this one.
		l.fail(id, acp.Internal(acp.MethodSessionPrompt+": ccbridge is shutting down"))
		return
	}
	s.queue = append(s.queue, acpQueued{id: id, stdin: mapping.AppendUserMessage(nil, mapping.UserOptions{}, blocks...)})
	l.next(s)
}

// steer serves _session/steering, the extension claude-agent-acp and
// codex-acp answer. While a prompt runs, its content blocks are written
// to the CLI at once, as a user message with an id of its own, which the
// CLI takes into the running turn after its next tool result
// ("injected"); the session/prompt is answered once, with the result that
// answers it and every steer: one the CLI had not taken when the turn
// ended runs as a turn of its own, still part of that prompt. With no
// prompt running the content is queued as a prompt no request waits for
// ("startedNewTurn"), or, when the client asked so with
// _meta.steering.idleBehavior "promptRequired", left to the client
// ("promptRequired").
func (l *acpLoop) steer(id string, params gjson.Result) {
	s, err := l.sessionFor(acp.MethodSteering, params)
	if err != nil {
		l.fail(id, err)
		return
	}
	blocks, err := acp.PromptBlocks(params.Get("prompt"))
	if err != nil {
		l.fail(id, err)
		return
	}
	t, p := s.running, s.sup.Live()
	if t == nil || t.cancelled || p == nil {
		if params.Get("_meta.steering.idleBehavior").Str == acp.SteerPromptRequired {
			l.reply(id, acp.AppendSteerResult(nil, acp.SteerPromptRequired))
			return
		}
		s.queue = append(s.queue, acpQueued{stdin: mapping.AppendUserMessage(nil, mapping.UserOptions{}, blocks...)})
		l.reply(id, acp.AppendSteerResult(nil, acp.SteerStartedNewTurn))
		l.next(s)
		return
	}
	steerID := uuid.NewString()
	t.steers = append(t.steers, steerID)
	p.Write(mapping.AppendUserMessage(nil, mapping.UserOptions{UUID: steerID}, blocks...))
	l.reply(id, acp.AppendSteerResult(nil, acp.SteerInjected))
}

// answered drops the steers a result names and reports whether some
// are still to be answered.
func (t *acpTurn) answered(ev *mapping.Event) bool {
	if len(t.steers) == 0 {
		return false
	}
	named := ev.Get("user_message_uuids")
	t.steers = slices.DeleteFunc(t.steers, func(id string) bool {
		found := false
		named.ForEach(func(_, v gjson.Result) bool {
			found = v.Str == id
			return !found
		})
		return found
	})
	return len(t.steers) > 0
}

// next starts the first queued prompt when the session is idle (and no
// rewind is cutting its conversation: the rewind's end calls next).
func (l *acpLoop) next(s *acpSession) {
	if s.running != nil || s.pending != nil || len(s.queue) == 0 || l.sessions[s.id] != s || s.sup.Rewinding() {
		return
	}
	q := s.queue[0]
	s.queue = s.queue[1:]
	// A child that died or was stopped is started again: --resume when
	// the CLI can resume the session (Supervisor.ResumeOpts).
	s.sup.WhenLive(func(err error) {
		if err != nil {
			l.failPrompt(q.id, startError("restarting the Claude Code CLI: ", err))
			if q.took != nil {
				q.took(lane000.NotLive, control.DetailStartFailed+err.Error())
			}
			l.next(s)
			return
		}
		s.running = &acpTurn{id: q.id}
		s.sup.Live().Write(q.stdin)
		if q.took != nil {
			q.took(lane000.OK, control.DetailSent)
		}
	})
}

// turnEnded answers the running prompt with the result's stop reason.
func (l *acpLoop) turnEnded(s *acpSession, ev *mapping.Event) {
	t := s.running
	if t == nil {
		l.log.Info("a result without a prompt", "session", s.id, "subtype", ev.Subtype)
		return
	}
	if !t.cancelled && t.answered(ev) {
		// A steer came too late for this turn: the CLI runs it next, as
		// part of this prompt.
		t.stopReason = ""
		return
	}
	s.running = nil
	s.sup.Interrupted()
	l.settle(s, true)
	reason, err := acp.TurnOutcome(ev, t.cancelled)
	if err != nil {
		l.failPrompt(t.id, err)
	} else {
		l.replyPrompt(t.id, acp.AppendStopResult(nil, reason))
	}
	l.next(s)
}

// resultLost ends the running turn whose result never came (a line over
// the limit) once the CLI is idle: the prompt is answered from the stop
// reason of the model's last message, as the result would have been.
func (l *acpLoop) resultLost(s *acpSession) {
	l.log.Warn("the CLI is idle and the turn's result was not seen (a line over the limit); ending the turn", "session", s.id, "stop_reason", s.running.stopReason)
	line := `{"type":"result","subtype":"success","is_error":false,"stop_reason":` + strconv.Quote(s.running.stopReason) + `}`
	ev := mapping.RouteString(line)
	l.turnEnded(s, &ev)
}

// cancel serves session/cancel: queued prompts are answered "cancelled"
// at once; the running turn gets an in-band interrupt and is answered
// "cancelled" when its result arrives (or when the child is killed after
// InterruptTimeout). Open permission requests are forgotten: the client
// answers them "cancelled", and the CLI withdraws them.
func (l *acpLoop) cancel(s *acpSession) {
	for _, q := range s.queue {
		l.replyPrompt(q.id, acp.AppendStopResult(nil, acp.StopCancelled))
	}
	s.queue = nil
	t := s.running
	if t == nil || t.cancelled {
		return
	}
	t.cancelled = true
	l.settle(s, false)
	p := s.sup.Live()
	if p == nil {
		return
	}
	l.nextCtl++
	p.Write(mapping.AppendInterrupt(nil, "ccbridge-interrupt-"+strconv.Itoa(l.nextCtl), false))
	s.sup.Interrupting(l.cfg.InterruptTimeout, func() { l.interruptTimedOut(s, t) })
}

// interruptTimedOut: the CLI did not end the interrupted turn t in time
// (the supervisor's deadline): it is killed and the prompt answered
// "cancelled"; the next prompt resumes the session in a new child.
func (l *acpLoop) interruptTimedOut(s *acpSession, t *acpTurn) {
	defer l.emit()
	if s.running != t {
		return
	}
	l.log.Warn("interrupt not acknowledged; stopping claude", "session", s.id, "timeout", l.cfg.InterruptTimeout)
	s.running = nil
	l.settle(s, true)
	l.retire(s, "interrupt not acknowledged", true)
	l.replyPrompt(t.id, acp.AppendStopResult(nil, acp.StopCancelled))
	l.next(s)
}

// cancelRequest serves $/cancel_request for a prompt (running or queued).
func (l *acpLoop) cancelRequest(s *acpSession, rid string) bool {
	for i, q := range s.queue {
		if q.id == rid {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			l.replyPrompt(q.id, acp.AppendStopResult(nil, acp.StopCancelled))
			return true
		}
	}
	if s.running != nil && s.running.id == rid {
		q := s.queue
		s.queue = nil
		l.cancel(s)
		s.queue = q
		return true
	}
	return false
}

// closeSession ends a session: prompts are answered "cancelled", open
// requests withdrawn, the child interrupted and stopped in stages.
func (l *acpLoop) closeSession(s *acpSession, why string) {
	for _, q := range s.queue {
		l.replyPrompt(q.id, acp.AppendStopResult(nil, acp.StopCancelled))
	}
	s.queue = nil
	if t := s.running; t != nil {
		s.running = nil
		s.sup.Interrupted()
		l.replyPrompt(t.id, acp.AppendStopResult(nil, acp.StopCancelled))
		if p := s.sup.Live(); p != nil {
			l.nextCtl++
			p.Write(mapping.AppendInterrupt(nil, "ccbridge-interrupt-"+strconv.Itoa(l.nextCtl), false))
		}
	}
	if ps := s.pending; ps != nil {
		s.pending = nil
		l.fail(ps.id, acp.Internal(ps.method+": "+why))
	}
	for cid, c := range s.controls {
		delete(s.controls, cid)
		l.fail(c.clientID, acp.Internal("the session was closed"))
	}
	l.settle(s, true)
	l.retire(s, why, false)
	l.forget(s)
	l.log.Info("session closed", "session", s.id, "reason", why)
}

// retire stops the session's child: in stages, or at once (kill). Its
// output from now on is dropped, and its exit is not reported.
func (l *acpLoop) retire(s *acpSession, why string, kill bool) {
	if s.sup.Retire(why, 0, kill) == nil {
		return
	}
	for cid, c := range s.controls {
		delete(s.controls, cid)
		l.fail(c.clientID, acp.Internal("the CLI was stopped before it answered"))
	}
}

// ChildExited reports a session's child that died on its own (a crash, a
// kill, the end of its input): the open requests are settled, the running
// prompt answered, and the next prompt resumes the session in a new child.
func (l *acpLoop) ChildExited(p *adapter.Proc, exit session.Exit) {
	defer l.emit()
	s := l.bySup[p.Supervisor()]
	if s == nil {
		return
	}
	data := exitData(exit)
	if ps := s.pending; ps != nil {
		s.pending = nil
		l.fail(ps.id, &acp.Error{Code: jsonrpc.CodeInternalError, Message: ps.method + ": the Claude Code CLI exited before the session was ready: " + exit.String(), Data: data})
		l.closeSession(s, "the CLI exited during setup")
		return
	}
	l.settle(s, true)
	for cid, c := range s.controls {
		delete(s.controls, cid)
		l.fail(c.clientID, &acp.Error{Code: jsonrpc.CodeInternalError, Message: "the Claude Code CLI exited before it answered: " + exit.String(), Data: data})
	}
	if t := s.running; t != nil {
		s.running = nil
		if t.cancelled {
			l.replyPrompt(t.id, acp.AppendStopResult(nil, acp.StopCancelled))
		} else {
			l.failPrompt(t.id, &acp.Error{Code: jsonrpc.CodeInternalError,
				Message: "the Claude Code CLI exited during the turn: " + exit.String() + "; the next prompt resumes the session",
				Data:    data})
		}
	}
	if !l.loop.Ending() {
		l.next(s) // queued prompts go on in a resumed child
	}
}

func exitData(exit session.Exit) string {
	b := []byte(`{"exitCode":`)
	b = strconv.AppendInt(b, int64(exit.Code), 10)
	if exit.Signal != 0 {
		b = append(b, `,"signal":`...)
		b = strconv.AppendInt(b, int64(exit.Signal), 10)
	}
	b = append(b, `,"stderr":`...)
	b = gjson.AppendJSONString(b, exit.Stderr)
	return string(append(b, '}'))
}

// expireSession handles a session's passed deadlines.
func (l *acpLoop) expireSession(s *acpSession, now time.Time) {
	if ps := s.pending; ps != nil && !s.replaying && !ps.deadline.IsZero() && !now.Before(ps.deadline) {
		s.pending = nil
		l.fail(ps.id, acp.Internal(fmt.Sprintf("%s: the Claude Code CLI did not answer initialize within %v", ps.method, l.cfg.SetupTimeout)))
		l.retire(s, "setup timed out", true)
		l.closeSession(s, "setup timed out")
		return
	}
	for cid, c := range s.controls {
		if now.Before(c.deadline) {
			continue
		}
		delete(s.controls, cid)
		l.fail(c.clientID, acp.Internal("the Claude Code CLI did not answer the "+c.configID+" change in time"))
	}
}

// setMode serves session/set_mode.
func (l *acpLoop) setMode(id string, params gjson.Result) {
	s, err := l.sessionFor(acp.MethodSetMode, params)
	if err != nil {
		l.fail(id, err)
		return
	}
	mode := params.Get("modeId")
	if mode.Type != gjson.String || !s.tr.Config.HasMode(mode.Str) {
		l.fail(id, acp.InvalidParams("session/set_mode: modeId must be one of the session's availableModes"))
		return
	}
	l.change(s, id, acp.ConfigMode, mode.Str, false)
}

// setConfigOption serves session/set_config_option.
func (l *acpLoop) setConfigOption(id string, params gjson.Result) {
	s, err := l.sessionFor(acp.MethodSetConfigOption, params)
	if err != nil {
		l.fail(id, err)
		return
	}
	cid, v := params.Get("configId").Str, params.Get("value")
	if v.Type != gjson.String {
		l.fail(id, acp.InvalidParams("session/set_config_option: value must be a string (no option is boolean)"))
		return
	}
	switch cid {
	case acp.ConfigMode:
		if !s.tr.Config.HasMode(v.Str) {
			l.fail(id, acp.InvalidParams("session/set_config_option: "+strconv.Quote(v.Str)+" is not one of the mode option's values"))
			return
		}
	case acp.ConfigModel:
		if !s.tr.Config.HasModel(v.Str) {
			l.fail(id, acp.InvalidParams("session/set_config_option: "+strconv.Quote(v.Str)+" is not one of the model option's values"))
			return
		}
	default:
		l.fail(id, acp.InvalidParams("session/set_config_option: unknown configId "+strconv.Quote(cid)+" (mode, model)"))
		return
	}
	l.change(s, id, cid, v.Str, true)
}

// change sets a session's mode or model: through a control request to a
// running CLI (answered when the CLI answers), or, with no CLI running,
// in the flags of the next spawn.
func (l *acpLoop) change(s *acpSession, id, configID, value string, config bool) {
	p := s.sup.Live()
	if p == nil {
		l.applyChange(s, configID, value)
		l.answerChange(s, id, config)
		return
	}
	l.nextCtl++
	rid := "ccbridge-" + configID + "-" + strconv.Itoa(l.nextCtl)
	if configID == acp.ConfigMode {
		p.Write(mapping.AppendSetPermissionMode(nil, rid, value))
	} else {
		p.Write(mapping.AppendSetModel(nil, rid, value))
	}
	s.controls[rid] = &acpControl{clientID: id, configID: configID, value: value, config: config,
		deadline: l.loop.Now().Add(l.cfg.ControlTimeout)}
}

func (l *acpLoop) applyChange(s *acpSession, configID, value string) {
	if configID == acp.ConfigMode {
		s.tr.Config.Mode = value
		s.sup.Opts.PermissionMode = value
		return
	}
	s.tr.Config.Model = value
	s.sup.Opts.Model = value
	if value == "default" {
		s.sup.Opts.Model = ""
	}
}

func (l *acpLoop) answerChange(s *acpSession, id string, config bool) {
	if config {
		l.reply(id, s.tr.Config.AppendSetConfigResult(nil))
	} else {
		l.reply(id, []byte("{}"))
	}
}

// controlResponse handles the CLI's answer to a request ccbridge made.
func (l *acpLoop) controlResponse(s *acpSession, ev *mapping.Event) {
	if ps := s.pending; ps != nil && ev.RequestID == ps.initID {
		l.setupDone(s, ev)
		return
	}
	c := s.controls[ev.RequestID]
	if c == nil {
		return // an interrupt's answer; the result ends the turn
	}
	delete(s.controls, ev.RequestID)
	if ev.IsError {
		msg := ev.Body.Get("error").Str
		if ev.Body.Get("error_code").Str == "invalid_mode" {
			l.fail(c.clientID, acp.InvalidParams(msg))
		} else {
			l.fail(c.clientID, acp.Internal("the Claude Code CLI refused the "+c.configID+" change: "+msg))
		}
		return
	}
	l.applyChange(s, c.configID, c.value)
	l.answerChange(s, c.clientID, c.config)
}
