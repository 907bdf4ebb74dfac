package e2e

// `ccbridge --ui control --pty` end to end: the real Claude Code TUI under
// a pseudo-terminal, the fake model behind it, and lane 000 on stdio
// (docs/protocol/control.md, "pty workers"). The TUI starts offline and
// without dialogs because the test's HOME holds a prepared .claude.json
// (../shared/protocol/README.md, a.5): onboarding done, the fake model's
// API key approved, the working directory trusted. Helpers of this file
// start with pty.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/fakemodel"
)

const (
	// ptyAnswer is what the TUI draws for the fake model's fallback answer.
	ptyAnswer = "Hello from the mock model."
	// ptyWait bounds each wait for the TUI: its start, a turn, an
	// interrupt. Generous: CI runs four of these at once on two cores.
	ptyWait = 60 * time.Second
)

// ptyCtl is one `ccbridge --ui control --pty` with the TUI behind it, and
// what its screen shows as the notifications drew it.
type ptyCtl struct {
	*ctlWorker
	dir    string   // the TUI's working directory (a real path), trusted in $HOME/.claude.json
	pos    int      // how many lines of stdio.got the view has taken in
	rows   []string // the screen: control.worker.screen (and control.screen) rows
	scroll []string // control.worker.scrollback lines, oldest first
	states []string // control.worker.state states, in order
	// bus: a connection to the bus the worker is on (--bus), nil for none
	bus *nats.Conn
}

