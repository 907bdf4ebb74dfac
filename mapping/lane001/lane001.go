package lane001

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/internal/jscan"
	"github.com/ccbridge/ccbridge/internal/jsonw"
	"github.com/ccbridge/ccbridge/internal/rfc3339"
)

// MaxRequestID is the longest request_id accepted, in bytes.
const MaxRequestID = 256

// The topics of lane 001; every line written carries one as "topic".
const (
	TopicControl = "loop:control" // REQUEST, ACK, RESULT, ERROR (schema 0)
	TopicCurrent = "loop:current" // STATE, ABORT, DONE (schema 1)
)

// The message types of loop:control. ERROR is ccbridge's: it answers a
// line refused before a request_id could be read.
const (
	TypeRequest = "REQUEST"
	TypeAck     = "ACK"
	TypeResult  = "RESULT"
	TypeError   = "ERROR"
)

// The commands of a REQUEST.
const (
	CommandPause    = "pause"
	CommandResume   = "resume"
	CommandCancel   = "cancel"
	CommandEscalate = "escalate"
)

// A RESULT's payload.status.
const (
	StatusSuccess = "success"
	StatusFailure = "failure"
)

// A RESULT's payload.code (only with StatusFailure).
const (
	CodeNotFound     = "not_found"     // target.run_id is not this run, or it is over
	CodeInvalidState = "invalid_state" // e.g. resuming a running run
	CodeDuplicate    = "duplicate"     // the request_id is in flight
	CodeBadRequest   = "bad_request"   // the line is malformed (Decode)
)

// A stack entry's state.
const (
	StateRunning = "running"
	StatePaused  = "paused"
	StateIdle    = "idle"
)

// The reasons of ABORT and DONE.
const (
	ReasonUserCancelled = "USER_CANCELLED" // ABORT after a cancel
	ReasonCompleted     = "COMPLETED"      // DONE: the run ended normally
	ReasonFailed        = "FAILED"         // DONE: the run ended in an error
)

// Target names the run a REQUEST is for. IssueID "" means absent.
type Target struct {
	RunID, IssueID string
}

// Request is a decoded REQUEST; every string is a copy (the line may be
// reused). Command is one of the Command* constants.
type Request struct {
	RequestID string
	Command   string
	Target    Target
	Timestamp time.Time // UTC
	Model     string    // escalate: payload.model (non-empty); "" otherwise
	Reason    string    // escalate: payload.reason ("" when absent)
}

// Problem says why a line is refused. Code is CodeBadRequest. The
// correlation fields hold what could be read ("" otherwise): RequestID
// only when it is a string of 1..256 bytes, Command and Target's members
// when they are strings. With no RequestID the answer is an ERROR line
// (AppendProblem).
//
// NoReply is set when the line is itself an answer or an event (type ACK,
// RESULT or ERROR; or an "event" STATE, ABORT or DONE with no type): it
// should be logged, not answered, or two peers would answer each other's
// answers for ever.
type Problem struct {
	Code      string
	Message   string // for people: names the field and what is wrong with it
	RequestID string
	Command   string
	Target    Target
	NoReply   bool
}

// Result is a RESULT's payload. Code, Message, PreviousModel and
// NewModel are written only when not "".
type Result struct {
	Status, Code, Message   string
	PreviousModel, NewModel string // escalate
}

// Stack is the one entry of a STATE's "stack": the session. Max (0: not
// written) is --max-turns; State one of the State* constants ("": not
// written); EscalationReason is written when not "".
type Stack struct {
	ID, Mode         string
	Iter, Max        int
	Model, State     string
	EscalationReason string
}

// The top-level fields a REQUEST is read from.
const (
	qSchema = iota
	qType
	qRequestID
	qCommand
	qTarget
	qTimestamp
	qPayload
	nQFields
)

var qNames = [nQFields]string{"schema", "type", "request_id", "command", "target", "timestamp", "payload"}

