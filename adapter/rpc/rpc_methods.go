package rpc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/framing"
	"github.com/ccbridge/ccbridge/internal/payload"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/jsonrpc"
	"github.com/ccbridge/ccbridge/mapping/rpc"
)

// maxShells bounds the shell.exec commands running at once.
const maxShells = 4

// UITooLong refuses a UI line over --max-line with -32600 (id null).
func (l *rpcLoop) UITooLong(e *framing.LineTooLongError) {
	defer l.emit()
	err := &rpc.Error{Code: rpc.CodeInvalidRequest,
		Message: fmt.Sprintf("a line of %d bytes or more is over the %d-byte limit (--max-line); it was dropped", e.Size, e.Max)}
	l.out.UI = append(l.out.UI, err.AppendResponse(nil, ""))
}

// UIUrgent: run.cancel is served even while the CLI's input is held back
// (adapter.UrgentHandler): its deadline must run.
func (l *rpcLoop) UIUrgent(line []byte) bool {
	return gjson.GetBytes(line, "method").Str == rpc.MethodRunCancel
}

// UILine handles one line of the UI: a request, a notification, or the
// answer to one of ccbridge's requests.
func (l *rpcLoop) UILine(line []byte) {
	defer l.emit()
	msg := jsonrpc.Parse(line)
	switch msg.Kind {
	case jsonrpc.KindInvalid:
		l.log.Warn("bad line from the UI", payload.With(l.log, "preview", payload.Preview(line), "problem", msg.Problem, "size", len(line))...)
		e := &rpc.Error{Code: msg.ProblemCode(), Message: msg.Problem}
		l.out.UI = append(l.out.UI, e.AppendResponse(nil, msg.ID))
	case jsonrpc.KindRequest:
		if msg.ID == "" {
			// "id": null is not an id the UI could match an answer to.
			l.out.UI = append(l.out.UI, (&rpc.Error{Code: rpc.CodeInvalidRequest, Message: "id must not be null"}).AppendResponse(nil, ""))
			return
		}
		l.request(msg)
	case jsonrpc.KindNotification:
		l.notification(msg)
	case jsonrpc.KindResponse, jsonrpc.KindErrorResponse:
		l.tr.FromUI(msg, l.now(), &l.out)
		if n := len(l.out.UI); n > 0 && gjson.GetBytes(l.out.UI[n-1], "method").Str == rpc.MethodUIResponseReject {
			l.log.Warn("a response from the UI was not applied", "id", msg.ID,
				"why", gjson.GetBytes(l.out.UI[n-1], "params.error.message").Str)
		}
		l.writeCLI()
	}
}

// UIEnd: the UI's input is over. The held run is cancelled and the CLI's
// stdin closed, so the turn in progress finishes and the child exits; the
// loop has cancelled the background work.
func (l *rpcLoop) UIEnd() {
	defer l.emit()
	if id := l.tr.Held(); id != "" {
		l.tr.CancelRun(id, "the UI's input ended", &l.out)
		l.heldPrompt = nil
	}
	if p := l.sup.Live(); p != nil {
		p.CloseStdin()
	}
}

// dedupedMethods have side effects: a retry with the same id gets the
// first answer and changes nothing.
var dedupedMethods = map[string]bool{
	rpc.MethodRunStart: true, rpc.MethodRunCancel: true, rpc.MethodRunSteer: true, rpc.MethodModelSet: true, rpc.MethodShellExec: true, rpc.MethodSessionRewind: true,
}

