package fakemodel

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	name string
	data gjson.Result
	at   time.Duration // since the request was sent
}

func startScenario(t *testing.T, js string) *Server {
	t.Helper()
	sc, err := Parse([]byte(js))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return startSC(t, sc)
}

func startSC(t *testing.T, sc *Scenario) *Server {
	t.Helper()
	srv, err := Start(sc, nil)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return srv
}

// msg builds one message; content is a string or a slice of blocks.
func msg(role string, content any) map[string]any {
	return map[string]any{"role": role, "content": content}
}

func text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func toolResult(id, s string) map[string]any {
	return map[string]any{"type": "tool_result", "tool_use_id": id, "content": s}
}

func toolUse(id, name string) map[string]any {
	return map[string]any{"type": "tool_use", "id": id, "name": name, "input": map[string]any{}}
}

var image = map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}

const envSection = "# Environment\nYou have been invoked in the following environment: \n - Primary working directory: /work/dir \"q\"\n - Is a git repository: false\n"

// body builds a request like the CLI's: a system prompt, the messages and
// a role:"system" environment message after the first user message.
func body(stream bool, msgs ...map[string]any) []byte {
	all := []map[string]any{}
	for i, m := range msgs {
		all = append(all, m)
		if i == 0 {
			all = append(all, msg("system", []any{text(envSection)}))
		}
	}
	b, _ := json.Marshal(map[string]any{
		"model":      "claude-opus-5-5",
		"max_tokens": 1000,
		"stream":     stream,
		"system":     []any{text("You are a test.")},
		"messages":   all,
	})
	return b
}

func prompt(s string) map[string]any {
	return msg("user", []any{text("<system-reminder>\nreminder WRITEFILE\n</system-reminder>\n"), text(s)})
}

func post(t *testing.T, srv *Server, path string, b []byte) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL()+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", APIKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	return resp
}

// stream posts a streaming request and parses all events.
func stream(t *testing.T, srv *Server, b []byte) []sseEvent {
	t.Helper()
	start := time.Now()
	resp := post(t, srv, "/v1/messages?beta=true", b)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		all, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, all)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type %q", ct)
	}
	return parseSSE(t, resp.Body, start)
}

func parseSSE(t *testing.T, r io.Reader, start time.Time) []sseEvent {
	t.Helper()
	var evs []sseEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var name string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data := strings.TrimPrefix(line, "data: ")
			if !gjson.Valid(data) {
				t.Fatalf("invalid JSON in data line: %s", data)
			}
			d := gjson.Parse(data)
			if d.Get("type").String() != name {
				t.Fatalf("event %q carries data of type %q", name, d.Get("type").String())
			}
			evs = append(evs, sseEvent{name: name, data: d, at: time.Since(start)})
		case line == "":
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading SSE: %v", err)
	}
	return evs
}

// assembled is a streamed message put back together.
type assembled struct {
	id         string
	blocks     []map[string]any
	deltas     []int // deltas per block
	stopReason string
	inTokens   int64
	outTokens  int64
	errType    string
}

func assemble(t *testing.T, evs []sseEvent) assembled {
	t.Helper()
	var a assembled
	if len(evs) == 0 || evs[0].name != "message_start" {
		t.Fatalf("first event is not message_start: %+v", evs)
	}
	a.id = evs[0].data.Get("message.id").String()
	a.inTokens = evs[0].data.Get("message.usage.input_tokens").Int()
	partial := map[int]*strings.Builder{}
	open := -1
	for i, ev := range evs[1:] {
		switch ev.name {
		case "content_block_start":
			idx := int(ev.data.Get("index").Int())
			if open != -1 || idx != len(a.blocks) {
				t.Fatalf("event %d: block %d starts while %d is open / %d blocks seen", i, idx, open, len(a.blocks))
			}
			open = idx
			var blk map[string]any
			json.Unmarshal([]byte(ev.data.Get("content_block").Raw), &blk)
			a.blocks = append(a.blocks, blk)
			a.deltas = append(a.deltas, 0)
			partial[idx] = &strings.Builder{}
		case "content_block_delta":
			idx := int(ev.data.Get("index").Int())
			if idx != open {
				t.Fatalf("delta for block %d while %d is open", idx, open)
			}
			a.deltas[idx]++
			d := ev.data.Get("delta")
			blk := a.blocks[idx]
			switch d.Get("type").String() {
			case "text_delta":
				blk["text"] = blk["text"].(string) + d.Get("text").String()
			case "thinking_delta":
				blk["thinking"] = blk["thinking"].(string) + d.Get("thinking").String()
			case "signature_delta":
				blk["signature"] = blk["signature"].(string) + d.Get("signature").String()
			case "input_json_delta":
				partial[idx].WriteString(d.Get("partial_json").String())
			default:
				t.Fatalf("unknown delta %s", d.Raw)
			}
		case "content_block_stop":
			idx := int(ev.data.Get("index").Int())
			if idx != open {
				t.Fatalf("stop for block %d while %d is open", idx, open)
			}
			if a.blocks[idx]["type"] == "tool_use" {
				var in map[string]any
				if err := json.Unmarshal([]byte(partial[idx].String()), &in); err != nil {
					t.Fatalf("tool input %q: %v", partial[idx].String(), err)
				}
				a.blocks[idx]["input"] = in
			}
			open = -1
		case "message_delta":
			a.stopReason = ev.data.Get("delta.stop_reason").String()
			a.outTokens = ev.data.Get("usage.output_tokens").Int()
		case "message_stop":
			if i != len(evs)-2 {
				t.Fatalf("message_stop is not last")
			}
		case "error":
			a.errType = ev.data.Get("error.type").String()
			if i != len(evs)-2 {
				t.Fatalf("error event is not last")
			}
		case "ping":
		default:
			t.Fatalf("unknown event %q", ev.name)
		}
	}
	if open != -1 {
		t.Fatalf("block %d never stopped", open)
	}
	return a
}

