package e2e

// The control lanes of issue #9 (lane 000, docs/control/lane000.md) end
// to end: the real CLI behind ccbridge, the fake model behind it, and a
// controller on stdio (`--ui control`) or on the control socket
// (`--control PATH`) beside `--ui control`, `--ui ipc` and `--ui rpc`.
// Every result code comes from a real situation: a prompt the model gets,
// a turn that ends cancelled, a CLI stopped with SIGSTOP so that it cannot
// take an interrupt in time, a shutdown under way, a store file that may
// not grow. Helpers of this file start with ctl.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/fakemodel"
)

// The worker's identity in every test: the flags --team, --agent-id and
// --allow-sender.
const (
	ctlTeam   = "team-e2e"
	ctlAgent  = "agent-e2e"
	ctlSender = "sender-e2e"
	ctlWait   = 30 * time.Second // the longest wait for one expected line
)

// ctlOpts says how to start a worker.
type ctlOpts struct {
	ui       string // the dialect; "control" when ""
	socket   bool   // serve --control at a fresh path
	sockPath string // serve --control at this path
	sid      string // the session id; a fresh UUID when ""
	resume   bool   // --resume sid rather than --session-id sid
	durable  bool   // --state-dir is among args (the capabilities say so)
	args     []string
	env      []string
}

// ctlWorker is one ccbridge with the control plane.
type ctlWorker struct {
	t      *testing.T
	b      *bridge
	sid    string
	sock   string   // the --control path, "" for none
	stdio  *ctlLane // the stdio lane of --ui control, nil otherwise
	o      ctlOpts
	worker string // its lane-004 worker id when not l4Worker
}

// ctlStart runs ccbridge with the worker's identity and a known session
// id. With --ui control it reads the first stdout line, which must be the
// capabilities; with a socket it waits until the socket is there.
func ctlStart(t *testing.T, o ctlOpts) *ctlWorker {
	t.Helper()
	if o.ui == "" {
		o.ui = "control"
	}
	if o.sid == "" {
		o.sid = uuid.NewString()
	}
	args := []string{"--ui", o.ui, "--team", ctlTeam, "--agent-id", ctlAgent, "--allow-sender", ctlSender}
	if o.resume {
		args = append(args, "--resume", o.sid)
	} else {
		args = append(args, "--session-id", o.sid)
	}
	w := &ctlWorker{t: t, sid: o.sid, o: o, sock: o.sockPath}
	if o.socket && w.sock == "" {
		w.sock = ctlSocketPath(t)
	}
	if w.sock != "" {
		args = append(args, "--control", w.sock)
	}
	w.b = startBridge(t, append(args, o.args...), o.env...)
	if o.ui == "control" {
		w.stdio = &ctlLane{t: t, name: "stdio", lines: w.b.lines, write: func(s string) error {
			_, err := io.WriteString(w.b.stdin, s+"\n")
			return err
		}}
		ctlCheckCaps(t, "stdio", w.stdio.nextAnswer(), w, "")
	}
	if w.sock != "" {
		w.waitSocket()
	}
	return w
}

// ctlBind points a shared worker's helpers, and fakeAPI, at test t (see
// inOneSession).
func ctlBind(w *ctlWorker, t *testing.T) {
	w.t, w.b.t, w.stdio.t = t, t, t
	useFakeAPI(t, w.b.api)
}

// ctlSocketPath is a fresh socket path, short enough for the system's
// limit (t.TempDir's names can be long).
func ctlSocketPath(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir + "/c.sock"
}

// waitSocket waits until the control socket is there.
func (w *ctlWorker) waitSocket() {
	w.t.Helper()
	for deadline := time.Now().Add(ctlWait); ; time.Sleep(10 * time.Millisecond) {
		if fi, err := os.Lstat(w.sock); err == nil && fi.Mode().Type() == os.ModeSocket {
			return
		}
		select {
		case <-w.b.exited:
			w.t.Fatalf("ccbridge exited before its control socket was there:\n%s", tail(w.b.stderr.String(), 3000))
		default:
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("no control socket at %s within %v", w.sock, ctlWait)
		}
	}
}

// dial connects a controller to the socket; its first line must be the
// capabilities.
func (w *ctlWorker) dial() *ctlLane {
	w.t.Helper()
	l := ctlDial(w.t, w.sock)
	ctlCheckCaps(w.t, "socket", l.nextAnswer(), w, "")
	return l
}

// cliPID is the CLI's process id.
func (w *ctlWorker) cliPID() int {
	w.t.Helper()
	return w.b.childPID()
}

// ctlLane is one controller: the stdio of --ui control, or one connection
// to the socket. Not for concurrent use.
type ctlLane struct {
	t      *testing.T
	name   string
	lines  <-chan []byte
	write  func(string) error
	got    [][]byte // every line read
	ansPos int      // where the next answer is looked for in got
}

// ctlDial connects to the control socket at path.
func ctlDial(t *testing.T, path string) *ctlLane {
	t.Helper()
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("dialling the control socket: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	ch := ctlReadLines(conn, 4096)
	return &ctlLane{t: t, name: "socket", lines: ch, write: func(s string) error {
		conn.SetWriteDeadline(time.Now().Add(ctlWait))
		_, err := io.WriteString(conn, s+"\n")
		return err
	}}
}

// ctlReadLines reads conn's lines, without their line break, onto a
// channel that holds n and is closed when the connection ends.
func ctlReadLines(conn net.Conn, n int) chan []byte {
	ch := make(chan []byte, n)
	go func() {
		r := bufio.NewReaderSize(conn, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				ch <- bytes.TrimSuffix(line, []byte("\n"))
			}
			if err != nil {
				close(ch)
				return
			}
		}
	}()
	return ch
}

func (l *ctlLane) send(line string) {
	l.t.Helper()
	if err := l.write(line); err != nil {
		l.t.Fatalf("%s: writing a request: %v", l.name, err)
	}
}

// read reads one more line into got; false when the lane ended.
func (l *ctlLane) read() bool {
	l.t.Helper()
	timer := time.NewTimer(ctlWait)
	defer timer.Stop()
	select {
	case line, ok := <-l.lines:
		if !ok {
			return false
		}
		if !gjson.ValidBytes(line) {
			l.t.Errorf("%s: a line that is not JSON: %.300s", l.name, line)
		}
		l.got = append(l.got, line)
		return true
	case <-timer.C:
		l.t.Fatalf("%s: no line within %v; the last ones:\n%s", l.name, ctlWait, lastLines(l.got, 8))
		return false
	}
}

// waitFrom returns the index of the first line at or after from for
// which pred holds, reading as needed.
func (l *ctlLane) waitFrom(from int, what string, pred func([]byte) bool) int {
	l.t.Helper()
	for i := from; ; i++ {
		for i >= len(l.got) {
			if !l.read() {
				l.t.Fatalf("%s: the lane ended before %s; the last lines:\n%s", l.name, what, lastLines(l.got, 8))
			}
		}
		if pred(l.got[i]) {
			return i
		}
	}
}

