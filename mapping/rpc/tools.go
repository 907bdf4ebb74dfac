package rpc

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/internal/jsonw"
)

// The methods of seed 002's last rows: tool.call, auth.logout, and the
// read-back of a shell.exec output kept by its cache id.
const (
	MethodToolCall    = "tool.call"
	MethodAuthLogout  = "auth.logout"
	MethodShellOutput = "shell.output" // extension: a shell.exec output by its cache id
)

// The tools tool.call runs: what the CLI lets its host run directly
// (control requests read_file and mcp_call), and the output cache of
// shell.exec (seed 002: "cache IDs can be used with tool_output_cache").
const (
	ToolRead        = "Read"              // read_file {path, max_bytes?, encoding?}
	ToolOutputCache = "tool_output_cache" // a shell.exec output by cache id
	mcpToolPrefix   = "mcp__"             // mcp_call {tool, arguments}: mcp__<server>__<tool>
)

// ToolCall is a checked tool.call: the tool and its arguments.
type ToolCall struct {
	Name string
	// Control is the control request body for the CLI ({"subtype":…}),
	// or "" for the output cache (Output is then set).
	Control string
	Output  ShellOutputParams
}

// Unknown tool: -32602 with data {"reason":"unknown_tool","tool":name,
// "tools":[…]}, so that a UI can tell it from malformed arguments.
func unknownTool(name string) *Error {
	d := jsonw.String([]byte(`{"reason":"unknown_tool","tool":`), name)
	d = append(d, `,"tools":["Read","mcp__<server>__<tool>","tool_output_cache"]}`...)
	return &Error{Code: CodeInvalidParams,
		Message: "unknown tool " + quoteName(name) + ": tool.call runs Read, an MCP tool (mcp__<server>__<tool>) or tool_output_cache",
		Data:    string(d)}
}

func quoteName(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return string(jsonw.String(nil, s))
}

// ParseToolCall checks tool.call's params {name, arguments?}.
//
//   - Read: arguments {file_path (or path), max_bytes?, encoding?
//     ("utf-8" or "base64")} become the CLI's read_file; the CLI reads
//     the file (only where its permission rules let it read: a path
//     outside the working directory is "read denied").
//   - mcp__<server>__<tool>: arguments (an object, default {}) become the
//     CLI's mcp_call {tool, arguments}.
//   - tool_output_cache: arguments as shell.output's params.
//
// Any other name is unknownTool.
func ParseToolCall(p gjson.Result) (ToolCall, *Error) {
	v := newParams(p)
	var tc ToolCall
	tc.Name = v.str("name", true)
	args := v.get("arguments")
	if v.err == nil && args.Exists() && args.Type != gjson.Null && !args.IsObject() {
		v.fail("arguments must be an object")
	}
	if v.err != nil {
		return tc, v.err
	}
	switch {
	case tc.Name == ToolRead:
		a := newParams(args)
		path := a.str("file_path", false)
		if path == "" {
			path = a.str("path", true)
		}
		b := []byte(`{"subtype":"read_file","path":`)
		b = jsonw.String(b, path)
		if m := a.get("max_bytes"); a.err == nil && m.Exists() && m.Type != gjson.Null {
			if m.Type != gjson.Number || m.Num < 1 || m.Num != float64(int64(m.Num)) {
				a.fail("arguments.max_bytes must be a positive integer")
			}
			b = append(b, `,"max_bytes":`...)
			b = jsonw.Int(b, int64(m.Num))
		}
		if enc := a.str("encoding", false); enc != "" {
			if enc != "utf-8" && enc != "base64" {
				a.fail(`arguments.encoding must be "utf-8" or "base64"`)
			}
			b = append(b, `,"encoding":`...)
			b = jsonw.String(b, enc)
		}
		if a.err != nil {
			a.err.Message = "Read: " + a.err.Message
			return tc, a.err
		}
		tc.Control = string(append(b, '}'))
	case strings.HasPrefix(tc.Name, mcpToolPrefix) && strings.Count(tc.Name, "__") >= 2:
		b := []byte(`{"subtype":"mcp_call","tool":`)
		b = jsonw.String(b, tc.Name)
		b = append(b, `,"arguments":`...)
		if args.IsObject() {
			b = append(b, args.Raw...)
		} else {
			b = append(b, "{}"...)
		}
		tc.Control = string(append(b, '}'))
	case tc.Name == ToolOutputCache:
		o, err := ParseShellOutput(args)
		if err != nil {
			return tc, err
		}
		tc.Output = o
	default:
		return tc, unknownTool(tc.Name)
	}
	return tc, nil
}