func (l *rpcLoop) request(m jsonrpc.Message) {
	id := m.ID
	switch replay, state := l.dedupe.begin(id, m.Method, m.Params.Raw, dedupedMethods[m.Method], l.loop.Now()); state {
	case dedupeReplay:
		l.log.Info("a retried request gets its first answer again", "id", id, "method", m.Method)
		l.out.UI = append(l.out.UI, replay)
		return
	case dedupeInFlight:
		l.log.Info("a retried request is still in progress; its answer will come once", "id", id, "method", m.Method)
		return
	case dedupeConflict:
		l.out.UI = append(l.out.UI, (&rpc.Error{Code: rpc.CodeInvalidRequest,
			Message: "the id " + id + " was used for another request within the last " + l.cfg.DedupeWindow.String()}).AppendResponse(nil, id))
		return
	}
	p := m.Params
	switch m.Method {
	case rpc.MethodInitialize:
		l.initialize(id, p)
	case rpc.MethodRunStart:
		l.runStart(id, p)
	case rpc.MethodRunCancel:
		rp, err := rpc.ParseRunCancel(p)
		if err != nil {
			l.respondErr(id, err)
			return
		}
		res := l.cancelRun(rp.RunID, rp.Reason)
		if !res.Known {
			l.respondErr(id, &rpc.Error{Code: rpc.CodeRunNotFound, Message: "no run " + strconv.Quote(rp.RunID) + " on this connection"})
			return
		}
		l.respond(id, rpc.AppendRunCancelResult(nil, id, res.OK, res.Status))
	case rpc.MethodRunSteer:
		l.runSteer(id, p)
	case rpc.MethodSessionList:
		l.sessionList(id, p)
	case rpc.MethodSessionHistory:
		l.sessionHistory(id, p)
	case rpc.MethodSessionRewind:
		l.sessionRewind(id, p)
	case rpc.MethodModelList:
		l.modelList(id, p)
	case rpc.MethodModelSet:
		l.modelSet(id, p)
	case rpc.MethodMCPList:
		l.mcpList(id, p)
	case rpc.MethodSkillsList:
		l.skillsList(id, p)
	case rpc.MethodWorkspaceSuggest:
		l.workspaceSuggest(id, p)
	case rpc.MethodMCPReconnect, rpc.MethodMCPToggle:
		l.mcpAction(id, m.Method, p)
	case rpc.MethodSessionTitle:
		l.sessionTitle(id, p)
	case rpc.MethodContextInspect:
		l.contextInspect(id, p)
	case rpc.MethodShellExec:
		l.shellExec(id, p)
	case rpc.MethodRequestCancel:
		l.requestCancel(id, p)
	case rpc.MethodToolCall:
		l.toolCall(id, p)
	case rpc.MethodAuthLogout:
		l.authLogout(id, p)
	case rpc.MethodShellOutput:
		o, err := rpc.ParseShellOutput(p)
		if err != nil {
			l.respondErr(id, err)
			return
		}
		l.shellOutput(id, o, false)
	case rpc.MethodUIContextUpdate:
		raw, err := rpc.ParseUIContext(p)
		if err != nil {
			l.respondErr(id, err)
			return
		}
		l.uiCtx = raw
		l.respond(id, rpc.AppendOKResult(nil, id, true))
	default:
		l.respondErr(id, &rpc.Error{Code: rpc.CodeMethodNotFound, Message: "method not found: " + m.Method})
	}
}

// notification handles the methods that make sense without an answer.
// Others are logged and dropped: a notification cannot be answered.
func (l *rpcLoop) notification(m jsonrpc.Message) {
	switch m.Method {
	case rpc.MethodRunCancel:
		if rp, err := rpc.ParseRunCancel(m.Params); err == nil {
			l.cancelRun(rp.RunID, rp.Reason)
			return
		}
	case rpc.MethodUIContextUpdate:
		if raw, err := rpc.ParseUIContext(m.Params); err == nil {
			l.uiCtx = raw
			return
		}
	case rpc.MethodRequestCancel:
		if target, err := rpc.ParseRequestCancel(m.Params); err == nil {
			l.cancelRequest(target)
			return
		}
	}
	l.log.Warn("a notification from the UI was dropped", "method", m.Method)
}

// begin registers a request whose answer comes later; cancel (may be nil)
// stops its work when request.cancel names it.
func (l *rpcLoop) begin(id, method string, cancel func()) {
	l.inflight[id] = &rpcInflight{method: method, cancel: cancel}
}

// goRequest begins request id (see begin) and runs its work off the loop
// (Loop.Go); the function the work returns runs on the loop. The work's
// ctx ends when request.cancel names id, when the UI's input ends, or at
// shutdown.
func (l *rpcLoop) goRequest(id, method string, work func(ctx context.Context) func()) {
	stop, cancel := context.WithCancel(context.Background())
	l.begin(id, method, cancel)
	l.loop.Go(func(ctx context.Context) func() {
		ctx, done := context.WithCancel(ctx)
		unhook := context.AfterFunc(stop, done)
		fn := work(ctx)
		unhook()
		done()
		cancel()
		return func() {
			fn()
			l.emit()
		}
	})
}

