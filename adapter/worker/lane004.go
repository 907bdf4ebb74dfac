package worker

// Lane 004 on the control dialect: the worker that thread and turn
// requests drive (docs/protocol/worker.md). A thread is a CLI session, its
// id the session id; a turn is one prompt, its id the prompt's uuid. The
// CLI's events become worker.event lines named after the Codex
// app-server's notifications, in the worker's event log. Everything here
// runs on the session's loop.

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/adapter/control"
	"github.com/ccbridge/ccbridge/internal/jsonw"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/lane000"
	"github.com/ccbridge/ccbridge/mapping/lane004"
	"github.com/ccbridge/ccbridge/session"
	"github.com/ccbridge/ccbridge/session/clifiles"
)

// worker004 is the control dialect's lane-004 state.
type worker004 struct {
	// active: events are written to the log (lane 004 was used, the log
	// holds events from before, or ccbridge serve hosts the worker).
	active bool
	// interrupted are the turns an interrupt was sent for.
	interrupted map[string]bool
	// The message streaming now, and its open content blocks by index.
	msgID  string
	blocks map[int]*block004
	// tools are the tool calls started and not yet completed: their names.
	tools map[string]string
	// approvals are the CLI's permission requests and questions waiting
	// for ccbridge/approval/respond, by request id.
	approvals map[string]approval004
	// switching: thread/start or thread/resume is replacing the CLI.
	switching bool
	buf       []byte
}

type block004 struct {
	id, kind string // kind: agentMessage, reasoning
	text     strings.Builder
}

type approval004 struct {
	turnID, toolUseID, tool, input, suggestions string
}

// log004 is the worker's event log; nil when lane 004 is not served.
func (w *controlWorker) log004() *control.EventLog { return w.plane.Log004() }

// event appends one worker.event to the log, when the worker's events
// are kept.
func (w *controlWorker) event(method string, params []byte) {
	l := w.log004()
	if l == nil || !w.w4.active {
		return
	}
	l.Append(func(seq uint64) []byte {
		return lane004.AppendEvent(nil, w.plane.Lane004().WorkerID(), seq, method, string(params), w.loop.Now())
	})
}

// currentTurn is the id of the turn running (the oldest prompt the CLI
// has not answered), "" when none.
func (w *controlWorker) currentTurn() string {
	if len(w.prompts) == 0 {
		return ""
	}
	return w.prompts[0].uuid
}

func (w *controlWorker) threadID() string { return w.worker.SessionID }

// endLostTurns ends the turns the last ccbridge on this log left running
// (it was killed during them: the log has their turn/started and no
// turn/completed) with turn/completed failed, before this run writes
// anything, so that a client waiting for a turn's end gets it, once.
func (w *controlWorker) endLostTurns() {
	l := w.log004()
	if l == nil || !w.w4.active || l.Latest() == 0 {
		return
	}
	type lost struct{ turn, thread string }
	var open []lost
	var buf [][]byte
	for cursor := l.Oldest() - 1; ; {
		lines, _, _ := l.After(cursor, 256, buf[:0])
		if len(lines) == 0 {
			break
		}
		for _, line := range lines {
			cursor = gjson.GetBytes(line, "seq").Uint()
			r := gjson.GetManyBytes(line, "event_type", "payload.method", "payload.params.turn.id", "payload.params.threadId")
			if r[0].Str != "worker.event" {
				continue
			}
			switch r[1].Str {
			case "turn/started":
				open = append(open, lost{r[2].Str, r[3].Str})
			case "turn/completed":
				open = slices.DeleteFunc(open, func(o lost) bool { return o.turn == r[2].Str })
			}
		}
		buf = lines
	}
	const msg = "ccbridge stopped during the turn (killed, or its machine stopped); the turn did not finish"
	for _, o := range open {
		w.log.Warn("control lane 004: a turn the last run left running ends failed", "turn", o.turn, "thread", o.thread)
		turn := jsonw.NewObj(nil).Str("id", o.turn).Raw("items", "[]").Str("status", "failed").
			Raw("error", jsonw.NewObj(nil).Str("message", msg).String()).String()
		w.event("turn/completed", jsonw.NewObj(nil).Str("threadId", o.thread).Raw("turn", turn).End())
	}
}

