package mapping_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccbridge/ccbridge/internal/golden"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/tidwall/gjson"
)

// routeCases has at least one line per Kind (TestRouteCoversEveryKind
// checks that), taken from the transcripts where they were observed and
// from protocol README §c where they were not.
var routeCases = []struct {
	name string
	line string
	kind mapping.Kind
	sub  string
}{
	{"not an object", `[1,2]`, mapping.KindUnknown, ""},
	{"no type", `{"subtype":"init"}`, mapping.KindUnknown, ""},
	{"type not a string", `{"type":7}`, mapping.KindUnknown, ""},
	{"unknown type", `{"type":"mystery_type","x":1}`, mapping.KindUnknown, ""},

	{"init", `{"type":"system","subtype":"init","cwd":"/p","session_id":"s1","tools":[],"model":"m","permissionMode":"default"}`, mapping.KindSystemInit, "init"},
	{"status", `{"type":"system","subtype":"status","status":"requesting","session_id":"s1"}`, mapping.KindStatus, "status"},
	{"thinking_tokens", `{"type":"system","subtype":"thinking_tokens","estimated_tokens":4,"estimated_tokens_delta":4,"session_id":"s1"}`, mapping.KindThinkingTokens, ""},
	{"compact_boundary", `{"type":"system","subtype":"compact_boundary","compact_metadata":{"trigger":"manual","pre_tokens":39},"session_id":"s1"}`, mapping.KindCompactBoundary, ""},
	{"api_retry", `{"type":"system","subtype":"api_retry","attempt":1,"max_retries":2,"retry_delay_ms":585,"error_status":529,"error":"overloaded"}`, mapping.KindAPIRetry, ""},
	{"task_started", `{"type":"system","subtype":"task_started","task_id":"a1","tool_use_id":"toolu_1","description":"d","task_type":"local_agent"}`, mapping.KindTaskStarted, ""},
	{"task_progress", `{"type":"system","subtype":"task_progress","task_id":"a1","tool_use_id":"toolu_1"}`, mapping.KindTaskProgress, ""},
	{"task_updated", `{"type":"system","subtype":"task_updated","task_id":"a1","patch":{"status":"completed"}}`, mapping.KindTaskUpdated, ""},
	{"task_notification", `{"type":"system","subtype":"task_notification","task_id":"a1","tool_use_id":"toolu_1","status":"completed"}`, mapping.KindTaskNotification, ""},
	{"background_tasks_changed", `{"type":"system","subtype":"background_tasks_changed","tasks":[]}`, mapping.KindBackgroundTasksChanged, ""},
	{"hook_started", `{"type":"system","subtype":"hook_started","hook_id":"h","hook_name":"Stop"}`, mapping.KindHookStarted, ""},
	{"hook_progress", `{"type":"system","subtype":"hook_progress","hook_id":"h"}`, mapping.KindHookProgress, ""},
	{"hook_response", `{"type":"system","subtype":"hook_response","hook_id":"h","outcome":"success"}`, mapping.KindHookResponse, ""},
	{"session_state_changed", `{"type":"system","subtype":"session_state_changed","state":"idle","sdk_host_only":true}`, mapping.KindSessionStateChanged, ""},
	{"session_title_changed", `{"type":"system","subtype":"session_title_changed","title":"T"}`, mapping.KindSessionTitleChanged, ""},
	{"permission_denied", `{"type":"system","subtype":"permission_denied","tool_name":"Write","tool_use_id":"toolu_1","message":"m"}`, mapping.KindPermissionDenied, ""},
	{"local_command_output", `{"type":"system","subtype":"local_command_output","content":"out"}`, mapping.KindLocalCommandOutput, ""},
	{"informational", `{"type":"system","subtype":"informational"}`, mapping.KindInformational, ""},
	{"notification", `{"type":"system","subtype":"notification"}`, mapping.KindNotification, ""},
	{"commands_changed", `{"type":"system","subtype":"commands_changed"}`, mapping.KindCommandsChanged, ""},
	{"files_persisted", `{"type":"system","subtype":"files_persisted"}`, mapping.KindFilesPersisted, ""},
	{"memory_recall", `{"type":"system","subtype":"memory_recall"}`, mapping.KindMemoryRecall, ""},
	{"model_refusal_fallback", `{"type":"system","subtype":"model_refusal_fallback"}`, mapping.KindModelRefusalFallback, ""},
	{"model_refusal_no_fallback", `{"type":"system","subtype":"model_refusal_no_fallback"}`, mapping.KindModelRefusalNoFallback, ""},
	{"control_request_progress", `{"type":"system","subtype":"control_request_progress"}`, mapping.KindControlRequestProgress, ""},
	{"elicitation_complete", `{"type":"system","subtype":"elicitation_complete"}`, mapping.KindElicitationComplete, ""},
	{"plugin_install", `{"type":"system","subtype":"plugin_install"}`, mapping.KindPluginInstall, ""},
	{"mirror_error", `{"type":"system","subtype":"mirror_error"}`, mapping.KindMirrorError, ""},
	{"worker_shutting_down", `{"type":"system","subtype":"worker_shutting_down"}`, mapping.KindWorkerShuttingDown, ""},
	{"session_writes_lost", `{"type":"system","subtype":"session_writes_lost"}`, mapping.KindSessionWritesLost, ""},
	{"unknown system subtype", `{"type":"system","subtype":"brand_new"}`, mapping.KindUnknownSystem, "brand_new"},
	{"system without subtype", `{"type":"system"}`, mapping.KindUnknownSystem, ""},

	{"assistant", `{"type":"assistant","message":{"id":"msg_1","content":[{"type":"text","text":"hi"}]},"parent_tool_use_id":null,"session_id":"s1"}`, mapping.KindAssistant, ""},
	{"user marker", `{"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]},"session_id":"s1"}`, mapping.KindUser, ""},
	{"user replay", `{"type":"user","message":{"role":"user","content":[{"type":"text","text":"hello"}]},"isReplay":true}`, mapping.KindUserReplay, ""},
	{"user replay string", `{"type":"user","message":{"role":"user","content":"/definitely-not-a-command foo"},"isReplay":true}`, mapping.KindUserReplay, ""},
	{"local command stdout", `{"type":"user","message":{"role":"user","content":"<local-command-stdout>Set model to ` + "`x`" + `</local-command-stdout>"},"isReplay":true}`, mapping.KindUserLocalCommand, ""},
	{"local command stderr", `{"type":"user","message":{"role":"user","content":[{"type":"text","text":"<local-command-stderr>boom</local-command-stderr>"}]},"isReplay":true}`, mapping.KindUserLocalCommand, ""},
	{"tool result", `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]},"tool_use_result":{"stdout":"ok"}}`, mapping.KindToolResult, ""},

	{"message_start", `{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_9"}},"api_message_id":"msg_9"}`, mapping.KindMessageStart, "message_start"},
	{"content_block_start", `{"type":"stream_event","event":{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}},"api_message_id":"msg_9"}`, mapping.KindContentBlockStart, "content_block_start"},
	{"text_delta", `{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hello "}},"api_message_id":"msg_9"}`, mapping.KindTextDelta, "content_block_delta"},
	{"thinking_delta", `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}}`, mapping.KindThinkingDelta, ""},
	{"signature_delta", `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}}`, mapping.KindSignatureDelta, ""},
	{"input_json_delta", `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\""}}}`, mapping.KindInputJSONDelta, ""},
	{"citations_delta", `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{}}}}`, mapping.KindCitationsDelta, ""},
	{"unknown delta", `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"future_delta"}}}`, mapping.KindUnknownDelta, ""},
	{"content_block_stop", `{"type":"stream_event","event":{"type":"content_block_stop","index":0}}`, mapping.KindContentBlockStop, ""},
	{"message_delta", `{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":20}}}`, mapping.KindMessageDelta, ""},
	{"message_stop", `{"type":"stream_event","event":{"type":"message_stop"}}`, mapping.KindMessageStop, ""},
	{"ping", `{"type":"stream_event","event":{"type":"ping"}}`, mapping.KindStreamPing, ""},
	{"stream error", `{"type":"stream_event","event":{"type":"error","error":{"type":"overloaded_error"}}}`, mapping.KindStreamError, ""},
	{"unknown stream event", `{"type":"stream_event","event":{"type":"brand_new"}}`, mapping.KindUnknownStreamEvent, "brand_new"},
	{"stream event without event", `{"type":"stream_event"}`, mapping.KindUnknownStreamEvent, ""},

	{"result", `{"duration_api_ms":51,"type":"result","subtype":"success","is_error":false,"terminal_reason":"completed"}`, mapping.KindResult, "success"},

	{"can_use_tool", `{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Write","input":{},"tool_use_id":"toolu_1"}}`, mapping.KindCanUseTool, "can_use_tool"},
	{"hook_callback", `{"type":"control_request","request_id":"r2","request":{"subtype":"hook_callback","callback_id":"hook_2","input":{},"tool_use_id":"toolu_1"}}`, mapping.KindHookCallback, ""},
	{"mcp_message", `{"type":"control_request","request_id":"r3","request":{"subtype":"mcp_message","server_name":"s","message":{}}}`, mapping.KindMCPMessage, ""},
	{"elicitation", `{"type":"control_request","request_id":"r4","request":{"subtype":"elicitation","mcp_server_name":"e","message":"?"}}`, mapping.KindElicitation, ""},
	{"request_user_dialog", `{"type":"control_request","request_id":"r5","request":{"subtype":"request_user_dialog","dialog_kind":"k"}}`, mapping.KindRequestUserDialog, ""},
	{"oauth_token_refresh", `{"type":"control_request","request_id":"r6","request":{"subtype":"oauth_token_refresh"}}`, mapping.KindOAuthTokenRefresh, ""},
	{"host_auth_token_refresh", `{"type":"control_request","request_id":"r7","request":{"subtype":"host_auth_token_refresh"}}`, mapping.KindHostAuthTokenRefresh, ""},
	{"remote_control_work_secret", `{"type":"control_request","request_id":"r8","request":{"subtype":"remote_control_work_secret"}}`, mapping.KindRemoteControlWorkSecret, ""},
	{"ui_*", `{"type":"control_request","request_id":"r9","request":{"subtype":"ui_show_toast"}}`, mapping.KindUIRequest, "ui_show_toast"},
	{"unknown control request", `{"type":"control_request","request_id":"r10","request":{"subtype":"definitely_not_a_subtype"}}`, mapping.KindUnknownControlRequest, "definitely_not_a_subtype"},

	{"control_response", `{"type":"control_response","response":{"subtype":"success","request_id":"req_1","response":{"still_queued":[]}}}`, mapping.KindControlResponse, "success"},
	{"control_cancel_request", `{"type":"control_cancel_request","request_id":"r1"}`, mapping.KindControlCancelRequest, ""},
	{"keep_alive", `{"type":"keep_alive"}`, mapping.KindKeepAlive, ""},
	{"command_lifecycle", `{"type":"command_lifecycle","command_uuid":"u","state":"queued"}`, mapping.KindCommandLifecycle, ""},
	{"tool_progress", `{"type":"tool_progress","tool_use_id":"toolu_1-heartbeat-0","tool_name":"Bash","parent_tool_use_id":"toolu_1","elapsed_time_seconds":30}`, mapping.KindToolProgress, ""},
	{"tool_use_summary", `{"type":"tool_use_summary"}`, mapping.KindToolUseSummary, ""},
	{"rate_limit_event", `{"type":"rate_limit_event"}`, mapping.KindRateLimitEvent, ""},
	{"prompt_suggestion", `{"type":"prompt_suggestion"}`, mapping.KindPromptSuggestion, ""},
	{"auth_status", `{"type":"auth_status"}`, mapping.KindAuthStatus, ""},
	{"conversation_reset", `{"type":"conversation_reset"}`, mapping.KindConversationReset, ""},
	{"active_goal", `{"type":"active_goal"}`, mapping.KindActiveGoal, ""},
	{"autocompact_state", `{"type":"autocompact_state"}`, mapping.KindAutocompactState, ""},
	{"transcript_mirror", `{"type":"transcript_mirror"}`, mapping.KindTranscriptMirror, ""},
}

