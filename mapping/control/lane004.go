package control

// Lane 004 (seed 004, the worker lane): request lines in,
//
//	{"request":{"request_id":…,"method":…,"params":{…}?,"request_version":"v1"?,"sent_at":…?,"source":…?}}
//
// and worker.response, worker.error, worker.event and worker.cursor_stale
// lines out. Methods are Codex app-server's thread/turn methods plus two
// ccbridge extensions; params take Codex's camelCase and the seed's
// snake_case spellings of the same member.

import (
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/ccbridge/ccbridge/internal/jscan"
	"github.com/ccbridge/ccbridge/internal/jsonw"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/tidwall/gjson"
)

// Lane004 is lane 004's name, as Classify returns it.
const Lane004 = "004"

// The methods of lane 004 (the allowlist).
const (
	Method004ThreadStart   = "thread/start"
	Method004ThreadResume  = "thread/resume"
	Method004TurnStart     = "turn/start"
	Method004TurnInterrupt = "turn/interrupt"
	Method004ThreadList    = "thread/list"
	Method004ThreadRead    = "thread/read"
	Method004Replay        = "ccbridge/events/replay"
	Method004Approval      = "ccbridge/approval/respond"
)

// The codes of a worker.error.
const (
	Code004Unauthorized      = "unauthorized"
	Code004Forbidden         = "forbidden"
	Code004InvalidRequest    = "invalid_request"
	Code004UnsupportedMethod = "unsupported_method"
	Code004Conflict          = "conflict"
	Code004WorkerUnavailable = "worker_unavailable"
	Code004Timeout           = "timeout"
	Code004InternalError     = "internal_error"
)

// The limits of thread/list's limit.
const (
	limit004Default = 50
	limit004Max     = 1000
)

// Input004 is one item of turn/start's input. Kind is "text" (Text) or
// "image" (MediaType one of image/png, image/jpeg, image/gif, image/webp,
// lower case; Data the base64 text of the data: URL as given).
type Input004 struct {
	Kind            string
	Text            string
	MediaType, Data string
}

// Request004 is a decoded request line; every string is a copy (the line
// may be reused). Only the members of Method's params are set; the others
// are zero.
type Request004 struct {
	RequestID, Method string
	Version           string    // "v1" when given, "" when absent
	Source            string    // "" when absent
	SentAt            time.Time // UTC; zero when absent
	Params            string    // the raw params object, as given; "{}" when absent or null

	ThreadID     string     // a UUID, lower-cased (thread/resume, turn/start, turn/interrupt, thread/read)
	TurnID       string     // turn/interrupt
	Model        string     // thread/start, turn/start; "" when absent
	Input        []Input004 // turn/start
	IncludeTurns bool       // thread/read
	Limit        int        // thread/list: 1..1000, 50 when absent
	Cursor       string     // thread/list
	After        uint64     // ccbridge/events/replay

	// ccbridge/approval/respond: Decision is one of accept,
	// acceptForSession, decline, cancel; Answers the raw answers object
	// or "".
	ApprovalID, Decision, Message string
	Answers                       string
}

// Problem004 says why a line is refused.
//
// HasID is set when the request_id could be read (a string of 1..256
// bytes of valid UTF-8 with no control character, given once): the lane
// then answers with an error receipt for RequestID. Method is the method
// when it could be read as a string of 1..256 bytes ("" otherwise, even
// with HasID). Code is Code004InvalidRequest, or Code004UnsupportedMethod
// for a method off the allowlist.
//
// NoReply is set for a line whose top-level event_type is a string
// starting with "worker.": one of the lane's own lines echoed back. It is
// logged, not answered, or two peers would answer each other's answers
// for ever.
type Problem004 struct {
	RequestID string
	HasID     bool
	Method    string
	Code      string
	Message   string // for people: names the member and what is wrong with it
	NoReply   bool
}

// Retryable004 reports whether an error with this code may succeed when
// the same request is sent again: timeout, worker_unavailable and
// internal_error.
func Retryable004(code string) bool {
	switch code {
	case Code004Timeout, Code004WorkerUnavailable, Code004InternalError:
		return true
	}
	return false
}

// The members of "request" that are read.
const (
	e4RequestID = iota
	e4Method
	e4Params
	e4Version
	e4SentAt
	e4Source
	nE4
)

var e4Names = []string{"request_id", "method", "params", "request_version", "sent_at", "source"}