// Do implements control.Target004.
func (w *controlWorker) Do(req *lane004.Request, done func(control.Receipt004)) {
	w.w4.active = true
	defer w.emit()
	switch req.Method {
	case lane004.MethodThreadStart:
		w.threadStart(req, done)
	case lane004.MethodThreadResume:
		w.threadResume(req, done)
	case lane004.MethodTurnStart:
		w.turnStart(req, done)
	case lane004.MethodTurnInterrupt:
		w.turnInterrupt(req, done)
	case lane004.MethodTurnSteer:
		w.turnSteer(req, done)
	case lane004.MethodThreadList:
		w.threadList(req, done)
	case lane004.MethodThreadRead:
		w.threadRead(req, done)
	case lane004.MethodThreadRollback:
		w.threadRollback(req, done)
	case lane004.MethodApproval:
		w.approvalRespond(req, done)
	default:
		done(control.Fail004(lane004.CodeUnsupportedMethod, "method "+strconv.Quote(req.Method)+" is not served by this worker"))
	}
}

// conflict is the error receipt for a request on a thread or turn that
// is not the worker's current one.
func (w *controlWorker) conflict(message string) control.Receipt004 {
	r := control.Fail004(lane004.CodeConflict, message)
	r.Details = jsonw.NewObj(nil).StrOrNull("current_thread_id", w.threadID()).StrOrNull("current_turn_id", w.currentTurn()).String()
	return r
}

// otherThread refuses a request for thread id, which is not the one the
// worker's CLI runs.
func (w *controlWorker) otherThread(id string) control.Receipt004 {
	return w.conflict("thread " + id + " is not this worker's current thread")
}

// refuseTurn refuses a request for another thread than the worker's, or
// one that needs the worker between turns.
func (w *controlWorker) refuseTurn(threadID string) (control.Receipt004, bool) {
	if threadID != w.threadID() {
		return w.otherThread(threadID), true
	}
	return w.busy()
}

// busy refuses a request that needs the worker between turns.
func (w *controlWorker) busy() (control.Receipt004, bool) {
	switch {
	case len(w.prompts) > 0:
		return w.conflict("turn " + w.currentTurn() + " is running; interrupt it or wait for turn/completed"), true
	case w.run.Paused || len(w.run.heldIn) > 0:
		return w.conflict("the run is paused (lane 001); resume it first"), true
	case w.w4.switching:
		return w.conflict("the worker is switching threads"), true
	case w.sup.Rewinding():
		return w.conflict("a thread/rollback is running"), true
	}
	return control.Receipt004{}, false
}

func (w *controlWorker) threadObj(dst []byte, id, name, preview string, created, updated time.Time) []byte {
	cwd, _ := w.sup.Dirs()
	o := jsonw.NewObj(dst).Str("id", id).StrOrNull("name", name).Str("preview", preview)
	o.Str("modelProvider", "anthropic")
	if !created.IsZero() {
		o.Int("createdAt", created.Unix())
	}
	if !updated.IsZero() {
		o.Int("updatedAt", updated.Unix())
	}
	return o.Str("cwd", cwd).End()
}

// threadStart replaces the CLI with one on a new session, whose id is
// the thread's, known at once.
func (w *controlWorker) threadStart(req *lane004.Request, done func(control.Receipt004)) {
	if r, ok := w.busy(); ok {
		done(r)
		return
	}
	opts := w.sup.Opts
	opts.Resume, opts.Continue, opts.ForkSession = "", false, false
	opts.SessionID = uuid.NewString()
	if req.Model != "" {
		opts.Model = req.Model
	}
	if err := w.sup.Check(opts); err != nil {
		done(control.Fail004(lane004.CodeInvalidRequest, err.Error()))
		return
	}
	w.switchThread(opts, false, func(err error) {
		if err != nil {
			done(control.Fail004(lane004.CodeWorkerUnavailable, "the CLI could not start: "+err.Error()))
			return
		}
		now := w.loop.Now()
		thread := string(w.threadObj(nil, opts.SessionID, "", "", now, now))
		done(control.Receipt004{OK: true, Response: jsonw.NewObj(nil).Raw("thread", thread).StrOrNull("model", cmp.Or(opts.Model, w.run.Model)).String()})
		w.event("thread/started", jsonw.NewObj(nil).Raw("thread", thread).End())
	})
}