// wait returns the first line read for which pred holds.
func (l *ctlLane) wait(what string, pred func([]byte) bool) []byte {
	l.t.Helper()
	return l.got[l.waitFrom(0, what, pred)]
}

// ctlIsAnswer reports whether a line answers a request (rather than
// report the worker's progress).
func ctlIsAnswer(line []byte) bool {
	switch typeOf(line) {
	case "control.stdin.ack", "control.interrupt.ack", "control.error", "control.capabilities":
		return true
	}
	return false
}

// nextAnswer returns the next answer: every request gets exactly one, in
// the order sent, so an extra or a missing one shows as a mismatch.
func (l *ctlLane) nextAnswer() []byte {
	l.t.Helper()
	i := l.waitFrom(l.ansPos, "an answer", ctlIsAnswer)
	l.ansPos = i + 1
	return l.got[i]
}

// request sends a line and returns its answer.
func (l *ctlLane) request(line string) []byte {
	l.t.Helper()
	l.send(line)
	return l.nextAnswer()
}

// ctlMsg is a request, marshalled with encoding/json.
type ctlMsg map[string]any

// ctlDel, as a value given to with, removes the field.
var ctlDel = &struct{}{}

func (m ctlMsg) with(kv ...any) ctlMsg {
	c := make(ctlMsg, len(m)+len(kv)/2)
	for k, v := range m {
		c[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == ctlDel {
			delete(c, kv[i].(string))
		} else {
			c[kv[i].(string)] = kv[i+1]
		}
	}
	return c
}

func (m ctlMsg) String() string {
	b, err := json.Marshal(map[string]any(m))
	if err != nil {
		panic(err)
	}
	return string(b)
}

func (m ctlMsg) id() string { s, _ := m["request_id"].(string); return s }

func ctlNow() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// stdinReq is a valid control.stdin.request for this worker.
func (w *ctlWorker) stdinReq(id, content string) ctlMsg {
	return ctlMsg{"type": "control.stdin.request", "v": 1, "request_id": id, "team": ctlTeam,
		"session_id": w.sid, "agent_id": ctlAgent, "sender": ctlSender, "sent_at": ctlNow(), "content": content}
}

// interruptReq is a valid control.interrupt.request for this worker.
func (w *ctlWorker) interruptReq(id string) ctlMsg {
	return ctlMsg{"type": "control.interrupt.request", "v": 1, "request_id": id, "team": ctlTeam,
		"session_id": w.sid, "agent_id": ctlAgent, "sender": ctlSender, "sent_at": ctlNow(), "signal": "interrupt"}
}

// ctlID is a request id no other request of the run has.
func ctlID(tag string) string { return token("req-" + tag + "-") }

// ctlAck checks an ack of the request m: its type, result, duplicate, the
// identity echoed; it returns the detail.
func ctlAck(t *testing.T, ans []byte, m ctlMsg, result string, duplicate bool) string {
	t.Helper()
	typ := "control.stdin.ack"
	if m["type"] == "control.interrupt.request" {
		typ = "control.interrupt.ack"
	}
	ok := typeOf(ans) == typ && get(ans, "v").Raw == "1" && get(ans, "request_id").Str == m.id() &&
		get(ans, "result").Str == result && get(ans, "duplicate").Type == ctlBool(duplicate) &&
		get(ans, "team").Str == m["team"] && get(ans, "session_id").Str == m["session_id"] &&
		get(ans, "agent_id").Str == m["agent_id"] && get(ans, "acked_at").Str != ""
	if !ok {
		t.Fatalf("want a %s of %s with result %s, duplicate %v; got %.600s", typ, m.id(), result, duplicate, ans)
	}
	if result != "ok" && get(ans, "detail").Str == "" {
		t.Errorf("a %s ack without a detail: %.400s", result, ans)
	}
	return get(ans, "detail").Str
}

func ctlBool(b bool) gjson.Type {
	if b {
		return gjson.True
	}
	return gjson.False
}

// ctlProblem checks a refusal: its line type, result and error code, and
// the request id echoed.
func ctlProblem(t *testing.T, what string, ans []byte, typ, result, code, id string) {
	t.Helper()
	if typeOf(ans) != typ || get(ans, "result").Str != result || get(ans, "error").Str != code ||
		get(ans, "request_id").Str != id || get(ans, "detail").Str == "" || get(ans, "v").Raw != "1" {
		t.Errorf("%s: want %s %s (%s) for request_id %q with a detail; got %.600s", what, typ, result, code, id, ans)
	}
	if typ == "control.error" && get(ans, "duplicate").Exists() {
		t.Errorf("%s: control.error with duplicate: %.300s", what, ans)
	}
	if typ != "control.error" && get(ans, "duplicate").Type != gjson.False {
		t.Errorf("%s: a refusal must say duplicate false: %.300s", what, ans)
	}
}

// ctlCheckCaps checks a control.capabilities line.
func ctlCheckCaps(t *testing.T, lane string, l []byte, w *ctlWorker, requestID string) {
	t.Helper()
	sid, durable, lanes := w.sid, w.o.durable, `["000"]`
	if w.o.ui == "control" {
		lanes = `["000","001","004"]` // lanes 001 and 004 are served beside lane 000
	}
	if typeOf(l) != "control.capabilities" {
		t.Fatalf("%s: want control.capabilities, got %.500s", lane, l)
	}
	var types []string
	for _, v := range get(l, "types").Array() {
		types = append(types, v.Str)
	}
	want := "control.stdin.request control.interrupt.request control.capabilities.request"
	if get(l, "v").Raw != "1" || strings.Join(types, " ") != want || get(l, "lanes").Raw != lanes {
		t.Errorf("%s: capabilities with the wrong v, types or lanes: %.600s", lane, l)
	}
	if get(l, "soft_limit_bytes").Int() != 64<<10 || get(l, "hard_limit_bytes").Int() <= 0 ||
		get(l, "max_request_id_bytes").Int() != 256 || get(l, "ref_max_bytes").Int() != 64<<20 ||
		get(l, "dedupe_ttl_ms").Int() != 600_000 {
		t.Errorf("%s: capabilities with the wrong limits: %.600s", lane, l)
	}
	if get(l, "dedupe_durable").Type != ctlBool(durable) {
		t.Errorf("%s: dedupe_durable should be %v: %.600s", lane, durable, l)
	}
	if get(l, "team").Str != ctlTeam || get(l, "agent_id").Str != ctlAgent || get(l, "session_id").Str != sid {
		t.Errorf("%s: capabilities with the wrong identity (want %s, %s, %s): %.600s", lane, ctlTeam, ctlAgent, sid, l)
	}
	if _, err := time.Parse(time.RFC3339, get(l, "sent_at").Str); err != nil {
		t.Errorf("%s: capabilities sent_at: %v", lane, err)
	}
	if r := get(l, "request_id"); r.Str != requestID || (requestID == "") == r.Exists() {
		t.Errorf("%s: capabilities request_id %s, want %q: %.600s", lane, r.Raw, requestID, l)
	}
}

// ctlTurnOf matches the control.worker.turn of the prompt of request id.
func ctlTurnOf(id string) func([]byte) bool {
	return func(l []byte) bool {
		if typeOf(l) != "control.worker.turn" {
			return false
		}
		for _, r := range get(l, "request_ids").Array() {
			if r.Str == id {
				return true
			}
		}
		return false
	}
}

// turn waits for the end of the turn of request id on the stdio lane and
// checks how it ended.
func (w *ctlWorker) turn(id, result string) []byte {
	w.t.Helper()
	l := w.stdio.wait("the turn of "+id, ctlTurnOf(id))
	if get(l, "result").Str != result {
		w.t.Fatalf("the turn of %s ended %s, want %s: %.500s", id, get(l, "result").Str, result, l)
	}
	return l
}

// streaming waits on the stdio lane, from line from on, for the worker's
// text: a turn is running.
func (w *ctlWorker) streaming(from int) {
	w.t.Helper()
	w.stdio.waitFrom(from, "the worker's text", func(l []byte) bool {
		if typeOf(l) == "control.worker.turn" {
			w.t.Fatalf("a turn ended before any text: %.400s", l)
		}
		return typeOf(l) == "control.worker.text"
	})
}

// ctlPrompts returns the requests of the fake model for a prompt holding
// tok (first calls only; not the session-title call).
func ctlPrompts(t *testing.T, tok string) []fakemodel.Request {
	t.Helper()
	var out []fakemodel.Request
	for _, r := range fakeAPI(t).Requests() {
		if r.Path == "/v1/messages" && r.Rule != "session-title" && r.Step == 0 && strings.Contains(r.Prompt, tok) {
			out = append(out, r)
		}
	}
	return out
}

func ctlTexts(rs []fakemodel.Request) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Prompt)
	}
	return out
}

