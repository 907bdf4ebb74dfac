package acp_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/acp"
)

// feed routes CLI lines through tr and returns the update payloads
// (params.update) produced, checking each line is valid JSON.
func feed(t testing.TB, tr *acp.Translator, lines ...string) []gjson.Result {
	t.Helper()
	var out [][]byte
	for _, l := range lines {
		if !gjson.Valid(l) {
			t.Fatalf("test input is not valid JSON: %s", l)
		}
		ev := mapping.Route([]byte(l))
		out = tr.FromCLI(&ev, out)
	}
	var got []gjson.Result
	for _, o := range out {
		if !json.Valid(o) {
			t.Fatalf("output is not JSON: %s", o)
		}
		got = append(got, gjson.GetBytes(o, "params.update"))
	}
	return got
}

func kinds(us []gjson.Result) string {
	var ks []string
	for _, u := range us {
		ks = append(ks, u.Get("sessionUpdate").Str)
	}
	return strings.Join(ks, " ")
}

const wrap = `,"session_id":"s","parent_tool_use_id":null,"uuid":"u"}`

func TestChunksAreStreamedOnce(t *testing.T) {
	tr := acp.NewTranslator("s1")
	got := feed(t, tr,
		`{"type":"stream_event","event":{"type":"message_start","message":{"id":"m1","usage":{"input_tokens":5}}},"api_message_id":"m1"`+wrap,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}},"api_message_id":"m1"`+wrap,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"say \"hi\"\n<ok> é \u2028"}},"api_message_id":"m1"`+wrap,
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"say \"hi\"\n<ok> é"}]}`+wrap,
		// Not streamed: an API error frame and a subagent's text.
		`{"type":"assistant","message":{"id":"e1","model":"<synthetic>","content":[{"type":"text","text":"API Error: 500"}]},"is_api_error_message":true`+wrap,
		`{"type":"assistant","message":{"id":"m9","content":[{"type":"text","text":"from the subagent"}]},"parent_tool_use_id":"toolu_agent","session_id":"s","uuid":"u2"}`,
	)
	if k := kinds(got); k != "agent_thought_chunk agent_message_chunk agent_message_chunk agent_message_chunk" {
		t.Fatalf("updates: %s", k)
	}
	if got[1].Get("content.text").Str != "say \"hi\"\n<ok> é \u2028" || got[1].Get("messageId").Str != "m1" {
		t.Errorf("text chunk: %s", got[1].Raw)
	}
	if got[2].Get("content.text").Str != "API Error: 500" {
		t.Errorf("API error chunk: %s", got[2].Raw)
	}
	if got[3].Get("_meta.claudeCode.parentToolUseId").Str != "toolu_agent" {
		t.Errorf("subagent chunk without its parent: %s", got[3].Raw)
	}
}

func TestToolCallLifecycle(t *testing.T) {
	tr := acp.NewTranslator("s1")
	got := feed(t, tr,
		`{"type":"stream_event","event":{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"Edit","input":{}}}`+wrap,
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Edit","input":{"file_path":"/p/f.txt","old_string":"a","new_string":"b"}}]}`+wrap,
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]},"tool_use_result":{"filePath":"/p/f.txt","oldString":"a","newString":"b","originalFile":"x\na\ny\n","structuredPatch":[{"oldStart":1,"oldLines":3,"newStart":1,"newLines":3,"lines":[" x","-a","+b"," y"]}],"replaceAll":false}`+wrap,
	)
	if k := kinds(got); k != "tool_call tool_call_update tool_call_update" {
		t.Fatalf("updates: %s", k)
	}
	if got[0].Get("status").Str != "pending" || got[0].Get("kind").Str != "edit" || got[0].Get("title").Str != "Edit" {
		t.Errorf("announcement: %s", got[0].Raw)
	}
	u := got[1]
	if u.Get("title").Str != "Edit /p/f.txt" || u.Get("locations.0.path").Str != "/p/f.txt" ||
		u.Get("content.0.oldText").Str != "a" || u.Get("content.0.newText").Str != "b" || u.Get("rawInput.old_string").Str != "a" {
		t.Errorf("refinement: %s", u.Raw)
	}
	d := got[2]
	if d.Get("status").Str != "completed" || d.Get("content.0.type").Str != "diff" ||
		d.Get("content.0.oldText").Str != "x\na\ny\n" || d.Get("content.0.newText").Str != "x\nb\ny\n" {
		t.Errorf("result: %s", d.Raw)
	}
}

func TestTodoWriteIsAPlan(t *testing.T) {
	tr := acp.NewTranslator("s1")
	got := feed(t, tr,
		`{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"TodoWrite","input":{}}}`+wrap,
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"TodoWrite","input":{"todos":[{"content":"a","status":"completed"},{"content":"b","status":"weird","priority":"low"},{"content":""}]}}]}`+wrap,
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}`+wrap,
	)
	if k := kinds(got); k != "plan" {
		t.Fatalf("updates: %s", k)
	}
	if got[0].Get("entries.#").Int() != 2 || got[0].Get("entries.1.status").Str != "pending" || got[0].Get("entries.1.priority").Str != "low" ||
		got[0].Get("entries.0.priority").Str != "medium" {
		t.Errorf("plan: %s", got[0].Raw)
	}
}

func TestModeChangesAndUsage(t *testing.T) {
	tr := acp.NewTranslator("s1")
	got := feed(t, tr,
		`{"type":"system","subtype":"status","status":null,"permissionMode":"default"`+wrap, // unchanged
		`{"type":"system","subtype":"status","status":null,"permissionMode":"plan"`+wrap,
		`{"type":"result","subtype":"success","is_error":false,"result":"","total_cost_usd":0.5`+wrap, // no model call: no usage
		`{"type":"stream_event","event":{"type":"message_start","message":{"id":"m","usage":{"input_tokens":10,"cache_read_input_tokens":90,"output_tokens":1}}},"api_message_id":"m"`+wrap,
		`{"type":"stream_event","event":{"type":"message_delta","delta":{},"usage":{"output_tokens":20}},"api_message_id":"m"`+wrap,
		`{"type":"result","subtype":"success","is_error":false,"result":"","total_cost_usd":0.75,"modelUsage":{"a":{"contextWindow":1000},"b":{"contextWindow":5000}}`+wrap,
	)
	if k := kinds(got); k != "current_mode_update config_option_update usage_update" {
		t.Fatalf("updates: %s", k)
	}
	if got[0].Get("currentModeId").Str != "plan" || got[1].Get(`configOptions.#(id=="mode").currentValue`).Str != "plan" {
		t.Errorf("mode updates: %s %s", got[0].Raw, got[1].Raw)
	}
	if u := got[2]; u.Get("used").Int() != 120 || u.Get("size").Int() != 5000 || u.Get("cost.amount").Num != 0.75 {
		t.Errorf("usage: %s", u.Raw)
	}
}

func TestTurnOutcome(t *testing.T) {
	cases := []struct {
		line      string
		cancelled bool
		reason    string
		code      int
	}{
		{`{"type":"result","subtype":"success","is_error":false,"stop_reason":"end_turn"}`, false, "end_turn", 0},
		{`{"type":"result","subtype":"success","is_error":false,"stop_reason":"end_turn"}`, true, "cancelled", 0},
		{`{"type":"result","subtype":"success","is_error":false,"stop_reason":"max_tokens"}`, false, "max_tokens", 0},
		{`{"type":"result","subtype":"success","is_error":false,"stop_reason":"refusal"}`, false, "refusal", 0},
		{`{"type":"result","subtype":"error_during_execution","is_error":true,"terminal_reason":"aborted_streaming"}`, false, "cancelled", 0},
		{`{"type":"result","subtype":"error_max_turns","is_error":true}`, false, "max_turn_requests", 0},
		{`{"type":"result","subtype":"error_max_budget_usd","is_error":true}`, false, "max_turn_requests", 0},
		{`{"type":"result","subtype":"success","is_error":true,"terminal_reason":"api_error","api_error_status":529,"result":"API Error: 529"}`, false, "", -32603},
		{`{"type":"result","subtype":"success","is_error":true,"terminal_reason":"api_error","api_error_status":401,"result":"API Error: 401"}`, false, "", -32000},
		{`{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["[ede_diagnostic] x","No conversation found"]}`, false, "", -32603},
		{`{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["boom"]}`, true, "cancelled", 0},
	}
	for _, c := range cases {
		ev := mapping.Route([]byte(c.line))
		reason, err := acp.TurnOutcome(&ev, c.cancelled)
		code := 0
		if err != nil {
			code = err.Code
			if !json.Valid(err.AppendResponse(nil, "1")) {
				t.Errorf("%s: bad error response", c.line)
			}
			if strings.Contains(err.Message, "ede_diagnostic") {
				t.Errorf("diagnostic in the message: %s", err.Message)
			}
		}
		if reason != c.reason || code != c.code {
			t.Errorf("%s (cancelled %v): %q %d, want %q %d", c.line, c.cancelled, reason, code, c.reason, c.code)
		}
	}
}

func pending(t *testing.T, tool, input, suggestions string, elicitation bool) *acp.Pending {
	t.Helper()
	req := `{"subtype":"can_use_tool","tool_name":"` + tool + `","input":` + input + `,"tool_use_id":"toolu_1"`
	if suggestions != "" {
		req += `,"permission_suggestions":` + suggestions
	}
	ev := mapping.Route([]byte(`{"type":"control_request","request_id":"R1","request":` + req + `}}`))
	return acp.NewPending(&ev, elicitation)
}

func selected(id string) gjson.Result {
	return gjson.Parse(`{"outcome":{"outcome":"selected","optionId":"` + id + `"}}`)
}

func TestPendingAnswers(t *testing.T) {
	const sugg = `[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"ls"}],"behavior":"allow","destination":"localSettings"}]`
	cases := []struct {
		name        string
		tool, input string
		suggestions string
		result      string
		errMsg      string
		want        string // paths that must hold in the stdin line's response.response
		allowed     bool
	}{
		{"allow", "Bash", `{"command":"ls"}`, "", `{"outcome":{"outcome":"selected","optionId":"allow"}}`, "", `behavior=allow toolUseID=toolu_1 !updatedInput !updatedPermissions`, true},
		{"always with suggestions", "Bash", `{"command":"ls"}`, sugg, `{"outcome":{"outcome":"selected","optionId":"allow_always"}}`, "", `behavior=allow updatedPermissions.0.destination=localSettings`, true},
		{"always without", "Write", `{}`, "", `{"outcome":{"outcome":"selected","optionId":"allow_always"}}`, "", `behavior=allow updatedPermissions.0.rules.0.toolName=Write updatedPermissions.0.destination=session`, true},
		{"reject", "Bash", `{}`, "", `{"outcome":{"outcome":"selected","optionId":"reject"}}`, "", `behavior=deny !interrupt`, false},
		{"cancelled", "Bash", `{}`, "", `{"outcome":{"outcome":"cancelled"}}`, "", `behavior=deny`, false},
		{"unknown option", "Bash", `{}`, "", `{"outcome":{"outcome":"selected","optionId":"maybe"}}`, "", `behavior=deny`, false},
		{"garbage", "Bash", `{}`, "", `{"nope":1}`, "", `behavior=deny`, false},
		{"error response", "Bash", `{}`, "", ``, "Method not found (code -32601)", `behavior=deny`, false},
		{"plan accept edits", "ExitPlanMode", `{}`, "", `{"outcome":{"outcome":"selected","optionId":"acceptEdits"}}`, "", `behavior=allow updatedPermissions.0.type=setMode updatedPermissions.0.mode=acceptEdits`, true},
		{"plan keep planning", "ExitPlanMode", `{}`, "", `{"outcome":{"outcome":"selected","optionId":"plan"}}`, "", `behavior=deny`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := pending(t, c.tool, c.input, c.suggestions, false)
			a := p.Answer(gjson.Parse(c.result), c.errMsg)
			if a.Allowed != c.allowed || a.Next {
				t.Errorf("allowed %v next %v", a.Allowed, a.Next)
			}
			checkStdin(t, a.Stdin, c.want)
		})
	}
}

// checkStdin checks a control_response line: "path=value" must hold,
// "!path" must be absent, in response.response.
func checkStdin(t *testing.T, line []byte, want string) {
	t.Helper()
	if !json.Valid(line) || gjson.GetBytes(line, "response.request_id").Str != "R1" {
		t.Fatalf("stdin line: %s", line)
	}
	r := gjson.GetBytes(line, "response.response")
	for _, w := range strings.Fields(want) {
		if path, ok := strings.CutPrefix(w, "!"); ok {
			if r.Get(path).Exists() {
				t.Errorf("%s present in %s", path, r.Raw)
			}
			continue
		}
		path, val, _ := strings.Cut(w, "=")
		if got := r.Get(path).String(); got != val {
			t.Errorf("%s = %q, want %q in %s", path, got, val, r.Raw)
		}
	}
}

const twoQuestions = `{"questions":[{"question":"Which color?","header":"Color","options":[{"label":"Red"},{"label":"Blue"}]},{"question":"Which sizes?","options":[{"label":"S"},{"label":"M"},{"label":"L"}],"multiSelect":true}]}`

func TestQuestionAsPermissions(t *testing.T) {
	tr := acp.NewTranslator("s1")
	p := pending(t, "AskUserQuestion", twoQuestions, "", false)
	if p.Method() != acp.MethodRequestPermission {
		t.Fatalf("method %s", p.Method())
	}
	params := gjson.ParseBytes(tr.AppendParams(nil, p))
	if params.Get("toolCall.title").Str != "Which color?" || params.Get("options.1.name").Str != "Blue" || params.Get("options.1.optionId").Str != "answer_1" {
		t.Fatalf("first question: %s", params.Raw)
	}
	a := p.Answer(selected("answer_1"), "")
	if !a.Next || a.Stdin != nil {
		t.Fatalf("after the first answer: %+v", a)
	}
	params = gjson.ParseBytes(tr.AppendParams(nil, p))
	if params.Get("toolCall.title").Str != "Which sizes?" || params.Get("options.#").Int() != 4 {
		t.Fatalf("second question: %s", params.Raw)
	}
	if a := p.Answer(selected("answer_9"), ""); a.Allowed {
		t.Fatalf("an answer out of range allowed the tool")
	}
	p = pending(t, "AskUserQuestion", twoQuestions, "", false)
	p.Answer(selected("answer_0"), "")
	a = p.Answer(selected("answer_2"), "")
	if !a.Allowed {
		t.Fatalf("not allowed: %s", a.Stdin)
	}
	checkStdin(t, a.Stdin, `behavior=allow updatedInput.questions.#=2`)
	if got := gjson.GetBytes(a.Stdin, "response.response.updatedInput.answers").Raw; got != `{"Which color?":"Red","Which sizes?":"L"}` {
		t.Errorf("answers %s", got)
	}
}

func TestQuestionAsElicitation(t *testing.T) {
	tr := acp.NewTranslator("s1")
	p := pending(t, "AskUserQuestion", twoQuestions, "", true)
	if p.Method() != acp.MethodElicitationCreate {
		t.Fatalf("method %s", p.Method())
	}
	params := gjson.ParseBytes(tr.AppendParams(nil, p))
	if params.Get("mode").Str != "form" || params.Get("toolCallId").Str != "toolu_1" ||
		params.Get("requestedSchema.properties.q1.type").Str != "array" || params.Get("requestedSchema.required.#").Int() != 2 {
		t.Fatalf("elicitation: %s", params.Raw)
	}
	a := p.Answer(gjson.Parse(`{"action":"accept","content":{"q0":"Blue","q1":["S","L"]}}`), "")
	checkStdin(t, a.Stdin, `behavior=allow`)
	if got := gjson.GetBytes(a.Stdin, "response.response.updatedInput.answers").Raw; got != `{"Which color?":"Blue","Which sizes?":"S,L"}` {
		t.Errorf("answers %s", got)
	}
	for _, r := range []string{`{"action":"decline"}`, `{"action":"cancel"}`, `{"action":"accept","content":{}}`, `{}`} {
		if a := p.Answer(gjson.Parse(r), ""); a.Allowed {
			t.Errorf("%s allowed the tool", r)
		}
	}
}

func TestPermissionParams(t *testing.T) {
	tr := acp.NewTranslator("s1")
	p := pending(t, "Write", `{"file_path":"/p/new.txt","content":"x"}`, "", false)
	params := gjson.ParseBytes(tr.AppendParams(nil, p))
	if !json.Valid([]byte(params.Raw)) || params.Get("sessionId").Str != "s1" || params.Get("toolCall.toolCallId").Str != "toolu_1" ||
		params.Get("toolCall.content.0.type").Str != "diff" || params.Get("toolCall.content.0.oldText").Type != gjson.Null ||
		params.Get("options.#").Int() != 3 {
		t.Errorf("params: %s", params.Raw)
	}
}

func TestPromptBlocks(t *testing.T) {
	const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
	ok := []struct{ prompt, want string }{
		{`[{"type":"text","text":"hi"}]`, `{"type":"text","text":"hi"}`},
		{`[{"type":"image","data":"` + png + `","mimeType":"image/png"}]`, `{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + png + `"}}`},
		{`[{"type":"image","uri":"https://x/y.png","mimeType":"image/png"}]`, `{"type":"image","source":{"type":"url","url":"https://x/y.png"}}`},
		{`[{"type":"resource_link","uri":"file:///a.go","name":"a.go"}]`, `{"type":"text","text":"[a.go](file:///a.go)"}`},
		{`[{"type":"resource","resource":{"uri":"file:///a.go","text":"package a"}}]`, `{"type":"text","text":"<context ref=\"file:///a.go\">\npackage a\n</context>"}`},
		{`[{"type":"resource","resource":{"uri":"file:///a.pdf","blob":"JVBERi0=","mimeType":"application/pdf"}}]`, `{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0="}}`},
	}
	for _, c := range ok {
		blocks, err := acp.PromptBlocks(gjson.Parse(c.prompt))
		if err != nil {
			t.Errorf("%s: %v", c.prompt, err)
			continue
		}
		if got := string(mapping.AppendBlock(nil, blocks[0])); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.prompt, got, c.want)
		}
	}
	bad := []string{
		`"hi"`, `[]`, `[1]`, `[{"type":"text"}]`, `[{"type":"audio","data":"AA==","mimeType":"audio/wav"}]`,
		`[{"type":"image","data":"bm90","mimeType":"image/png"}]`, `[{"type":"image","uri":"file:///x.png"}]`,
		`[{"type":"resource","resource":{"uri":"file:///x.bin","blob":"AA==","mimeType":"application/octet-stream"}}]`,
		`[{"type":"resource_link"}]`, `[{"type":"video"}]`,
	}
	for _, b := range bad {
		if _, err := acp.PromptBlocks(gjson.Parse(b)); err == nil || err.Code != -32602 {
			t.Errorf("%s: got %v, want -32602", b, err)
		}
	}
}

func TestMCPConfig(t *testing.T) {
	got, err := acp.MCPConfig(gjson.Parse(`[
		{"name":"fs","command":"/bin/mcp","args":["--root","/"],"env":[{"name":"K","value":"V"}]},
		{"type":"http","name":"web","url":"https://x/mcp","headers":[{"name":"Authorization","value":"Bearer t"}]},
		{"type":"sse","name":"events","url":"https://x/sse","headers":[]}]`))
	want := `{"mcpServers":{"fs":{"type":"stdio","command":"/bin/mcp","args":["--root","/"],"env":{"K":"V"}},` +
		`"web":{"type":"http","url":"https://x/mcp","headers":{"Authorization":"Bearer t"}},"events":{"type":"sse","url":"https://x/sse","headers":{}}}}`
	if err != nil || got != want {
		t.Errorf("got %s (%v)\nwant %s", got, err, want)
	}
	if got, err := acp.MCPConfig(gjson.Parse(`[]`)); got != "" || err != nil {
		t.Errorf("empty: %q %v", got, err)
	}
	for _, b := range []string{`{}`, `[1]`, `[{"name":"a"}]`, `[{"name":"a","command":"x"},{"name":"a","command":"y"}]`,
		`[{"type":"ws","name":"a","url":"x"}]`, `[{"type":"http","name":"a"}]`, `[{"name":"a","command":"x","args":[1]}]`,
		`[{"name":"a","command":"x","env":[{"name":"K"}]}]`} {
		if _, err := acp.MCPConfig(gjson.Parse(b)); err == nil {
			t.Errorf("%s accepted", b)
		}
	}
}

func TestParseSessionSetup(t *testing.T) {
	s, err := acp.ParseSessionSetup(acp.MethodSessionNew, gjson.Parse(`{"cwd":"/p/./q","mcpServers":[],"additionalDirectories":["/r"]}`))
	if err != nil || s.CWD != "/p/q" || len(s.AddDirs) != 1 || s.MCPConfig != "" {
		t.Errorf("new: %+v %v", s, err)
	}
	if _, err := acp.ParseSessionSetup(acp.MethodSessionResume, gjson.Parse(`{"sessionId":"x","cwd":"/p"}`)); err != nil {
		t.Errorf("resume without mcpServers: %v", err)
	}
	if f, err := acp.ParseSessionSetup(acp.MethodSessionFork, gjson.Parse(`{"sessionId":"x","cwd":"/p"}`)); err != nil || f.SessionID != "x" {
		t.Errorf("fork without mcpServers: %+v %v", f, err)
	}
	for _, c := range []struct{ method, params string }{
		{acp.MethodSessionNew, `{"cwd":"p","mcpServers":[]}`},
		{acp.MethodSessionNew, `{"cwd":"/p"}`},
		{acp.MethodSessionLoad, `{"cwd":"/p","mcpServers":[]}`},
		{acp.MethodSessionLoad, `{"sessionId":"","cwd":"/p","mcpServers":[]}`},
		{acp.MethodSessionFork, `{"cwd":"/p"}`},
		{acp.MethodSessionFork, `{"sessionId":"x","cwd":"rel"}`},
		{acp.MethodSessionNew, `{"cwd":"/p","mcpServers":[],"additionalDirectories":["rel"]}`},
		{acp.MethodSessionNew, `[]`},
	} {
		if _, err := acp.ParseSessionSetup(c.method, gjson.Parse(c.params)); err == nil || err.Code != -32602 {
			t.Errorf("%s %s: %v", c.method, c.params, err)
		}
	}
}

func TestParseInitialize(t *testing.T) {
	v, caps, err := acp.ParseInitialize(gjson.Parse(`{"protocolVersion":1,"clientCapabilities":{"elicitation":{"form":{}},"session":{"configOptions":{"boolean":{}}}}}`))
	if err != nil || v != 1 || !caps.ElicitationForm || !caps.ConfigBoolean {
		t.Errorf("%d %+v %v", v, caps, err)
	}
	_, caps, _ = acp.ParseInitialize(gjson.Parse(`{"protocolVersion":2,"clientCapabilities":{"elicitation":{"form":null,"url":{}}}}`))
	if caps.ElicitationForm {
		t.Errorf("form:null advertised form support")
	}
	for _, b := range []string{`{}`, `{"protocolVersion":"1"}`, `{"protocolVersion":1.5}`, `{"protocolVersion":-1}`, `null`, `{"protocolVersion":1,"clientCapabilities":3}`} {
		if _, _, err := acp.ParseInitialize(gjson.Parse(b)); err == nil {
			t.Errorf("%s accepted", b)
		}
	}
	res := acp.AppendInitializeResult(nil, acp.AgentInfo{Name: "ccbridge", Version: "1"}, acp.ClientCaps{})
	if !json.Valid(res) || gjson.GetBytes(res, "protocolVersion").Int() != 1 || !gjson.GetBytes(res, "agentCapabilities.loadSession").Bool() ||
		!gjson.GetBytes(res, "agentCapabilities.auth.logout").IsObject() || !gjson.GetBytes(res, "agentCapabilities.sessionCapabilities.fork").IsObject() {
		t.Errorf("result: %s", res)
	}
	// The terminal method only for a client that can run one.
	if m := gjson.GetBytes(res, "authMethods"); m.Get("#").Int() != 1 || m.Get("0.id").Str != acp.AuthMethodID || m.Get("0.type").Exists() {
		t.Errorf("auth methods without auth.terminal: %s", m.Raw)
	}
	_, caps, err = acp.ParseInitialize(gjson.Parse(`{"protocolVersion":1,"clientCapabilities":{"auth":{"terminal":true}}}`))
	if err != nil || !caps.AuthTerminal {
		t.Fatalf("auth.terminal not read: %+v %v", caps, err)
	}
	res = acp.AppendInitializeResult(nil, acp.AgentInfo{Name: "ccbridge", Version: "1"}, caps)
	term := gjson.GetBytes(res, `authMethods.#(type=="terminal")`)
	if !json.Valid(res) || term.Get("id").Str != acp.AuthTerminalID || term.Get("args").Raw != `["--login"]` || term.Get("name").Str == "" {
		t.Errorf("terminal auth method: %s", res)
	}
	for _, b := range []string{`{"protocolVersion":1,"clientCapabilities":{"auth":{"terminal":"yes"}}}`, `{"protocolVersion":1,"clientCapabilities":{"auth":{}}}`} {
		if _, caps, _ := acp.ParseInitialize(gjson.Parse(b)); caps.AuthTerminal {
			t.Errorf("%s: auth.terminal taken as true", b)
		}
	}
}

func TestConfigFromInitialize(t *testing.T) {
	resp := gjson.Parse(`{"current_permission_mode":"plan","models":[{"value":"default","displayName":"Default","supportsAutoMode":true},{"value":"sonnet","displayName":"Sonnet"}]}`)
	c := acp.ConfigFromInitialize(resp, "claude-x-1", false)
	if c.Mode != "plan" || c.Model != "claude-x-1" || !c.HasModel("sonnet") || !c.HasModel("claude-x-1") || !c.HasMode("auto") || c.HasMode("bypassPermissions") {
		t.Errorf("config: %+v", c)
	}
	if c := acp.ConfigFromInitialize(gjson.Parse(`{}`), "", true); !c.HasMode("bypassPermissions") || c.HasMode("auto") || c.Model != "default" || !c.HasModel("default") {
		t.Errorf("config without models: %+v", c)
	}
	res := c.AppendSetupResult(nil, "sid")
	if !json.Valid(res) || gjson.GetBytes(res, "sessionId").Str != "sid" || gjson.GetBytes(res, "configOptions.#").Int() != 2 {
		t.Errorf("setup result: %s", res)
	}
}

func TestSessionTitle(t *testing.T) {
	var s mapping.SessionSummary
	for _, l := range []string{
		`{"type":"queue-operation"}`,
		`{"type":"user","cwd":"/p","isMeta":true,"message":{"role":"user","content":"<system-reminder>x</system-reminder>"}}`,
		`{"type":"user","cwd":"/p","message":{"role":"user","content":[{"type":"text","text":"<system-reminder>r</system-reminder>"},{"type":"text","text":"fix the bug\nplease"}]}}`,
	} {
		s.Line([]byte(l))
	}
	if title := acp.SessionTitle(&s); title != "fix the bug" {
		t.Errorf("prompt title: %q", title)
	}
	s.Line([]byte(`{"type":"ai-title","aiTitle":"Bug fixing"}`))
	if title := acp.SessionTitle(&s); title != "Bug fixing" {
		t.Errorf("AI title: %q", title)
	}
	s.Line([]byte(`{"type":"custom-title","customTitle":"My title"}`))
	s.Line([]byte(`{"type":"ai-title","aiTitle":"Later AI title"}`))
	if title := acp.SessionTitle(&s); title != "My title" {
		t.Errorf("custom title: %q", title)
	}
	long := mapping.SessionSummary{FirstPrompt: strings.Repeat("é", 80)}
	if title := acp.SessionTitle(&long); title != strings.Repeat("é", 50)+"…" {
		t.Errorf("a long prompt's title: %q", title)
	}
	list := acp.AppendListResult(nil, []acp.SessionInfo{{ID: "a", CWD: "/p", Title: "t", UpdatedAt: "2026-01-01T00:00:00Z"}, {ID: "b", CWD: "/q"}}, "2")
	if !json.Valid(list) || gjson.GetBytes(list, "sessions.1.title").Exists() || gjson.GetBytes(list, "nextCursor").Str != "2" {
		t.Errorf("list: %s", list)
	}
}

func TestAvailableCommands(t *testing.T) {
	line := acp.AppendAvailableCommands(nil, "s", gjson.Parse(`{"commands":[{"name":"compact","description":"Compact","argumentHint":"<instructions>"},{"name":"cost","description":"Cost","argumentHint":""}]}`), gjson.Result{})
	u := gjson.GetBytes(line, "params.update")
	if u.Get("sessionUpdate").Str != "available_commands_update" || u.Get("availableCommands.0.input.hint").Str != "<instructions>" ||
		u.Get("availableCommands.1.input").Exists() {
		t.Errorf("%s", line)
	}
	line = acp.AppendAvailableCommands(nil, "s", gjson.Result{}, gjson.Parse(`{"slash_commands":["a","b"]}`))
	if gjson.GetBytes(line, "params.update.availableCommands.#").Int() != 2 {
		t.Errorf("from slash_commands: %s", line)
	}
	if l := acp.AppendAvailableCommands(nil, "s", gjson.Result{}, gjson.Result{}); l != nil {
		t.Errorf("without commands: %s", l)
	}
}

func TestTaskToolsArePlans(t *testing.T) {
	tr := acp.NewTranslator("s1")
	use := func(id, name, input string) string {
		return `{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"` + id + `","name":"` + name + `","input":` + input + `}]}` + wrap
	}
	result := func(id, structured string) string {
		return `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":"ok"}]},"tool_use_result":` + structured + wrap
	}
	got := feed(t, tr,
		use("a", "TaskCreate", `{"subject":"one"}`), result("a", `{"task":{"id":"1","subject":"one"}}`),
		use("b", "TaskCreate", `{"subject":"two"}`), result("b", `{"task":{"id":"2","subject":"two"}}`),
		use("c", "TaskUpdate", `{"taskId":"1","status":"deleted"}`), result("c", `{"success":true,"taskId":"1","updatedFields":["status"],"statusChange":{"from":"pending","to":"deleted"}}`),
		use("d", "TaskUpdate", `{"taskId":"9","status":"completed"}`), result("d", `{"success":false,"taskId":"9"}`),
		use("e", "TaskList", `{}`), result("e", `{"tasks":[{"id":"2","subject":"two","status":"completed"},{"id":"3","subject":"three","status":"in_progress"}]}`),
	)
	if k := kinds(got); k != "plan plan plan plan" {
		t.Fatalf("updates: %s", k)
	}
	if got[2].Get("entries.#").Int() != 1 || got[2].Get("entries.0.content").Str != "two" {
		t.Errorf("after the delete: %s", got[2].Raw)
	}
	if got[3].Get("entries.1.status").Str != "in_progress" || got[3].Get("entries.0.status").Str != "completed" {
		t.Errorf("after the list: %s", got[3].Raw)
	}
}

// TestAppendChunkLine: the hot path appends exactly the line FromCLI
// gives for a streamed delta, and nothing for any other event; with room
// in dst it allocates nothing.
func TestAppendChunkLine(t *testing.T) {
	const wrap = `"session_id":"s","parent_tool_use_id":null,"uuid":"u"`
	lines := []string{
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a \"quoted\"\nline é"}},` + wrap + `,"api_message_id":"msg_1"}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}},` + wrap + `}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"in a task"}},"session_id":"s","parent_tool_use_id":"toolu_1","uuid":"u"}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}},` + wrap + `}`,
		`{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_1","usage":{}}},` + wrap + `}`,
		`{"type":"assistant","message":{"id":"msg_2","role":"assistant","content":[{"type":"text","text":"whole"}]},` + wrap + `}`,
	}
	for _, l := range lines {
		ev := mapping.Route([]byte(l))
		want := acp.NewTranslator("sess").FromCLI(&ev, nil)
		got, ok := acp.NewTranslator("sess").AppendChunkLine([]byte("before\n"), &ev)
		isDelta := ev.Kind == mapping.KindTextDelta || ev.Kind == mapping.KindThinkingDelta
		if ok != isDelta {
			t.Errorf("%s: ok %v for kind %v", l, ok, ev.Kind)
			continue
		}
		if !ok {
			if string(got) != "before\n" {
				t.Errorf("%s: appended %q to a line it does not take", l, got)
			}
			continue
		}
		var wantLines string
		for _, w := range want {
			wantLines += string(w) + "\n"
		}
		if string(got) != "before\n"+wantLines {
			t.Errorf("%s:\n got %q\nwant %q", l, got, "before\n"+wantLines)
		}
	}

	tr := acp.NewTranslator("sess")
	ev := mapping.Route([]byte(lines[0]))
	dst := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(100, func() { dst, _ = tr.AppendChunkLine(dst[:0], &ev) }); n != 0 {
		t.Errorf("AppendChunkLine allocated %v times a call", n)
	}
}
