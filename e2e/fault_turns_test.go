package e2e

// One terminal message per prompt, in every dialect, whatever happens to
// the prompt: the CLI merges prompts queued during a turn into one turn
// (one result for several user lines), a queued prompt is cancelled, the
// UI's input ends while prompts are queued, the CLI is killed with kill -9
// mid-turn, or ccbridge is told to shut down.

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// ---- ipc: the terminal message is turn_complete, turn_cancelled or an
// error with recoverable false.

// ipcBusy starts an ipc session whose first prompt streams slowly, and
// sends queued more prompts while it streams; once the CLI has read them
// (its session file holds an enqueue for each), it returns the session's
// id and the lines read so far.
func ipcBusy(t *testing.T, b *bridge, queued ...string) (string, [][]byte) {
	t.Helper()
	sid := expectSessionInit(t, b)
	return sid, ipcBusyIn(t, b, sid, queued...)
}

// ipcBusyIn is ipcBusy in session sid, already announced and idle,
// maybe after other turns.
func ipcBusyIn(t *testing.T, b *bridge, sid string, queued ...string) [][]byte {
	t.Helper()
	file := sessionFile(t, b.home, b.dir, sid)
	data, _ := os.ReadFile(file)
	before := count(bytes.Split(data, []byte("\n")), isEnqueue)
	b.send(userMessage("SLOW " + token("first")))
	lines := ipcUntil(t, b, "streaming text", func(l []byte) bool {
		if isTerminal(l) {
			t.Fatalf("the turn ended before it streamed: %.400s", l)
		}
		return typeOf(l) == "assistant_text" && get(l, "is_partial").Bool()
	})
	for _, q := range queued {
		b.send(userMessage(q))
	}
	waitSessionFile(t, file, "the queued prompts", before+1+len(queued), isEnqueue)
	return lines
}

// terminals lists the terminal messages among lines, as type/code-or-reason.
func terminals(lines [][]byte) []string {
	var ts []string
	for _, l := range lines {
		if isTerminal(l) {
			s := typeOf(l) + "/" + get(l, "code").Str + get(l, "reason").Str
			if typeOf(l) == "turn_complete" {
				s += get(l, "subtype").Str
			}
			if get(l, "merged").Bool() {
				s += "/merged"
			}
			ts = append(ts, s)
		}
	}
	return ts
}

// ipcTerminals reads until n terminal messages came, then checks that no
// other follows within ipcQuiet.
func ipcTerminals(t *testing.T, b *bridge, n int) [][]byte {
	t.Helper()
	var lines [][]byte
	for got := 0; got < n; {
		l, err := recv(t, b, ipcWait)
		if err != nil {
			t.Fatalf("%d terminal messages %v for %d prompts, then %v", got, terminals(lines), n, err)
		}
		lines = append(lines, l)
		if isTerminal(l) {
			got++
		}
	}
	for _, l := range quiet(t, b, ipcQuiet) {
		lines = append(lines, l)
		if isTerminal(l) {
			t.Errorf("a terminal message more than the %d prompts: %.400s", n, l)
		}
	}
	return lines
}

// TestFaultTurnsIPCMerged: three prompts sent during one turn; the CLI
// runs the first, then the two queued ones merged into one turn with one
// result. Each prompt gets exactly one terminal message: the merged one a
// turn_complete marked merged. The count does not drift: the next prompt
// gets exactly one.
func ipcFaultTurnsMerged(t *testing.T, s *ipcSession) {
	b := s.b
	ipcBusyIn(t, b, s.sid, "hello two", "hello three")
	lines := ipcTerminals(t, b, 3)
	ts := terminals(lines)
	if strings.Join(ts, " ") != "turn_complete/success turn_complete/success turn_complete/success/merged" {
		t.Errorf("terminal messages %v, want two turn_complete and one marked merged", ts)
	}
	complete(t, turn(t, b, "hello four"))
}

