package lane000

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/internal/jscan"
	"github.com/ccbridge/ccbridge/internal/rfc3339"
)

// field is one top-level field the lane reads.
type field uint8

const (
	fType field = iota
	fV
	fRequestID
	fTeam
	fSessionID
	fAgentID
	fSender
	fSentAt
	fThreadID
	fContent
	fContentRef
	fContentEncoding
	fContentPreview
	fInterrupt
	fSignal
	fMeta
	nFields
)

var fieldNames = [nFields]string{
	"type", "v", "request_id", "team", "session_id", "agent_id", "sender",
	"sent_at", "thread_id", "content", "content_ref", "content_encoding",
	"content_preview", "interrupt", "signal", "meta",
}

func fieldOf(key string) (field, bool) {
	switch key {
	case "type":
		return fType, true
	case "v":
		return fV, true
	case "request_id":
		return fRequestID, true
	case "team":
		return fTeam, true
	case "session_id":
		return fSessionID, true
	case "agent_id":
		return fAgentID, true
	case "sender":
		return fSender, true
	case "sent_at":
		return fSentAt, true
	case "thread_id":
		return fThreadID, true
	case "content":
		return fContent, true
	case "content_ref":
		return fContentRef, true
	case "content_encoding":
		return fContentEncoding, true
	case "content_preview":
		return fContentPreview, true
	case "interrupt":
		return fInterrupt, true
	case "signal":
		return fSignal, true
	case "meta":
		return fMeta, true
	}
	return 0, false
}

// fields holds the raw JSON text of the lane's fields in one line: the
// first occurrence of each ("" when absent), and the first field seen
// twice.
type fields struct {
	raw [nFields]string
	dup string
}

// present reports whether f is there and not null (null counts as absent).
func (fs *fields) present(f field) bool { return fs.raw[f] != "" && fs.raw[f] != "null" }

// str returns f's text when f is a JSON string (unescaped; it may alias
// the line), and whether it is one.
func (fs *fields) str(f field) (string, bool) { return jscan.Text(fs.raw[f]) }

// decoder builds a Problem naming what it read so far.
type decoder struct {
	fs  fields
	ack string
}

func (d *decoder) fail(res Result, code, detail string) *Problem {
	p := &Problem{Ack: d.ack, Result: res, Error: code, Detail: detail}
	d.correlate(p)
	return p
}

func (d *decoder) reject(code, detail string) *Problem { return d.fail(Rejected, code, detail) }

// Decode checks a line's shape: valid UTF-8, a JSON object, a known type,
// no field the lane reads given twice, "v" == 1, every required field
// present with the right JSON type, request_id 1..256 bytes, sent_at
// RFC 3339, exactly one of content/content_ref for stdin, a well-formed
// content_ref, content_encoding "utf-8", signal "interrupt". The order of
// the checks, and so which one a line with several faults reports, is
// given in docs/control/lane000.md.
func Decode(line []byte) (Request, *Problem) {
	line = jscan.TrimSpace(line)
	d := decoder{ack: TypeError}
	if !utf8.Valid(line) {
		return Request{}, d.reject(ErrInvalidUTF8, "the line is not valid UTF-8")
	}
	if !gjson.ValidBytes(line) {
		return Request{}, d.reject(ErrInvalidJSON, "the line is not valid JSON")
	}
	if line[0] != '{' {
		return Request{}, d.reject(ErrNotObject, "the line is not a JSON object")
	}
	// A view of the line, not a copy: whatever is kept is cloned below.
	s := unsafe.String(unsafe.SliceData(line), len(line))
	jscan.Walk(s, func(key, raw string) bool {
		if f, ok := fieldOf(key); ok {
			if d.fs.raw[f] == "" {
				d.fs.raw[f] = raw
			} else if d.fs.dup == "" {
				d.fs.dup = key
			}
		}
		return true
	})

	var r Request
	typ, ok := d.fs.str(fType)
	switch {
	case !d.fs.present(fType):
		return r, d.reject(ErrMissingField, "type: missing")
	case !ok:
		return r, d.reject(ErrWrongType, "type: must be a string")
	case typ == TypeStdinRequest:
		r.Kind = KindStdin
	case typ == TypeInterruptRequest:
		r.Kind = KindInterrupt
	case typ == TypeCapabilitiesRequest:
		r.Kind = KindCapabilities
	default:
		return r, d.reject(ErrUnknownType, "type: unknown type "+quote(typ, 64))
	}
	d.ack = r.Kind.AckType()
	if d.fs.dup != "" {
		return Request{}, d.reject(ErrDuplicateField, quote(d.fs.dup, 64)+": appears more than once")
	}
	if p := d.version(); p != nil {
		return Request{}, p
	}
	if r.Kind == KindCapabilities {
		if d.fs.present(fRequestID) {
			id, p := d.requestID()
			if p != nil {
				return Request{}, p
			}
			r.RequestID = id
		}
		return r, nil
	}
	if p := d.envelope(&r); p != nil {
		return Request{}, p
	}
	var p *Problem
	if r.Kind == KindStdin {
		p = d.stdin(&r)
	} else {
		p = d.interrupt()
	}
	if p != nil {
		return Request{}, p
	}
	return r, nil
}

