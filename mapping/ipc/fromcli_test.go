package ipc_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/ipc"
	"github.com/tidwall/gjson"
)

const (
	initLine   = `{"type":"system","subtype":"init","cwd":"/p","session_id":"s1","tools":["Read"],"mcp_servers":[],"model":"m1","permissionMode":"default","slash_commands":["cost"],"claude_code_version":"2.1.330","agents":[],"skills":[],"plugins":[]}`
	resultLine = `{"type":"result","subtype":"success","is_error":false,"terminal_reason":"completed","result":"ok","session_id":"s1","total_cost_usd":0.5,"num_turns":1,"duration_ms":10,"duration_api_ms":5,"usage":{},"modelUsage":{}}`
)

func TestAPIErrorOnSuccessSubtype(t *testing.T) {
	got := feed(t, ipc.New(ipc.Options{}), transcriptCLILines(t, "api_error")...)
	done := ofType(got, "turn_complete")
	if len(done) != 2 {
		t.Fatalf("want 2 turn_complete, got %d", len(done))
	}
	first, second := done[0], done[1]
	if gjson.Get(first, "subtype").Str != "success" || !gjson.Get(first, "is_error").Bool() ||
		gjson.Get(first, "api_error.status").Int() != 400 || gjson.Get(first, "api_error.type").Str != "invalid_request_error" ||
		!strings.HasPrefix(gjson.Get(first, "api_error.message").Str, "API Error: 400") || gjson.Get(first, "result_class").Str != "api_error" {
		t.Errorf("api_error not set on the failed turn: %s", first)
	}
	if r := gjson.Get(second, "api_error"); r.Type != gjson.Null {
		t.Errorf("api_error set on a good turn: %s", second)
	}
	if text := ofType(got, "assistant_text"); len(text) == 0 || !gjson.Get(text[0], "is_error").Bool() {
		t.Errorf("synthetic API error text not marked: %v", text)
	}
}

func TestTurnCostDelta(t *testing.T) {
	t.Run("two_turns", func(t *testing.T) {
		got := ofType(feed(t, ipc.New(ipc.Options{}), transcriptCLILines(t, "two_turns")...), "cost_update")
		if len(got) != 3 {
			t.Fatalf("want 3 cost_update, got %d", len(got))
		}
		for i, l := range got {
			if c := gjson.Get(l, "turn_cost_usd").Float(); math.Abs(c-0.000448) > 1e-12 {
				t.Errorf("turn %d: turn_cost_usd %v, want 0.000448 (total %v)", i, c, gjson.Get(l, "total_cost_usd").Float())
			}
		}
		if tot := gjson.Get(got[2], "total_cost_usd").Float(); math.Abs(tot-0.001344) > 1e-12 {
			t.Errorf("total_cost_usd not passed through: %v", tot)
		}
	})
	t.Run("difference of totals without model_usage_since_last_result", func(t *testing.T) {
		second := strings.Replace(resultLine, `"total_cost_usd":0.5`, `"total_cost_usd":0.75`, 1)
		got := ofType(feed(t, ipc.New(ipc.Options{}), resultLine, second), "cost_update")
		if a, b := gjson.Get(got[0], "turn_cost_usd").Float(), gjson.Get(got[1], "turn_cost_usd").Float(); a != 0.5 || b != 0.25 {
			t.Errorf("turn costs %v, %v; want 0.5, 0.25", a, b)
		}
	})
	t.Run("resume: the saved session's cost is not this turn's", func(t *testing.T) {
		got := ofType(feed(t, ipc.New(ipc.Options{}), transcriptCLILines(t, "resume")...), "cost_update")
		if tot, c := gjson.Get(got[0], "total_cost_usd").Float(), gjson.Get(got[0], "turn_cost_usd").Float(); tot <= c || math.Abs(c-0.000448) > 1e-12 {
			t.Errorf("total %v, turn %v", tot, c)
		}
	})
}

func TestCostUpdateModelUsage(t *testing.T) {
	got := ofType(feed(t, ipc.New(ipc.Options{}), transcriptCLILines(t, "text_turn")...), "cost_update")
	mu := gjson.Get(got[0], "modelUsage.claude-opus-5-5")
	if mu.Get("contextWindow").Int() != 1000000 || mu.Get("maxOutputTokens").Int() != 128000 {
		t.Errorf("modelUsage lost contextWindow/maxOutputTokens: %s", mu.Raw)
	}
	for _, k := range []string{"total_cost_usd", "turn_cost_usd", "num_turns", "duration_ms", "duration_api_ms", "usage", "modelUsage"} {
		if !gjson.Get(got[0], k).Exists() {
			t.Errorf("cost_update lacks %s", k)
		}
	}
}