// TestFaultTurnsIPCCancelQueued: an interrupt with cancel_queued while two
// prompts are queued: the running turn ends turn_cancelled, and each
// queued prompt gets turn_cancelled (reason cancel_queued), in order.
func ipcFaultTurnsCancelQueued(t *testing.T, s *ipcSession) {
	b := s.b
	ipcBusyIn(t, b, s.sid, "hello two", "hello three")
	b.send(`{"type":"interrupt","cancel_queued":true}`)
	ts := terminals(ipcTerminals(t, b, 3))
	if strings.Join(ts, " ") != "turn_cancelled/aborted_streaming turn_cancelled/cancel_queued turn_cancelled/cancel_queued" {
		t.Errorf("terminal messages %v, want the interrupted turn's and two cancel_queued", ts)
	}
	complete(t, turn(t, b, "hello four"))
}

// TestFaultTurnsIPCEndOfInput: the UI's input ends while a turn runs and
// two prompts are queued: the CLI finishes them (merged), and each prompt
// has its terminal message before ccbridge exits. It is
// TestIPCOneSession's last scenario.
func ipcFaultTurnsEndOfInput(t *testing.T, s *ipcSession) {
	b := s.b
	lines := ipcBusyIn(t, b, s.sid, "hello two", "hello three")
	b.stdin.Close()
	lines = append(lines, b.rest()...)
	if ts := terminals(lines); len(ts) != 3 {
		t.Errorf("terminal messages %v before ccbridge exited, want 3", ts)
	}
	if code := b.wait(); code != 0 {
		t.Errorf("ccbridge exited with %d", code)
	}
}

// TestFaultTurnsIPCKilled: kill -9 of the CLI mid-turn with two prompts
// queued: one error each, whether the UI's input is still open, ended
// before the kill, or ccbridge is shutting down (SIGTERM) when the CLI
// dies. Each case is the scenario of a shared session: "input open" and
// "during shutdown" (its last) in TestIPCChildKilled, "after the end of
// input" the last of TestIPCLineCap. ipcFaultTurnsKilled is the two that
// end ccbridge, with the UI's input ended (when "after the end of input")
// or ccbridge shutting down (when "during shutdown") before the kill, in
// session s, idle.
func ipcFaultTurnsKilled(when string) func(t *testing.T, s *ipcSession) {
	return func(t *testing.T, s *ipcSession) {
		b := s.b
		lines := ipcBusyIn(t, b, s.sid, "hello two", "hello three")
		switch when {
		case "after the end of input":
			b.stdin.Close()
		case "during shutdown":
			// SIGTERM stops the CLI in stages: close its stdin, then
			// signals. The kill comes first.
			logFrom := b.stderrLen()
			b.cmd.Process.Signal(syscall.SIGTERM)
			b.waitStderrFrom(logFrom, "shutting down")
		}
		killChild(t, b)
		lines = append(lines, b.rest()...)
		ts := terminals(lines)
		want := "error/child_exited error/child_exited error/child_exited"
		if strings.Join(ts, " ") != want {
			t.Errorf("terminal messages %v, want %s", ts, want)
		}
	}
}

// ipcFaultTurnsKilledInputOpen is TestFaultTurnsIPCKilled with the UI's
// input still open (in TestIPCChildKilled): one error each, then the
// session goes on.
func ipcFaultTurnsKilledInputOpen(t *testing.T, s *ipcSession) {
	b := s.b
	lines := ipcBusyIn(t, b, s.sid, "hello two", "hello three")
	killChild(t, b)
	lines = append(lines, ipcTerminals(t, b, 3)...)
	ts := terminals(lines)
	want := "error/child_exited error/child_exited error/child_exited"
	if strings.Join(ts, " ") != want {
		t.Errorf("terminal messages %v, want %s", ts, want)
	}
	complete(t, turn(t, b, "hello after"))
}

// ---- rpc: one run at a time; a run's terminal message is its terminal
// run.status, a refused run.start's its error response. A run started
// while a cancelled turn drains is held by ccbridge until the CLI is free.

