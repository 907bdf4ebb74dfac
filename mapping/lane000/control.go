package lane000

import "time"

// Version is the lane's schema version, the "v" of every message.
const Version = 1

// MaxRequestID is the longest request_id accepted, in bytes.
const MaxRequestID = 256

// Defaults of the Policy limits (the flags' defaults).
const (
	DefaultMaxAge    = 10 * time.Minute
	DefaultClockSkew = 30 * time.Second
	DefaultSoftLimit = 64 << 10
	DefaultHardLimit = 1 << 20
)

// Message types.
const (
	TypeStdinRequest        = "control.stdin.request"
	TypeStdinAck            = "control.stdin.ack"
	TypeInterruptRequest    = "control.interrupt.request"
	TypeInterruptAck        = "control.interrupt.ack"
	TypeCapabilitiesRequest = "control.capabilities.request"
	TypeCapabilities        = "control.capabilities"
	TypeError               = "control.error"
)

// Result is an ack's "result".
type Result string

// The result codes of seed 000.
const (
	OK            Result = "ok"
	NotLive       Result = "not_live"
	NotFound      Result = "not_found"
	Busy          Result = "busy"
	Timeout       Result = "timeout"
	Rejected      Result = "rejected"
	InternalError Result = "internal_error"
)

// Kind is what a decoded request asks for.
type Kind uint8

// The request kinds.
const (
	KindNone Kind = iota
	KindStdin
	KindInterrupt
	KindCapabilities
)

// AckType is the type of the line that answers a request of kind k:
// control.stdin.ack, control.interrupt.ack, or control.error for the
// kinds that have no ack of their own.
func (k Kind) AckType() string {
	switch k {
	case KindStdin:
		return TypeStdinAck
	case KindInterrupt:
		return TypeInterruptAck
	}
	return TypeError
}

// ContentRef is a stdin request's content_ref. SHA256 is lower-case hex.
type ContentRef struct {
	Path, SHA256, MIME string
	Size               int64
	ExpiresAt          time.Time // zero: none
}

// Request is a decoded control request; every string and byte slice is a
// copy (the line may be reused).
type Request struct {
	Kind                                                  Kind
	RequestID, Team, SessionID, AgentID, Sender, ThreadID string
	SentAt                                                time.Time // UTC
	Content                                               []byte    // inline content (nil when Ref is set)
	Ref                                                   *ContentRef
	Interrupt                                             bool // stdin: interrupt the running turn first
	RetryCount                                            int  // meta.retry_count
}

// Problem says why a line is refused. Ack is the type of the line to
// answer with ("control.stdin.ack", "control.interrupt.ack"), or
// "control.error" when the line's type is unknown or unreadable (and for a
// refused control.capabilities.request).
type Problem struct {
	Ack                      string
	Result                   Result // Rejected, NotFound, NotLive
	Detail                   string // for people: names the field and what is wrong with it
	Error                    string // for programs: one of the Err* codes ("" for none)
	RequestID                string // as far as it could be read ("" if none or invalid)
	Team, SessionID, AgentID string
}

// The codes of Problem.Error, written as the answer's "error".
const (
	ErrInvalidUTF8    = "invalid_utf8"        // the line is not UTF-8
	ErrInvalidJSON    = "invalid_json"        // the line is not JSON
	ErrNotObject      = "not_object"          // the line is JSON but not an object
	ErrUnknownType    = "unknown_type"        // "type" names no request of this lane
	ErrDuplicateField = "duplicate_field"     // a field the lane reads appears twice
	ErrUnsupported    = "unsupported_version" // "v" is not 1
	ErrMissingField   = "missing_field"       // a required field is absent or null
	ErrWrongType      = "wrong_type"          // a field has the wrong JSON type
	ErrInvalidValue   = "invalid_value"       // a field's value is out of its range or set
	ErrUnauthorized   = "unauthorized"        // another team, or a sender not allowed
	ErrUnknownSession = "unknown_session"     // session_id is not this worker's
	ErrUnknownAgent   = "unknown_agent"       // agent_id is not this worker's
	ErrNoSession      = "no_session"          // the worker has no session id yet
	ErrStale          = "stale"               // sent_at older than the max age
	ErrFuture         = "future"              // sent_at beyond now plus the clock skew
	ErrEmptyContent   = "empty_content"       // content is ""
	ErrTooLarge       = "too_large"           // inline content over the hard limit
	ErrRefsDisabled   = "content_ref_refused" // content_ref with no --ref-root
	ErrUnknownRequest = "invalid_request"     // Check was given a request of no known kind
)

// Policy is what the worker enforces. Its values are taken as they are
// (the flags carry the defaults): a zero MaxAge refuses every request
// not sent at exactly now, a zero HardLimit every inline content; a
// SoftLimit of zero or less never warns.
type Policy struct {
	Team, AgentID string
	Senders       []string      // allowed senders; empty: none (deny by default)
	MaxAge        time.Duration // 10 min
	ClockSkew     time.Duration // 30 s
	SoftLimit     int           // 64 KiB
	HardLimit     int           // 1 MiB (--stdin-hard-limit)
	RefsAllowed   bool          // at least one --ref-root
}

// Capabilities is what the control.capabilities line announces.
type Capabilities struct {
	Lanes                    []string // nil: "000"
	Types                    []string // accepted request types; nil: the three of lane 000
	SoftLimit, HardLimit     int
	RefMax                   int64
	RefsAllowed, Durable     bool
	DedupeTTL                time.Duration
	Team, AgentID, SessionID string
	RequestID                string // echoed when answering a request that had one
}