// The members of params that are read, over all methods. The camelCase
// and snake_case spellings of a member are adjacent: camel, then snake.
const (
	p4ThreadID = iota
	p4ThreadIDSnake
	p4TurnID
	p4TurnIDSnake
	p4IncludeTurns
	p4IncludeTurnsSnake
	p4ApprovalID
	p4ApprovalIDSnake
	p4Model
	p4Input
	p4Limit
	p4Cursor
	p4After
	p4Decision
	p4Message
	p4Answers
	nP4
)

var p4Names = []string{
	"threadId", "thread_id", "turnId", "turn_id", "includeTurns", "include_turns",
	"approvalId", "approval_id", "model", "input", "limit", "cursor", "after",
	"decision", "message", "answers",
}

// The members of one input item.
const (
	i4Type = iota
	i4Text
	i4URL
	i4ImageURL
	nI4
)

var i4Names = []string{"type", "text", "url", "image_url"}

// collect004 reads the members of the object obj named in names into raw
// (the first occurrence of each) and returns the set of those given more
// than once (bit i for names[i]).
func collect004(obj string, names, raw []string) (dups uint32) {
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
	return string(appendUnescaped(make([]byte, 0, len(body)), body))
}

// method004 returns m as one of the Method004 constants (no copy), or "".
func method004(m string) string {
	switch m {
	case Method004ThreadStart:
		return Method004ThreadStart
	case Method004ThreadResume:
		return Method004ThreadResume
	case Method004TurnStart:
		return Method004TurnStart
	case Method004TurnInterrupt:
		return Method004TurnInterrupt
	case Method004ThreadList:
		return Method004ThreadList
	case Method004ThreadRead:
		return Method004ThreadRead
	case Method004Replay:
		return Method004Replay
	case Method004Approval:
		return Method004Approval
	}
	return ""
}

// decoder004 builds a Problem004 with what has been read so far.
type decoder004 struct {
	id     string // the request_id, once known valid (may alias the line)
	hasID  bool
	method string // the method as read, when readable (may alias the line)
}

func (d *decoder004) fail(code, msg string) *Problem004 {
	p := &Problem004{Code: code, Message: msg, HasID: d.hasID}
	if d.hasID {
		p.RequestID = strings.Clone(d.id)
	}
	if m := method004(d.method); m != "" {
		p.Method = m
	} else {
		p.Method = strings.Clone(d.method)
	}
	return p
}

func (d *decoder004) invalid(msg string) *Problem004 { return d.fail(Code004InvalidRequest, msg) }

