package fakemodel

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// geminiContext is the context part Gemini CLI 0.61.0 puts before the
// prompt, in the prompt's turn (trimmed).
const geminiContext = "<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\n" +
	"- **Workspace Directories:**\n  - /work/dir\n- **Directory Structure:**\n\n/work/dir/\n\n</session_context>"

func gUser(parts ...any) map[string]any { return map[string]any{"role": "user", "parts": parts} }
func gModel(parts ...any) map[string]any {
	return map[string]any{"role": "model", "parts": parts}
}
func gText(s string) map[string]any { return map[string]any{"text": s} }
func gCall(name string, args map[string]any) map[string]any {
	return map[string]any{"functionCall": map[string]any{"name": name, "args": args}}
}
func gResponse(name string, resp map[string]any) map[string]any {
	return map[string]any{"functionResponse": map[string]any{"id": "x", "name": name, "response": resp}}
}

// geminiBody is a request as Gemini CLI makes it: its context and the
// prompt in the first user turn, then the given contents; the tools it
// declares (by default those a scenario's tools map onto).
func geminiBody(tools []string, prompt string, more ...any) []byte {
	if tools == nil {
		tools = []string{"read_file", "replace", "write_file", "run_shell_command"}
	}
	var decls []any
	for _, n := range tools {
		decls = append(decls, map[string]any{"name": n, "parametersJsonSchema": map[string]any{"type": "object"}})
	}
	contents := append([]any{gUser(gText(geminiContext), gText(prompt))}, more...)
	body := map[string]any{"contents": contents, "systemInstruction": map[string]any{"parts": []any{gText("You are Gemini CLI.")}},
		"generationConfig": map[string]any{"temperature": 1}}
	if len(decls) > 0 {
		body["tools"] = []any{map[string]any{"functionDeclarations": decls}}
	}
	b, _ := json.Marshal(body)
	return b
}

func TestGeminiAnalyze(t *testing.T) {
	for _, tt := range []struct {
		name       string
		body       []byte
		prompt     string
		step       int
		toolResult string
	}{
		{"prompt after the context", geminiBody(nil, "BASH please"), "BASH please", 0, ""},
		{"after a call", geminiBody(nil, "BASH please", gModel(gCall("run_shell_command", map[string]any{"command": "ls"})),
			gUser(gResponse("run_shell_command", map[string]any{"output": "a.txt"}))), "BASH please", 1, "a.txt"},
		{"a turn split over two model contents counts once", geminiBody(nil, "P",
			gModel(gText("Reading. ")), gModel(gCall("read_file", nil), gCall("read_file", nil)),
			gUser(gResponse("read_file", map[string]any{"output": "one"}), gResponse("read_file", map[string]any{"error": "two failed"})),
			gModel(gCall("write_file", nil)), gUser(gResponse("write_file", map[string]any{"result": 1}))),
			"P", 2, `{"result":1}`},
		{"the next prompt starts again", geminiBody(nil, "first", gModel(gText("Done.")), gUser(gText("second"))), "second", 0, ""},
		{"a tag block alone is no prompt", geminiBody(nil, "real prompt", gModel(gText("ok")), gUser(gText("<session_context>x</session_context>"))),
			"real prompt", 1, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			info := analyzeGemini(tt.body, "gemini-x", true)
			if info.prompt != tt.prompt || info.step != tt.step || info.toolResult != tt.toolResult || info.cwd != "/work/dir" ||
				info.model != "gemini-x" || !info.stream {
				t.Errorf("got %+v, want prompt %q step %d toolResult %q cwd /work/dir", info, tt.prompt, tt.step, tt.toolResult)
			}
		})
	}
	img := geminiBody(nil, "IMAGECHECK", gUser(map[string]any{"inlineData": map[string]any{"mimeType": "image/png", "data": "AA=="}}, gText("look")))
	if info := analyzeGemini(img, "m", false); info.images != 1 || info.prompt != "look" {
		t.Errorf("an image: %+v", info)
	}
	if d := workspaceDir("<session_context>\n- **Workspace Directories:**\n  - relative\n</session_context>"); d != "" {
		t.Errorf("workspaceDir took a relative path: %q", d)
	}
}

