package mapping

import (
	"bufio"
	"bytes"
	"os"
	"slices"
	"testing"
)

// rewoundLines is a session file the CLI 2.1.330 wrote (its bookkeeping
// entries left out): prompt 1111… ("hello one"), prompt 2222…
// ("WRITEFILE please", a Write), a rewind_conversation to 2222…, then
// prompt 3333… ("third turn").
func rewoundLines(t *testing.T) [][]byte {
	t.Helper()
	data, err := os.ReadFile("testdata/rewound.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, slices.Clone(sc.Bytes()))
	}
	return lines
}

const (
	rwU1 = "11111111-1111-4111-8111-111111111111"
	rwU2 = "22222222-2222-4222-8222-222222222222"
	rwU3 = "33333333-3333-4333-8333-333333333333"
)

func TestRewindCut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line string
		cut  string
	}{
		{`{"type":"last-prompt","lastPrompt":"x","leafUuid":"a","explicit":true,"rewound":true,"cutUuid":"c1","sessionId":"s"}`, "c1"},
		{`{"type":"last-prompt","lastPrompt":"x","leafUuid":"a"}`, ""},
		{`{"type":"last-prompt","rewound":false,"cutUuid":"c1"}`, ""},
		{`{"type":"user","rewound":true,"cutUuid":"c1"}`, ""},
		{`{"type":"last-prompt","rewound":true}`, ""},
		{`not json "rewound":true`, ""},
	} {
		cut, ok := RewindCut([]byte(tc.line))
		if cut != tc.cut || ok != (tc.cut != "") {
			t.Errorf("RewindCut(%s) = %q, %v; want %q", tc.line, cut, ok, tc.cut)
		}
	}
}

// TestRewindsRealFile: the entries of the rewound turn (its prompt, the
// assistant's answer, the tool result) are dropped, the marker too; the
// first and third turns are kept.
func TestRewindsRealFile(t *testing.T) {
	t.Parallel()
	lines := rewoundLines(t)
	var r Rewinds
	for _, l := range lines {
		r.Line(l)
	}
	if !r.Any() {
		t.Fatal("no rewind found")
	}
	var kept []string
	dropped := 0
	for _, l := range lines {
		if r.Dropped(l) {
			dropped++
			if bytes.Contains(l, []byte(rwU1)) && bytes.Contains(l, []byte(`"type":"user"`)) || bytes.Contains(l, []byte(`"third turn"`)) && bytes.Contains(l, []byte(`"type":"user"`)) {
				t.Errorf("a kept prompt was dropped: %.200s", l)
			}
			continue
		}
		var p Prompts
		p.Line(l)
		for _, q := range p.List() {
			kept = append(kept, q.UUID)
		}
	}
	if want := []string{rwU1, rwU3}; !slices.Equal(kept, want) {
		t.Errorf("kept prompts %q, want %q", kept, want)
	}
	// The rewound turn had its prompt, two assistant entries, a tool
	// result and its answer, and the marker.
	if dropped < 6 {
		t.Errorf("dropped %d lines, want at least 6", dropped)
	}
	for _, l := range lines {
		if bytes.Contains(l, []byte(`"File created successfully`)) && !r.Dropped(l) {
			t.Errorf("the rolled-back tool result was kept")
		}
	}
}

func TestPromptsRewound(t *testing.T) {
	t.Parallel()
	var p Prompts
	for _, l := range rewoundLines(t) {
		p.Line(l)
	}
	want := []Prompt{{rwU1, "hello one"}, {rwU3, "third turn"}}
	if got := p.List(); !slices.Equal(got, want) {
		t.Errorf("Prompts = %+v, want %+v", got, want)
	}
	// A marker naming an unknown prompt changes nothing.
	p.Line([]byte(`{"type":"last-prompt","rewound":true,"cutUuid":"nope"}`))
	if got := p.List(); !slices.Equal(got, want) {
		t.Errorf("after an unknown cut: %+v", got)
	}
}

// TestSessionSummaryRewound: a rewind takes back the prompts and
// messages it cut; the marker's lastPrompt (the cut prompt) is not the
// latest prompt.
func TestSessionSummaryRewound(t *testing.T) {
	t.Parallel()
	lines := rewoundLines(t)
	var s SessionSummary
	var at int
	for i, l := range lines {
		s.Line(l)
		if _, ok := RewindCut(l); ok {
			at = i
			break
		}
	}
	if s.LastPrompt != "hello one" || s.FirstPrompt != "hello one" || s.Messages != 2 {
		t.Errorf("after the rewind: last %q first %q messages %d; want hello one, hello one, 2", s.LastPrompt, s.FirstPrompt, s.Messages)
	}
	for _, l := range lines[at+1:] {
		s.Line(l)
	}
	if s.LastPrompt != "third turn" || s.Messages != 4 {
		t.Errorf("at the end: last %q messages %d; want third turn, 4", s.LastPrompt, s.Messages)
	}
	// Every prompt cut: no conversation.
	var z SessionSummary
	z.Line([]byte(`{"type":"user","uuid":"u1","message":{"role":"user","content":"hi"}}`))
	z.Line([]byte(`{"type":"last-prompt","lastPrompt":"hi","rewound":true,"cutUuid":"u1"}`))
	if z.Conversation() || z.FirstPrompt != "" || z.LastPrompt != "" {
		t.Errorf("all cut: %+v", z)
	}
}

func TestAppendRewind(t *testing.T) {
	t.Parallel()
	if got, want := string(AppendRewindFiles(nil, "r1", "u\"1", true)), `{"type":"control_request","request_id":"r1","request":{"subtype":"rewind_files","user_message_id":"u\"1","dry_run":true}}`; got != want {
		t.Errorf("AppendRewindFiles = %s, want %s", got, want)
	}
	if got, want := string(AppendRewindFiles(nil, "r1", "u1", false)), `{"type":"control_request","request_id":"r1","request":{"subtype":"rewind_files","user_message_id":"u1"}}`; got != want {
		t.Errorf("AppendRewindFiles = %s, want %s", got, want)
	}
	if got, want := string(AppendRewindConversation(nil, "r2", "u1")), `{"type":"control_request","request_id":"r2","request":{"subtype":"rewind_conversation","target_message_uuid":"u1"}}`; got != want {
		t.Errorf("AppendRewindConversation = %s, want %s", got, want)
	}
}