func TestStreamEveryBlockKind(t *testing.T) {
	srv := startScenario(t, `{
	  "ping": true,
	  "rules": [{"keyword": "ALL", "steps": [
	    {"blocks": [
	      {"type": "thinking", "thinking": "Deep thought about {{arg}}.", "signature": "sig-1", "chunk_size": 5},
	      {"type": "redacted_thinking", "data": "opaque"},
	      {"type": "text", "text": "Hello from {{cwd}} with <html> & \"quotes\". "},
	      {"type": "tool_use", "name": "Write", "id": "toolu_fixed", "input": {"file_path": "{{cwd}}/a.txt", "content": "x\n", "n": 3, "nested": {"list": [1, "{{step}}"]}}},
	      {"type": "tool_use", "name": "Read", "input": {"file_path": "{{cwd}}/b.txt"}, "chunk_size": 4}
	    ]},
	    {"blocks": [{"type": "text", "text": "done"}]}
	  ]}]
	}`)
	evs := stream(t, srv, body(true, prompt("please ALL things")))
	if evs[1].name != "ping" {
		t.Errorf("second event %q, want ping", evs[1].name)
	}
	a := assemble(t, evs)
	if !strings.HasPrefix(a.id, "msg_") {
		t.Errorf("message id %q", a.id)
	}
	if a.stopReason != "tool_use" || a.inTokens != 12 || a.outTokens != 20 {
		t.Errorf("stop %q usage %d/%d", a.stopReason, a.inTokens, a.outTokens)
	}
	cwd := `/work/dir "q"`
	want := []map[string]any{
		{"type": "thinking", "thinking": "Deep thought about things.", "signature": "sig-1"},
		{"type": "redacted_thinking", "data": "opaque"},
		{"type": "text", "text": "Hello from " + cwd + ` with <html> & "quotes". `},
		{"type": "tool_use", "id": "toolu_fixed", "name": "Write", "input": map[string]any{"file_path": cwd + "/a.txt", "content": "x\n", "n": 3.0, "nested": map[string]any{"list": []any{1.0, "0"}}}},
		{"type": "tool_use", "name": "Read", "input": map[string]any{"file_path": cwd + "/b.txt"}},
	}
	if len(a.blocks) != len(want) {
		t.Fatalf("got %d blocks: %v", len(a.blocks), a.blocks)
	}
	for i := range want {
		got := a.blocks[i]
		if want[i]["type"] == "tool_use" && want[i]["id"] == nil {
			if id, _ := got["id"].(string); !strings.HasPrefix(id, "toolu_") || len(id) < 20 {
				t.Errorf("block %d: generated id %q", i, id)
			}
			delete(got, "id")
		}
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want[i])
		if string(gj) != string(wj) {
			t.Errorf("block %d:\n got %s\nwant %s", i, gj, wj)
		}
	}
	// Thinking in 5-byte chunks plus the signature; text a word per delta;
	// tool input in two halves by default, 4-byte chunks when asked.
	if a.deltas[0] != 6+1 || a.deltas[1] != 0 || a.deltas[2] != 8 || a.deltas[3] != 2 || a.deltas[4] < 8 {
		t.Errorf("deltas per block %v", a.deltas)
	}
}

