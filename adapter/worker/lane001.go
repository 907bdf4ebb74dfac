package worker

// Lane 001 on the control dialect: the run that pause, resume, cancel and
// escalate steer (docs/protocol/control.md, "Lane 001"). A pause holds
// the CLI's PreToolUse hook_callback (registered by initialize for every
// tool), so the next tool waits instead of failing, and holds the prompts
// that arrive, so no turn starts; resume answers the hooks and sends the
// prompts. Everything here runs on the session's loop.

import (
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/adapter/control"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/lane000"
	"github.com/ccbridge/ccbridge/mapping/lane001"
)

// pauseHookID is the hook callback id ccbridge registers.
const pauseHookID = "ccbridge-pause"

// pauseHookTimeout is the hook's timeout in seconds: the CLI gives up on a
// held answer after it (and the tool is then lost, not run), so it is the
// longest a pause can hold a tool. 2147483 s (24.8 days) is the largest
// whose milliseconds fit a 32-bit timer; docs/control/lane001-cli.md
// records the CLI waiting with it.
const pauseHookTimeout = 2147483

// pauseHooks is the initialize request's hooks: no matcher, so every tool.
var pauseHooks = `{"PreToolUse":[{"hookCallbackIds":["` + pauseHookID + `"],"timeout":` + strconv.Itoa(pauseHookTimeout) + `}]}`

// heldHook is a hook_callback whose answer a pause holds.
type heldHook struct {
	requestID, tool, toolUseID string
}

// heldInput is a prompt that arrived while paused.
type heldInput struct {
	requestID string
	text      []byte
}

// escalation is a set_model request awaiting the CLI's answer.
type escalation struct {
	reason, previous string
	done             func(lane001.Result)
}

// runState is the control dialect's lane-001 state.
type runState struct {
	control.RunState
	id       string // --run-id; "" names the run by the session id
	kept     bool   // the plane keeps it (--state-dir, --bus)
	loaded   bool
	mode     string // the CLI's permission mode
	max      int    // --max-turns, 0 when not given
	held     []heldHook
	heldIn   []heldInput
	initID   string
	escalate map[string]escalation
	done     bool          // DONE was written
	last     lane001.Stack // the stack of the last STATE written
}

// RunID implements control.Target001.
func (w *controlWorker) RunID() string {
	if w.run.id != "" {
		return w.run.id
	}
	return w.worker.SessionID
}

// loadRun reads the persisted state of the run once its id is known.
func (w *controlWorker) loadRun() {
	if w.run.loaded || w.RunID() == "" {
		return
	}
	w.run.loaded = true
	w.run.RunID = w.RunID()
	st, kept, err := w.plane.LoadRun(w.run.RunID)
	w.run.kept = kept
	if kept {
		if err != nil {
			w.log.Warn("control lane 001: the run's state could not be read; it starts afresh", "err", err)
			return
		}
		model := w.run.Model
		w.run.RunState = st
		if st.Model == "" {
			w.run.Model = model
		}
		if st.Paused {
			w.log.Info("control lane 001: the run was paused before the restart; it stays paused until resume", "run_id", st.RunID)
		}
	}
}

// saveRun keeps the run's state (--state-dir, --bus).
func (w *controlWorker) saveRun() {
	if !w.run.kept {
		return
	}
	w.run.UpdatedAt = w.loop.Now()
	if err := w.plane.SaveRun(w.run.RunState); err != nil {
		w.log.Warn("control lane 001: the run's state could not be kept", "err", err)
	}
}

// runStatus is the run's state for STATE: paused, running or idle.
func (w *controlWorker) runStatus() string {
	switch {
	case w.run.Paused:
		return lane001.StatePaused
	case len(w.prompts) > 0 || len(w.run.heldIn) > 0:
		return lane001.StateRunning
	}
	return lane001.StateIdle
}

func (w *controlWorker) stack() lane001.Stack {
	mode := w.run.mode
	if mode == "" {
		mode = "default"
	}
	return lane001.Stack{ID: w.RunID(), Mode: mode, Iter: w.run.Iter, Max: w.run.max,
		Model: w.run.Model, State: w.runStatus(), EscalationReason: w.run.EscalationReason}
}

// StateLine is the run's STATE now.
func (w *controlWorker) StateLine() []byte {
	return lane001.AppendState(nil, w.RunID(), w.loop.Now(), w.stack())
}

// publish writes a loop:current event to the UI and the socket's
// subscribers, after what is pending (so after a RESULT just written).
func (w *controlWorker) publish(line []byte) {
	w.emit()
	w.loop.Emit(line)
	w.plane.Feed().Publish(line)
}

func (w *controlWorker) publishState() {
	w.run.last = w.stack()
	w.publish(lane001.AppendState(nil, w.RunID(), w.loop.Now(), w.run.last))
}

// syncState writes a STATE when the run changed since the last one (a
// turn began or ended, the model changed).
func (w *controlWorker) syncState() {
	if w.stack() != w.run.last {
		w.publishState()
	}
}

