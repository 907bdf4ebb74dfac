package e2e

// `ccbridge --ui control --pty --fake-model default -- gemini`: the real
// Gemini CLI's TUI (scripts/install-agents.sh) under a pseudo-terminal,
// pointed by ccbridge at its own fake model's Gemini API
// (docs/fake-model.md), driven through lane 000 on stdio.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccbridge/ccbridge/fakemodel"
)

// geminiStart runs Gemini CLI under ccbridge (agentStart), with
// variables in the environment that would send it to another API, model
// or home if ccbridge passed them on, and CI=true and GITHUB_ACTIONS=true,
// with which it would run headless (the gemini profile leaves them out).
func geminiStart(t *testing.T) *ptyCtl {
	t.Helper()
	return agentStart(t, []string{realAgent(t, "gemini", "CCBRIDGE_TEST_GEMINI")}, nil,
		"GEMINI_API_KEY=must-not-be-used", "GOOGLE_API_KEY=must-not-be-used", "GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:1",
		"GOOGLE_GENAI_USE_VERTEXAI=true", "GEMINI_MODEL=gemini-must-not-be-used", "GEMINI_CLI_HOME="+t.TempDir(),
		"CI=true", "GITHUB_ACTIONS=true")
}

// geminiInput is the text of Gemini's input box: the rows between the
// last rule across the screen and the footer naming the workspace.
func (p *ptyCtl) geminiInput() string {
	p.feed()
	top, bottom := -1, -1
	for i, r := range p.rows {
		switch {
		case strings.HasPrefix(r, "────"):
			top, bottom = i, -1
		case top >= 0 && bottom < 0 && strings.Contains(r, "workspace (/directory)"):
			bottom = i
		}
	}
	if top < 0 || bottom < 0 {
		return ""
	}
	return strings.Join(p.rows[top+1:bottom], "\n")
}

// geminiPrompts are the lines where Gemini echoes a prompt holding tok
// (" > hello …"), its input box included.
func (p *ptyCtl) geminiPrompts(tok string) []int { return p.echoes(" > ", tok) }

// geminiAnswered reports whether Gemini drew the fake model's answer
// below its echo of the prompt holding tok.
func (p *ptyCtl) geminiAnswered(tok string) bool {
	return p.answeredBelow(" > ", tok, "✦ "+ptyAnswer)
}

// geminiPrompt sends content (holding tok) as a new request, acked ok, as
// a controller would: a busy answer is sent again under a new request id
// once ccbridge has been quiet for a second. Then geminiSubmit.
func (p *ptyCtl) geminiPrompt(tag, content, tok string) ctlMsg {
	p.t.Helper()
	m := p.promptOK(tag, content)
	p.geminiSubmit(tok)
	return m
}

// geminiSubmit checks that Gemini took the prompt holding tok, acked ok:
// echoed, and not left in its input box. Gemini CLI 0.61.0 takes a
// return that it reads within 30 to 40 ms of a paste for a new line in
// its input box (with no kitty keyboard protocol, which ccbridge's
// terminal does not offer), and when it is slow to read it can read
// ccbridge's paste and return, 100 ms apart, together: the gemini
// profile's ready text makes ccbridge see that (the box's placeholder
// does not come back) and send the return again before it acks.
func (p *ptyCtl) geminiSubmit(tok string) {
	p.t.Helper()
	p.waitFor("the prompt with "+tok+" echoed", func() bool { return len(p.geminiPrompts(tok)) > 0 })
	if strings.Contains(p.geminiInput(), tok) {
		p.waitFor("the prompt with "+tok+" out of Gemini's input box", func() bool {
			return !strings.Contains(p.geminiInput(), tok) || p.state() == "idle"
		})
		if strings.Contains(p.geminiInput(), tok) {
			p.t.Fatalf("acked ok, but the prompt with %s stays in Gemini's input box", tok)
		}
	}
}

// TestPTYGemini: the acceptance of a pty agent (agentAcceptance) for
// Gemini CLI, in its default approval mode, which asks before write_file.
func TestPTYGemini(t *testing.T) {
	t.Parallel()
	p := geminiStart(t)
	p.agentAcceptance(agentSpec{
		name: "Gemini CLI",
		// Its header ("Authenticated with gemini-api-key") is not always
		// drawn by the first idle on a loaded machine: the login is seen in
		// its settings (homeHolds) and in answers from the fake.
		ready: []string{"Type your message or @path/to/file", fakemodel.GeminiModel},
		dialogs: []string{"Do you trust the files in this folder?", "How would you like to authenticate", "Enter Gemini API Key",
			"Waiting for authentication", "Select Theme", "update available", "Do you want to connect"},
		prompt: p.geminiPrompt,
		echo:   " > ", answer: "✦ " + ptyAnswer,
		slow: func() bool { return p.shows("counting") && p.shows("(esc to cancel, ") },
		interrupted: func() error {
			if !p.shows("Request cancelled.") || p.shows("esc to cancel") {
				return fmt.Errorf("after the interrupt the screen does not say the request was cancelled, or Gemini still works")
			}
			return nil
		},
		approval: func(open []byte) bool {
			return get(open, "kind").Str == "edit" && get(open, "question").Str == "Apply this change?" && get(open, "file").Str == "written.txt" &&
				get(open, "choices.#").Int() == 4 && get(open, "choices.0.label").Str == "Allow once" && get(open, "choices.3.key").Str == "esc"
		},
		busyHint: "Allow once",
		idle:     func() bool { return p.state() == "idle" && p.shows("Type your message") },
		answers:  []approvalCase{{"1", "1"}, {"No, suggest changes", "esc"}},
		// Made by ccbridge for it, holding the fake's settings.
		home: "ccbridge-gemini",
		homeHolds: func(home string) error {
			if b, err := os.ReadFile(filepath.Join(home, ".gemini", "settings.json")); err != nil || !strings.Contains(string(b), `"gemini-api-key"`) {
				return fmt.Errorf("Gemini's settings.json (%v):\n%s", err, b)
			}
			return nil
		},
	})
}