// ctlPromptCount checks how many prompts holding tok the model got.
func ctlPromptCount(t *testing.T, tok string, want int) {
	t.Helper()
	if got := ctlPrompts(t, tok); len(got) != want {
		t.Errorf("the model got %d prompts holding %s, want %d", len(got), tok, want)
	}
}

// ctlStopProc stops process pid with SIGSTOP until the returned function
// (also run at cleanup) continues it.
func ctlStopProc(t *testing.T, pid int) func() {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP %d: %v", pid, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'T' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not stop", pid)
		}
	}
	var once sync.Once
	cont := func() { once.Do(func() { syscall.Kill(pid, syscall.SIGCONT) }) }
	t.Cleanup(cont)
	return cont
}

// ctlCheckSocketFile checks that path is a socket of mode 0600.
func ctlCheckSocketFile(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatalf("the control socket: %v", err)
	}
	if fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Errorf("the control socket has mode %v; want a socket of mode 0600", fi.Mode())
	}
}

// ctlNoAnswers checks that none of the lines is an answer to one of ids:
// an ack goes to the controller that sent the request, and only there.
func ctlNoAnswers(t *testing.T, lane string, lines [][]byte, ids []string) {
	t.Helper()
	for _, l := range lines {
		if !ctlIsAnswer(l) && !strings.HasPrefix(typeOf(l), "control.") {
			continue
		}
		for _, id := range ids {
			if get(l, "request_id").Str == id {
				t.Errorf("%s got the answer to a request of another controller: %.400s", lane, l)
			}
		}
	}
}

// TestControlOneWorker: the control scenarios that leave the worker as
// they found it (idle, not paused, the same CLI), each a subtest named for
// the test it was alone, in one ccbridge --ui control --control and one
// CLI, one after the other (see inOneSession): one CLI start for seven
// rules. Each dials its own connections; what one checks of the stdio
// lane is about its own request ids, except TestControlBadInput's last
// check, that no turn on stdio has more than one request. The limits
// (--stdin-hard-limit 1000, --max-line 100000) are TestControlBadInput's;
// the others send no line near them. The grace periods
// (CCBRIDGE_GRACE=300ms, CCBRIDGE_TERM_GRACE=10s) are TestControlNotLive's,
// for its shutdown; it comes last, as it ends ccbridge.
func TestControlOneWorker(t *testing.T) {
	t.Parallel()
	open := func(t *testing.T) *ctlWorker {
		return ctlStart(t, ctlOpts{socket: true, args: []string{"--stdin-hard-limit", "1000", "--max-line", "100000"},
			env: []string{"CCBRIDGE_GRACE=300ms", "CCBRIDGE_TERM_GRACE=10s"}})
	}
	inOneSession(t, open, ctlBind,
		scenario[*ctlWorker]{"TestControlStdioAndSocketResults", ctlStdioAndSocketResults},
		scenario[*ctlWorker]{"TestControlInterrupts", ctlInterrupts},
		scenario[*ctlWorker]{"TestControlDedupe", ctlDedupe},
		scenario[*ctlWorker]{"TestLane001NotFoundAndBadInput", l1NotFoundAndBadInput},
		scenario[*ctlWorker]{"TestControlBadInput", ctlBadInput},
		scenario[*ctlWorker]{"TestFaultControlSentAtFarAhead", ctlSentAtFarAhead},
		scenario[*ctlWorker]{"TestControlNotLive", ctlNotLive},
	)
}