func TestRoute(t *testing.T) {
	for _, c := range routeCases {
		t.Run(c.name, func(t *testing.T) {
			ev := mapping.Route([]byte(c.line))
			if ev.Kind != c.kind {
				t.Fatalf("Kind = %v, want %v", ev.Kind, c.kind)
			}
			if c.sub != "" && ev.Subtype != c.sub {
				t.Errorf("Subtype = %q, want %q", ev.Subtype, c.sub)
			}
			if ev.Line != c.line {
				t.Errorf("Line not kept: %q", ev.Line)
			}
			if c.kind.Unknown() != strings.Contains(c.kind.String(), "?") && c.kind != mapping.KindUnknown {
				t.Errorf("Unknown() and String() disagree for %v", c.kind)
			}
		})
	}
}

// TestRouteCoversEveryKind fails when a Kind is added without a routing
// case, so every type and subtype keeps a tested route.
func TestRouteCoversEveryKind(t *testing.T) {
	seen := map[mapping.Kind]bool{}
	for _, c := range routeCases {
		seen[c.kind] = true
	}
	for _, k := range mapping.Kinds() {
		if !seen[k] {
			t.Errorf("no routing case for %v", k)
		}
		if k.String() == "" {
			t.Errorf("Kind %d has no name", k)
		}
	}
}

