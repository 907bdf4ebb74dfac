package lane000

import (
	"time"

	"github.com/ccbridge/ccbridge/internal/jsonw"
)

// timeLayout is RFC 3339 with milliseconds; times are written in UTC, so
// with a "Z".
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

func appendTime(dst []byte, t time.Time) []byte {
	dst = append(dst, '"')
	dst = t.UTC().AppendFormat(dst, timeLayout)
	return append(dst, '"')
}

// appendHead appends {"type":…,"v":1,"request_id":…,"team":…,
// "session_id":…,"agent_id":…,"acked_at":…
func appendHead(dst []byte, typ, id, team, session, agent string, now time.Time) []byte {
	dst = append(dst, `{"type":`...)
	dst = jsonw.String(dst, typ)
	dst = append(dst, `,"v":1,"request_id":`...)
	dst = jsonw.String(dst, id)
	dst = append(dst, `,"team":`...)
	dst = jsonw.String(dst, team)
	dst = append(dst, `,"session_id":`...)
	dst = jsonw.String(dst, session)
	dst = append(dst, `,"agent_id":`...)
	dst = jsonw.String(dst, agent)
	dst = append(dst, `,"acked_at":`...)
	return appendTime(dst, now)
}

// AppendAck appends one ack line (no newline): type from r.Kind
// (control.error for a kind with no ack), v, request_id, team,
// session_id, agent_id, acked_at (RFC 3339 UTC, now), result, duplicate,
// and detail when not "".
func AppendAck(dst []byte, r *Request, res Result, detail string, duplicate bool, now time.Time) []byte {
	dst = appendHead(dst, r.Kind.AckType(), r.RequestID, r.Team, r.SessionID, r.AgentID, now)
	dst = append(dst, `,"result":`...)
	dst = jsonw.String(dst, string(res))
	dst = append(dst, `,"duplicate":`...)
	dst = jsonw.Bool(dst, duplicate)
	if detail != "" {
		dst = append(dst, `,"detail":`...)
		dst = jsonw.String(dst, detail)
	}
	return append(dst, '}')
}

// AppendProblem appends the line answering a refused line (no newline):
// the ack p.Ack names with duplicate false, or a control.error, with the
// correlation fields as far as they were read ("" otherwise), result,
// detail and error when not "".
func AppendProblem(dst []byte, p *Problem, now time.Time) []byte {
	typ := p.Ack
	if typ != TypeStdinAck && typ != TypeInterruptAck {
		typ = TypeError
	}
	dst = appendHead(dst, typ, p.RequestID, p.Team, p.SessionID, p.AgentID, now)
	dst = append(dst, `,"result":`...)
	dst = jsonw.String(dst, string(p.Result))
	if typ != TypeError {
		dst = append(dst, `,"duplicate":false`...)
	}
	if p.Detail != "" {
		dst = append(dst, `,"detail":`...)
		dst = jsonw.String(dst, p.Detail)
	}
	if p.Error != "" {
		dst = append(dst, `,"error":`...)
		dst = jsonw.String(dst, p.Error)
	}
	return append(dst, '}')
}

var (
	defaultLanes = []string{"000"}
	defaultTypes = []string{TypeStdinRequest, TypeInterruptRequest, TypeCapabilitiesRequest}
)

// AppendCapabilities appends the control.capabilities line (no newline):
//
//	{"type":"control.capabilities","v":1,["request_id":…,]"lanes":[…],
//	 "types":[…],"soft_limit_bytes":…,"hard_limit_bytes":…,
//	 "content_ref":bool,"ref_max_bytes":…,"max_request_id_bytes":256,
//	 "dedupe_durable":bool,"dedupe_ttl_ms":…,"team":…,"agent_id":…,
//	 "session_id":…,"sent_at":…}
func AppendCapabilities(dst []byte, c Capabilities, now time.Time) []byte {
	dst = append(dst, `{"type":"control.capabilities","v":1`...)
	if c.RequestID != "" {
		dst = append(dst, `,"request_id":`...)
		dst = jsonw.String(dst, c.RequestID)
	}
	lanes, types := c.Lanes, c.Types
	if lanes == nil {
		lanes = defaultLanes
	}
	if types == nil {
		types = defaultTypes
	}
	dst = append(dst, `,"lanes":`...)
	dst = jsonw.Strings(dst, lanes)
	dst = append(dst, `,"types":`...)
	dst = jsonw.Strings(dst, types)
	dst = append(dst, `,"soft_limit_bytes":`...)
	dst = jsonw.Int(dst, int64(c.SoftLimit))
	dst = append(dst, `,"hard_limit_bytes":`...)
	dst = jsonw.Int(dst, int64(c.HardLimit))
	dst = append(dst, `,"content_ref":`...)
	dst = jsonw.Bool(dst, c.RefsAllowed)
	dst = append(dst, `,"ref_max_bytes":`...)
	dst = jsonw.Int(dst, c.RefMax)
	dst = append(dst, `,"max_request_id_bytes":256,"dedupe_durable":`...)
	dst = jsonw.Bool(dst, c.Durable)
	dst = append(dst, `,"dedupe_ttl_ms":`...)
	dst = jsonw.Int(dst, c.DedupeTTL.Milliseconds())
	dst = append(dst, `,"team":`...)
	dst = jsonw.String(dst, c.Team)
	dst = append(dst, `,"agent_id":`...)
	dst = jsonw.String(dst, c.AgentID)
	dst = append(dst, `,"session_id":`...)
	dst = jsonw.String(dst, c.SessionID)
	dst = append(dst, `,"sent_at":`...)
	dst = appendTime(dst, now)
	return append(dst, '}')
}