// ptyStart runs the TUI under ccbridge with --stable-after 1s (and
// extra, the CLI's flags) in a fresh working directory and HOME prepared
// for it, and reads the capabilities.
func ptyStart(t *testing.T, extra ...string) *ptyCtl {
	t.Helper()
	home, dir := t.TempDir(), mustReal(t, t.TempDir())
	cfg, err := json.Marshal(map[string]any{
		"hasCompletedOnboarding": true, "lastOnboardingVersion": "2.1.330", "theme": "dark",
		// The key fakeAPI's Env gives the CLI.
		"customApiKeyResponses": map[string]any{"approved": []string{fakemodel.APIKey}, "rejected": []string{}},
		"projects":              map[string]any{dir: map[string]any{"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	sid := uuid.NewString()
	args := []string{"--ui", "control", "--pty", "--team", ctlTeam, "--agent-id", ctlAgent, "--allow-sender", ctlSender,
		"--session-id", sid, "--stable-after", "1s", "--cwd", dir}
	p := ptyBridge(t, sid, dir, append(args, extra...), "HOME="+home)
	if caps := p.stdio.nextAnswer(); typeOf(caps) != "control.capabilities" || get(caps, "session_id").Str != sid {
		t.Fatalf("the first line is not the capabilities of session %s: %.500s", sid, caps)
	}
	return p
}

// ptyStartFakeModel runs the TUI under ccbridge --fake-model default
// (with --stable-after 1s and extra) in a fresh working directory, with
// the harness's empty HOME: ccbridge prepares the TUI's home itself.
func ptyStartFakeModel(t *testing.T, extra ...string) *ptyCtl {
	t.Helper()
	dir, sid := mustReal(t, t.TempDir()), uuid.NewString()
	args := []string{"--ui", "control", "--pty", "--team", ctlTeam, "--agent-id", ctlAgent, "--allow-sender", ctlSender,
		"--session-id", sid, "--stable-after", "1s", "--cwd", dir, "--fake-model", "default"}
	p := ptyBridge(t, sid, dir, append(args, extra...))
	if caps := p.stdio.nextAnswer(); typeOf(caps) != "control.capabilities" || get(caps, "session_id").Str != sid {
		t.Fatalf("the first line is not the capabilities of session %s: %.500s", sid, caps)
	}
	return p
}

// ptyBridge starts ccbridge with args (a pty worker in dir, session sid)
// and env, its stdio as the controller; on failure the screen is logged.
func ptyBridge(t *testing.T, sid, dir string, args []string, env ...string) *ptyCtl {
	t.Helper()
	w := &ctlWorker{t: t, sid: sid, o: ctlOpts{ui: "control", sid: sid}}
	w.b = startBridge(t, args, env...)
	w.stdio = &ctlLane{t: t, name: "stdio", lines: w.b.lines, write: func(s string) error {
		_, err := w.b.stdin.Write([]byte(s + "\n"))
		return err
	}}
	p := &ptyCtl{ctlWorker: w, dir: dir}
	t.Cleanup(func() {
		if t.Failed() {
			p.feed()
			t.Logf("the screen (state %s):\n%s", p.state(), p.screen())
		}
	})
	return p
}

// feed takes the lines read so far into the view, in order.
func (p *ptyCtl) feed() {
	for ; p.pos < len(p.stdio.got); p.pos++ {
		l := p.stdio.got[p.pos]
		switch typeOf(l) {
		case "control.worker.screen", "control.screen":
			if n := int(get(l, "rows").Int()); n != len(p.rows) {
				p.rows = make([]string, n)
			}
			for _, r := range get(l, "lines").Array() {
				if n := int(r.Get("n").Int()); n >= 0 && n < len(p.rows) {
					p.rows[n] = r.Get("text").Str
				}
			}
		case "control.worker.scrollback":
			for _, s := range get(l, "lines").Array() {
				p.scroll = append(p.scroll, s.Str)
			}
		case "control.worker.state":
			p.states = append(p.states, get(l, "state").Str)
		}
	}
}

// mark is the number of states seen: waitState(mark, …) waits for a state
// after every line read so far.
func (p *ptyCtl) mark() int {
	p.feed()
	return len(p.states)
}

func (p *ptyCtl) state() string {
	if len(p.states) == 0 {
		return "none"
	}
	return p.states[len(p.states)-1]
}

// transcript is what the TUI has drawn, top to bottom: the lines that
// scrolled away, then the screen.
func (p *ptyCtl) transcript() []string {
	return append(slices.Clip(p.scroll), p.rows...)
}

// screen is the screen's text, for failure messages (with the last
// lines that scrolled away).
func (p *ptyCtl) screen() string {
	var sb strings.Builder
	for _, s := range p.scroll[max(0, len(p.scroll)-10):] {
		sb.WriteString("  (scrolled) " + s + "\n")
	}
	for i, r := range p.rows {
		fmt.Fprintf(&sb, "  %2d|%s\n", i, r)
	}
	return sb.String()
}

// waitFor reads lines into the view until cond holds (looked at after
// each line, and every 20 ms for conditions on other things).
func (p *ptyCtl) waitFor(what string, cond func() bool) {
	p.t.Helper()
	deadline := time.NewTimer(ptyWait)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		p.feed()
		if cond() {
			return
		}
		select {
		case l, ok := <-p.stdio.lines:
			if !ok {
				p.t.Fatalf("ccbridge's output ended before %s; the last lines:\n%s", what, lastLines(p.stdio.got, 8))
			}
			if !gjson.ValidBytes(l) {
				p.t.Errorf("a line that is not JSON: %.300s", l)
			}
			p.stdio.got = append(p.stdio.got, l)
		case <-tick.C:
		case <-deadline.C:
			p.t.Fatalf("no %s within %v (state %s); the last lines:\n%s", what, ptyWait, p.state(), lastLines(p.stdio.got, 6))
		}
	}
}

// waitState waits for state after the first `from` states.
func (p *ptyCtl) waitState(from int, state string) {
	p.t.Helper()
	p.waitFor("control.worker.state "+state, func() bool { return slices.Contains(p.states[from:], state) })
}

// answered reports whether the TUI drew the fake model's answer below
// the last line that shows tok (the prompt as the TUI echoes it).
func (p *ptyCtl) answered(tok string) bool {
	lines := p.transcript()
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], tok) {
			return slices.ContainsFunc(lines[i+1:], func(s string) bool { return strings.Contains(s, ptyAnswer) })
		}
	}
	return false
}

// shows reports whether the screen (not what scrolled away) holds s.
func (p *ptyCtl) shows(s string) bool {
	return slices.ContainsFunc(p.rows, func(r string) bool { return strings.Contains(r, s) })
}