// TestControlStdioAndSocketResults: --ui control with --control. The
// capabilities come first on stdio and on every connection, and again on
// request; a multiline prompt reaches the model once, whole, from either
// lane; not_found (another session, another agent) and rejected (another
// sender, another team) inject nothing; an interrupt with no turn is ok
// and says so; acks go to their own controller only; the socket is 0600.
func ctlStdioAndSocketResults(t *testing.T, w *ctlWorker) {
	ctlCheckSocketFile(t, w.sock)
	sock, idle := w.dial(), w.dial()
	lanes := []*ctlLane{w.stdio, sock}

	for _, l := range lanes {
		ctlCheckCaps(t, l.name, l.request(`{"type":"control.capabilities.request","v":1}`), w, "")
		id := ctlID("caps")
		ctlCheckCaps(t, l.name, l.request(`{"type":"control.capabilities.request","v":1,"request_id":"`+id+`"}`), w, id)
	}

	refused := token("REFUSED")
	var sockIDs []string
	for _, l := range lanes {
		for _, c := range []struct {
			what, result, code string
			m                  ctlMsg
		}{
			{"another session", "not_found", "unknown_session", w.stdinReq(ctlID("nf"), refused).with("session_id", uuid.NewString())},
			{"another agent", "not_found", "unknown_agent", w.stdinReq(ctlID("nf"), refused).with("agent_id", "agent-other")},
			{"an interrupt for another session", "not_found", "unknown_session", w.interruptReq(ctlID("nf")).with("session_id", uuid.NewString())},
			{"an unknown sender", "rejected", "unauthorized", w.stdinReq(ctlID("rej"), refused).with("sender", "eve")},
			{"another team", "rejected", "unauthorized", w.stdinReq(ctlID("rej"), refused).with("team", "team-other")},
			{"an interrupt from an unknown sender", "rejected", "unauthorized", w.interruptReq(ctlID("rej")).with("sender", "eve")},
		} {
			ans := l.request(c.m.String())
			typ := "control.stdin.ack"
			if c.m["type"] == "control.interrupt.request" {
				typ = "control.interrupt.ack"
			}
			ctlProblem(t, l.name+": "+c.what, ans, typ, c.result, c.code, c.m.id())
			if l == sock {
				sockIDs = append(sockIDs, c.m.id())
			}
		}
		m := w.interruptReq(ctlID("int"))
		if d := ctlAck(t, l.request(m.String()), m, "ok", false); d != "no turn running" {
			t.Errorf("%s: an interrupt with no turn: detail %q, want \"no turn running\"", l.name, d)
		}
		if l == sock {
			sockIDs = append(sockIDs, m.id())
		}
	}

	for _, l := range lanes {
		tok := token("MULTI")
		text := "first line " + tok + "\nsecond line\n\n\tindented \"quoted\" line ü ✓\nlast"
		m := w.stdinReq(ctlID("ok"), text)
		if d := ctlAck(t, l.request(m.String()), m, "ok", false); d != "sent" {
			t.Errorf("%s: a prompt to an idle worker: detail %q, want \"sent\"", l.name, d)
		}
		if l == sock {
			sockIDs = append(sockIDs, m.id())
		}
		w.turn(m.id(), "success")
		got := ctlPrompts(t, tok)
		if len(got) != 1 || got[0].Prompt != text {
			t.Errorf("%s: the model got %d prompts with %s (want 1, the text intact): %q", l.name, len(got), tok, ctlTexts(got))
		}
	}
	ctlPromptCount(t, refused, 0)

	// The idle connection got nothing but the answers to its own requests.
	ctlCheckCaps(t, "idle socket", idle.request(`{"type":"control.capabilities.request","v":1}`), w, "")
	ctlNoAnswers(t, "stdio", w.stdio.got, sockIDs)
	if len(idle.got) != 2 {
		t.Errorf("the idle connection got %d lines, want its 2 capabilities:\n%s", len(idle.got), lastLines(idle.got, 8))
	}
}

// TestControlInterrupts: a turn that runs (SLOW) is interrupted by a
// control.interrupt.request and by a prompt with interrupt:true, from
// either lane: ok, the turn ends cancelled, and the new prompt runs.
func ctlInterrupts(t *testing.T, w *ctlWorker) {
	sock := w.dial()
	slow := func(l *ctlLane) ctlMsg {
		t.Helper()
		m := w.stdinReq(ctlID("slow"), "SLOW "+token("slow"))
		from := len(w.stdio.got)
		ctlAck(t, l.request(m.String()), m, "ok", false)
		w.streaming(from)
		return m
	}
	var sockIDs []string
	for _, c := range []struct{ turn, ctl *ctlLane }{{w.stdio, sock}, {sock, w.stdio}} {
		s := slow(c.turn)
		start := time.Now()
		m := w.interruptReq(ctlID("int"))
		if d := ctlAck(t, c.ctl.request(m.String()), m, "ok", false); d != "interrupted" {
			t.Errorf("%s: an interrupt of a running turn: detail %q, want \"interrupted\"", c.ctl.name, d)
		}
		w.turn(s.id(), "cancelled")
		if d := time.Since(start); d > 4*time.Second {
			t.Errorf("the turn ended %v after the interrupt (the whole stream takes 5 s)", d)
		}
		if c.turn == sock {
			sockIDs = append(sockIDs, s.id())
		} else {
			sockIDs = append(sockIDs, m.id())
		}
	}
	for _, l := range []*ctlLane{w.stdio, sock} {
		s := slow(l)
		tok := token("AFTER")
		m := w.stdinReq(ctlID("intr"), "after the interrupt "+tok).with("interrupt", true)
		if d := ctlAck(t, l.request(m.String()), m, "ok", false); !strings.Contains(d, "interrupt") {
			t.Errorf("%s: a prompt with interrupt:true during a turn: detail %q", l.name, d)
		}
		w.turn(s.id(), "cancelled")
		w.turn(m.id(), "success")
		ctlPromptCount(t, tok, 1)
		if l == sock {
			sockIDs = append(sockIDs, s.id(), m.id())
		}
	}
	ctlNoAnswers(t, "stdio", w.stdio.got, sockIDs)
}

// TestControlTimeoutAndBusy: the CLI, stopped with SIGSTOP during a turn,
// cannot take an interrupt: with --control-timeout 1s its ack says
// timeout (stdio and socket), and a retry is a duplicate of that outcome.
// With --dedupe-max 1 a request that comes while that one is in flight
// gets busy and injects nothing. Once continued, the CLI takes the
// interrupt and the turn ends cancelled.
func TestControlTimeoutAndBusy(t *testing.T) {
	t.Parallel()
	w := ctlStart(t, ctlOpts{socket: true, args: []string{"--control-timeout", "1s", "--dedupe-max", "1",
		"--interrupt-timeout", "60s", "--audit-log", "-"}})
	sock := w.dial()
	s := w.stdinReq(ctlID("slow"), "SLOW "+token("slow"))
	from := len(w.stdio.got)
	ctlAck(t, w.stdio.request(s.String()), s, "ok", false)
	w.streaming(from)
	cont := ctlStopProc(t, w.cliPID())

	busyTok := token("BUSY")
	for _, c := range []struct{ first, second *ctlLane }{{w.stdio, sock}, {sock, w.stdio}} {
		i := w.interruptReq(ctlID("int"))
		c.first.send(i.String())
		// The audit's request event comes right before the store takes
		// the id; the worker then waits a whole second for the CLI.
		w.b.waitStderr(`"event":"request","request_id":"` + i.id() + `"`)
		b := w.stdinReq(ctlID("busy"), "never "+busyTok)
		if d := ctlAck(t, c.second.request(b.String()), b, "busy", false); !strings.Contains(d, "in flight") {
			t.Errorf("%s: busy detail %q", c.second.name, d)
		}
		d := ctlAck(t, c.first.nextAnswer(), i, "timeout", false)
		if !strings.Contains(d, "interrupt") || !strings.Contains(d, "1s") {
			t.Errorf("%s: timeout detail %q", c.first.name, d)
		}
		d = ctlAck(t, c.first.request(i.with("meta", map[string]any{"retry_count": 1}).String()), i, "ok", true)
		if !strings.Contains(d, "timeout") {
			t.Errorf("%s: a retry of a request that timed out: detail %q, want the first attempt's timeout", c.first.name, d)
		}
	}
	cont()
	w.turn(s.id(), "cancelled")
	tok := token("NEXT")
	n := w.stdinReq(ctlID("next"), "next "+tok)
	ctlAck(t, sock.request(n.String()), n, "ok", false)
	w.turn(n.id(), "success")
	ctlPromptCount(t, tok, 1)
	ctlPromptCount(t, busyTok, 0)
}