// switchThread starts the CLI for another session: the live one is
// stopped first (it is between turns), then one starts with opts.
// The worker's thread becomes the new one only once its CLI started
// (started sets it); until then, requests that need the worker between
// turns are a conflict.
func (w *controlWorker) switchThread(opts session.Options, resumed bool, then func(error)) {
	w.setState(control.WorkerStarting, "")
	if w.sup.Live() == nil && !w.sup.Respawning() {
		_, err := w.sup.Start(opts, resumed)
		if err != nil {
			w.setState(control.WorkerExited, "the CLI could not start: "+err.Error())
		}
		then(err)
		return
	}
	w.w4.switching = true
	w.sup.Replace("thread switch", w.cfg.InterruptTimeout, false, opts, resumed, func(err error) {
		defer w.emit()
		w.w4.switching = false
		if err != nil || w.sup.Live() == nil {
			w.setState(control.WorkerExited, "the CLI could not start")
			if err == nil {
				err = adapter.ErrShuttingDown
			}
		}
		then(err)
	})
}

// threadResume switches the worker to an existing session of its
// working directory.
func (w *controlWorker) threadResume(req *lane004.Request, done func(control.Receipt004)) {
	reply := func() {
		done(control.Receipt004{OK: true, Response: jsonw.NewObj(nil).Raw("thread", string(w.threadObj(nil, req.ThreadID, "", "", time.Time{}, time.Time{}))).String()})
	}
	if req.ThreadID == w.threadID() {
		reply() // already this worker's thread
		return
	}
	if r, ok := w.busy(); ok {
		done(r)
		return
	}
	if err := w.sup.CheckResume(req.ThreadID); err != nil {
		done(control.Fail004(lane004.CodeInvalidRequest, "thread "+req.ThreadID+" cannot be resumed: "+err.Error()))
		return
	}
	opts := w.sup.Opts.ResumeFrom(req.ThreadID)
	w.switchThread(opts, true, func(err error) {
		if err != nil {
			done(control.Fail004(lane004.CodeWorkerUnavailable, "the CLI could not start: "+err.Error()))
			return
		}
		reply()
	})
}

// turnStart sends the input as one prompt; its uuid is the turn's id.
func (w *controlWorker) turnStart(req *lane004.Request, done func(control.Receipt004)) {
	if r, ok := w.refuseTurn(req.ThreadID); ok {
		done(r)
		return
	}
	if w.loop.Ending() {
		done(control.Fail004(lane004.CodeWorkerUnavailable, "the worker session is ending"))
		return
	}
	blocks := inputBlocks(req.Input)
	if req.Model != "" && req.Model != w.sup.Opts.Model {
		// The model for this turn and those after it, as Codex's turn/start.
		if p := w.sup.Live(); p != nil {
			p.Write(mapping.AppendSetModel(nil, "ccb-sm-"+uuid.NewString(), req.Model))
		}
		w.sup.Opts.Model = req.Model
	}
	id := uuid.NewString()
	w.send(req.RequestID, id, blocks, func(res lane000.Result, detail string) {
		if res != lane000.OK {
			done(control.Fail004(lane004.CodeWorkerUnavailable, detail))
			return
		}
		turn := jsonw.NewObj(nil).Str("id", id).Raw("items", "[]").Str("status", "inProgress").Raw("error", "").String()
		done(control.Receipt004{OK: true, Response: jsonw.NewObj(nil).Raw("turn", turn).String()})
	})
}