func TestRouteFields(t *testing.T) {
	cases := []struct {
		line  string
		check func(t *testing.T, ev mapping.Event)
	}{
		{`{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hello\n"}},"session_id":"s1","parent_tool_use_id":null,"uuid":"u1","api_message_id":"msg_0005"}`,
			func(t *testing.T, ev mapping.Event) {
				if ev.Text != "Hello\n" || ev.Index != 1 || ev.MessageID != "msg_0005" || ev.SessionID != "s1" || ev.UUID != "u1" || ev.ParentToolUseID != "" || ev.DeltaType != "text_delta" {
					t.Errorf("%+v", ev)
				}
				if ev.Body.Get("delta.text").Str != "Hello\n" {
					t.Errorf("Body is not the event: %s", ev.Body.Raw)
				}
			}},
		{`{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_0169_0","name":"Bash","input":{}}},"api_message_id":"msg_0169"}`,
			func(t *testing.T, ev mapping.Event) {
				if ev.BlockType != "tool_use" || ev.ToolUseID != "toolu_0169_0" || ev.ToolName != "Bash" || ev.Index != 0 {
					t.Errorf("%+v", ev)
				}
			}},
		{`{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_7"}}}`,
			func(t *testing.T, ev mapping.Event) {
				if ev.MessageID != "msg_7" || ev.Index != -1 {
					t.Errorf("MessageID %q Index %d", ev.MessageID, ev.Index)
				}
			}},
		{`{"type":"control_request","request_id":"205f","request":{"subtype":"can_use_tool","tool_name":"Bash","display_name":"Bash","input":{"command":"x"},"tool_use_id":"toolu_1"}}`,
			func(t *testing.T, ev mapping.Event) {
				if ev.RequestID != "205f" || ev.ToolName != "Bash" || ev.ToolUseID != "toolu_1" || ev.Body.Get("display_name").Str != "Bash" {
					t.Errorf("%+v", ev)
				}
			}},
		{`{"type":"control_response","response":{"subtype":"error","request_id":"req_31","error":"Cannot set permission mode","error_code":"invalid_mode"}}`,
			func(t *testing.T, ev mapping.Event) {
				if ev.RequestID != "req_31" || !ev.IsError || ev.Body.Get("error_code").Str != "invalid_mode" {
					t.Errorf("%+v", ev)
				}
			}},
		{`{"type":"user","message":{"role":"user","content":"<local-command-stdout>Compacted </local-command-stdout>"},"isReplay":true}`,
			func(t *testing.T, ev mapping.Event) {
				if ev.Text != "Compacted " || ev.IsError || !ev.IsReplay {
					t.Errorf("%+v", ev)
				}
			}},
		{`{"type":"user","message":{"role":"user","content":"<local-command-stderr>bad</local-command-stderr>"},"isReplay":true}`,
			func(t *testing.T, ev mapping.Event) {
				if ev.Text != "bad" || !ev.IsError {
					t.Errorf("%+v", ev)
				}
			}},
		{`{"type":"assistant","message":{"id":"cae6","model":"<synthetic>","content":[{"type":"text","text":"Estimated cost"}]},"local_command_run":{"command":"usage","args":""}}`,
			func(t *testing.T, ev mapping.Event) {
				if ev.LocalCommand != "usage" || ev.BlockType != "text" || ev.MessageID != "cae6" {
					t.Errorf("%+v", ev)
				}
			}},
		{`{"type":"assistant","message":{"id":"1e40","model":"<synthetic>","content":[{"type":"text","text":"API Error: 400"}]},"error":"unknown","is_api_error_message":true,"api_error_status":400}`,
			func(t *testing.T, ev mapping.Event) {
				if !ev.IsError {
					t.Errorf("API error frame not marked: %+v", ev)
				}
			}},
		{`{"type":"assistant","message":{"id":"msg_0167","content":[{"type":"text","text":"counting "}],"stop_reason":null},"parent_tool_use_id":null,"session_id":"s","aborted":true}`,
			func(t *testing.T, ev mapping.Event) {
				if !ev.Aborted || ev.Kind != mapping.KindAssistant {
					t.Errorf("interrupted frame not marked aborted: %+v", ev)
				}
			}},
		{`{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"\"aborted\":true"}],"aborted":true},"aborted":false}`,
			func(t *testing.T, ev mapping.Event) {
				if ev.Aborted {
					t.Errorf("aborted read from inside the message: %+v", ev)
				}
			}},
		{"\r\n  {\"type\":\"keep_alive\"}  \r\n",
			func(t *testing.T, ev mapping.Event) {
				if ev.Kind != mapping.KindKeepAlive || ev.Line != `{"type":"keep_alive"}` {
					t.Errorf("white space not trimmed: %q", ev.Line)
				}
			}},
	}
	for _, c := range cases {
		c.check(t, mapping.Route([]byte(c.line)))
	}
}