// geminiChunks posts a streaming request (alt=sse) and returns the data
// of each event, checking the invariants: 200, event-stream, one JSON
// object per data line and nothing else, the finish on the last chunk
// only.
func geminiChunks(t *testing.T, srv *Server, body []byte) []gjson.Result {
	t.Helper()
	resp := post(t, srv, "/v1beta/models/"+GeminiModel+":streamGenerateContent?alt=sse", body)
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		all, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), all)
	}
	var chunks []gjson.Result
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || !gjson.Valid(data) {
			t.Fatalf("not a data line of JSON: %q", line)
		}
		chunks = append(chunks, gjson.Parse(data))
	}
	for i, c := range chunks {
		last := i == len(chunks)-1
		if c.Get("error").Exists() {
			if !last {
				t.Fatalf("an error before the end: %s", c.Raw)
			}
			continue
		}
		if fin := c.Get("candidates.0.finishReason").Exists(); fin != last || c.Get("usageMetadata").Exists() != last {
			t.Fatalf("chunk %d of %d: finishReason or usage misplaced: %s", i, len(chunks), c.Raw)
		}
		if c.Get("candidates.0.content.role").Str != "model" || c.Get("modelVersion").Str == "" {
			t.Fatalf("chunk %d: %s", i, c.Raw)
		}
	}
	return chunks
}

// geminiStreamed is the parts of a stream put together: consecutive text
// pieces as one text, each function call as it came.
func geminiStreamed(chunks []gjson.Result) []gjson.Result {
	var parts []string
	text := ""
	flush := func() {
		if text != "" {
			parts = append(parts, string(jsonString(text)))
			parts[len(parts)-1] = `{"text":` + parts[len(parts)-1] + `}`
			text = ""
		}
	}
	for _, c := range chunks {
		c.Get("candidates.0.content.parts").ForEach(func(_, p gjson.Result) bool {
			if t := p.Get("text"); t.Exists() {
				text += t.Str
			} else {
				flush()
				parts = append(parts, p.Raw)
			}
			return true
		})
	}
	flush()
	return gjson.Parse("[" + strings.Join(parts, ",") + "]").Array()
}