// TestControlNotLive: ccbridge gets SIGTERM while a turn runs (the CLI
// held with SIGSTOP, so the staged shutdown lasts): a prompt on stdio and
// on the socket gets not_live, a retry is judged anew (not_live again,
// not a duplicate), and nothing reaches the model. It is
// TestControlOneWorker's last scenario.
func ctlNotLive(t *testing.T, w *ctlWorker) {
	sock := w.dial()
	s := w.stdinReq(ctlID("slow"), "SLOW "+token("slow"))
	from := len(w.stdio.got)
	ctlAck(t, w.stdio.request(s.String()), s, "ok", false)
	w.streaming(from)
	cont := ctlStopProc(t, w.cliPID())
	logFrom := w.b.stderrLen()
	if err := w.b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	w.b.waitStderrFrom(logFrom, `"msg":"shutting down"`)
	tok := token("LATE")
	for _, l := range []*ctlLane{w.stdio, sock} {
		m := w.stdinReq(ctlID("late"), "too late "+tok)
		if d := ctlAck(t, l.request(m.String()), m, "not_live", false); !strings.Contains(d, "ending") {
			t.Errorf("%s: not_live detail %q", l.name, d)
		}
		// Retried, it is not a duplicate: nothing was done.
		ctlAck(t, l.request(m.with("meta", map[string]any{"retry_count": 1}).String()), m, "not_live", false)
	}
	cont()
	for w.stdio.read() {
	}
	if l := w.stdio.got[len(w.stdio.got)-1]; typeOf(l) != "control.worker.state" || get(l, "state").Str != "exited" {
		t.Errorf("the last line is not the worker's exit: %.400s", l)
	}
	w.b.wait()
	ctlPromptCount(t, tok, 0)
}

// TestControlDedupe: one request id sent 1,000 times on stdio, 1,000
// times on one connection, and 50 times on each of 20 connections at
// once: every ack is ok, all but the first duplicate, and the model gets
// exactly one prompt for each id. (TestControlSocketIPC does it beside
// --ui ipc too.)
func ctlDedupe(t *testing.T, w *ctlWorker) {
	sock := w.dial()
	for _, l := range []*ctlLane{w.stdio, sock} {
		tok := token("ONCE")
		m := w.stdinReq(ctlID("dup"), "once "+tok)
		for i := range 1000 {
			retry := m
			if i > 0 {
				retry = m.with("meta", map[string]any{"retry_count": i}, "sent_at", ctlNow())
			}
			ctlAck(t, l.request(retry.String()), m, "ok", i > 0)
			if t.Failed() {
				t.Fatalf("%s: attempt %d", l.name, i)
			}
		}
		w.turn(m.id(), "success")
		ctlPromptCount(t, tok, 1)
	}

	tok := token("CONC")
	m := w.stdinReq(ctlID("conc"), "concurrent "+tok)
	ctlOneFresh(t, ctlConcurrent(t, w.sock, m.String(), 20, 50), m, 1000)
	w.turn(m.id(), "success")
	ctlPromptCount(t, tok, 1)
}

// ctlConcurrent sends line each times, waiting for each ack, on each of
// conns connections to the socket at once, and returns every ack.
func ctlConcurrent(t *testing.T, path, line string, conns, each int) [][]byte {
	t.Helper()
	type result struct {
		acks [][]byte
		err  error
	}
	results := make(chan result, conns)
	for range conns {
		go func() {
			var r result
			defer func() { results <- r }()
			conn, err := net.Dial("unix", path)
			if err != nil {
				r.err = err
				return
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(ctlWait))
			rd := bufio.NewReader(conn)
			if _, err := rd.ReadBytes('\n'); err != nil { // the capabilities
				r.err = err
				return
			}
			for range each {
				if _, err := io.WriteString(conn, line+"\n"); err != nil {
					r.err = err
					return
				}
				ack, err := rd.ReadBytes('\n')
				if err != nil {
					r.err = err
					return
				}
				r.acks = append(r.acks, ack)
			}
		}()
	}
	var acks [][]byte
	for range conns {
		r := <-results
		if r.err != nil {
			t.Errorf("a concurrent controller: %v", r.err)
		}
		acks = append(acks, r.acks...)
	}
	return acks
}

// ctlOneFresh checks that all n acks are ok acks of m, and all but one
// duplicates.
func ctlOneFresh(t *testing.T, acks [][]byte, m ctlMsg, n int) {
	t.Helper()
	if len(acks) != n {
		t.Errorf("%d acks, want %d", len(acks), n)
	}
	fresh := 0
	for _, a := range acks {
		dup := get(a, "duplicate").Type != gjson.False
		if !dup {
			fresh++
		}
		ctlAck(t, a, m, "ok", dup)
	}
	if fresh != 1 {
		t.Errorf("%d of the %d attempts were not duplicates, want 1", fresh, len(acks))
	}
}

// TestControlDurableDedupe: with --state-dir, a request acked by one
// ccbridge is a duplicate for the next one, which resumes the same
// session after the first ended: ok, duplicate:true with the first
// outcome, on stdio and on the socket, and the model gets no second
// prompt.
func TestControlDurableDedupe(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	w1 := ctlStart(t, ctlOpts{socket: true, durable: true, args: []string{"--state-dir", state}})
	sock1 := w1.dial()
	tok1, tok2 := token("DURA"), token("DURB")
	m1 := w1.stdinReq(ctlID("d1"), "first "+tok1)
	m2 := w1.stdinReq(ctlID("d2"), "second "+tok2)
	ctlAck(t, w1.stdio.request(m1.String()), m1, "ok", false)
	w1.turn(m1.id(), "success")
	ctlAck(t, sock1.request(m2.String()), m2, "ok", false)
	w1.turn(m2.id(), "success")
	w1.b.stdin.Close()
	for w1.stdio.read() {
	}
	if code := w1.b.wait(); code != 0 {
		t.Fatalf("the first ccbridge exited with %d", code)
	}

	w2 := ctlStart(t, ctlOpts{socket: true, durable: true, sid: w1.sid, resume: true,
		args: []string{"--state-dir", state, "--cwd", w1.b.dir}, env: []string{"HOME=" + w1.b.home}})
	sock2 := w2.dial()
	for _, c := range []struct {
		l *ctlLane
		m ctlMsg
	}{{w2.stdio, m1}, {sock2, m2}, {sock2, m1}, {w2.stdio, m2}} {
		retry := c.m.with("sent_at", ctlNow(), "meta", map[string]any{"retry_count": 1})
		if d := ctlAck(t, c.l.request(retry.String()), c.m, "ok", true); !strings.Contains(d, "first attempt's result: ok") {
			t.Errorf("%s: a retry after the restart: detail %q", c.l.name, d)
		}
	}
	tok3 := token("DURC")
	m3 := w2.stdinReq(ctlID("d3"), "third "+tok3)
	ctlAck(t, w2.stdio.request(m3.String()), m3, "ok", false)
	w2.turn(m3.id(), "success")
	ctlPromptCount(t, tok1, 1)
	ctlPromptCount(t, tok2, 1)
	ctlPromptCount(t, tok3, 1)
	if !seenByModel(t, tok3, tok1) {
		t.Errorf("the second ccbridge did not resume the session: its prompt's history lacks the first prompt")
	}
}

