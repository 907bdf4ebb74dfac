package mapping

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestSessionSummarySample: the rpc sample session file (a real CLI
// 2.1.330 session: text, tools, a subagent, an interrupted stream,
// /compact, an API error).
func TestSessionSummarySample(t *testing.T) {
	data, err := os.ReadFile("../testdata/rpc/session_sample.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var s SessionSummary
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		s.Line(l)
	}
	s.Line([]byte("{not json"))
	// 8 prompts (one of them /compact) and 11 assistant messages.
	if s.Messages != 19 || !s.Conversation() || s.LastUserMessage() != "APIERR400 now" || s.CreatedAt != "2026-11-21T23:44:13.710Z" {
		t.Errorf("summary: %+v last %q", s, s.LastUserMessage())
	}
	if s.CWD == "" || s.FirstPrompt == "" {
		t.Errorf("no cwd or first prompt: %+v", s)
	}
}

func summarize(lines ...string) SessionSummary {
	var s SessionSummary
	for _, l := range lines {
		s.Line([]byte(l))
	}
	return s
}

// TestSessionSummaryConversation: one rule for every list — a prompt or
// an assistant message of the main conversation; side entries and
// bookkeeping alone are none.
func TestSessionSummaryConversation(t *testing.T) {
	for name, c := range map[string]struct {
		lines []string
		want  bool
	}{
		"prompt":    {[]string{`{"type":"user","message":{"role":"user","content":"hi"}}`}, true},
		"command":   {[]string{`{"type":"user","message":{"role":"user","content":"<command-name>/cost</command-name>\n<command-message>cost</command-message>\n<command-args></command-args>"}}`}, true},
		"assistant": {[]string{`{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"x"}]}}`}, true},
		"side entries only": {[]string{
			`{"type":"user","isSidechain":true,"message":{"role":"user","content":"subagent task"}}`,
			`{"type":"assistant","isSidechain":true,"message":{"id":"m1","content":[{"type":"text","text":"x"}]}}`,
			`{"type":"user","isMeta":true,"message":{"role":"user","content":"<local-command-caveat>c</local-command-caveat>"}}`,
			`{"type":"user","isCompactSummary":true,"message":{"role":"user","content":"summary of before"}}`,
			`{"type":"user","isVisibleInTranscriptOnly":true,"message":{"role":"user","content":"x"}}`,
		}, false},
		"bookkeeping only": {[]string{
			`{"type":"queue-operation","operation":"enqueue","timestamp":"2026-01-01T00:00:00Z"}`,
			`{"type":"summary","summary":"s","leafUuid":"u"}`,
			`{"type":"last-prompt","lastPrompt":"hello"}`,
			`{"type":"custom-title","customTitle":"t"}`,
			`{"type":"attachment","cwd":"/p"}`,
		}, false},
		"no prompt in user entries": {[]string{
			`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x"}]}}`,
			`{"type":"user","message":{"role":"user","content":"<local-command-stdout>out</local-command-stdout>"}}`,
			`{"type":"user","message":{"role":"user","content":"[Request interrupted by user]"}}`,
			`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"<system-reminder>r</system-reminder>"}]}}`,
		}, false},
		"not json": {[]string{`{"type":"user"`, `user`}, false},
	} {
		s := summarize(c.lines...)
		if s.Conversation() != c.want {
			t.Errorf("%s: Conversation = %v, want %v (%+v)", name, !c.want, c.want, s)
		}
	}
}

func TestSessionSummaryFields(t *testing.T) {
	s := summarize(
		`{"type":"queue-operation","timestamp":"2026-01-01T00:00:00Z"}`,
		`{"type":"user","isMeta":true,"cwd":"/first","message":{"role":"user","content":"meta"}}`,
		`{"type":"user","cwd":"/second","timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":[{"type":"text","text":"<system-reminder>r</system-reminder>"},{"type":"text","text":"fix the bug\nplease"}]}}`,
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"thinking","thinking":"t"}]}}`,
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"done"}]}}`,
		`{"type":"ai-title","aiTitle":"Bug fixing"}`,
		`{"type":"user","message":{"role":"user","content":"<command-name>/model</command-name>\n<command-args>opus</command-args>"}}`,
		`{"type":"last-prompt","lastPrompt":"`+strings.Repeat("é", 250)+`\nsecond line"}`,
		`{"type":"custom-title","customTitle":"Mine"}`,
	)
	want := SessionSummary{
		CWD: "/first", CreatedAt: "2026-01-01T00:00:00Z", FirstPrompt: "fix the bug\nplease",
		LastPrompt: strings.Repeat("é", 250) + "\nsecond line", CustomTitle: "Mine", AITitle: "Bug fixing",
		Messages: 3, lastMsgID: "m1",
	}
	s.marks = nil // no prompt here has a uuid
	if !reflect.DeepEqual(s, want) {
		t.Errorf("summary\n %+v, want\n %+v", s, want)
	}
	if s.Title() != "Mine" {
		t.Errorf("Title = %q, want the custom title over the AI one", s.Title())
	}
	if ai := summarize(`{"type":"ai-title","aiTitle":"Old"}`, `{"type":"ai-title","aiTitle":"Bug fixing"}`); ai.Title() != "Bug fixing" {
		t.Errorf("Title = %q, want the newest AI title", ai.Title())
	}
	if none := summarize(`{"type":"user","message":{"role":"user","content":"hi"}}`); none.Title() != "" {
		t.Errorf("Title = %q of a file with no title, want \"\" (a list shows the prompt)", none.Title())
	}
	if got := s.LastUserMessage(); got != strings.Repeat("é", 200)+"…" {
		t.Errorf("LastUserMessage = %q", got)
	}
	// A prompt after the last-prompt entry is the latest.
	s.Line([]byte(`{"type":"user","message":{"role":"user","content":"  again  \nmore"}}`))
	if s.LastUserMessage() != "again" || s.FirstPrompt != "fix the bug\nplease" {
		t.Errorf("after a new prompt: %q, first %q", s.LastUserMessage(), s.FirstPrompt)
	}
}

func TestUserText(t *testing.T) {
	for content, want := range map[string]struct {
		text string
		kind UserKind
	}{
		`"hello"`: {"hello", UserPrompt},
		`[{"type":"image"},{"type":"text","text":"[Image #1]"},{"type":"text","text":"what is it?"}]`: {"what is it?", UserPrompt},
		`"<command-name>/compact</command-name>\n<command-args>keep it short</command-args>"`:         {"/compact keep it short", UserCommand},
		`"<local-command-stdout>42</local-command-stdout>"`:                                           {"42", UserStdout},
		`"<local-command-stderr>bad</local-command-stderr>"`:                                          {"bad", UserStderr},
		`"[Request interrupted by user]"`:                                                             {"[Request interrupted by user]", UserInterrupted},
		`[{"type":"tool_result","tool_use_id":"t"}]`:                                                  {"", UserToolResult},
		`[{"type":"text","text":"<local-command-caveat>c</local-command-caveat>"}]`:                   {"", UserOther},
		`[]`: {"", UserOther},
	} {
		text, kind := UserText(gjson.Parse(content))
		if text != want.text || kind != want.kind {
			t.Errorf("UserText(%s) = %q, %d; want %q, %d", content, text, kind, want.text, want.kind)
		}
		if _, ok := PromptText(gjson.Parse(content)); ok != (want.kind == UserPrompt || want.kind == UserCommand) {
			t.Errorf("PromptText(%s): ok %v", content, ok)
		}
	}
}
