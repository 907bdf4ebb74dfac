package mapping_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ccbridge/ccbridge/mapping"
	"github.com/tidwall/gjson"
)

func TestStdinBuilders(t *testing.T) {
	cases := []struct {
		name string
		got  []byte
		want string
	}{
		{"user text (as the SDK writes it)",
			mapping.AppendUserMessage(nil, mapping.UserOptions{}, mapping.Block{Text: "hello there"}),
			`{"type":"user","session_id":"","message":{"role":"user","content":[{"type":"text","text":"hello there"}]},"parent_tool_use_id":null}`},
		{"user text then image, in order",
			mapping.AppendUserMessage(nil, mapping.UserOptions{}, mapping.Block{Text: "IMAGECHECK what is in this image?"},
				mapping.Block{Kind: mapping.BlockImage, MediaType: "image/png", Data: "iVBORw0KGgo="}),
			`{"type":"user","session_id":"","message":{"role":"user","content":[{"type":"text","text":"IMAGECHECK what is in this image?"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]},"parent_tool_use_id":null}`},
		{"user with uuid and priority and a raw block",
			mapping.AppendUserMessage(nil, mapping.UserOptions{UUID: "u-1", Priority: "now"}, mapping.Block{Kind: mapping.BlockRaw, Raw: `{"type":"text","text":"x"}`}),
			`{"type":"user","session_id":"","message":{"role":"user","content":[{"type":"text","text":"x"}]},"parent_tool_use_id":null,"uuid":"u-1","priority":"now"}`},
		{"slash command is plain text",
			mapping.AppendUserMessage(nil, mapping.UserOptions{}, mapping.Block{Text: "/cost"}),
			`{"type":"user","session_id":"","message":{"role":"user","content":[{"type":"text","text":"/cost"}]},"parent_tool_use_id":null}`},
		{"initialize without systemPrompt",
			mapping.AppendInitialize(nil, "req_1"),
			`{"type":"control_request","request_id":"req_1","request":{"subtype":"initialize"}}`},
		{"interrupt",
			mapping.AppendInterrupt(nil, "req_13_interrupt", false),
			`{"type":"control_request","request_id":"req_13_interrupt","request":{"subtype":"interrupt"}}`},
		{"interrupt cancel_queued",
			mapping.AppendInterrupt(nil, "req_77_interrupt", true),
			`{"type":"control_request","request_id":"req_77_interrupt","request":{"subtype":"interrupt","cancel_queued":true}}`},
		{"set_permission_mode",
			mapping.AppendSetPermissionMode(nil, "req_29", "acceptEdits"),
			`{"type":"control_request","request_id":"req_29","request":{"subtype":"set_permission_mode","mode":"acceptEdits"}}`},
		{"set_model",
			mapping.AppendSetModel(nil, "req_25", "claude-sonnet-4-5"),
			`{"type":"control_request","request_id":"req_25","request":{"subtype":"set_model","model":"claude-sonnet-4-5"}}`},
		{"stop_task",
			mapping.AppendStopTask(nil, "r", "a49982d68e6b03f92"),
			`{"type":"control_request","request_id":"r","request":{"subtype":"stop_task","task_id":"a49982d68e6b03f92"}}`},
		{"file_suggestions (as CLI 2.1.330 takes it)",
			mapping.AppendFileSuggestions(nil, "fs1", "hel\"lo"),
			`{"type":"control_request","request_id":"fs1","request":{"subtype":"file_suggestions","query":"hel\"lo"}}`},
		{"mcp_reconnect: camelCase serverName",
			mapping.AppendMCPReconnect(nil, "rc", "broken"),
			`{"type":"control_request","request_id":"rc","request":{"subtype":"mcp_reconnect","serverName":"broken"}}`},
		{"mcp_toggle off",
			mapping.AppendMCPToggle(nil, "tg", "broken", false),
			`{"type":"control_request","request_id":"tg","request":{"subtype":"mcp_toggle","serverName":"broken","enabled":false}}`},
		{"mcp_toggle on",
			mapping.AppendMCPToggle(nil, "tg", "b", true),
			`{"type":"control_request","request_id":"tg","request":{"subtype":"mcp_toggle","serverName":"b","enabled":true}}`},
		{"generate_session_title persisted",
			mapping.AppendGenerateSessionTitle(nil, "gt", "fix the parser", true),
			`{"type":"control_request","request_id":"gt","request":{"subtype":"generate_session_title","description":"fix the parser","persist":true}}`},
		{"generate_session_title not persisted",
			mapping.AppendGenerateSessionTitle(nil, "gt", "d", false),
			`{"type":"control_request","request_id":"gt","request":{"subtype":"generate_session_title","description":"d"}}`},
		{"generic control request",
			mapping.AppendControlRequest(nil, "r", `{"subtype":"get_context_usage"}`),
			`{"type":"control_request","request_id":"r","request":{"subtype":"get_context_usage"}}`},
		{"control cancel",
			mapping.AppendControlCancel(nil, "r"),
			`{"type":"control_cancel_request","request_id":"r"}`},
		{"allow with updatedInput (write_allow)",
			mapping.AppendAllow(nil, "a17b", mapping.Allow{UpdatedInput: `{"file_path":"/p/w.txt","content":"hello world\n"}`}),
			`{"type":"control_response","response":{"subtype":"success","request_id":"a17b","response":{"behavior":"allow","updatedInput":{"file_path":"/p/w.txt","content":"hello world\n"}}}}`},
		{"allow alone (write_allow_no_updated_input)",
			mapping.AppendAllow(nil, "a17b", mapping.Allow{}),
			`{"type":"control_response","response":{"subtype":"success","request_id":"a17b","response":{"behavior":"allow"}}}`},
		{"allow with permissions and toolUseID (plan_mode_exit, SDK)",
			mapping.AppendAllow(nil, "2927", mapping.Allow{UpdatedInput: `{}`, UpdatedPermissions: `[{"type":"setMode","mode":"default","destination":"session"}]`, ToolUseID: "toolu_0189_0"}),
			`{"type":"control_response","response":{"subtype":"success","request_id":"2927","response":{"behavior":"allow","updatedInput":{},"updatedPermissions":[{"type":"setMode","mode":"default","destination":"session"}],"toolUseID":"toolu_0189_0"}}}`},
		{"deny (write_deny)",
			mapping.AppendDeny(nil, "e17f", mapping.Deny{Message: "User denied this tool call"}),
			`{"type":"control_response","response":{"subtype":"success","request_id":"e17f","response":{"behavior":"deny","message":"User denied this tool call"}}}`},
		{"deny with interrupt (write_deny_interrupt)",
			mapping.AppendDeny(nil, "c69d", mapping.Deny{Message: "User rejected and stopped", Interrupt: true, ToolUseID: "toolu_0155_0"}),
			`{"type":"control_response","response":{"subtype":"success","request_id":"c69d","response":{"behavior":"deny","message":"User rejected and stopped","interrupt":true,"toolUseID":"toolu_0155_0"}}}`},
		{"deny default message",
			mapping.AppendDeny(nil, "x", mapping.Deny{}),
			`{"type":"control_response","response":{"subtype":"success","request_id":"x","response":{"behavior":"deny","message":"User denied this tool call"}}}`},
		{"control response",
			mapping.AppendControlResponse(nil, "h", ""),
			`{"type":"control_response","response":{"subtype":"success","request_id":"h","response":{}}}`},
		{"control error",
			mapping.AppendControlError(nil, "q", "nope", "unsupported_request"),
			`{"type":"control_response","response":{"subtype":"error","request_id":"q","error":"nope","error_code":"unsupported_request"}}`},
	}
	for _, c := range cases {
		if string(c.got) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, c.got, c.want)
		}
		if !json.Valid(c.got) {
			t.Errorf("%s: invalid JSON", c.name)
		}
	}
}

