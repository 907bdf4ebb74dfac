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
	"syscall"
	"testing"

	"github.com/google/uuid"
)

// codexAnswer is what Codex's TUI draws for the fake model's fallback
// answer (without the thinking block, which the Responses API leaves out).
const codexAnswer = "Hello from the mock model."

// realCodex is the Codex CLI: $CCBRIDGE_TEST_CODEX, else
// .tools/agents/node_modules/.bin/codex. Missing, the test is skipped,
// and fails under CI=true.
func realCodex(t *testing.T) string {
	t.Helper()
	for _, c := range []string{os.Getenv("CCBRIDGE_TEST_CODEX"), toolsFile("agents/node_modules/.bin/codex")} {
		if fi, err := os.Stat(c); c != "" && err == nil && fi.Mode()&0o111 != 0 {
			return c
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("the Codex CLI is missing (run scripts/install-agents.sh or set CCBRIDGE_TEST_CODEX)")
	}
	t.Skip("the Codex CLI is not installed; run scripts/install-agents.sh")
	return ""
}

// codexStart runs Codex (with codexArgs) under ccbridge --pty with
// ccbridge's own fake model, in a fresh git repository (where Codex would
// ask to trust the folder: ccbridge's config trusts it), with a control
// socket beside stdio, and reads the capabilities.
func codexStart(t *testing.T, codexArgs ...string) *ptyCtl {
	t.Helper()
	codex := realCodex(t)
	dir := mustReal(t, t.TempDir())
	if err := os.Mkdir(dir+"/.git", 0o755); err != nil {
		t.Fatal(err)
	}
	sid, sock := uuid.NewString(), ctlSocketPath(t)
	args := []string{"--ui", "control", "--pty", "--team", ctlTeam, "--agent-id", ctlAgent, "--allow-sender", ctlSender,
		"--session-id", sid, "--stable-after", "1s", "--cwd", dir, "--control", sock, "--fake-model", "default", "--", codex}
	args = append(args, codexArgs...)
	p := ptyBridge(t, sid, dir, args, "OPENAI_API_KEY=sk-must-not-be-used", "OPENAI_BASE_URL=http://127.0.0.1:1/v1")
	// --session-id is the Claude CLI's: another program's worker names a
	// session of its own, which the capabilities say.
	caps := p.stdio.nextAnswer()
	if typeOf(caps) != "control.capabilities" || get(caps, "session_id").Str == "" || get(caps, "session_id").Str == sid {
		t.Fatalf("the first line is not the capabilities of a session of the worker's own: %.500s", caps)
	}
	p.sid = get(caps, "session_id").Str
	p.o.sid = p.sid
	p.sock = sock
	p.waitSocket()
	return p
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

// codexPrompts are the lines where Codex echoes a prompt holding tok
// ("› hello …"; its status line names the thread after the first prompt
// too, which is not one of them).
func (p *ptyCtl) codexPrompts(tok string) []int { return p.echoes("› ", tok) }

// codexAnswered reports whether Codex drew the fake model's answer below
// its echo of the prompt holding tok.
func (p *ptyCtl) codexAnswered(tok string) bool { return p.answeredBelow("› ", tok, codexAnswer) }

// TestPTYCodex: Codex's TUI reaches idle with no dialog left open (no
// trust, login, update or model prompt); a prompt is acked ok and the
// fake model's answer appears on the screen; 20 retries of its request id
// are duplicates that type nothing; an interrupt during a slow answer is
// acked ok once Codex is idle again, and the next prompt works; ccbridge
// killed with SIGKILL leaves no process of Codex behind.
func TestPTYCodex(t *testing.T) {
	t.Parallel()
	// Its read-only sandbox asks before every edit (in the workspace-write
	// sandbox of a trusted folder an edit inside it is not asked about).
	p := codexStart(t, "-s", "read-only", "-a", "on-request")
	p.waitState(0, "idle")
	if !p.shows("Ask Codex to do anything") {
		t.Fatalf("idle, but Codex's prompt is not on the screen")
	}
	for _, dialog := range []string{"Trust this folder", "Sign in", "Update available", "Try new model"} {
		if p.shows(dialog) {
			t.Errorf("a dialog is open: %q", dialog)
		}
	}

	tok := token("hello")
	h := p.promptOK("hello", "hello "+tok)
	p.waitFor("the answer to the prompt with "+tok+", and idle", func() bool { return p.codexAnswered(tok) && p.state() == "idle" })
	for n := 1; n <= 20; n++ {
		ctlAck(t, p.stdio.request(h.with("meta", map[string]any{"retry_count": n}, "sent_at", ctlNow()).String()), h, "ok", true)
	}
	p.screenNow()
	if n := len(p.codexPrompts(tok)); n != 1 {
		t.Errorf("the prompt shows %d times after 20 retries, want once", n)
	}

	// An interrupt during a slow answer (ESC, the default keys): acked
	// once the screen is stable again, the worker idle, the answer cut
	// short; the next prompt is answered.
	slowTok := token("slow")
	p.promptOK("slow", "SLOW "+slowTok)
	p.waitFor("the slow answer on the screen", func() bool { return p.shows("counting") })
	at := p.mark()
	m := p.interruptReq(ctlID("int"))
	if d := ctlAck(t, p.stdio.request(m.String()), m, "ok", false); !strings.Contains(d, "stable") {
		t.Errorf("an interrupt of a working Codex: detail %q, want the screen stable after the keys", d)
	}
	p.waitState(at, "idle")
	// The codex profile says it draws on the alternate screen.
	if alt := get(p.screenNow(), "alt_screen"); !alt.Bool() {
		t.Errorf("control.screen alt_screen %s, want true for Codex", alt.Raw)
	}
	if n := strings.Count(strings.Join(p.transcript(), " "), "counting"); n >= 50 {
		t.Errorf("the screen shows the whole slow answer (%d times counting): it was not stopped", n)
	}
	tok2 := token("again")
	p.promptOK("again", "hello "+tok2)
	p.waitFor("the answer after the interrupt", func() bool { return p.codexAnswered(tok2) })

	// WRITEFILE: Codex asks to apply its patch; the question reaches the
	// controller as control.worker.approval, and its choice, sent as a
	// prompt's content, is taken (the first answer on the control socket,
	// its retry on stdio). Allowed, the file is written; asked again and
	// denied, it is not.
	p.writeFileApprovals(func(prompt string) { p.promptOK("write", prompt) },
		func(open []byte) bool {
			return get(open, "kind").Str == "edit" && get(open, "question").Str == "Would you like to make the following edits?" &&
				strings.HasSuffix(get(open, "file").Str, "written.txt") && get(open, "choices.#").Int() == 3 &&
				get(open, "choices.0.key").Str == "y" && get(open, "choices.2.key").Str == "esc"
		}, "Yes, proceed", func() bool { return p.state() == "idle" },
		approvalCase{"y", "y"}, approvalCase{"No, and tell Codex what to do differently", "esc"})

	// Codex's home: made by ccbridge for it, holding the fake's config
	// with the folder trusted; killed with SIGKILL, ccbridge leaves it
	// behind (docs/fake-model.md): removed here.
	homes, _ := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("ccbridge-codex-%d-*", p.b.cmd.Process.Pid)))
	t.Cleanup(func() {
		for _, h := range homes {
			os.RemoveAll(h)
		}
	})
	if len(homes) != 1 {
		t.Errorf("CODEX_HOMEs of this ccbridge: %v, want one", homes)
	} else if b, err := os.ReadFile(filepath.Join(homes[0], "config.toml")); err != nil || !strings.Contains(string(b), `[projects."`+p.dir+`"]`) {
		t.Errorf("Codex's config.toml (%v) does not trust %s:\n%s", err, p.dir, b)
	}

	cli := p.cliPID()
	execed(t, cli)
	procs := ptyDescendants(p.b.cmd.Process.Pid)
	sid := sessionOf(cli)
	if err := p.b.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.b.wait()
	for _, pid := range procs {
		waitNotRunning(t, pid, "after kill -9 of ccbridge")
	}
	if left := ptyInSession(sid); len(left) > 0 {
		t.Errorf("processes left in Codex's session %d: %v", sid, left)
	}
}