// TestControlBadInput: malformed lines of every kind on stdio and on the
// socket each get exactly one control.error or ack, rejected, with the
// error code of docs/control/lane000.md; ccbridge goes on, nothing is
// injected, and a valid request afterwards (with a request_id of exactly
// 256 bytes) works.
func ctlBadInput(t *testing.T, w *ctlWorker) {
	sock := w.dial()
	bad := token("BAD")
	ok := w.stdinReq(ctlID("bad"), "bad "+bad)
	id := ok.id()
	intr := w.interruptReq(id)
	long := strings.Repeat("r", 257)
	const (
		errT   = "control.error"
		stdinT = "control.stdin.ack"
		intT   = "control.interrupt.ack"
	)
	cases := []struct {
		what, line, typ, code, id string
	}{
		{"malformed JSON", `{"type":"control.stdin.request","v":1,"content":"` + bad, errT, "invalid_json", ""},
		{"trailing garbage", ok.String() + "}", errT, "invalid_json", ""},
		{"not UTF-8", strings.Replace(ok.String(), bad, bad+"\xff\xfe", 1), errT, "invalid_utf8", ""},
		{"an array", `["control.stdin.request",1]`, errT, "not_object", ""},
		{"null", `null`, errT, "not_object", ""},
		{"no type", ok.with("type", ctlDel).String(), errT, "missing_field", id},
		{"a type that is a number", ok.with("type", 7).String(), errT, "wrong_type", id},
		{"an unknown type", ok.with("type", "control.shell.request").String(), errT, "unknown_type", id},
		{"v 2", ok.with("v", 2).String(), stdinT, "unsupported_version", id},
		{"v 1.0", strings.Replace(ok.String(), `"v":1`, `"v":1.0`, 1), stdinT, "unsupported_version", id},
		{"v a string", ok.with("v", "1").String(), stdinT, "wrong_type", id},
		{"no v", ok.with("v", ctlDel).String(), stdinT, "missing_field", id},
		{"no request_id", ok.with("request_id", ctlDel).String(), stdinT, "missing_field", ""},
		{"request_id a number", ok.with("request_id", 42).String(), stdinT, "wrong_type", ""},
		{"request_id of 257 bytes", ok.with("request_id", long).String(), stdinT, "invalid_value", ""},
		{"request_id twice", strings.Replace(ok.String(), `"request_id":`, `"request_id":"other","request_id":`, 1), stdinT, "duplicate_field", "other"},
		{"no sender", ok.with("sender", ctlDel).String(), stdinT, "missing_field", id},
		{"no session_id", ok.with("session_id", ctlDel).String(), stdinT, "missing_field", id},
		{"team null", ok.with("team", nil).String(), stdinT, "missing_field", id},
		{"sent_at not a time", ok.with("sent_at", "yesterday").String(), stdinT, "invalid_value", id},
		{"sent_at an hour old", ok.with("sent_at", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)).String(), stdinT, "stale", id},
		{"sent_at an hour ahead", ok.with("sent_at", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)).String(), stdinT, "future", id},
		{"no content", ok.with("content", ctlDel).String(), stdinT, "missing_field", id},
		{"content a number", ok.with("content", 7).String(), stdinT, "wrong_type", id},
		{"empty content", ok.with("content", "").String(), stdinT, "empty_content", id},
		{"content over the hard limit", ok.with("content", bad+strings.Repeat("x", 1000)).String(), stdinT, "too_large", id},
		{"interrupt a string", ok.with("interrupt", "yes").String(), stdinT, "wrong_type", id},
		{"meta a string", ok.with("meta", "x").String(), stdinT, "wrong_type", id},
		{"content_encoding latin-1", ok.with("content_encoding", "latin-1").String(), stdinT, "invalid_value", id},
		{"content_ref without --ref-root", ok.with("content", ctlDel, "content_ref", map[string]any{"path": "/etc/passwd",
			"size_bytes": 10, "sha256": strings.Repeat("a", 64), "mime": "text/plain"}).String(), stdinT, "content_ref_refused", id},
		{"an interrupt with signal kill", intr.with("signal", "kill").String(), intT, "invalid_value", id},
		{"an interrupt with no signal", intr.with("signal", ctlDel).String(), intT, "missing_field", id},
		{"a capabilities request with v 2", `{"type":"control.capabilities.request","v":2}`, errT, "unsupported_version", ""},
		{"a line over the limit", ok.with("content", bad+strings.Repeat("x", 120_000)).String(), errT, "too_large", ""},
	}
	for _, l := range []*ctlLane{w.stdio, sock} {
		for _, c := range cases {
			ctlProblem(t, l.name+": "+c.what, l.request(c.line), c.typ, "rejected", c.code, c.id)
		}
		tok := token("GOOD")
		gid := token("good")
		good := w.stdinReq(gid+strings.Repeat("g", 256-len(gid)), "good "+tok)
		if len(good.id()) != 256 {
			t.Fatalf("request_id of %d bytes", len(good.id()))
		}
		ctlAck(t, l.request(good.String()), good, "ok", false)
		w.turn(good.id(), "success")
		ctlPromptCount(t, tok, 1)
	}
	ctlPromptCount(t, bad, 0)
	for _, l := range w.stdio.got {
		if typeOf(l) == "control.worker.turn" && len(get(l, "request_ids").Array()) != 1 {
			t.Errorf("a turn of a request that was refused: %.400s", l)
		}
	}
}

// TestControlInternalError: the durable store's file may not grow (the
// file size limit of ccbridge, RLIMIT_FSIZE, set to its size: as a full
// disk would): requests get internal_error, on stdio and on the socket,
// and inject nothing; once the file may grow again a retry of the same
// request_id is judged anew and works.
func TestControlInternalError(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	w := ctlStart(t, ctlOpts{socket: true, durable: true, args: []string{"--state-dir", state}})
	sock := w.dial()
	fi, err := os.Stat(state + "/control.db")
	if err != nil {
		t.Fatal(err)
	}
	pid := w.b.cmd.Process.Pid
	if err := ctlSetFileSizeLimit(pid, uint64(fi.Size())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctlSetFileSizeLimit(pid, ^uint64(0)) })
	// Interrupts with no turn do nothing when they pass: send fresh ones
	// until the store has to grow its file.
	failed := false
	for i := 0; i < 5000 && !failed; i++ {
		m := w.interruptReq(ctlID("fill"))
		ans := w.stdio.request(m.String())
		switch get(ans, "result").Str {
		case "ok":
			ctlAck(t, ans, m, "ok", false)
		case "internal_error":
			failed = true
			if d := ctlAck(t, ans, m, "internal_error", false); !strings.Contains(d, "store") {
				t.Errorf("internal_error detail %q", d)
			}
		default:
			t.Fatalf("an interrupt with no turn: %.400s", ans)
		}
	}
	if !failed {
		t.Fatalf("the store never failed to grow its file (%d bytes)", fi.Size())
	}
	tok := token("NOSTORE")
	var ms []ctlMsg
	for _, l := range []*ctlLane{w.stdio, sock} {
		m := w.stdinReq(ctlID("ie"), "not stored "+tok)
		ctlAck(t, l.request(m.String()), m, "internal_error", false)
		ms = append(ms, m)
	}
	if err := ctlSetFileSizeLimit(pid, ^uint64(0)); err != nil {
		t.Fatal(err)
	}
	for i, l := range []*ctlLane{w.stdio, sock} {
		m := ms[i]
		ctlAck(t, l.request(m.with("sent_at", ctlNow()).String()), m, "ok", false)
		w.turn(m.id(), "success")
	}
	ctlPromptCount(t, tok, 2)
}