func TestToolUseErrorStripped(t *testing.T) {
	got := ofType(feed(t, ipc.New(ipc.Options{}), transcriptCLILines(t, "disallowed_tools")...), "tool_result")
	if len(got) != 1 {
		t.Fatalf("got %v", got)
	}
	out := gjson.Get(got[0], "output").Str
	if strings.Contains(out, "tool_use_error") || !strings.HasPrefix(out, "Error: No such tool available: Write") || !gjson.Get(got[0], "is_error").Bool() {
		t.Errorf("tags kept or is_error lost: %s", got[0])
	}
	if s := mapping.StripToolUseError("see <tool_use_error> in docs"); s != "see <tool_use_error> in docs" {
		t.Errorf("stripped text that was not wrapped: %q", s)
	}
}

func TestParentToolUseIDOnSubagentFrames(t *testing.T) {
	got := feed(t, ipc.New(ipc.Options{}), transcriptCLILines(t, "subagent_task_forward_text")...)
	var nested []string
	for _, l := range got {
		if gjson.Get(l, "parent_tool_use_id").Str == "toolu_0204_0" {
			nested = append(nested, gjson.Get(l, "type").Str)
		}
	}
	if strings.Join(nested, " ") != "tool_use tool_result assistant_text" {
		t.Errorf("nested frames: %v\n%s", nested, strings.Join(got, "\n"))
	}
	// The Agent tool's own frames stay at the top level.
	for _, l := range ofType(got, "tool_use") {
		if gjson.Get(l, "tool_use_id").Str == "toolu_0204_0" && gjson.Get(l, "parent_tool_use_id").Type != gjson.Null {
			t.Errorf("Agent tool_use nested: %s", l)
		}
	}
}

func TestSessionInitAndMetadataOnChange(t *testing.T) {
	tr := ipc.New(ipc.Options{})
	got := feed(t, tr, initLine, resultLine, initLine, resultLine)
	if n := len(ofType(got, "session_init")); n != 1 {
		t.Errorf("session_init %d times, want 1", n)
	}
	if n := len(ofType(got, "system_metadata")); n != 1 {
		t.Errorf("unchanged system_metadata sent %d times", n)
	}
	meta := ofType(got, "system_metadata")[0]
	for _, k := range []string{"session_id", "cwd", "tools", "model", "permissionMode", "slash_commands", "plugins", "agents", "skills", "mcp_servers", "version"} {
		if !gjson.Get(meta, k).Exists() {
			t.Errorf("system_metadata lacks %s: %s", k, meta)
		}
	}
	if gjson.Get(meta, "version").Str != "2.1.330" {
		t.Errorf("version: %s", meta)
	}

	// A mode change reported by system/status re-sends the metadata.
	got = feed(t, tr, `{"type":"system","subtype":"status","status":null,"permissionMode":"plan","session_id":"s1"}`)
	if len(got) != 1 || gjson.Get(got[0], "permissionMode").Str != "plan" || gjson.Get(got[0], "type").Str != "system_metadata" {
		t.Errorf("mode change: %v", got)
	}
	// A new session id (after a fork) is announced.
	got = feed(t, tr, strings.Replace(initLine, `"s1"`, `"s2"`, 1))
	if types(got) != "session_init system_metadata" || gjson.Get(got[0], "session_id").Str != "s2" {
		t.Errorf("new session: %v", got)
	}
	if tr.SessionID() != "s2" {
		t.Errorf("SessionID() = %q", tr.SessionID())
	}
}

func TestModelChangeUpdatesMetadata(t *testing.T) {
	tr := ipc.New(ipc.Options{})
	feed(t, tr, initLine)
	cmd, err := tr.FromUI([]byte(`{"type":"model_change","model":"claude-sonnet-4-5"}`))
	if err != nil {
		t.Fatal(err)
	}
	got := feed(t, tr, `{"type":"control_response","response":{"subtype":"success","request_id":"`+cmd.RequestID+`","response":{"model":"claude-sonnet-4-5"}}}`)
	if len(got) != 1 || gjson.Get(got[0], "model").Str != "claude-sonnet-4-5" {
		t.Errorf("got %v", got)
	}
	if _, ok := tr.Outstanding(cmd.RequestID); ok {
		t.Error("answered request still outstanding")
	}
}