// Pause implements control.Target001.
func (w *controlWorker) Pause(done func(lane001.Result)) {
	if w.run.Paused {
		done(failure(lane001.CodeInvalidState, "Run "+w.RunID()+" is already paused"))
		return
	}
	w.run.Paused = true
	w.saveRun()
	where := "between turns: the next turn waits for resume"
	if len(w.prompts) > 0 {
		where = "in turn " + strconv.Itoa(w.run.Iter+1) + ": the next tool call waits for resume"
	}
	done(lane001.Result{Status: lane001.StatusSuccess, Message: "Run paused at iteration " + strconv.Itoa(w.run.Iter) + ", " + where})
	w.publishState()
}

// Resume implements control.Target001.
func (w *controlWorker) Resume(done func(lane001.Result)) {
	if !w.run.Paused {
		done(failure(lane001.CodeInvalidState, "Run "+w.RunID()+" is not paused (it is "+w.runStatus()+")"))
		return
	}
	w.run.Paused = false
	w.saveRun()
	tools, prompts := len(w.run.held), len(w.run.heldIn)
	// The RESULT first: sending a held prompt writes a STATE.
	done(lane001.Result{Status: lane001.StatusSuccess, Message: "Run resumed at iteration " + strconv.Itoa(w.run.Iter) +
		": " + plural(tools, "held tool call") + " released, " + plural(prompts, "held prompt") + " to run as turns of their own"})
	w.releaseHooks(`{}`)
	w.releaseInput()
	w.syncState()
}

// releaseInput sends the oldest held prompt once the run is neither
// paused nor in a turn: each held prompt becomes a turn of its own (one
// written during a turn would join it), the next one after its result.
func (w *controlWorker) releaseInput() {
	if w.run.Paused || len(w.prompts) > 0 || len(w.run.heldIn) == 0 || w.loop.Ending() {
		return
	}
	in := w.run.heldIn[0]
	w.run.heldIn = w.run.heldIn[1:]
	w.inject(in.requestID, in.text, false, w.releasedDone(in.requestID))
}

// Cancel implements control.Target001: the running turn is interrupted in
// band, held tools are refused, held prompts dropped, and the pause ends.
func (w *controlWorker) Cancel(done func(lane001.Result)) {
	p := w.sup.Live()
	running := p != nil && len(w.prompts) > 0
	if !running && !w.run.Paused && len(w.run.heldIn) == 0 {
		done(failure(lane001.CodeInvalidState, "Run "+w.RunID()+" has no turn to cancel (it is idle)"))
		return
	}
	w.run.Paused = false
	w.saveRun()
	now := w.loop.Now()
	for _, in := range w.run.heldIn {
		w.out = append(w.out, w.worker.AppendTurnLost(nil, in.requestID, "cancelled by a lane-001 cancel before it was sent", now))
	}
	w.run.heldIn = nil
	finish := func() {
		done(lane001.Result{Status: lane001.StatusSuccess})
		w.publish(lane001.AppendAbort(nil, w.RunID(), lane001.ReasonUserCancelled, nil))
	}
	if !running {
		w.releaseHooks(denyHook)
		finish()
		return
	}
	w.interrupt(p, func(lane000.Result, string) { finish() })
	// The CLI withdraws a held hook when it takes the interrupt; should it
	// read this answer first, the tool is still refused.
	w.releaseHooks(denyHook)
}

// denyHook refuses a held tool (a cancel).
const denyHook = `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"the run was cancelled"}}`

// Escalate implements control.Target001: set_model on the live CLI (the
// CLI's answer is the model now in use), else the next CLI's --model.
func (w *controlWorker) Escalate(model, reason string, done func(lane001.Result)) {
	prev := w.run.Model
	if w.sup.Live() == nil && !w.sup.Respawning() {
		w.sup.Opts.Model = model
		w.escalated(prev, model, reason, done)
		return
	}
	w.sup.WhenLive(func(err error) {
		p := w.sup.Live()
		if err != nil || p == nil {
			done(failure(lane001.CodeInvalidState, "the CLI is not running; escalate again"))
			return
		}
		id := "ccb-sm-" + uuid.NewString()
		if w.run.escalate == nil {
			w.run.escalate = make(map[string]escalation)
		}
		w.run.escalate[id] = escalation{reason: reason, previous: prev, done: done}
		p.Write(mapping.AppendSetModel(nil, id, model))
	})
}

func (w *controlWorker) escalated(prev, model, reason string, done func(lane001.Result)) {
	w.run.Model = model
	w.run.EscalationReason = reason
	w.saveRun()
	done(lane001.Result{Status: lane001.StatusSuccess, PreviousModel: prev, NewModel: model})
	w.publishState()
}

func failure(code, msg string) lane001.Result {
	return lane001.Result{Status: lane001.StatusFailure, Code: code, Message: msg}
}

func plural(n int, what string) string {
	s := strconv.Itoa(n) + " " + what
	if n != 1 {
		s += "s"
	}
	return s
}

