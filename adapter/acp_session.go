package adapter

import (
	"cmp"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/acp"
	"github.com/ccbridge/ccbridge/mapping/jsonrpc"
	"github.com/ccbridge/ccbridge/session"
)

// acpSession is one ACP session: its CLI child (when running), its
// translator, and the client requests it still owes an answer.
type acpSession struct {
	id    string
	setup acp.SessionSetup
	opts  session.Options // model, mode and extra arguments for the next spawn
	tr    *acp.Translator
	proc  *acpProc

	initResp     string // the CLI's initialize answer (raw), once known
	commandsSent bool

	// pending is the session/new, load or resume request waiting for the
	// CLI's initialize answer, or nil.
	pending *acpSetup

	running *acpTurn    // the prompt the CLI is working on, or nil
	queue   []acpQueued // prompts waiting for it (or for the setup)

	controls map[string]*acpControl // mode and model changes awaiting the CLI, by CLI request id
}

// acpProc is a session's CLI child.
type acpProc struct {
	*cliProc
	sess *acpSession // nil once retired
}

type acpSetup struct {
	id       string // the client's request id (raw JSON)
	method   string
	initID   string // the CLI request id of initialize
	deadline time.Time
}

type acpTurn struct {
	id        string // the session/prompt request id (raw JSON)
	cancelled bool
	deadline  time.Time // after an interrupt: when the child is killed
}