func TestControlResponses(t *testing.T) {
	tr := ipc.New(ipc.Options{})
	cmd, err := tr.FromUI([]byte(`{"type":"permission_mode","mode":"bogusMode"}`))
	if err != nil {
		t.Fatal(err)
	}
	if sub, ok := tr.Outstanding(cmd.RequestID); !ok || sub != "set_permission_mode" {
		t.Fatalf("not tracked: %v %v", sub, ok)
	}
	got := feed(t, tr,
		// The echo of an answer we gave to the CLI: ignored.
		`{"type":"control_response","response":{"subtype":"success","request_id":"e17f","response":{"behavior":"deny","message":"no"}}}`,
		`{"type":"control_response","response":{"subtype":"error","request_id":"`+cmd.RequestID+`","error":"Cannot set permission mode: must be one of acceptEdits, auto, bypassPermissions, default, dontAsk, plan","error_code":"invalid_mode"}}`)
	if len(got) != 1 {
		t.Fatalf("got %v", got)
	}
	e := got[0]
	if gjson.Get(e, "type").Str != "error" || gjson.Get(e, "code").Str != "control_request_failed" || gjson.Get(e, "cli_error_code").Str != "invalid_mode" ||
		!gjson.Get(e, "recoverable").Bool() || gjson.Get(e, "request_id").Str != cmd.RequestID || !strings.HasPrefix(gjson.Get(e, "message").Str, "Cannot set permission mode") {
		t.Errorf("error line: %s", e)
	}
}

const canUse = `{"type":"control_request","request_id":"R1","request":{"subtype":"can_use_tool","tool_name":"Bash","display_name":"Bash","input":{"command":"touch x"},"description":"Touch","permission_suggestions":[{"type":"setMode","mode":"acceptEdits","destination":"session"}],"blocked_path":"/p/x","tool_use_id":"toolu_1"}}`

func TestControlRequestForward(t *testing.T) {
	tr := ipc.New(ipc.Options{})
	got := feed(t, tr, canUse)
	f := got[0]
	for k, want := range map[string]string{"request_id": "R1", "tool_name": "Bash", "display_name": "Bash", "description": "Touch", "blocked_path": "/p/x", "tool_use_id": "toolu_1"} {
		if gjson.Get(f, k).Str != want {
			t.Errorf("%s = %s", k, gjson.Get(f, k).Raw)
		}
	}
	if gjson.Get(f, "input").Raw != `{"command":"touch x"}` || gjson.Get(f, "permission_suggestions.0.mode").Str != "acceptEdits" ||
		gjson.Get(f, "decision_reason").Type != gjson.Null || gjson.Get(f, "is_question").Bool() {
		t.Errorf("forward: %s", f)
	}
	if p, ok := tr.Lookup("R1"); !ok || p.ToolUseID != "toolu_1" || p.Input != `{"command":"touch x"}` {
		t.Errorf("pending: %+v %v", p, ok)
	}
	q := feed(t, tr, strings.NewReplacer(`"R1"`, `"R2"`, `"Bash"`, `"AskUserQuestion"`).Replace(canUse))[0]
	x := feed(t, tr, strings.NewReplacer(`"R1"`, `"R3"`, `"Bash"`, `"ExitPlanMode"`).Replace(canUse))[0]
	if !gjson.Get(q, "is_question").Bool() || !gjson.Get(x, "is_question").Bool() {
		t.Errorf("is_question not set for AskUserQuestion / ExitPlanMode")
	}
	if len(tr.Pending()) != 3 {
		t.Errorf("pending %v", tr.Pending())
	}
}