type decoder struct {
	raw   [nQFields]string // first occurrence of each ("" when absent)
	event string           // first "event", for NoReply
	dup   string           // the first field seen twice
}

func (d *decoder) present(f int) bool { return d.raw[f] != "" && d.raw[f] != "null" }

// fail builds a bad_request Problem with what can be read of the line.
func (d *decoder) fail(msg string) *Problem {
	p := &Problem{Code: CodeBadRequest, Message: msg}
	if id, ok := jscan.Text(d.raw[qRequestID]); ok && id != "" && len(id) <= MaxRequestID {
		p.RequestID = strings.Clone(id)
	}
	if c, ok := jscan.Text(d.raw[qCommand]); ok {
		p.Command = knownCommand(c)
	}
	if t := d.raw[qTarget]; t != "" && t[0] == '{' {
		var run, issue string
		jscan.Walk(t, func(key, raw string) bool {
			switch key {
			case "run_id":
				if run == "" {
					run = raw
				}
			case "issue_id":
				if issue == "" {
					issue = raw
				}
			}
			return true
		})
		if v, ok := jscan.Text(run); ok {
			p.Target.RunID = strings.Clone(v)
		}
		if v, ok := jscan.Text(issue); ok {
			p.Target.IssueID = strings.Clone(v)
		}
	}
	typ, ok := jscan.Text(d.raw[qType])
	switch {
	case ok:
		p.NoReply = typ == TypeAck || typ == TypeResult || typ == TypeError
	case d.raw[qType] == "":
		ev, _ := jscan.Text(d.event)
		p.NoReply = ev == eventState || ev == eventAbort || ev == eventDone
	}
	return p
}

// knownCommand returns c as one of the Command* constants (no copy), or a
// copy of c.
func knownCommand(c string) string {
	switch c {
	case CommandPause:
		return CommandPause
	case CommandResume:
		return CommandResume
	case CommandCancel:
		return CommandCancel
	case CommandEscalate:
		return CommandEscalate
	}
	return strings.Clone(c)
}

// Decode checks a REQUEST line's shape and returns the request or why it
// is refused (always CodeBadRequest). The checks, in this order (the first
// that fails is reported): valid UTF-8, one JSON object, no field it reads
// given twice, schema exactly 0, type "REQUEST", request_id a string of
// 1..256 bytes, command one of the four, target an object with a non-empty
// string run_id (given once) and optional string issue_id, timestamp an RFC
// 3339 UTC time, payload an object; for escalate payload.model a non-empty
// string and payload.reason an optional string. A null counts as absent.
// Other fields are ignored.
func Decode(line []byte) (Request, *Problem) {
	line = jscan.TrimSpace(line)
	var d decoder
	if !utf8.Valid(line) {
		return Request{}, d.fail("the line is not valid UTF-8")
	}
	if !gjson.ValidBytes(line) {
		return Request{}, d.fail("the line is not valid JSON")
	}
	if line[0] != '{' {
		return Request{}, d.fail("the line is not a JSON object")
	}
	// A view of the line, not a copy: whatever is kept is cloned below.
	s := unsafe.String(unsafe.SliceData(line), len(line))
	jscan.Walk(s, func(key, raw string) bool {
		if key == "event" {
			if d.event == "" {
				d.event = raw
			}
			return true
		}
		for i, n := range qNames {
			if key == n {
				if d.raw[i] == "" {
					d.raw[i] = raw
				} else if d.dup == "" {
					d.dup = key
				}
				break
			}
		}
		return true
	})
	if d.dup != "" {
		return Request{}, d.fail(quote(d.dup, 64) + ": appears more than once")
	}

	switch raw := d.raw[qSchema]; {
	case !d.present(qSchema):
		return Request{}, d.fail("schema: missing")
	case !jscan.IsNumber(raw):
		return Request{}, d.fail("schema: must be a number")
	case raw != "0":
		return Request{}, d.fail("schema: unsupported schema " + quote(raw, 32) + "; a REQUEST has schema 0")
	}
	typ, p := d.str(qType)
	if p != nil {
		return Request{}, p
	}
	if typ != TypeRequest {
		return Request{}, d.fail("type: " + quote(typ, 64) + " is not a request; only \"REQUEST\" is read")
	}

	var r Request
	id, p := d.str(qRequestID)
	switch {
	case p != nil:
		return Request{}, p
	case len(id) > MaxRequestID:
		return Request{}, d.fail("request_id: " + strconv.Itoa(len(id)) + " bytes, over the limit of 256")
	}
	cmd, p := d.str(qCommand)
	if p != nil {
		return Request{}, p
	}
	switch cmd {
	case CommandPause, CommandResume, CommandCancel, CommandEscalate:
		r.Command = knownCommand(cmd)
	default:
		return Request{}, d.fail("command: unknown command " + quote(cmd, 64) +
			"; one of pause, resume, cancel, escalate")
	}
	if p := d.target(&r); p != nil {
		return Request{}, p
	}
	at, p := d.str(qTimestamp)
	if p != nil {
		return Request{}, p
	}
	if r.Timestamp, p = d.time(at); p != nil {
		return Request{}, p
	}
	if p := d.payload(&r); p != nil {
		return Request{}, p
	}
	r.RequestID = strings.Clone(id)
	return r, nil
}