// finish ends a request begun with begin and reports whether it still
// wants its answer (false when request.cancel already answered it).
func (l *rpcLoop) finish(id string) bool {
	if _, ok := l.inflight[id]; !ok {
		return false
	}
	delete(l.inflight, id)
	return true
}

func (l *rpcLoop) requestCancel(id string, p gjson.Result) {
	target, err := rpc.ParseRequestCancel(p)
	if err != nil {
		l.respondErr(id, err)
		return
	}
	l.respond(id, rpc.AppendOKResult(nil, id, l.cancelRequest(target)))
}

// cancelRequest answers an in-flight request with -32003 and stops its
// work; it reports whether there was one.
func (l *rpcLoop) cancelRequest(target string) bool {
	f, ok := l.inflight[target]
	if !ok {
		return false
	}
	delete(l.inflight, target)
	if f.cancel != nil {
		f.cancel()
	}
	l.respondErr(target, &rpc.Error{Code: rpc.CodeUserCancelled, Message: f.method + " was cancelled by request.cancel"})
	return true
}

func (l *rpcLoop) initialize(id string, p gjson.Result) {
	ip, err := rpc.ParseInitialize(p)
	if err != nil {
		l.respondErr(id, err)
		return
	}
	l.tr.SetUICapabilities(ip.UI)
	l.log.Info("UI connected", "client", ip.ClientName, "version", ip.ClientVersion, "protocol_version", ip.ProtocolVersion)
	reply := func(*rpc.Error) {
		if !l.finish(id) {
			return
		}
		l.respond(id, rpc.AppendInitializeResult(nil, id, rpc.ServerInfo{
			Name: "ccbridge", Version: l.cfg.Version, Diagnostics: l.cfg.Diagnostics,
			SessionID: l.tr.SessionID(), CWD: l.cwd,
			CLIVersion: gjson.Get(l.cliInit, "claude_code_version").Str,
			Model:      l.resolvedModel(),
			Theme:      l.theme(),
		}))
	}
	l.begin(id, rpc.MethodInitialize, nil)
	if l.initWaiting {
		// Answer once the CLI has said who it is (it is quick).
		l.initWaiters = append(l.initWaiters, reply)
		return
	}
	reply(nil)
}

// resolvedModel is the model id in use, as far as known.
func (l *rpcLoop) resolvedModel() string {
	if l.resolved != "" {
		return l.resolved
	}
	found := ""
	gjson.Parse(l.models).ForEach(func(_, v gjson.Result) bool {
		if v.Get("value").Str == l.model {
			found = v.Get("resolvedModel").Str
			return false
		}
		return true
	})
	return found
}

func (l *rpcLoop) runStart(id string, p gjson.Result) {
	rp, err := rpc.ParseRunStart(p)
	if err != nil {
		l.respondErr(id, err)
		return
	}
	if active := l.tr.ActiveRun(); active != "" {
		l.respondErr(id, &rpc.Error{Code: rpc.CodeRuntimeBusy,
			Message: "run " + active + " is still active: wait for its run.status or cancel it"})
		return
	}
	if l.sup.Rewinding() {
		l.respondErr(id, &rpc.Error{Code: rpc.CodeRuntimeBusy, Message: "a session.rewind is running: start the run after its answer"})
		return
	}
	if l.loop.Ending() {
		l.respondErr(id, rpc.Internal("ccbridge is shutting down"))
		return
	}
	if e := l.prepareRun(rp.SessionID); e != nil {
		l.respondErr(id, e)
		return
	}
	var blocks []mapping.Block
	if rp.UIContext != "" {
		l.uiCtx = rp.UIContext
		blocks = append(blocks, mapping.Block{Text: "<ui_context>\n" + rp.UIContext + "\n</ui_context>"})
	}
	text := rp.Text
	if rp.ForceCompaction {
		text = strings.TrimSpace("/compact " + text)
	}
	blocks = append(blocks, mapping.Block{Text: text})
	runID := l.newRunID()
	l.respond(id, rpc.AppendRunStartResult(nil, id, runID))
	l.launchRun(runID, blocks)
}