// screenNow asks for the whole screen (control.screen) and returns the
// answer, which the view takes in.
func (p *ptyCtl) screenNow() []byte {
	p.t.Helper()
	id := ctlID("screen")
	p.stdio.send(`{"type":"control.screen.request","v":1,"request_id":"` + id + `"}`)
	var ans []byte
	p.waitFor("the control.screen answer to "+id, func() bool {
		for _, l := range p.stdio.got[max(0, p.pos-64):p.pos] {
			if typeOf(l) == "control.screen" && get(l, "request_id").Str == id {
				ans = l
				return true
			}
		}
		return false
	})
	if n := len(get(ans, "lines").Array()); n != int(get(ans, "rows").Int()) || n == 0 {
		p.t.Errorf("control.screen with %d lines for %d rows: %.300s", n, get(ans, "rows").Int(), ans)
	}
	return ans
}

// ready waits for the TUI's first idle, and says how long it took.
func (p *ptyCtl) ready() {
	p.t.Helper()
	start := time.Now()
	p.waitState(0, "idle")
	if !p.shows("❯") {
		p.t.Fatalf("idle, but the TUI's prompt box is not on the screen")
	}
	p.t.Logf("the TUI was idle %.1f s after the capabilities", time.Since(start).Seconds())
}

// ptyUserText is the text of the last user message of a request body.
func ptyUserText(t *testing.T, body []byte) string {
	t.Helper()
	msgs := gjson.GetBytes(body, "messages").Array()
	if len(msgs) == 0 || msgs[len(msgs)-1].Get("role").Str != "user" {
		t.Fatalf("the request's last message is not the user's: %.300s", body)
	}
	c := msgs[len(msgs)-1].Get("content")
	if c.Type == gjson.String {
		return c.Str
	}
	var sb strings.Builder
	for _, b := range c.Array() {
		if b.Get("type").Str == "text" {
			sb.WriteString(b.Get("text").Str)
			sb.WriteByte('\n')
		}
	}
	return sb.String()
}

