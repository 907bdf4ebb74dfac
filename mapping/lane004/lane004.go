package lane004

import (
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/internal/jscan"
	"github.com/ccbridge/ccbridge/internal/jsonw"
	"github.com/ccbridge/ccbridge/internal/rfc3339"
	"github.com/ccbridge/ccbridge/mapping"
)

// MaxRequestID is the longest request_id accepted, in bytes.
const MaxRequestID = 256

// The methods of lane 004 (the allowlist).
const (
	MethodThreadStart   = "thread/start"
	MethodThreadResume  = "thread/resume"
	MethodTurnStart     = "turn/start"
	MethodTurnInterrupt = "turn/interrupt"
	MethodTurnSteer     = "turn/steer"
	MethodThreadList    = "thread/list"
	MethodThreadRead    = "thread/read"
	// MethodThreadRollback drops the last numTurns turns (Codex's
	// thread/rollback); revertFiles and dryRun are ccbridge's.
	MethodThreadRollback = "thread/rollback"
	MethodReplay         = "ccbridge/events/replay"
	MethodApproval       = "ccbridge/approval/respond"
)

// The codes of a worker.error.
const (
	CodeUnauthorized      = "unauthorized"
	CodeForbidden         = "forbidden"
	CodeInvalidRequest    = "invalid_request"
	CodeUnsupportedMethod = "unsupported_method"
	CodeConflict          = "conflict"
	CodeWorkerUnavailable = "worker_unavailable"
	CodeTimeout           = "timeout"
	CodeInternalError     = "internal_error"
)

// The limits of thread/list's limit.
const (
	limitDefault = 50
	limitMax     = 1000
)

// Input is one item of turn/start's input. Kind is "text" (Text) or
// "image" (MediaType one of image/png, image/jpeg, image/gif, image/webp,
// lower case; Data the base64 text of the data: URL as given).
type Input struct {
	Kind            string
	Text            string
	MediaType, Data string
}

// Request is a decoded request line; every string is a copy (the line
// may be reused). Only the members of Method's params are set; the others
// are zero.
type Request struct {
	RequestID, Method string
	Version           string    // "v1" when given, "" when absent
	Source            string    // "" when absent
	SentAt            time.Time // UTC; zero when absent
	Params            string    // the raw params object, as given; "{}" when absent or null

	ThreadID     string  // a UUID, lower-cased (thread/resume, turn/start, turn/interrupt, thread/read)
	TurnID       string  // turn/interrupt; turn/steer's expectedTurnId
	Model        string  // thread/start, turn/start; "" when absent
	Input        []Input // turn/start, turn/steer
	IncludeTurns bool    // thread/read
	NumTurns     int     // thread/rollback: 1 or more
	RevertFiles  bool    // thread/rollback
	DryRun       bool    // thread/rollback
	Limit        int     // thread/list: 1..1000, 50 when absent
	Cursor       string  // thread/list
	After        uint64  // ccbridge/events/replay

	// ccbridge/approval/respond: Decision is one of accept,
	// acceptForSession, decline, cancel; Answers the raw answers object
	// or "".
	ApprovalID, Decision, Message string
	Answers                       string
}

// Problem says why a line is refused.
//
// HasID is set when the request_id could be read (a string of 1..256
// bytes of valid UTF-8 with no control character, given once): the lane
// then answers with an error receipt for RequestID. Method is the method
// when it could be read as a string of 1..256 bytes ("" otherwise, even
// with HasID). Code is CodeInvalidRequest, or CodeUnsupportedMethod
// for a method off the allowlist.
//
// NoReply is set for a line whose top-level event_type is a string
// starting with "worker.": one of the lane's own lines echoed back. It is
// logged, not answered, or two peers would answer each other's answers
// for ever.
type Problem struct {
	RequestID string
	HasID     bool
	Method    string
	Code      string
	Message   string // for people: names the member and what is wrong with it
	NoReply   bool
}

// Retryable reports whether an error with this code may succeed when
// the same request is sent again: timeout, worker_unavailable and
// internal_error.
func Retryable(code string) bool {
	switch code {
	case CodeTimeout, CodeWorkerUnavailable, CodeInternalError:
		return true
	}
	return false
}

// The members of "request" that are read.
const (
	envRequestID = iota
	envMethod
	envParams
	envVersion
	envSentAt
	envSource
	nEnv
)

var envNames = []string{"request_id", "method", "params", "request_version", "sent_at", "source"}

