package acp

import (
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

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/framing"
	"github.com/ccbridge/ccbridge/internal/payload"
	"github.com/ccbridge/ccbridge/internal/version"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/acp"
	"github.com/ccbridge/ccbridge/mapping/jsonrpc"
	"github.com/ccbridge/ccbridge/session"
	"github.com/ccbridge/ccbridge/session/clifiles"
)

func init() { adapter.Register("acp", func() adapter.Dialect { return &ACP{} }) }

// Flags adds the acp dialect's own flags.
func (a *ACP) Flags(fs *flag.FlagSet) {
	fs.DurationVar(&a.SetupTimeout, "setup-timeout", 60*time.Second, "wait this long for the CLI to answer initialize during session/new, load and resume")
}

// ACP runs ccbridge as an Agent Client Protocol v1 agent
// (docs/protocol/acp.md): JSON-RPC 2.0 over NDJSON on the UI side, any
// number of ACP sessions, each with its own CLI child.
//
// It runs on the session core: one Loop for the connection, whose
// goroutine owns every piece of state (the sessions, the requests ccbridge
// sent the client, the deadlines), and one Supervisor per ACP session for
// its children. The client's reader and the children's readers only hand
// lines to the loop, and the session files are read in the background
// (Loop.Go), so a session/cancel or a permission answer never waits behind
// ordinary work or a long replay.
type ACP struct {
	// Settings: Child's Args and Dir are set per session; of Options,
	// Model, PermissionMode and Extra apply to every session, and Resume,
	// Continue, ForkSession and SessionID are ignored (the client picks
	// sessions with session/new, load and resume); MaxLine also caps a
	// session file's line; a CLI line over CLIMaxLine (default MaxLine)
	// is reported with the _ccbridge/error notification; after
	// InterruptTimeout a cancelled turn's child is killed, the prompt
	// answered "cancelled" and the next prompt resumes the session in a
	// new child.
	adapter.Settings

	// SetupTimeout bounds the wait for the CLI's answer to initialize
	// during session/new, load and resume. Default 60 s.
	SetupTimeout time.Duration

	// ClaudeDir is the CLI's configuration folder, whose projects/ holds the
	// session files (session/load, list, resume). Default:
	// $CLAUDE_CONFIG_DIR, else $HOME/.claude, read from Child.Env first and
	// then from ccbridge's environment.
	ClaudeDir string
}

// acpLoop is the acp dialect's handler: the state of one ACP connection,
// owned by the loop's goroutine.
type acpLoop struct {
	cfg  *ACP
	log  *slog.Logger
	loop *adapter.Loop
	out  [][]byte // lines to send, moved to the loop by emit

	initialized bool
	caps        acp.ClientCaps
	allowBypass bool
	claudeDir   string // read by background work too: set once, before Run

	// private holds the files given to the CLI that no other user may
	// read (the MCP servers); removed when Run returns.
	private *session.PrivateDir

	sessions map[string]*acpSession
	bySup    map[*adapter.Supervisor]*acpSession
	created  int                         // sessions made so far
	reqs     jsonrpc.Pending[*acpOutReq] // agent → client requests awaiting their answer
	nextCtl  int

	// cancellable: the client's requests still owed an answer that
	// $/cancel_request can cancel (besides prompts, which cancel as
	// session/cancel does): session setups and background work, by
	// request id (raw JSON). Each entry answers -32800 and drops the work;
	// reply and fail take an answered id out.
	cancellable map[string]func()
}

// acpOutReq is a request ccbridge sent the client for a CLI request.
type acpOutReq struct {
	sess *acpSession
	gen  int // the child the CLI request came from
	p    *acp.Pending
}