// parent_tool_use_id is kept from every message type that carries it.
func TestRouteKeepsParentToolUseID(t *testing.T) {
	lines := []string{
		`{"type":"assistant","message":{"id":"msg_0201","content":[{"type":"tool_use","id":"toolu_0201_0","name":"Read","input":{}}]},"parent_tool_use_id":"toolu_0200_0","agent_id":"a4"}`,
		`{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_0201_0","type":"tool_result","content":"1\thello"}]},"parent_tool_use_id":"toolu_0200_0"}`,
		`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"SUBWORK"}]},"parent_tool_use_id":"toolu_0200_0"}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}},"parent_tool_use_id":"toolu_0200_0"}`,
		`{"type":"system","subtype":"status","status":"requesting","parent_tool_use_id":"toolu_0200_0"}`,
		`{"type":"result","subtype":"success","is_error":false,"parent_tool_use_id":"toolu_0200_0"}`,
		`{"type":"tool_progress","tool_use_id":"toolu_0200_0-heartbeat-0","parent_tool_use_id":"toolu_0200_0"}`,
	}
	for _, l := range lines {
		if ev := mapping.Route([]byte(l)); ev.ParentToolUseID != "toolu_0200_0" {
			t.Errorf("%v lost parent_tool_use_id: %q", ev.Kind, ev.ParentToolUseID)
		}
	}
}