func TestNonStreaming(t *testing.T) {
	srv := startScenario(t, `{"rules": [{"keyword": "X", "steps": [{"usage": {"input_tokens": 7, "output_tokens": 9}, "stop_reason": "max_tokens", "blocks": [
	  {"type": "thinking", "thinking": "hmm"},
	  {"type": "text", "text": "plain {{model}}"},
	  {"type": "tool_use", "name": "Bash", "input": {"command": "ls"}}
	]}], "loop": true}]}`)
	resp := post(t, srv, "/v1/messages", body(false, prompt("X")))
	defer resp.Body.Close()
	all, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("status %d type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	m := gjson.ParseBytes(all)
	checks := map[string]string{
		"type":                    "message",
		"role":                    "assistant",
		"model":                   "claude-opus-5-5",
		"stop_reason":             "max_tokens",
		"usage.input_tokens":      "7",
		"usage.output_tokens":     "9",
		"content.0.type":          "thinking",
		"content.0.signature":     "sig",
		"content.1.text":          "plain claude-opus-5-5",
		"content.2.name":          "Bash",
		"content.2.input.command": "ls",
	}
	for path, want := range checks {
		if got := m.Get(path).String(); got != want {
			t.Errorf("%s = %q, want %q (body %s)", path, got, want, all)
		}
	}
}

func TestAnalyzeStepAndPrompt(t *testing.T) {
	tests := []struct {
		name   string
		msgs   []map[string]any
		prompt string
		step   int
	}{
		{"first call", []map[string]any{prompt("DO it")}, "DO it", 0},
		{"string content", []map[string]any{msg("user", "plain DO")}, "plain DO", 0},
		{"after one tool round", []map[string]any{
			prompt("DO it"), msg("assistant", []any{toolUse("t1", "Read")}), msg("user", []any{toolResult("t1", "ok")}),
		}, "DO it", 1},
		{"split assistant messages count once", []map[string]any{
			prompt("DO it"), msg("assistant", []any{text("a")}), msg("assistant", []any{toolUse("t1", "Read"), toolUse("t2", "Read")}),
			msg("user", []any{toolResult("t1", "ok")}), msg("user", []any{toolResult("t2", "ok")}),
			msg("assistant", []any{toolUse("t3", "Read")}), msg("user", []any{toolResult("t3", "ok"), text("<system-reminder>x</system-reminder>")}),
		}, "DO it", 2},
		{"reminder-only user message does not reset", []map[string]any{
			prompt("DO it"), msg("assistant", []any{text("a")}), msg("user", []any{text("<system-reminder>\nnotification\n</system-reminder>")}),
		}, "DO it", 1},
		{"new prompt resets", []map[string]any{
			prompt("OLD"), msg("assistant", []any{text("a")}), prompt("NEW one"),
		}, "NEW one", 0},
		{"failed prompt merged into the next: last text wins", []map[string]any{
			msg("user", []any{text("<system-reminder>r</system-reminder>"), text("APIERR400 now\n"), text("hello after")}),
		}, "hello after", 0},
		{"image annotation is skipped", []map[string]any{
			msg("user", []any{text("IMAGECHECK what"), image, text("[Image: source: /tmp/x.png]")}),
		}, "IMAGECHECK what", 0},
		{"slash command wrappers", []map[string]any{
			msg("user", []any{text("<local-command-caveat>c</local-command-caveat>"), text("<command-name>/context</command-name>"), text("<local-command-stdout>out</local-command-stdout>"), text("hello two")}),
		}, "hello two", 0},
		{"no prompt at all", []map[string]any{
			msg("user", []any{text("<system-reminder>x</system-reminder>")}), msg("assistant", []any{text("a")}),
		}, "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info := analyze(body(true, tt.msgs...))
			if info.prompt != tt.prompt || info.step != tt.step {
				t.Errorf("prompt %q step %d, want %q step %d", info.prompt, info.step, tt.prompt, tt.step)
			}
			if info.cwd != `/work/dir "q"` {
				t.Errorf("cwd %q", info.cwd)
			}
		})
	}
}