// TestPTYInjectInterruptPaste: one TUI session, three steps.
//
//  1. A slow answer (SLOW) is interrupted by control.interrupt.request:
//     ok once the screen is stable, the TUI says it was interrupted, the
//     worker is idle.
//  2. The next prompt, sent three times with one request_id (the later
//     ones acked ok, duplicate), reaches the model exactly once and its
//     answer is drawn below it.
//  3. A 100 KiB payload of 1,000 lines arrives whole, as one prompt.
func TestPTYInjectInterruptPaste(t *testing.T) {
	t.Parallel()
	p := ptyStart(t)
	p.ready()

	// 1. Interrupt a slow answer.
	slowTok := token("slow")
	s := p.stdinReq(ctlID("slow"), "SLOW "+slowTok)
	if d := ctlAck(t, p.stdio.request(s.String()), s, "ok", false); d == "" {
		t.Errorf("an injection's ack without a detail")
	}
	// The stream is under way: the model has the prompt, and the TUI
	// draws its text while it works.
	p.waitFor("the slow answer on the screen", func() bool {
		return len(ctlPrompts(t, slowTok)) > 0 && p.shows("counting") && p.shows("esc to interrupt")
	})
	at := p.mark()
	start := time.Now()
	m := p.interruptReq(ctlID("int"))
	d := ctlAck(t, p.stdio.request(m.String()), m, "ok", false)
	t.Logf("interrupt acked after %.1f s: %q", time.Since(start).Seconds(), d)
	if !strings.Contains(d, "stable") {
		t.Errorf("an interrupt of a running TUI: detail %q, want the screen stable after the keys", d)
	}
	p.waitState(at, "idle")
	sc := p.screenNow()
	if get(sc, "state").Str != "idle" || !p.shows("Interrupted") {
		t.Errorf("after the interrupt: state %q, want idle, and the screen should say Interrupted", get(sc, "state").Str)
	}
	// The claude profile says the TUI draws on the alternate screen.
	if alt := get(sc, "alt_screen"); alt.Type != gjson.True {
		t.Errorf("control.screen alt_screen %s, want true for Claude Code's TUI", alt.Raw)
	}
	// The whole answer is 50 times "counting " (5 s): the TUI shows fewer.
	if n := strings.Count(strings.Join(p.transcript(), " "), "counting"); n >= 50 {
		t.Errorf("the screen shows the whole slow answer (%d times counting): it was not stopped", n)
	}
	ctlPromptCount(t, slowTok, 1)

	// 2. The next prompt, retried: once to the model, answered on screen.
	tok := token("hello")
	h := p.stdinReq(ctlID("hello"), "hello "+tok)
	at = p.mark()
	p.stdio.send(h.String())
	p.stdio.send(h.with("meta", map[string]any{"retry_count": 1}, "sent_at", ctlNow()).String())
	ctlAck(t, p.stdio.nextAnswer(), h, "ok", false)
	ctlAck(t, p.stdio.nextAnswer(), h, "ok", true)
	p.waitFor("the answer to the prompt with "+tok, func() bool { return p.answered(tok) })
	p.waitState(at, "idle")
	ctlAck(t, p.stdio.request(h.with("meta", map[string]any{"retry_count": 2}, "sent_at", ctlNow()).String()), h, "ok", true)

	// 3. 100 KiB in 1,000 lines, as one paste, as one prompt.
	first, last := token("FIRST"), token("LAST")
	lines := []string{"the first line " + first}
	for i := 1; i < 999; i++ {
		lines = append(lines, "line "+strconv.Itoa(i)+" "+strings.Repeat("abcdefghij", 10))
	}
	lines = append(lines, "the last line "+last)
	payload := strings.Join(lines, "\n")
	if len(payload) < 100<<10 {
		t.Fatalf("the payload has %d bytes", len(payload))
	}
	big := p.stdinReq(ctlID("big"), payload)
	at = p.mark()
	ctlAck(t, p.stdio.request(big.String()), big, "ok", false)
	var body []byte
	p.waitFor("the model's request with the payload", func() bool {
		for _, r := range slices.Backward(fakeAPI(t).Requests()) {
			if r.Path == "/v1/messages" && r.Rule != "session-title" && strings.Contains(r.Prompt, first) {
				body = r.Body
				return true
			}
		}
		return false
	})
	text := ptyUserText(t, body)
	switch {
	case !strings.Contains(text, first) || !strings.Contains(text, last):
		t.Errorf("the prompt lacks a token (first %v, last %v); %d bytes", strings.Contains(text, first), strings.Contains(text, last), len(text))
	case !strings.Contains(text, payload):
		i := 0
		for i < len(text) && i < len(payload) && text[i] == payload[i] {
			i++
		}
		t.Errorf("the prompt (%d bytes) does not hold the payload (%d bytes) whole; they differ at byte %d: %q vs %q",
			len(text), len(payload), i, text[max(0, i-20):min(len(text), i+40)], payload[max(0, i-20):min(len(payload), i+40)])
	}
	ctlPromptCount(t, first, 1)
	// No part of it went as a prompt of its own.
	ctlPromptCount(t, "abcdefghij", 1)
	// On screen the TUI folds the paste (its first and last lines, "(N
	// lines hidden)" between), then the answer.
	p.waitFor("the answer to the payload", func() bool { return p.answered(last) })
	p.waitState(at, "idle")
	ctlPromptCount(t, tok, 1)
	ctlPromptCount(t, slowTok, 1)
}