// rpcHeld starts run-1 on a slow prompt, stops the CLI (SIGSTOP, so that
// it cannot end the turn), cancels run-1 (its turn must drain in the CLI
// before another prompt is written) and starts run-2, which ccbridge holds
// meanwhile. It returns the two runs and the CLI's pid.
func rpcHeld(t *testing.T, c *rpcConn) (string, string, int) {
	t.Helper()
	c.initialize("")
	r1 := c.start("SLOW " + token("first"))
	c.until("streaming text", isEvent(r1, "text.delta"))
	pid := c.b.childPID()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	c.result(c.call("run.cancel", `{"run_id":"`+r1+`"}`))
	r2 := c.start("hello two")
	return r1, r2, pid
}

// TestFaultTurnsRPC: three run.start sent at once give one run and two
// -32001 answers; run.cancel of a held run ends it; the UI's end of input,
// kill -9 of the CLI and SIGTERM each leave every run with exactly one
// terminal run.status before ccbridge exits. "three at once" is in
// TestRPCOneSession (rpcFaultTurnsThreeAtOnce); "cancel held", "kill"
// (whose held run goes to a resumed CLI) and "end of input" end
// TestRPCLineCap's session, one after the other. "shutdown" has a
// ccbridge of its own.
func TestFaultTurnsRPC(t *testing.T) {
	t.Parallel()
	t.Run("shutdown", func(t *testing.T) {
		c := startRPC(t, []string{"--grace", "300ms", "--term-grace", "300ms"})
		r1, r2, _ := rpcHeld(t, c)
		c.b.cmd.Process.Signal(syscall.SIGTERM)
		// The UI's input stays open: ccbridge ends on its own.
		for {
			if _, err := c.read(rpcWait); err != nil {
				break
			}
		}
		c.b.wait()
		c.checkRules()
		checkRPCEnded(t, c, r1, r2)
	})
}

// TestFaultTurnsRPC/cancel held: run.cancel of the held run ends it, once;
// the next run completes. Its runs are checked on what the connection saw
// by its end, and again after the end of input.
func rpcFaultTurnsCancelHeld(t *testing.T, s *rpcSession) {
	c := s.c
	r1, r2, pid := rpcHeld(t, c)
	s.runs = append(s.runs, r1, r2)
	c.result(c.call("run.cancel", `{"run_id":"`+r2+`"}`))
	if n := count(c.seen, isRunStatus(r2, "cancelled")); n != 1 {
		t.Errorf("%d run.status cancelled for the held %s", n, r2)
	}
	syscall.Kill(pid, syscall.SIGCONT)
	r3, _, st := c.runText("hello three")
	if st != "completed" {
		t.Errorf("the run after the cancelled ones ended %s", st)
	}
	s.runs = append(s.runs, r3)
	checkRPCEnded(t, c, r1, r2)
}

// TestFaultTurnsRPC/kill: kill -9 of the stopped CLI; the held run goes to
// a resumed CLI and completes. Its runs are checked on what the connection
// saw by its end, and again after the end of input.
func rpcFaultTurnsKill(t *testing.T, s *rpcSession) {
	c := s.c
	r1, r2, pid := rpcHeld(t, c)
	s.runs = append(s.runs, r1, r2)
	syscall.Kill(pid, syscall.SIGKILL)
	if _, st := c.finishRun(r2); st != "completed" {
		t.Errorf("the held run ended %s after the CLI was killed; want it sent to a resumed CLI", st)
	}
	checkRPCEnded(t, c, r1, r2)
}

// TestFaultTurnsRPC/end of input: the UI's input ends while a run is held;
// after ccbridge ended (and the dialect's rules were checked on every
// line, rpcConn.close), each run of this session's fault scenarios has
// exactly one terminal run.status.
func rpcFaultTurnsEndOfInput(t *testing.T, s *rpcSession) {
	c := s.c
	r1, r2, pid := rpcHeld(t, c)
	c.b.stdin.Close()
	syscall.Kill(pid, syscall.SIGCONT)
	c.close()
	checkRPCEnded(t, c, append(s.runs, r1, r2)...)
}