func TestAnalyzeImagesAndToolResult(t *testing.T) {
	info := analyze(body(true,
		msg("user", []any{text("look"), image, image}),
		msg("assistant", []any{toolUse("t1", "Read")}),
		msg("user", []any{map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": []any{text("file text"), image}}}),
	))
	if info.images != 3 || info.toolResult != "file text" || info.step != 1 {
		t.Errorf("images %d toolResult %q step %d", info.images, info.toolResult, info.step)
	}
	if info := analyze([]byte(`{"messages":[{"role":"user","content":"hi"}]}`)); info.cwd != "" {
		t.Errorf("cwd %q without environment section", info.cwd)
	}
}

func TestRuleMatching(t *testing.T) {
	sc, err := Parse([]byte(`{"rules": [
	  {"keyword": "BASH", "steps": [{"blocks": [{"type": "text", "text": "bash {{arg}}"}]}]},
	  {"keyword": "BASHRO", "steps": [{"blocks": [{"type": "text", "text": "bashro"}]}]},
	  {"regex": "size=(\\d+)", "steps": [{"blocks": [{"type": "text", "text": "re {{arg}}"}]}]},
	  {"contains": "make a", "model": "haiku", "steps": [{"blocks": [{"type": "text", "text": "contains {{arg}}"}]}]}
	], "fallback": {"steps": [{"blocks": [{"type": "text", "text": "fallback {{arg|none}}"}]}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := startSC(t, sc)
	tests := []struct{ prompt, model, want string }{
		{"BASH now", "", "bash now"},
		{"run BASH", "", "bash "},
		{"BASHRO now", "", "bashro"},
		{"xBASH", "", "fallback none"},
		{"BASH_X", "", "fallback none"},
		{"(BASH) x", "", "bash )"},
		{"bash", "", "fallback none"},
		{"with size=42 please", "", "re 42"},
		{"make a cake", "claude-haiku-4-5", "contains cake"},
		{"make a cake", "claude-opus-5-5", "fallback none"},
	}
	for _, tt := range tests {
		info := requestInfo{prompt: tt.prompt, model: tt.model}
		_, st, arg := srv.choose(&info)
		v := &vars{arg: arg}
		got := sc.render(st, v).blocks[0].text
		if got != tt.want {
			t.Errorf("prompt %q model %q: got %q, want %q", tt.prompt, tt.model, got, tt.want)
		}
	}
}

func TestStepsOverHTTP(t *testing.T) {
	srv := startScenario(t, `{"rules": [{"keyword": "TWO", "steps": [
	  {"blocks": [{"type": "tool_use", "name": "Read", "input": {"file_path": "a"}}]},
	  {"blocks": [{"type": "tool_use", "name": "Read", "input": {"file_path": "{{tool_result}}"}}]},
	  {"blocks": [{"type": "text", "text": "final"}]}
	]}]}`)
	history := []map[string]any{prompt("TWO")}
	var names []string
	for i := 0; i < 4; i++ {
		a := assemble(t, stream(t, srv, body(true, history...)))
		blk := a.blocks[0]
		if blk["type"] == "text" {
			names = append(names, blk["text"].(string))
			history = append(history, msg("assistant", []any{blk}))
			history = append(history, prompt("TWO again"))
			continue
		}
		names = append(names, blk["name"].(string)+":"+blk["input"].(map[string]any)["file_path"].(string))
		history = append(history, msg("assistant", []any{blk}))
		history = append(history, msg("user", []any{toolResult(blk["id"].(string), fmt.Sprintf("r%d", i))}))
	}
	want := "Read:a Read:r0 final Read:a"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	log := srv.Requests()
	if len(log) != 4 || log[1].Step != 1 || log[2].Step != 2 || log[3].Step != 0 || log[2].Rule != "TWO" || log[3].Prompt != "TWO again" {
		t.Errorf("request log %+v", log)
	}
}

func TestDefaultScenario(t *testing.T) {
	sc, err := Load("default")
	if err != nil {
		t.Fatal(err)
	}
	srv := startSC(t, sc)
	toolAt0 := map[string]string{
		"WRITEFILE": "Write", "BASH": "Bash", "BASHRO": "Bash", "EDITFILE": "Read", "READMISSING": "Read",
		"ASKUSER": "AskUserQuestion", "ASKMULTI": "AskUserQuestion", "SUBAGENT": "Agent", "SUBWORK:": "Read",
		"SLOWTOOL": "Bash", "SLEEP40": "Bash", "TOOLSTEPS": "Bash", "STEER": "Bash", "LOOPREAD": "Read", "EXITPLAN": "ExitPlanMode",
		"MCPECHO": "mcp__sdkmcp__echo", "ELICIT": "mcp__elicit__ask",
	}
	for kw, tool := range toolAt0 {
		a := assemble(t, stream(t, srv, body(true, prompt(kw+" please"))))
		last := a.blocks[len(a.blocks)-1]
		if last["type"] != "tool_use" || last["name"] != tool || a.stopReason != "tool_use" {
			t.Errorf("%s: step 0 ends with %v (stop %s), want tool %s", kw, last, a.stopReason, tool)
		}
		if fp, ok := last["input"].(map[string]any)["file_path"].(string); ok && !strings.HasPrefix(fp, `/work/dir "q"/`) {
			t.Errorf("%s: file_path %q not in the cwd", kw, fp)
		}
	}
	// Transcript-exact inputs.
	a := assemble(t, stream(t, srv, body(true, prompt("WRITEFILE please"))))
	if a.blocks[0]["text"] != "I'll write the file. " || a.blocks[1]["input"].(map[string]any)["content"] != "hello world\n" {
		t.Errorf("WRITEFILE: %v", a.blocks)
	}
	a = assemble(t, stream(t, srv, body(true, prompt("PARALLEL please"))))
	if len(a.blocks) != 4 {
		t.Errorf("PARALLEL: %d blocks", len(a.blocks))
	}
	a = assemble(t, stream(t, srv, body(true, prompt("ASKMULTI please"))))
	if q := a.blocks[0]["input"].(map[string]any)["questions"].([]any)[0].(map[string]any); q["multiSelect"] != true {
		t.Errorf("ASKMULTI: %v", q)
	}
	// EDITFILE: Read, Edit, text.
	h := []map[string]any{prompt("EDITFILE")}
	for i, want := range []string{"Read", "Edit"} {
		a := assemble(t, stream(t, srv, body(true, h...)))
		if a.blocks[0]["name"] != want {
			t.Errorf("EDITFILE step %d: %v", i, a.blocks)
		}
		h = append(h, msg("assistant", []any{a.blocks[0]}), msg("user", []any{toolResult(a.blocks[0]["id"].(string), "ok")}))
	}
	if a := assemble(t, stream(t, srv, body(true, h...))); a.blocks[0]["text"] != "Done. " || a.stopReason != "end_turn" {
		t.Errorf("EDITFILE last: %v", a.blocks)
	}
	// STEER: two Bash steps, then a text naming the messages the CLI
	// surfaced mid-turn (the system message of CLI 2.1.330), or "nothing".
	steered := func(texts ...string) []map[string]any {
		h := []map[string]any{prompt("STEER now")}
		for i := range 2 {
			h = append(h, msg("assistant", []any{toolUse("s", "Bash")}), msg("user", []any{toolResult("s", "x")}))
			if i < len(texts) {
				var content any = "The user sent a new message while you were working:\n" + texts[i] + "\n\nThis is how Claude Code surfaces messages the user sends mid-turn."
				if i == 1 {
					content = []any{text(content.(string))} // the form of the call that first carries it
				}
				h = append(h, msg("system", content))
			}
		}
		return h
	}
	for _, c := range []struct {
		texts []string
		want  string
	}{{nil, "Done. Steered by: nothing. "}, {[]string{"mind the tests"}, "Done. Steered by: mind the tests. "}, {[]string{"one", "two"}, "Done. Steered by: one | two. "}} {
		if a := assemble(t, stream(t, srv, body(true, steered(c.texts...)...))); a.blocks[0]["text"] != c.want {
			t.Errorf("STEER with %q: %v, want %q", c.texts, a.blocks, c.want)
		}
	}
	// LOOPREAD never stops.
	h = []map[string]any{prompt("LOOPREAD")}
	for range 5 {
		h = append(h, msg("assistant", []any{toolUse("t", "Read")}), msg("user", []any{toolResult("t", "x")}))
	}
	if a := assemble(t, stream(t, srv, body(true, h...))); a.blocks[0]["name"] != "Read" {
		t.Errorf("LOOPREAD step 5: %v", a.blocks)
	}
	// Fallback: thinking then text.
	a = assemble(t, stream(t, srv, body(true, prompt("hello"))))
	if len(a.blocks) != 2 || a.blocks[0]["thinking"] != "Let me think." || a.blocks[0]["signature"] != "sig" || a.blocks[1]["text"] != "Hello from the mock model. " {
		t.Errorf("fallback: %v", a.blocks)
	}
	// IMAGECHECK counts image blocks.
	a = assemble(t, stream(t, srv, body(true, msg("user", []any{text("IMAGECHECK what"), image, text("[Image: source: /x.png]")}))))
	if a.blocks[0]["text"] != "I received 1 image block(s). " {
		t.Errorf("IMAGECHECK: %v", a.blocks)
	}
	// BIGTEXT n: exactly n bytes, default 1 MiB.
	for p, n := range map[string]int{"BIGTEXT 100000": 100000, "BIGTEXT": 1 << 20} {
		a = assemble(t, stream(t, srv, body(true, prompt(p))))
		if got := len(a.blocks[0]["text"].(string)); got != n {
			t.Errorf("%s: %d bytes", p, got)
		}
	}
	// Compaction and session titles get well-formed answers.
	a = assemble(t, stream(t, srv, body(true, prompt("hi"), msg("assistant", []any{text("x")}), msg("user", "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools. BASH"))))
	if s := a.blocks[0]["text"].(string); !strings.Contains(s, "<summary>") {
		t.Errorf("compact: %q", s)
	}
	a = assemble(t, stream(t, srv, body(true, msg("user", []any{text("<session>\nFix WRITEFILE\n</session>\n\nWrite the title")}))))
	if s := a.blocks[0]["text"].(string); gjson.Get(s, "title").String() == "" {
		t.Errorf("title: %q", s)
	}
}

func TestSlowStreamIsIncremental(t *testing.T) {
	srv := startScenario(t, `{"rules": [{"keyword": "SLOW", "steps": [
	  {"delay_ms": 25, "blocks": [{"type": "text", "text": "tick ", "size": 50}]}
	]}]}`)
	evs := stream(t, srv, body(true, prompt("SLOW")))
	a := assemble(t, evs)
	if a.deltas[0] != 10 {
		t.Fatalf("deltas %v", a.deltas)
	}
	// 10 deltas + start/stop + message_delta/stop after message_start: 14
	// pauses of 25 ms.
	total := evs[len(evs)-1].at - evs[0].at
	if total < 14*25*time.Millisecond || total > 5*time.Second {
		t.Errorf("stream took %v", total)
	}
	// 12 pauses separate the first delta from the end: had the server
	// buffered, they would arrive together.
	firstDelta := evs[2].at
	if firstDelta > evs[len(evs)-1].at-150*time.Millisecond {
		t.Errorf("first delta at %v, end at %v: not streamed incrementally", firstDelta, evs[len(evs)-1].at)
	}
}

func TestLatency(t *testing.T) {
	srv := startScenario(t, `{"rules": [{"keyword": "LATE", "steps": [{"latency_ms": 150, "blocks": [{"type": "text", "text": "x"}]}]}]}`)
	start := time.Now()
	assemble(t, stream(t, srv, body(true, prompt("LATE"))))
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("answered after %v", d)
	}
}

func TestErrors(t *testing.T) {
	sc, err := Load("default")
	if err != nil {
		t.Fatal(err)
	}
	srv := startSC(t, sc)
	for _, tt := range []struct {
		kw     string
		status int
		typ    string
	}{
		{"APIERR400", 400, "invalid_request_error"},
		{"APIERR401", 401, "authentication_error"},
		{"APIERR529", 529, "overloaded_error"},
	} {
		for _, streaming := range []bool{true, false} {
			resp := post(t, srv, "/v1/messages?beta=true", body(streaming, prompt(tt.kw+" now")))
			all, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			e := gjson.ParseBytes(all)
			if resp.StatusCode != tt.status || e.Get("type").String() != "error" || e.Get("error.type").String() != tt.typ ||
				!strings.Contains(e.Get("error.message").String(), fmt.Sprint(tt.status)) || resp.Header.Get("request-id") == "" ||
				e.Get("request_id").String() != resp.Header.Get("request-id") {
				t.Errorf("%s stream=%v: status %d body %s", tt.kw, streaming, resp.StatusCode, all)
			}
		}
	}

	srv2 := startScenario(t, `{"rules": [
	  {"keyword": "RATE", "steps": [{"error": {"status": 429, "retry_after": 7}}]},
	  {"keyword": "MID", "steps": [{"blocks": [{"type": "text", "text": "partial answer"}], "error": {"in_stream": true, "type": "overloaded_error", "message": "boom"}}]},
	  {"keyword": "ODD", "steps": [{"error": {"status": 418}}]}
	]}`)
	resp := post(t, srv2, "/v1/messages", body(true, prompt("RATE")))
	all, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("retry-after") != "7" || gjson.GetBytes(all, "error.type").String() != "rate_limit_error" ||
		gjson.GetBytes(all, "error.message").String() != "fake rate_limit_error (429)" {
		t.Errorf("429: %d %v %s", resp.StatusCode, resp.Header, all)
	}
	resp = post(t, srv2, "/v1/messages", body(true, prompt("ODD")))
	all, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 418 || gjson.GetBytes(all, "error.type").String() != "invalid_request_error" {
		t.Errorf("418: %d %s", resp.StatusCode, all)
	}
	evs := stream(t, srv2, body(true, prompt("MID")))
	a := assemble(t, evs)
	last := evs[len(evs)-1]
	if a.errType != "overloaded_error" || last.data.Get("error.message").String() != "boom" || a.blocks[0]["text"] != "partial answer" || a.stopReason != "" {
		t.Errorf("in-stream error: %+v", a)
	}
	// The same step without streaming is an HTTP error.
	resp = post(t, srv2, "/v1/messages", body(false, prompt("MID")))
	resp.Body.Close()
	if resp.StatusCode != 529 {
		t.Errorf("in-stream error, non-streaming: status %d", resp.StatusCode)
	}
}

func TestMalformedRequests(t *testing.T) {
	srv := startScenario(t, `{"fallback": {"steps": [{"blocks": [{"type": "text", "text": "x"}]}]}, "rules": []}`)
	for _, b := range []string{"{not json", `{"model":"m"}`, `[]`} {
		resp := post(t, srv, "/v1/messages", []byte(b))
		all, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || gjson.GetBytes(all, "error.type").String() != "invalid_request_error" {
			t.Errorf("%q: %d %s", b, resp.StatusCode, all)
		}
	}
}

func TestOtherEndpoints(t *testing.T) {
	srv := startScenario(t, `{"rules": [], "fallback": {"steps": [{"blocks": [{"type": "text", "text": "x"}]}]}}`)
	resp := post(t, srv, "/v1/messages/count_tokens?beta=true", body(false, prompt("count me")))
	all, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || gjson.GetBytes(all, "input_tokens").Int() < 1 {
		t.Errorf("count_tokens: %d %s", resp.StatusCode, all)
	}
	get := func(method, path string) (int, []byte) {
		req, _ := http.NewRequest(method, srv.URL()+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		all, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, all
	}
	if code, b := get("GET", "/v1/models"); code != 200 || gjson.GetBytes(b, "data.#").Int() < 1 || gjson.GetBytes(b, "data.0.type").String() != "model" {
		t.Errorf("models: %d %s", code, b)
	}
	if code, b := get("GET", "/v1/models/claude-opus-5-5"); code != 200 || gjson.GetBytes(b, "id").String() != "claude-opus-5-5" {
		t.Errorf("model: %d %s", code, b)
	}
	if code, _ := get("HEAD", "/"); code != 200 {
		t.Errorf("HEAD /: %d", code)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if code, b := get("GET", "/api/oauth/usage"); code != 404 || gjson.GetBytes(b, "error.type").String() != "not_found_error" {
			t.Errorf("unknown: %d %s", code, b)
		}
		if code, _ := get("PUT", "/v1/messages"); code != 404 {
			t.Errorf("PUT /v1/messages: %d", code)
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("unknown endpoint hangs")
	}
	var paths []string
	for _, r := range srv.Requests() {
		paths = append(paths, fmt.Sprintf("%s %s %d", r.Method, r.Path, r.Status))
	}
	want := "POST /v1/messages/count_tokens 200,GET /v1/models 200,GET /v1/models/claude-opus-5-5 200,HEAD / 200,GET /api/oauth/usage 404,PUT /v1/messages 404"
	if got := strings.Join(paths, ","); got != want {
		t.Errorf("log:\n got %s\nwant %s", got, want)
	}
	if srv.Count() != 6 {
		t.Errorf("Count %d", srv.Count())
	}
}

func TestRequestLogKeepsRecentBodies(t *testing.T) {
	srv := startScenario(t, `{"rules": [], "fallback": {"steps": [{"blocks": [{"type": "text", "text": "x"}]}]}}`)
	for i := range keepBodies + 4 {
		resp := post(t, srv, "/v1/messages", body(false, prompt(fmt.Sprint("p", i))))
		resp.Body.Close()
	}
	log := srv.Requests()
	if len(log) != keepBodies+4 {
		t.Fatalf("%d entries", len(log))
	}
	for i, r := range log {
		if (r.Body != nil) != (i >= 4) {
			t.Errorf("entry %d: body kept = %v", i, r.Body != nil)
		}
		if r.Prompt != fmt.Sprint("p", i) || r.Rule != "fallback" || r.Model != "claude-opus-5-5" || r.Stream {
			t.Errorf("entry %d: %+v", i, r)
		}
	}
}

func TestNoRuleNoFallback(t *testing.T) {
	srv := startScenario(t, `{"rules": [{"keyword": "ONLY", "steps": [{"blocks": [{"type": "text", "text": "x"}]}]}]}`)
	a := assemble(t, stream(t, srv, body(true, prompt("something else"))))
	if s := a.blocks[0]["text"].(string); !strings.Contains(s, "no rule") {
		t.Errorf("got %q", s)
	}
	if r := srv.Requests()[0]; r.Rule != "none" {
		t.Errorf("rule %q", r.Rule)
	}
}

func TestConcurrentSessions(t *testing.T) {
	sc, err := Load("default")
	if err != nil {
		t.Fatal(err)
	}
	srv := startSC(t, sc)
	var wg sync.WaitGroup
	errs := make(chan string, 100)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			kw := []string{"WRITEFILE", "BASH", "hello", "EDITFILE"}[i%4]
			h := []map[string]any{prompt(kw)}
			for step := 0; step < 4; step++ {
				resp := post(t, srv, "/v1/messages", body(true, h...))
				evs := parseSSE(t, resp.Body, time.Now())
				resp.Body.Close()
				a := assemble(t, evs)
				last := a.blocks[len(a.blocks)-1]
				if last["type"] != "tool_use" {
					if want := map[string]int{"WRITEFILE": 1, "BASH": 1, "hello": 0, "EDITFILE": 2}[kw]; step != want {
						errs <- fmt.Sprintf("%s ended at step %d, want %d", kw, step, want)
					}
					return
				}
				h = append(h, msg("assistant", []any{last}), msg("user", []any{toolResult(last["id"].(string), "ok")}))
			}
			errs <- kw + " never ended"
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if srv.Count() != 4*2+4*2+4*1+4*3 {
		t.Errorf("Count %d", srv.Count())
	}
}

func TestCloseCutsRunningStreams(t *testing.T) {
	srv, err := Start(mustParse(t, `{"rules": [{"keyword": "SLOW", "steps": [{"delay_ms": 1000, "blocks": [{"type": "text", "text": "a b c d e f g h"}]}]}]}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp := post(t, srv, "/v1/messages", body(true, prompt("SLOW")))
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	if line, err := rd.ReadString('\n'); err != nil || line != "event: message_start\n" {
		t.Fatalf("first line %q %v", line, err)
	}
	start := time.Now()
	if err := srv.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v", d)
	}
	io.Copy(io.Discard, rd)
	if err := srv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := http.Get(srv.URL() + "/"); err == nil {
		t.Error("server still answers after Close")
	}
}

func TestClientDisconnectStopsStream(t *testing.T) {
	srv := startScenario(t, `{"rules": [{"keyword": "SLOW", "steps": [{"delay_ms": 50, "blocks": [{"type": "text", "text": "x ", "size": 2000}]}]}]}`)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL()+"/v1/messages", bytes.NewReader(body(true, prompt("SLOW"))))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	bufio.NewReader(resp.Body).ReadString('\n')
	if log := srv.Requests(); len(log) != 1 || log[0].Status != 0 || log[0].Rule != "SLOW" {
		t.Errorf("log while streaming: %+v", log)
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(3 * time.Second)
	for {
		log := srv.Requests()
		if len(log) == 1 && log[0].Status == 200 {
			break // the handler returned and logged
		}
		if time.Now().After(deadline) {
			t.Fatal("handler still streaming after the client left")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func mustParse(t *testing.T, js string) *Scenario {
	t.Helper()
	sc, err := Parse([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestEnvAndURL(t *testing.T) {
	srv := startScenario(t, `{"rules": [], "fallback": {"steps": [{"blocks": [{"type": "text", "text": "x"}]}]}}`)
	if !strings.HasPrefix(srv.URL(), "http://127.0.0.1:") {
		t.Errorf("URL %q", srv.URL())
	}
	want := []string{
		"ANTHROPIC_BASE_URL=" + srv.URL(),
		"ANTHROPIC_API_KEY=sk-ant-fake",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_AUTOUPDATER=1",
		"NO_PROXY=" + noProxy(os.Getenv("NO_PROXY")),
		"no_proxy=" + noProxy(os.Getenv("no_proxy")),
	}
	if !strings.HasPrefix(noProxy("example.com"), "127.0.0.1,") || noProxy("") != "127.0.0.1,localhost,::1" {
		t.Errorf("noProxy does not put loopback first")
	}
	if got := srv.Env(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Env %q", got)
	}
}

func TestLoad(t *testing.T) {
	sc, err := Load("default")
	if err != nil || sc.Name != "default" || len(sc.Rules) < 20 || sc.Fallback == nil {
		t.Fatalf("default: %v %+v", err, sc)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "my-scenario.json")
	os.WriteFile(p, []byte(`{"rules": [{"keyword": "HI", "steps": [{"blocks": [{"type": "text", "text": "hi"}]}]}]}`), 0o644)
	sc, err = Load(p)
	if err != nil || sc.Name != "my-scenario" {
		t.Errorf("file: %v %+v", err, sc)
	}
	if _, err := Load("nosuch"); err == nil || !strings.Contains(err.Error(), `unknown scenario "nosuch"`) {
		t.Errorf("unknown name: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("missing file: %v", err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("{\n  \"rules\": [\n    {\"keyword\": \"X\", \"stepz\": []}\n  ]\n}"), 0o644)
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "bad.json") || !strings.Contains(err.Error(), "stepz") {
		t.Errorf("bad file: %v", err)
	}
}

func TestValidationErrors(t *testing.T) {
	txt := `{"blocks": [{"type": "text", "text": "x"}]}`
	tool := `{"blocks": [{"type": "tool_use", "name": "Read"}]}`
	rule := func(steps ...string) string {
		return `{"rules": [{"keyword": "K", "steps": [` + strings.Join(steps, ",") + `]}]}`
	}
	tests := []struct{ js, want string }{
		{`{"rules": []}`, "no rules and no fallback"},
		{`{"rules": [}`, "line 1"},
		{"{\n\"rules\": 5}", "line 2"},
		{`{"rules": [], "fallback": {"steps": [` + txt + `]}} {}`, "after the scenario"},
		{`{"rulez": []}`, `unknown field "rulez"`},
		{`{"rules": [{"steps": [` + txt + `]}]}`, "rules[0]: needs at least one of keyword"},
		{`{"rules": [{"keyword": "TWO WORDS", "steps": [` + txt + `]}]}`, "single word"},
		{`{"rules": [{"regex": "(", "steps": [` + txt + `]}]}`, "rules[0] (regex \"(\"): regex"},
		{`{"rules": [{"keyword": "K"}]}`, "rules[0] (K): no steps"},
		{`{"rules": [], "fallback": {"keyword": "K", "steps": [` + txt + `]}}`, "fallback must not have"},
		{rule(`{}`), "steps[0]: needs blocks or an error"},
		{rule(tool), "last step calls a tool"},
		{rule(`{"blocks": [{"type": "video"}]}`), `unknown block type "video"`},
		{rule(`{"blocks": [{"text": "x"}]}`), "block without a type"},
		{rule(`{"blocks": [{"type": "text"}]}`), "text block without text"},
		{rule(`{"blocks": [{"type": "thinking"}]}`), "thinking block without thinking"},
		{rule(`{"blocks": [{"type": "redacted_thinking"}]}`), "without data"},
		{rule(`{"blocks": [{"type": "tool_use"}]}`, txt), "without a tool name"},
		{rule(`{"blocks": [{"type": "tool_use", "name": "X", "input": [1]}]}`, txt), "input must be a JSON object"},
		{rule(`{"blocks": [{"type": "text", "text": "x", "name": "Y"}]}`), "name is only for tool_use blocks"},
		{rule(`{"blocks": [{"type": "text", "text": "{{cwdd}}"}]}`), "unknown template variable {{cwdd}}"},
		{rule(`{"blocks": [{"type": "tool_use", "name": "X", "input": {"a": "{{nope|1}}"}}]}`, txt), "{{nope}}"},
		{rule(`{"blocks": [{"type": "text", "text": "x", "size": -1}]}`), "not a byte count"},
		{rule(`{"blocks": [{"type": "text", "text": "x", "size": 1.5}]}`), "whole number"},
		{rule(`{"blocks": [{"type": "text", "text": "x", "chunk_size": -1}]}`), "negative chunk_size"},
		{rule(`{"error": {"status": 200}}`), "not an HTTP error status"},
		{rule(`{"error": {"status": 500}, "blocks": [{"type": "text", "text": "x"}]}`), "cannot have blocks"},
		{rule(`{"error": {"in_stream": true}, "blocks": [{"type": "text", "text": "x"}]}`), "need a type"},
		{rule(`{"error": {"in_stream": true, "type": "api_error", "status": 500}}`), "make no sense with in_stream"},
		{rule(`{"delay_ms": 999999, "blocks": [{"type": "text", "text": "x"}]}`), "delay_ms: 999999 ms"},
		{rule(`{"latency_ms": -1, "blocks": [{"type": "text", "text": "x"}]}`), "latency_ms"},
		{rule(`{"stop_reason": "because", "blocks": [{"type": "text", "text": "x"}]}`), `unknown stop_reason "because"`},
		{rule(`{"usage": {"input_tokens": -1, "output_tokens": 1}, "blocks": [{"type": "text", "text": "x"}]}`), "negative token count"},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.js))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s\n  error %v, want it to contain %q", tt.js, err, tt.want)
		}
	}
	// A deliberate loop is fine; so are the steps of a Scenario built in Go.
	if _, err := Parse([]byte(`{"rules": [{"keyword": "K", "loop": true, "steps": [` + tool + `]}]}`)); err != nil {
		t.Errorf("loop: %v", err)
	}
	if _, err := Start(&Scenario{}, nil); err == nil {
		t.Error("Start accepted an empty scenario")
	}
}

func TestFillAndSplit(t *testing.T) {
	if got := fill("ab", 5); got != "ababa" {
		t.Errorf("fill %q", got)
	}
	if got := fill("é", 3); got != "é " {
		t.Errorf("fill rune cut %q", got)
	}
	if got := fill("", 2); got != "xx" {
		t.Errorf("fill empty %q", got)
	}
	if got := strings.Join(splitWords("  Hello from  the mock. "), "|"); got != "  Hello |from  |the |mock. " {
		t.Errorf("splitWords %q", got)
	}
	if got := strings.Join(splitBytes("aééb", 2), "|"); got != "a|é|é|b" {
		t.Errorf("splitBytes %q", got)
	}
	if got := strings.Join(splitBytes("日本", 1), "|"); got != "日|本" {
		t.Errorf("splitBytes small %q", got)
	}
}

func TestTemplates(t *testing.T) {
	v := &vars{cwd: "", arg: "", prompt: `say "hi"`, model: "m", images: 2, step: 1, toolResult: "line1\nline2"}
	for in, want := range map[string]string{
		"{{cwd}}/x":            "./x",
		"{{cwd|/tmp}}/x":       "/tmp/x",
		"[{{arg}}]":            "[]",
		"{{arg|dflt}}":         "dflt",
		"{{prompt}}":           `say "hi"`,
		"{{images}} {{step}}":  "2 1",
		"{{model}}{{model}}":   "mm",
		"{{tool_result}}":      "line1\nline2",
		"{{ not a template }}": "{{ not a template }}",
		"{{":                   "{{",
		"{x}":                  "{x}",
	} {
		if got := v.expand(in); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
	raw := []byte(`{"a":"{{prompt}}","b":"{{tool_result}}","c":"{{arg|say \"x\"}}","d":"{{cwd}}"}`)
	got := v.expandJSON(raw)
	var m map[string]string
	if err := json.Unmarshal(got, &m); err != nil {
		t.Fatalf("expandJSON gave invalid JSON %s: %v", got, err)
	}
	if m["a"] != `say "hi"` || m["b"] != "line1\nline2" || m["c"] != `say "x"` || m["d"] != "." {
		t.Errorf("expandJSON: %v", m)
	}
}

func TestGzipRequestBody(t *testing.T) {
	srv := startScenario(t, `{"rules": [{"keyword": "ZIP", "steps": [{"blocks": [{"type": "text", "text": "unzipped"}]}]}]}`)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(body(false, prompt("ZIP")))
	zw.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL()+"/v1/messages", &buf)
	req.Header.Set("Content-Encoding", "gzip")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	all, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if gjson.GetBytes(all, "content.0.text").String() != "unzipped" {
		t.Errorf("gzip body: %d %s", resp.StatusCode, all)
	}
	req, _ = http.NewRequest(http.MethodPost, srv.URL()+"/v1/messages", strings.NewReader("x"))
	req.Header.Set("Content-Encoding", "br")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("unsupported encoding: %d", resp.StatusCode)
	}
}