// TestPTYKillTUI: the TUI killed with SIGKILL makes the worker exited;
// then a prompt is acked not_live and reaches nothing, and ccbridge ends
// with its input.
func TestPTYKillTUI(t *testing.T) {
	t.Parallel()
	// Under --fake-model with a HOME of nothing, ccbridge prepares the
	// TUI's own (no dialog stays open). In the permission mode that asks,
	// the TUI's prompts are approvals (the claude profile): a command
	// allowed by its number, then an edit denied by its label.
	p := ptyStartFakeModel(t, "--permission-mode", "default")
	p.ready()
	homes, _ := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("ccbridge-tui-%d-*", p.b.cmd.Process.Pid)))
	if len(homes) != 1 {
		t.Errorf("TUI homes of this ccbridge: %v, want one", homes)
	}
	for _, c := range []struct{ prompt, kind, answer, file string }{
		{"BASH", "command", "1", "bash_touched.txt"},
		{"WRITEFILE", "edit", "No", "written.txt"},
	} {
		from := len(p.stdio.got)
		p.promptOK("ask", c.prompt+" "+token("ask"))
		open := p.approval(from, "open")
		if get(open, "kind").Str != c.kind || get(open, "choices.0.label").Str != "Yes" || get(open, "choices.0.key").Str != "1" {
			t.Fatalf("the approval line: %s", open)
		}
		if c.kind == "command" && !strings.Contains(get(open, "command").Str, "bash_touched.txt") ||
			c.kind == "edit" && get(open, "file").Str != "written.txt" {
			t.Errorf("what is asked about: %s", open)
		}
		a := p.stdinReq(ctlID("answer"), c.answer)
		ctlAck(t, p.stdio.request(a.String()), a, "ok", false)
		closed := p.approval(from, "closed")
		path := filepath.Join(p.dir, c.file)
		if c.answer == "1" {
			p.waitFor(c.file+" written", func() bool { _, err := os.Stat(path); return err == nil })
			continue
		}
		if get(closed, "chosen.label").Str != "No" {
			t.Errorf("the closed line: %s", closed)
		}
		p.waitFor("idle after the denial", func() bool { return p.state() == "idle" })
		if _, err := os.Stat(path); err == nil {
			t.Errorf("%s was written though denied", c.file)
		}
	}
	cli := p.cliPID()
	execed(t, cli)
	at := p.mark()
	if err := syscall.Kill(cli, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.waitState(at, "exited")
	for _, l := range p.stdio.got {
		if typeOf(l) == "control.worker.state" && get(l, "state").Str == "exited" && !strings.Contains(get(l, "detail").Str, "killed") {
			t.Errorf("the exited state does not say the TUI was killed: %.300s", l)
		}
	}
	tok := token("DEAD")
	m := p.stdinReq(ctlID("dead"), "hello "+tok)
	if d := ctlAck(t, p.stdio.request(m.String()), m, "not_live", false); !strings.Contains(d, "not running") {
		t.Errorf("not_live detail %q, want the program not running", d)
	}
	p.b.stdin.Close()
	for p.stdio.read() {
	}
	t.Logf("ccbridge exited %d", p.b.wait())
	// The TUI's requests went to ccbridge's own fake, not the harness's.
	ctlPromptCount(t, tok, 0)
	if n := len(ctlPrompts(t, "BASH ask")); n != 0 {
		t.Errorf("the harness's fake model got %d of the TUI's prompts", n)
	}
	// The home ccbridge made is gone with it; the user's was not written.
	for _, h := range homes {
		if _, err := os.Stat(h); err == nil {
			t.Errorf("the TUI's home %s is still there after ccbridge exited", h)
		}
	}
	if entries, _ := os.ReadDir(p.b.home); len(entries) > 0 {
		t.Errorf("the user's HOME was written: %v", entries)
	}
}

// ptyDescendants returns pid's descendants.
func ptyDescendants(pid int) []int {
	var out []int
	for _, c := range children(pid) {
		out = append(append(out, c), ptyDescendants(c)...)
	}
	return out
}

