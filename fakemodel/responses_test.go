package fakemodel

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// Requests as Codex CLI 0.171.0 makes them (trimmed): its context as
// developer and user messages of one tag each, then the prompt, then the
// turn's calls and their outputs.
func codexInput(items ...any) []any {
	return append([]any{
		map[string]any{"type": "message", "role": "developer", "content": []any{map[string]any{"type": "input_text", "text": "You are Codex."}}},
		map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text",
			"text": "<environment_context>\n  <cwd>/work/dir</cwd>\n  <shell>bash</shell>\n</environment_context>"}}},
	}, items...)
}

func userText(s string) map[string]any {
	return map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": s}}}
}

func call(name, args string) map[string]any {
	return map[string]any{"type": "function_call", "name": name, "arguments": args, "call_id": "call_1"}
}

func callOutput(out string) map[string]any {
	return map[string]any{"type": "function_call_output", "call_id": "call_1", "output": out}
}

// codexTools are the tools a request offers: exec_command and a custom
// apply_patch, as Codex 0.171.0 does, unless other names are given
// ("shell", "function:apply_patch").
func codexBody(stream bool, tools []string, input []any) []byte {
	if tools == nil {
		tools = []string{"exec_command", "custom:apply_patch"}
	}
	var ts []any
	for _, name := range tools {
		typ := "function"
		if n, ok := strings.CutPrefix(name, "custom:"); ok {
			typ, name = "custom", n
		} else if n, ok := strings.CutPrefix(name, "function:"); ok {
			name = n
		}
		ts = append(ts, map[string]any{"type": typ, "name": name})
	}
	b, _ := json.Marshal(map[string]any{"model": "gpt-5.5", "stream": stream, "input": input, "tools": ts, "store": false})
	return b
}

func TestResponsesAnalyze(t *testing.T) {
	for _, tt := range []struct {
		name       string
		input      []any
		prompt     string
		step       int
		toolResult string
	}{
		{"prompt", codexInput(userText("BASH please")), "BASH please", 0, ""},
		{"after a call", codexInput(userText("BASH please"), call("exec_command", `{"cmd":"ls"}`), callOutput("a.txt")), "BASH please", 1, "a.txt"},
		{"two calls in one turn count once", codexInput(userText("P"),
			map[string]any{"type": "reasoning", "summary": []any{}}, call("exec_command", "{}"), call("exec_command", "{}"),
			callOutput("one"), callOutput("two"),
			map[string]any{"type": "custom_tool_call", "name": "apply_patch", "input": "x", "call_id": "c"},
			map[string]any{"type": "custom_tool_call_output", "call_id": "c", "output": []any{map[string]any{"type": "input_text", "text": "patched"}}}),
			"P", 2, "patched"},
		{"the next prompt starts again", codexInput(userText("first"), call("exec_command", "{}"), callOutput("x"),
			map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "Done."}}},
			userText("second")), "second", 0, ""},
		{"a tag block is no prompt", codexInput(userText("real prompt"), userText("<turn_aborted>\nThe user interrupted.\n</turn_aborted>")), "real prompt", 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			info := analyzeResponses(codexBody(true, nil, tt.input))
			if info.prompt != tt.prompt || info.step != tt.step || info.toolResult != tt.toolResult || info.cwd != "/work/dir" ||
				info.model != "gpt-5.5" || !info.stream {
				t.Errorf("got %+v, want prompt %q step %d toolResult %q cwd /work/dir", info, tt.prompt, tt.step, tt.toolResult)
			}
		})
	}
	for s, want := range map[string]bool{
		"<environment_context>\n<cwd>/x</cwd>\n</environment_context>": true,
		"  <user_instructions>be brief</user_instructions>\n":          true,
		"<b>bold</b> and more": false,
		"<p>":                  false,
		"plain":                false,
	} {
		if isTagBlock(s) != want {
			t.Errorf("isTagBlock(%q) = %v", s, !want)
		}
	}
}