// The members of params that are read, over all methods. The camelCase
// and snake_case spellings of a member are adjacent: camel, then snake.
const (
	parThreadID = iota
	parThreadIDSnake
	parTurnID
	parTurnIDSnake
	parIncludeTurns
	parIncludeTurnsSnake
	parApprovalID
	parApprovalIDSnake
	parExpectedTurnID
	parExpectedTurnIDSnake
	parNumTurns
	parNumTurnsSnake
	parRevertFiles
	parRevertFilesSnake
	parDryRun
	parDryRunSnake
	parModel
	parInput
	parLimit
	parCursor
	parAfter
	parDecision
	parMessage
	parAnswers
	nPar
)

var parNames = []string{
	"threadId", "thread_id", "turnId", "turn_id", "includeTurns", "include_turns",
	"approvalId", "approval_id", "expectedTurnId", "expected_turn_id", "numTurns", "num_turns", "revertFiles", "revert_files",
	"dryRun", "dry_run", "model", "input", "limit", "cursor", "after",
	"decision", "message", "answers",
}

// The members of one input item.
const (
	itemType = iota
	itemText
	itemURL
	itemImageURL
	nItem
)

var itemNames = []string{"type", "text", "url", "image_url"}

// collect reads the members of the object obj named in names into raw
// (the first occurrence of each) and returns the set of those given more
// than once (bit i for names[i]).
func collect(obj string, names, raw []string) (dups uint32) {
	jscan.Walk(obj, func(key, v string) bool {
		for i, n := range names {
			if key == n {
				if raw[i] == "" {
					raw[i] = v
				} else {
					dups |= 1 << i
				}
				break
			}
		}
		return true
	})
	return dups
}

// given reports whether a member's raw text is there and not null (null
// counts as absent).
func given(raw string) bool { return raw != "" && raw != "null" }

// ownString returns the text of the raw JSON string raw as a new string
// (one copy, whether or not raw has escapes).
func ownString(raw string) string {
	body := raw[1 : len(raw)-1]
	if strings.IndexByte(body, '\\') < 0 {
		return strings.Clone(body)
	}
	return string(jscan.AppendUnescaped(make([]byte, 0, len(body)), body))
}

// knownMethod returns m as one of the Method constants (no copy), or "".
func knownMethod(m string) string {
	switch m {
	case MethodThreadStart:
		return MethodThreadStart
	case MethodThreadResume:
		return MethodThreadResume
	case MethodTurnStart:
		return MethodTurnStart
	case MethodTurnInterrupt:
		return MethodTurnInterrupt
	case MethodTurnSteer:
		return MethodTurnSteer
	case MethodThreadList:
		return MethodThreadList
	case MethodThreadRead:
		return MethodThreadRead
	case MethodThreadRollback:
		return MethodThreadRollback
	case MethodReplay:
		return MethodReplay
	case MethodApproval:
		return MethodApproval
	}
	return ""
}

// decoder builds a Problem with what has been read so far.
type decoder struct {
	id     string // the request_id, once known valid (may alias the line)
	hasID  bool
	method string // the method as read, when readable (may alias the line)
}

func (d *decoder) fail(code, msg string) *Problem {
	p := &Problem{Code: code, Message: msg, HasID: d.hasID}
	if d.hasID {
		p.RequestID = strings.Clone(d.id)
	}
	if m := knownMethod(d.method); m != "" {
		p.Method = m
	} else {
		p.Method = strings.Clone(d.method)
	}
	return p
}

func (d *decoder) invalid(msg string) *Problem { return d.fail(CodeInvalidRequest, msg) }

