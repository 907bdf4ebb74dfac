package e2e

// `ccbridge --ui control --pty --fake-model default -- gemini`: the real
// Gemini CLI's TUI (scripts/install-agents.sh) under a pseudo-terminal,
// pointed by ccbridge at its own fake model's Gemini API
// (docs/fake-model.md), driven through lane 000 on stdio.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

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
// ccbridge passed them on; it reads the capabilities.
func geminiStart(t *testing.T) *ptyCtl {
	t.Helper()
	gemini := realGemini(t)
	dir := mustReal(t, t.TempDir())
	if err := os.Mkdir(dir+"/.git", 0o755); err != nil {
		t.Fatal(err)
	}
	sid := uuid.NewString()
	args := []string{"--ui", "control", "--pty", "--team", ctlTeam, "--agent-id", ctlAgent, "--allow-sender", ctlSender,
		"--session-id", sid, "--stable-after", "1s", "--cwd", dir, "--fake-model", "default", "--", gemini}
	p := ptyBridge(t, sid, dir, args, "GEMINI_API_KEY=must-not-be-used", "GOOGLE_API_KEY=must-not-be-used",
		"GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:1", "GOOGLE_GENAI_USE_VERTEXAI=true", "GEMINI_MODEL=gemini-must-not-be-used",
		"GEMINI_CLI_HOME="+t.TempDir())
	caps := p.stdio.nextAnswer()
	if typeOf(caps) != "control.capabilities" || get(caps, "session_id").Str == "" || get(caps, "session_id").Str == sid {
		t.Fatalf("the first line is not the capabilities of a session of the worker's own: %.500s", caps)
	}
	p.sid = get(caps, "session_id").Str
	p.o.sid = p.sid
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
func (p *ptyCtl) geminiPrompts(tok string) []int {
	var at []int
	for i, l := range p.transcript() {
		if strings.HasPrefix(l, " > ") && strings.Contains(l, tok) {
			at = append(at, i)
		}
	}
	return at
}

// geminiAnswered reports whether Gemini drew the fake model's answer
// below its echo of the prompt holding tok.
func (p *ptyCtl) geminiAnswered(tok string) bool {
	at := p.geminiPrompts(tok)
	if len(at) == 0 {
		return false
	}
	lines := p.transcript()
	return slices.ContainsFunc(lines[at[len(at)-1]+1:], func(s string) bool { return strings.Contains(s, "✦ "+ptyAnswer) })
}

// geminiPrompt sends content (holding tok) as a new request, acked ok, as
// a controller would: a busy answer is sent again under a new request id
// once ccbridge has been quiet for a second. Then geminiSubmit.
func (p *ptyCtl) geminiPrompt(tag, content, tok string) ctlMsg {
	p.t.Helper()
	for try := 1; ; try++ {
		m := p.stdinReq(ctlID(tag), content)
		ans := p.stdio.request(m.String())
		if get(ans, "result").Str == "busy" && try < 5 {
			p.t.Logf("try %d: busy (%s); again once quiet", try, get(ans, "detail").Str)
			p.quietFor(time.Second)
			continue
		}
		ctlAck(p.t, ans, m, "ok", false)
		p.geminiSubmit(tok)
		return m
	}
}

// geminiSubmit waits until Gemini takes the prompt holding tok, pressing
// return again when it is left in the input box, and says how many times
// it did. Gemini CLI 0.61.0 takes a return that it reads within 30 to 40
// ms of a paste for a new line in its input box (with no kitty keyboard
// protocol, which ccbridge's terminal does not offer); when it is slow to
// read (busy with its start, or on a loaded machine) it can read
// ccbridge's paste and return, 100 ms apart, together. The prompt then
// waits in the box, and the controller presses return again: a request
// of one space.
func (p *ptyCtl) geminiSubmit(tok string) int {
	p.t.Helper()
	for again := 0; ; again++ {
		stuck := false
		p.waitFor("Gemini at work on the prompt with "+tok+", or that prompt left in its input box", func() bool {
			in := strings.Contains(p.geminiInput(), tok)
			stuck = in && p.state() == "idle"
			return stuck || !in && len(p.geminiPrompts(tok)) > 0
		})
		if !stuck {
			return again
		}
		if again == 2 {
			p.t.Fatalf("the prompt with %s is still in Gemini's input box after three returns", tok)
		}
		p.t.Logf("the return after the prompt with %s became a new line in Gemini's input box; return again", tok)
		m := p.stdinReq(ctlID("return"), " ")
		ctlAck(p.t, p.stdio.request(m.String()), m, "ok", false)
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
	p.screenNow()
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
	// it writes (its default approval mode).
	wTok := token("write")
	p.geminiPrompt("write", "WRITEFILE "+wTok, wTok)
	approval := []string{"? WriteFile  Writing to written.txt", "│ 1 hello world", "Apply this change?",
		"● 1. Allow once", "2. Allow for this session", "3. Modify with external editor", "4. No, suggest changes (esc)", "Action Required"}
	p.waitFor("Gemini's approval of write_file", func() bool {
		return !slices.ContainsFunc(approval, func(s string) bool { return !p.shows(s) })
	})
	if _, err := os.Stat(filepath.Join(p.dir, "written.txt")); err == nil {
		t.Errorf("written.txt was written before it was approved")
	}
	p.screenNow()
	t.Logf("Gemini's approval of write_file:\n%s", p.screen())

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