type acpQueued struct {
	id    string
	stdin []byte
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
	if s.pending != nil {
		ds = append(ds, s.pending.deadline)
	}
	if s.running != nil {
		ds = append(ds, s.running.deadline)
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

// setup serves session/new, session/load and session/resume.
func (l *acpLoop) setup(id, method string, params gjson.Result) {
	st, err := acp.ParseSessionSetup(method, params)
	if err != nil {
		l.fail(id, err)
		return
	}
	if method == acp.MethodSessionNew {
		st.SessionID = uuid.NewString()
	} else if s := l.sessions[st.SessionID]; s != nil {
		// The session runs in this connection already: load replays its
		// file, resume has nothing to do.
		if s.pending != nil {
			l.fail(id, acp.InvalidParams(method+": the session is still being set up"))
			return
		}
		if method == acp.MethodSessionLoad {
			if path := l.sessionFile(s.setup.CWD, s.id); path != "" {
				l.replay(s, path)
			}
		}
		l.reply(id, s.tr.Config.AppendSetupResult(nil, ""))
		return
	}
	var path string
	if method != acp.MethodSessionNew {
		path = l.sessionFile(st.CWD, st.SessionID)
		if path == "" {
			l.fail(id, acp.NotFound(method+": no session "+strconv.Quote(st.SessionID)+" for "+st.CWD+" in "+l.claudeDir+"/projects"))
			return
		}
	}
	s := &acpSession{
		id:       st.SessionID,
		setup:    st,
		opts:     l.cfg.Options,
		tr:       acp.NewTranslator(st.SessionID),
		controls: map[string]*acpControl{},
	}
	s.opts.Extra = nil
	if st.MCPConfig != "" {
		s.opts.Extra = append(s.opts.Extra, "--mcp-config="+st.MCPConfig)
	}
	for _, d := range st.AddDirs {
		s.opts.Extra = append(s.opts.Extra, "--add-dir="+d)
	}
	s.opts.Extra = append(s.opts.Extra, l.cfg.Options.Extra...)
	if err := l.spawn(s, method != acp.MethodSessionNew); err != nil {
		l.fail(id, acp.Internal("starting the Claude Code CLI: "+err.Error()))
		return
	}
	l.sessions[s.id] = s
	l.nextCtl++
	s.pending = &acpSetup{id: id, method: method, initID: "ccbridge-init-" + strconv.Itoa(l.nextCtl),
		deadline: time.Now().Add(l.cfg.SetupTimeout)}
	s.proc.write(mapping.AppendInitialize(nil, s.pending.initID))
	if method == acp.MethodSessionLoad {
		l.replay(s, path)
	}
}

// spawn starts the session's child: --resume when the session has a
// file, else --session-id.
func (l *acpLoop) spawn(s *acpSession, resume bool) error {
	opts := s.opts
	if resume {
		opts.Resume = s.id
	} else {
		opts.SessionID = s.id
	}
	args, err := session.BuildArgs(ACPArgs, opts)
	if err != nil {
		return err
	}
	cfg := l.cfg.Child
	cfg.Args = args
	cfg.Dir = s.setup.CWD
	cfg.Logger = l.log.With("session", s.id)
	child, err := session.Start(cfg)
	if err != nil {
		return err
	}
	l.gen++
	p := &acpProc{cliProc: newCLIProc(l.gen, child, l.log), sess: s}
	l.procs[p.gen] = p
	s.proc = p
	l.log.Info("claude started", "session", s.id, "pid", child.Pid(), "gen", p.gen, "resume", resume)
	go readCLI(p.cliProc, cmp.Or(l.cfg.CLIMaxLine, l.cfg.MaxLine), nil, l.cliCh, l.stop)
	return nil
}

// ensureProc makes sure the session has a child, respawning one that died
// or was stopped: --resume when the session file exists.
func (l *acpLoop) ensureProc(s *acpSession) *acp.Error {
	if s.proc != nil {
		return nil
	}
	if err := l.spawn(s, l.sessionFile(s.setup.CWD, s.id) != ""); err != nil {
		return acp.Internal("restarting the Claude Code CLI: " + err.Error())
	}
	return nil
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
	s.tr.Config = acp.ConfigFromInitialize(resp, s.opts.Model, l.allowBypass)
	sid := ""
	if ps.method == acp.MethodSessionNew {
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
	s.queue = append(s.queue, acpQueued{id: id, stdin: mapping.AppendUserMessage(nil, mapping.UserOptions{}, blocks...)})
	l.next(s)
}

// next starts the first queued prompt when the session is idle.
func (l *acpLoop) next(s *acpSession) {
	if s.running != nil || s.pending != nil || len(s.queue) == 0 || l.sessions[s.id] != s {
		return
	}
	q := s.queue[0]
	s.queue = s.queue[1:]
	if err := l.ensureProc(s); err != nil {
		l.fail(q.id, err)
		l.next(s)
		return
	}
	s.running = &acpTurn{id: q.id}
	s.proc.write(q.stdin)
}

// turnEnded answers the running prompt with the result's stop reason.
func (l *acpLoop) turnEnded(s *acpSession, ev *mapping.Event) {
	t := s.running
	if t == nil {
		l.log.Info("a result without a prompt", "session", s.id, "subtype", ev.Subtype)
		return
	}
	s.running = nil
	l.settle(s, true)
	reason, err := acp.TurnOutcome(ev, t.cancelled)
	if err != nil {
		l.fail(t.id, err)
	} else {
		l.reply(t.id, acp.AppendStopResult(nil, reason))
	}
	l.next(s)
}

// cancel serves session/cancel: queued prompts are answered "cancelled"
// at once; the running turn gets an in-band interrupt and is answered
// "cancelled" when its result arrives (or when the child is killed after
// InterruptTimeout). Open permission requests are forgotten: the client
// answers them "cancelled", and the CLI withdraws them.
func (l *acpLoop) cancel(s *acpSession) {
	for _, q := range s.queue {
		l.reply(q.id, acp.AppendStopResult(nil, acp.StopCancelled))
	}
	s.queue = nil
	t := s.running
	if t == nil || t.cancelled {
		return
	}
	t.cancelled = true
	l.settle(s, false)
	if s.proc == nil {
		return
	}
	l.nextCtl++
	s.proc.write(mapping.AppendInterrupt(nil, "ccbridge-interrupt-"+strconv.Itoa(l.nextCtl), false))
	t.deadline = time.Now().Add(l.cfg.InterruptTimeout)
}

// cancelRequest serves $/cancel_request for a prompt (running or queued).
func (l *acpLoop) cancelRequest(s *acpSession, rid string) bool {
	for i, q := range s.queue {
		if q.id == rid {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			l.reply(q.id, acp.AppendStopResult(nil, acp.StopCancelled))
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
		l.reply(q.id, acp.AppendStopResult(nil, acp.StopCancelled))
	}
	s.queue = nil
	if t := s.running; t != nil {
		s.running = nil
		l.reply(t.id, acp.AppendStopResult(nil, acp.StopCancelled))
		if s.proc != nil {
			l.nextCtl++
			s.proc.write(mapping.AppendInterrupt(nil, "ccbridge-interrupt-"+strconv.Itoa(l.nextCtl), false))
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
	l.retire(s, false)
	delete(l.sessions, s.id)
	l.log.Info("session closed", "session", s.id, "reason", why)
}

// retire stops the session's child: in stages, or at once (kill).
func (l *acpLoop) retire(s *acpSession, kill bool) {
	p := s.proc
	if p == nil {
		return
	}
	s.proc = nil
	p.sess = nil
	for cid, c := range s.controls {
		delete(s.controls, cid)
		l.fail(c.clientID, acp.Internal("the CLI was stopped before it answered"))
	}
	if kill {
		p.child.Kill()
		return
	}
	p.stop()
}

// procExited handles a child's exit.
func (l *acpLoop) procExited(p *acpProc, exit session.Exit) {
	delete(l.procs, p.gen)
	s := p.sess
	if s == nil {
		l.log.Info("claude stopped", "gen", p.gen, "code", exit.Code)
		return
	}
	s.proc = nil
	l.log.Info("claude exited", "session", s.id, "gen", p.gen, "code", exit.Code, "signal", exit.Signal)
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
			l.reply(t.id, acp.AppendStopResult(nil, acp.StopCancelled))
		} else {
			l.fail(t.id, &acp.Error{Code: jsonrpc.CodeInternalError,
				Message: "the Claude Code CLI exited during the turn: " + exit.String() + "; the next prompt resumes the session",
				Data:    data})
		}
	}
	if !l.uiEOF && !l.stopping {
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
	if ps := s.pending; ps != nil && !now.Before(ps.deadline) {
		s.pending = nil
		l.fail(ps.id, acp.Internal(fmt.Sprintf("%s: the Claude Code CLI did not answer initialize within %v", ps.method, l.cfg.SetupTimeout)))
		l.retire(s, true)
		l.closeSession(s, "setup timed out")
		return
	}
	if t := s.running; t != nil && !t.deadline.IsZero() && !now.Before(t.deadline) {
		// The CLI did not end the interrupted turn in time: kill it; the
		// next prompt resumes the session in a new child.
		l.log.Warn("interrupt not acknowledged; stopping claude", "session", s.id, "timeout", l.cfg.InterruptTimeout)
		s.running = nil
		l.settle(s, true)
		l.retire(s, true)
		l.reply(t.id, acp.AppendStopResult(nil, acp.StopCancelled))
		l.next(s)
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
	if s.proc == nil {
		l.applyChange(s, configID, value)
		l.answerChange(s, id, config)
		return
	}
	l.nextCtl++
	rid := "ccbridge-" + configID + "-" + strconv.Itoa(l.nextCtl)
	if configID == acp.ConfigMode {
		s.proc.write(mapping.AppendSetPermissionMode(nil, rid, value))
	} else {
		s.proc.write(mapping.AppendSetModel(nil, rid, value))
	}
	s.controls[rid] = &acpControl{clientID: id, configID: configID, value: value, config: config,
		deadline: time.Now().Add(l.cfg.ControlTimeout)}
}

func (l *acpLoop) applyChange(s *acpSession, configID, value string) {
	if configID == acp.ConfigMode {
		s.tr.Config.Mode = value
		s.opts.PermissionMode = value
		return
	}
	s.tr.Config.Model = value
	s.opts.Model = value
	if value == "default" {
		s.opts.Model = ""
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
