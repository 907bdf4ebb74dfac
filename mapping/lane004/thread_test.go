package lane004

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// threadLines is a small session file, its lines modeled on the CLI's
// (testdata/rpc/session_sample.jsonl), trimmed to the members read.
var threadLines = []string{
	// Not JSON, and entries that are no message: skipped.
	`not a JSON line`,
	`{"type":"queue-operation","operation":"enqueue","timestamp":"2026-11-21T23:44:13.710Z","sessionId":"s-1"}`,
	// An assistant entry before any prompt belongs to no turn.
	`{"parentUuid":null,"isSidechain":false,"message":{"id":"msg_0","type":"message","role":"assistant","content":[{"type":"text","text":"orphan"}]},"type":"assistant","uuid":"a-0","sessionId":"s-1"}`,
	// Turn 1: a prompt whose content is a string.
	`{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"hello"},"uuid":"u-1","timestamp":"2026-11-21T23:44:13.760Z","sessionId":"s-1"}`,
	`{"parentUuid":"u-1","isSidechain":false,"message":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"thinking","thinking":"Let me think.","signature":"sig"}]},"type":"assistant","uuid":"a-1","sessionId":"s-1"}`,
	`{"parentUuid":"a-1","isSidechain":false,"message":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"I'll write \"a.txt\"."}]},"type":"assistant","uuid":"a-2","sessionId":"s-1"}`,
	`{"parentUuid":"a-2","isSidechain":false,"message":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Write","input":{"file_path":"/home/user/project/a.txt","content":"hello world\n"}}]},"type":"assistant","uuid":"a-3","sessionId":"s-1"}`,
	`{"parentUuid":"a-3","isSidechain":false,"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"File created successfully at: /home/user/project/a.txt"}]},"uuid":"u-r1","sessionId":"s-1","toolUseResult":{"type":"create"}}`,
	// A subagent's entries (a prompt and a tool call): left out.
	`{"parentUuid":null,"isSidechain":true,"type":"user","message":{"role":"user","content":"subagent task"},"uuid":"u-side","agentId":"ag-1","sessionId":"s-1"}`,
	`{"parentUuid":"u-side","isSidechain":true,"message":{"id":"msg_side","type":"message","role":"assistant","content":[{"type":"text","text":"sub"},{"type":"tool_use","id":"toolu_side","name":"Read","input":{"file_path":"/x"}}]},"type":"assistant","uuid":"a-side","agentId":"ag-1","sessionId":"s-1"}`,
	// A meta entry: left out (it would start a turn otherwise).
	`{"parentUuid":"u-r1","isSidechain":false,"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Image: source: /tmp/1.png]"}]},"isMeta":true,"uuid":"u-meta","sessionId":"s-1"}`,
	`{"parentUuid":"u-meta","isSidechain":false,"message":{"id":"msg_2","type":"message","role":"assistant","content":[{"type":"text","text":"Done."}]},"type":"assistant","uuid":"a-4","sessionId":"s-1"}`,
	// Turn 2: a prompt of two text blocks, two tool calls, one failed.
	`{"parentUuid":"a-4","isSidechain":false,"type":"user","message":{"role":"user","content":[{"type":"text","text":"first"},{"type":"text","text":"second"}]},"uuid":"u-2","sessionId":"s-1"}`,
	`{"parentUuid":"u-2","isSidechain":false,"message":{"id":"msg_3","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_2","name":"Bash","input":{"command":"false"}},{"type":"tool_use","id":"toolu_3","name":"Read","input":{"file_path":"/x"}}]},"type":"assistant","uuid":"a-5","sessionId":"s-1"}`,
	`{"parentUuid":"a-5","isSidechain":false,"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":[{"type":"text","text":"Exit code 1"}],"is_error":true,"tool_use_id":"toolu_2"}]},"uuid":"u-r2","sessionId":"s-1"}`,
	// A result for a call this turn does not hold: ignored.
	`{"parentUuid":"u-r2","isSidechain":false,"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_unknown","type":"tool_result","content":"?"}]},"uuid":"u-r3","sessionId":"s-1"}`,
	// The interruption marker and an image-only entry start no turn.
	`{"parentUuid":"u-r3","isSidechain":false,"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]},"uuid":"u-int","sessionId":"s-1"}`,
	`{"parentUuid":"u-int","isSidechain":false,"type":"user","message":{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]},"uuid":"u-img","sessionId":"s-1"}`,
	// A compaction summary: left out.
	`{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"This session is being continued from a previous conversation."},"isCompactSummary":true,"isVisibleInTranscriptOnly":true,"uuid":"u-sum","sessionId":"s-1"}`,
	// Turn 3: a prompt with nothing after it.
	`{"parentUuid":"u-sum","isSidechain":false,"type":"user","message":{"role":"user","content":[{"type":"text","text":"third <b>"}]},"uuid":"u-3","sessionId":"s-1"}`,
}

