package jsonrpc

import "strconv"

// Error is a JSON-RPC error object: what a request gets instead of a
// result. The rpc and acp dialects alias it (rpc.Error, acp.Error) and
// keep their own codes, constructors and sentinels.
type Error struct {
	Code    int
	Message string
	Data    string // raw JSON, or ""
}

func (e *Error) Error() string {
	return "jsonrpc error " + strconv.Itoa(e.Code) + ": " + e.Message
}

// Is makes errors.Is match two *Error values with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// AppendResponse appends the error response to the request with raw id
// ("" for null).
func (e *Error) AppendResponse(dst []byte, id string) []byte {
	return AppendError(dst, id, e.Code, e.Message, e.Data)
}