// Run serves the connection until the client's input ends (or a shutdown
// signal) and every child has exited and every file read has ended.
func (a *ACP) Run(ctx context.Context, uiIn io.Reader, uiOut io.Writer, signals <-chan os.Signal) (int, error) {
	if a.SetupTimeout <= 0 {
		a.SetupTimeout = 60 * time.Second
	}
	a.Defaults()
	o := a.Options
	if o.Resume != "" || o.Continue || o.ForkSession || o.SessionID != "" {
		a.Logger.Warn("acp: --resume, --continue, --fork-session and --session-id are ignored; the client picks sessions")
	}
	o.Resume, o.Continue, o.ForkSession, o.SessionID = "", false, false, ""
	if _, err := session.BuildArgs(adapter.CoreArgs, o); err != nil {
		return 2, err
	}
	a.Options = o

	l := &acpLoop{
		cfg:         a,
		log:         a.Logger,
		loop:        adapter.NewLoop(adapter.LoopConfig{MaxLine: a.MaxLine, CLIMaxLine: a.CLIMaxLine, Clock: a.Clock, Logger: a.Logger}),
		allowBypass: os.Geteuid() != 0 || a.childEnv("IS_SANDBOX") == "1",
		claudeDir:   a.claudeDir(),
		private:     &session.PrivateDir{},
		sessions:    map[string]*acpSession{},
		bySup:       map[*adapter.Supervisor]*acpSession{},
		cancellable: map[string]func(){},
	}
	// Run returns once every child has exited (and read its files): the
	// end of the input, a handled signal and an error all pass here.
	defer func() {
		if err := l.private.Remove(); err != nil {
			a.Logger.Warn("removing ccbridge's private folder", "path", l.private.Path(), "err", err)
		}
	}()
	stopControl, err := a.StartControl(l, l.loop.Submit)
	if err != nil {
		return 2, err
	}
	defer stopControl()
	// The exit code is ccbridge's, not a child's: the connection ended.
	_, err = l.loop.Run(ctx, l, uiIn, uiOut, signals)
	return 0, err
}

// childEnv reads a variable as the child sees it: Child.Env wins over
// ccbridge's environment.
func (a *ACP) childEnv(name string) string {
	return clifiles.Getenv(a.Child.Env, nil, name)
}

// claudeDir is ClaudeDir, else the CLI's configuration folder as the child
// sees its environment.
func (a *ACP) claudeDir() string {
	if a.ClaudeDir != "" {
		return a.ClaudeDir
	}
	return clifiles.ConfigDir(a.childEnv)
}

// emit hands the lines in l.out to the loop. Every entry point (a Handler
// method, a background result, a callback) ends with it.
func (l *acpLoop) emit() { l.out = l.loop.EmitAll(l.out) }

// UIEnd: the client's input ended. Queued prompts are dropped and every
// child is stopped in stages; turns that finish meanwhile are still
// answered.
func (l *acpLoop) UIEnd() {
	defer l.emit()
	l.log.Debug("client input ended; stopping every CLI")
	l.dropQueues()
	for _, s := range l.sessions {
		if p := s.sup.Live(); p != nil {
			p.Stop()
		}
	}
}

// Shutdown answers every queued prompt "cancelled"; the loop then stops
// every child in stages. Turns that finish meanwhile are still answered,
// and a turn cut short by the child's exit gets an error (ChildExited).
func (l *acpLoop) Shutdown(string) {
	defer l.emit()
	l.dropQueues()
}

// dropQueues answers every queued prompt "cancelled": no CLI will run it
// now. Every session/prompt request gets its response.
func (l *acpLoop) dropQueues() {
	for _, s := range l.sessions {
		for _, q := range s.queue {
			l.replyPrompt(q.id, acp.AppendStopResult(nil, acp.StopCancelled))
		}
		s.queue = nil
	}
}

// UITooLong answers a client line over the limit with -32600, id null.
func (l *acpLoop) UITooLong(e *framing.LineTooLongError) {
	l.out = append(l.out, jsonrpc.AppendError(nil, "", jsonrpc.CodeInvalidRequest,
		fmt.Sprintf("message of %d bytes or more is over the %d-byte limit; it was dropped", e.Size, e.Max), ""))
	l.emit()
}

// UIUrgent: session/cancel and $/cancel_request are served even while a
// CLI's input is held back (adapter.UrgentHandler).
func (l *acpLoop) UIUrgent(line []byte) bool {
	m := gjson.GetBytes(line, "method").Str
	return m == acp.MethodSessionCancel || m == acp.MethodCancelRequest
}

// UILine handles one line of the client's input.
func (l *acpLoop) UILine(line []byte) {
	defer l.emit()
	msg := jsonrpc.Parse(line)
	switch msg.Kind {
	case jsonrpc.KindInvalid:
		code, text := msg.ProblemCode(), "Invalid request: "+msg.Problem
		if code == jsonrpc.CodeParseError {
			text = "Parse error: the line is not valid JSON"
		}
		l.log.Warn("bad message from the client", payload.With(l.log, "preview", payload.Preview(line), "problem", msg.Problem, "size", len(line))...)
		l.out = append(l.out, jsonrpc.AppendError(nil, msg.ID, code, text, ""))
	case jsonrpc.KindRequest:
		l.request(msg)
	case jsonrpc.KindNotification:
		l.notification(msg)
	case jsonrpc.KindResponse, jsonrpc.KindErrorResponse:
		l.response(msg)
	}
}