// ptyInSession returns the live processes of session sid.
func ptyInSession(sid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && sessionOf(pid) == sid && running(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// TestPTYKillBridge: ccbridge killed with SIGKILL leaves no process
// behind: not the guardian, not the TUI, nothing the TUI started, nothing
// in the TUI's session.
func TestPTYKillBridge(t *testing.T) {
	t.Parallel()
	p := ptyStart(t)
	p.ready()
	cli := p.cliPID()
	execed(t, cli)
	procs := ptyDescendants(p.b.cmd.Process.Pid)
	// The guardian leads the terminal's session and process group; the
	// TUI runs in them.
	sid := sessionOf(cli)
	pgid, err := syscall.Getpgid(cli)
	if err != nil || sid <= 1 || !slices.Contains(procs, cli) {
		t.Fatalf("the TUI %d: session %d, group %d (%v), below ccbridge: %v", cli, sid, pgid, err, procs)
	}
	if err := p.b.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.b.wait()
	for _, pid := range procs {
		waitNotRunning(t, pid, "after kill -9 of ccbridge")
	}
	groupGone(t, pgid)
	if left := ptyInSession(sid); len(left) > 0 {
		t.Errorf("processes left in the TUI's session %d: %v", sid, left)
	}
}

// promptOK sends content as a new request and returns it, acked ok,
// as a controller would: a busy answer (an agent redraws on its own after
// a turn or its start: Codex names the thread in its status line, later
// on a loaded machine) is sent again under a new request id once ccbridge has been quiet for a
// second, five tries in all.
func (p *ptyCtl) promptOK(tag, content string) ctlMsg {
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
		return m
	}
}

// approvalCase is one WRITEFILE of an agent's approval test: the answer
// sent as a prompt's content, and the key its choice presses.
type approvalCase struct{ answer, key string }

// writeFileApprovals runs the fake model's WRITEFILE once per case
// (send sends a prompt as the agent needs it): the agent's question must
// arrive as an open control.worker.approval line that check accepts,
// before written.txt is there; a prompt meanwhile is busy, its detail
// naming the choices (busyHint); the first case's answer goes on the
// control socket, and its retry on stdio is a duplicate that presses
// nothing; the closed line names the key. Allowed (the first case) the
// file is written; denied (the next) it is not; idle says when the agent
// is idle again.
func (p *ptyCtl) writeFileApprovals(send func(prompt string), check func(open []byte) bool, busyHint string, idle func() bool, cases ...approvalCase) {
	t := p.t
	t.Helper()
	written := filepath.Join(p.dir, "written.txt")
	for i, c := range cases {
		os.Remove(written)
		from := len(p.stdio.got)
		send("WRITEFILE " + token("write"))
		open := p.approval(from, "open")
		if !check(open) {
			t.Fatalf("the approval line: %s", open)
		}
		if _, err := os.Stat(written); err == nil {
			t.Fatalf("written.txt is there before the controller answered")
		}
		// A prompt meanwhile is busy, naming the choices; nothing is typed.
		m := p.stdinReq(ctlID("meanwhile"), "hello")
		if d := ctlAck(t, p.stdio.request(m.String()), m, "busy", false); !strings.Contains(d, busyHint) {
			t.Errorf("a prompt while the approval is open: detail %q", d)
		}
		a, lane := p.stdinReq(ctlID("answer"), c.answer), p.stdio
		if i == 0 {
			lane = ctlDial(t, p.sock)
			if caps := lane.nextAnswer(); typeOf(caps) != "control.capabilities" || get(caps, "session_id").Str != p.sid {
				t.Fatalf("the socket's first line: %.300s", caps)
			}
		}
		if d := ctlAck(t, lane.request(a.String()), a, "ok", false); !strings.Contains(d, "choice") {
			t.Errorf("the answer %q: detail %q", c.answer, d)
		}
		ctlAck(t, p.stdio.request(a.with("meta", map[string]any{"retry_count": 1}, "sent_at", ctlNow()).String()), a, "ok", true)
		closed := p.approval(from, "closed")
		if get(closed, "approval_id").Str != get(open, "approval_id").Str || get(closed, "chosen.key").Str != c.key {
			t.Errorf("the closed line %s for %s", closed, open)
		}
		if i == 0 {
			p.waitFor("written.txt written", func() bool { _, err := os.Stat(written); return err == nil })
			p.waitFor("idle after the write", idle)
			continue
		}
		p.waitFor("idle after the denial", idle)
		if _, err := os.Stat(written); err == nil {
			t.Errorf("written.txt was written though denied")
		}
	}
}

// echoes are the lines of the transcript that begin with prefix (an
// agent's echo of a prompt: "› " for Codex, " > " for Gemini CLI) and
// hold tok.
func (p *ptyCtl) echoes(prefix, tok string) []int {
	var at []int
	for i, l := range p.transcript() {
		if strings.HasPrefix(l, prefix) && strings.Contains(l, tok) {
			at = append(at, i)
		}
	}
	return at
}

// answeredBelow reports whether answer shows below the last echo of the
// prompt holding tok.
func (p *ptyCtl) answeredBelow(prefix, tok, answer string) bool {
	at := p.echoes(prefix, tok)
	if len(at) == 0 {
		return false
	}
	lines := p.transcript()
	return slices.ContainsFunc(lines[at[len(at)-1]+1:], func(s string) bool { return strings.Contains(s, answer) })
}