func TestControlRequestCancelled(t *testing.T) {
	t.Run("withdrawn by the CLI", func(t *testing.T) {
		got := feed(t, ipc.New(ipc.Options{}), transcriptCLILines(t, "interrupt_pending_permission")...)
		c := ofType(got, "control_request_cancelled")
		if len(c) != 1 || gjson.Get(c[0], "reason").Str != "withdrawn" || gjson.Get(c[0], "request_id").Str != "205f01c6-5177-4109-bf49-229846f35b33" {
			t.Errorf("got %v", c)
		}
	})
	t.Run("turn ended", func(t *testing.T) {
		tr := ipc.New(ipc.Options{})
		got := feed(t, tr, canUse, resultLine)
		if types(got) != "control_request_forward session_init control_request_cancelled cost_update turn_complete" {
			t.Errorf("order: %s", types(got))
		}
		if c := ofType(got, "control_request_cancelled"); gjson.Get(c[0], "reason").Str != "turn_ended" {
			t.Errorf("%v", c)
		}
		if len(tr.Pending()) != 0 {
			t.Error("still pending")
		}
	})
	t.Run("resolved by the CLI", func(t *testing.T) {
		got := feed(t, ipc.New(ipc.Options{}), transcriptCLILines(t, "stdin_eof_pending_permission")...)
		c := ofType(got, "control_request_cancelled")
		if len(c) != 1 || gjson.Get(c[0], "reason").Str != "resolved_by_cli" {
			t.Errorf("got %v", c)
		}
	})
	t.Run("answered requests are not cancelled", func(t *testing.T) {
		tr := ipc.New(ipc.Options{})
		feed(t, tr, canUse)
		if _, err := tr.FromUI([]byte(`{"type":"tool_approval","request_id":"R1","decision":"allow"}`)); err != nil {
			t.Fatal(err)
		}
		if got := feed(t, tr, `{"type":"control_cancel_request","request_id":"R1"}`, resultLine); len(ofType(got, "control_request_cancelled")) != 0 {
			t.Errorf("got %v", got)
		}
	})
	t.Run("CancelPending", func(t *testing.T) {
		tr := ipc.New(ipc.Options{})
		feed(t, tr, canUse, strings.Replace(canUse, `"R1"`, `"R2"`, 1))
		out := tr.CancelPending("child_exited", nil)
		if len(out) != 2 || gjson.GetBytes(out[0], "request_id").Str != "R1" || gjson.GetBytes(out[1], "reason").Str != "child_exited" {
			t.Errorf("got %q", out)
		}
		if _, err := tr.FromUI([]byte(`{"type":"tool_approval","request_id":"R1","decision":"allow"}`)); !isCode(err, ipc.CodeUnknownRequest) {
			t.Errorf("answer after cancel: %v", err)
		}
	})
}

func TestInterruptIsTurnCancelled(t *testing.T) {
	for name, reason := range map[string]string{
		"interrupt_midstream":   "aborted_streaming",
		"interrupt_during_tool": "aborted_tools",
		"write_deny_interrupt":  "aborted_tools",
		"priority_now_message":  "aborted_streaming",
	} {
		got := feed(t, ipc.New(ipc.Options{}), transcriptCLILines(t, name)...)
		c := ofType(got, "turn_cancelled")
		if len(c) != 1 || gjson.Get(c[0], "reason").Str != reason {
			t.Errorf("%s: turn_cancelled %v", name, c)
			continue
		}
		if !gjson.Get(c[0], "partial_result").Exists() {
			t.Errorf("%s: no partial_result", name)
		}
		// Exactly one terminal message per turn.
		terminal := len(ofType(got, "turn_cancelled")) + len(ofType(got, "turn_complete"))
		if terminal != len(ofType(got, "cost_update")) {
			t.Errorf("%s: %d terminal messages for %d results", name, terminal, len(ofType(got, "cost_update")))
		}
	}
	got := feed(t, ipc.New(ipc.Options{}), transcriptCLILines(t, "interrupt_midstream")...)
	if p := gjson.Get(ofType(got, "turn_cancelled")[0], "partial_result").Str; !strings.HasPrefix(p, "counting counting") {
		t.Errorf("partial_result from the aborted frame: %q", p)
	}
}