// reply answers a client request.
func (l *acpLoop) reply(id string, result []byte) {
	delete(l.cancellable, id)
	l.out = append(l.out, jsonrpc.AppendResult(make([]byte, 0, len(result)+40), id, string(result)))
}

// fail answers a client request with an error.
func (l *acpLoop) fail(id string, e *acp.Error) {
	delete(l.cancellable, id)
	l.out = append(l.out, e.AppendResponse(nil, id))
}

// errCancelled answers a request the client cancelled ($/cancel_request).
func errCancelled(method string) *acp.Error {
	return &acp.Error{Code: acp.CodeRequestCancelled, Message: method + ": cancelled by the client ($/cancel_request)"}
}

// background runs work off the loop for the client's request id (of
// method) and answers with what it returns, unless $/cancel_request
// answered it first (-32800; the work's result is then dropped).
func (l *acpLoop) background(id, method string, work func(ctx context.Context) (result []byte, err *acp.Error)) {
	l.cancellable[id] = func() { l.fail(id, errCancelled(method)) }
	l.loop.Go(func(ctx context.Context) func() {
		result, err := work(ctx)
		return func() {
			defer l.emit()
			if _, open := l.cancellable[id]; !open {
				l.log.Debug("a cancelled request's work ended; its result is dropped", "method", method, "id", id)
				return
			}
			if err != nil {
				l.fail(id, err)
				return
			}
			l.reply(id, result)
		}
	})
}

