package acp

import (
	"testing"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/mapping"
)

func TestParseRewind(t *testing.T) {
	t.Parallel()
	ok := map[string]RewindParams{
		`{"sessionId":"s","messageId":"u1"}`:                                 {SessionID: "s", MessageID: "u1", Mode: RewindFiles},
		`{"sessionId":"s","numTurns":2,"mode":"both","dryRun":true}`:         {SessionID: "s", NumTurns: 2, Mode: RewindBoth, DryRun: true},
		`{"sessionId":"s","numTurns":1,"mode":"conversation","dryRun":null}`: {SessionID: "s", NumTurns: 1, Mode: RewindConversation},
		`{"sessionId":"s","messageId":"u1","numTurns":null,"mode":null}`:     {SessionID: "s", MessageID: "u1", Mode: RewindFiles},
	}
	for params, want := range ok {
		got, err := ParseRewind(gjson.Parse(params))
		if err != nil || got != want {
			t.Errorf("%s: %+v, %v; want %+v", params, got, err, want)
		}
	}
	for _, params := range []string{`[]`, `{"messageId":"u1"}`, `{"sessionId":"s"}`, `{"sessionId":"s","messageId":""}`,
		`{"sessionId":"s","messageId":"u1","numTurns":1}`, `{"sessionId":"s","numTurns":0}`, `{"sessionId":"s","numTurns":1.5}`,
		`{"sessionId":"s","numTurns":"1"}`, `{"sessionId":"s","numTurns":1,"mode":"all"}`, `{"sessionId":"s","numTurns":1,"dryRun":"yes"}`} {
		if _, err := ParseRewind(gjson.Parse(params)); err == nil || err.Code != -32602 {
			t.Errorf("%s: %v, want -32602", params, err)
		}
	}
	p := RewindParams{Mode: RewindFiles}
	if !p.Files() || p.Conversation() {
		t.Error("mode files")
	}
	p.Mode = RewindBoth
	if !p.Files() || !p.Conversation() {
		t.Error("mode both")
	}
	p.Mode = RewindConversation
	if p.Files() || !p.Conversation() {
		t.Error("mode conversation")
	}
}

func TestAppendRewind(t *testing.T) {
	t.Parallel()
	got := string(AppendRewindPoints(nil, []mapping.Prompt{{UUID: "u1", Text: "hi"}, {UUID: "u2", Text: "WRITEFILE"}}))
	want := `{"points":[{"messageId":"u1","resumeAtMessageId":null,"text":"hi","index":0},{"messageId":"u2","resumeAtMessageId":null,"text":"WRITEFILE","index":1}]}`
	if got != want {
		t.Errorf("points\n got  %s\n want %s", got, want)
	}
	if got := string(AppendRewindPoints(nil, nil)); got != `{"points":[]}` {
		t.Errorf("no points: %s", got)
	}
	r := RewindResult{Params: RewindParams{Mode: RewindBoth, DryRun: true}, MessageID: "u2", Prompt: "p", Turns: 1, Files: []string{"/a"}, Deletions: 1}
	got = string(AppendRewindResult(nil, r))
	want = `{"files":{"canRewind":true,"filesChanged":["/a"],"insertions":0,"deletions":1},"conversation":{"rewound":false,"messagesDropped":1},"_meta":{"ccbridge":{"dryRun":true,"messageId":"u2","prompt":"p","turns":1}}}`
	if got != want {
		t.Errorf("both, dry\n got  %s\n want %s", got, want)
	}
	r.Params = RewindParams{Mode: RewindConversation}
	got = string(AppendRewindResult(nil, r))
	want = `{"conversation":{"rewound":true,"messagesDropped":1},"_meta":{"ccbridge":{"dryRun":false,"messageId":"u2","prompt":"p","turns":1}}}`
	if got != want {
		t.Errorf("conversation\n got  %s\n want %s", got, want)
	}
}