func TestGeminiDefaultScenario(t *testing.T) {
	sc, err := Load("default")
	if err != nil {
		t.Fatal(err)
	}
	srv := startSC(t, sc)

	// The fallback: its thinking block left out, its text a word per
	// chunk, STOP and the usage on the last.
	chunks := geminiChunks(t, srv, geminiBody(nil, "say hi"))
	if len(chunks) != 5 || chunks[0].Get("candidates.0.content.parts.0.text").Str != "Hello " {
		t.Fatalf("fallback: %v", chunks)
	}
	last := chunks[len(chunks)-1]
	if last.Get("candidates.0.finishReason").Str != "STOP" || last.Get("usageMetadata.totalTokenCount").Int() != 32 {
		t.Errorf("the last chunk: %s", last.Raw)
	}
	if p := geminiStreamed(chunks); len(p) != 1 || p[0].Get("text").Str != "Hello from the mock model. " {
		t.Errorf("fallback: %v", p)
	}

	// WRITEFILE: the text, then write_file in the working directory the
	// context names, whole in one chunk.
	p := geminiStreamed(geminiChunks(t, srv, geminiBody(nil, "WRITEFILE please")))
	if len(p) != 2 || p[0].Get("text").Str != "I'll write the file. " || p[1].Get("functionCall.name").Str != "write_file" ||
		p[1].Get("functionCall.args").Raw != `{"file_path":"/work/dir/written.txt","content":"hello world\n"}` {
		t.Fatalf("WRITEFILE: %v", p)
	}
	p = geminiStreamed(geminiChunks(t, srv, geminiBody(nil, "WRITEFILE please", gModel(gText("I'll write the file. "), gCall("write_file", nil)),
		gUser(gResponse("write_file", map[string]any{"output": "Successfully created and wrote to new file"})))))
	if len(p) != 1 || p[0].Get("text").Str != "Done. " {
		t.Fatalf("WRITEFILE, step 1: %v", p)
	}

	// BASH: run_shell_command with the command and its description.
	p = geminiStreamed(geminiChunks(t, srv, geminiBody(nil, "BASH")))
	if len(p) != 1 || p[0].Get("functionCall.name").Str != "run_shell_command" ||
		p[0].Get("functionCall.args").Raw != `{"command":"touch /work/dir/bash_touched.txt && echo hi from bash","description":"Touch a file and say hi"}` {
		t.Fatalf("BASH: %v", p)
	}

	// EDITFILE: read_file, then replace, with the instruction the
	// declaration requires.
	p = geminiStreamed(geminiChunks(t, srv, geminiBody(nil, "EDITFILE")))
	if len(p) != 1 || p[0].Get("functionCall.name").Str != "read_file" || p[0].Get("functionCall.args").Raw != `{"file_path":"/work/dir/edit_target.txt"}` {
		t.Fatalf("EDITFILE, step 0: %v", p)
	}
	p = geminiStreamed(geminiChunks(t, srv, geminiBody(nil, "EDITFILE", gModel(gCall("read_file", nil)),
		gUser(gResponse("read_file", map[string]any{"output": "line one\nline two\n"})))))
	args := p[0].Get("functionCall.args")
	if len(p) != 1 || p[0].Get("functionCall.name").Str != "replace" || args.Get("file_path").Str != "/work/dir/edit_target.txt" ||
		args.Get("old_string").Str != "line two" || args.Get("new_string").Str != "line 2 (edited)" || args.Get("instruction").Str == "" ||
		args.Get("allow_multiple").Exists() {
		t.Fatalf("EDITFILE, step 1: %v", p)
	}

	// A tool the mapping does not know is called by its name.
	srv2 := startScenario(t, `{"rules": [{"keyword": "ASK", "steps": [{"blocks": [{"type": "tool_use", "name": "ask_user", "input": {"questions": []}}]}, {"blocks": [{"type": "text", "text": "ok"}]}]}]}`)
	p = geminiStreamed(geminiChunks(t, srv2, geminiBody(nil, "ASK")))
	if len(p) != 1 || p[0].Get("functionCall.name").Str != "ask_user" || p[0].Get("functionCall.args").Raw != `{"questions":[]}` {
		t.Fatalf("another tool: %v", p)
	}

	// A request that declares no tools (a side call of the CLI's) gets
	// the text only.
	p = geminiStreamed(geminiChunks(t, srv, geminiBody([]string{}, "Summarize: User: WRITEFILE please")))
	if len(p) != 1 || p[0].Get("text").Str != "I'll write the file. " {
		t.Fatalf("WRITEFILE with no tools declared: %v", p)
	}

	// Not streamed: every part in one response.
	resp := post(t, srv, "/v1beta/models/gemini-x:generateContent", geminiBody(nil, "WRITEFILE"))
	all, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	r := gjson.ParseBytes(all)
	if resp.StatusCode != 200 || r.Get("candidates.0.content.parts.#").Int() != 2 || r.Get("candidates.0.content.parts.1.functionCall.name").Str != "write_file" ||
		r.Get("candidates.0.finishReason").Str != "STOP" || r.Get("modelVersion").Str != "gemini-x" || r.Get("usageMetadata.promptTokenCount").Int() == 0 {
		t.Errorf("not streamed: %d %s", resp.StatusCode, all)
	}
	// Streamed without alt=sse: one JSON array of the chunks.
	resp = post(t, srv, "/v1beta/models/gemini-x:streamGenerateContent", geminiBody(nil, "say hi"))
	all, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if arr := gjson.ParseBytes(all); resp.StatusCode != 200 || !gjson.ValidBytes(all) || !arr.IsArray() || len(arr.Array()) != 5 {
		t.Errorf("a stream without alt=sse: %d %s", resp.StatusCode, all)
	}
	// countTokens.
	resp = post(t, srv, "/v1beta/models/gemini-x:countTokens", geminiBody(nil, "x"))
	all, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || gjson.GetBytes(all, "totalTokens").Int() < 1 {
		t.Errorf("countTokens: %d %s", resp.StatusCode, all)
	}

	reqs := srv.Requests()
	if l := reqs[len(reqs)-2]; l.Path != "/v1beta/models/gemini-x:streamGenerateContent" || l.Prompt != "say hi" || l.Rule != "fallback" ||
		l.Model != "gemini-x" || !l.Stream || l.Status != 200 {
		t.Errorf("request log: %+v", l)
	}
}

func TestGeminiSlowStreamIsIncremental(t *testing.T) {
	srv := startScenario(t, `{"rules": [{"keyword": "SLOW", "steps": [{"delay_ms": 40, "blocks": [{"type": "text", "text": "a b c d"}]}]}]}`)
	resp := post(t, srv, "/v1beta/models/m:streamGenerateContent?alt=sse", geminiBody(nil, "SLOW"))
	defer resp.Body.Close()
	start := time.Now()
	var at []time.Duration
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") {
			at = append(at, time.Since(start))
		}
	}
	if len(at) != 4 || at[3]-at[0] < 100*time.Millisecond {
		t.Errorf("chunks at %v: want 4, paced by delay_ms", at)
	}
}