// responsesStream posts a streaming Responses request and checks the
// event sequence's invariants: numbered in order, each event's type its
// name, one response.created first and one terminal event last.
func responsesStream(t *testing.T, srv *Server, b []byte) []sseEvent {
	t.Helper()
	resp := post(t, srv, "/v1/responses", b)
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		all, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), all)
	}
	evs := parseSSE(t, resp.Body, time.Now())
	for i, e := range evs {
		if e.data.Get("sequence_number").Int() != int64(i) {
			t.Fatalf("event %d (%s) has sequence_number %d", i, e.name, e.data.Get("sequence_number").Int())
		}
	}
	if len(evs) < 3 || evs[0].name != "response.created" || evs[1].name != "response.in_progress" {
		t.Fatalf("the stream does not start with response.created, response.in_progress: %v", names(evs))
	}
	if last := evs[len(evs)-1].name; last != "response.completed" && last != "response.failed" {
		t.Fatalf("the stream ends with %s", last)
	}
	return evs
}

func names(evs []sseEvent) []string {
	var n []string
	for _, e := range evs {
		n = append(n, e.name)
	}
	return n
}

// streamedItems puts the items back together from their deltas, checks
// each against its *.done and output_item.done events, and returns the
// completed response's output.
func streamedItems(t *testing.T, evs []sseEvent) []gjson.Result {
	t.Helper()
	deltas := map[string]string{}
	for _, e := range evs {
		id := e.data.Get("item_id").Str
		switch e.name {
		case "response.output_text.delta", "response.function_call_arguments.delta", "response.custom_tool_call_input.delta":
			deltas[id] += e.data.Get("delta").Str
		case "response.output_text.done", "response.function_call_arguments.done", "response.custom_tool_call_input.done":
			field := map[string]string{"response.output_text.done": "text", "response.function_call_arguments.done": "arguments",
				"response.custom_tool_call_input.done": "input"}[e.name]
			if got := e.data.Get(field).Str; got != deltas[id] {
				t.Errorf("%s of %s: %q, the deltas made %q", e.name, id, got, deltas[id])
			}
		}
	}
	var done []gjson.Result
	for _, e := range evs {
		if e.name == "response.output_item.done" {
			done = append(done, e.data.Get("item"))
		}
	}
	out := evs[len(evs)-1].data.Get("response.output").Array()
	if len(out) != len(done) {
		t.Fatalf("response.completed has %d items, output_item.done came %d times", len(out), len(done))
	}
	for i := range out {
		if out[i].Raw != done[i].Raw {
			t.Errorf("item %d: completed %s, done %s", i, out[i].Raw, done[i].Raw)
		}
		var text string
		switch out[i].Get("type").Str {
		case "message":
			text = out[i].Get("content.0.text").Str
		case "function_call":
			text = out[i].Get("arguments").Str
		case "custom_tool_call":
			text = out[i].Get("input").Str
		}
		if text != deltas[out[i].Get("id").Str] {
			t.Errorf("item %d: %q, its deltas %q", i, text, deltas[out[i].Get("id").Str])
		}
	}
	return out
}