const threadWant = `[` +
	`{"id":"u-1","items":[` +
	`{"type":"userMessage","id":"u-1","content":[{"type":"text","text":"hello"}]},` +
	`{"type":"reasoning","id":"msg_1/0","content":["Let me think."]},` +
	`{"type":"agentMessage","id":"msg_1/1","text":"I'll write \"a.txt\"."},` +
	`{"type":"toolCall","id":"toolu_1","tool":"Write","input":{"file_path":"/home/user/project/a.txt","content":"hello world\n"},"status":"completed","result":"File created successfully at: /home/user/project/a.txt"},` +
	`{"type":"agentMessage","id":"msg_2/0","text":"Done."}` +
	`],"status":"completed","error":null},` +
	`{"id":"u-2","items":[` +
	`{"type":"userMessage","id":"u-2","content":[{"type":"text","text":"first"},{"type":"text","text":"second"}]},` +
	`{"type":"toolCall","id":"toolu_2","tool":"Bash","input":{"command":"false"},"status":"failed","result":[{"type":"text","text":"Exit code 1"}]},` +
	`{"type":"toolCall","id":"toolu_3","tool":"Read","input":{"file_path":"/x"},"status":"inProgress"}` +
	`],"status":"completed","error":null},` +
	`{"id":"u-3","items":[` +
	`{"type":"userMessage","id":"u-3","content":[{"type":"text","text":"third <b>"}]}` +
	`],"status":"completed","error":null}` +
	`]`

func TestTurns(t *testing.T) {
	var tr Turns
	for _, l := range threadLines {
		tr.Line([]byte(l))
	}
	got := tr.Append(nil)
	if string(got) != threadWant {
		t.Errorf("turns\n got %s\nwant %s", got, threadWant)
	}
	if !json.Valid(got) {
		t.Fatalf("not valid JSON: %s", got)
	}
	// The same, spelled out, so that a failure says what is wrong.
	turns := gjson.ParseBytes(got).Array()
	var ids []string
	for _, turn := range turns {
		ids = append(ids, turn.Get("id").Str)
	}
	if want := []string{"u-1", "u-2", "u-3"}; !slices.Equal(ids, want) {
		t.Errorf("turn ids %q, want %q (u-side is a subagent's, u-meta meta, u-int the interruption, u-img no text, u-sum a summary)", ids, want)
	}
	var items []string
	for _, turn := range turns {
		for _, it := range turn.Get("items").Array() {
			items = append(items, it.Get("type").Str+" "+it.Get("id").Str+" "+it.Get("status").Str)
		}
	}
	wantItems := []string{
		"userMessage u-1 ", "reasoning msg_1/0 ", "agentMessage msg_1/1 ", "toolCall toolu_1 completed", "agentMessage msg_2/0 ",
		"userMessage u-2 ", "toolCall toolu_2 failed", "toolCall toolu_3 inProgress",
		"userMessage u-3 ",
	}
	if !slices.Equal(items, wantItems) {
		t.Errorf("items (type id status)\n got %q\nwant %q", items, wantItems)
	}
	if strings.Contains(string(got), "side") || strings.Contains(string(got), "orphan") || strings.Contains(string(got), "Image") {
		t.Errorf("a left-out entry is in the turns: %s", got)
	}
}