// Decode004 checks a request line and returns the request or why it is
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
//     string); thread/list limit (an integer 1..1000) and cursor (a
//     string); ccbridge/events/replay after (an integer >= 0 that fits
//     uint64); ccbridge/approval/respond approval_id (a non-empty
//     string), decision (accept, acceptForSession, decline or cancel),
//     message (a string) and answers (an object). threadId, turnId,
//     includeTurns and approvalId may be spelled so or in snake_case;
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
func Decode004(line []byte) (Request004, *Problem004) {
	line = trimSpace(line)
	var d decoder004
	switch {
	case len(line) == 0:
		return Request004{}, d.invalid("malformed JSON: the line is empty")
	case !gjson.ValidBytes(line):
		return Request004{}, d.invalid("malformed JSON: the line is not valid JSON")
	case line[0] != '{':
		return Request004{}, d.invalid("malformed JSON: the line is not a JSON object")
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
	if ev, ok := rawString(event); ok && strings.HasPrefix(ev, "worker.") {
		p := d.invalid("the line is a worker event (event_type " + quote(ev, 64) + "), not a request")
		p.NoReply = true
		return Request004{}, p
	}
	switch {
	case dupReq:
		return Request004{}, d.invalid("request appears more than once")
	case !given(reqRaw):
		return Request004{}, d.invalid("the request envelope is missing")
	case reqRaw[0] != '{':
		return Request004{}, d.invalid("request must be an object")
	}

	var env [nE4]string
	dups := collect004(reqRaw, e4Names, env[:])
	if m, ok := rawString(env[e4Method]); ok && m != "" && len(m) <= MaxRequestID {
		d.method = m
	}
	if dups&(1<<e4RequestID) != 0 {
		return Request004{}, d.invalid("request_id appears more than once")
	}
	if p := d.requestID(env[e4RequestID]); p != nil {
		return Request004{}, p
	}
	if !utf8.Valid(line) {
		return Request004{}, d.invalid("the line is not valid UTF-8")
	}
	if dups != 0 {
		for i, n := range e4Names {
			if dups&(1<<i) != 0 {
				return Request004{}, d.invalid(n + " appears more than once")
			}
		}
	}

	r := Request004{Params: "{}"}
	if v := env[e4Version]; given(v) {
		if v != `"v1"` {
			return Request004{}, d.invalid("request_version " + cut(v, 64) + " is not supported (v1)")
		}
		r.Version = "v1"
	}
	switch m, ok := rawString(env[e4Method]); {
	case !given(env[e4Method]):
		return Request004{}, d.invalid("method is required")
	case !ok:
		return Request004{}, d.invalid("method must be a string")
	case m == "":
		return Request004{}, d.invalid("method must not be empty")
	case method004(m) == "":
		return Request004{}, d.fail(Code004UnsupportedMethod, "method "+quote(m, 64)+" is not allowlisted")
	default:
		r.Method = method004(m)
	}
	if v := env[e4SentAt]; given(v) {
		at, ok := rawString(v)
		if !ok {
			return Request004{}, d.invalid("sent_at must be a string")
		}
		t, err := time.Parse(time.RFC3339Nano, at)
		if err != nil || !rfc3339Shape(at) {
			return Request004{}, d.invalid("sent_at " + quote(at, 64) + " is not an RFC 3339 time")
		}
		r.SentAt = t.UTC()
	}
	if v := env[e4Source]; given(v) {
		if v[0] != '"' {
			return Request004{}, d.invalid("source must be a string")
		}
		r.Source = ownString(v)
	}
	params := env[e4Params]
	if given(params) {
		if params[0] != '{' {
			return Request004{}, d.invalid("params must be an object")
		}
	} else {
		params = "{}"
	}
	pd := params004{decoder004: d}
	pd.dups = collect004(params, p4Names, pd.raw[:])
	var p *Problem004
	switch r.Method {
	case Method004ThreadStart:
		r.Model, p = pd.optString(p4Model, "model", true)
	case Method004ThreadResume:
		r.ThreadID, p = pd.threadID()
	case Method004TurnStart:
		p = pd.turnStart(&r)
	case Method004TurnInterrupt:
		if r.ThreadID, p = pd.threadID(); p == nil {
			r.TurnID, p = pd.reqString(p4TurnID, "turn_id")
		}
	case Method004ThreadList:
		p = pd.threadList(&r)
	case Method004ThreadRead:
		if r.ThreadID, p = pd.threadID(); p == nil {
			r.IncludeTurns, p = pd.includeTurns()
		}
	case Method004Replay:
		r.After, p = pd.after()
	case Method004Approval:
		p = pd.approval(&r)
	}
	if p != nil {
		return Request004{}, p
	}
	if params != "{}" {
		r.Params = strings.Clone(params)
	}
	r.RequestID = strings.Clone(d.id)
	return r, nil
}

// requestID checks the request_id's raw text and, when it is valid, sets
// d.id and d.hasID.
func (d *decoder004) requestID(raw string) *Problem004 {
	if !given(raw) {
		return d.invalid("request_id is required")
	}
	id, ok := rawString(raw)
	switch {
	case !ok:
		return d.invalid("request_id must be a string")
	case id == "":
		return d.invalid("request_id must not be empty")
	case len(id) > MaxRequestID:
		return d.invalid("request_id is " + strconv.Itoa(len(id)) + " bytes, over the limit of 256")
	case !utf8.ValidString(id) || loneSurrogate(raw[1:len(raw)-1]):
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

// loneSurrogate reports whether the body of a JSON string has a \u escape
// of a UTF-16 surrogate that is not half of a pair (read as U+FFFD, so a
// request_id holding one could not be echoed as it was sent).
func loneSurrogate(body string) bool {
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' {
			continue
		}
		if i+1 >= len(body) {
			return false
		}
		if body[i+1] != 'u' {
			i++
			continue
		}
		r, ok := hex4(body, i+2)
		if !ok {
			return false
		}
		i += 5
		switch {
		case r >= 0xdc00 && r <= 0xdfff:
			return true
		case r >= 0xd800 && r <= 0xdbff:
			if i+2 >= len(body) || body[i+1] != '\\' || body[i+2] != 'u' {
				return true
			}
			lo, ok := hex4(body, i+3)
			if !ok || lo < 0xdc00 || lo > 0xdfff {
				return true
			}
			i += 6
		}
	}
	return false
}

// params004 reads the params of one method.
type params004 struct {
	decoder004
	raw  [nP4]string
	dups uint32
}

// pick returns the raw text of member f (given once), or, for a member
// spelled two ways (alias: f the camelCase spelling, f+1 the snake_case
// one), of whichever is given; when both are given they must hold the same
// value.
func (pd *params004) pick(f int, alias bool) (string, *Problem004) {
	if pd.dups&(1<<f) != 0 {
		return "", pd.invalid(p4Names[f] + " appears more than once")
	}
	raw := pd.raw[f]
	if !alias {
		return raw, nil
	}
	if pd.dups&(1<<(f+1)) != 0 {
		return "", pd.invalid(p4Names[f+1] + " appears more than once")
	}
	other := pd.raw[f+1]
	switch {
	case !given(other):
		return raw, nil
	case !given(raw):
		return other, nil
	case !sameValue(raw, other):
		return "", pd.invalid(p4Names[f] + " and " + p4Names[f+1] + " differ")
	}
	return raw, nil
}

// sameValue reports whether two raw JSON values are the same: the same
// text, or strings with the same text once unescaped.
func sameValue(a, b string) bool {
	if a == b {
		return true
	}
	sa, ok1 := rawString(a)
	sb, ok2 := rawString(b)
	return ok1 && ok2 && sa == sb
}

// isAlias reports whether member f has a snake_case spelling at f+1.
func isAlias(f int) bool { return f < p4Model && f%2 == 0 }

// threadID reads the required thread_id (threadId), a UUID, lower-cased.
func (pd *params004) threadID() (string, *Problem004) {
	raw, p := pd.pick(p4ThreadID, true)
	if p != nil {
		return "", p
	}
	if !given(raw) {
		return "", pd.invalid("thread_id is required")
	}
	id, ok := rawString(raw)
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
func (pd *params004) reqString(f int, name string) (string, *Problem004) {
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
func (pd *params004) optString(f int, name string, nonEmpty bool) (string, *Problem004) {
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

func (pd *params004) includeTurns() (bool, *Problem004) {
	raw, p := pd.pick(p4IncludeTurns, true)
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
	return false, pd.invalid("include_turns must be a boolean")
}

func (pd *params004) threadList(r *Request004) *Problem004 {
	raw, p := pd.pick(p4Limit, false)
	if p != nil {
		return p
	}
	r.Limit = limit004Default
	if given(raw) {
		if !isInteger(raw) {
			return pd.invalid("limit must be an integer")
		}
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < 1 || n > limit004Max {
			return pd.invalid("limit must be between 1 and 1000")
		}
		r.Limit = int(n)
	}
	r.Cursor, p = pd.optString(p4Cursor, "cursor", false)
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

func (pd *params004) after() (uint64, *Problem004) {
	raw, p := pd.pick(p4After, false)
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

func (pd *params004) approval(r *Request004) *Problem004 {
	var p *Problem004
	if r.ApprovalID, p = pd.reqString(p4ApprovalID, "approval_id"); p != nil {
		return p
	}
	raw, p := pd.pick(p4Decision, false)
	if p != nil {
		return p
	}
	if !given(raw) {
		return pd.invalid("decision is required")
	}
	dec, ok := rawString(raw)
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
	if r.Message, p = pd.optString(p4Message, "message", false); p != nil {
		return p
	}
	raw, p = pd.pick(p4Answers, false)
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

func (pd *params004) turnStart(r *Request004) *Problem004 {
	var p *Problem004
	if r.ThreadID, p = pd.threadID(); p != nil {
		return p
	}
	raw, p := pd.pick(p4Input, false)
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
	r.Input = make([]Input004, 0, n)
	some := false
	jscan.Elements(raw, func(v gjson.Result) bool {
		var in Input004
		if in, p = pd.item(len(r.Input), v.Raw); p != nil {
			return false
		}
		some = some || in.Kind == input004Image || in.Text != ""
		r.Input = append(r.Input, in)
		return true
	})
	switch {
	case p != nil:
		return p
	case !some:
		return pd.invalid("input must hold some text or an image")
	}
	r.Model, p = pd.optString(p4Model, "model", false)
	return p
}

// The kinds of an input item.
const (
	input004Text  = "text"
	input004Image = "image"
)

// item reads input[i].
func (pd *params004) item(i int, obj string) (Input004, *Problem004) {
	at := "input[" + strconv.Itoa(i) + "]"
	if obj[0] != '{' {
		return Input004{}, pd.invalid(at + " must be an object")
	}
	var raw [nI4]string
	if dups := collect004(obj, i4Names, raw[:]); dups != 0 {
		for k, n := range i4Names {
			if dups&(1<<k) != 0 {
				return Input004{}, pd.invalid(at + "." + n + " appears more than once")
			}
		}
	}
	if !given(raw[i4Type]) {
		return Input004{}, pd.invalid(at + ".type is required")
	}
	typ, ok := rawString(raw[i4Type])
	if !ok {
		return Input004{}, pd.invalid(at + ".type must be a string")
	}
	switch typ {
	case input004Text:
		t := raw[i4Text]
		switch {
		case !given(t):
			return Input004{}, pd.invalid(at + ".text is required")
		case t[0] != '"':
			return Input004{}, pd.invalid(at + ".text must be a string")
		}
		return Input004{Kind: input004Text, Text: ownString(t)}, nil
	case input004Image:
		u, key := raw[i4URL], "url"
		switch {
		case !given(u):
			u, key = raw[i4ImageURL], "image_url"
		case given(raw[i4ImageURL]) && !sameValue(u, raw[i4ImageURL]):
			return Input004{}, pd.invalid(at + ".url and " + at + ".image_url differ")
		}
		switch {
		case !given(u):
			return Input004{}, pd.invalid(at + ".url is required")
		case u[0] != '"':
			return Input004{}, pd.invalid(at + "." + key + " must be a string")
		}
		mt, data, ok := dataURL(u)
		if !ok {
			return Input004{}, pd.invalid(at + "." + key +
				" must be a data: URL of a PNG, JPEG, GIF or WebP image in base64 (data:image/png;base64,…)")
		}
		return Input004{Kind: input004Image, MediaType: mt, Data: data}, nil
	}
	return Input004{}, pd.invalid(at + ": type " + quote(typ, 64) + " is not supported (text, image)")
}

var imageTypes004 = [...]string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// dataURL reads the raw JSON string raw as data:<type>;base64,<data>: the
// scheme, the media type (one of imageTypes004) and "base64" in any case,
// data non-empty standard base64 with its padding. It returns the media
// type in lower case and a copy of data.
func dataURL(raw string) (mediaType, data string, ok bool) {
	// A cheap look before the copy: the scheme, unescaped.
	if len(raw) < 7 || !strings.EqualFold(raw[1:6], "data:") {
		if strings.IndexByte(raw, '\\') < 0 {
			return "", "", false
		}
	}
	u, _ := rawString(raw)
	const scheme, enc = "data:", ";base64,"
	if len(u) < len(scheme) || !strings.EqualFold(u[:len(scheme)], scheme) {
		return "", "", false
	}
	rest := u[len(scheme):]
	semi := strings.IndexByte(rest, ';')
	if semi < 0 {
		return "", "", false
	}
	for _, t := range imageTypes004 {
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

// appendRaw004 appends raw, a JSON value the caller vouches for, on one
// line (jsonw.Raw), or def when raw is "". Invalid UTF-8 in it (which no
// valid JSON holds, but a validator may let through) becomes U+FFFD.
func appendRaw004(dst []byte, raw, def string) []byte {
	if raw == "" {
		return append(dst, def...)
	}
	if !utf8.ValidString(raw) {
		raw = strings.ToValidUTF8(raw, "\uFFFD")
	}
	return jsonw.Raw(dst, raw)
}

// appendHead004 appends {"event_type":typ[,"seq":seq],"worker_id":w,"payload":{
func appendHead004(dst []byte, typ string, withSeq bool, seq uint64, workerID string) []byte {
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

// appendTail004 appends ,"occurred_at":…}}
func appendTail004(dst []byte, at time.Time) []byte {
	dst = append(dst, `,"occurred_at":`...)
	dst = appendTime(dst, at)
	return append(dst, "}}"...)
}

// AppendResponse004 appends a success receipt (no newline):
//
//	{"event_type":"worker.response","seq":…,"worker_id":…,"payload":{
//	 "request_id":…,"method":…,"ok":true,"response":…,"occurred_at":…}}
//
// response is raw JSON, copied as it is (null when "").
func AppendResponse004(dst []byte, workerID string, seq uint64, requestID, method, response string, at time.Time) []byte {
	dst = appendHead004(dst, "worker.response", true, seq, workerID)
	dst = append(dst, `"request_id":`...)
	dst = jsonw.String(dst, requestID)
	dst = append(dst, `,"method":`...)
	dst = jsonw.String(dst, method)
	dst = append(dst, `,"ok":true,"response":`...)
	dst = appendRaw004(dst, response, "null")
	return appendTail004(dst, at)
}

// AppendError004 appends an error receipt (no newline):
//
//	{"event_type":"worker.error","seq":…,"worker_id":…,"payload":{
//	 "request_id":…,"method":…,"code":…,"message":…,"retryable":…,
//	 ["details":…,]"occurred_at":…}}
//
// details is a raw JSON object, copied as it is, or "" (not written).
func AppendError004(dst []byte, workerID string, seq uint64, requestID, method, code, message string, retryable bool, details string, at time.Time) []byte {
	dst = appendHead004(dst, "worker.error", true, seq, workerID)
	dst = append(dst, `"request_id":`...)
	dst = jsonw.String(dst, requestID)
	dst = append(dst, `,"method":`...)
	dst = jsonw.String(dst, method)
	return appendErrorTail004(dst, code, message, retryable, details, at)
}

func appendErrorTail004(dst []byte, code, message string, retryable bool, details string, at time.Time) []byte {
	dst = append(dst, `,"code":`...)
	dst = jsonw.String(dst, code)
	dst = append(dst, `,"message":`...)
	dst = jsonw.String(dst, message)
	dst = append(dst, `,"retryable":`...)
	dst = jsonw.Bool(dst, retryable)
	if details != "" {
		dst = append(dst, `,"details":`...)
		dst = appendRaw004(dst, details, "")
	}
	return appendTail004(dst, at)
}

// AppendEvent004 appends a progress event (no newline):
//
//	{"event_type":"worker.event","seq":…,"worker_id":…,"payload":{
//	 "method":…,"params":…,"occurred_at":…}}
//
// params is a raw JSON object, copied as it is ({} when "").
func AppendEvent004(dst []byte, workerID string, seq uint64, method, params string, at time.Time) []byte {
	dst = appendHead004(dst, "worker.event", true, seq, workerID)
	dst = append(dst, `"method":`...)
	dst = jsonw.String(dst, method)
	dst = append(dst, `,"params":`...)
	dst = appendRaw004(dst, params, "{}")
	return appendTail004(dst, at)
}

// AppendCursorStale004 appends the answer to a replay from a cursor the
// log no longer holds (no newline; no seq, it is no event of the log):
//
//	{"event_type":"worker.cursor_stale","worker_id":…,"payload":{
//	 "after":…,"resume_after":…,"latest_seq":…,"occurred_at":…}}
func AppendCursorStale004(dst []byte, workerID string, after, resumeAfter, latest uint64, at time.Time) []byte {
	dst = appendHead004(dst, "worker.cursor_stale", false, 0, workerID)
	dst = append(dst, `"after":`...)
	dst = strconv.AppendUint(dst, after, 10)
	dst = append(dst, `,"resume_after":`...)
	dst = strconv.AppendUint(dst, resumeAfter, 10)
	dst = append(dst, `,"latest_seq":`...)
	dst = strconv.AppendUint(dst, latest, 10)
	return appendTail004(dst, at)
}

// AppendProblem004 appends the refusal of a line (no newline; no seq, it is
// no event of the log):
//
//	{"event_type":"worker.error","worker_id":…,"payload":{
//	 "request_id":…,"method":…,"code":…,"message":…,"retryable":…,
//	 "occurred_at":…}}
//
// request_id is null unless p.HasID, method null when p.Method is "";
// code is p.Code (invalid_request when ""), retryable Retryable004(code).
func AppendProblem004(dst []byte, workerID string, p *Problem004, at time.Time) []byte {
	dst = appendHead004(dst, "worker.error", false, 0, workerID)
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
		code = Code004InvalidRequest
	}
	return appendErrorTail004(dst, code, p.Message, Retryable004(code), "", at)
}