// TestControlSocketIPC: --control beside --ui ipc, where the UI keeps its
// stdio: a stale socket at the path is replaced; the controller gets the
// capabilities, its acks and nothing else, the UI never sees a control
// line; a prompt, an interrupt of the UI's turn, a prompt with interrupt
// true, not_found, rejected, bad input, one request id from 10
// controllers at once; and not_live once SIGTERM began the shutdown. A
// subtest first, in the same ccbridge, is TestLane001Socket's ipc half:
// one CLI start fewer than a worker of its own.
func TestControlSocketIPC(t *testing.T) {
	t.Parallel()
	path := ctlSocketPath(t)
	stale, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()
	if fi, err := os.Lstat(path); err != nil || fi.Mode().Type() != os.ModeSocket {
		t.Fatalf("no stale socket at %s: %v", path, err)
	}
	w := ctlStart(t, ctlOpts{ui: "ipc", sockPath: path, env: []string{"CCBRIDGE_GRACE=300ms", "CCBRIDGE_TERM_GRACE=10s"}})
	b := w.b
	if sid := expectSessionInit(t, b); sid != w.sid {
		t.Fatalf("session_init %s, want %s", sid, w.sid)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the control socket that replaced the stale one: %v, mode %v", err, fi.Mode())
	}
	sock, other := w.dial(), w.dial()

	// Lane 001 on a connection of its own: a worker of ipc cannot be
	// paused. Nothing of it reaches the UI or the other connections (the
	// checks at the end).
	t.Run("TestLane001Socket/ipc", func(st *testing.T) {
		w.t = st
		defer func() { w.t = t }()
		l1SocketIPC(st, w)
	})

	// A prompt from the controller: the UI sees its turn.
	tok := token("IPCMULTI")
	text := "from the controller " + tok + "\nline two\n  line three"
	m := w.stdinReq(ctlID("ipc"), text)
	if d := ctlAck(t, sock.request(m.String()), m, "ok", false); d != "sent" {
		t.Errorf("detail %q, want sent", d)
	}
	complete(t, finishTurn(t, b, nil))
	if got := ctlPrompts(t, tok); len(got) != 1 || got[0].Prompt != text {
		t.Errorf("the model got %d prompts with %s (want 1, the text intact): %q", len(got), tok, ctlTexts(got))
	}

	refused := token("IPCREF")
	nf1, nf2 := w.stdinReq(ctlID("nf"), refused).with("session_id", uuid.NewString()), w.interruptReq(ctlID("nf")).with("agent_id", "agent-other")
	rej1, rej2 := w.stdinReq(ctlID("rej"), refused).with("sender", "mallory"), w.stdinReq(ctlID("rej"), refused).with("team", "team-other")
	for _, c := range []struct {
		what, line, typ, result, code, id string
	}{
		{"another session", nf1.String(), "control.stdin.ack", "not_found", "unknown_session", nf1.id()},
		{"another agent", nf2.String(), "control.interrupt.ack", "not_found", "unknown_agent", nf2.id()},
		{"an unknown sender", rej1.String(), "control.stdin.ack", "rejected", "unauthorized", rej1.id()},
		{"another team", rej2.String(), "control.stdin.ack", "rejected", "unauthorized", rej2.id()},
		{"malformed JSON", `{"type":`, "control.error", "rejected", "invalid_json", ""},
		{"request_id of 300 bytes", w.stdinReq(strings.Repeat("x", 300), refused).String(), "control.stdin.ack", "rejected", "invalid_value", ""},
		{"v 2", rej1.with("v", 2, "sender", ctlSender).String(), "control.stdin.ack", "rejected", "unsupported_version", rej1.id()},
	} {
		ctlProblem(t, c.what, sock.request(c.line), c.typ, c.result, c.code, c.id)
	}
	i := w.interruptReq(ctlID("idle"))
	if d := ctlAck(t, sock.request(i.String()), i, "ok", false); d != "no turn running" {
		t.Errorf("an interrupt with no turn: detail %q", d)
	}

	// The UI's own turn, interrupted by the controller.
	b.send(userMessage("SLOW " + token("ipcslow")))
	ipcUntil(t, b, "streaming text", func(l []byte) bool { return typeOf(l) == "assistant_text" && get(l, "is_partial").Bool() })
	i = w.interruptReq(ctlID("int"))
	ctlAck(t, sock.request(i.String()), i, "ok", false)
	lines := finishTurn(t, b, nil)
	if last := lines[len(lines)-1]; typeOf(last) != "turn_cancelled" {
		t.Fatalf("the interrupted turn ended with %.400s", last)
	}

	// Again, with a prompt that interrupts it.
	b.send(userMessage("SLOW " + token("ipcslow")))
	ipcUntil(t, b, "streaming text", func(l []byte) bool { return typeOf(l) == "assistant_text" && get(l, "is_partial").Bool() })
	tok2 := token("IPCINT")
	m = w.stdinReq(ctlID("intr"), "instead "+tok2).with("interrupt", true)
	ctlAck(t, other.request(m.String()), m, "ok", false)
	ipcUntil(t, b, "the cancelled turn", func(l []byte) bool {
		if isTerminal(l) && typeOf(l) != "turn_cancelled" {
			t.Fatalf("the interrupted turn ended with %.400s", l)
		}
		return isTerminal(l)
	})
	complete(t, finishTurn(t, b, nil))
	ctlPromptCount(t, tok2, 1)
	ctlPromptCount(t, refused, 0)

	// One request id from 10 controllers at once, 20 times each: one
	// prompt, one turn.
	tok3 := token("IPCCONC")
	m = w.stdinReq(ctlID("conc"), "concurrent "+tok3)
	ctlOneFresh(t, ctlConcurrent(t, w.sock, m.String(), 10, 20), m, 200)
	complete(t, finishTurn(t, b, nil))
	ctlPromptCount(t, tok3, 1)

	// The shutdown: the CLI held mid-turn, ccbridge told to stop.
	b.send(userMessage("SLOW " + token("ipcslow")))
	ipcUntil(t, b, "streaming text", func(l []byte) bool { return typeOf(l) == "assistant_text" && get(l, "is_partial").Bool() })
	cont := ctlStopProc(t, w.cliPID())
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	b.waitStderr(`"msg":"shutting down"`)
	late := token("IPCLATE")
	m = w.stdinReq(ctlID("late"), "late "+late)
	if d := ctlAck(t, sock.request(m.String()), m, "not_live", false); !strings.Contains(d, "shutting down") {
		t.Errorf("not_live detail %q", d)
	}
	cont()
	for {
		l, err := recv(t, b, ctlWait) // every UI line must be ipc (no control line)
		if err != nil {
			break
		}
		if strings.HasPrefix(typeOf(l), "control.") {
			t.Errorf("the UI got a control line: %.300s", l)
		}
	}
	b.wait()
	ctlPromptCount(t, late, 0)
	for _, l := range []*ctlLane{sock, other} {
		for l.read() {
		}
		for _, x := range l.got {
			if !ctlIsAnswer(x) {
				t.Errorf("%s: a line that answers nothing: %.300s", l.name, x)
			}
		}
	}
	if len(other.got) != 2 {
		t.Errorf("the second controller got %d lines, want its capabilities and its ack:\n%s", len(other.got), lastLines(other.got, 8))
	}
}

