package rpc

import (
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/jsonrpc"
)

// Run statuses carried by run.status.
const (
	StatusRunning    = "running"
	StatusAwaitingUI = "awaiting_ui"
	StatusCompleted  = "completed"
	StatusError      = "error"
	StatusCancelled  = "cancelled"
)

// Terminal reports whether status ends a run.
func Terminal(status string) bool {
	return status == StatusCompleted || status == StatusError || status == StatusCancelled
}

// Reasons carried by ui.request.cancelled.
const (
	ReasonWithdrawn     = "withdrawn"       // the CLI withdrew the request (control_cancel_request)
	ReasonResolvedByCLI = "resolved_by_cli" // the tool's result arrived while the request was open
	ReasonRunEnded      = "run_ended"       // the run's turn ended while the request was open
	ReasonRunCancelled  = "run_cancelled"   // run.cancel (or SIGINT) cancelled the run
	ReasonChildExited   = "child_exited"    // the CLI exited
)

// Provider is the provider name ccbridge reports (model.list, diagnostics).
const Provider = "anthropic"

// Options configure a Translator. The zero value works.
type Options struct {
	// Diagnostics emits run.diagnostics notifications (--diagnostics).
	Diagnostics bool
	// UIRequestIDPrefix prefixes the ids of runtime → UI requests; a
	// counter follows it. Default "ui-".
	UIRequestIDPrefix string
}

// UICapabilities are what the UI said it supports in initialize. The zero
// value of a Translator assumes all three.
type UICapabilities struct {
	Confirm, Pick, Prompt bool
}

// Output collects what one call produces: lines for the UI and lines for
// the CLI's stdin, each a complete JSON object without the newline, each a
// fresh slice the caller owns.
type Output struct {
	UI  [][]byte
	CLI [][]byte
}

// Reset empties o, keeping its capacity.
func (o *Output) Reset() {
	clear(o.UI)
	clear(o.CLI)
	o.UI, o.CLI = o.UI[:0], o.CLI[:0]
}

// Translator is the rpc dialect's per-connection state: the runs and
// their event sequence numbers, the CLI turns in flight, the runtime → UI
// requests waiting for an answer, and the model calls being measured. It
// turns routed CLI events into agent.event, run.status, run.context,
// run.diagnostics and ui.*.request lines, and the UI's answers into
// control_response lines for the CLI.
//
// It does no I/O and reads no clock: every call that stamps a time takes
// now, in Unix milliseconds. It is not safe for concurrent use; one
// goroutine (the adapter's event loop) owns it.
type Translator struct {
	opt  Options
	caps UICapabilities

	sessionID string
	meta      Metadata

	runs  map[string]*run // active and recently ended runs
	ended []string        // ended run ids, oldest first, for eviction
	turns []*run          // runs whose prompt the CLI has, oldest first; the head owns the CLI's output
	held  string          // the active run, when its prompt is not sent yet
	last  string          // the most recently begun run

	tools        map[string]toolInfo // tool_use id → tool, for the current turn
	call         *llmCall            // the main-thread model call streaming now
	requestingAt int64               // when the CLI announced its next model call
	windows      map[string]int64    // model → context window, from results

	reqs     *jsonrpc.Pending[*pendingReq] // runtime → UI requests by UI id
	byCLI    map[string]*pendingReq        // the open ones by the CLI's request_id
	reqOrder uint64
}

// maxEnded bounds how many ended runs are remembered for run.cancel.
const maxEnded = 1024

type run struct {
	id     string
	status string
	seq    int64
	sent   bool
	steps  int
	calls  map[string]int // model → calls this run
	last   *llmCall       // last main-thread call, for run.context
	text   string         // last main-thread text of the run
	// steers are the uuids of the run's steers that no result has named
	// yet: the run ends with the result that answers the last of them.
	steers []string
}

type toolInfo struct {
	name   string
	parent string
	plan   string // ExitPlanMode's plan (its can_use_tool input is {})
}

// New returns a Translator for one UI connection.
func New(opt Options) *Translator {
	if opt.UIRequestIDPrefix == "" {
		opt.UIRequestIDPrefix = "ui-"
	}
	return &Translator{
		opt:     opt,
		caps:    UICapabilities{Confirm: true, Pick: true, Prompt: true},
		runs:    make(map[string]*run),
		tools:   make(map[string]toolInfo),
		windows: make(map[string]int64),
		reqs:    jsonrpc.NewPending[*pendingReq](opt.UIRequestIDPrefix),
		byCLI:   make(map[string]*pendingReq),
	}
}