func TestClassifyResult(t *testing.T) {
	cases := []struct {
		name string
		line string
		want mapping.ResultClass
	}{
		{"success", `{"type":"result","subtype":"success","is_error":false,"terminal_reason":"completed"}`, mapping.ResultSuccess},
		{"api error is success+is_error", `{"type":"result","subtype":"success","is_error":true,"terminal_reason":"api_error","api_error_status":400}`, mapping.ResultAPIError},
		{"api error by status", `{"type":"result","subtype":"success","is_error":true,"api_error_status":529}`, mapping.ResultAPIError},
		{"api_error_status null is no api error", `{"type":"result","subtype":"success","is_error":true,"api_error_status":null}`, mapping.ResultError},
		{"interrupt midstream", `{"type":"result","subtype":"error_during_execution","is_error":true,"terminal_reason":"aborted_streaming"}`, mapping.ResultInterrupted},
		{"interrupt during tools", `{"type":"result","subtype":"error_during_execution","is_error":true,"terminal_reason":"aborted_tools"}`, mapping.ResultInterrupted},
		{"priority now abort says success", `{"type":"result","subtype":"success","is_error":false,"terminal_reason":"aborted_streaming","result":"counting "}`, mapping.ResultInterrupted},
		{"max turns", `{"type":"result","subtype":"error_max_turns","is_error":true,"terminal_reason":"max_turns"}`, mapping.ResultMaxTurns},
		{"budget", `{"type":"result","subtype":"error_max_budget_usd","is_error":true}`, mapping.ResultBudget},
		{"structured output", `{"type":"result","subtype":"error_max_structured_output_retries","is_error":true}`, mapping.ResultStructuredOutput},
		{"resume failure", `{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["No conversation found"]}`, mapping.ResultError},
		{"unknown error subtype", `{"type":"result","subtype":"error_future","is_error":true}`, mapping.ResultError},
		{"unknown ok subtype still ends the turn", `{"type":"result","subtype":"future_ok","is_error":false}`, mapping.ResultSuccess},
		{"local command", `{"is_error":false,"num_turns":0,"subtype":"success","result":"Estimated cost","local_command":"cost","type":"result"}`, mapping.ResultSuccess},
	}
	for _, c := range cases {
		ev := mapping.Route([]byte(c.line))
		if ev.Kind != mapping.KindResult || ev.Result != c.want {
			t.Errorf("%s: %v %v, want result %v", c.name, ev.Kind, ev.Result, c.want)
		}
	}
	if ev := mapping.Route([]byte(cases[len(cases)-1].line)); ev.LocalCommand != "cost" {
		t.Errorf("LocalCommand = %q", ev.LocalCommand)
	}
}