// Decode checks a request line and returns the request or why it is
// refused. The checks, in this order (the first that fails is reported):
//
//   - the line is one JSON object ("malformed JSON: …");
//   - a top-level event_type starting with "worker." makes it NoReply;
//   - "request" is given once, as an object;
//   - request.request_id is a string of 1..256 bytes, valid UTF-8 (no lone
//     surrogate escape), with no control character (from here on the
//     problem has HasID);
//   - the line is valid UTF-8;
//   - no member of request that is read is given twice;
//   - request_version, when given, is "v1";
//   - method is a non-empty string on the allowlist (else
//     unsupported_method);
//   - sent_at, when given, is an RFC 3339 time; source, when given, a
//     string;
//   - params, when given, is an object; then the method's own params:
//     thread/start model (a non-empty string); thread/resume and
//     thread/read thread_id (a UUID), thread/read include_turns (a
//     boolean); turn/start thread_id, input (a non-empty array of
//     {"type":"text","text":…} and {"type":"image","url":"data:…"}
//     items, url also spelled image_url, with some text or an image) and
//     model (a string); turn/interrupt thread_id and turn_id (a non-empty
//     string); turn/steer thread_id, expected_turn_id (a non-empty
//     string, in TurnID) and input (as turn/start's); thread/list limit (an integer 1..1000) and cursor (a
//     string); ccbridge/events/replay after (an integer >= 0 that fits
//     uint64); ccbridge/approval/respond approval_id (a non-empty
//     string), decision (accept, acceptForSession, decline or cancel),
//     message (a string) and answers (an object). threadId, turnId,
//     expectedTurnId, includeTurns and approvalId may be spelled so or in snake_case;
//     both spellings given must agree.
//
// Duplicate keys are refused, not first-wins: a member the lane reads
// ("request"; request_id, method, params, request_version, sent_at,
// source; each spelling of the params the method reads; an input item's
// type, text, url and image_url) given more than once makes the line
// invalid, as JSON readers differ in which one they keep (gjson the first,
// encoding/json the last) and the params go on to other readers.
// Other members, known or not, are ignored: v1 only ever adds members. A
// null counts as absent (a required member null is missing).
func Decode(line []byte) (Request, *Problem) {
	line = jscan.TrimSpace(line)
	var d decoder
	switch {
	case len(line) == 0:
		return Request{}, d.invalid("malformed JSON: the line is empty")
	case !gjson.ValidBytes(line):
		return Request{}, d.invalid("malformed JSON: the line is not valid JSON")
	case line[0] != '{':
		return Request{}, d.invalid("malformed JSON: the line is not a JSON object")
	}
	// A view of the line, not a copy: whatever is kept is cloned below.
	s := unsafe.String(unsafe.SliceData(line), len(line))
	var reqRaw, event string
	dupReq := false
	jscan.Walk(s, func(key, raw string) bool {
		switch key {
		case "request":
			if reqRaw == "" {
				reqRaw = raw
			} else {
				dupReq = true
			}
		case "event_type":
			if event == "" {
				event = raw
			}
		}
		return true
	})
	if ev, ok := jscan.Text(event); ok && strings.HasPrefix(ev, "worker.") {
		p := d.invalid("the line is a worker event (event_type " + quote(ev, 64) + "), not a request")
		p.NoReply = true
		return Request{}, p
	}
	switch {
	case dupReq:
		return Request{}, d.invalid("request appears more than once")
	case !given(reqRaw):
		return Request{}, d.invalid("the request envelope is missing")
	case reqRaw[0] != '{':
		return Request{}, d.invalid("request must be an object")
	}

	var env [nEnv]string
	dups := collect(reqRaw, envNames, env[:])
	if m, ok := jscan.Text(env[envMethod]); ok && m != "" && len(m) <= MaxRequestID {
		d.method = m
	}
	if dups&(1<<envRequestID) != 0 {
		return Request{}, d.invalid("request_id appears more than once")
	}
	if p := d.requestID(env[envRequestID]); p != nil {
		return Request{}, p
	}
	if !utf8.Valid(line) {
		return Request{}, d.invalid("the line is not valid UTF-8")
	}
	if dups != 0 {
		for i, n := range envNames {
			if dups&(1<<i) != 0 {
				return Request{}, d.invalid(n + " appears more than once")
			}
		}
	}

	r := Request{Params: "{}"}
	if v := env[envVersion]; given(v) {
		if v != `"v1"` {
			return Request{}, d.invalid("request_version " + cut(v, 64) + " is not supported (v1)")
		}
		r.Version = "v1"
	}
	switch m, ok := jscan.Text(env[envMethod]); {
	case !given(env[envMethod]):
		return Request{}, d.invalid("method is required")
	case !ok:
		return Request{}, d.invalid("method must be a string")
	case m == "":
		return Request{}, d.invalid("method must not be empty")
	case knownMethod(m) == "":
		return Request{}, d.fail(CodeUnsupportedMethod, "method "+quote(m, 64)+" is not allowlisted")
	default:
		r.Method = knownMethod(m)
	}
	if v := env[envSentAt]; given(v) {
		at, ok := jscan.Text(v)
		if !ok {
			return Request{}, d.invalid("sent_at must be a string")
		}
		t, err := time.Parse(time.RFC3339Nano, at)
		if err != nil || !rfc3339.Match(at) {
			return Request{}, d.invalid("sent_at " + quote(at, 64) + " is not an RFC 3339 time")
		}
		r.SentAt = t.UTC()
	}
	if v := env[envSource]; given(v) {
		if v[0] != '"' {
			return Request{}, d.invalid("source must be a string")
		}
		r.Source = ownString(v)
	}
	params := env[envParams]
	if given(params) {
		if params[0] != '{' {
			return Request{}, d.invalid("params must be an object")
		}
	} else {
		params = "{}"
	}
	pd := paramReader{decoder: d}
	pd.dups = collect(params, parNames, pd.raw[:])
	var p *Problem
	switch r.Method {
	case MethodThreadStart:
		r.Model, p = pd.optString(parModel, "model", true)
	case MethodThreadResume:
		r.ThreadID, p = pd.threadID()
	case MethodTurnStart:
		p = pd.turnStart(&r)
	case MethodTurnInterrupt:
		if r.ThreadID, p = pd.threadID(); p == nil {
			r.TurnID, p = pd.reqString(parTurnID, "turn_id")
		}
	case MethodTurnSteer:
		if r.ThreadID, p = pd.threadID(); p == nil {
			if r.TurnID, p = pd.reqString(parExpectedTurnID, "expected_turn_id"); p == nil {
				p = pd.input(&r)
			}
		}
	case MethodThreadList:
		p = pd.threadList(&r)
	case MethodThreadRead:
		if r.ThreadID, p = pd.threadID(); p == nil {
			r.IncludeTurns, p = pd.includeTurns()
		}
	case MethodThreadRollback:
		p = pd.rollback(&r)
	case MethodReplay:
		r.After, p = pd.after()
	case MethodApproval:
		p = pd.approval(&r)
	}
	if p != nil {
		return Request{}, p
	}
	if params != "{}" {
		r.Params = strings.Clone(params)
	}
	r.RequestID = strings.Clone(d.id)
	return r, nil
}

