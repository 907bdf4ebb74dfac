package ipc

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/ccbridge/ccbridge/internal/jsonw"
	"github.com/tidwall/gjson"
)

// Version is the value of "ipc_version" on every outbound message.
const Version = 2

// Outbound message types.
const (
	TypeSessionInit             = "session_init"
	TypeSystemMetadata          = "system_metadata"
	TypeAssistantText           = "assistant_text"
	TypeThinkingText            = "thinking_text"
	TypeToolUse                 = "tool_use"
	TypeToolResult              = "tool_result"
	TypeToolUseStructured       = "tool_use_structured"
	TypeControlRequestForward   = "control_request_forward"
	TypeControlRequestCancelled = "control_request_cancelled"
	TypeTurnComplete            = "turn_complete"
	TypeTurnCancelled           = "turn_cancelled"
	TypeCostUpdate              = "cost_update"
	TypeCompactBoundary         = "compact_boundary"
	TypeStatus                  = "status"
	TypeTaskUpdate              = "task_update"
	TypeError                   = "error"
	TypeUnknown                 = "unknown"
	TypeQueryResult             = "query_result"
)

// Reasons carried by control_request_cancelled.
const (
	// ReasonWithdrawn: the CLI sent control_cancel_request (for example an
	// interrupt arrived while the prompt was open).
	ReasonWithdrawn = "withdrawn"
	// ReasonTurnEnded: the turn's result arrived while the request was still
	// unanswered.
	ReasonTurnEnded = "turn_ended"
	// ReasonResolvedByCLI: the tool's result arrived while the request was
	// unanswered (the CLI failed the request itself, as on stdin EOF).
	ReasonResolvedByCLI = "resolved_by_cli"
)

// Options configure a Translator. The zero value works.
type Options struct {
	// ForwardUnknown forwards lines of unknown types and subtypes as
	// {"type":"unknown","ipc_version":2,"raw":<line>} (--forward-unknown).
	// Without it they produce nothing.
	ForwardUnknown bool

	// RequestIDPrefix prefixes the ids of the control requests FromUI
	// builds; a counter follows it. Default "ccbridge-".
	RequestIDPrefix string

	// NewPromptID, when set, gives every user message FromUI builds a
	// client uuid (Command.PromptID): the CLI then names the prompts a
	// result answers (user_message_uuids, several when it merged queued
	// prompts into one turn) and reports each prompt's fate
	// (command_lifecycle). It must return a fresh UUID each call.
	NewPromptID func() string

	// Echo makes FromUI give each user_message, tool_approval and
	// question_answer it takes an echo (Command.Echo, --echo-input).
	Echo bool
}

// Translator turns routed CLI events into ipc lines and ipc lines from the
// UI into commands for the CLI, keeping the small per-session state both
// directions need. It does no I/O and is not safe for concurrent use: one
// goroutine (the adapter's event loop) owns it.
//
// FromCLI and AppendCLI keep no reference into the event's line after they
// return: what the Translator keeps, it copies. A caller may reuse the
// memory of the line once the call is over (TestGoldenReusedLines checks).
type Translator struct {
	opt Options

	sessionID string
	meta      []byte // last system_metadata line sent

	msgs map[string]*msgState // per API message id, cleared at each result

	// The message msg found last, which a stream of deltas asks for
	// again and again.
	lastMsgID string
	lastMsg   *msgState
	tools     map[string]toolInfo // per tool_use_id, cleared at each result

	turnMsgID string // last main-thread assistant message id of the turn
	turnText  []byte // last main-thread assistant text of the turn

	// The main-thread text block streaming now, as received so far, up to
	// maxStreamText bytes.
	streamMsg   string
	streamIndex int
	streamText  []byte

	pending  map[string]*Pending // can_use_tool requests not yet answered
	order    []string            // their ids in arrival order
	settled  [32]string          // recently answered ids, a ring
	settledN int
	outbound map[string]string // control requests we wrote → subtype
	queries  map[string]query  // the query messages among them, by request id
	nextID   uint64

	prevTotal float64 // total_cost_usd of the previous result of this process

	scratch  [][]byte // AppendCLI's lines from FromCLI, reused
	arena    []byte   // where lineFor builds them
	inAppend bool     // AppendCLI is running: lineFor may use the arena
}

type msgState struct {
	seq    int // next seq for assistant_text / thinking_text
	open   int // content block index between start and stop, else -1
	frames int // assistant frames seen

	// The parts of this message's streamed text lines that stay the same
	// from one delta to the next, encoded once: everything before the
	// seq's value, and everything after the text. partKey says which
	// type, block and parent they were made for.
	partHead, partTail []byte
	partKey            partKey
}

