package e2e

// The acceptance every agent under `ccbridge --ui control --pty
// --fake-model default -- AGENT` passes (TestPTYCodex, TestPTYGemini),
// one session each: docs/protocol/control.md, "pty workers".

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/uuid"
)

// realAgent is an agent's CLI: $envVar, else
// .tools/agents/node_modules/.bin/name (scripts/install-agents.sh).
// Missing, the test is skipped, and fails under CI=true.
func realAgent(t *testing.T, name, envVar string) string {
	t.Helper()
	for _, c := range []string{os.Getenv(envVar), toolsFile("agents/node_modules/.bin/" + name)} {
		if fi, err := os.Stat(c); c != "" && err == nil && fi.Mode()&0o111 != 0 {
			return c
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is missing (run scripts/install-agents.sh or set %s)", name, envVar)
	}
	t.Skip(name + " is not installed; run scripts/install-agents.sh")
	return ""
}

// agentStart runs cmd under ccbridge --ui control --pty with ccbridge's
// own fake model, in a fresh git repository (where an agent would ask to
// trust the folder: ccbridge's home for it trusts it), with a control
// socket beside stdio and env, and reads the capabilities.
func agentStart(t *testing.T, cmd, bridgeArgs []string, env ...string) *ptyCtl {
	t.Helper()
	dir := mustReal(t, t.TempDir())
	if err := os.Mkdir(dir+"/.git", 0o755); err != nil {
		t.Fatal(err)
	}
	sid, sock := uuid.NewString(), ctlSocketPath(t)
	args := []string{"--ui", "control", "--pty", "--team", ctlTeam, "--agent-id", ctlAgent, "--allow-sender", ctlSender,
		"--session-id", sid, "--stable-after", "1s", "--cwd", dir, "--control", sock, "--fake-model", "default"}
	args = append(append(args, bridgeArgs...), "--")
	p := ptyBridge(t, sid, dir, append(args, cmd...), env...)
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

// agentSpec is what the acceptance needs to know of an agent: what its
// screen shows, how a prompt is sent and found, and its approval.
type agentSpec struct {
	name string
	// ready: texts the idle screen shows once started; dialogs: texts of
	// dialogs that must not be open then.
	ready, dialogs []string
	// prompt sends content (holding tok) as a new request, acked ok.
	prompt func(tag, content, tok string) ctlMsg
	// echo begins the agent's echo of a prompt; answer is the fake
	// model's answer as it draws it.
	echo, answer string
	// slow reports the slow answer on the screen, the agent at work;
	// interrupted, when set, checks the screen after the interrupt.
	slow        func() bool
	interrupted func() error
	// altScreen: the agent draws on the alternate screen (its profile).
	altScreen bool
	// approval accepts WRITEFILE's open control.worker.approval line;
	// busyHint is in the detail of a prompt refused meanwhile; idle says
	// the agent is idle after an answer; answers are the cases, allowed
	// then denied.
	approval func(open []byte) bool
	busyHint string
	idle     func() bool
	answers  []approvalCase
	// home begins the name of the home ccbridge made for the agent under
	// --fake-model; homeHolds checks what is in it.
	home      string
	homeHolds func(home string) error
}

// agentAcceptance: the agent reaches idle with no dialog left open; a
// prompt is acked ok and the fake model's answer appears on the screen;
// 20 retries of its request id are duplicates that type nothing; an
// interrupt during a slow answer is acked ok once the agent is idle
// again, and the next prompt works; WRITEFILE's approval arrives as
// control.worker.approval, allowed from the controller (on the control
// socket) the file is written, denied in the next turn it is not;
// ccbridge killed with SIGKILL leaves no process of the agent behind.
func (p *ptyCtl) agentAcceptance(a agentSpec) {
	t := p.t
	t.Helper()
	p.waitState(0, "idle")
	p.waitFor(a.name+"'s screen when ready: "+strings.Join(a.ready, ", "), func() bool {
		return !slices.ContainsFunc(a.ready, func(s string) bool { return !p.shows(s) })
	})
	for _, dialog := range a.dialogs {
		if p.shows(dialog) {
			t.Errorf("a dialog is open: %q", dialog)
		}
	}

	tok := token("hello")
	h := a.prompt("hello", "hello "+tok, tok)
	p.waitFor("the answer to the prompt with "+tok+", and idle", func() bool { return p.answeredBelow(a.echo, tok, a.answer) && p.state() == "idle" })
	for n := 1; n <= 20; n++ {
		retry := h.with("meta", map[string]any{"retry_count": n}, "sent_at", ctlNow()).String()
		if p.bus != nil && n%2 == 1 {
			// On the bus (--bus): the request ids are kept there.
			ctlAck(t, busCtl(t, p.bus, "ccbridge.ctl."+ctlTeam+"."+ctlAgent, retry), h, "ok", true)
			continue
		}
		ctlAck(t, p.stdio.request(retry), h, "ok", true)
	}
	p.screenNow()
	if n := len(p.echoes(a.echo, tok)); n != 1 {
		t.Errorf("the prompt shows %d times after 20 retries, want once", n)
	}

	// An interrupt during a slow answer (ESC, the default keys): acked
	// once the screen is stable again, the worker idle, the answer cut
	// short; the next prompt is answered.
	slowTok := token("slow")
	a.prompt("slow", "SLOW "+slowTok, slowTok)
	p.waitFor("the slow answer on the screen", a.slow)
	at := p.mark()
	m := p.interruptReq(ctlID("int"))
	if d := ctlAck(t, p.stdio.request(m.String()), m, "ok", false); !strings.Contains(d, "stable") {
		t.Errorf("an interrupt of a working %s: detail %q, want the screen stable after the keys", a.name, d)
	}
	p.waitState(at, "idle")
	if alt := get(p.screenNow(), "alt_screen"); alt.Bool() != a.altScreen {
		t.Errorf("control.screen alt_screen %s for %s, want %v (its profile)", alt.Raw, a.name, a.altScreen)
	}
	if a.interrupted != nil {
		if err := a.interrupted(); err != nil {
			t.Error(err)
		}
	}
	if n := strings.Count(strings.Join(p.transcript(), " "), "counting"); n >= 50 {
		t.Errorf("the screen shows the whole slow answer (%d times counting): it was not stopped", n)
	}
	tok2 := token("again")
	a.prompt("again", "hello "+tok2, tok2)
	p.waitFor("the answer after the interrupt", func() bool { return p.answeredBelow(a.echo, tok2, a.answer) })

	p.writeFileApprovals(func(prompt string) { a.prompt("write", prompt, strings.TrimPrefix(prompt, "WRITEFILE ")) },
		a.approval, a.busyHint, a.idle, a.answers...)

	// The agent's home, made by ccbridge; killed with SIGKILL, ccbridge
	// leaves it behind (docs/fake-model.md): removed here.
	homes, _ := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("%s-%d-*", a.home, p.b.cmd.Process.Pid)))
	t.Cleanup(func() {
		for _, h := range homes {
			os.RemoveAll(h)
		}
	})
	if len(homes) != 1 {
		t.Errorf("%s homes of this ccbridge: %v, want one", a.name, homes)
	} else if err := a.homeHolds(homes[0]); err != nil {
		t.Error(err)
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
		t.Errorf("processes left in %s's session %d: %v", a.name, sid, left)
	}
}