// requestID checks the request_id's raw text and, when it is valid, sets
// d.id and d.hasID.
func (d *decoder) requestID(raw string) *Problem {
	if !given(raw) {
		return d.invalid("request_id is required")
	}
	id, ok := jscan.Text(raw)
	switch {
	case !ok:
		return d.invalid("request_id must be a string")
	case id == "":
		return d.invalid("request_id must not be empty")
	case len(id) > MaxRequestID:
		return d.invalid("request_id is " + strconv.Itoa(len(id)) + " bytes, over the limit of 256")
	case !utf8.ValidString(id) || jscan.LoneSurrogate(raw[1:len(raw)-1]):
		return d.invalid("request_id must be valid UTF-8")
	}
	for _, c := range id {
		if unicode.IsControl(c) {
			return d.invalid("request_id must not contain control characters")
		}
	}
	d.id, d.hasID = id, true
	return nil
}

// paramReader reads the params of one method.
type paramReader struct {
	decoder
	raw  [nPar]string
	dups uint32
}

// pick returns the raw text of member f (given once), or, for a member
// spelled two ways (alias: f the camelCase spelling, f+1 the snake_case
// one), of whichever is given; when both are given they must hold the same
// value.
func (pd *paramReader) pick(f int, alias bool) (string, *Problem) {
	if pd.dups&(1<<f) != 0 {
		return "", pd.invalid(parNames[f] + " appears more than once")
	}
	raw := pd.raw[f]
	if !alias {
		return raw, nil
	}
	if pd.dups&(1<<(f+1)) != 0 {
		return "", pd.invalid(parNames[f+1] + " appears more than once")
	}
	other := pd.raw[f+1]
	switch {
	case !given(other):
		return raw, nil
	case !given(raw):
		return other, nil
	case !sameValue(raw, other):
		return "", pd.invalid(parNames[f] + " and " + parNames[f+1] + " differ")
	}
	return raw, nil
}

// sameValue reports whether two raw JSON values are the same: the same
// text, or strings with the same text once unescaped.
func sameValue(a, b string) bool {
	if a == b {
		return true
	}
	sa, ok1 := jscan.Text(a)
	sb, ok2 := jscan.Text(b)
	return ok1 && ok2 && sa == sb
}

// isAlias reports whether member f has a snake_case spelling at f+1.
func isAlias(f int) bool { return f < parModel && f%2 == 0 }