// SetUICapabilities records what the UI supports (from initialize).
// Without confirm, tool permissions are denied at once; without pick,
// questions are asked with ui.prompt.request; without either, denied.
func (t *Translator) SetUICapabilities(c UICapabilities) { t.caps = c }

// SessionID is the CLI session's id, "" until known.
func (t *Translator) SessionID() string { return t.sessionID }

// SetSessionID sets the session id before the CLI says it (a session
// started with --session-id or --resume).
func (t *Translator) SetSessionID(id string) { t.sessionID = strings.Clone(id) }

// ActiveRun returns the id of the run that is neither ended nor cancelled,
// "" when none is.
func (t *Translator) ActiveRun() string {
	if r := t.runs[t.last]; r != nil && !Terminal(r.status) {
		return r.id
	}
	return ""
}

// LastRun returns the id of the most recently begun run, "" before any.
func (t *Translator) LastRun() string { return t.last }

// Busy reports whether the CLI still owes a result for a prompt (also for
// a cancelled run whose turn has not ended yet).
func (t *Translator) Busy() bool { return len(t.turns) > 0 }

// Draining reports whether the CLI's current turn belongs to a cancelled
// run: a prompt written now would queue behind it.
func (t *Translator) Draining() bool {
	return len(t.turns) > 0 && t.turns[0].status == StatusCancelled
}

// Held returns the active run whose prompt has not been written to the CLI
// yet, "" when none.
func (t *Translator) Held() string { return t.held }

// RunStatus returns a run's status, and whether the run is known (begun
// on this connection and not evicted from the last 1024 ended runs).
func (t *Translator) RunStatus(runID string) (string, bool) {
	r, ok := t.runs[runID]
	if !ok {
		return "", false
	}
	return r.status, true
}

// PendingRequests returns how many runtime → UI requests are open.
func (t *Translator) PendingRequests() int { return t.reqs.Len() }

// BeginRun registers a run the UI started and appends its run.status
// running. Its prompt is sent later (SentPrompt), at once or after the CLI
// is free. An id already in use is ignored.
func (t *Translator) BeginRun(runID string, out *Output) {
	if _, dup := t.runs[runID]; dup {
		return
	}
	r := &run{id: strings.Clone(runID), status: StatusRunning, calls: make(map[string]int)}
	t.runs[r.id] = r
	t.last = r.id
	t.held = r.id
	out.UI = append(out.UI, runStatusLine(r.id, StatusRunning, ""))
}

// SentPrompt records that the run's prompt was written to the CLI: the
// CLI's output from its turn on belongs to this run, after the turns
// before it have ended.
func (t *Translator) SentPrompt(runID string) {
	r, ok := t.runs[runID]
	if !ok || r.sent {
		return
	}
	r.sent = true
	if t.held == runID {
		t.held = ""
	}
	t.turns = append(t.turns, r)
}

// Steer records a steer of run runID whose user message carries uuid id,
// to be written to the CLI now: the run must be the one whose turn the
// CLI is running (-32002 otherwise). The CLI takes the text into that
// turn after its next tool result, and the result names it; a steer
// not taken by then runs as a turn of its own, which still belongs to
// the run: the run ends with the result that answers its last steer.
func (t *Translator) Steer(runID, id string) *Error {
	r, ok := t.runs[runID]
	switch {
	case !ok:
		return &Error{Code: CodeRunNotFound, Message: "no run " + strconv.Quote(runID) + " on this connection"}
	case Terminal(r.status):
		return &Error{Code: CodeRunNotFound, Message: "run " + runID + " is " + r.status + ": only a running run can be steered"}
	case t.head() != r:
		return &Error{Code: CodeRunNotFound, Message: "run " + runID + " has not reached the CLI yet: steer it once it runs"}
	}
	r.steers = append(r.steers, strings.Clone(id))
	return nil
}

// answered drops the steers a result names (user_message_uuids) and
// reports whether some are still to be answered.
func (r *run) answered(e *mapping.Event) bool {
	if len(r.steers) == 0 {
		return false
	}
	named := e.Get("user_message_uuids")
	r.steers = slices.DeleteFunc(r.steers, func(id string) bool {
		found := false
		named.ForEach(func(_, v gjson.Result) bool {
			found = v.Str == id
			return !found
		})
		return found
	})
	return len(r.steers) > 0
}

// CancelResult says what CancelRun did.
type CancelResult struct {
	Known     bool   // the run exists
	OK        bool   // the run is cancelled now (or was already)
	Status    string // the run's status after the call
	Interrupt bool   // the CLI is running the run's turn: interrupt it
}