func TestGeminiErrors(t *testing.T) {
	srv := startScenario(t, `{"rules": [
	  {"keyword": "RATE", "steps": [{"error": {"status": 429, "retry_after": 7}}]},
	  {"keyword": "BAD", "steps": [{"error": {"status": 400, "message": "mock invalid_request_error (400)"}}]},
	  {"keyword": "BUSY", "steps": [{"error": {"status": 529}}]},
	  {"keyword": "MID", "steps": [{"blocks": [{"type": "text", "text": "partial answer"}], "error": {"in_stream": true, "type": "api_error", "message": "boom"}}]}
	]}`)
	for _, tt := range []struct {
		kw, status, msg string
		code            int
	}{
		{"RATE", "RESOURCE_EXHAUSTED", "fake rate_limit_error (429)", 429},
		{"BAD", "INVALID_ARGUMENT", "mock invalid_request_error (400)", 400},
		{"BUSY", "UNAVAILABLE", "fake overloaded_error (529)", 529},
		{"MID", "INTERNAL", "boom", 500}, // not streamed: the HTTP error
	} {
		resp := post(t, srv, "/v1beta/models/m:generateContent", geminiBody(nil, tt.kw))
		all, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		e := gjson.ParseBytes(all)
		if resp.StatusCode != tt.code || e.Get("error.code").Int() != int64(tt.code) || e.Get("error.status").Str != tt.status ||
			e.Get("error.message").Str != tt.msg {
			t.Errorf("%s: %d %s", tt.kw, resp.StatusCode, all)
		}
		if tt.kw == "RATE" && resp.Header.Get("retry-after") != "7" {
			t.Errorf("429 without retry-after: %v", resp.Header)
		}
	}
	// Streamed, an HTTP error is still one.
	resp := post(t, srv, "/v1beta/models/m:streamGenerateContent?alt=sse", geminiBody(nil, "BAD"))
	all, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || gjson.GetBytes(all, "error.status").Str != "INVALID_ARGUMENT" {
		t.Errorf("BAD streamed: %d %s", resp.StatusCode, all)
	}
	// Scripted in the stream: the text, then the error as the last data.
	chunks := geminiChunks(t, srv, geminiBody(nil, "MID"))
	if len(chunks) != 3 || chunks[0].Get("candidates.0.content.parts.0.text").Str != "partial " ||
		chunks[2].Get("error.message").Str != "boom" || chunks[2].Get("error.code").Int() != 500 {
		t.Errorf("in-stream error: %v", chunks)
	}
	// Malformed requests and unknown methods: a clear error in Google's
	// shape, never a hang.
	for path, b := range map[string]string{
		"/v1beta/models/m:generateContent":       "{not json",
		"/v1beta/models/m:streamGenerateContent": `{"contents":"a string"}`,
		"/v1beta/models/m:embedContent":          `{"content":{"parts":[]}}`,
	} {
		resp := post(t, srv, path, []byte(b))
		all, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := 400
		if strings.HasSuffix(path, "embedContent") {
			want = 404
		}
		if resp.StatusCode != want || gjson.GetBytes(all, "error.code").Int() != int64(want) || !strings.HasPrefix(gjson.GetBytes(all, "error.message").Str, "fake model: ") {
			t.Errorf("%s %q: %d %s", path, b, resp.StatusCode, all)
		}
	}
}

func TestGeminiSettings(t *testing.T) {
	srv := startScenario(t, `{"rules": [], "fallback": {"steps": [{"blocks": [{"type": "text", "text": "x"}]}]}}`)
	s := srv.GeminiSettings()
	if !gjson.ValidBytes(s) {
		t.Fatalf("settings.json is not JSON:\n%s", s)
	}
	for path, want := range map[string]string{
		"security.auth.selectedType":           "gemini-api-key",
		"model.name":                           GeminiModel,
		"general.enableAutoUpdate":             "false",
		"general.enableAutoUpdateNotification": "false",
		"privacy.usageStatisticsEnabled":       "false",
		"ide.hasSeenNudge":                     "true",
	} {
		if got := gjson.GetBytes(s, path).String(); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	env := strings.Join(srv.GeminiEnv("/h"), "\n")
	for _, want := range []string{"GEMINI_CLI_HOME=/h", "GOOGLE_GEMINI_BASE_URL=" + srv.URL(), "GEMINI_API_KEY=" + GeminiAPIKey, "GEMINI_CLI_TRUST_WORKSPACE=true"} {
		if !strings.Contains(env+"\n", want+"\n") {
			t.Errorf("GeminiEnv lacks %s:\n%s", want, env)
		}
	}
}