// The permission answer field is "behavior"; "decision" fails the CLI's
// schema (seed plan PN-1).
func TestAnswersUseBehaviorNotDecision(t *testing.T) {
	for _, l := range [][]byte{
		mapping.AppendAllow(nil, "r", mapping.Allow{UpdatedInput: `{}`}),
		mapping.AppendDeny(nil, "r", mapping.Deny{Message: "no"}),
	} {
		if strings.Contains(string(l), "decision") || !gjson.GetBytes(l, "response.response.behavior").Exists() {
			t.Errorf("%s", l)
		}
	}
}

func TestBuildersEscape(t *testing.T) {
	text := "a \"quote\" \\ back\nnew\ttab \x01 <tag> & \u2028 \xff end"
	l := mapping.AppendUserMessage(nil, mapping.UserOptions{}, mapping.Block{Text: text})
	if !json.Valid(l) {
		t.Fatalf("invalid: %s", l)
	}
	got := gjson.GetBytes(l, "message.content.0.text").Str
	want := strings.Replace(text, "\xff", "\ufffd", 1)
	if got != want {
		t.Errorf("round trip: %q, want %q", got, want)
	}
	if !strings.Contains(string(l), "<tag> &") {
		t.Errorf("HTML characters escaped: %s", l)
	}
	id := "id\"with\nodd"
	if l := mapping.AppendInterrupt(nil, id, false); !json.Valid(l) || gjson.GetBytes(l, "request_id").Str != id {
		t.Errorf("request id: %s", l)
	}
}

func TestAutoReply(t *testing.T) {
	cases := []struct {
		line string
		want string // "" for no reply
	}{
		{`{"type":"control_request","request_id":"a","request":{"subtype":"can_use_tool","tool_name":"Write"}}`, ""},
		{`{"type":"control_request","request_id":"b","request":{"subtype":"request_user_dialog"}}`, ""},
		{`{"type":"control_request","request_id":"c","request":{"subtype":"hook_callback","callback_id":"hook_0"}}`,
			`{"type":"control_response","response":{"subtype":"success","request_id":"c","response":{}}}`},
		{`{"type":"control_request","request_id":"d","request":{"subtype":"elicitation","message":"?"}}`,
			`{"type":"control_response","response":{"subtype":"success","request_id":"d","response":{"action":"decline"}}}`},
		{`{"type":"control_request","request_id":"e","request":{"subtype":"mcp_message","server_name":"s"}}`,
			`{"type":"control_response","response":{"subtype":"error","request_id":"e","error":"Unsupported control request subtype: mcp_message","error_code":"unsupported_request"}}`},
		{`{"type":"control_request","request_id":"f","request":{"subtype":"brand_new"}}`,
			`{"type":"control_response","response":{"subtype":"error","request_id":"f","error":"Unsupported control request subtype: brand_new","error_code":"unsupported_request"}}`},
		{`{"type":"keep_alive"}`, ""},
	}
	for _, c := range cases {
		ev := mapping.Route([]byte(c.line))
		got, ok := mapping.AppendAutoReply(nil, &ev)
		if ok != (c.want != "") || string(got) != c.want {
			t.Errorf("%v: %s %v, want %s", ev.Kind, got, ok, c.want)
		}
	}
}
