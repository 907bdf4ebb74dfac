package rpc

// The methods on the CLI's newer controls: @-file completion
// (workspace.suggest), MCP reconnect and toggle, and a generated session
// title (session.title). Each is one control request to the CLI.

import (
	"strings"

	"github.com/tidwall/gjson"
)

// Method names (extensions; workspace.* is a namespace the seed keeps).
const (
	MethodWorkspaceSuggest = "workspace.suggest" // the CLI's file_suggestions
	MethodMCPReconnect     = "mcp.reconnect"     // the CLI's mcp_reconnect
	MethodMCPToggle        = "mcp.toggle"        // the CLI's mcp_toggle
	MethodSessionTitle     = "session.title"     // the CLI's generate_session_title
)

// The bounds of workspace.suggest's limit.
const (
	SuggestLimitDefault = 50
	SuggestLimitMax     = 500
)

// SuggestParams are workspace.suggest's params.
type SuggestParams struct {
	Query string // the text after "@": a path or a part of one; "" lists the top level
	Limit int
}

// ParseWorkspaceSuggest checks workspace.suggest's params: query (string,
// default ""), limit (1..500, default 50).
func ParseWorkspaceSuggest(p gjson.Result) (SuggestParams, *Error) {
	v := newParams(p)
	s := SuggestParams{Query: v.str("query", false)}
	s.Limit = v.integer("limit", SuggestLimitDefault, 1, SuggestLimitMax)
	return s, v.err
}

// AppendWorkspaceSuggestResult appends workspace.suggest's response from
// the CLI's file_suggestions answer ({suggestions:[{path}], cwd}): each
// path as the CLI gives it (relative to cwd; a folder ends in "/") with
// its kind ("dir" or "file"), at most limit of them, and truncated when
// the CLI gave more.
func AppendWorkspaceSuggestResult(dst []byte, id string, resp gjson.Result, limit int) []byte {
	o := result(id, len(resp.Raw)+64)
	o.arr("suggestions")
	n, more := 0, false
	resp.Get("suggestions").ForEach(func(_, s gjson.Result) bool {
		path := s.Get("path")
		if path.Type != gjson.String || path.Str == "" {
			return true
		}
		if n == limit {
			more = true
			return false
		}
		n++
		o.elem()
		o.b = append(o.b, '{')
		o.str("path", path.Str)
		if strings.HasSuffix(path.Str, "/") {
			o.str("kind", "dir")
		} else {
			o.str("kind", "file")
		}
		o.end('}')
		return true
	})
	o.end(']')
	o.strOrNull("cwd", resp.Get("cwd").Str)
	o.boolean("truncated", more)
	return append(dst, o.endNotification()...)
}

// MCPServerParams are mcp.reconnect's and mcp.toggle's params: id (a
// server's name, as mcp.list gives it) and, for mcp.toggle, enabled.
type MCPServerParams struct {
	ID      string
	Enabled bool
}

// ParseMCPReconnect checks mcp.reconnect's params.
func ParseMCPReconnect(p gjson.Result) (MCPServerParams, *Error) {
	v := newParams(p)
	return MCPServerParams{ID: v.str("id", true)}, v.err
}

// ParseMCPToggle checks mcp.toggle's params; enabled is required.
func ParseMCPToggle(p gjson.Result) (MCPServerParams, *Error) {
	v := newParams(p)
	s := MCPServerParams{ID: v.str("id", true)}
	if e := v.get("enabled"); v.err == nil && (!e.Exists() || e.Type == gjson.Null) {
		v.fail("enabled is required")
	}
	s.Enabled = v.boolean("enabled", false)
	return s, v.err
}

// MCPUnknownServer reports whether the CLI's refusal of mcp_reconnect or
// mcp_toggle says it has no such server ("Server not found: NAME").
func MCPUnknownServer(refusal string) bool {
	return strings.HasPrefix(refusal, "Server not found")
}

// AppendMCPActionResult appends mcp.reconnect's or mcp.toggle's response:
// ok, and the CLI's words when the server could not connect (the
// connection error, such as "ENOENT: no such file or directory, …").
func AppendMCPActionResult(dst []byte, id, server string, ok bool, refusal string) []byte {
	o := result(id, len(refusal)+64)
	o.str("id", server)
	o.boolean("ok", ok)
	o.strIf("last_error", refusal)
	return append(dst, o.endNotification()...)
}

// TitleParams are session.title's params.
type TitleParams struct {
	Description string // what the session is about; the CLI asks the model for a title of it
	Persist     bool   // write the title to the session file (every session list shows it)
}

// ParseSessionTitle checks session.title's params: description
// (required), persist (default false).
func ParseSessionTitle(p gjson.Result) (TitleParams, *Error) {
	v := newParams(p)
	t := TitleParams{Description: v.str("description", true)}
	t.Persist = v.boolean("persist", false)
	return t, v.err
}

// AppendSessionTitleResult appends session.title's response: the CLI's
// title (null when the model gave none) and whether it was persisted.
func AppendSessionTitleResult(dst []byte, id string, resp gjson.Result, persist bool) []byte {
	o := result(id, len(resp.Raw)+48)
	t := resp.Get("title")
	o.strOrNull("title", t.Str)
	o.boolean("persisted", persist && t.Type == gjson.String && t.Str != "")
	return append(dst, o.endNotification()...)
}