// threadID reads the required thread_id (threadId), a UUID, lower-cased.
func (pd *paramReader) threadID() (string, *Problem) {
	raw, p := pd.pick(parThreadID, true)
	if p != nil {
		return "", p
	}
	if !given(raw) {
		return "", pd.invalid("thread_id is required")
	}
	id, ok := jscan.Text(raw)
	if !ok {
		return "", pd.invalid("thread_id must be a string")
	}
	if !mapping.ValidSessionID(id) {
		return "", pd.invalid("thread_id must be a session id (a UUID)")
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c >= 'A' && c <= 'F' {
			return strings.ToLower(id), nil
		}
	}
	return strings.Clone(id), nil
}

// reqString reads the required non-empty string member f (with its
// snake_case spelling when it has one).
func (pd *paramReader) reqString(f int, name string) (string, *Problem) {
	raw, p := pd.pick(f, isAlias(f))
	if p != nil {
		return "", p
	}
	switch {
	case !given(raw):
		return "", pd.invalid(name + " is required")
	case raw[0] != '"':
		return "", pd.invalid(name + " must be a string")
	case raw == `""`:
		return "", pd.invalid(name + " must not be empty")
	}
	return ownString(raw), nil
}

// optString reads the optional string member f; nonEmpty refuses "".
func (pd *paramReader) optString(f int, name string, nonEmpty bool) (string, *Problem) {
	raw, p := pd.pick(f, isAlias(f))
	switch {
	case p != nil:
		return "", p
	case !given(raw):
		return "", nil
	case raw[0] != '"':
		return "", pd.invalid(name + " must be a string")
	case raw == `""` && nonEmpty:
		return "", pd.invalid(name + " must not be empty")
	}
	return ownString(raw), nil
}

func (pd *paramReader) includeTurns() (bool, *Problem) {
	return pd.optBool(parIncludeTurns, "include_turns")
}

// optBool reads the optional boolean member f, spelled two ways.
func (pd *paramReader) optBool(f int, name string) (bool, *Problem) {
	raw, p := pd.pick(f, true)
	switch {
	case p != nil:
		return false, p
	case !given(raw):
		return false, nil
	case raw == "true":
		return true, nil
	case raw == "false":
		return false, nil
	}
	return false, pd.invalid(name + " must be a boolean")
}

// rollback reads thread/rollback's params: thread_id, numTurns (an
// integer of 1 or more), revertFiles? and dryRun?.
func (pd *paramReader) rollback(r *Request) *Problem {
	var p *Problem
	if r.ThreadID, p = pd.threadID(); p != nil {
		return p
	}
	raw, p := pd.pick(parNumTurns, true)
	switch {
	case p != nil:
		return p
	case !given(raw):
		return pd.invalid("num_turns is required")
	case !isInteger(raw):
		return pd.invalid("num_turns must be an integer")
	}
	n, err := strconv.ParseInt(raw, 10, 32)
	if err != nil || n < 1 {
		return pd.invalid("num_turns must be 1 or more")
	}
	r.NumTurns = int(n)
	if r.RevertFiles, p = pd.optBool(parRevertFiles, "revert_files"); p != nil {
		return p
	}
	r.DryRun, p = pd.optBool(parDryRun, "dry_run")
	return p
}

func (pd *paramReader) threadList(r *Request) *Problem {
	raw, p := pd.pick(parLimit, false)
	if p != nil {
		return p
	}
	r.Limit = limitDefault
	if given(raw) {
		if !isInteger(raw) {
			return pd.invalid("limit must be an integer")
		}
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < 1 || n > limitMax {
			return pd.invalid("limit must be between 1 and 1000")
		}
		r.Limit = int(n)
	}
	r.Cursor, p = pd.optString(parCursor, "cursor", false)
	return p
}

// isInteger reports whether raw, a valid JSON value, is a number with no
// fraction and no exponent.
func isInteger(raw string) bool {
	if raw != "" && raw[0] == '-' {
		raw = raw[1:]
	}
	if raw == "" {
		return false
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] < '0' || raw[i] > '9' {
			return false
		}
	}
	return true
}

func (pd *paramReader) after() (uint64, *Problem) {
	raw, p := pd.pick(parAfter, false)
	switch {
	case p != nil:
		return 0, p
	case !given(raw):
		return 0, pd.invalid("after is required")
	case !isInteger(raw):
		return 0, pd.invalid("after must be an integer")
	case raw[0] == '-':
		if strings.Trim(raw[1:], "0") == "" {
			return 0, nil // -0
		}
		return 0, pd.invalid("after must not be negative")
	}
	n, err := strconv.ParseUint(raw, 10, 64)
	if err != nil {
		return 0, pd.invalid("after is out of range")
	}
	return n, nil
}