// turnSteer adds the input to the running turn (Codex's turn/steer): it
// is written to the CLI at once as a user message with an id of its own,
// and the CLI takes it into the turn after the next tool result
// (turn/steered then says the model has it); the turn goes on and ends
// with one turn/completed. A steer the CLI has not taken when the turn
// ends (no tool call followed) runs as a turn of its own, whose id is
// the steerId: turn/started, then its turn/completed.
func (w *controlWorker) turnSteer(req *lane004.Request, done func(control.Receipt004)) {
	switch {
	case req.ThreadID != w.threadID():
		done(w.otherThread(req.ThreadID))
		return
	case len(w.prompts) == 0:
		done(w.conflict("no turn is running; start one with turn/start"))
		return
	case req.TurnID != w.currentTurn():
		done(w.conflict("turn " + req.TurnID + " is not the running turn"))
		return
	case w.interruptID != "":
		done(w.conflict("turn " + req.TurnID + " is being interrupted"))
		return
	case w.run.Paused || len(w.run.heldIn) > 0:
		done(w.conflict("the run is paused (lane 001); resume it first"))
		return
	}
	p := w.sup.Live()
	if p == nil {
		done(control.Fail004(lane004.CodeWorkerUnavailable, "no CLI runs"))
		return
	}
	id := uuid.NewString()
	w.prompts = append(w.prompts, controlPrompt{uuid: id, steers: req.TurnID})
	p.Write(mapping.AppendUserMessage(nil, mapping.UserOptions{UUID: id}, inputBlocks(req.Input)...))
	done(control.Receipt004{OK: true, Response: jsonw.NewObj(nil).Str("turnId", req.TurnID).Str("steerId", id).String()})
}

// inputBlocks are the content blocks of a turn/start or turn/steer input.
func inputBlocks(input []lane004.Input) []mapping.Block {
	blocks := make([]mapping.Block, 0, len(input))
	for _, in := range input {
		if in.Kind == "image" {
			blocks = append(blocks, mapping.Block{Kind: mapping.BlockImage, MediaType: in.MediaType, Data: in.Data})
		} else {
			blocks = append(blocks, mapping.Block{Kind: mapping.BlockText, Text: in.Text})
		}
	}
	return blocks
}

// steerTaken writes turn/steered when the CLI echoes a steer it has
// taken into the running turn (--replay-user-messages).
func (w *controlWorker) steerTaken(id string) {
	for _, p := range w.prompts {
		if p.uuid == id && p.steers != "" {
			w.event("turn/steered", jsonw.NewObj(nil).Str("threadId", w.threadID()).Str("turnId", p.steers).Str("steerId", id).End())
			return
		}
	}
}

// promoteSteers makes each steer whose turn has ended a turn of its own:
// the CLI runs it after that turn's result.
func (w *controlWorker) promoteSteers() {
	for i := range w.prompts {
		p := &w.prompts[i]
		if p.steers != "" && !w.open(p.steers) {
			p.steers = ""
			w.turnStarted(p.uuid)
		}
	}
}

// open reports whether turn id has not ended.
func (w *controlWorker) open(id string) bool {
	for _, p := range w.prompts {
		if p.uuid == id && p.steers == "" {
			return true
		}
	}
	return false
}

// turnStarted writes turn/started for a prompt just sent.
func (w *controlWorker) turnStarted(id string) {
	if !w.w4.active {
		return
	}
	turn := jsonw.NewObj(nil).Str("id", id).Raw("items", "[]").Str("status", "inProgress").Raw("error", "").String()
	w.event("turn/started", jsonw.NewObj(nil).Str("threadId", w.threadID()).Raw("turn", turn).End())
}

// turnCompleted writes turn/completed: status completed, interrupted or
// failed (with the error's message).
func (w *controlWorker) turnCompleted(id, status, message string) {
	delete(w.w4.interrupted, id)
	if !w.w4.active {
		return
	}
	o := jsonw.NewObj(nil).Str("id", id).Raw("items", "[]").Str("status", status)
	if message != "" {
		o.Raw("error", jsonw.NewObj(nil).Str("message", message).String())
	} else {
		o.Raw("error", "")
	}
	w.event("turn/completed", jsonw.NewObj(nil).Str("threadId", w.threadID()).Raw("turn", o.String()).End())
	w.closeItems(id)
}