// str returns the required non-empty string field f (aliasing the line).
func (d *decoder) str(f int) (string, *Problem) {
	name := qNames[f]
	if !d.present(f) {
		return "", d.fail(name + ": missing")
	}
	v, ok := jscan.Text(d.raw[f])
	switch {
	case !ok:
		return "", d.fail(name + ": must be a string")
	case v == "":
		return "", d.fail(name + ": must not be empty")
	}
	return v, nil
}

var (
	targetNames  = []string{"run_id", "issue_id"}
	payloadNames = []string{"model", "reason"}
)

func (d *decoder) target(r *Request) *Problem {
	obj := d.raw[qTarget]
	switch {
	case !d.present(qTarget):
		return d.fail("target: missing")
	case obj[0] != '{':
		return d.fail("target: must be an object")
	}
	var raw [2]string
	if dup := jscan.Pick(obj, targetNames, raw[:]); dup != "" {
		return d.fail(`"target.` + dup + `": appears more than once`)
	}
	run, p := d.member("target.run_id", raw[0], true)
	if p != nil {
		return p
	}
	issue, p := d.member("target.issue_id", raw[1], false)
	if p != nil {
		return p
	}
	r.Target.RunID = strings.Clone(run)
	r.Target.IssueID = strings.Clone(issue)
	return nil
}

// member reads a string member of target or payload from its raw text:
// required ones must be non-empty, optional ones may be absent, null or "".
func (d *decoder) member(name, raw string, required bool) (string, *Problem) {
	if raw == "" || raw == "null" {
		if required {
			return "", d.fail(name + ": missing")
		}
		return "", nil
	}
	v, ok := jscan.Text(raw)
	switch {
	case !ok:
		return "", d.fail(name + ": must be a string")
	case required && v == "":
		return "", d.fail(name + ": must not be empty")
	}
	return v, nil
}

func (d *decoder) payload(r *Request) *Problem {
	obj := d.raw[qPayload]
	switch {
	case !d.present(qPayload):
		return d.fail("payload: missing (an empty object {} for " + r.Command + ")")
	case obj[0] != '{':
		return d.fail("payload: must be an object")
	case r.Command != CommandEscalate:
		return nil // the other commands' payloads are {}; members are ignored
	}
	var raw [2]string
	if dup := jscan.Pick(obj, payloadNames, raw[:]); dup != "" {
		return d.fail(`"payload.` + dup + `": appears more than once`)
	}
	model, p := d.member("payload.model", raw[0], true)
	if p != nil {
		return p
	}
	reason, p := d.member("payload.reason", raw[1], false)
	if p != nil {
		return p
	}
	r.Model = strings.Clone(model)
	r.Reason = strings.Clone(reason)
	return nil
}