func (pd *paramReader) approval(r *Request) *Problem {
	var p *Problem
	if r.ApprovalID, p = pd.reqString(parApprovalID, "approval_id"); p != nil {
		return p
	}
	raw, p := pd.pick(parDecision, false)
	if p != nil {
		return p
	}
	if !given(raw) {
		return pd.invalid("decision is required")
	}
	dec, ok := jscan.Text(raw)
	if !ok {
		return pd.invalid("decision must be a string")
	}
	switch dec {
	case "accept":
		r.Decision = "accept"
	case "acceptForSession":
		r.Decision = "acceptForSession"
	case "decline":
		r.Decision = "decline"
	case "cancel":
		r.Decision = "cancel"
	default:
		return pd.invalid("decision " + quote(dec, 64) + " is not one of accept, acceptForSession, decline, cancel")
	}
	if r.Message, p = pd.optString(parMessage, "message", false); p != nil {
		return p
	}
	raw, p = pd.pick(parAnswers, false)
	switch {
	case p != nil:
		return p
	case !given(raw):
	case raw[0] != '{':
		return pd.invalid("answers must be an object")
	default:
		r.Answers = strings.Clone(raw)
	}
	return nil
}

func (pd *paramReader) turnStart(r *Request) *Problem {
	var p *Problem
	if r.ThreadID, p = pd.threadID(); p != nil {
		return p
	}
	if p = pd.input(r); p != nil {
		return p
	}
	r.Model, p = pd.optString(parModel, "model", false)
	return p
}

// input reads the required input of turn/start and turn/steer.
func (pd *paramReader) input(r *Request) *Problem {
	raw, p := pd.pick(parInput, false)
	switch {
	case p != nil:
		return p
	case !given(raw):
		return pd.invalid("input is required")
	case raw[0] != '[':
		return pd.invalid("input must be an array")
	}
	n := 0
	jscan.Elements(raw, func(gjson.Result) bool { n++; return true })
	if n == 0 {
		return pd.invalid("input must not be empty")
	}
	r.Input = make([]Input, 0, n)
	some := false
	jscan.Elements(raw, func(v gjson.Result) bool {
		var in Input
		if in, p = pd.item(len(r.Input), v.Raw); p != nil {
			return false
		}
		some = some || in.Kind == inputImage || in.Text != ""
		r.Input = append(r.Input, in)
		return true
	})
	switch {
	case p != nil:
		return p
	case !some:
		return pd.invalid("input must hold some text or an image")
	}
	return nil
}

// The kinds of an input item.
const (
	inputText  = "text"
	inputImage = "image"
)

// item reads input[i].
func (pd *paramReader) item(i int, obj string) (Input, *Problem) {
	at := "input[" + strconv.Itoa(i) + "]"
	if obj[0] != '{' {
		return Input{}, pd.invalid(at + " must be an object")
	}
	var raw [nItem]string
	if dups := collect(obj, itemNames, raw[:]); dups != 0 {
		for k, n := range itemNames {
			if dups&(1<<k) != 0 {
				return Input{}, pd.invalid(at + "." + n + " appears more than once")
			}
		}
	}
	if !given(raw[itemType]) {
		return Input{}, pd.invalid(at + ".type is required")
	}
	typ, ok := jscan.Text(raw[itemType])
	if !ok {
		return Input{}, pd.invalid(at + ".type must be a string")
	}
	switch typ {
	case inputText:
		t := raw[itemText]
		switch {
		case !given(t):
			return Input{}, pd.invalid(at + ".text is required")
		case t[0] != '"':
			return Input{}, pd.invalid(at + ".text must be a string")
		}
		return Input{Kind: inputText, Text: ownString(t)}, nil
	case inputImage:
		u, key := raw[itemURL], "url"
		switch {
		case !given(u):
			u, key = raw[itemImageURL], "image_url"
		case given(raw[itemImageURL]) && !sameValue(u, raw[itemImageURL]):
			return Input{}, pd.invalid(at + ".url and " + at + ".image_url differ")
		}
		switch {
		case !given(u):
			return Input{}, pd.invalid(at + ".url is required")
		case u[0] != '"':
			return Input{}, pd.invalid(at + "." + key + " must be a string")
		}
		mt, data, ok := dataURL(u)
		if !ok {
			return Input{}, pd.invalid(at + "." + key +
				" must be a data: URL of a PNG, JPEG, GIF or WebP image in base64 (data:image/png;base64,…)")
		}
		return Input{Kind: inputImage, MediaType: mt, Data: data}, nil
	}
	return Input{}, pd.invalid(at + ": type " + quote(typ, 64) + " is not supported (text, image)")
}