// CancelRun cancels a run: its open UI requests are settled
// (ui.request.cancelled, reason run_cancelled), then run.status cancelled
// is appended. From then on nothing more is emitted for the run; the CLI's
// remaining output for its turn is dropped until the turn's result. A run
// that already ended is left as it is (OK is true only if it was
// cancelled). reason, if any, is the run.status message.
func (t *Translator) CancelRun(runID, reason string, out *Output) CancelResult {
	r, ok := t.runs[runID]
	if !ok {
		return CancelResult{}
	}
	if Terminal(r.status) {
		return CancelResult{Known: true, OK: r.status == StatusCancelled, Status: r.status}
	}
	t.settleRun(r.id, ReasonRunCancelled, false, 0, out)
	interrupt := false
	for _, tr := range t.turns {
		if tr == r {
			interrupt = true
		}
	}
	if t.held == r.id {
		t.held = ""
	}
	if reason == "" {
		reason = "cancelled by the UI"
	}
	t.end(r, StatusCancelled, reason, out)
	return CancelResult{Known: true, OK: true, Status: StatusCancelled, Interrupt: interrupt}
}

// DropTurns forgets the CLI turns in flight, for a CLI that ccbridge
// stopped itself (an interrupt it did not acknowledge in time): their runs
// are cancelled already; any other run still in flight ends with error
// (message says why). The held run, if any, stays.
func (t *Translator) DropTurns(message string, now int64, out *Output) {
	for _, r := range t.turns {
		t.settleRun(r.id, ReasonChildExited, true, now, out)
		if !Terminal(r.status) {
			t.end(r, StatusError, message, out)
		}
	}
	clear(t.turns)
	t.turns = t.turns[:0]
	t.endTurn()
}

// ChildExited reports a CLI that exited on its own: open requests are
// settled (reason child_exited) and every run in flight ends with error,
// message saying so. The held run, if any, stays: it is sent to the next
// CLI.
func (t *Translator) ChildExited(message string, now int64, out *Output) {
	t.DropTurns(message, now, out)
	for _, p := range t.pendingInOrder() {
		t.settle(p, ReasonChildExited, true, now, out)
	}
}

// end makes a run terminal and appends its run.status.
func (t *Translator) end(r *run, status, message string, out *Output) {
	r.status = status
	out.UI = append(out.UI, runStatusLine(r.id, status, message))
	t.ended = append(t.ended, r.id)
	if len(t.ended) > maxEnded {
		old := t.ended[0]
		t.ended = t.ended[1:]
		if o := t.runs[old]; o != nil && Terminal(o.status) {
			delete(t.runs, old)
		}
	}
}

// head returns the run owning the CLI's current turn, nil when none.
func (t *Translator) head() *run {
	if len(t.turns) == 0 {
		return nil
	}
	return t.turns[0]
}

// live returns the head run when it may still emit events.
func (t *Translator) live() *run {
	if r := t.head(); r != nil && !Terminal(r.status) {
		return r
	}
	return nil
}

// popTurn removes the head turn at its result.
func (t *Translator) popTurn() {
	if len(t.turns) > 0 {
		t.turns[0] = nil
		t.turns = t.turns[1:]
	}
	t.endTurn()
}

func (t *Translator) endTurn() {
	clear(t.tools)
	t.call = nil
	t.requestingAt = 0
}

// setStatus moves a live run between running and awaiting_ui.
func (t *Translator) setStatus(r *run, status string, out *Output) {
	if r == nil || Terminal(r.status) || r.status == status {
		return
	}
	r.status = status
	out.UI = append(out.UI, runStatusLine(r.id, status, ""))
}

// Metadata is what the CLI said about the session in its latest
// system/init (raw JSON values, "" when not seen).
type Metadata struct {
	CWD            string // string
	Model          string // string
	PermissionMode string // string
	Tools          string // array
	MCPServers     string // array
	Skills         string // array
	SlashCommands  string // array
	Agents         string // array
	Version        string // claude_code_version, string
	OutputStyle    string // string
}

// Metadata returns the session facts of the latest system/init, updated
// by later permission-mode changes.
func (t *Translator) Metadata() Metadata { return t.meta }

func (t *Translator) systemInit(ev gjson.Result) {
	get := func(k string) string { return strings.Clone(ev.Get(k).Raw) }
	t.meta = Metadata{
		CWD: get("cwd"), Model: get("model"), PermissionMode: get("permissionMode"),
		Tools: get("tools"), MCPServers: get("mcp_servers"), Skills: get("skills"),
		SlashCommands: get("slash_commands"), Agents: get("agents"),
		Version: get("claude_code_version"), OutputStyle: get("output_style"),
	}
}

// ContextWindow returns the context window the CLI reported for model in
// a result, 0 when not known yet.
func (t *Translator) ContextWindow(model string) int64 { return t.windows[model] }
