package ipc

import "github.com/ccbridge/ccbridge/internal/jsonw"

// ErrorCode is the "code" of an ipc error message.
type ErrorCode string

// Codes FromUI returns for bad inbound lines.
const (
	CodeInvalidJSON       ErrorCode = "invalid_json"       // not JSON, not an object, or not UTF-8
	CodeUnknownType       ErrorCode = "unknown_type"       // "type" names no inbound message
	CodeMissingField      ErrorCode = "missing_field"      // a required field is absent or null
	CodeWrongType         ErrorCode = "wrong_type"         // a field has the wrong JSON type
	CodeInvalidValue      ErrorCode = "invalid_value"      // a field has a value outside its set
	CodeUnknownRequest    ErrorCode = "unknown_request"    // request_id names no open request (or one already answered)
	CodeAttachmentRefused ErrorCode = "attachment_refused" // an attachment is of a refused type, too large, or not what it claims
	CodeDuplicateKey      ErrorCode = "duplicate_key"      // a member name appears twice in one object of the line
)

// Codes FromCLI uses for errors that come from the CLI.
const (
	// CodeControlRequestFailed: the CLI answered one of our control
	// requests with an error (such as set_permission_mode with an unknown
	// mode; cli_error_code then carries the CLI's error_code).
	CodeControlRequestFailed = "control_request_failed"
	// CodeSlashCommandFailed: a local slash command wrote
	// <local-command-stderr>.
	CodeSlashCommandFailed = "slash_command_failed"
	// CodeInvalidCLIOutput: the CLI wrote a line that is not JSON (a
	// stray print to stdout, or the torn last line of a child that died);
	// it is dropped, and the stream goes on.
	CodeInvalidCLIOutput = "invalid_cli_output"
)

// Error is the typed error FromUI returns. It is reported to the UI as an
// error message (AppendIPC) and the stream goes on. It is the ipc dialect's
// own error line, not a JSON-RPC error object (jsonrpc.Error): ipc does not
// speak JSON-RPC.
type Error struct {
	Code      ErrorCode
	Message   string // says what was wrong, naming the field
	Field     string // the offending field, if one
	Inbound   string // the inbound "type", when it was readable
	RequestID string // the request_id the message referred to, if any
}

// Sentinels for errors.Is, one per code: errors.Is(err, ipc.ErrMissingField).
var (
	ErrInvalidJSON       = &Error{Code: CodeInvalidJSON}
	ErrUnknownType       = &Error{Code: CodeUnknownType}
	ErrMissingField      = &Error{Code: CodeMissingField}
	ErrWrongType         = &Error{Code: CodeWrongType}
	ErrInvalidValue      = &Error{Code: CodeInvalidValue}
	ErrUnknownRequest    = &Error{Code: CodeUnknownRequest}
	ErrAttachmentRefused = &Error{Code: CodeAttachmentRefused}
	ErrDuplicateKey      = &Error{Code: CodeDuplicateKey}
)

func (e *Error) Error() string {
	return "ipc: " + string(e.Code) + ": " + e.Message
}

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// AppendIPC appends the error as an ipc line:
// {"type":"error","ipc_version":2,"code":…,"message":…,"recoverable":true,…}
// with "field", "in_reply_to" (the inbound type) and "request_id" when known.
func (e *Error) AppendIPC(dst []byte) []byte {
	dst = AppendError(dst, string(e.Code), e.Message, true)
	dst = dst[:len(dst)-1]
	if e.Field != "" {
		dst = jsonw.Key(dst, "field")
		dst = jsonw.String(dst, e.Field)
	}
	if e.Inbound != "" {
		dst = jsonw.Key(dst, "in_reply_to")
		dst = jsonw.String(dst, e.Inbound)
	}
	if e.RequestID != "" {
		dst = jsonw.Key(dst, "request_id")
		dst = jsonw.String(dst, e.RequestID)
	}
	return append(dst, '}')
}
