package rpc

import (
	"testing"

	"github.com/tidwall/gjson"
)

func TestParseToolCall(t *testing.T) {
	for _, c := range []struct{ params, control string }{
		{`{"name":"Read","arguments":{"file_path":"a.txt"}}`, `{"subtype":"read_file","path":"a.txt"}`},
		{`{"name":"Read","arguments":{"path":"/p/a","max_bytes":5,"encoding":"base64"}}`, `{"subtype":"read_file","path":"/p/a","max_bytes":5,"encoding":"base64"}`},
		{`{"name":"mcp__docs__search","arguments":{"q":"x"}}`, `{"subtype":"mcp_call","tool":"mcp__docs__search","arguments":{"q":"x"}}`},
		{`{"name":"mcp__docs__search"}`, `{"subtype":"mcp_call","tool":"mcp__docs__search","arguments":{}}`},
	} {
		tc, err := ParseToolCall(gjson.Parse(c.params))
		if err != nil || tc.Control != c.control {
			t.Errorf("%s: %q %v", c.params, tc.Control, err)
		}
	}
	tc, err := ParseToolCall(gjson.Parse(`{"name":"tool_output_cache","arguments":{"cache_id":"shell-out-1-stdout","offset":10}}`))
	if err != nil || tc.Control != "" || tc.Output.CacheID != "shell-out-1-stdout" || tc.Output.Offset != 10 {
		t.Errorf("tool_output_cache: %+v %v", tc, err)
	}
	// An unknown tool is -32602 with a reason a UI can tell apart.
	for _, name := range []string{"Bash", "mcp__nope", "read"} {
		_, err := ParseToolCall(gjson.Parse(`{"name":"` + name + `"}`))
		if err == nil || err.Code != CodeInvalidParams || gjson.Get(err.Data, "reason").Str != "unknown_tool" || gjson.Get(err.Data, "tool").Str != name {
			t.Errorf("%s: %+v", name, err)
		}
	}
	for _, p := range []string{`{}`, `{"name":""}`, `{"name":"Read"}`, `{"name":"Read","arguments":[]}`, `{"name":"Read","arguments":{"path":"a","max_bytes":-1}}`,
		`{"name":"Read","arguments":{"path":"a","encoding":"latin1"}}`, `{"name":"tool_output_cache","arguments":{}}`, `[]`} {
		_, err := ParseToolCall(gjson.Parse(p))
		if err == nil || err.Code != CodeInvalidParams || gjson.Get(err.Data, "reason").Str == "unknown_tool" {
			t.Errorf("%s: %+v", p, err)
		}
	}
}

func TestToolResults(t *testing.T) {
	r := valid(t, AppendToolCallResult(nil, `"1"`, true, gjson.Parse(`{"contents":"hi"}`), ""))
	if !r.Get("result.ok").Bool() || r.Get("result.result.contents").Str != "hi" {
		t.Errorf("ok: %s", r.Raw)
	}
	r = valid(t, AppendToolCallResult(nil, `"1"`, false, gjson.Result{}, "read denied: /etc/passwd"))
	if r.Get("result.ok").Bool() || r.Get("result.result.error").Str != "read denied: /etc/passwd" {
		t.Errorf("refused: %s", r.Raw)
	}
	r = valid(t, AppendAuthLogoutResult(nil, `"2"`, true, "Successfully logged out"))
	if !r.Get("result.ok").Bool() || !r.Get("result.auth_cleared").Bool() || r.Get("result.session_cleared").Bool() {
		t.Errorf("auth.logout: %s", r.Raw)
	}
	if c, err := ParseAuthLogout(gjson.Parse(`{"clear_session":"yes"}`)); err == nil {
		t.Errorf("clear_session a string: %v", c)
	}
	r = valid(t, AppendShellOutputResult(nil, `"3"`, ShellOutput{CacheID: "c", Stream: "stdout", Offset: 2, Content: []byte("xyz"), Total: 5, Complete: true, EOF: true}))
	if r.Get("result.content").Str != "xyz" || r.Get("result.total_bytes").Int() != 5 || !r.Get("result.eof").Bool() {
		t.Errorf("shell.output: %s", r.Raw)
	}
	r = valid(t, AppendShellExecResult(nil, `"4"`, ShellResult{StdoutCacheID: "s1"}))
	if r.Get("result.stdout_cache_id").Str != "s1" || r.Get("result.stderr_cache_id").Exists() {
		t.Errorf("shell.exec cache ids: %s", r.Raw)
	}
}
