package rpc

import (
	"encoding/json"
	"testing"

	"github.com/tidwall/gjson"
)

func valid(t *testing.T, l []byte) gjson.Result {
	t.Helper()
	if !json.Valid(l) {
		t.Fatalf("not JSON: %s", l)
	}
	return gjson.ParseBytes(l)
}

func TestResultBuilders(t *testing.T) {
	r := valid(t, AppendInitializeResult(nil, `"1"`, ServerInfo{Name: "ccbridge", Version: "v", SessionID: "s", CWD: "/x", Theme: "light"}))
	if r.Get("id").Str != "1" || r.Get("result.protocol_version").Str != "0" || !r.Get("result.server_capabilities.supports_tool_call").Bool() ||
		r.Get("result.runtime.claude_code_version").Type != gjson.Null || r.Get("result.tui.theme").Str != "light" {
		t.Errorf("initialize: %s", r.Raw)
	}
	r = valid(t, AppendRunCancelResult(nil, "7", false, StatusCompleted))
	if r.Get("id").Int() != 7 || r.Get("result.ok").Bool() || r.Get("result.status").Str != "completed" {
		t.Errorf("run.cancel: %s", r.Raw)
	}
	models := gjson.Parse(`[{"value":"default","resolvedModel":"claude-x","displayName":"Default"},{"value":"we\"ird","resolvedModel":"claude-y"}]`)
	r = valid(t, AppendModelListResult(nil, `"m"`, ModelList{Models: models, Current: "default", Resolved: "claude-x", IncludeDetails: true,
		Window: func(m string) int64 { return map[string]int64{"claude-x": 5}[m] }}))
	if r.Get("result.models.1").Str != `we"ird` || r.Get("result.details.default.context_window").Int() != 5 || r.Get("result.details.default.display_name").Str != "Default" {
		t.Errorf("model.list: %s", r.Raw)
	}
	if !KnownModel(models, "claude-y") || KnownModel(models, "gpt") {
		t.Error("KnownModel")
	}
	r = valid(t, AppendMCPListResult(nil, `"x"`, gjson.Parse(`{"mcpServers":[{"name":"a","status":"connected","transport":"http","scope":"user","tools":[{},{}]},{"name":"b","status":"failed","error":"boom","config":{"type":"stdio"},"scope":"project"}]}`)))
	s := r.Get("result.servers")
	if s.Get("0.state").Str != "ready" || s.Get("0.source").Str != "global" || s.Get("0.tools").Int() != 2 ||
		s.Get("1.state").Str != "error" || s.Get("1.last_error").Str != "boom" || s.Get("1.transport").Str != "stdio" || s.Get("1.source").Str != "project" {
		t.Errorf("mcp.list: %s", r.Raw)
	}
	r = valid(t, AppendShellExecResult(nil, `"s"`, ShellResult{CommandPreview: "ls", ExitCode: -1, Signal: "SIGTERM", Stdout: "a\x00\xff", TruncStderr: true, TimedOut: true}))
	if r.Get("result.exit_code").Type != gjson.Null || !r.Get("result.truncated.combined").Bool() || r.Get("result.stdout").Str != "a\x00\ufffd" {
		t.Errorf("shell.exec: %s", r.Raw)
	}
	r = valid(t, AppendContextInspectResult(nil, `"c"`, ContextInspect{WorkingDir: "/w", SandboxRoot: "/w", Model: "claude-x",
		UIContext: gjson.Parse(`{"cwd":"/w","active_file":{"path":"/w/a.go"}}`),
		Usage:     gjson.Parse(`{"totalTokens":250,"maxTokens":1000,"categories":[{"name":"Messages","tokens":9,"kind":"used","color":"x"}],"gridRows":[[1]]}`)}))
	if r.Get("result.ui_context.active_file_path").Str != "/w/a.go" || r.Get("result.context_usage.context_left_percent").Num != 75 ||
		r.Get("result.context_usage.gridRows").Exists() || r.Get("result.model").Str != "claude-x" {
		t.Errorf("context.inspect: %s", r.Raw)
	}
	r = valid(t, AppendSessionListResult(nil, `"l"`, []SessionInfo{{SessionID: "a", UpdatedAt: "t", MessageCount: 2}}))
	if r.Get("result.sessions.0.run_id").Exists() || r.Get("result.sessions.0.message_count").Int() != 2 {
		t.Errorf("session.list: %s", r.Raw)
	}
	valid(t, AppendSessionHistoryResult(nil, `"h"`, 1, 2, true))
	valid(t, AppendSkillsListResult(nil, `"k"`, []Skill{{Name: "x"}}, []SkillError{{Path: "p", Message: "m"}}, false))
	valid(t, AppendResponseRejected(nil, `"ui-1"`, CodeInvalidRequest, "no"))
	valid(t, AppendChildExited(nil, 137, "SIGKILL", "last words", "", "gone"))
	e := &Error{Code: CodeRunNotFound, Message: "no run"}
	if r := valid(t, e.AppendResponse(nil, "")); r.Get("id").Type != gjson.Null || r.Get("error.code").Int() != -32002 {
		t.Errorf("error: %s", r.Raw)
	}
}