// turnEnded ends the turns a result answers.
func (w *controlWorker) turnEnded(id string, ev *mapping.Event) {
	status, message := "completed", ""
	switch {
	case ev.Result == mapping.ResultInterrupted || w.w4.interrupted[id]:
		status = "interrupted"
	case ev.Result != mapping.ResultSuccess:
		status = "failed"
		message = ev.Get("result").Str
		if message == "" {
			message = ev.Subtype
		}
	}
	w.turnCompleted(id, status, message)
}

// turnInterrupt interrupts the running turn in band; the receipt comes
// with the CLI's answer, turn/completed (interrupted) after it.
func (w *controlWorker) turnInterrupt(req *lane004.Request, done func(control.Receipt004)) {
	switch {
	case req.ThreadID != w.threadID():
		done(w.otherThread(req.ThreadID))
		return
	case req.TurnID != w.currentTurn():
		done(w.conflict("turn " + req.TurnID + " is not the running turn"))
		return
	}
	p := w.sup.Live()
	if p == nil {
		done(control.Fail004(lane004.CodeWorkerUnavailable, "no CLI runs"))
		return
	}
	if w.w4.interrupted == nil {
		w.w4.interrupted = make(map[string]bool)
	}
	w.w4.interrupted[req.TurnID] = true
	w.interrupt(p, func(res lane000.Result, detail string) {
		if res != lane000.OK || detail == interruptUnanswered {
			done(control.Fail004(lane004.CodeTimeout, detail+" within "+w.cfg.InterruptTimeout.String()+"; the turn ended"))
			return
		}
		done(control.Receipt004{OK: true, Response: "{}"})
	})
}

// threadList lists the sessions of the worker's working directory, off
// the loop.
func (w *controlWorker) threadList(req *lane004.Request, done func(control.Receipt004)) {
	cwd, configDir := w.sup.Dirs()
	limit, offset := req.Limit, 0
	if req.Cursor != "" {
		n, err := strconv.Atoi(req.Cursor)
		if err != nil || n < 0 {
			done(control.Fail004(lane004.CodeInvalidRequest, "cursor "+strconv.Quote(req.Cursor)+" is not one this worker gave"))
			return
		}
		offset = n
	}
	w.loop.Go(func(ctx context.Context) func() {
		resp, r := listThreads(ctx, w, configDir, cwd, offset, limit)
		return func() {
			if resp == "" {
				done(r)
				return
			}
			done(control.Receipt004{OK: true, Response: resp})
		}
	})
}

func listThreads(ctx context.Context, w *controlWorker, configDir, cwd string, offset, limit int) (string, control.Receipt004) {
	all, err := clifiles.List(configDir, cwd)
	if err != nil && len(all) == 0 {
		return "", control.Fail004(lane004.CodeInternalError, "reading the session folder: "+err.Error())
	}
	files, more, err := clifiles.Conversations(ctx, all, offset, limit, nil)
	if err != nil {
		return "", control.Fail004(lane004.CodeWorkerUnavailable, "the worker session is ending")
	}
	b := append([]byte(nil), `{"data":[`...)
	for i, f := range files {
		if i > 0 {
			b = append(b, ',')
		}
		created, _ := time.Parse(time.RFC3339Nano, f.CreatedAt)
		b = w.threadObj(b, f.ID, f.Title(), f.LastUserMessage(), created, f.ModTime)
	}
	b = append(b, `],"nextCursor":`...)
	if more {
		b = strconv.AppendQuote(b, strconv.Itoa(offset+limit))
	} else {
		b = append(b, "null"...)
	}
	return string(append(b, '}')), control.Receipt004{}
}