// rpcFaultTurnsThreeAtOnce: three run.start at once: the first runs, the
// other two are refused busy, and the first completes.
func rpcFaultTurnsThreeAtOnce(t *testing.T, s *rpcSession) {
	c := s.c
	c.initialize("")
	ids := []string{c.call("run.start", `{"input":{"type":"text","text":"SLOW one"}}`),
		c.call("run.start", `{"input":{"type":"text","text":"hello two"}}`),
		c.call("run.start", `{"input":{"type":"text","text":"hello three"}}`)}
	r1 := c.result(ids[0]).Get("run_id").Str
	c.rpcError(ids[1], -32001)
	c.rpcError(ids[2], -32001)
	if _, st := c.finishRun(r1); st != "completed" {
		t.Errorf("%s ended %s", r1, st)
	}
}

func checkRPCEnded(t *testing.T, c *rpcConn, runs ...string) {
	t.Helper()
	for _, r := range runs {
		if n := count(c.seen, isTerminalStatus(r)); n != 1 {
			t.Errorf("%s has %d terminal run.status, want 1", r, n)
		}
	}
}

// ---- acp: every session/prompt request gets one response (a stop
// reason, or an error). ccbridge holds queued prompts itself and runs them
// one after another.

// TestFaultTurnsACP: the UI's end of input and SIGTERM, while three
// prompts are outstanding, each leave no prompt unanswered. (Three at
// once, cancel, kill -9 of the CLI and the end of input are in
// TestFaultTurnsACPOneSession.)
func TestFaultTurnsACP(t *testing.T) {
	t.Parallel()
	t.Run("shutdown", func(t *testing.T) {
		a := startACPRaw(t)
		sid := a.newSession()
		ids := []string{a.prompt(sid, "SLOW "+token("first")), a.prompt(sid, "hello two"), a.prompt(sid, "hello three")}
		a.untilUpdate(sid, "agent_message_chunk")
		a.b.cmd.Process.Signal(syscall.SIGTERM)
		answers := a.answers(ids)
		a.b.stdin.Close()
		a.rest()
		for i, id := range ids {
			if n := a.responses(id); n != 1 {
				t.Errorf("prompt %d (id %s): %d responses, want 1 (answers %v)", i, id, n, answers)
			}
		}
	})
}

// TestFaultTurnsACPOneSession: four of TestFaultTurnsACP's cases, each a
// subtest named for it, one after the other in one session of one
// ccbridge (see inOneSession): three prompts at once, answered end_turn
// each; cancelled while they are outstanding, cancelled each; the CLI
// killed while they are (its queued prompts then go to a new CLI); then
// the end of input while three more are, after which every prompt of the
// four cases has exactly one answer. One CLI start, and one after the
// kill, where the cases alone started five.
func TestFaultTurnsACPOneSession(t *testing.T) {
	t.Parallel()
	type session struct {
		a   *acpRaw
		sid string
		ids []string // every prompt sent
	}
	open := func(t *testing.T) *session {
		a := startACPRaw(t)
		return &session{a: a, sid: a.newSession()}
	}
	bind := func(s *session, t *testing.T) { s.a.t, s.a.b.t = t, t }
	busy := func(s *session) []string {
		ids := []string{s.a.prompt(s.sid, "SLOW "+token("first")), s.a.prompt(s.sid, "hello two"), s.a.prompt(s.sid, "hello three")}
		s.ids = append(s.ids, ids...)
		s.a.untilUpdate(s.sid, "agent_message_chunk")
		return ids
	}
	inOneSession(t, open, bind,
		scenario[*session]{"TestFaultTurnsACP/three at once", func(t *testing.T, s *session) {
			if got := strings.Join(s.a.answers(busy(s)), " "); got != "end_turn end_turn end_turn" {
				t.Errorf("answers %q, want %q", got, "end_turn end_turn end_turn")
			}
		}},
		scenario[*session]{"TestFaultTurnsACP/cancel", func(t *testing.T, s *session) {
			ids := busy(s)
			s.a.notify("session/cancel", `{"sessionId":"`+s.sid+`"}`)
			if got := strings.Join(s.a.answers(ids), " "); got != "cancelled cancelled cancelled" {
				t.Errorf("answers %q, want %q", got, "cancelled cancelled cancelled")
			}
		}},
		scenario[*session]{"TestFaultTurnsACP/kill", func(t *testing.T, s *session) {
			ids := busy(s)
			killChild(t, s.a.b)
			s.a.answers(ids)
		}},
		scenario[*session]{"TestFaultTurnsACP/end of input", func(t *testing.T, s *session) {
			ids := busy(s)
			s.a.b.stdin.Close()
			answers := s.a.answers(ids)
			s.a.rest()
			for i, id := range s.ids {
				if n := s.a.responses(id); n != 1 {
					t.Errorf("prompt %d (id %s): %d responses, want 1 (the last three's answers %v)", i, id, n, answers)
				}
			}
		}},
	)
}