func TestSlashCommands(t *testing.T) {
	got := feed(t, ipc.New(ipc.Options{}), transcriptCLILines(t, "slash_cost")...)
	var slash []string
	for _, l := range ofType(got, "assistant_text") {
		if gjson.Get(l, "source").Str == "slash_command" {
			slash = append(slash, l)
		}
	}
	if len(slash) != 1 || !strings.HasPrefix(gjson.Get(slash[0], "text").Str, "Estimated cost:") {
		t.Fatalf("/cost output: %v", slash)
	}
	done := ofType(got, "turn_complete")
	if gjson.Get(done[1], "local_command").Str != "cost" || gjson.Get(done[1], "msg_id").Str != gjson.Get(slash[0], "msg_id").Str {
		t.Errorf("/cost turn: %s", done[1])
	}

	got = feed(t, ipc.New(ipc.Options{}), transcriptCLILines(t, "slash_compact")...)
	if !strings.Contains(types(got), "status status compact_boundary assistant_text cost_update turn_complete") {
		t.Errorf("/compact: %s", types(got))
	}
	tr := ipc.New(ipc.Options{})
	got = feed(t, tr, `{"type":"user","message":{"role":"user","content":"<local-command-stdout>Set model to `+"`x`"+`</local-command-stdout>"},"session_id":"s1","parent_tool_use_id":null,"uuid":"u9","isReplay":true}`,
		`{"type":"user","message":{"role":"user","content":"<local-command-stderr>bad arg</local-command-stderr>"},"session_id":"s1","uuid":"u10","isReplay":true}`)
	if types(got) != "session_init assistant_text error" || gjson.Get(got[1], "text").Str != "Set model to `x`" ||
		gjson.Get(got[1], "msg_id").Str != "u9" || gjson.Get(got[2], "code").Str != "slash_command_failed" || gjson.Get(got[2], "message").Str != "bad arg" {
		t.Errorf("got %v", got)
	}
	// Ordinary replays produce nothing.
	if got := feed(t, tr, `{"type":"user","message":{"role":"user","content":[{"type":"text","text":"hello"}]},"session_id":"s1","isReplay":true}`); len(got) != 0 {
		t.Errorf("replay forwarded: %v", got)
	}
}

func TestStreamingText(t *testing.T) {
	tr := ipc.New(ipc.Options{})
	got := feed(t, tr,
		`{"type":"stream_event","event":{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}},"session_id":"s1","parent_tool_use_id":null,"api_message_id":"m1"}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hel"}},"session_id":"s1","parent_tool_use_id":null,"api_message_id":"m1"}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"lo"}},"session_id":"s1","parent_tool_use_id":null,"api_message_id":"m1"}`,
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Hello"}]},"parent_tool_use_id":null,"session_id":"s1"}`,
		`{"type":"stream_event","event":{"type":"content_block_stop","index":1},"session_id":"s1","api_message_id":"m1"}`,
		`{"type":"stream_event","event":{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_9","name":"Read","input":{}}},"session_id":"s1","api_message_id":"m1"}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"file_path\":"}},"session_id":"s1","api_message_id":"m1"}`,
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"toolu_9","name":"Read","input":{"file_path":"/x"}}]},"parent_tool_use_id":null,"session_id":"s1"}`,
	)
	want := []string{
		`{"type":"session_init","ipc_version":2,"session_id":"s1","capabilities":["steer","rewind","query"]}`,
		`{"type":"assistant_text","ipc_version":2,"msg_id":"m1","seq":0,"text":"Hel","is_partial":true,"status":"streaming","parent_tool_use_id":null,"block_index":1}`,
		`{"type":"assistant_text","ipc_version":2,"msg_id":"m1","seq":1,"text":"lo","is_partial":true,"status":"streaming","parent_tool_use_id":null,"block_index":1}`,
		`{"type":"assistant_text","ipc_version":2,"msg_id":"m1","seq":2,"text":"Hello","is_partial":false,"status":"complete","parent_tool_use_id":null,"block_index":1}`,
		`{"type":"tool_use","ipc_version":2,"msg_id":"m1","tool_use_id":"toolu_9","tool_name":"Read","input":{},"is_partial":true,"parent_tool_use_id":null,"block_index":2}`,
		`{"type":"tool_use","ipc_version":2,"msg_id":"m1","tool_use_id":"toolu_9","tool_name":"Read","input":{"file_path":"/x"},"is_partial":false,"parent_tool_use_id":null,"block_index":2}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestForwardUnknown(t *testing.T) {
	lines := []string{
		`{"type":"mystery_type","x":1}`,
		`{"type":"system","subtype":"brand_new","session_id":"s1"}`,
		`{"type":"stream_event","event":{"type":"brand_new"}}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"future_delta"}}}`,
		`{"type":"control_request","request_id":"q","request":{"subtype":"brand_new"}}`,
		`{"type":"keep_alive"}`,
		`{"type":"system","subtype":"hook_started","hook_id":"h"}`,
	}
	if got := feed(t, ipc.New(ipc.Options{}), lines...); types(got) != "session_init" {
		t.Errorf("forwarded without the flag: %v", got)
	}
	got := feed(t, ipc.New(ipc.Options{ForwardUnknown: true}), lines...)
	u := ofType(got, "unknown")
	if len(u) != 5 {
		t.Fatalf("got %v", got)
	}
	if gjson.Get(u[0], "raw").Raw != lines[0] {
		t.Errorf("raw changed: %s", u[0])
	}
}