// runSteer adds text to the running run's turn: it is written to the CLI
// at once, as a user message with an id of its own, which the CLI takes
// into the turn after its next tool result (docs/protocol/rpc.md,
// "run.steer").
func (l *rpcLoop) runSteer(id string, p gjson.Result) {
	rp, err := rpc.ParseRunSteer(p)
	if err != nil {
		l.respondErr(id, err)
		return
	}
	proc := l.sup.Live()
	if proc == nil || l.sup.Respawning() {
		l.respondErr(id, &rpc.Error{Code: rpc.CodeRunNotFound, Message: "run " + rp.RunID + " is not running: no CLI runs"})
		return
	}
	steerID := uuid.NewString()
	if e := l.tr.Steer(rp.RunID, steerID); e != nil {
		l.respondErr(id, e)
		return
	}
	proc.Write(mapping.AppendUserMessage(nil, mapping.UserOptions{UUID: steerID}, mapping.Block{Text: rp.Text}))
	l.prompts++
	l.respond(id, rpc.AppendRunSteerResult(nil, id, rp.RunID, steerID))
}

// sessionRewind serves session.rewind: the current session goes back,
// between runs only (-32001 while a run is active, or a cancelled run's
// turn still ends).
func (l *rpcLoop) sessionRewind(id string, p gjson.Result) {
	rp, err := rpc.ParseSessionRewind(p)
	if err != nil {
		l.respondErr(id, err)
		return
	}
	if rp.SessionID != "" && rp.SessionID != l.tr.SessionID() {
		l.respondErr(id, &rpc.Error{Code: rpc.CodeSessionNotFound, Message: "session " + rp.SessionID + " is not this connection's current session; run.start on it first"})
		return
	}
	if active := l.tr.ActiveRun(); active != "" || l.tr.Draining() || l.heldPrompt != nil {
		l.respondErr(id, &rpc.Error{Code: rpc.CodeRuntimeBusy, Message: "a run is active: session.rewind waits for its run.status, or cancel it"})
		return
	}
	l.begin(id, rpc.MethodSessionRewind, nil)
	req := adapter.RewindRequest{Turns: rp.Turns, UserMessageID: rp.UserMessageID, Files: rp.Files, DryRun: rp.DryRun}
	l.sup.Rewind(req, func(res adapter.RewindResult, e *adapter.RewindError) {
		defer l.emit()
		if !l.finish(id) {
			return
		}
		if e != nil {
			code := rpc.CodeRuntimeInternal
			switch e.Code {
			case adapter.RewindBusy:
				code = rpc.CodeRuntimeBusy
			case adapter.RewindInvalid, adapter.RewindNotFound:
				code = rpc.CodeInvalidParams
			case adapter.RewindNoSession:
				code = rpc.CodeSessionNotFound
			}
			l.respondErr(id, &rpc.Error{Code: code, Message: e.Error(), Data: `{"reason":"` + e.Code + `"}`})
			return
		}
		l.respond(id, rpc.AppendSessionRewindResult(nil, id, rpc.SessionRewindResult{
			DryRun: res.DryRun, UserMessageID: res.UserMessageID, Prompt: res.Prompt, Turns: res.Turns, Kept: res.Kept,
			Files: res.Files, Insertions: res.Insertions, Deletions: res.Deletions,
		}))
	})
}

// prepareRun makes sure a CLI runs, or is coming, for a new run: one
// that resumes session sid when sid is not the current session.
func (l *rpcLoop) prepareRun(sid string) *rpc.Error {
	if sid != "" && sid != l.tr.SessionID() {
		return l.switchSession(sid)
	}
	if !l.sup.Busy() {
		if _, err := l.sup.Start(l.sup.ResumeOpts()); err != nil {
			return &rpc.Error{Code: rpc.CodeSessionLoadFailed, Message: "resuming the session: " + err.Error()}
		}
	}
	return nil
}

// newRunID is the id of the next run.
func (l *rpcLoop) newRunID() string {
	l.runN++
	return "run-" + strconv.Itoa(l.runN)
}