// acpRaw is an ACP client written by hand over ccbridge's stdio, for
// counting the answers to session/prompt requests.
type acpRaw struct {
	t    *testing.T
	b    *bridge
	n    int
	seen [][]byte
}

func startACPRaw(t *testing.T) *acpRaw {
	t.Helper()
	a := &acpRaw{t: t, b: startBridge(t, []string{"--ui", "acp"})}
	a.result(a.call("initialize", `{"protocolVersion":1,"clientCapabilities":{}}`))
	return a
}

func (a *acpRaw) call(method, params string) string {
	a.n++
	id := fmt.Sprint(a.n)
	a.b.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + `}`)
	return id
}

func (a *acpRaw) notify(method, params string) {
	a.b.send(`{"jsonrpc":"2.0","method":"` + method + `","params":` + params + `}`)
}

// read returns the next line within rpcWait, nil at the end of the output.
func (a *acpRaw) read() []byte {
	a.t.Helper()
	l, ok := a.b.next(rpcWait)
	if !ok {
		return nil
	}
	a.seen = append(a.seen, l)
	// A permission request would stall the test's prompts: refuse it.
	if gjson.GetBytes(l, "method").Str == "session/request_permission" {
		a.b.send(`{"jsonrpc":"2.0","id":` + gjson.GetBytes(l, "id").Raw + `,"result":{"outcome":{"outcome":"cancelled"}}}`)
	}
	return l
}

func (a *acpRaw) until(what string, pred func([]byte) bool) []byte {
	a.t.Helper()
	for {
		l := a.read()
		if l == nil {
			a.t.Fatalf("ccbridge's output ended before %s", what)
		}
		if pred(l) {
			return l
		}
	}
}

func (a *acpRaw) isResponse(id string) func([]byte) bool {
	return func(l []byte) bool {
		return gjson.GetBytes(l, "id").Raw == id && !gjson.GetBytes(l, "method").Exists()
	}
}

func (a *acpRaw) result(id string) gjson.Result {
	a.t.Helper()
	l := a.until("the answer to "+id, a.isResponse(id))
	if e := gjson.GetBytes(l, "error"); e.Exists() {
		a.t.Fatalf("request %s failed: %s", id, l)
	}
	return gjson.GetBytes(l, "result")
}

func (a *acpRaw) newSession() string {
	a.t.Helper()
	return a.result(a.call("session/new", `{"cwd":`+jsonStr(a.b.dir)+`,"mcpServers":[]}`)).Get("sessionId").Str
}

func (a *acpRaw) prompt(sid, text string) string {
	return a.call("session/prompt", `{"sessionId":"`+sid+`","prompt":[{"type":"text","text":`+jsonStr(text)+`}]}`)
}

func (a *acpRaw) untilUpdate(sid, kind string) {
	a.t.Helper()
	a.until(kind, func(l []byte) bool {
		return gjson.GetBytes(l, "method").Str == "session/update" &&
			gjson.GetBytes(l, "params.update.sessionUpdate").Str == kind
	})
}