var imageTypes = [...]string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// dataURL reads the raw JSON string raw as data:<type>;base64,<data>: the
// scheme, the media type (one of imageTypes) and "base64" in any case,
// data non-empty standard base64 with its padding. It returns the media
// type in lower case and a copy of data.
func dataURL(raw string) (mediaType, data string, ok bool) {
	// A cheap look before the copy: the scheme, unescaped.
	if len(raw) < 7 || !strings.EqualFold(raw[1:6], "data:") {
		if strings.IndexByte(raw, '\\') < 0 {
			return "", "", false
		}
	}
	u, _ := jscan.Text(raw)
	const scheme, enc = "data:", ";base64,"
	if len(u) < len(scheme) || !strings.EqualFold(u[:len(scheme)], scheme) {
		return "", "", false
	}
	rest := u[len(scheme):]
	semi := strings.IndexByte(rest, ';')
	if semi < 0 {
		return "", "", false
	}
	for _, t := range imageTypes {
		if strings.EqualFold(rest[:semi], t) {
			mediaType = t
		}
	}
	rest = rest[semi:]
	if mediaType == "" || len(rest) < len(enc) || !strings.EqualFold(rest[:len(enc)], enc) {
		return "", "", false
	}
	data = rest[len(enc):]
	if !isBase64(data) {
		return "", "", false
	}
	if strings.IndexByte(raw, '\\') < 0 { // u aliases the line
		data = strings.Clone(data)
	}
	return mediaType, data, true
}

// isBase64 reports whether s is non-empty standard base64 with padding
// (no white space).
func isBase64(s string) bool {
	if s == "" || len(s)%4 != 0 {
		return false
	}
	pad := 0
	if s[len(s)-1] == '=' {
		pad++
		if s[len(s)-2] == '=' {
			pad++
		}
	}
	for i := 0; i < len(s)-pad; i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/') {
			return false
		}
	}
	return true
}

// quote returns s as a Go-quoted string, cut to max bytes (at a rune
// boundary) with "…" when longer: a message never echoes a whole member.
func quote(s string, max int) string {
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return strconv.Quote(s[:cut]) + "…"
	}
	return strconv.Quote(s)
}

// cut returns s cut to max bytes (at a rune boundary) with "…" when longer.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max] + "…"
}

// appendRaw appends raw, a JSON value the caller vouches for, on one
// line (jsonw.Raw), or def when raw is "". Invalid UTF-8 in it (which no
// valid JSON holds, but a validator may let through) becomes U+FFFD.
func appendRaw(dst []byte, raw, def string) []byte {
	if raw == "" {
		return append(dst, def...)
	}
	if !utf8.ValidString(raw) {
		raw = strings.ToValidUTF8(raw, "\uFFFD")
	}
	return jsonw.Raw(dst, raw)
}

// appendHead appends {"event_type":typ[,"seq":seq],"worker_id":w,"payload":{
func appendHead(dst []byte, typ string, withSeq bool, seq uint64, workerID string) []byte {
	dst = append(dst, `{"event_type":`...)
	dst = jsonw.String(dst, typ)
	if withSeq {
		dst = append(dst, `,"seq":`...)
		dst = strconv.AppendUint(dst, seq, 10)
	}
	dst = append(dst, `,"worker_id":`...)
	dst = jsonw.String(dst, workerID)
	return append(dst, `,"payload":{`...)
}

// timeLayout is RFC 3339 with milliseconds; times are written in UTC, so
// with a "Z".
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

func appendTime(dst []byte, t time.Time) []byte {
	dst = append(dst, '"')
	dst = t.UTC().AppendFormat(dst, timeLayout)
	return append(dst, '"')
}

// appendTail appends ,"occurred_at":…}}
func appendTail(dst []byte, at time.Time) []byte {
	dst = append(dst, `,"occurred_at":`...)
	dst = appendTime(dst, at)
	return append(dst, "}}"...)
}