type partKey struct {
	typ, parent string
	index       int
}

type toolInfo struct {
	name   string
	parent string // parent_tool_use_id of the frame that carried the tool_use
	plan   string // ExitPlanMode's plan, whose can_use_tool input is {}
}

// Pending is an open can_use_tool request.
type Pending struct {
	RequestID       string
	ToolName        string
	ToolUseID       string
	ParentToolUseID string
	Input           string // raw JSON of request.input
	IsQuestion      bool   // AskUserQuestion or ExitPlanMode
}

// New returns a Translator for one UI session.
func New(opt Options) *Translator {
	if opt.RequestIDPrefix == "" {
		opt.RequestIDPrefix = "ccbridge-"
	}
	return &Translator{
		opt:      opt,
		msgs:     make(map[string]*msgState),
		tools:    make(map[string]toolInfo),
		pending:  make(map[string]*Pending),
		outbound: make(map[string]string),
		queries:  make(map[string]query),
	}
}

// SessionID returns the current session id, "" until one is known.
func (t *Translator) SessionID() string { return t.sessionID }

// Pending returns the open can_use_tool requests in arrival order.
func (t *Translator) Pending() []Pending {
	ps := make([]Pending, 0, len(t.order))
	for _, id := range t.order {
		ps = append(ps, *t.pending[id])
	}
	return ps
}

// Lookup returns the open can_use_tool request with this id.
func (t *Translator) Lookup(requestID string) (Pending, bool) {
	p, ok := t.pending[requestID]
	if !ok {
		return Pending{}, false
	}
	return *p, true
}

// Settle marks a can_use_tool request answered, so a later answer is refused
// and the turn's end does not report it cancelled. FromUI settles the
// requests it answers; call Settle for answers written some other way. It
// reports whether the request was open.
func (t *Translator) Settle(requestID string) bool {
	p, ok := t.pending[requestID]
	if !ok {
		return false
	}
	t.drop(requestID)
	t.settled[t.settledN%len(t.settled)] = p.RequestID // a copy of its own
	t.settledN++
	return true
}

func (t *Translator) wasSettled(requestID string) bool {
	for _, id := range t.settled {
		if id != "" && id == requestID {
			return true
		}
	}
	return false
}

func (t *Translator) drop(requestID string) {
	delete(t.pending, requestID)
	for i, id := range t.order {
		if id == requestID {
			t.order = append(t.order[:i], t.order[i+1:]...)
			break
		}
	}
}

// CancelPending settles every open request and appends a
// control_request_cancelled line with reason for each, in arrival order.
// The adapter calls it when the child dies or is replaced (reason such as
// "child_exited" or "respawn").
func (t *Translator) CancelPending(reason string, out [][]byte) [][]byte {
	for len(t.order) > 0 {
		id := t.order[0]
		out = append(out, cancelledLine(id, reason))
		t.Settle(id)
	}
	return out
}

// Track records a control_request the adapter wrote to the CLI itself (such
// as initialize), so that its control_response is recognised: an error
// answer then becomes an ipc error line. FromUI tracks the requests it
// builds.
func (t *Translator) Track(requestID, subtype string) {
	t.outbound[requestID] = subtype
}

// Untrack forgets a control_request we wrote, for one the adapter gave up
// waiting for; a late answer is then ignored.
func (t *Translator) Untrack(requestID string) {
	delete(t.outbound, requestID)
}

// Outstanding reports whether a control_request we wrote is still
// unanswered, and its subtype.
func (t *Translator) Outstanding(requestID string) (subtype string, ok bool) {
	subtype, ok = t.outbound[requestID]
	return subtype, ok
}

// ResetProcess forgets the state tied to one CLI process: outstanding
// control requests, per-message and per-tool state, and the previous cost
// total. Call it when a new child starts, after CancelPending. The session
// id and the last system_metadata stay, so that a resumed session does not
// repeat session_init and an unchanged metadata is not sent again.
func (t *Translator) ResetProcess() {
	clear(t.outbound)
	clear(t.queries)
	t.endTurn()
	t.prevTotal = 0
}

func (t *Translator) endTurn() {
	clear(t.msgs)
	t.lastMsgID, t.lastMsg = "", nil
	clear(t.tools)
	t.turnMsgID = ""
	t.turnText = t.turnText[:0]
	if cap(t.turnText) > maxStreamText {
		t.turnText = nil
	}
	t.streamMsg, t.streamIndex, t.streamText = "", 0, t.streamText[:0]
}

