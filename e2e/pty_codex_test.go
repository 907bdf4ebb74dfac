package e2e

// `ccbridge --ui control --pty --fake-model default -- codex`: the real
// Codex CLI's TUI (scripts/install-agents.sh) under a pseudo-terminal,
// pointed by ccbridge at its own fake model's Responses API
// (docs/fake-model.md), driven through lane 000 on stdio.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// codexAnswer is what Codex's TUI draws for the fake model's fallback
// answer (without the thinking block, which the Responses API leaves out).
const codexAnswer = "Hello from the mock model."

// codexStart runs Codex (with codexArgs) under ccbridge (agentStart),
// with variables in the environment that would send it to the real API
// if ccbridge passed them on.
func codexStart(t *testing.T, bridgeArgs []string, codexArgs ...string) *ptyCtl {
	t.Helper()
	cmd := append([]string{realAgent(t, "codex", "CCBRIDGE_TEST_CODEX")}, codexArgs...)
	return agentStart(t, cmd, bridgeArgs, "OPENAI_API_KEY=sk-must-not-be-used", "OPENAI_BASE_URL=http://127.0.0.1:1/v1")
}

// approval waits for a control.worker.approval line of status after the
// first `from` lines read, and returns it.
func (p *ptyCtl) approval(from int, status string) []byte {
	p.t.Helper()
	var found []byte
	p.waitFor("control.worker.approval "+status, func() bool {
		for _, l := range p.stdio.got[from:] {
			if typeOf(l) == "control.worker.approval" && get(l, "status").Str == status {
				found = l
				return true
			}
		}
		return false
	})
	return found
}

// codexAnswered reports whether Codex drew the fake model's answer below
// its echo of the prompt holding tok ("› hello …").
func (p *ptyCtl) codexAnswered(tok string) bool { return p.answeredBelow("› ", tok, codexAnswer) }

// TestPTYCodex: the acceptance of a pty agent (agentAcceptance) for
// Codex, in its read-only sandbox, which asks before every edit (in the
// workspace-write sandbox of a trusted folder an edit inside it is not
// asked about).
func TestPTYCodex(t *testing.T) {
	t.Parallel()
	// On the bus too (docs/protocol/bus.md, "Lanes 000 and 001"): half of
	// the retries come there, and a screen is asked for there.
	url := busStartServer(t, nil)
	p := codexStart(t, []string{"--bus", url}, "-s", "read-only", "-a", "on-request")
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	p.bus = nc
	busEventually(t, 20*time.Second, "the worker's screen on the bus", func() string {
		m, err := nc.Request("ccbridge.ctl."+ctlTeam+"."+ctlAgent, []byte(`{"type":"control.screen.request","v":1,"request_id":"bus-screen"}`), time.Second)
		if err != nil {
			return err.Error()
		}
		if typeOf(m.Data) != "control.screen" || get(m.Data, "request_id").Str != "bus-screen" || len(get(m.Data, "lines").Array()) == 0 {
			return string(m.Data)
		}
		return ""
	})
	p.agentAcceptance(agentSpec{
		name:    "Codex",
		ready:   []string{"Ask Codex to do anything"},
		dialogs: []string{"Trust this folder", "Sign in", "Update available", "Try new model"},
		prompt:  func(tag, content, _ string) ctlMsg { return p.promptOK(tag, content) },
		echo:    "› ", answer: codexAnswer,
		slow:      func() bool { return p.shows("counting") },
		altScreen: true,
		approval: func(open []byte) bool {
			return get(open, "kind").Str == "edit" && get(open, "question").Str == "Would you like to make the following edits?" &&
				strings.HasSuffix(get(open, "file").Str, "written.txt") && get(open, "choices.#").Int() == 3 &&
				get(open, "choices.0.key").Str == "y" && get(open, "choices.2.key").Str == "esc"
		},
		busyHint: "Yes, proceed",
		idle:     func() bool { return p.state() == "idle" },
		answers:  []approvalCase{{"y", "y"}, {"No, and tell Codex what to do differently", "esc"}},
		// Made by ccbridge for it, holding the fake's config with the
		// folder trusted.
		home: "ccbridge-codex",
		homeHolds: func(home string) error {
			if b, err := os.ReadFile(filepath.Join(home, "config.toml")); err != nil || !strings.Contains(string(b), `[projects."`+p.dir+`"]`) {
				return fmt.Errorf("Codex's config.toml (%v) does not trust %s:\n%s", err, p.dir, b)
			}
			return nil
		},
	})
}
