package rpc

import (
	"testing"

	"github.com/tidwall/gjson"
)

func TestParamsValidation(t *testing.T) {
	uuid := "00000000-0000-4000-8000-000000000000"
	cases := []struct {
		name   string
		parse  func(gjson.Result) *Error
		params string
		ok     bool
	}{
		{"initialize", initErr, `{"protocol_version":"0","client":{"name":"a","version":"1"}}`, true},
		{"initialize caps", initErr, `{"protocol_version":"0","client":{"name":"a","version":"1"},"ui_capabilities":{"supports_pick":false}}`, true},
		{"initialize no version", initErr, `{"client":{"name":"a","version":"1"}}`, false},
		{"initialize version number", initErr, `{"protocol_version":0,"client":{"name":"a","version":"1"}}`, false},
		{"initialize no client", initErr, `{"protocol_version":"0"}`, false},
		{"initialize caps wrong", initErr, `{"protocol_version":"0","client":{"name":"a","version":"1"},"ui_capabilities":{"supports_pick":"no"}}`, false},
		{"initialize array", initErr, `[]`, false},
		{"run.start", startErr, `{"input":{"type":"text","text":"hi"}}`, true},
		{"run.start all", startErr, `{"input":{"type":"text","text":"hi"},"session_id":"` + uuid + `","force_compaction":false,"ui_context":{"cwd":"/"},"meta":{"a":1}}`, true},
		{"run.start compaction without text", startErr, `{"input":{"type":"text","text":""},"force_compaction":true}`, true},
		{"run.start absent", startErr, ``, false},
		{"run.start no input", startErr, `{}`, false},
		{"run.start image", startErr, `{"input":{"type":"image","text":"x"}}`, false},
		{"run.start empty text", startErr, `{"input":{"type":"text","text":"  "}}`, false},
		{"run.start text number", startErr, `{"input":{"type":"text","text":5}}`, false},
		{"run.start bad session", startErr, `{"input":{"type":"text","text":"x"},"session_id":"../x"}`, false},
		{"run.start ui_context string", startErr, `{"input":{"type":"text","text":"x"},"ui_context":"x"}`, false},
		{"run.cancel", cancelErr, `{"run_id":"run-1","reason":"r"}`, true},
		{"run.cancel missing", cancelErr, `{}`, false},
		{"session.list", listErr, `{"limit":5}`, true},
		{"session.list none", listErr, ``, true},
		{"session.list zero", listErr, `{"limit":0}`, false},
		{"session.list fraction", listErr, `{"limit":1.5}`, false},
		{"session.history", histErr, `{"session_id":"` + uuid + `","max_runs":0,"max_events":10}`, true},
		{"session.history bad id", histErr, `{"session_id":"x"}`, false},
		{"session.history negative", histErr, `{"session_id":"` + uuid + `","max_events":-1}`, false},
		{"model.list", modelListErr, `{"provider":"anthropic","include_details":true}`, true},
		{"model.list openai", modelListErr, `{"provider":"openai"}`, false},
		{"model.set", modelSetErr, `{"name":"sonnet"}`, true},
		{"model.set none", modelSetErr, `{}`, false},
		{"mcp.list", mcpErr, `{"scope":"configured"}`, true},
		{"mcp.list bad", mcpErr, `{"scope":"all"}`, false},
		{"skills.list", skillsErr, `{"cwd":"sub","force_reload":true}`, true},
		{"skills.list bad", skillsErr, `{"force_reload":"yes"}`, false},
		{"context.inspect", inspectErr, `{"include_agents":true}`, true},
		{"context.inspect bad", inspectErr, `{"include_skills":1}`, false},
		{"shell.exec", shellErr, `{"command":"ls -l","timeout_seconds":5,"cwd":"sub"}`, true},
		{"shell.exec argv", shellErr, `{"argv":["ls","-l"]}`, true},
		{"shell.exec none", shellErr, `{}`, false},
		{"shell.exec both", shellErr, `{"command":"ls","argv":["ls"]}`, false},
		{"shell.exec argv empty", shellErr, `{"argv":[]}`, false},
		{"shell.exec argv number", shellErr, `{"argv":["ls",1]}`, false},
		{"shell.exec timeout zero", shellErr, `{"command":"ls","timeout_seconds":0}`, false},
		{"shell.exec timeout string", shellErr, `{"command":"ls","timeout_seconds":"5"}`, false},
		{"shell.exec nul", shellErr, `{"command":"ls\u0000x"}`, false},
		{"request.cancel", reqCancelErr, `{"id":7}`, true},
		{"request.cancel none", reqCancelErr, `{}`, false},
		{"request.cancel object", reqCancelErr, `{"id":{}}`, false},
		{"ui.context.update", uiCtxErr, `{"cwd":"/x"}`, true},
		{"ui.context.update none", uiCtxErr, ``, false},
	}
	for _, c := range cases {
		var p gjson.Result
		if c.params != "" {
			p = gjson.Parse(c.params)
		}
		err := c.parse(p)
		if c.ok && err != nil {
			t.Errorf("%s: unexpected error %v", c.name, err)
		}
		if !c.ok && (err == nil || err.Code != CodeInvalidParams || err.Message == "") {
			t.Errorf("%s: want -32602, got %v", c.name, err)
		}
	}
}