// Raw subtrees are the input's bytes: odd spacing, escapes and key order
// survive.
func TestRouteRawSubtreeIdentical(t *testing.T) {
	input := `{ "file_path" : "/p/x.txt",  "content":"a\u00e9\n\"q\"" , "z":[1, 2.50,{}] }`
	line := []byte(`{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t","name":"Write","input":` + input + `}]},"parent_tool_use_id":null}`)
	ev := mapping.Route(line)
	if got := ev.Body.Get("content.0.input").Raw; got != input {
		t.Fatalf("input subtree changed:\n got %s\nwant %s", got, input)
	}
}

// Route copies the line: reusing the caller's buffer does not change the
// Event.
func TestRouteDoesNotAliasInput(t *testing.T) {
	buf := []byte(`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"abc"}},"session_id":"s1"}`)
	ev := mapping.Route(buf)
	for i := range buf {
		buf[i] = 'x'
	}
	if ev.Text != "abc" || ev.SessionID != "s1" || !gjson.Valid(ev.Line) {
		t.Fatalf("event changed with the buffer: %+v", ev)
	}
}

func TestKindPredicates(t *testing.T) {
	if !mapping.KindCanUseTool.ControlRequest() || !mapping.KindUnknownControlRequest.ControlRequest() || mapping.KindControlResponse.ControlRequest() {
		t.Error("ControlRequest()")
	}
	if !mapping.KindTextDelta.StreamEvent() || mapping.KindAssistant.StreamEvent() {
		t.Error("StreamEvent()")
	}
	for _, k := range []mapping.Kind{mapping.KindUnknown, mapping.KindUnknownSystem, mapping.KindUnknownDelta, mapping.KindUnknownStreamEvent, mapping.KindUnknownControlRequest} {
		if !k.Unknown() {
			t.Errorf("%v.Unknown() = false", k)
		}
	}
	if mapping.KindKeepAlive.Unknown() {
		t.Error("keep_alive is known")
	}
}

// Every line the real CLI wrote in the transcripts has a known route.
func TestRouteTranscripts(t *testing.T) {
	files, _ := filepath.Glob("../testdata/transcripts/*.ndjson")
	if len(files) == 0 {
		t.Fatal("no transcripts")
	}
	n := 0
	for _, f := range files {
		lines, fromCLI := golden.ReadTranscript(t, f)
		for i, l := range lines {
			if !fromCLI[i] {
				continue
			}
			n++
			if !gjson.ValidBytes(l) {
				t.Fatalf("%s: invalid CLI line", f)
			}
			ev := mapping.Route(l)
			if ev.Kind.Unknown() {
				t.Errorf("%s: %v for %.200s", filepath.Base(f), ev.Kind, l)
			}
		}
	}
	if n < 1000 {
		t.Fatalf("only %d CLI lines read", n)
	}
}

func TestLocalCommandOutput(t *testing.T) {
	for _, c := range []struct {
		in, text string
		err, ok  bool
	}{
		{"<local-command-stdout>Compacted </local-command-stdout>", "Compacted ", false, true},
		{"<local-command-stderr>oops</local-command-stderr>", "oops", true, true},
		{"<local-command-stdout>unterminated", "unterminated", false, true},
		{"plain text", "", false, false},
	} {
		text, isErr, ok := mapping.LocalCommandOutput(c.in)
		if text != c.text || isErr != c.err || ok != c.ok {
			t.Errorf("%q: %q %v %v", c.in, text, isErr, ok)
		}
	}
}