func TestResponsesDefaultScenario(t *testing.T) {
	sc, err := Load("default")
	if err != nil {
		t.Fatal(err)
	}
	srv := startSC(t, sc)

	// The fallback: its thinking block is left out, its text streamed a
	// word per delta.
	evs := responsesStream(t, srv, codexBody(true, nil, codexInput(userText("say hi"))))
	out := streamedItems(t, evs)
	if len(out) != 1 || out[0].Get("type").Str != "message" || out[0].Get("role").Str != "assistant" ||
		out[0].Get("content.0.text").Str != "Hello from the mock model. " {
		t.Fatalf("fallback: %v", out)
	}
	completed := evs[len(evs)-1].data.Get("response")
	if completed.Get("status").Str != "completed" || completed.Get("usage.total_tokens").Int() == 0 || !strings.HasPrefix(completed.Get("id").Str, "resp_") {
		t.Errorf("response.completed: %s", completed.Raw)
	}

	// BASH: exec_command in the working directory Codex reported; after
	// its output, the next step.
	out = streamedItems(t, responsesStream(t, srv, codexBody(true, nil, codexInput(userText("BASH please")))))
	if len(out) != 1 || out[0].Get("type").Str != "function_call" || out[0].Get("name").Str != "exec_command" ||
		gjson.Get(out[0].Get("arguments").Str, "cmd").Str != "touch /work/dir/bash_touched.txt && echo hi from bash" ||
		!strings.HasPrefix(out[0].Get("call_id").Str, "call_") {
		t.Fatalf("BASH: %v", out)
	}
	out = streamedItems(t, responsesStream(t, srv, codexBody(true, nil, codexInput(userText("BASH please"),
		call("exec_command", out[0].Get("arguments").Str), callOutput("hi from bash")))))
	if len(out) != 1 || out[0].Get("content.0.text").Str != "Done. " {
		t.Fatalf("BASH, step 2: %v", out)
	}
	// A Codex that offers shell instead runs the command through it.
	out = streamedItems(t, responsesStream(t, srv, codexBody(true, []string{"shell"}, codexInput(userText("BASHRO")))))
	if len(out) != 1 || out[0].Get("name").Str != "shell" || out[0].Get("arguments").Str != `{"command":["bash","-lc","echo hi from bash"]}` {
		t.Fatalf("BASHRO through shell: %v", out)
	}

	// WRITEFILE: the text, then the file added by apply_patch, a custom
	// tool (or a function taking the patch, where Codex offers that).
	patch := "*** Begin Patch\n*** Add File: /work/dir/written.txt\n+hello world\n*** End Patch\n"
	out = streamedItems(t, responsesStream(t, srv, codexBody(true, nil, codexInput(userText("WRITEFILE please")))))
	if len(out) != 2 || out[0].Get("content.0.text").Str != "I'll write the file. " ||
		out[1].Get("type").Str != "custom_tool_call" || out[1].Get("name").Str != "apply_patch" || out[1].Get("input").Str != patch {
		t.Fatalf("WRITEFILE: %v", out)
	}
	out = streamedItems(t, responsesStream(t, srv, codexBody(true, []string{"exec_command", "function:apply_patch"}, codexInput(userText("WRITEFILE")))))
	if len(out) != 2 || out[1].Get("type").Str != "function_call" || gjson.Get(out[1].Get("arguments").Str, "input").Str != patch {
		t.Fatalf("WRITEFILE through a function apply_patch: %v", out)
	}

	// EDITFILE: Read as cat, then the edit as an update hunk.
	out = streamedItems(t, responsesStream(t, srv, codexBody(true, nil, codexInput(userText("EDITFILE")))))
	if len(out) != 1 || gjson.Get(out[0].Get("arguments").Str, "cmd").Str != "cat '/work/dir/edit_target.txt'" {
		t.Fatalf("EDITFILE, step 1: %v", out)
	}
	out = streamedItems(t, responsesStream(t, srv, codexBody(true, nil, codexInput(userText("EDITFILE"),
		call("exec_command", "{}"), callOutput("line one\nline two\nline three\n")))))
	if len(out) != 1 || !strings.HasPrefix(out[0].Get("input").Str, "*** Begin Patch\n*** Update File: /work/dir/edit_target.txt\n@@\n-") ||
		!strings.HasSuffix(out[0].Get("input").Str, "\n*** End Patch\n") {
		t.Fatalf("EDITFILE, step 2: %v", out)
	}

	// Not streamed: the same response as one JSON object.
	resp := post(t, srv, "/v1/responses", codexBody(false, nil, codexInput(userText("say hi"))))
	all, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	r := gjson.ParseBytes(all)
	if resp.StatusCode != 200 || r.Get("object").Str != "response" || r.Get("status").Str != "completed" ||
		r.Get("output.0.content.0.text").Str != "Hello from the mock model. " || r.Get("usage.output_tokens").Int() == 0 {
		t.Errorf("not streamed: %d %s", resp.StatusCode, all)
	}

	reqs := srv.Requests()
	if last := reqs[len(reqs)-1]; last.Path != "/v1/responses" || last.Prompt != "say hi" || last.Rule != "fallback" || last.Status != 200 {
		t.Errorf("request log: %+v", last)
	}
}