// launchRun begins run runID (run.status running) with blocks as its
// prompt, which is written to the CLI now or held until the CLI can take
// it (sendHeld).
func (l *rpcLoop) launchRun(runID string, blocks []mapping.Block) {
	l.tr.BeginRun(runID, &l.out)
	l.heldPrompt = mapping.AppendUserMessage(nil, mapping.UserOptions{}, blocks...)
	l.sendHeld()
}

// switchSession replaces the child with one that resumes session sid. A
// session the CLI cannot resume is refused before any child is stopped
// or started.
func (l *rpcLoop) switchSession(sid string) *rpc.Error {
	if e := l.checkResume(sid); e != nil {
		return e
	}
	opts := l.baseOpts.ResumeFrom(sid)
	if !l.sup.Busy() {
		if _, err := l.sup.Start(opts, true); err != nil {
			return &rpc.Error{Code: rpc.CodeSessionLoadFailed, Message: "resuming session " + sid + ": " + err.Error()}
		}
		return nil
	}
	l.log.Info("replacing claude to resume another session", "session_id", sid)
	l.respawn("the CLI was replaced to resume another session", opts, true, false)
	return nil
}

// checkResume tells whether the CLI can resume session sid: -32004 when
// it has no file for it, -32005 when the file is not one or holds no
// conversation.
func (l *rpcLoop) checkResume(sid string) *rpc.Error {
	err := l.sup.CheckResume(sid)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, adapter.ErrNotResumable):
		return &rpc.Error{Code: rpc.CodeSessionLoadFailed, Message: err.Error()}
	}
	path := l.sessionFile(sid)
	if fi, serr := os.Stat(path); serr == nil && !fi.Mode().IsRegular() {
		return &rpc.Error{Code: rpc.CodeSessionLoadFailed, Message: path + " is not a session file"}
	}
	return &rpc.Error{Code: rpc.CodeSessionNotFound, Message: err.Error()}
}

// cancelRun cancels a run: run.status cancelled at once, and an in-band
// interrupt when the CLI is running its turn. The turn must end within
// InterruptTimeout, or the CLI is killed and resumed.
func (l *rpcLoop) cancelRun(runID, reason string) rpc.CancelResult {
	held := l.tr.Held() == runID
	res := l.tr.CancelRun(runID, reason, &l.out)
	if held && res.OK {
		l.heldPrompt = nil
	}
	if res.Interrupt && l.sup.Live() != nil {
		l.log.Info("interrupting the CLI", "run_id", runID)
		l.control("interrupt", func(reqID string) []byte { return mapping.AppendInterrupt(nil, reqID, false) }, nil)
		l.sup.Interrupting(l.cfg.InterruptTimeout, l.interruptTimedOut)
	}
	return res
}

// cliQuery runs a control request for a UI request: it waits for a
// child, sends the request, and hands the answer to reply, unless
// request.cancel came first.
func (l *rpcLoop) cliQuery(id, method, subtype string, build func(reqID string) []byte, reply func(gjson.Result)) {
	l.whenCLI(id, method, func() {
		l.control(subtype, build, func(resp gjson.Result, e *rpc.Error) {
			if !l.finish(id) {
				return
			}
			if e != nil {
				l.respondErr(id, e)
				return
			}
			reply(resp)
		})
	})
}

// cliRefusable is cliQuery for a control request the CLI may refuse with
// its reasons (controlRefusable): reply gets the answer, or the refusal.
func (l *rpcLoop) cliRefusable(id, method, subtype string, build func(reqID string) []byte, reply func(resp gjson.Result, refusal string)) {
	l.whenCLI(id, method, func() {
		l.controlRefusable(subtype, build, func(resp gjson.Result, refusal string, e *rpc.Error) {
			if !l.finish(id) {
				return
			}
			if e != nil {
				l.respondErr(id, e)
				return
			}
			reply(resp, refusal)
		})
	})
}

// whenCLI begins request id and runs ask once a CLI is live; when none
// can be, the request is answered with the reason (CodeRuntimeInternal).
func (l *rpcLoop) whenCLI(id, method string, ask func()) {
	l.begin(id, method, nil)
	l.sup.WhenLive(func(err error) {
		defer l.emit()
		if err != nil {
			if l.finish(id) {
				e := l.rpcErr(err)
				e.Code = rpc.CodeRuntimeInternal
				l.respondErr(id, e)
			}
			return
		}
		ask()
	})
}