// AppendResponse appends a success receipt (no newline):
//
//	{"event_type":"worker.response","seq":…,"worker_id":…,"payload":{
//	 "request_id":…,"method":…,"ok":true,"response":…,"occurred_at":…}}
//
// response is raw JSON, copied as it is (null when "").
func AppendResponse(dst []byte, workerID string, seq uint64, requestID, method, response string, at time.Time) []byte {
	dst = appendHead(dst, "worker.response", true, seq, workerID)
	dst = append(dst, `"request_id":`...)
	dst = jsonw.String(dst, requestID)
	dst = append(dst, `,"method":`...)
	dst = jsonw.String(dst, method)
	dst = append(dst, `,"ok":true,"response":`...)
	dst = appendRaw(dst, response, "null")
	return appendTail(dst, at)
}

// AppendError appends an error receipt (no newline):
//
//	{"event_type":"worker.error","seq":…,"worker_id":…,"payload":{
//	 "request_id":…,"method":…,"code":…,"message":…,"retryable":…,
//	 ["details":…,]"occurred_at":…}}
//
// details is a raw JSON object, copied as it is, or "" (not written).
func AppendError(dst []byte, workerID string, seq uint64, requestID, method, code, message string, retryable bool, details string, at time.Time) []byte {
	dst = appendHead(dst, "worker.error", true, seq, workerID)
	dst = append(dst, `"request_id":`...)
	dst = jsonw.String(dst, requestID)
	dst = append(dst, `,"method":`...)
	dst = jsonw.String(dst, method)
	return appendErrorTail(dst, code, message, retryable, details, at)
}

func appendErrorTail(dst []byte, code, message string, retryable bool, details string, at time.Time) []byte {
	dst = append(dst, `,"code":`...)
	dst = jsonw.String(dst, code)
	dst = append(dst, `,"message":`...)
	dst = jsonw.String(dst, message)
	dst = append(dst, `,"retryable":`...)
	dst = jsonw.Bool(dst, retryable)
	if details != "" {
		dst = append(dst, `,"details":`...)
		dst = appendRaw(dst, details, "")
	}
	return appendTail(dst, at)
}

// AppendEvent appends a progress event (no newline):
//
//	{"event_type":"worker.event","seq":…,"worker_id":…,"payload":{
//	 "method":…,"params":…,"occurred_at":…}}
//
// params is a raw JSON object, copied as it is ({} when "").
func AppendEvent(dst []byte, workerID string, seq uint64, method, params string, at time.Time) []byte {
	dst = appendHead(dst, "worker.event", true, seq, workerID)
	dst = append(dst, `"method":`...)
	dst = jsonw.String(dst, method)
	dst = append(dst, `,"params":`...)
	dst = appendRaw(dst, params, "{}")
	return appendTail(dst, at)
}

// AppendCursorStale appends the answer to a replay from a cursor the
// log no longer holds (no newline; no seq, it is no event of the log):
//
//	{"event_type":"worker.cursor_stale","worker_id":…,"payload":{
//	 "after":…,"resume_after":…,"latest_seq":…,"occurred_at":…}}
func AppendCursorStale(dst []byte, workerID string, after, resumeAfter, latest uint64, at time.Time) []byte {
	dst = appendHead(dst, "worker.cursor_stale", false, 0, workerID)
	dst = append(dst, `"after":`...)
	dst = strconv.AppendUint(dst, after, 10)
	dst = append(dst, `,"resume_after":`...)
	dst = strconv.AppendUint(dst, resumeAfter, 10)
	dst = append(dst, `,"latest_seq":`...)
	dst = strconv.AppendUint(dst, latest, 10)
	return appendTail(dst, at)
}

// AppendProblem appends the refusal of a line (no newline; no seq, it is
// no event of the log):
//
//	{"event_type":"worker.error","worker_id":…,"payload":{
//	 "request_id":…,"method":…,"code":…,"message":…,"retryable":…,
//	 "occurred_at":…}}
//
// request_id is null unless p.HasID, method null when p.Method is "";
// code is p.Code (invalid_request when ""), retryable Retryable(code).
func AppendProblem(dst []byte, workerID string, p *Problem, at time.Time) []byte {
	dst = appendHead(dst, "worker.error", false, 0, workerID)
	dst = append(dst, `"request_id":`...)
	if p.HasID {
		dst = jsonw.String(dst, p.RequestID)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"method":`...)
	if p.Method != "" {
		dst = jsonw.String(dst, p.Method)
	} else {
		dst = append(dst, "null"...)
	}
	code := p.Code
	if code == "" {
		code = CodeInvalidRequest
	}
	return appendErrorTail(dst, code, p.Message, Retryable(code), "", at)
}
