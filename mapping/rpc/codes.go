package rpc

import "github.com/ccbridge/ccbridge/mapping/jsonrpc"

// Error codes of the rpc dialect: the JSON-RPC standard ones and the
// seed's -32000 to -32006 (docs/protocol/rpc.md, "Errors").
const (
	CodeParseError     = jsonrpc.CodeParseError     // -32700: a line that is not JSON (or not UTF-8)
	CodeInvalidRequest = jsonrpc.CodeInvalidRequest // -32600: JSON, but not a JSON-RPC 2.0 message; a reused id
	CodeMethodNotFound = jsonrpc.CodeMethodNotFound // -32601: a method this dialect does not have
	CodeInvalidParams  = jsonrpc.CodeInvalidParams  // -32602: params missing, of the wrong type or out of range

	CodeRuntimeInternal   = -32000 // the CLI failed, timed out, could not be started; a command could not be run
	CodeRuntimeBusy       = -32001 // a run is already active; too many shell commands at once
	CodeRunNotFound       = -32002 // run.cancel names no run of this connection
	CodeUserCancelled     = -32003 // the request was cancelled with request.cancel
	CodeSessionNotFound   = -32004 // no session file for that session_id
	CodeSessionLoadFailed = -32005 // a session file could not be read, or the CLI could not be started on it
	CodeSessionListFailed = -32006 // the session directory could not be read
)

// Error is a JSON-RPC error object: what a request gets instead of a
// result. It is jsonrpc.Error, shared with the acp dialect.
type Error = jsonrpc.Error

// InvalidParams returns a -32602 error.
func InvalidParams(msg string) *Error { return &Error{Code: CodeInvalidParams, Message: msg} }

// Internal returns a -32000 error.
func Internal(msg string) *Error { return &Error{Code: CodeRuntimeInternal, Message: msg} }

// Sentinels for errors.Is.
var (
	ErrInvalidParams     = &Error{Code: CodeInvalidParams}
	ErrRuntimeInternal   = &Error{Code: CodeRuntimeInternal}
	ErrRuntimeBusy       = &Error{Code: CodeRuntimeBusy}
	ErrRunNotFound       = &Error{Code: CodeRunNotFound}
	ErrUserCancelled     = &Error{Code: CodeUserCancelled}
	ErrSessionNotFound   = &Error{Code: CodeSessionNotFound}
	ErrSessionLoadFailed = &Error{Code: CodeSessionLoadFailed}
	ErrSessionListFailed = &Error{Code: CodeSessionListFailed}
)