// time reads an RFC 3339 time in UTC: a "Z", "+00:00" or "-00:00" zone.
func (d *decoder) time(s string) (time.Time, *Problem) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil || !rfc3339.Match(s) {
		return time.Time{}, d.fail("timestamp: " + quote(s, 64) + " is not an RFC 3339 time")
	}
	if _, off := t.Zone(); off != 0 {
		return time.Time{}, d.fail("timestamp: " + quote(s, 64) + " is not in UTC (end it in Z)")
	}
	return t.UTC(), nil
}

// timeLayout is RFC 3339 in UTC to the millisecond, with trailing zeros
// of the fraction (and a whole fraction of zero) left out, as the seed's
// examples write whole seconds: "2024-12-28T10:00:01Z".
const timeLayout = "2006-01-02T15:04:05.999Z07:00"

func appendTime(dst []byte, t time.Time) []byte {
	dst = append(dst, '"')
	dst = t.UTC().AppendFormat(dst, timeLayout)
	return append(dst, '"')
}

// appendHead appends {"schema":0,"topic":"loop:control","type":typ,
// ["request_id":id,]"command":…,"target":{"run_id":…[,"issue_id":…]},
// "timestamp":…
func appendHead(dst []byte, typ string, withID bool, id, cmd string, tg *Target, now time.Time) []byte {
	dst = append(dst, `{"schema":0,"topic":"loop:control","type":`...)
	dst = jsonw.String(dst, typ)
	if withID {
		dst = append(dst, `,"request_id":`...)
		dst = jsonw.String(dst, id)
	}
	dst = append(dst, `,"command":`...)
	dst = jsonw.String(dst, cmd)
	dst = append(dst, `,"target":{"run_id":`...)
	dst = jsonw.String(dst, tg.RunID)
	if tg.IssueID != "" {
		dst = append(dst, `,"issue_id":`...)
		dst = jsonw.String(dst, tg.IssueID)
	}
	dst = append(dst, `},"timestamp":`...)
	return appendTime(dst, now)
}

// AppendAck appends the ACK of r (no newline):
//
//	{"schema":0,"topic":"loop:control","type":"ACK","request_id":…,
//	 "command":…,"target":{"run_id":…[,"issue_id":…]},"timestamp":…,
//	 "payload":{}}
func AppendAck(dst []byte, r *Request, now time.Time) []byte {
	dst = appendHead(dst, TypeAck, true, r.RequestID, r.Command, &r.Target, now)
	return append(dst, `,"payload":{}}`...)
}

// AppendResult appends the RESULT of r (no newline): the ACK's fields
// with type "RESULT" and payload {"status":…[,"code":…][,"message":…]
// [,"previous_model":…][,"new_model":…]}.
func AppendResult(dst []byte, r *Request, res Result, now time.Time) []byte {
	dst = appendHead(dst, TypeResult, true, r.RequestID, r.Command, &r.Target, now)
	return appendResultPayload(dst, &res)
}

func appendResultPayload(dst []byte, res *Result) []byte {
	dst = append(dst, `,"payload":{"status":`...)
	dst = jsonw.String(dst, res.Status)
	for _, f := range [...]struct{ key, v string }{
		{`,"code":`, res.Code}, {`,"message":`, res.Message},
		{`,"previous_model":`, res.PreviousModel}, {`,"new_model":`, res.NewModel},
	} {
		if f.v != "" {
			dst = append(dst, f.key...)
			dst = jsonw.String(dst, f.v)
		}
	}
	return append(dst, "}}"...)
}

// AppendProblem appends the answer to a refused line (no newline): a
// RESULT with status "failure", p.Code and p.Message, the correlation
// fields as read ("" when unread); or, when p has no RequestID, an ERROR
// line, the same without "request_id".
func AppendProblem(dst []byte, p *Problem, now time.Time) []byte {
	typ := TypeResult
	if p.RequestID == "" {
		typ = TypeError
	}
	dst = appendHead(dst, typ, p.RequestID != "", p.RequestID, p.Command, &p.Target, now)
	return appendResultPayload(dst, &Result{Status: StatusFailure, Code: p.Code, Message: p.Message})
}