// AppendToolCallResult appends tool.call's response {ok, result}: ok and
// the CLI's answer (raw) when it ran the tool, or ok false and
// {"error": the CLI's words} when it refused (a path it may not read, an
// MCP server not connected).
func AppendToolCallResult(dst []byte, id string, ok bool, res gjson.Result, refusal string) []byte {
	o := result(id, len(res.Raw)+len(refusal)+64)
	o.boolean("ok", ok)
	if ok {
		o.raw("result", res.Raw)
	} else {
		o.obj("result")
		o.str("error", refusal)
		o.end('}')
	}
	return append(dst, o.endNotification()...)
}

// ParseAuthLogout checks auth.logout's params {clear_session?}: a bool,
// read and answered (session_cleared is always false: the conversation
// stays, see docs/protocol/rpc.md).
func ParseAuthLogout(p gjson.Result) (clearSession bool, err *Error) {
	v := newParams(p)
	clearSession = true
	if c := v.get("clear_session"); c.Exists() && c.Type != gjson.Null {
		if !c.IsBool() {
			v.fail("clear_session must be a boolean")
		}
		clearSession = c.Bool()
	}
	return clearSession, v.err
}

// AppendAuthLogoutResult appends auth.logout's response.
func AppendAuthLogoutResult(dst []byte, id string, authCleared bool, message string) []byte {
	o := result(id, 128+len(message))
	o.boolean("ok", true)
	o.boolean("auth_cleared", authCleared)
	o.boolean("session_cleared", false)
	o.strIf("message", message)
	return append(dst, o.endNotification()...)
}

// ShellOutputParams are shell.output's params (and tool_output_cache's
// arguments): {cache_id, offset?, max_bytes?}.
type ShellOutputParams struct {
	CacheID  string
	Offset   int64
	MaxBytes int64 // 0: to the end
}

// ParseShellOutput checks shell.output's params.
func ParseShellOutput(p gjson.Result) (ShellOutputParams, *Error) {
	v := newParams(p)
	var o ShellOutputParams
	o.CacheID = v.str("cache_id", true)
	for _, f := range [...]struct {
		k string
		n *int64
	}{{"offset", &o.Offset}, {"max_bytes", &o.MaxBytes}} {
		r := v.get(f.k)
		if !r.Exists() || r.Type == gjson.Null {
			continue
		}
		if r.Type != gjson.Number || r.Num < 0 || r.Num != float64(int64(r.Num)) {
			v.fail(f.k + " must be an integer of 0 or more")
			continue
		}
		*f.n = int64(r.Num)
	}
	return o, v.err
}

// ShellOutput is one read of a cached shell.exec output.
type ShellOutput struct {
	CacheID string
	Stream  string // "stdout" or "stderr"
	Offset  int64
	Content []byte // as read (invalid UTF-8 is replaced in the JSON)
	// Total is the bytes kept; Complete says they are the whole output
	// (false when the command wrote more than the cache keeps).
	Total    int64
	Complete bool
	EOF      bool // Content reaches the end of what is kept
}

// AppendShellOutputResult appends shell.output's response (or
// tool_output_cache's result, wrapped by the caller).
func AppendShellOutputResult(dst []byte, id string, r ShellOutput) []byte {
	o := result(id, len(r.Content)+256)
	appendShellOutput(&o, r)
	return append(dst, o.endNotification()...)
}

// AppendShellOutputToolResult appends tool.call's response for
// tool_output_cache: {ok: true, result: what shell.output answers}.
func AppendShellOutputToolResult(dst []byte, id string, r ShellOutput) []byte {
	o := result(id, len(r.Content)+256)
	o.boolean("ok", true)
	o.obj("result")
	appendShellOutput(&o, r)
	o.end('}')
	return append(dst, o.endNotification()...)
}

func appendShellOutput(o *w, r ShellOutput) {
	o.str("cache_id", r.CacheID)
	o.str("stream", r.Stream)
	o.int("offset", r.Offset)
	o.str("content", string(r.Content))
	o.int("bytes", int64(len(r.Content)))
	o.int("total_bytes", r.Total)
	o.boolean("eof", r.EOF)
	o.boolean("complete", r.Complete)
}
