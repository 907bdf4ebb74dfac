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
	"syscall"
	"testing"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/fakemodel"
)

// realGemini is Gemini CLI: $CCBRIDGE_TEST_GEMINI, else
// .tools/agents/node_modules/.bin/gemini. Missing, the test is skipped,
// and fails under CI=true.
func realGemini(t *testing.T) string {
	t.Helper()
	for _, c := range []string{os.Getenv("CCBRIDGE_TEST_GEMINI"), toolsFile("agents/node_modules/.bin/gemini")} {
		if fi, err := os.Stat(c); c != "" && err == nil && fi.Mode()&0o111 != 0 {
			return c
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("Gemini CLI is missing (run scripts/install-agents.sh or set CCBRIDGE_TEST_GEMINI)")
	}
	t.Skip("Gemini CLI is not installed; run scripts/install-agents.sh")
	return ""
}

// geminiStart runs Gemini CLI under ccbridge --pty with ccbridge's own
// fake model, in a fresh git repository, with variables in the
// environment that would send it to another API, model or home if
// ccbridge passed them on, with a control socket beside stdio; it reads
// the capabilities.
func geminiStart(t *testing.T) *ptyCtl {
	t.Helper()
	gemini := realGemini(t)
	dir := mustReal(t, t.TempDir())
	if err := os.Mkdir(dir+"/.git", 0o755); err != nil {
		t.Fatal(err)
	}
	sid, sock := uuid.NewString(), ctlSocketPath(t)
	args := []string{"--ui", "control", "--pty", "--team", ctlTeam, "--agent-id", ctlAgent, "--allow-sender", ctlSender,
		"--session-id", sid, "--stable-after", "1s", "--cwd", dir, "--control", sock, "--fake-model", "default", "--", gemini}
	p := ptyBridge(t, sid, dir, args, "GEMINI_API_KEY=must-not-be-used", "GOOGLE_API_KEY=must-not-be-used",
		"GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:1", "GOOGLE_GENAI_USE_VERTEXAI=true", "GEMINI_MODEL=gemini-must-not-be-used",
		"GEMINI_CLI_HOME="+t.TempDir())
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

// TestPTYGemini: Gemini CLI's TUI reaches idle with no dialog left open
// (no login, trust, theme, update or IDE prompt); a prompt is acked ok
// and the fake model's answer appears on the screen; 20 retries of its
// request id are duplicates that type nothing; an interrupt during a slow
// answer is acked ok once Gemini is idle again, and the next prompt
// works; WRITEFILE brings up Gemini's approval of write_file; ccbridge
// killed with SIGKILL leaves no process of Gemini behind.
func TestPTYGemini(t *testing.T) {
	t.Parallel()
	p := geminiStart(t)
	p.waitState(0, "idle")
	if !p.shows("Type your message or @path/to/file") || !p.shows("Authenticated with gemini-api-key") || !p.shows(fakemodel.GeminiModel) {
		t.Fatalf("idle, but Gemini's prompt, its API key login or the model %s is not on the screen", fakemodel.GeminiModel)
	}
	for _, dialog := range []string{"Do you trust the files in this folder?", "How would you like to authenticate", "Enter Gemini API Key",
		"Waiting for authentication", "Select Theme", "update available", "Do you want to connect"} {
		if p.shows(dialog) {
			t.Errorf("a dialog is open: %q", dialog)
		}
	}

	tok := token("hello")
	h := p.geminiPrompt("hello", "hello "+tok, tok)
	p.waitFor("the answer to the prompt with "+tok+", and idle", func() bool { return p.geminiAnswered(tok) && p.state() == "idle" })
	for n := 1; n <= 20; n++ {
		ctlAck(t, p.stdio.request(h.with("meta", map[string]any{"retry_count": n}, "sent_at", ctlNow()).String()), h, "ok", true)
	}
	p.screenNow()
	if n := len(p.geminiPrompts(tok)); n != 1 {
		t.Errorf("the prompt shows %d times after 20 retries, want once", n)
	}

	// An interrupt during a slow answer (ESC, the default keys): acked
	// once the screen is stable again, the worker idle, the request
	// cancelled; the next prompt is answered.
	slowTok := token("slow")
	p.geminiPrompt("slow", "SLOW "+slowTok, slowTok)
	p.waitFor("the slow answer on the screen, Gemini at work", func() bool { return p.shows("counting") && p.shows("(esc to cancel, ") })
	at := p.mark()
	m := p.interruptReq(ctlID("int"))
	if d := ctlAck(t, p.stdio.request(m.String()), m, "ok", false); !strings.Contains(d, "stable") {
		t.Errorf("an interrupt of a working Gemini: detail %q, want the screen stable after the keys", d)
	}
	p.waitState(at, "idle")
	// The gemini profile says it draws inline, not on the alternate screen.
	if alt := get(p.screenNow(), "alt_screen"); alt.Type != gjson.False {
		t.Errorf("control.screen alt_screen %s, want false for Gemini CLI", alt.Raw)
	}
	if !p.shows("Request cancelled.") || p.shows("esc to cancel") {
		t.Errorf("after the interrupt the screen does not say the request was cancelled, or Gemini still works")
	}
	if n := strings.Count(strings.Join(p.transcript(), " "), "counting"); n >= 50 {
		t.Errorf("the screen shows the whole slow answer (%d times counting): it was not stopped", n)
	}
	tok2 := token("again")
	p.geminiPrompt("again", "hello "+tok2, tok2)
	p.waitFor("the answer after the interrupt", func() bool { return p.geminiAnswered(tok2) })

	// WRITEFILE: the fake model calls write_file, and Gemini asks before
	// it writes (its default approval mode); the question reaches the
	// controller as control.worker.approval, and its choice, sent as a
	// prompt's content, is taken. Allowed ("1"), the file is written;
	// asked again and denied (the label of its esc choice), it is not.
	p.writeFileApprovals(func(prompt string) { p.geminiPrompt("write", prompt, strings.TrimPrefix(prompt, "WRITEFILE ")) },
		func(open []byte) bool {
			return get(open, "kind").Str == "edit" && get(open, "question").Str == "Apply this change?" && get(open, "file").Str == "written.txt" &&
				get(open, "choices.#").Int() == 4 && get(open, "choices.0.label").Str == "Allow once" && get(open, "choices.3.key").Str == "esc"
		}, "Allow once", func() bool { return p.state() == "idle" && p.shows("Type your message") },
		approvalCase{"1", "1"}, approvalCase{"No, suggest changes", "esc"})

	// Gemini's home: made by ccbridge for it, holding the fake's
	// settings; killed with SIGKILL, ccbridge leaves it behind
	// (docs/fake-model.md): removed here.
	homes, _ := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("ccbridge-gemini-%d-*", p.b.cmd.Process.Pid)))
	t.Cleanup(func() {
		for _, h := range homes {
			os.RemoveAll(h)
		}
	})
	if len(homes) != 1 {
		t.Errorf("GEMINI_CLI_HOMEs of this ccbridge: %v, want one", homes)
	} else if b, err := os.ReadFile(filepath.Join(homes[0], ".gemini", "settings.json")); err != nil || !strings.Contains(string(b), `"gemini-api-key"`) {
		t.Errorf("Gemini's settings.json (%v):\n%s", err, b)
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
		t.Errorf("processes left in Gemini's session %d: %v", sid, left)
	}
}