// Raw subtrees reach the UI as the CLI's own bytes.
func TestRawBytesIdentical(t *testing.T) {
	input := `{ "file_path" : "/p/x.txt",  "content":"a\u00e9\n\"q\" <b>" , "n":[1, 2.50,{}] }`
	patch := `{"filePath":"/p/e.txt","structuredPatch":[{"oldStart":1,"oldLines":3,"newStart":1,"newLines":3,"lines":[" a","-b","+c"]}],"originalFile":"a\nb\n"}`
	got := feed(t, ipc.New(ipc.Options{}),
		`{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t1","name":"Write","input":`+input+`}]},"parent_tool_use_id":null}`,
		`{"type":"control_request","request_id":"R","request":{"subtype":"can_use_tool","tool_name":"Write","input":`+input+`,"tool_use_id":"t1"}}`,
		`{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"ok"}]},"parent_tool_use_id":null,"tool_use_result":`+patch+`}`)
	if !strings.Contains(got[0], `"input":`+input+`,`) || !strings.Contains(got[1], `"input":`+input+`,`) {
		t.Errorf("tool input re-encoded:\n%s\n%s", got[0], got[1])
	}
	s := ofType(got, "tool_use_structured")
	if len(s) != 1 || !strings.Contains(s[0], `"structured_result":`+patch+`,`) || gjson.Get(s[0], "tool_name").Str != "Write" {
		t.Errorf("structured result: %v", s)
	}
}

func TestToolErrorStringIsNotStructured(t *testing.T) {
	got := feed(t, ipc.New(ipc.Options{}), transcriptCLILines(t, "tool_error")...)
	if n := len(ofType(got, "tool_use_structured")); n != 0 {
		t.Errorf("string tool_use_result forwarded as structured: %d", n)
	}
	r := ofType(got, "tool_result")
	if len(r) != 1 || !gjson.Get(r[0], "is_error").Bool() {
		t.Errorf("%v", r)
	}
}