// correlate fills p's correlation fields with what can be read: request_id
// when it is a valid one, team, session_id and agent_id when they are
// strings.
func (d *decoder) correlate(p *Problem) {
	if id, ok := d.fs.str(fRequestID); ok && id != "" && len(id) <= MaxRequestID {
		p.RequestID = strings.Clone(id)
	}
	if v, ok := d.fs.str(fTeam); ok {
		p.Team = strings.Clone(v)
	}
	if v, ok := d.fs.str(fSessionID); ok {
		p.SessionID = strings.Clone(v)
	}
	if v, ok := d.fs.str(fAgentID); ok {
		p.AgentID = strings.Clone(v)
	}
}

func (d *decoder) version() *Problem {
	raw := d.fs.raw[fV]
	switch {
	case !d.fs.present(fV):
		return d.reject(ErrMissingField, "v: missing")
	case !jscan.IsNumber(raw):
		return d.reject(ErrWrongType, "v: must be a number")
	case raw != "1":
		return d.reject(ErrUnsupported, "v: unsupported version "+quote(raw, 32)+"; this lane speaks v 1")
	}
	return nil
}

func (d *decoder) requestID() (string, *Problem) {
	id, p := d.reqStr(fRequestID)
	switch {
	case p != nil:
		return "", p
	case len(id) > MaxRequestID:
		return "", d.reject(ErrInvalidValue, "request_id: "+strconv.Itoa(len(id))+" bytes, over the limit of 256")
	}
	return strings.Clone(id), nil
}

// reqStr returns the required non-empty string field f (aliasing the line).
func (d *decoder) reqStr(f field) (string, *Problem) {
	name := fieldNames[f]
	if !d.fs.present(f) {
		return "", d.reject(ErrMissingField, name+": missing")
	}
	v, ok := d.fs.str(f)
	if !ok {
		return "", d.reject(ErrWrongType, name+": must be a string")
	}
	if v == "" {
		return "", d.reject(ErrInvalidValue, name+": must not be empty")
	}
	return v, nil
}

// optStr returns the optional string field f (aliasing the line).
func (d *decoder) optStr(f field) (string, *Problem) {
	if !d.fs.present(f) {
		return "", nil
	}
	v, ok := d.fs.str(f)
	if !ok {
		return "", d.reject(ErrWrongType, fieldNames[f]+": must be a string")
	}
	return v, nil
}

// envelope reads the fields both requests carry.
func (d *decoder) envelope(r *Request) *Problem {
	id, p := d.requestID()
	if p != nil {
		return p
	}
	r.RequestID = id
	for _, f := range [...]field{fTeam, fSessionID, fAgentID, fSender} {
		v, p := d.reqStr(f)
		if p != nil {
			return p
		}
		v = strings.Clone(v)
		switch f {
		case fTeam:
			r.Team = v
		case fSessionID:
			r.SessionID = v
		case fAgentID:
			r.AgentID = v
		case fSender:
			r.Sender = v
		}
	}
	at, p := d.reqStr(fSentAt)
	if p != nil {
		return p
	}
	if r.SentAt, p = d.time("sent_at", at); p != nil {
		return p
	}
	tid, p := d.optStr(fThreadID)
	if p != nil {
		return p
	}
	r.ThreadID = strings.Clone(tid)
	return d.meta(r)
}

func (d *decoder) time(name, s string) (time.Time, *Problem) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil || !rfc3339.Match(s) {
		return time.Time{}, d.reject(ErrInvalidValue, name+": "+quote(s, 64)+" is not an RFC 3339 time")
	}
	return t.UTC(), nil
}

// meta reads meta.retry_count; meta's other members are not the lane's.
func (d *decoder) meta(r *Request) *Problem {
	raw := d.fs.raw[fMeta]
	if !d.fs.present(fMeta) {
		return nil
	}
	if raw[0] != '{' {
		return d.reject(ErrWrongType, "meta: must be an object")
	}
	var meta [1]string
	if jscan.Pick(raw, metaNames, meta[:]) != "" {
		return d.reject(ErrDuplicateField, `"meta.retry_count": appears more than once`)
	}
	rc := meta[0]
	if rc == "" || rc == "null" {
		return nil
	}
	n, p := d.count("meta.retry_count", rc)
	if p != nil {
		return p
	}
	if n > int64(^uint(0)>>1) {
		return d.reject(ErrInvalidValue, "meta.retry_count: out of range")
	}
	r.RetryCount = int(n)
	return nil
}