func initErr(p gjson.Result) *Error      { _, e := ParseInitialize(p); return e }
func startErr(p gjson.Result) *Error     { _, e := ParseRunStart(p); return e }
func cancelErr(p gjson.Result) *Error    { _, e := ParseRunCancel(p); return e }
func listErr(p gjson.Result) *Error      { _, e := ParseSessionList(p); return e }
func histErr(p gjson.Result) *Error      { _, e := ParseSessionHistory(p); return e }
func modelListErr(p gjson.Result) *Error { _, e := ParseModelList(p); return e }
func modelSetErr(p gjson.Result) *Error  { _, e := ParseModelSet(p); return e }
func mcpErr(p gjson.Result) *Error       { _, e := ParseMCPList(p); return e }
func skillsErr(p gjson.Result) *Error    { _, e := ParseSkillsList(p); return e }
func inspectErr(p gjson.Result) *Error   { _, e := ParseContextInspect(p); return e }
func shellErr(p gjson.Result) *Error     { _, e := ParseShellExec(p); return e }
func reqCancelErr(p gjson.Result) *Error { _, e := ParseRequestCancel(p); return e }
func uiCtxErr(p gjson.Result) *Error     { _, e := ParseUIContext(p); return e }

func TestParamDefaults(t *testing.T) {
	ip, _ := ParseInitialize(gjson.Parse(`{"protocol_version":"0","client":{"name":"a","version":"1"},"ui_capabilities":{"supports_confirm":false}}`))
	if ip.UI != (UICapabilities{Confirm: false, Pick: true, Prompt: true}) {
		t.Errorf("capabilities: %+v", ip.UI)
	}
	hp, _ := ParseSessionHistory(gjson.Parse(`{"session_id":"00000000-0000-4000-8000-000000000000"}`))
	if hp.MaxRuns != DefaultHistoryRuns || hp.MaxEvents != DefaultHistoryEvents {
		t.Errorf("history defaults: %+v", hp)
	}
	sp, _ := ParseShellExec(gjson.Parse(`{"command":"x"}`))
	if sp.TimeoutSeconds != DefaultShellTimeout {
		t.Errorf("shell default timeout %v", sp.TimeoutSeconds)
	}
	sp, _ = ParseShellExec(gjson.Parse(`{"command":"x","timeout_seconds":9999}`))
	if sp.TimeoutSeconds != MaxShellTimeout {
		t.Errorf("shell timeout not clamped: %v", sp.TimeoutSeconds)
	}
	rp, _ := ParseRunStart(gjson.Parse(`{"input":{"type":"text","text":"now"},"force_compaction":true}`))
	if !rp.ForceCompaction || rp.Text != "now" {
		t.Errorf("run.start: %+v", rp)
	}
	if id, _ := ParseRequestCancel(gjson.Parse(`{"id":"a\"b"}`)); id != `"a\"b"` {
		t.Errorf("request.cancel id %s", id)
	}
}

func TestCommandPreview(t *testing.T) {
	long := ""
	for i := 0; i < 500; i++ {
		long += "é"
	}
	if p := CommandPreview("  ls  "); p != "ls" {
		t.Errorf("%q", p)
	}
	if p := CommandPreview(long); len([]rune(p)) != 400+len("...[truncated]") {
		t.Errorf("preview of %d runes", len([]rune(p)))
	}
}

func TestParseRunSteer(t *testing.T) {
	rp, err := ParseRunSteer(gjson.Parse(`{"run_id":"run-1","text":"mind the docs"}`))
	if err != nil || rp.RunID != "run-1" || rp.Text != "mind the docs" {
		t.Errorf("run.steer: %+v %v", rp, err)
	}
	for _, p := range []string{`{"text":"x"}`, `{"run_id":"run-1"}`, `{"run_id":"run-1","text":"  "}`, `{"run_id":"run-1","text":3}`} {
		if _, err := ParseRunSteer(gjson.Parse(p)); err == nil || err.Code != CodeInvalidParams {
			t.Errorf("run.steer %s: %v, want -32602", p, err)
		}
	}
}
