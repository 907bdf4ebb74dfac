package control

// Lane 001 (seed 001, the intervention lane): REQUEST lines in, ACK,
// RESULT and ERROR lines on "loop:control" and STATE, ABORT and DONE
// events on "loop:current" out. The rules are in docs/control/lane001.md.

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/ccbridge/ccbridge/internal/jscan"
	"github.com/ccbridge/ccbridge/internal/jsonw"
	"github.com/tidwall/gjson"
)

// Lane names, as Classify returns them.
const (
	Lane000 = "000"
	Lane001 = "001"
)

// The topics of lane 001; every line written carries one as "topic".
const (
	TopicControl = "loop:control" // REQUEST, ACK, RESULT, ERROR (schema 0)
	TopicCurrent = "loop:current" // STATE, ABORT, DONE (schema 1)
)

// The message types of loop:control. ERROR is ccbridge's: it answers a
// line refused before a request_id could be read.
const (
	Type001Request = "REQUEST"
	Type001Ack     = "ACK"
	Type001Result  = "RESULT"
	Type001Error   = "ERROR"
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
	CodeBadRequest   = "bad_request"   // the line is malformed (Decode001)
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

// Target001 names the run a REQUEST is for. IssueID "" means absent.
type Target001 struct {
	RunID, IssueID string
}

// Request001 is a decoded REQUEST; every string is a copy (the line may be
// reused). Command is one of the Command* constants.
type Request001 struct {
	RequestID string
	Command   string
	Target    Target001
	Timestamp time.Time // UTC
	Model     string    // escalate: payload.model (non-empty); "" otherwise
	Reason    string    // escalate: payload.reason ("" when absent)
}

// Problem001 says why a line is refused. Code is CodeBadRequest. The
// correlation fields hold what could be read ("" otherwise): RequestID
// only when it is a string of 1..256 bytes, Command and Target's members
// when they are strings. With no RequestID the answer is an ERROR line
// (AppendProblem001).
//
// NoReply is set when the line is itself an answer or an event (type ACK,
// RESULT or ERROR; or an "event" STATE, ABORT or DONE with no type): it
// should be logged, not answered, or two peers would answer each other's
// answers for ever.
type Problem001 struct {
	Code      string
	Message   string // for people: names the field and what is wrong with it
	RequestID string
	Command   string
	Target    Target001
	NoReply   bool
}

// Result001 is a RESULT's payload. Code, Message, PreviousModel and
// NewModel are written only when not "".
type Result001 struct {
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

// Classify says which lane a line belongs to by its shape, reading its
// top-level keys only. In this order:
//
//   - Lane000 when its "type" is a string starting with "control.";
//   - Lane001 when it has a "schema" (any value);
//   - Lane004 when it has a "request" (any value);
//   - Lane001 when its "type" is REQUEST, ACK, RESULT or ERROR;
//   - Lane004 when it has no "type" (or a null one) and its "event_type"
//     is a string starting with "worker." (one of lane 004's own lines,
//     echoed back: Decode004 marks it NoReply);
//   - "" otherwise (not an object, unreadable, or none of these shapes).
//
// It validates nothing and allocates nothing (but for a "type" or an
// "event_type" written with escapes).
func Classify(line []byte) string {
	var typ, event string
	schema, request := false, false
	s := unsafe.String(unsafe.SliceData(line), len(line))
	jscan.Walk(s, func(key, raw string) bool {
		switch key {
		case "type":
			if typ == "" {
				typ = raw
			}
		case "schema":
			schema = true
		case "request":
			request = true
		case "event_type":
			if event == "" {
				event = raw
			}
		}
		return true
	})
	t, isStr := rawString(typ)
	switch {
	case isStr && strings.HasPrefix(t, "control."):
		return Lane000
	case schema:
		return Lane001
	case request:
		return Lane004
	case isStr && (t == Type001Request || t == Type001Ack || t == Type001Result || t == Type001Error):
		return Lane001
	case typ == "" || typ == "null":
		if ev, ok := rawString(event); ok && strings.HasPrefix(ev, "worker.") {
			return Lane004
		}
	}
	return ""
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

type decoder001 struct {
	raw   [nQFields]string // first occurrence of each ("" when absent)
	event string           // first "event", for NoReply
	dup   string           // the first field seen twice
}

func (d *decoder001) present(f int) bool { return d.raw[f] != "" && d.raw[f] != "null" }

// fail builds a bad_request Problem001 with what can be read of the line.
func (d *decoder001) fail(msg string) *Problem001 {
	p := &Problem001{Code: CodeBadRequest, Message: msg}
	if id, ok := rawString(d.raw[qRequestID]); ok && id != "" && len(id) <= MaxRequestID {
		p.RequestID = strings.Clone(id)
	}
	if c, ok := rawString(d.raw[qCommand]); ok {
		p.Command = command001(c)
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
		if v, ok := rawString(run); ok {
			p.Target.RunID = strings.Clone(v)
		}
		if v, ok := rawString(issue); ok {
			p.Target.IssueID = strings.Clone(v)
		}
	}
	typ, ok := rawString(d.raw[qType])
	switch {
	case ok:
		p.NoReply = typ == Type001Ack || typ == Type001Result || typ == Type001Error
	case d.raw[qType] == "":
		ev, _ := rawString(d.event)
		p.NoReply = ev == event001State || ev == event001Abort || ev == event001Done
	}
	return p
}

// command001 returns c as one of the Command* constants (no copy), or a
// copy of c.
func command001(c string) string {
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

// Decode001 checks a REQUEST line's shape and returns the request or why it
// is refused (always CodeBadRequest). The checks, in this order (the first
// that fails is reported): valid UTF-8, one JSON object, no field it reads
// given twice, schema exactly 0, type "REQUEST", request_id a string of
// 1..256 bytes, command one of the four, target an object with a non-empty
// string run_id (given once) and optional string issue_id, timestamp an RFC
// 3339 UTC time, payload an object; for escalate payload.model a non-empty
// string and payload.reason an optional string. A null counts as absent.
// Other fields are ignored.
func Decode001(line []byte) (Request001, *Problem001) {
	line = trimSpace(line)
	var d decoder001
	if !utf8.Valid(line) {
		return Request001{}, d.fail("the line is not valid UTF-8")
	}
	if !gjson.ValidBytes(line) {
		return Request001{}, d.fail("the line is not valid JSON")
	}
	if line[0] != '{' {
		return Request001{}, d.fail("the line is not a JSON object")
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
		return Request001{}, d.fail(quote(d.dup, 64) + ": appears more than once")
	}

	switch raw := d.raw[qSchema]; {
	case !d.present(qSchema):
		return Request001{}, d.fail("schema: missing")
	case !isNumber(raw):
		return Request001{}, d.fail("schema: must be a number")
	case raw != "0":
		return Request001{}, d.fail("schema: unsupported schema " + quote(raw, 32) + "; a REQUEST has schema 0")
	}
	typ, p := d.str(qType)
	if p != nil {
		return Request001{}, p
	}
	if typ != Type001Request {
		return Request001{}, d.fail("type: " + quote(typ, 64) + " is not a request; only \"REQUEST\" is read")
	}

	var r Request001
	id, p := d.str(qRequestID)
	switch {
	case p != nil:
		return Request001{}, p
	case len(id) > MaxRequestID:
		return Request001{}, d.fail("request_id: " + strconv.Itoa(len(id)) + " bytes, over the limit of 256")
	}
	cmd, p := d.str(qCommand)
	if p != nil {
		return Request001{}, p
	}
	switch cmd {
	case CommandPause, CommandResume, CommandCancel, CommandEscalate:
		r.Command = command001(cmd)
	default:
		return Request001{}, d.fail("command: unknown command " + quote(cmd, 64) +
			"; one of pause, resume, cancel, escalate")
	}
	if p := d.target(&r); p != nil {
		return Request001{}, p
	}
	at, p := d.str(qTimestamp)
	if p != nil {
		return Request001{}, p
	}
	if r.Timestamp, p = d.time(at); p != nil {
		return Request001{}, p
	}
	if p := d.payload(&r); p != nil {
		return Request001{}, p
	}
	r.RequestID = strings.Clone(id)
	return r, nil
}

// str returns the required non-empty string field f (aliasing the line).
func (d *decoder001) str(f int) (string, *Problem001) {
	name := qNames[f]
	if !d.present(f) {
		return "", d.fail(name + ": missing")
	}
	v, ok := rawString(d.raw[f])
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

func (d *decoder001) target(r *Request001) *Problem001 {
	obj := d.raw[qTarget]
	switch {
	case !d.present(qTarget):
		return d.fail("target: missing")
	case obj[0] != '{':
		return d.fail("target: must be an object")
	}
	var raw [2]string
	if dup := members(obj, targetNames, raw[:]); dup != "" {
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
func (d *decoder001) member(name, raw string, required bool) (string, *Problem001) {
	if raw == "" || raw == "null" {
		if required {
			return "", d.fail(name + ": missing")
		}
		return "", nil
	}
	v, ok := rawString(raw)
	switch {
	case !ok:
		return "", d.fail(name + ": must be a string")
	case required && v == "":
		return "", d.fail(name + ": must not be empty")
	}
	return v, nil
}

func (d *decoder001) payload(r *Request001) *Problem001 {
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
	if dup := members(obj, payloadNames, raw[:]); dup != "" {
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
func (d *decoder001) time(s string) (time.Time, *Problem001) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil || !rfc3339Shape(s) {
		return time.Time{}, d.fail("timestamp: " + quote(s, 64) + " is not an RFC 3339 time")
	}
	if _, off := t.Zone(); off != 0 {
		return time.Time{}, d.fail("timestamp: " + quote(s, 64) + " is not in UTC (end it in Z)")
	}
	return t.UTC(), nil
}

// timeLayout001 is RFC 3339 in UTC to the millisecond, with trailing zeros
// of the fraction (and a whole fraction of zero) left out, as the seed's
// examples write whole seconds: "2024-12-28T10:00:01Z".
const timeLayout001 = "2006-01-02T15:04:05.999Z07:00"

func appendTime001(dst []byte, t time.Time) []byte {
	dst = append(dst, '"')
	dst = t.UTC().AppendFormat(dst, timeLayout001)
	return append(dst, '"')
}

// appendHead001 appends {"schema":0,"topic":"loop:control","type":typ,
// ["request_id":id,]"command":…,"target":{"run_id":…[,"issue_id":…]},
// "timestamp":…
func appendHead001(dst []byte, typ string, withID bool, id, cmd string, tg *Target001, now time.Time) []byte {
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
	return appendTime001(dst, now)
}

// AppendAck001 appends the ACK of r (no newline):
//
//	{"schema":0,"topic":"loop:control","type":"ACK","request_id":…,
//	 "command":…,"target":{"run_id":…[,"issue_id":…]},"timestamp":…,
//	 "payload":{}}
func AppendAck001(dst []byte, r *Request001, now time.Time) []byte {
	dst = appendHead001(dst, Type001Ack, true, r.RequestID, r.Command, &r.Target, now)
	return append(dst, `,"payload":{}}`...)
}

// AppendResult001 appends the RESULT of r (no newline): the ACK's fields
// with type "RESULT" and payload {"status":…[,"code":…][,"message":…]
// [,"previous_model":…][,"new_model":…]}.
func AppendResult001(dst []byte, r *Request001, res Result001, now time.Time) []byte {
	dst = appendHead001(dst, Type001Result, true, r.RequestID, r.Command, &r.Target, now)
	return appendResultPayload(dst, &res)
}

func appendResultPayload(dst []byte, res *Result001) []byte {
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

// AppendProblem001 appends the answer to a refused line (no newline): a
// RESULT with status "failure", p.Code and p.Message, the correlation
// fields as read ("" when unread); or, when p has no RequestID, an ERROR
// line, the same without "request_id".
func AppendProblem001(dst []byte, p *Problem001, now time.Time) []byte {
	typ := Type001Result
	if p.RequestID == "" {
		typ = Type001Error
	}
	dst = appendHead001(dst, typ, p.RequestID != "", p.RequestID, p.Command, &p.Target, now)
	return appendResultPayload(dst, &Result001{Status: StatusFailure, Code: p.Code, Message: p.Message})
}

// The events of loop:current.
const (
	event001State = "STATE"
	event001Abort = "ABORT"
	event001Done  = "DONE"
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
	dst = appendEventHead(dst, event001State)
	dst = append(dst, `,"run_id":`...)
	dst = jsonw.String(dst, runID)
	dst = append(dst, `,"updated_at":`...)
	dst = appendTime001(dst, updatedAt)
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
	dst = appendEventHead(dst, event001Abort)
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
	dst = appendEventHead(dst, event001Done)
	dst = append(dst, `,"reason":`...)
	dst = jsonw.String(dst, reason)
	dst = append(dst, `,"run_id":`...)
	dst = jsonw.String(dst, runID)
	dst = append(dst, `,"updated_at":`...)
	dst = appendTime001(dst, now)
	return append(appendStack(dst, stack), '}')
}