func (t *Translator) newRequestID() string {
	t.nextID++
	return t.opt.RequestIDPrefix + strconv.FormatUint(t.nextID, 10)
}

func (t *Translator) msg(id string) *msgState {
	if t.lastMsg != nil && id == t.lastMsgID {
		return t.lastMsg
	}
	m, ok := t.msgs[id]
	if !ok {
		m = &msgState{open: -1}
		t.msgs[strings.Clone(id)] = m
	}
	if t.lastMsgID != id {
		t.lastMsgID = strings.Clone(id)
	}
	t.lastMsg = m
	return m
}

// line builds one outbound message: {"type":T,"ipc_version":2,…}.
type line struct{ b []byte }

func newLine(typ string, hint int) line {
	return lineIn(make([]byte, 0, 40+len(typ)+hint), typ)
}

// maxArenaLine is the longest line lineFor builds in the arena.
const maxArenaLine = 1 << 20

// lineFor is newLine in the arena while AppendCLI runs: AppendCLI copies
// every line out before it returns, so one buffer, reused from call to
// call, serves them all. A line that outgrows its room moves out of the
// arena as any slice would, and never overwrites the next one.
func (t *Translator) lineFor(typ string, hint int) line {
	need := 40 + len(typ) + hint
	if !t.inAppend || need > maxArenaLine {
		return newLine(typ, hint)
	}
	if cap(t.arena)-len(t.arena) < need {
		t.arena = make([]byte, 0, max(need, 2*cap(t.arena), 8<<10))
	}
	start := len(t.arena)
	t.arena = t.arena[:start+need]
	return lineIn(t.arena[start:start:start+need], typ)
}

// lineIn starts a line in b, which must be empty.
func lineIn(b []byte, typ string) line {
	b = append(b, `{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","ipc_version":2`...)
	return line{b}
}

func (l *line) str(k, v string) {
	l.b = jsonw.Key(l.b, k)
	l.b = jsonw.String(l.b, v)
}

// strOrNull writes v, or null when v is empty.
func (l *line) strOrNull(k, v string) {
	l.b = jsonw.Key(l.b, k)
	if v == "" {
		l.b = append(l.b, "null"...)
		return
	}
	l.b = jsonw.String(l.b, v)
}

// raw copies r's bytes, or null when r does not exist.
func (l *line) raw(k string, r gjson.Result) {
	l.b = jsonw.Key(l.b, k)
	l.b = jsonw.Raw(l.b, r.Raw)
}

// rawIf copies r's bytes only when r exists.
func (l *line) rawIf(k string, r gjson.Result) {
	if r.Exists() {
		l.raw(k, r)
	}
}

func (l *line) rawStr(k, raw string) {
	l.b = jsonw.Key(l.b, k)
	l.b = jsonw.Raw(l.b, raw)
}

func (l *line) boolean(k string, v bool) {
	l.b = jsonw.Key(l.b, k)
	l.b = jsonw.Bool(l.b, v)
}

func (l *line) int(k string, v int) {
	l.b = jsonw.Key(l.b, k)
	l.b = jsonw.Int(l.b, int64(v))
}

func (l *line) float(k string, v float64) {
	l.b = jsonw.Key(l.b, k)
	l.b = jsonw.Float(l.b, v)
}

func (l *line) done() []byte { return append(l.b, '}') }

func cancelledLine(requestID, reason string) []byte {
	l := newLine(TypeControlRequestCancelled, len(requestID)+len(reason)+32)
	l.str("request_id", requestID)
	l.str("reason", reason)
	return l.done()
}

// AppendError appends an ipc error line:
// {"type":"error","ipc_version":2,"code":…,"message":…,"recoverable":…}.
// The adapter uses it for its own failures (code such as "child_exited").
func AppendError(dst []byte, code, message string, recoverable bool) []byte {
	l := line{dst}
	l.b = append(l.b, `{"type":"error","ipc_version":2`...)
	l.str("code", code)
	l.str("message", message)
	l.boolean("recoverable", recoverable)
	return l.done()
}

// RewindResult is what a rewind did (or, DryRun, would do), for
// AppendRewindResult: the adapter's result in the dialect's words.
type RewindResult struct {
	DryRun                bool
	UserMessageID, Prompt string
	Turns, Kept           int
	Files                 []string // nil: files were not asked for
	Insertions, Deletions int
}