// threadRead reads one session of the worker's working directory, off
// the loop, with its turns when asked.
func (w *controlWorker) threadRead(req *lane004.Request, done func(control.Receipt004)) {
	cwd, configDir := w.sup.Dirs()
	path := clifiles.SessionFile(configDir, cwd, req.ThreadID)
	if path == "" {
		done(control.Fail004(lane004.CodeInvalidRequest, "thread "+req.ThreadID+" not found: this worker's working directory has no such session"))
		return
	}
	w.readThread(req.ThreadID, path, req.IncludeTurns, func(thread []byte, r control.Receipt004) {
		if thread == nil {
			done(r)
			return
		}
		done(control.Receipt004{OK: true, Response: jsonw.NewObj(nil).Raw("thread", string(thread)).String()})
	})
}

// readThread reads the thread object of the session file at path, off
// the loop, with its turns when include is set; then gets it on the
// loop, or nil and the error receipt.
func (w *controlWorker) readThread(id, path string, include bool, then func(thread []byte, r control.Receipt004)) {
	w.loop.Go(func(ctx context.Context) func() {
		var s mapping.SessionSummary
		var t lane004.Turns
		err := clifiles.Lines(ctx, path, func(line []byte) {
			s.Line(line)
			if include {
				t.Line(line)
			}
		})
		return func() {
			if err != nil {
				then(nil, control.Fail004(lane004.CodeInternalError, "reading thread "+id+": "+err.Error()))
				return
			}
			created, _ := time.Parse(time.RFC3339Nano, s.CreatedAt)
			thread := w.threadObj(nil, id, s.Title(), s.LastUserMessage(), created, time.Time{})
			if include {
				thread = append(thread[:len(thread)-1], `,"turns":`...)
				thread = t.Append(thread)
				thread = append(thread, '}')
			}
			then(thread, control.Receipt004{})
		}
	})
}

// threadRollback drops the thread's last turns between turns (Codex's
// thread/rollback), and with revertFiles restores the files they
// changed; dryRun changes nothing. The receipt holds the thread as it
// now is, with its turns, and what the rollback did ("rollback").
func (w *controlWorker) threadRollback(req *lane004.Request, done func(control.Receipt004)) {
	if r, ok := w.refuseTurn(req.ThreadID); ok {
		done(r)
		return
	}
	id := req.ThreadID
	w.sup.Rewind(adapter.RewindRequest{Turns: req.NumTurns, Files: req.RevertFiles, DryRun: req.DryRun}, func(res adapter.RewindResult, err *adapter.RewindError) {
		defer w.emit()
		if err != nil {
			code := lane004.CodeInvalidRequest
			switch err.Code {
			case adapter.RewindBusy:
				done(w.conflict(err.Message))
				return
			case adapter.RewindFailed:
				code = lane004.CodeWorkerUnavailable
			}
			done(control.Fail004(code, err.Message))
			return
		}
		cwd, configDir := w.sup.Dirs()
		path := clifiles.SessionFile(configDir, cwd, id)
		w.readThread(id, path, true, func(thread []byte, r control.Receipt004) {
			if thread == nil {
				done(r)
				return
			}
			rb := jsonw.NewObj(nil).Bool("dryRun", res.DryRun).Int("numTurns", int64(res.Turns)).Str("turnId", res.UserMessageID).Str("prompt", res.Prompt)
			if res.Files != nil {
				rb.Strings("files", res.Files)
			} else {
				rb.Raw("files", "")
			}
			done(control.Receipt004{OK: true, Response: jsonw.NewObj(nil).Raw("thread", string(thread)).Raw("rollback", rb.String()).String()})
		})
	})
}