// releaseHooks answers every held hook_callback with answer.
func (w *controlWorker) releaseHooks(answer string) {
	if p := w.sup.Live(); p != nil {
		for _, h := range w.run.held {
			p.Write(mapping.AppendControlResponse(nil, h.requestID, answer))
		}
	}
	w.run.held = nil
}

// releasedDone is the done of a prompt sent on resume: its lane-000 ack
// was given when it was held, so a failure now ends it as lost.
func (w *controlWorker) releasedDone(requestID string) func(lane000.Result, string) {
	return func(res lane000.Result, detail string) {
		if res != lane000.OK {
			w.out = append(w.out, w.worker.AppendTurnLost(nil, requestID, "held while paused, then not sent: "+detail, w.loop.Now()))
		}
	}
}

// sendInit registers the pause hook with a new child.
func (w *controlWorker) sendInit(p *adapter.Proc) {
	w.run.initID = "ccb-init-" + uuid.NewString()
	p.Write(mapping.AppendInitializeHooks(nil, w.run.initID, pauseHooks))
}

// runCLI is lane 001's part of a CLI line; it reports whether the line
// was a request of the CLI it answered (or holds).
func (w *controlWorker) runCLI(p *adapter.Proc, ev *mapping.Event) bool {
	switch ev.Kind {
	case mapping.KindHookCallback:
		if ev.Body.Get("callback_id").Str != pauseHookID {
			return false
		}
		if !w.run.Paused {
			p.Write(mapping.AppendControlResponse(nil, ev.RequestID, `{}`))
			return true
		}
		h := heldHook{requestID: strings.Clone(ev.RequestID), tool: strings.Clone(ev.Body.Get("input.tool_name").Str), toolUseID: strings.Clone(ev.ToolUseID)}
		w.run.held = append(w.run.held, h)
		w.log.Info("control lane 001: a tool call waits for resume", "tool", h.tool, "tool_use_id", h.toolUseID)
		return true
	case mapping.KindControlCancelRequest:
		for i, h := range w.run.held {
			if h.requestID == ev.RequestID {
				w.run.held = append(w.run.held[:i], w.run.held[i+1:]...)
				break
			}
		}
	case mapping.KindSystemInit:
		// The line's buffer is reused: keep copies.
		if m := ev.Get("model").Str; m != "" {
			w.run.Model = strings.Clone(m)
		}
		if m := ev.Get("permissionMode").Str; m != "" {
			w.run.mode = strings.Clone(m)
		}
	case mapping.KindControlResponse:
		switch {
		case ev.RequestID == w.run.initID:
			w.run.initID = ""
			if ev.IsError {
				w.log.Warn("the CLI refused initialize: pause cannot hold its tools", "err", ev.Body.Get("error").Str)
			} else if w.run.Model == "" || !strings.HasPrefix(w.run.Model, "claude-") {
				w.run.Model = strings.Clone(resolveModel(ev.Body.Get("response.models"), w.run.Model))
			}
		default:
			e, ok := w.run.escalate[ev.RequestID]
			if !ok {
				return false
			}
			delete(w.run.escalate, ev.RequestID)
			if ev.IsError {
				e.done(failure(lane001.CodeBadRequest, "the CLI refused the model: "+strings.Clone(ev.Body.Get("error").Str)))
				return false
			}
			model := strings.Clone(ev.Body.Get("response.model").Str)
			w.sup.Opts.Model = model // a respawned CLI keeps it
			w.escalated(e.previous, model, e.reason, e.done)
		}
	}
	return false
}

// resolveModel is the model name the CLI's initialize answer gives for
// alias ("" for its default), or alias itself.
func resolveModel(models gjson.Result, alias string) string {
	want := alias
	if want == "" {
		want = "default"
	}
	for _, m := range models.Array() {
		if m.Get("value").Str == want {
			if r := m.Get("resolvedModel").Str; r != "" {
				return r
			}
		}
	}
	return alias
}

// runExited settles what waits for the CLI that exited: escalations fail,
// held hooks are gone with it; at the session's end the run is DONE.
func (w *controlWorker) runExited(code int) {
	for id, e := range w.run.escalate {
		delete(w.run.escalate, id)
		e.done(failure(lane001.CodeInvalidState, "the CLI exited before it answered set_model"))
	}
	w.run.held = nil
	if !w.loop.Ending() {
		w.syncState()
		return
	}
	if w.run.done {
		return
	}
	w.run.done = true
	now := w.loop.Now()
	for _, in := range w.run.heldIn {
		w.out = append(w.out, w.worker.AppendTurnLost(nil, in.requestID, "the session ended while the prompt was held by a pause", now))
	}
	w.run.heldIn = nil
	reason := lane001.ReasonCompleted
	if code != 0 && !w.loop.Stopping() {
		reason = lane001.ReasonFailed
	}
	w.publish(lane001.AppendDone(nil, w.RunID(), w.loop.Now(), reason, nil))
}