// TestTurnsLeftOut: each mark of an entry that is no prompt, alone,
// keeps it from starting a turn (or adding items to one).
func TestTurnsLeftOut(t *testing.T) {
	const prompt = `{"type":"user","message":{"role":"user","content":"go"},"uuid":"u-1"}`
	const want = `[{"id":"u-1","items":[{"type":"userMessage","id":"u-1","content":[{"type":"text","text":"go"}]}],"status":"completed","error":null}]`
	for _, c := range []struct{ name, line string }{
		{"isSidechain", `{"type":"user","isSidechain":true,"message":{"role":"user","content":"sub"},"uuid":"u-x"}`},
		{"isSidechain assistant", `{"type":"assistant","isSidechain":true,"message":{"id":"m","content":[{"type":"text","text":"sub"}]},"uuid":"a-x"}`},
		{"isMeta", `{"type":"user","isMeta":true,"message":{"role":"user","content":"meta"},"uuid":"u-x"}`},
		{"isCompactSummary", `{"type":"user","isCompactSummary":true,"message":{"role":"user","content":"summary"},"uuid":"u-x"}`},
		{"isVisibleInTranscriptOnly", `{"type":"user","isVisibleInTranscriptOnly":true,"message":{"role":"user","content":"summary"},"uuid":"u-x"}`},
		{"interrupted, as a string", `{"type":"user","message":{"role":"user","content":"[Request interrupted by user]"},"uuid":"u-x"}`},
		{"interrupted for tool use", `{"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user for tool use]"}]},"uuid":"u-x"}`},
		{"tool result with text", `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_9","content":"ok"},{"type":"text","text":"and more"}]},"uuid":"u-x"}`},
		{"no text", `{"type":"user","message":{"role":"user","content":[]},"uuid":"u-x"}`},
		{"other type", `{"type":"system","subtype":"compact_boundary","content":"Conversation compacted","uuid":"u-x"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var tr Turns
			tr.Line([]byte(prompt))
			tr.Line([]byte(c.line))
			if got := string(tr.Append(nil)); got != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

func TestTurnsAppend(t *testing.T) {
	var empty Turns
	if got := string(empty.Append(nil)); got != "[]" {
		t.Errorf("no turns: %s, want []", got)
	}
	var tr Turns
	tr.Line([]byte(`{"type":"user","message":{"role":"user","content":"hi"},"uuid":"u-1"}`))
	got := tr.Append([]byte(`{"turns":`))
	want := `{"turns":[{"id":"u-1","items":[{"type":"userMessage","id":"u-1","content":[{"type":"text","text":"hi"}]}],"status":"completed","error":null}]`
	if string(got) != want {
		t.Errorf("appended after a prefix\n got %s\nwant %s", got, want)
	}
}

// TestTurnsEscapes: text with quotes, line breaks and invalid UTF-8 is
// escaped; raw input and results are copied as they are.
func TestTurnsEscapes(t *testing.T) {
	var tr Turns
	tr.Line([]byte(`{"type":"user","message":{"content":"a\"b\nc\\d"},"uuid":"u\"1"}`))
	tr.Line([]byte("{\"type\":\"assistant\",\"message\":{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"x\\u0001y\"}]}}"))
	got := tr.Append(nil)
	want := `[{"id":"u\"1","items":[{"type":"userMessage","id":"u\"1","content":[{"type":"text","text":"a\"b\nc\\d"}]},` +
		`{"type":"agentMessage","id":"m/0","text":"x\u0001y"}],"status":"completed","error":null}]`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if !json.Valid(got) {
		t.Errorf("not valid JSON: %s", got)
	}
}

// TestTurnsSessionFile reads a real session file: its prompts are the
// turns, in order; the interruption, the compaction summary and the meta
// entry are none; the tool calls end completed or failed.
func TestTurnsSessionFile(t *testing.T) {
	data, err := os.ReadFile("../../testdata/rpc/session_sample.jsonl")
	if err != nil {
		t.Skip("no session file:", err)
	}
	var tr Turns
	for _, l := range bytes.Split(data, []byte("\n")) {
		tr.Line(l)
	}
	got := tr.Append(nil)
	if !json.Valid(got) {
		t.Fatalf("not valid JSON: %s", got)
	}
	prompts := map[string]string{
		"187aadae-39e9-40d9-9cc1-03c7b471280b": "hello",
		"a10d621c-ecfd-49b7-a01b-4d696ed8f4ba": "please WRITEFILE",
		"49c4a8e1-ba20-424f-ad98-92981e77c995": "ASKUSER now",
		"0e48e0f9-ca92-49a2-bec8-5cd686889f31": "READMISSING now",
		"c102df6f-ce06-42c8-b302-8f296475b46f": "SUBAGENT now",
		"b89267f9-aeb1-4219-896c-ddb6498fc62d": "SLOW now",
		"2951abb0-9893-4da8-930a-4e7117bfd3dc": "APIERR400 now",
	}
	order := []string{
		"187aadae-39e9-40d9-9cc1-03c7b471280b", "a10d621c-ecfd-49b7-a01b-4d696ed8f4ba", "49c4a8e1-ba20-424f-ad98-92981e77c995",
		"0e48e0f9-ca92-49a2-bec8-5cd686889f31", "c102df6f-ce06-42c8-b302-8f296475b46f", "b89267f9-aeb1-4219-896c-ddb6498fc62d",
		"2951abb0-9893-4da8-930a-4e7117bfd3dc",
	}
	notTurns := map[string]string{
		"b0a124bc-0fc4-4463-a341-f14f373e0400": "the interruption marker",
		"99e71f70-668d-4cf7-9648-fa9f4351eed8": "the compaction summary",
		"a6d77287-9349-4766-a0a2-1aad87838810": "the meta entry",
		"5d955293-0d62-42c5-bd49-b59e6ae23040": "a tool result",
	}
	var seen []string
	status := map[string]string{}
	for _, turn := range gjson.ParseBytes(got).Array() {
		id := turn.Get("id").Str
		items := turn.Get("items").Array()
		if len(items) == 0 || items[0].Get("type").Str != "userMessage" || items[0].Get("id").Str != id {
			t.Errorf("turn %s does not begin with its userMessage: %s", id, turn.Raw)
		}
		if why, ok := notTurns[id]; ok {
			t.Errorf("%s started a turn", why)
		}
		if text, ok := prompts[id]; ok {
			seen = append(seen, id)
			if got := items[0].Get("content.0.text").Str; got != text {
				t.Errorf("turn %s text %q, want %q", id, got, text)
			}
		}
		for _, it := range items {
			if it.Get("type").Str == "toolCall" {
				status[it.Get("tool").Str] = it.Get("status").Str
			}
		}
	}
	if !slices.Equal(seen, order) {
		t.Errorf("prompt turns %q, want %q", seen, order)
	}
	if status["Write"] != "completed" || status["Read"] != "failed" || status["AskUserQuestion"] != "completed" {
		t.Errorf("tool call statuses %v, want Write completed, Read failed, AskUserQuestion completed", status)
	}
}

func TestWithAnswers(t *testing.T) {
	input := `{"questions":[{"question":"Which color?","options":[{"label":"Red"},{"label":"Blue"}]}]}`
	got, err := WithAnswers(input, `{"Which color?":"Blue"}`)
	want := `{"questions":[{"question":"Which color?","options":[{"label":"Red"},{"label":"Blue"}]}],"answers":{"Which color?":"Blue"}}`
	if err != nil || got != want {
		t.Errorf("WithAnswers = %s, %v\nwant %s", got, err, want)
	}
	// Answers already there are replaced, not doubled.
	got, err = WithAnswers(`{"questions":[],"answers":{"old":"x"}}`, `{"new":"y"}`)
	if err != nil || got != `{"questions":[],"answers":{"new":"y"}}` {
		t.Errorf("replacing answers: %s, %v", got, err)
	}
	if got, err = WithAnswers(`{}`, `{}`); err != nil || got != `{"answers":{}}` {
		t.Errorf("empty: %s, %v", got, err)
	}
	for _, c := range []struct{ input, answers, msg string }{
		{`[]`, `{}`, "input is not an object"},
		{`"x"`, `{}`, "input is not an object"},
		{`null`, `{}`, "input is not an object"},
		{``, `{}`, "input is not an object"},
		{`{"a":`, `{}`, "input is not an object"},
		{`{}`, `[]`, "answers must be an object"},
		{`{}`, `"Blue"`, "answers must be an object"},
		{`{}`, `null`, "answers must be an object"},
		{`{}`, ``, "answers must be an object"},
		{`{}`, `{"a":`, "answers must be an object"},
	} {
		got, err := WithAnswers(c.input, c.answers)
		if err == nil || got != "" || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("WithAnswers(%q, %q) = %q, %v; want an error saying %q", c.input, c.answers, got, err, c.msg)
		}
	}
}