// items004 turns the CLI's streaming events into item events of the
// running turn: agentMessage and reasoning items from content blocks,
// toolCall items from tool_use blocks and their results.
func (w *controlWorker) items004(ev *mapping.Event) {
	turn := w.currentTurn()
	if !w.w4.active || turn == "" {
		return
	}
	thread := w.threadID()
	switch ev.Kind {
	case mapping.KindMessageStart:
		w.w4.msgID = strings.Clone(ev.MessageID)
	case mapping.KindContentBlockStart:
		kind := ""
		switch ev.BlockType {
		case "text":
			kind = "agentMessage"
		case "thinking":
			kind = "reasoning"
		default:
			return
		}
		if w.w4.blocks == nil {
			w.w4.blocks = make(map[int]*block004)
		}
		b := &block004{id: w.w4.msgID + "/" + strconv.Itoa(ev.Index), kind: kind}
		w.w4.blocks[ev.Index] = b
		w.event("item/started", w.itemParams(thread, turn, ev.ParentToolUseID, w.textItem(b)))
	case mapping.KindTextDelta, mapping.KindThinkingDelta:
		b := w.w4.blocks[ev.Index]
		if b == nil {
			return
		}
		b.text.WriteString(ev.Text)
		method := "item/agentMessage/delta"
		if b.kind == "reasoning" {
			method = "item/reasoning/textDelta"
		}
		w.w4.buf = jsonw.NewObj(w.w4.buf[:0]).Str("threadId", thread).Str("turnId", turn).Str("itemId", b.id).Raw("delta", ev.TextRaw).End()
		w.event(method, w.w4.buf)
	case mapping.KindContentBlockStop:
		b := w.w4.blocks[ev.Index]
		if b == nil {
			return
		}
		delete(w.w4.blocks, ev.Index)
		w.event("item/completed", w.itemParams(thread, turn, ev.ParentToolUseID, w.textItem(b)))
	case mapping.KindAssistant:
		ev.Body.Get("content").ForEach(func(_, c gjson.Result) bool {
			if c.Get("type").Str != "tool_use" {
				return true
			}
			id, name := c.Get("id").Str, c.Get("name").Str
			if w.w4.tools == nil {
				w.w4.tools = make(map[string]string)
			}
			// Kept past this line, whose buffer the reader reuses.
			w.w4.tools[strings.Clone(id)] = strings.Clone(name)
			item := jsonw.NewObj(nil).Str("type", "toolCall").Str("id", id).Str("tool", name).Raw("input", c.Get("input").Raw).Str("status", "inProgress").String()
			w.event("item/started", w.itemParams(thread, turn, ev.ParentToolUseID, item))
			return true
		})
	case mapping.KindToolResult:
		ev.Body.Get("content").ForEach(func(_, c gjson.Result) bool {
			if c.Get("type").Str != "tool_result" {
				return true
			}
			id := c.Get("tool_use_id").Str
			name, ok := w.w4.tools[id]
			if !ok {
				return true
			}
			delete(w.w4.tools, id)
			status := "completed"
			if c.Get("is_error").Bool() {
				status = "failed"
			}
			item := jsonw.NewObj(nil).Str("type", "toolCall").Str("id", id).Str("tool", name).Str("status", status).Raw("result", c.Get("content").Raw).String()
			w.event("item/completed", w.itemParams(thread, turn, ev.ParentToolUseID, item))
			return true
		})
	}
}

func (w *controlWorker) textItem(b *block004) string {
	o := jsonw.NewObj(nil).Str("type", b.kind).Str("id", b.id)
	if b.kind == "reasoning" {
		return o.Strings("content", []string{b.text.String()}).String()
	}
	return o.Str("text", b.text.String()).String()
}

func (w *controlWorker) itemParams(thread, turn, parent, item string) []byte {
	o := jsonw.NewObj(w.w4.buf[:0]).Str("threadId", thread).Str("turnId", turn)
	if parent != "" {
		o.Str("parentItemId", parent)
	}
	w.w4.buf = o.Raw("item", item).End()
	return w.w4.buf
}

// closeItems forgets the items of a turn that ended (an interrupted
// stream leaves blocks open).
func (w *controlWorker) closeItems(string) {
	clear(w.w4.blocks)
	w.w4.msgID = ""
	for id, a := range w.w4.approvals {
		w.resolved(id, a, "turn_ended")
	}
}