func (l *rpcLoop) modelList(id string, p gjson.Result) {
	details, err := rpc.ParseModelList(p)
	if err != nil {
		l.respondErr(id, err)
		return
	}
	l.cliQuery(id, rpc.MethodModelList, "list_models", simpleControl("list_models"), func(resp gjson.Result) {
		if m := resp.Get("models"); m.IsArray() {
			l.models = strings.Clone(m.Raw)
		}
		l.respond(id, rpc.AppendModelListResult(nil, id, rpc.ModelList{
			Models: gjson.Parse(l.models), Current: l.model, Resolved: l.resolvedModel(),
			IncludeDetails: details, Window: l.tr.ContextWindow,
		}))
	})
}

func (l *rpcLoop) modelSet(id string, p gjson.Result) {
	name, err := rpc.ParseModelSet(p)
	if err != nil {
		l.respondErr(id, err)
		return
	}
	set := func(*rpc.Error) {
		// The CLI accepts any name; check it against the CLI's list.
		if l.models != "" && !rpc.KnownModel(gjson.Parse(l.models), name) && !strings.HasPrefix(name, "claude-") {
			l.respondErr(id, rpc.InvalidParams("unknown model "+strconv.Quote(name)+": use a name from model.list or a full claude-… model id"))
			return
		}
		build := func(reqID string) []byte { return mapping.AppendSetModel(nil, reqID, name) }
		l.cliQuery(id, rpc.MethodModelSet, "set_model", build, func(resp gjson.Result) {
			l.model = name
			if name == "default" {
				l.baseOpts.Model = ""
			} else {
				l.baseOpts.Model = name
			}
			l.sup.Opts.Model = l.baseOpts.Model // a new CLI keeps the model
			l.resolved = strings.Clone(resp.Get("model").Str)
			l.respond(id, rpc.AppendModelSetResult(nil, id, name, l.resolved))
		})
	}
	if l.initWaiting {
		// The list comes with the CLI's initialize answer.
		l.initWaiters = append(l.initWaiters, set)
		return
	}
	set(nil)
}

func (l *rpcLoop) mcpList(id string, p gjson.Result) {
	if _, err := rpc.ParseMCPList(p); err != nil {
		l.respondErr(id, err)
		return
	}
	l.cliQuery(id, rpc.MethodMCPList, "mcp_status", simpleControl("mcp_status"), func(resp gjson.Result) {
		l.respond(id, rpc.AppendMCPListResult(nil, id, resp))
	})
}

func (l *rpcLoop) workspaceSuggest(id string, p gjson.Result) {
	sp, err := rpc.ParseWorkspaceSuggest(p)
	if err != nil {
		l.respondErr(id, err)
		return
	}
	build := func(reqID string) []byte { return mapping.AppendFileSuggestions(nil, reqID, sp.Query) }
	l.cliQuery(id, rpc.MethodWorkspaceSuggest, "file_suggestions", build, func(resp gjson.Result) {
		l.respond(id, rpc.AppendWorkspaceSuggestResult(nil, id, resp, sp.Limit))
	})
}

// mcpAction is mcp.reconnect and mcp.toggle: a server that fails to
// connect is an answer (ok false, the CLI's error); one the CLI does not
// know is -32602.
func (l *rpcLoop) mcpAction(id, method string, p gjson.Result) {
	parse, subtype := rpc.ParseMCPReconnect, "mcp_reconnect"
	if method == rpc.MethodMCPToggle {
		parse, subtype = rpc.ParseMCPToggle, "mcp_toggle"
	}
	sp, err := parse(p)
	if err != nil {
		l.respondErr(id, err)
		return
	}
	build := func(reqID string) []byte { return mapping.AppendMCPReconnect(nil, reqID, sp.ID) }
	if subtype == "mcp_toggle" {
		build = func(reqID string) []byte { return mapping.AppendMCPToggle(nil, reqID, sp.ID, sp.Enabled) }
	}
	l.cliRefusable(id, method, subtype, build, func(_ gjson.Result, refusal string) {
		if rpc.MCPUnknownServer(refusal) {
			l.respondErr(id, rpc.InvalidParams("no MCP server "+strconv.Quote(sp.ID)+": "+refusal))
			return
		}
		l.respond(id, rpc.AppendMCPActionResult(nil, id, sp.ID, refusal == "", refusal))
	})
}