// answers waits for the responses to ids, in any order, and returns their
// stop reasons in the order of ids ("error" for an error response); an
// output that ends first leaves "none".
func (a *acpRaw) answers(ids []string) []string {
	a.t.Helper()
	got := make([]string, len(ids))
	left := len(ids)
	for i := range got {
		got[i] = "none"
	}
	for _, l := range a.seen {
		for i, id := range ids {
			if a.isResponse(id)(l) && got[i] == "none" {
				got[i] = stopOf(l)
				left--
			}
		}
	}
	for left > 0 {
		l := a.read()
		if l == nil {
			break
		}
		for i, id := range ids {
			if a.isResponse(id)(l) && got[i] == "none" {
				got[i] = stopOf(l)
				left--
			}
		}
	}
	return got
}

func stopOf(l []byte) string {
	if gjson.GetBytes(l, "error").Exists() {
		return "error"
	}
	return gjson.GetBytes(l, "result.stopReason").Str
}

// rest reads until the output ends.
func (a *acpRaw) rest() {
	a.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for a.read() != nil {
		if time.Now().After(deadline) {
			a.t.Fatal("ccbridge's output did not end")
		}
	}
}

// responses counts the responses to id among every line seen.
func (a *acpRaw) responses(id string) int { return count(a.seen, a.isResponse(id)) }

// ---- drop-in: the CLI's own results pass unchanged, merged turns
// included; ccbridge adds a synthetic result only for prompts a dying CLI
// left without one.

// dropInBusy sends a slow prompt and, while it streams, two more, which
// the CLI queues (and will merge into one turn).
func dropInBusy(t *testing.T, b *bridge) {
	t.Helper()
	b.prompt("SLOW " + token("first"))
	b.until("streaming text", func(l []byte) bool {
		return gjson.GetBytes(l, "event.delta.type").Str == "text_delta"
	})
	b.prompt("hello two")
	b.prompt("hello three")
}

// TestFaultTurnsDropIn: three prompts, two of them merged by the CLI, then
// the end of the host's input: the CLI's two results and no synthetic one
// (nothing died). kill -9 of the CLI after the end of the host's input,
// and SIGTERM to ccbridge, each while the first turn runs: every prompt
// without a result gets a synthetic one, so the host never waits.
func TestFaultTurnsDropIn(t *testing.T) {
	t.Parallel()
	results := func(lines [][]byte) (real, synthetic int) {
		for _, l := range lines {
			if isType("result")(l) {
				if gjson.GetBytes(l, "ccbridge_synthetic").Bool() {
					synthetic++
				} else {
					real++
				}
			}
		}
		return real, synthetic
	}
	t.Run("merged then end of input", func(t *testing.T) {
		t.Parallel()
		b := startBridge(t, cliFlags)
		dropInBusy(t, b)
		b.stdin.Close()
		real, synthetic := results(b.rest())
		if real != 2 || synthetic != 0 {
			t.Errorf("%d results of the CLI and %d synthetic, want the CLI's 2 (one for the merged prompts) and none", real, synthetic)
		}
		if code := b.wait(); code != 0 {
			t.Errorf("exit code %d, want 0", code)
		}
	})
	for _, when := range []string{"kill after the end of input", "shutdown"} {
		t.Run(when, func(t *testing.T) {
			t.Parallel()
			b := startBridge(t, append([]string{}, cliFlags...), "CCBRIDGE_GRACE=300ms", "CCBRIDGE_TERM_GRACE=300ms")
			dropInBusy(t, b)
			if when == "shutdown" {
				b.cmd.Process.Signal(syscall.SIGTERM)
			} else {
				b.stdin.Close()
				killChild(t, b)
			}
			real, synthetic := results(b.rest())
			if real+synthetic != 3 || synthetic == 0 {
				t.Errorf("%d results of the CLI and %d synthetic for 3 prompts, want 3 in all", real, synthetic)
			}
		})
	}
}