func TestResponsesSlowStreamIsIncremental(t *testing.T) {
	srv := startScenario(t, `{"rules": [{"keyword": "SLOW", "steps": [{"delay_ms": 40, "blocks": [{"type": "text", "text": "a b c d"}]}]}]}`)
	evs := responsesStream(t, srv, codexBody(true, nil, codexInput(userText("SLOW"))))
	var at []time.Duration
	for _, e := range evs {
		if e.name == "response.output_text.delta" {
			at = append(at, e.at)
		}
	}
	if len(at) != 4 || at[3]-at[0] < 100*time.Millisecond {
		t.Errorf("deltas at %v: want 4, paced by delay_ms", at)
	}
}

func TestResponsesErrors(t *testing.T) {
	srv := startScenario(t, `{"rules": [
	  {"keyword": "RATE", "steps": [{"error": {"status": 429, "retry_after": 7}}]},
	  {"keyword": "AUTH", "steps": [{"error": {"status": 401, "message": "no key"}}]},
	  {"keyword": "MID", "steps": [{"blocks": [{"type": "text", "text": "partial answer"}], "error": {"in_stream": true, "type": "overloaded_error", "message": "boom"}}]}
	]}`)
	for _, tt := range []struct {
		kw, typ, msg string
		status       int
	}{
		{"RATE", "rate_limit_exceeded", "fake rate_limit_error (429)", 429},
		{"AUTH", "invalid_api_key", "no key", 401},
		{"MID", "server_error", "boom", 529},
	} {
		resp := post(t, srv, "/v1/responses", codexBody(tt.kw != "MID", nil, codexInput(userText(tt.kw))))
		all, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		e := gjson.ParseBytes(all)
		if resp.StatusCode != tt.status || e.Get("error.type").Str != tt.typ || e.Get("error.message").Str != tt.msg {
			t.Errorf("%s: %d %s", tt.kw, resp.StatusCode, all)
		}
		if tt.kw == "RATE" && resp.Header.Get("retry-after") != "7" {
			t.Errorf("429 without retry-after: %v", resp.Header)
		}
	}
	// Scripted in the stream: the text, then response.failed.
	evs := responsesStream(t, srv, codexBody(true, nil, codexInput(userText("MID"))))
	last := evs[len(evs)-1]
	if last.name != "response.failed" || last.data.Get("response.status").Str != "failed" || last.data.Get("response.error.message").Str != "boom" {
		t.Errorf("in-stream error: %s", last.data.Raw)
	}
	for _, e := range evs {
		if e.name == "response.output_item.done" && e.data.Get("item.content.0.text").Str != "partial answer" {
			t.Errorf("the text before the error: %s", e.data.Raw)
		}
	}
	// Malformed requests: a clear 400, never a hang.
	for _, b := range []string{"{not json", `{"model":"m"}`, `{"input":"a string"}`} {
		resp := post(t, srv, "/v1/responses", []byte(b))
		all, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || gjson.GetBytes(all, "error.type").Str != "invalid_request_error" {
			t.Errorf("%q: %d %s", b, resp.StatusCode, all)
		}
	}
}

func TestCodexConfig(t *testing.T) {
	srv := startScenario(t, `{"rules": [], "fallback": {"steps": [{"blocks": [{"type": "text", "text": "x"}]}]}}`)
	c := string(srv.CodexConfig("/work/a", `/odd "dir"\x`))
	for _, want := range []string{`model = "` + CodexModel + `"`, `model_provider = "ccbridge-fake"`, `[model_providers.ccbridge-fake]`,
		`base_url = "` + srv.URL() + `/v1"`, `wire_api = "responses"`,
		"[projects.\"/work/a\"]\ntrust_level = \"trusted\"",
		`[projects."/odd \"dir\"\\x"]`} {
		if !strings.Contains(c, want+"\n") {
			t.Errorf("config.toml lacks %q:\n%s", want, c)
		}
	}
	if got := tomlString("a\tb\x7f"); got != `"a\u0009b\u007F"` {
		t.Errorf("tomlString: %s", got)
	}
}
