package e2e

// The CLI behaviour that pausing (issue #11) rests on, pinned against the
// real CLI: a PreToolUse hook callback registered through initialize makes
// the CLI wait for the host's hook_callback answer before the tool runs,
// and while the answer is held the model gets no request. See
// docs/control/lane001-cli.md.

import (
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

func TestCLIWaitsForAHeldPreToolUseHook(t *testing.T) {
	t.Parallel()
	b := startBridge(t, cliFlags)
	api := fakeAPI(t)

	// The test is the host: it registers the hook itself (drop-in passes
	// the line through). timeout is in seconds; 600 keeps the CLI from
	// giving up on a long pause.
	b.send(`{"type":"control_request","request_id":"init-pause","request":{"subtype":"initialize",` +
		`"hooks":{"PreToolUse":[{"matcher":"Bash","hookCallbackIds":["pause"],"timeout":600}]}}}`)
	lines := b.until("the initialize answer", func(l []byte) bool {
		return gjson.GetBytes(l, "type").Str == "control_response" && gjson.GetBytes(l, "response.request_id").Str == "init-pause"
	})
	if init := lines[len(lines)-1]; gjson.GetBytes(init, "response.subtype").Str != "success" ||
		!gjson.GetBytes(init, "response.response.hooks_applied").Bool() {
		t.Fatalf("initialize with a PreToolUse hook: %.600s", init)
	}

	// BASHRO: the model calls Bash `echo hi from bash` (read-only, so no
	// can_use_tool), then says "Done. ".
	tok := token("pause")
	b.prompt("BASHRO " + tok)
	lines = b.until("the hook_callback", func(l []byte) bool {
		return gjson.GetBytes(l, "type").Str == "control_request" && gjson.GetBytes(l, "request.subtype").Str == "hook_callback"
	})
	hook := lines[len(lines)-1]
	req := gjson.GetBytes(hook, "request")
	if req.Get("callback_id").Str != "pause" || req.Get("input.hook_event_name").Str != "PreToolUse" ||
		req.Get("input.tool_name").Str != "Bash" || req.Get("input.tool_input.command").Str != "echo hi from bash" ||
		req.Get("tool_use_id").Str == "" || req.Get("tool_use_id").Str != req.Get("input.tool_use_id").Str {
		t.Fatalf("hook_callback: %s", hook)
	}
	if n := count(lines, func(l []byte) bool { return strings.Contains(string(l), `"type":"tool_result"`) }); n != 0 {
		t.Fatalf("a tool result came before the hook was answered")
	}

	// Hold the answer for 3 s: nothing runs and the model is not asked.
	before := api.Count()
	hold := time.NewTimer(3 * time.Second)
	for held := true; held; {
		select {
		case l, ok := <-b.lines:
			if !ok {
				t.Fatalf("ccbridge's output ended while the hook was held")
			}
			switch typ := gjson.GetBytes(l, "type").Str; {
			case typ == "result", strings.Contains(string(l), `"type":"tool_result"`):
				t.Fatalf("while the hook answer was held: %.400s", l)
			}
		case <-hold.C:
			held = false
		}
	}
	if n := api.Count(); n != before {
		t.Fatalf("the model got %d request(s) while the hook answer was held", n-before)
	}

	// Answer: the tool runs and the same turn ends well.
	b.send(`{"type":"control_response","response":{"subtype":"success","request_id":"` +
		gjson.GetBytes(hook, "request_id").Str + `","response":{}}}`)
	lines = b.until("the result", isType("result"))
	res := lines[len(lines)-1]
	if gjson.GetBytes(res, "subtype").Str != "success" || gjson.GetBytes(res, "is_error").Bool() ||
		gjson.GetBytes(res, "stop_reason").Str != "end_turn" {
		t.Fatalf("result after the answer: %.600s", res)
	}
	ran := false
	for _, l := range lines {
		if gjson.GetBytes(l, "type").Str == "user" &&
			gjson.GetBytes(l, "message.content.0.tool_use_id").Str == req.Get("tool_use_id").Str &&
			strings.Contains(gjson.GetBytes(l, "message.content.0.content").String(), "hi from bash") {
			ran = true
		}
	}
	if !ran {
		t.Errorf("no tool_result with the Bash output after the answer:\n%s", lastLines(lines, 8))
	}
	if n := count(lines, isTypeSub("system", "init")); n != 0 {
		t.Errorf("%d new system/init after the answer: a new turn, not the same one", n)
	}
	if r := modelRequest(t, tok); r.Step != 1 {
		t.Errorf("the model's last request for the prompt is step %d, want 1 (the call after the tool)", r.Step)
	}
}