// The events of loop:current.
const (
	eventState = "STATE"
	eventAbort = "ABORT"
	eventDone  = "DONE"
)

func appendEventHead(dst []byte, event string) []byte {
	dst = append(dst, `{"schema":1,"topic":"loop:current","event":`...)
	return jsonw.String(dst, event)
}

func appendStack(dst []byte, stack []Stack) []byte {
	dst = append(dst, `,"stack":[`...)
	for i := range stack {
		if i > 0 {
			dst = append(dst, ',')
		}
		s := &stack[i]
		dst = append(dst, `{"id":`...)
		dst = jsonw.String(dst, s.ID)
		dst = append(dst, `,"mode":`...)
		dst = jsonw.String(dst, s.Mode)
		dst = append(dst, `,"iter":`...)
		dst = jsonw.Int(dst, int64(s.Iter))
		if s.Max != 0 {
			dst = append(dst, `,"max":`...)
			dst = jsonw.Int(dst, int64(s.Max))
		}
		dst = append(dst, `,"model":`...)
		dst = jsonw.String(dst, s.Model)
		if s.State != "" {
			dst = append(dst, `,"state":`...)
			dst = jsonw.String(dst, s.State)
		}
		if s.EscalationReason != "" {
			dst = append(dst, `,"escalation_reason":`...)
			dst = jsonw.String(dst, s.EscalationReason)
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// AppendState appends a STATE event (no newline):
//
//	{"schema":1,"topic":"loop:current","event":"STATE","run_id":…,
//	 "updated_at":…,"stack":[{"id":…,"mode":…,"iter":…[,"max":…],
//	 "model":…[,"state":…][,"escalation_reason":…]}]}
func AppendState(dst []byte, runID string, updatedAt time.Time, s Stack) []byte {
	dst = appendEventHead(dst, eventState)
	dst = append(dst, `,"run_id":`...)
	dst = jsonw.String(dst, runID)
	dst = append(dst, `,"updated_at":`...)
	dst = appendTime(dst, updatedAt)
	return append(appendStack(dst, []Stack{s}), '}')
}

// AppendAbort appends an ABORT event (no newline), as the seed writes it
// (no time):
//
//	{"schema":1,"topic":"loop:current","event":"ABORT","reason":…,
//	 "run_id":…,"stack":[…]}
//
// stack nil or empty is written [].
func AppendAbort(dst []byte, runID, reason string, stack []Stack) []byte {
	dst = appendEventHead(dst, eventAbort)
	dst = append(dst, `,"reason":`...)
	dst = jsonw.String(dst, reason)
	dst = append(dst, `,"run_id":`...)
	dst = jsonw.String(dst, runID)
	return append(appendStack(dst, stack), '}')
}

// AppendDone appends a DONE event (no newline), ABORT's shape with an
// "updated_at" (the seed gives no example of DONE):
//
//	{"schema":1,"topic":"loop:current","event":"DONE","reason":…,
//	 "run_id":…,"updated_at":…,"stack":[…]}
//
// reason is ReasonCompleted or ReasonFailed; stack nil or empty is
// written [].
func AppendDone(dst []byte, runID string, now time.Time, reason string, stack []Stack) []byte {
	dst = appendEventHead(dst, eventDone)
	dst = append(dst, `,"reason":`...)
	dst = jsonw.String(dst, reason)
	dst = append(dst, `,"run_id":`...)
	dst = jsonw.String(dst, runID)
	dst = append(dst, `,"updated_at":`...)
	dst = appendTime(dst, now)
	return append(appendStack(dst, stack), '}')
}

// quote returns s as a Go-quoted string, cut to max bytes (at a rune
// boundary) with "…" when longer: a message never echoes a whole field.
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