// approvalMethod names the event of a permission request by its tool, as
// the Codex app-server names its approval requests.
func approvalMethod(tool string) string {
	switch tool {
	case "Bash":
		return "item/commandExecution/requestApproval"
	case "Edit", "Write", "MultiEdit", "NotebookEdit":
		return "item/fileChange/requestApproval"
	case "AskUserQuestion":
		return "item/tool/requestUserInput"
	}
	return "item/tool/requestApproval"
}

// approvalRequested holds a can_use_tool for ccbridge/approval/respond;
// false when the worker's events are not kept (nobody could answer).
func (w *controlWorker) approvalRequested(ev *mapping.Event) bool {
	if !w.w4.active || w.log004() == nil {
		return false
	}
	a := approval004{
		turnID: w.currentTurn(), toolUseID: strings.Clone(ev.ToolUseID), tool: strings.Clone(ev.ToolName),
		input: strings.Clone(ev.Body.Get("input").Raw), suggestions: strings.Clone(ev.Body.Get("permission_suggestions").Raw),
	}
	if w.w4.approvals == nil {
		w.w4.approvals = make(map[string]approval004)
	}
	id := strings.Clone(ev.RequestID)
	w.w4.approvals[id] = a
	o := jsonw.NewObj(nil).Str("threadId", w.threadID()).StrOrNull("turnId", a.turnID).StrOrNull("itemId", a.toolUseID).
		Str("approvalId", id).Str("tool", a.tool).Raw("input", a.input).Raw("suggestions", a.suggestions)
	if r := ev.Body.Get("decision_reason").Str; r != "" {
		o.Str("reason", r)
	}
	w.event(approvalMethod(a.tool), o.End())
	return true
}

// resolved writes serverRequest/resolved and forgets the approval.
func (w *controlWorker) resolved(id string, a approval004, how string) {
	delete(w.w4.approvals, id)
	w.event("serverRequest/resolved", jsonw.NewObj(nil).Str("threadId", w.threadID()).StrOrNull("turnId", a.turnID).
		Str("approvalId", id).Str("resolution", how).End())
}

// approvalRespond answers a held permission request or question.
func (w *controlWorker) approvalRespond(req *lane004.Request, done func(control.Receipt004)) {
	a, ok := w.w4.approvals[req.ApprovalID]
	p := w.sup.Live()
	if !ok || p == nil {
		done(w.conflict("approval " + req.ApprovalID + " is not pending (answered, withdrawn by the CLI, or never asked)"))
		return
	}
	switch req.Decision {
	case "accept", "acceptForSession":
		allow := mapping.Allow{ToolUseID: a.toolUseID}
		if req.Answers != "" {
			input, err := lane004.WithAnswers(a.input, req.Answers)
			if err != nil {
				done(control.Fail004(lane004.CodeInvalidRequest, err.Error()))
				return
			}
			allow.UpdatedInput = input
		}
		if req.Decision == "acceptForSession" {
			allow.UpdatedPermissions = a.suggestions
		}
		p.Write(mapping.AppendAllow(nil, req.ApprovalID, allow))
	default:
		p.Write(mapping.AppendDeny(nil, req.ApprovalID, mapping.Deny{Message: req.Message, Interrupt: req.Decision == "cancel", ToolUseID: a.toolUseID}))
	}
	done(control.Receipt004{OK: true, Response: "{}"})
	w.resolved(req.ApprovalID, a, req.Decision)
}

// status004 is the worker's status for ccbridge serve, read on its loop
// from any goroutine; false once the session has ended.
func (w *controlWorker) status004() ([]byte, bool) {
	ch := make(chan []byte, 1)
	if !w.loop.Submit(func() {
		ch <- jsonw.NewObj(nil).Str("state", string(w.state)).StrOrNull("thread_id", w.threadID()).
			StrOrNull("turn_id", w.currentTurn()).StrOrNull("model", w.run.Model).Bool("paused", w.run.Paused).End()
	}) {
		return nil, false
	}
	select {
	case b := <-ch:
		return b, true
	case <-w.loop.Done():
		return nil, false
	}
}