func (l *rpcLoop) sessionTitle(id string, p gjson.Result) {
	tp, err := rpc.ParseSessionTitle(p)
	if err != nil {
		l.respondErr(id, err)
		return
	}
	build := func(reqID string) []byte {
		return mapping.AppendGenerateSessionTitle(nil, reqID, tp.Description, tp.Persist)
	}
	l.cliQuery(id, rpc.MethodSessionTitle, "generate_session_title", build, func(resp gjson.Result) {
		l.respond(id, rpc.AppendSessionTitleResult(nil, id, resp, tp.Persist))
	})
}

// within reports whether path is root or inside it.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// resolveDir resolves a UI-given directory against the session's working
// directory; it must exist and stay inside it.
func (l *rpcLoop) resolveDir(dir string) (string, *rpc.Error) {
	if dir == "" {
		return l.cwd, nil
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(l.cwd, dir)
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(dir))
	if err != nil {
		return "", rpc.InvalidParams("cwd " + strconv.Quote(dir) + " does not exist")
	}
	if !within(l.cwd, real) {
		return "", rpc.InvalidParams("cwd " + strconv.Quote(dir) + " is outside the session's working directory " + l.cwd)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", rpc.InvalidParams("cwd " + strconv.Quote(dir) + " is not a directory")
	}
	return real, nil
}

func (l *rpcLoop) skillsList(id string, p gjson.Result) {
	sp, err := rpc.ParseSkillsList(p)
	if err != nil {
		l.respondErr(id, err)
		return
	}
	dir, err := l.resolveDir(sp.CWD)
	if err != nil {
		l.respondErr(id, err)
		return
	}
	userDir := filepath.Join(l.home, "skills")
	scan := func() {
		cli := gjson.Parse(l.skills).Get("skills")
		l.goRequest(id, rpc.MethodSkillsList, func(context.Context) func() {
			skills, errs, truncated := scanSkills(cli, filepath.Join(dir, ".claude", "skills"), userDir)
			return func() {
				if l.finish(id) {
					l.respond(id, rpc.AppendSkillsListResult(nil, id, skills, errs, truncated))
				}
			}
		})
	}
	if l.skills != "" && !sp.ForceReload {
		scan()
		return
	}
	l.cliQuery(id, rpc.MethodSkillsList, "reload_skills", simpleControl("reload_skills"), func(resp gjson.Result) {
		l.skills = strings.Clone(resp.Raw)
		scan()
	})
}

func (l *rpcLoop) contextInspect(id string, p gjson.Result) {
	cp, err := rpc.ParseContextInspect(p)
	if err != nil {
		l.respondErr(id, err)
		return
	}
	l.cliQuery(id, rpc.MethodContextInspect, "get_context_usage", simpleControl("get_context_usage"), func(resp gjson.Result) {
		c := rpc.ContextInspect{
			WorkingDir: l.cwd, SandboxRoot: l.cwd,
			UIContext: gjson.Parse(l.uiCtx), SessionID: l.tr.SessionID(),
			Meta: l.tr.Metadata(), Usage: resp,
		}
		c.Model = l.resolvedModel()
		if cp.IncludeAgents {
			c.Agents = gjson.Get(l.cliInit, "agents")
		}
		if cp.IncludeSkills {
			c.Skills = []rpc.Skill{}
			gjson.Get(l.skills, "skills").ForEach(func(_, s gjson.Result) bool {
				c.Skills = append(c.Skills, rpc.Skill{Name: s.Get("name").Str, Description: rpc.TrimSkillScope(s.Get("description").Str), Scope: rpc.SkillScope(s)})
				return true
			})
			if len(c.Skills) == 0 {
				gjson.Parse(c.Meta.Skills).ForEach(func(_, s gjson.Result) bool {
					c.Skills = append(c.Skills, rpc.Skill{Name: s.Str})
					return true
				})
			}
		}
		l.respond(id, rpc.AppendContextInspectResult(nil, id, c))
	})
}