// TestControlSocketRPCBusy: --control beside --ui rpc: a prompt while a
// run is active is busy and injects nothing; an interrupt request cancels
// the run; the UI sees no control line.
func TestControlSocketRPCBusy(t *testing.T) {
	t.Parallel()
	w := ctlStart(t, ctlOpts{ui: "rpc", socket: true})
	c := &rpcConn{t: t, b: w.b}
	c.initialize("")
	sock := w.dial()
	run := c.start("SLOW " + token("rpcslow"))
	c.until("streaming text", isEvent(run, "text.delta"))
	tok := token("RPCBUSY")
	m := w.stdinReq(ctlID("busy"), "busy "+tok)
	if d := ctlAck(t, sock.request(m.String()), m, "busy", false); d != "a run is active" {
		t.Errorf("busy detail %q", d)
	}
	i := w.interruptReq(ctlID("int"))
	ctlAck(t, sock.request(i.String()), i, "ok", false)
	if _, status := c.finishRun(run); status != "cancelled" {
		t.Errorf("the run ended %s, want cancelled", status)
	}
	// Retried once the run is over, the busy request is judged anew.
	ctlAck(t, sock.request(m.with("sent_at", ctlNow()).String()), m, "ok", false)
	c.until("the injected run's end", func(l []byte) bool {
		return isMethod("run.status")(l) && gjson.GetBytes(l, "params.status").Str == "completed"
	})
	ctlPromptCount(t, tok, 1)
	c.close()
}

// TestControlSocketRegularFile: a regular file at the --control path
// makes ccbridge refuse to start, saying why, and the file is kept.
func TestControlSocketRegularFile(t *testing.T) {
	t.Parallel()
	for _, ui := range []string{"control", "ipc"} {
		path := ctlSocketPath(t)
		if err := os.WriteFile(path, []byte("keep me"), 0o644); err != nil {
			t.Fatal(err)
		}
		b := startBridge(t, []string{"--ui", ui, "--team", ctlTeam, "--agent-id", ctlAgent, "--allow-sender", ctlSender, "--control", path})
		if out := b.rest(); len(out) != 0 {
			t.Errorf("--ui %s: ccbridge wrote %d lines: %s", ui, len(out), lastLines(out, 4))
		}
		if code := b.wait(); code == 0 {
			t.Errorf("--ui %s: ccbridge exited 0 with a regular file at --control", ui)
		}
		if e := b.stderr.String(); !strings.Contains(e, "--control") || !strings.Contains(e, "regular file") {
			t.Errorf("--ui %s: the error does not say what is wrong: %s", ui, tail(e, 1000))
		}
		if data, err := os.ReadFile(path); err != nil || string(data) != "keep me" {
			t.Errorf("--ui %s: the file at --control was changed: %q, %v", ui, data, err)
		}
	}
}

// TestControlSocketStream: --control beside the stream dialect, whose host
// keeps its stream-json stdio: a controller's prompt reaches the model
// once (a retry is a duplicate), the host sees that turn's result and
// none of the lane's lines, and an interrupt from the controller ends the
// host's own slow turn. It runs in TestStreamOneSession's ccbridge.
func ctlSocketStream(t *testing.T, w *ctlWorker) {
	b := w.b
	sock := w.dial()

	tok := token("STREAMCTL")
	text := "from the controller " + tok + "\nline two"
	m := w.stdinReq(ctlID("stream"), text)
	ctlAck(t, sock.request(m.String()), m, "ok", false)
	ctlAck(t, sock.request(m.String()), m, "ok", true)
	res := b.until("the injected turn's result", isType("result"))
	if r := res[len(res)-1]; gjson.GetBytes(r, "subtype").Str != "success" {
		t.Fatalf("the injected turn: %s", r)
	}
	for _, l := range res {
		if strings.HasPrefix(gjson.GetBytes(l, "type").Str, "control.") {
			t.Errorf("the host got a control lane line: %s", l)
		}
	}
	if got := ctlPrompts(t, tok); len(got) != 1 || got[0].Prompt != text {
		t.Errorf("the model got %d prompts with %s (want 1, the text intact): %q", len(got), tok, ctlTexts(got))
	}

	b.prompt("SLOW " + token("streamslow"))
	b.until("streaming text", func(l []byte) bool { return gjson.GetBytes(l, "event.delta.type").Str == "text_delta" })
	i := w.interruptReq(ctlID("int"))
	ctlAck(t, sock.request(i.String()), i, "ok", false)
	res = b.until("the interrupted turn's result", isType("result"))
	if r := res[len(res)-1]; !strings.HasPrefix(gjson.GetBytes(r, "terminal_reason").Str, "aborted") {
		t.Errorf("the host's turn after the controller's interrupt: %.400s", r)
	}
}

// TestFaultControlSentAtFarAhead (defect 6): lane 000 requests whose
// sent_at is centuries ahead or behind are refused (future, stale) and
// never reach the model; before the fix a sent_at in 2400 or 9999 was
// taken (the age, a time.Duration, saturated at 292 years and its
// negation overflowed) and injected.
func ctlSentAtFarAhead(t *testing.T, w *ctlWorker) {
	tok := token("FAR")
	for _, c := range []struct{ at, code string }{
		{time.Now().Add(40 * time.Second).UTC().Format(time.RFC3339Nano), "future"},
		{"2300-01-01T00:00:00Z", "future"},
		{"2318-06-01T00:00:00Z", "future"},
		{"2400-01-01T00:00:00Z", "future"},
		{"9999-12-31T23:59:59.999999999Z", "future"},
		{"1700-01-01T00:00:00Z", "stale"},
		{"0000-01-01T00:00:00Z", "stale"},
	} {
		m := w.stdinReq(ctlID("far"), "far "+tok).with("sent_at", c.at)
		ctlProblem(t, "sent_at "+c.at, w.stdio.request(m.String()), "control.stdin.ack", "rejected", c.code, m.id())
	}
	good := token("NEAR")
	m := w.stdinReq(ctlID("near"), "near "+good)
	ctlAck(t, w.stdio.request(m.String()), m, "ok", false)
	w.turn(m.id(), "success")
	ctlPromptCount(t, good, 1)
	ctlPromptCount(t, tok, 0)
}
