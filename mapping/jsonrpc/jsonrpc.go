// Package jsonrpc reads and writes JSON-RPC 2.0 messages for the dialects
// that speak it (acp, rpc). It is pure: no I/O, no goroutines, no clock.
// Ids, params and results stay raw JSON, copied as bytes; nothing is
// decoded that the caller does not ask for. Error is the error object both
// dialects answer with; Pending is the table of requests a dialect sent
// its peer and awaits answers for.
package jsonrpc

import (
	"strconv"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// Standard error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// Kind says what a message is.
type Kind uint8

const (
	KindInvalid       Kind = iota // not a JSON-RPC 2.0 message
	KindRequest                   // method and id
	KindNotification              // method, no id
	KindResponse                  // id and result
	KindErrorResponse             // id and error
)

// Message is one parsed JSON-RPC message. The raw fields alias the parsed
// line: copy them before the line's buffer is reused.
type Message struct {
	Kind   Kind
	ID     string       // the id's raw JSON ("1", "\"abc\""), "" when absent
	Method string       // requests and notifications
	Params gjson.Result // raw params; !Exists() when absent
	Result gjson.Result // responses
	Error  gjson.Result // error responses: {code, message, data?}
	// Problem says why a message is KindInvalid (for the -32600 answer).
	Problem string
}

// ProblemCode is the error code of the answer to a KindInvalid message:
// CodeParseError for a line that is not JSON, else CodeInvalidRequest.
func (m Message) ProblemCode() int {
	if m.Problem == problemParse {
		return CodeParseError
	}
	return CodeInvalidRequest
}

// problemParse is the Problem of a line that is not JSON.
const problemParse = "parse error"

// Parse classifies one line. A line that is not JSON, or not UTF-8 (which
// JSON text must be), gives KindInvalid with Problem "parse error" (answer
// CodeParseError, with no id); one that is JSON but not a JSON-RPC 2.0
// message gives KindInvalid with another Problem (answer
// CodeInvalidRequest, with the id when there is one).
func Parse(line []byte) Message {
	if !utf8.Valid(line) || !gjson.ValidBytes(line) {
		return Message{Problem: problemParse}
	}
	root := gjson.ParseBytes(line)
	if !root.IsObject() {
		return Message{Problem: "a JSON-RPC message must be an object"}
	}
	var m Message
	if id := root.Get("id"); id.Exists() {
		if id.Type != gjson.String && id.Type != gjson.Number && id.Type != gjson.Null {
			return Message{Problem: "id must be a string, a number or null"}
		}
		if id.Type != gjson.Null {
			m.ID = id.Raw
		}
	}
	if v := root.Get("jsonrpc"); v.Str != "2.0" {
		m.Problem = `"jsonrpc" must be "2.0"`
		return m
	}
	method := root.Get("method")
	switch {
	case method.Exists():
		if method.Type != gjson.String || method.Str == "" {
			m.Problem = "method must be a non-empty string"
			return m
		}
		m.Method = method.Str
		m.Params = root.Get("params")
		if m.Params.Exists() && !m.Params.IsObject() && !m.Params.IsArray() {
			m.Problem = "params must be an object or an array"
			return m
		}
		if m.ID == "" && !root.Get("id").Exists() {
			m.Kind = KindNotification
		} else {
			m.Kind = KindRequest
		}
	case root.Get("result").Exists() && m.ID != "":
		m.Kind, m.Result = KindResponse, root.Get("result")
	case root.Get("error").Exists():
		m.Kind, m.Error = KindErrorResponse, root.Get("error")
	default:
		m.Problem = "neither a request, a notification nor a response"
	}
	return m
}

// AppendResult appends a success response.
func AppendResult(dst []byte, id, result string) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = appendID(dst, id)
	dst = append(dst, `,"result":`...)
	if result == "" {
		result = "null"
	}
	dst = append(dst, result...)
	return append(dst, '}')
}

// AppendError appends an error response. data is raw JSON or "".
func AppendError(dst []byte, id string, code int, message, data string) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = appendID(dst, id)
	dst = append(dst, `,"error":{"code":`...)
	dst = strconv.AppendInt(dst, int64(code), 10)
	dst = append(dst, `,"message":`...)
	dst = gjson.AppendJSONString(dst, message)
	if data != "" {
		dst = append(dst, `,"data":`...)
		dst = append(dst, data...)
	}
	return append(dst, '}', '}')
}

// AppendRequest appends a request with a raw id and raw params ("" for
// none).
func AppendRequest(dst []byte, id, method, params string) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = appendID(dst, id)
	return appendMethod(dst, method, params)
}

// AppendNotification appends a notification with raw params ("" for none).
func AppendNotification(dst []byte, method, params string) []byte {
	dst = append(dst, `{"jsonrpc":"2.0"`...)
	return appendMethod(dst, method, params)
}

func appendMethod(dst []byte, method, params string) []byte {
	dst = append(dst, `,"method":`...)
	dst = gjson.AppendJSONString(dst, method)
	if params != "" {
		dst = append(dst, `,"params":`...)
		dst = append(dst, params...)
	}
	return append(dst, '}')
}

func appendID(dst []byte, id string) []byte {
	if id == "" {
		return append(dst, "null"...)
	}
	return append(dst, id...)
}

// ErrorCode returns the code and message of an error response's error.
func ErrorCode(m Message) (int, string) {
	return int(m.Error.Get("code").Int()), m.Error.Get("message").Str
}