func TestOtherBlocksAndKinds(t *testing.T) {
	got := feed(t, ipc.New(ipc.Options{}),
		`{"type":"assistant","message":{"id":"m2","content":[{"type":"redacted_thinking","data":"x"}]},"parent_tool_use_id":null}`,
		`{"type":"assistant","message":{"id":"m2","content":[{"type":"server_tool_use","id":"srv_1","name":"web_search","input":{"query":"go"}}]},"parent_tool_use_id":null}`,
		`{"type":"system","subtype":"local_command_output","content":"Total cost: $0","uuid":"u5"}`,
		`{"type":"system","subtype":"session_state_changed","state":"idle"}`,
		`{"type":"command_lifecycle","command_uuid":"c","state":"queued"}`,
	)
	want := []string{
		`{"type":"thinking_text","ipc_version":2,"msg_id":"m2","seq":0,"text":"","is_partial":false,"status":"complete","parent_tool_use_id":null,"block_index":0,"redacted":true}`,
		`{"type":"tool_use","ipc_version":2,"msg_id":"m2","tool_use_id":"srv_1","tool_name":"web_search","input":{"query":"go"},"is_partial":false,"parent_tool_use_id":null,"block_index":1}`,
		`{"type":"assistant_text","ipc_version":2,"msg_id":"u5","seq":0,"text":"Total cost: $0","is_partial":false,"status":"complete","parent_tool_use_id":null,"source":"slash_command"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestTextDeltaCopiedRaw(t *testing.T) {
	tr := ipc.New(ipc.Options{})
	line := `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"caf\u00e9 \"q\" \ud83d\ude00"}},"session_id":"s","parent_tool_use_id":null,"api_message_id":"m1"}`
	out := tr.FromCLI(mapping.Route([]byte(line)), nil)
	var got []byte
	for _, l := range out {
		if gjson.GetBytes(l, "type").Str == "assistant_text" {
			got = l
		}
	}
	if !bytes.Contains(got, []byte(`"text":"caf\u00e9 \"q\" \ud83d\ude00"`)) {
		t.Errorf("the delta's text was not copied as the CLI wrote it: %s", got)
	}
	if txt := gjson.GetBytes(got, "text").Str; txt != "café \"q\" 😀" {
		t.Errorf("text decodes to %q", txt)
	}
}

// TestStreamedLinesFollowTheirBlock checks that the parts of a streamed
// line encoded once per block are made again when the block, the type or
// the parent changes within one message.
func TestStreamedLinesFollowTheirBlock(t *testing.T) {
	delta := func(index int, kind, field, text, parent string) []byte {
		p := `null`
		if parent != "" {
			p = `"` + parent + `"`
		}
		return []byte(`{"type":"stream_event","event":{"type":"content_block_delta","index":` + strconv.Itoa(index) +
			`,"delta":{"type":"` + kind + `","` + field + `":"` + text + `"}},"session_id":"s","parent_tool_use_id":` + p + `,"api_message_id":"m1"}`)
	}
	tr := ipc.New(ipc.Options{})
	steps := []struct {
		line              []byte
		typ, text, parent string
		index, seq        int
	}{
		{delta(0, "thinking_delta", "thinking", "hm", ""), "thinking_text", "hm", "", 0, 0},
		{delta(1, "text_delta", "text", "a", ""), "assistant_text", "a", "", 1, 1},
		{delta(1, "text_delta", "text", "b", ""), "assistant_text", "b", "", 1, 2},
		{delta(0, "text_delta", "text", "c", ""), "assistant_text", "c", "", 0, 3},
		{delta(0, "text_delta", "text", "d", "toolu_9"), "assistant_text", "d", "toolu_9", 0, 4},
	}
	for i, st := range steps {
		var got []byte
		for _, l := range tr.FromCLI(mapping.Route(st.line), nil) {
			if typ := gjson.GetBytes(l, "type").Str; typ == "assistant_text" || typ == "thinking_text" {
				got = l
			}
		}
		r := gjson.ParseBytes(got)
		if r.Get("type").Str != st.typ || r.Get("text").Str != st.text || r.Get("block_index").Int() != int64(st.index) ||
			r.Get("seq").Int() != int64(st.seq) || r.Get("parent_tool_use_id").Str != st.parent ||
			!r.Get("is_partial").Bool() || r.Get("status").Str != "streaming" || r.Get("msg_id").Str != "m1" || !gjson.ValidBytes(got) {
			t.Errorf("step %d: %s", i, got)
		}
	}
}

// A CLI line that is not JSON is never forwarded (it would break the
// UI's parser) and never dropped silently: it becomes one recoverable
// error naming its size and start.
func TestInvalidCLIOutput(t *testing.T) {
	for _, fwd := range []bool{false, true} {
		tr := ipc.New(ipc.Options{ForwardUnknown: fwd})
		for _, line := range []string{
			"Debugger listening on ws://127.0.0.1:9229",
			`{"type":"stream_event","event":{"type":"content_bl`,
			`[1,2`,
			`{"type":"mystery"` + strings.Repeat("x", 500),
			"\xff\xfe{}",
		} {
			out := tr.FromCLI(mapping.RouteString(line), nil)
			if len(out) != 1 {
				t.Fatalf("forward=%v, %q: %d lines, want 1: %q", fwd, line, len(out), out)
			}
			e := string(out[0])
			if !json.Valid(out[0]) || gjson.Get(e, "type").Str != "error" || gjson.Get(e, "code").Str != ipc.CodeInvalidCLIOutput ||
				!gjson.Get(e, "recoverable").Bool() {
				t.Errorf("forward=%v, %q: %s", fwd, line, e)
			}
			if msg := gjson.Get(e, "message").Str; !strings.Contains(msg, fmt.Sprintf("%d bytes", len(line))) || len(msg) > 200 {
				t.Errorf("message %q should give the size and only the start of the line", msg)
			}
		}
	}
}