// AppendRewindResult appends
// {"type":"rewind_result","ipc_version":2,"dry_run":…,"user_message_id":…,
// "prompt":…,"turns":…,"kept":…,"files":[…]|null,"insertions":…,"deletions":…}.
func AppendRewindResult(dst []byte, r RewindResult) []byte {
	l := line{dst}
	l.b = append(l.b, `{"type":"rewind_result","ipc_version":2`...)
	l.boolean("dry_run", r.DryRun)
	l.str("user_message_id", r.UserMessageID)
	l.str("prompt", r.Prompt)
	l.int("turns", r.Turns)
	l.int("kept", r.Kept)
	if r.Files == nil {
		l.rawStr("files", "null")
	} else {
		l.b = append(l.b, `,"files":`...)
		l.b = jsonw.Strings(l.b, r.Files)
	}
	l.int("insertions", r.Insertions)
	l.int("deletions", r.Deletions)
	return l.done()
}

// SetSessionID makes id the session's id, appending session_init when it
// differs from the current one. The adapter calls it when it knows the id
// before the CLI says anything: a session it starts with --session-id, or
// resumes with --resume.
func (t *Translator) SetSessionID(id string, out [][]byte) [][]byte {
	if id == "" || id == t.sessionID {
		return out
	}
	t.sessionID = strings.Clone(id)
	return append(out, appendSessionInit(id))
}

// Capabilities are what this ipc_version 2 session takes beyond the
// messages every ipc session takes, named in session_init: "steer" (the
// steer message), "rewind" (the rewind message) and "query" (the query
// message and its query_result).
const Capabilities = `["steer","rewind","query"]`

// appendSessionInit is the session_init line of session id.
func appendSessionInit(id string) []byte {
	l := newLine(TypeSessionInit, len(id)+48)
	l.str("session_id", id)
	l.b = append(l.b, `,"capabilities":`...)
	l.b = append(l.b, Capabilities...)
	return l.done()
}

// AppendSteerTaken is steer_taken: the CLI took the oldest steer not yet
// taken into the running turn, and the model has it.
func AppendSteerTaken(dst []byte) []byte {
	return append(dst, `{"type":"steer_taken","ipc_version":2}`...)
}

// CancelTurn ends the current turn without a result from the CLI, for a
// turn ccbridge had to stop itself (an interrupt the CLI never
// acknowledged, a session command that replaced the CLI): open requests
// are cancelled with reason, then turn_cancelled carries the text streamed
// so far.
func (t *Translator) CancelTurn(reason string, out [][]byte) [][]byte {
	out = t.CancelPending(reason, out)
	partial := string(t.turnText)
	if len(t.streamText) > 0 {
		partial = string(t.streamText)
	}
	l := newLine(TypeTurnCancelled, len(partial)+128)
	l.str("partial_result", partial)
	l.str("reason", reason)
	l.strOrNull("msg_id", t.turnMsgID)
	l.boolean("is_error", true)
	out = append(out, l.done())
	t.endTurn()
	return out
}

// Reasons of the turn_cancelled lines the adapter writes for prompts that
// never ran.
const (
	// ReasonCancelQueued: an interrupt with cancel_queued removed the
	// prompt from the CLI's queue before it ran.
	ReasonCancelQueued = "cancel_queued"
)

// AppendQueuedCancelled appends the turn_cancelled line of a prompt that
// never ran (the CLI dropped it from its queue): no partial result, no
// message id.
func AppendQueuedCancelled(dst []byte, reason string) []byte {
	l := line{dst}
	l.b = append(l.b, `{"type":"turn_cancelled","ipc_version":2`...)
	l.str("partial_result", "")
	l.str("reason", reason)
	l.strOrNull("msg_id", "")
	l.boolean("is_error", true)
	return l.done()
}

// MarkMerged returns a copy of a terminal line (turn_complete or
// turn_cancelled) with "merged": true added: the terminal message of a
// prompt the CLI merged into the turn of an earlier queued prompt, which
// that line answered.
func MarkMerged(terminal []byte) []byte {
	b := bytes.TrimRight(terminal, "\n")
	if len(b) == 0 || b[len(b)-1] != '}' {
		return bytes.Clone(b)
	}
	out := make([]byte, 0, len(b)+16)
	out = append(out, b[:len(b)-1]...)
	return append(out, `,"merged":true}`...)
}

// maxStreamText bounds the streamed text a Translator keeps for a turn it
// cancels itself, so that an endless block cannot grow it without limit.
const maxStreamText = 256 << 10