// request dispatches a client request. Each either answers at once or
// leaves exactly one answer owed, which the session's state holds.
func (l *acpLoop) request(m jsonrpc.Message) {
	id := m.ID
	l.log.Debug("client request", "method", m.Method, "id", id)
	if l.loop.Ending() {
		l.fail(id, acp.Internal("ccbridge is shutting down"))
		return
	}
	if m.Method != acp.MethodInitialize && !l.initialized {
		switch m.Method {
		case acp.MethodAuthenticate, acp.MethodSessionNew, acp.MethodSessionLoad, acp.MethodSessionResume,
			acp.MethodSessionList, acp.MethodSessionClose, acp.MethodSessionPrompt, acp.MethodSetMode, acp.MethodSetConfigOption, acp.MethodSteering,
			acp.MethodSessionFork, acp.MethodLogout,
			acp.MethodSessionRewind, acp.MethodSessionRewindPoints:
			l.fail(id, &acp.Error{Code: jsonrpc.CodeInvalidRequest, Message: "initialize first"})
			return
		}
	}
	switch m.Method {
	case acp.MethodInitialize:
		_, caps, err := acp.ParseInitialize(m.Params)
		if err != nil {
			l.fail(id, err)
			return
		}
		l.initialized, l.caps = true, caps
		l.reply(id, acp.AppendInitializeResult(nil, acp.AgentInfo{Name: "ccbridge", Title: "Claude Code (ccbridge)", Version: version.String()}, caps))
	case acp.MethodAuthenticate:
		if mid := m.Params.Get("methodId"); mid.Str != acp.AuthMethodID {
			l.fail(id, acp.InvalidParams("unknown authentication method "+strconv.Quote(mid.String())+"; the only one is "+strconv.Quote(acp.AuthMethodID)))
			return
		}
		l.reply(id, []byte("{}"))
	case acp.MethodSessionNew, acp.MethodSessionLoad, acp.MethodSessionResume, acp.MethodSessionFork:
		l.setup(id, m.Method, m.Params)
	case acp.MethodLogout:
		l.logout(id)
	case acp.MethodSessionList:
		l.list(id, m.Params)
	case acp.MethodSessionClose:
		s, err := l.sessionFor(m.Method, m.Params)
		if err != nil {
			l.fail(id, err)
			return
		}
		l.closeSession(s, "closed by the client")
		l.reply(id, []byte("{}"))
	case acp.MethodSessionPrompt:
		l.prompt(id, m.Params)
	case acp.MethodSteering:
		l.steer(id, m.Params)
	case acp.MethodSetMode:
		l.setMode(id, m.Params)
	case acp.MethodSetConfigOption:
		l.setConfigOption(id, m.Params)
	case acp.MethodSessionRewind:
		l.rewind(id, m.Params)
	case acp.MethodSessionRewindPoints:
		l.rewindPoints(id, m.Params)
	default:
		l.fail(id, &acp.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found: " + m.Method})
	}
}

// notification handles session/cancel and $/cancel_request; others are
// dropped, as JSON-RPC asks.
func (l *acpLoop) notification(m jsonrpc.Message) {
	switch m.Method {
	case acp.MethodSessionCancel:
		s := l.sessions[m.Params.Get("sessionId").Str]
		if s == nil {
			l.log.Info("session/cancel for an unknown session", "sessionId", m.Params.Get("sessionId").Str)
			return
		}
		l.cancel(s)
	case acp.MethodCancelRequest:
		rid := m.Params.Get("requestId").Raw
		if cancel := l.cancellable[rid]; cancel != nil {
			delete(l.cancellable, rid)
			cancel()
			return
		}
		for _, s := range l.sessions {
			if l.cancelRequest(s, rid) {
				return
			}
		}
		l.log.Debug("$/cancel_request for no request that can be cancelled", "requestId", rid)
	default:
		l.log.Debug("notification ignored", "method", m.Method)
	}
}

// response settles a request ccbridge sent the client. A response to an
// id ccbridge never used, or to a request already settled (withdrawn by
// the CLI, ended with its turn), is logged and dropped: JSON-RPC has no
// way to answer a response, and nothing reaches the CLI.
func (l *acpLoop) response(m jsonrpc.Message) {
	r, state := l.reqs.Take(m.ID)
	if state != jsonrpc.IDOpen {
		if state == jsonrpc.IDSettled {
			l.log.Debug("answer to a request already settled; dropped", "id", m.ID)
		} else {
			l.log.Warn("response to an unknown request id; dropped", "id", m.ID)
		}
		return
	}
	errMsg := ""
	if m.Kind == jsonrpc.KindErrorResponse {
		code, msg := jsonrpc.ErrorCode(m)
		errMsg = fmt.Sprintf("%s (code %d)", msg, code)
	}
	ans := r.p.Answer(m.Result, errMsg)
	if ans.Note != "" {
		// The note may quote the client's answer.
		l.log.Warn("permission answer interpreted", payload.With(l.log, "note", ans.Note, "tool", r.p.ToolName)...)
	}
	s := r.sess
	if ans.Next {
		l.sendPending(s, r.gen, r.p)
		return
	}
	p := s.sup.Live()
	if p == nil || p.Gen != r.gen || l.sessions[s.id] != s {
		l.log.Debug("answer for a CLI that is gone; dropped", "tool", r.p.ToolName)
		return
	}
	p.Write(ans.Stdin)
	if ans.Allowed {
		l.out = s.tr.ToolRunning(r.p.ToolUseID, l.out)
	}
}

// sendPending sends the client the request for a CLI permission request.
func (l *acpLoop) sendPending(s *acpSession, gen int, p *acp.Pending) {
	id := l.reqs.Issue(&acpOutReq{sess: s, gen: gen, p: p})
	params := s.tr.AppendParams(nil, p)
	l.out = append(l.out, jsonrpc.AppendRequest(make([]byte, 0, len(params)+80), id, p.Method(), string(params)))
}

// settle withdraws every request of session s still open at the client
// ($/cancel_request): the turn ended, the child died or the session
// closed. withdraw false only forgets them (the client cancelled the turn
// and answers them "cancelled" itself).
func (l *acpLoop) settle(s *acpSession, withdraw bool) {
	ids := l.reqs.Remove(func(r *acpOutReq) bool { return r.sess == s })
	if !withdraw {
		return
	}
	for _, id := range ids {
		l.out = append(l.out, acp.AppendCancelRequest(nil, id))
	}
}

// CLITooLong reports a CLI line over the limit, which was dropped, to the
// client (_ccbridge/error); the session goes on. When the line's head
// shows it was the turn's result, the turn ends at once with the outcome
// the head shows (a completed turn answers its stop reason; its text has
// reached the client already in chunks), and the prompts queued behind it
// go on. A line whose head does not tell may still have been the result:
// the turn then ends when the CLI says it is idle (see cliLine).
func (l *acpLoop) CLITooLong(p *adapter.Proc, e *framing.LineTooLongError) {
	s := l.bySup[p.Supervisor()]
	if s == nil {
		return // the session was closed
	}
	l.log.Warn("a CLI line over the limit was dropped", "session", s.id, "size", e.Size, "max", e.Max)
	if t := s.running; t != nil {
		t.dropped = true
	}
	l.out = append(l.out, appendACPError(nil, s.id, "line_too_long",
		fmt.Sprintf("a CLI line of %d bytes or more is over the %d-byte limit (--max-cli-line); it was dropped", e.Size, e.Max)))
	l.emit()
	if line, ok := mapping.TooLongResult(e.Head, e.Size, e.Max, true); ok {
		l.log.Warn("the CLI's result line was over the limit; the turn ends", "session", s.id)
		l.CLILine(p, line)
	}
}

// acpErrorMethod is ccbridge's extension notification for what ACP has no
// message of its own for (docs/protocol/acp.md, "_ccbridge/error").
const acpErrorMethod = "_ccbridge/error"

// appendACPError appends a _ccbridge/error notification.
func appendACPError(dst []byte, sessionID, code, msg string) []byte {
	params := []byte(`{"sessionId":`)
	params = gjson.AppendJSONString(params, sessionID)
	params = append(params, `,"code":`...)
	params = gjson.AppendJSONString(params, code)
	params = append(params, `,"message":`...)
	params = gjson.AppendJSONString(params, msg)
	params = append(params, '}')
	return jsonrpc.AppendNotification(dst, acpErrorMethod, string(params))
}

// CLILine handles one line of a session's live child.
func (l *acpLoop) CLILine(p *adapter.Proc, line string) {
	s := l.bySup[p.Supervisor()]
	if s.replaying {
		// session/load: the replay comes first, then what the CLI said
		// meanwhile (its initialize answer), as the client expects.
		s.held = append(s.held, strings.Clone(line))
		return
	}
	l.cliLine(s, p, line)
	l.emit()
}

// cliLine handles one line of the child p that serves session s.
func (l *acpLoop) cliLine(s *acpSession, p *adapter.Proc, line string) {
	if !gjson.Valid(line) {
		l.log.Warn("a CLI line that is not JSON was dropped", payload.With(l.log, "preview", payload.Preview(line), "session", s.id, "size", len(line))...)
		return
	}
	ev := mapping.RouteString(line)
	if ev.Kind.ControlRequest() {
		if ev.Kind == mapping.KindCanUseTool {
			l.sendPending(s, p.Gen, acp.NewPending(&ev, l.caps.ElicitationForm))
			return
		}
		p.AutoReply(&ev)
		return
	}
	if len(l.out) == 0 {
		// The hot path: a streamed chunk goes straight into the pending
		// output, with no line of its own to allocate and copy.
		out := l.loop.Out()
		var ok bool
		if *out, ok = s.tr.AppendChunkLine(*out, &ev); ok {
			return
		}
	}
	l.out = s.tr.FromCLI(&ev, l.out)
	switch ev.Kind {
	case mapping.KindControlResponse:
		l.controlResponse(s, &ev)
	case mapping.KindControlCancelRequest:
		for _, id := range l.reqs.Remove(func(r *acpOutReq) bool { return r.sess == s && r.p.RequestID == ev.RequestID }) {
			l.out = append(l.out, acp.AppendCancelRequest(nil, id))
		}
	case mapping.KindResult:
		l.turnEnded(s, &ev)
	case mapping.KindMessageDelta:
		if t := s.running; t != nil && ev.ParentToolUseID == "" {
			t.stopReason = ev.Get("event.delta.stop_reason").Str
		}
	case mapping.KindSessionStateChanged:
		// The CLI says "idle" after a turn's result. A turn still running
		// then lost its result to the line limit.
		if t := s.running; t != nil && t.dropped && ev.Get("state").Str == "idle" {
			l.resultLost(s)
		}
	case mapping.KindStatus:
		// The CLI switched modes itself (a plan exit, a setMode permission
		// update): a respawn keeps the new mode.
		if m := s.tr.Config.Mode; m != "" && s.sup.Opts.PermissionMode != m && ev.Get("permissionMode").Str == m {
			s.sup.Opts.PermissionMode = m
		}
	case mapping.KindSystemInit:
		s.sup.Persisted("") // the session keeps the id the client knows it by
		if s.initResp == "" && !s.commandsSent {
			s.commandsSent = true
			l.out = append(l.out, acp.AppendAvailableCommands(nil, s.id, gjson.Result{}, ev.Body))
		}
	default:
		if ev.Kind.Unknown() {
			l.log.Debug("CLI message of an unknown type", "kind", ev.Kind.String(), "preview", payload.Preview(ev.Line))
		}
	}
}

// Expire handles the deadlines that have passed.
func (l *acpLoop) Expire(now time.Time) {
	defer l.emit()
	for _, s := range l.sessions {
		l.expireSession(s, now)
	}
}

// NextDeadline is the earliest deadline of every session.
func (l *acpLoop) NextDeadline() time.Time {
	var next time.Time
	for _, s := range l.sessions {
		for _, at := range s.deadlines() {
			next = adapter.Earliest(next, at)
		}
	}
	return next
}

// Interrupt handles a first SIGINT: it cancels every running turn, as
// session/cancel does. (A second one within 2 s, SIGTERM and SIGHUP shut
// down: the loop calls Shutdown.)
func (l *acpLoop) Interrupt() {
	defer l.emit()
	for _, s := range l.sessions {
		l.cancel(s)
	}
}