// count reads a JSON integer >= 0.
func (d *decoder) count(name, raw string) (int64, *Problem) {
	if !jscan.IsNumber(raw) {
		return 0, d.reject(ErrWrongType, name+": must be an integer")
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	switch {
	case err != nil && errorsIsRange(err):
		return 0, d.reject(ErrInvalidValue, name+": out of range")
	case err != nil:
		return 0, d.reject(ErrWrongType, name+": must be an integer")
	case n < 0:
		return 0, d.reject(ErrInvalidValue, name+": must not be negative")
	}
	return n, nil
}

func (d *decoder) stdin(r *Request) *Problem {
	hasContent, hasRef := d.fs.present(fContent), d.fs.present(fContentRef)
	switch {
	case hasContent && hasRef:
		return d.reject(ErrInvalidValue, "content, content_ref: give exactly one, not both")
	case !hasContent && !hasRef:
		return d.reject(ErrMissingField, "content: missing (give content or content_ref)")
	case hasContent:
		raw := d.fs.raw[fContent]
		if raw[0] != '"' {
			return d.reject(ErrWrongType, "content: must be a string")
		}
		body := raw[1 : len(raw)-1]
		r.Content = jscan.AppendUnescaped(make([]byte, 0, len(body)), body)
	default:
		ref, p := d.contentRef(d.fs.raw[fContentRef])
		if p != nil {
			return p
		}
		r.Ref = ref
	}
	enc, p := d.optStr(fContentEncoding)
	if p != nil {
		return p
	}
	if d.fs.present(fContentEncoding) && !strings.EqualFold(enc, "utf-8") {
		return d.reject(ErrInvalidValue, "content_encoding: "+quote(enc, 32)+" is not supported; only utf-8")
	}
	if _, p := d.optStr(fContentPreview); p != nil {
		return p
	}
	if d.fs.present(fInterrupt) {
		switch d.fs.raw[fInterrupt] {
		case "true":
			r.Interrupt = true
		case "false":
		default:
			return d.reject(ErrWrongType, "interrupt: must be a boolean")
		}
	}
	return nil
}

func (d *decoder) interrupt() *Problem {
	sig, p := d.reqStr(fSignal)
	if p != nil {
		return p
	}
	if sig != "interrupt" {
		return d.reject(ErrInvalidValue, "signal: "+quote(sig, 32)+" is not supported; only \"interrupt\"")
	}
	return nil
}

// The members of a content_ref.
const (
	rPath = iota
	rSize
	rSHA256
	rMIME
	rExpiresAt
	nRef
)

var refNames = [nRef]string{"path", "size_bytes", "sha256", "mime", "expires_at"}

// metaNames are the members of meta the lane reads.
var metaNames = []string{"retry_count"}

func (d *decoder) contentRef(obj string) (*ContentRef, *Problem) {
	if obj[0] != '{' {
		return nil, d.reject(ErrWrongType, "content_ref: must be an object")
	}
	var raw [nRef]string
	if dup := jscan.Pick(obj, refNames[:], raw[:]); dup != "" {
		return nil, d.reject(ErrDuplicateField, `"content_ref.`+dup+`": appears more than once`)
	}
	for i := range rExpiresAt { // every member but expires_at is required
		if raw[i] == "" || raw[i] == "null" {
			return nil, d.reject(ErrMissingField, "content_ref."+refNames[i]+": missing")
		}
	}
	var ref ContentRef
	path, ok := jscan.Text(raw[rPath])
	switch {
	case !ok:
		return nil, d.reject(ErrWrongType, "content_ref.path: must be a string")
	case path == "":
		return nil, d.reject(ErrInvalidValue, "content_ref.path: must not be empty")
	}
	ref.Path = strings.Clone(path)
	size, p := d.count("content_ref.size_bytes", raw[rSize])
	if p != nil {
		return nil, p
	}
	ref.Size = size
	sum, ok := jscan.Text(raw[rSHA256])
	switch {
	case !ok:
		return nil, d.reject(ErrWrongType, "content_ref.sha256: must be a string")
	case !isHex64(sum):
		return nil, d.reject(ErrInvalidValue, "content_ref.sha256: must be 64 hex digits")
	}
	ref.SHA256 = strings.ToLower(sum)
	if ref.SHA256 == sum {
		ref.SHA256 = strings.Clone(sum)
	}
	mime, ok := jscan.Text(raw[rMIME])
	if !ok {
		return nil, d.reject(ErrWrongType, "content_ref.mime: must be a string")
	}
	ref.MIME = strings.Clone(mime)
	if exp := raw[rExpiresAt]; exp != "" && exp != "null" {
		s, ok := jscan.Text(exp)
		if !ok {
			return nil, d.reject(ErrWrongType, "content_ref.expires_at: must be a string")
		}
		if ref.ExpiresAt, p = d.time("content_ref.expires_at", s); p != nil {
			return nil, p
		}
	}
	return &ref, nil
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func errorsIsRange(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// quote returns s as a Go-quoted string, cut to max bytes (at a rune
// boundary) with "…" when longer: a detail never echoes a whole field.
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
