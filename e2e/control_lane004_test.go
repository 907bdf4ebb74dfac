package e2e

// Lane 004 (seed 004, the worker lane) end to end: request lines
// {"request":{…}} on the stdio of `--ui control` and on the --control
// socket, answered with exactly one receipt each (worker.response,
// worker.error) in the worker's event log, beside its progress
// (worker.event). The first lane-004 line of a peer starts its stream of
// the log at the latest seq. The real CLI runs behind ccbridge, the fake
// model (scenario default) behind it. Helpers of this file start with l4.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/session/clifiles"
)

// l4Worker is the --worker-id of every worker here: each line says it.
const l4Worker = "worker-e2e"

// l4Mock is the fake model's answer to a prompt with no keyword of its.
const l4Mock = "Hello from the mock model. "

// l4Start runs `ccbridge --ui control` with the worker's identity and
// --worker-id (ctlStart, which checks that the capabilities name lane 004).
func l4Start(t *testing.T, o ctlOpts) *ctlWorker {
	t.Helper()
	o.ui = "control"
	o.args = append([]string{"--worker-id", l4Worker}, o.args...)
	return ctlStart(t, o)
}

// l4Caps checks that a line is the capabilities and names lane 004.
func l4Caps(t *testing.T, lane string, l []byte) {
	t.Helper()
	if typeOf(l) != "control.capabilities" {
		t.Fatalf("%s: the first line is not the capabilities: %.400s", lane, l)
	}
	var lanes []string
	for _, v := range get(l, "lanes").Array() {
		lanes = append(lanes, v.Str)
	}
	if !slices.Contains(lanes, "004") {
		t.Errorf("%s: the capabilities do not name lane 004: %.400s", lane, l)
	}
}

// l4Conn is one lane-004 peer: the stdio of --ui control, or one
// connection to the socket.
type l4Conn struct {
	*ctlLane
	conn   net.Conn // nil for stdio
	worker string   // the worker id its lines carry: l4Worker when ""
}

func l4Stdio(w *ctlWorker) *l4Conn { return &l4Conn{ctlLane: w.stdio, worker: w.worker} }

// l4Dial connects to the worker's socket; the first line must be the
// capabilities.
func l4Dial(t *testing.T, w *ctlWorker) *l4Conn {
	t.Helper()
	conn, err := net.Dial("unix", w.sock)
	if err != nil {
		t.Fatalf("dialling the control socket: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	ch := ctlReadLines(conn, 1<<16)
	c := &l4Conn{conn: conn, worker: w.worker, ctlLane: &ctlLane{t: t, name: "socket", lines: ch, write: func(s string) error {
		conn.SetWriteDeadline(time.Now().Add(ctlWait))
		_, err := io.WriteString(conn, s+"\n")
		return err
	}}}
	l4Caps(t, "socket", c.got[c.waitFrom(0, "the capabilities", func([]byte) bool { return true })])
	return c
}

// l4Req is a request line.
func l4Req(id, method string, params any) string {
	req := map[string]any{"request_id": id, "method": method}
	if params != nil {
		req["params"] = params
	}
	b, err := json.Marshal(map[string]any{"request": req})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// l4Text is turn/start's params: one text input.
func l4Text(thread, text string) map[string]any {
	return map[string]any{"threadId": thread, "input": []any{map[string]any{"type": "text", "text": text}}}
}

func l4IsWorker(l []byte) bool { return strings.HasPrefix(get(l, "event_type").Str, "worker.") }

// l4IsReceipt matches the receipt of request id.
func l4IsReceipt(id string) func([]byte) bool {
	return func(l []byte) bool {
		switch get(l, "event_type").Str {
		case "worker.response", "worker.error":
			return get(l, "payload.request_id").Str == id
		}
		return false
	}
}

// l4IsEvent matches a worker.event of method whose params hold turn
// (params.turn.id or params.turnId) when turn is not "".
func l4IsEvent(method, turn string) func([]byte) bool {
	return func(l []byte) bool {
		if get(l, "event_type").Str != "worker.event" || get(l, "payload.method").Str != method {
			return false
		}
		return turn == "" || get(l, "payload.params.turn.id").Str == turn || get(l, "payload.params.turnId").Str == turn
	}
}

func l4Seq(l []byte) uint64 { return get(l, "seq").Uint() }

// call sends a request and returns its receipt.
func (c *l4Conn) call(id, method string, params any) []byte {
	c.t.Helper()
	from := len(c.got)
	c.send(l4Req(id, method, params))
	return c.got[c.waitFrom(from, "the receipt of "+id, l4IsReceipt(id))]
}

// ok checks a success receipt of method and returns its response.
func l4OK(t *testing.T, what string, r []byte, method string) gjson.Result {
	t.Helper()
	if get(r, "event_type").Str != "worker.response" || get(r, "payload.ok").Type != gjson.True ||
		get(r, "payload.method").Str != method || !get(r, "seq").Exists() {
		t.Fatalf("%s: want a worker.response to %s, got %.800s", what, method, r)
	}
	return get(r, "payload.response")
}

// l4Fail checks an error receipt (with a seq: a receipt of the log) of
// code and returns its payload.
func l4Fail(t *testing.T, what string, r []byte, method, code string) gjson.Result {
	t.Helper()
	if get(r, "event_type").Str != "worker.error" || get(r, "payload.code").Str != code ||
		get(r, "payload.method").Str != method || !get(r, "seq").Exists() || get(r, "payload.message").Str == "" {
		t.Fatalf("%s: want a worker.error %s to %s with a seq and a message, got %.800s", what, code, method, r)
	}
	return get(r, "payload")
}

// turn sends turn/start with text on thread and reads to its
// turn/completed; it returns the turn's id and the range of lines, from
// the request's on.
func (c *l4Conn) turn(thread, text string) (turn string, from, to int) {
	c.t.Helper()
	from = len(c.got)
	id := ctlID("turn")
	r := c.call(id, "turn/start", l4Text(thread, text))
	turn = l4OK(c.t, c.name+": turn/start", r, "turn/start").Get("turn.id").Str
	if _, err := uuid.Parse(turn); err != nil {
		c.t.Fatalf("%s: turn/start's turn.id %q is not a UUID: %s", c.name, turn, r)
	}
	to = c.waitFrom(from, "the turn/completed of "+turn, l4IsEvent("turn/completed", turn))
	return turn, from, to
}

// workerLines are the lane-004 lines among got[from:to+1].
func (c *l4Conn) workerLines(from, to int) [][]byte {
	var out [][]byte
	for _, l := range c.got[from : to+1] {
		if l4IsWorker(l) {
			out = append(out, l)
		}
	}
	return out
}

// l4CheckTurn checks the lines of one turn that ran to its end (the
// receipt first, turn/completed last): seqs one apart, turn/started after
// the receipt, the agentMessage deltas concatenated are want and so is
// the completed item's text, every event of the thread and the turn, and
// turn/completed has status.
func l4CheckTurn(t *testing.T, what string, lines [][]byte, thread, turn, want, status string) {
	t.Helper()
	if len(lines) < 2 {
		t.Fatalf("%s: %d lines", what, len(lines))
	}
	r := lines[0]
	rt := l4OK(t, what, r, "turn/start").Get("turn")
	if rt.Get("id").Str != turn || rt.Get("status").Str != "inProgress" || rt.Get("items").Raw != "[]" || rt.Get("error").Type != gjson.Null {
		t.Errorf("%s: the receipt's turn: %s", what, rt.Raw)
	}
	l4Consecutive(t, what, lines)
	started := indexOf(lines, l4IsEvent("turn/started", turn))
	if started < 1 || count(lines, l4IsEvent("turn/started", "")) != 1 {
		t.Fatalf("%s: want one turn/started after the receipt:\n%s", what, lastLines(lines, 30))
	}
	if l4Seq(lines[started]) <= l4Seq(r) {
		t.Errorf("%s: turn/started seq %d, the receipt's %d", what, l4Seq(lines[started]), l4Seq(r))
	}
	if th := get(lines[started], "payload.params.threadId").Str; th != thread {
		t.Errorf("%s: turn/started of thread %s, want %s", what, th, thread)
	}
	var deltas strings.Builder
	var item string
	completedText := ""
	for i, l := range lines[1:] {
		if i+1 < started {
			t.Errorf("%s: a line between the receipt and turn/started: %.300s", what, l)
		}
		if get(l, "event_type").Str != "worker.event" {
			continue // a receipt (turn/interrupt's, say)
		}
		p := get(l, "payload.params")
		if th := p.Get("threadId").Str; th != thread {
			t.Errorf("%s: an event of thread %q, want %s: %.300s", what, th, thread, l)
		}
		if tu := p.Get("turnId"); tu.Exists() && tu.Str != turn {
			t.Errorf("%s: an event of turn %q, want %s: %.300s", what, tu.Str, turn, l)
		}
		switch get(l, "payload.method").Str {
		case "item/started":
			if p.Get("item.type").Str == "agentMessage" {
				if item != "" || p.Get("item.text").Str != "" {
					t.Errorf("%s: a second or non-empty agentMessage item/started: %.300s", what, l)
				}
				item = p.Get("item.id").Str
			}
		case "item/agentMessage/delta":
			if item == "" || p.Get("itemId").Str != item {
				t.Errorf("%s: a delta of item %q, the open item is %q", what, p.Get("itemId").Str, item)
			}
			deltas.WriteString(p.Get("delta").Str)
		case "item/completed":
			if p.Get("item.type").Str == "agentMessage" {
				if p.Get("item.id").Str != item {
					t.Errorf("%s: item/completed of %q, started %q", what, p.Get("item.id").Str, item)
				}
				completedText = p.Get("item.text").Str
			}
		}
	}
	last := lines[len(lines)-1]
	if !l4IsEvent("turn/completed", turn)(last) || get(last, "payload.params.turn.status").Str != status ||
		get(last, "payload.params.threadId").Str != thread {
		t.Errorf("%s: want turn/completed %s last, got %.500s", what, status, last)
	}
	if status == "completed" && (deltas.String() != want || completedText != want) {
		t.Errorf("%s: the deltas say %q and the completed item %q, want %q", what, deltas.String(), completedText, want)
	}
}

// l4Consecutive checks that the lines with a seq come one seq apart.
func l4Consecutive(t *testing.T, what string, lines [][]byte) {
	t.Helper()
	var prev uint64
	for _, l := range lines {
		if !get(l, "seq").Exists() {
			continue
		}
		if s := l4Seq(l); prev != 0 && s != prev+1 {
			t.Errorf("%s: seq %d after %d: %.300s", what, s, prev, l)
		}
		prev = l4Seq(l)
	}
}

var l4TimeRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// checkShapes checks every lane-004 line read: its keys in the seed's
// order, the worker id, occurred_at in UTC with milliseconds, retryable
// as the code says.
func (c *l4Conn) checkShapes() {
	c.t.Helper()
	for _, l := range c.got {
		if l4IsWorker(l) {
			l4ShapeOf(c.t, c.name, cmp.Or(c.worker, l4Worker), l)
		}
	}
}

func l4Shape(t *testing.T, lane string, l []byte) {
	t.Helper()
	l4ShapeOf(t, lane, l4Worker, l)
}

// l4ShapeOf is l4Shape of a line of worker id.
func l4ShapeOf(t *testing.T, lane, worker string, l []byte) {
	t.Helper()
	root := gjson.ParseBytes(l)
	typ := root.Get("event_type").Str
	head := []string{"event_type", "seq", "worker_id", "payload"}
	var payload []string
	switch typ {
	case "worker.response":
		payload = []string{"request_id", "method", "ok", "response", "occurred_at"}
	case "worker.error":
		if !root.Get("seq").Exists() {
			head = []string{"event_type", "worker_id", "payload"}
		}
		payload = []string{"request_id", "method", "code", "message", "retryable", "occurred_at"}
		if root.Get("payload.details").Exists() {
			payload = []string{"request_id", "method", "code", "message", "retryable", "details", "occurred_at"}
		}
		retryable := false
		switch root.Get("payload.code").Str {
		case "timeout", "worker_unavailable", "internal_error":
			retryable = true
		}
		if root.Get("payload.retryable").Type != ctlBool(retryable) {
			t.Errorf("%s: retryable is not as the code says: %.400s", lane, l)
		}
	case "worker.event":
		payload = []string{"method", "params", "occurred_at"}
	case "worker.cursor_stale":
		head = []string{"event_type", "worker_id", "payload"}
		payload = []string{"after", "resume_after", "latest_seq", "occurred_at"}
	default:
		t.Errorf("%s: a line of an unknown event_type: %.400s", lane, l)
		return
	}
	if k := l1Keys(root); !slices.Equal(k, head) {
		t.Errorf("%s: keys %v, want %v: %.400s", lane, k, head, l)
	}
	if k := l1Keys(root.Get("payload")); !slices.Equal(k, payload) {
		t.Errorf("%s: payload keys %v, want %v: %.400s", lane, k, payload, l)
	}
	if root.Get("worker_id").Str != worker {
		t.Errorf("%s: worker_id %q, want %q", lane, root.Get("worker_id").Str, worker)
	}
	if s := root.Get("seq"); s.Exists() && (s.Type != gjson.Number || s.Uint() == 0) {
		t.Errorf("%s: seq %s", lane, s.Raw)
	}
	if at := root.Get("payload.occurred_at").Str; !l4TimeRE.MatchString(at) {
		t.Errorf("%s: occurred_at %q is not UTC RFC 3339 with milliseconds", lane, at)
	}
	if typ == "worker.event" && !root.Get("payload.params").IsObject() {
		t.Errorf("%s: params is not an object: %.400s", lane, l)
	}
}

// l4Turns returns each turn's user text and agentMessage text from
// thread/read's response.
func l4Turns(resp gjson.Result) (users, agents []string) {
	for _, turn := range resp.Get("thread.turns").Array() {
		var u, a string
		for _, it := range turn.Get("items").Array() {
			switch it.Get("type").Str {
			case "userMessage":
				for _, c := range it.Get("content").Array() {
					u += c.Get("text").Str
				}
			case "agentMessage":
				a += it.Get("text").Str
			}
		}
		users, agents = append(users, u), append(agents, a)
	}
	return users, agents
}

// l4Listed returns thread/list's entry for id.
func l4Listed(t *testing.T, resp gjson.Result, id string) gjson.Result {
	t.Helper()
	for _, th := range resp.Get("data").Array() {
		if th.Get("id").Str == id {
			return th
		}
	}
	t.Fatalf("thread/list does not list %s: %s", id, resp.Raw)
	return gjson.Result{}
}

// TestLane004Methods: every method, on stdio and on a socket connection:
// thread/start (a new UUID, thread/started, the thread id taken by
// turn/start), turn/start (the receipt with turn.id first, then
// turn/started, items and deltas that concatenate to the model's answer,
// turn/completed; seqs one apart), turn/interrupt of a slow answer
// (interrupted, and the next turn works), thread/list and thread/read
// (preview, the turns' texts), thread/resume of the earlier thread (its
// next turn carries its history). The two lanes, each a subtest, run one
// after the other in one worker (ccbridge --ui control --control, see
// inOneSession): one CLI start fewer than a worker each. The socket's
// comes first, so that stdio has sent no lane-004 line yet when the
// socket's checks that it got none; each lane's threads are its own, and
// each checks its whole stream (stdio's holds no lane-004 line of the
// socket's turns: the socket's last check).
func TestLane004Methods(t *testing.T) {
	t.Parallel()
	open := func(t *testing.T) *ctlWorker { return l4Start(t, ctlOpts{socket: true}) }
	inOneSession(t, open, ctlBind,
		scenario[*ctlWorker]{"socket", l4Methods("socket")},
		scenario[*ctlWorker]{"stdio", l4Methods("stdio")},
	)
}

// l4Methods is TestLane004Methods on one lane of worker w.
func l4Methods(lane string) func(t *testing.T, w *ctlWorker) {
	return func(t *testing.T, w *ctlWorker) {
		c := l4Stdio(w)
		if lane == "socket" {
			c = l4Dial(t, w)
		}
		cwd := mustReal(t, w.b.dir)

		// thread/start: a new thread, announced.
		from := len(c.got)
		r := c.call(ctlID("start"), "thread/start", map[string]any{})
		th := l4OK(t, "thread/start", r, "thread/start").Get("thread")
		a := th.Get("id").Str
		if _, err := uuid.Parse(a); err != nil || a == w.sid {
			t.Fatalf("thread/start's thread.id %q is not a new UUID (%v): %s", a, err, r)
		}
		if th.Get("cwd").Str != cwd || th.Get("preview").Str != "" || th.Get("modelProvider").Str != "anthropic" || th.Get("createdAt").Int() <= 0 {
			t.Errorf("thread/start's thread: %s (cwd %s)", th.Raw, cwd)
		}
		st := c.got[c.waitFrom(from, "thread/started", l4IsEvent("thread/started", ""))]
		if get(st, "payload.params.thread.id").Str != a || l4Seq(st) <= l4Seq(r) {
			t.Errorf("thread/started (receipt seq %d): %.400s", l4Seq(r), st)
		}

		// turn/start on it: the CLI runs under the thread's id.
		tokA := token("HELLO")
		textA := "hello " + tokA
		turnA, f, to := c.turn(a, textA)
		l4CheckTurn(t, "turn/start", c.workerLines(f, to), a, turnA, l4Mock, "completed")
		ctlPromptCount(t, tokA, 1)

		list := l4OK(t, "thread/list", c.call(ctlID("list"), "thread/list", nil), "thread/list")
		if e := l4Listed(t, list, a); e.Get("preview").Str != textA || e.Get("cwd").Str != cwd || e.Get("name").Type != gjson.Null {
			t.Errorf("thread/list's entry for %s: %s", a, e.Raw)
		}
		read := l4OK(t, "thread/read", c.call(ctlID("read"), "thread/read", map[string]any{"threadId": a, "includeTurns": true}), "thread/read")
		users, agents := l4Turns(read)
		if read.Get("thread.id").Str != a || read.Get("thread.preview").Str != textA ||
			!slices.Equal(users, []string{textA}) || !slices.Equal(agents, []string{l4Mock}) {
			t.Errorf("thread/read with turns: users %q, agents %q: %.1500s", users, agents, read.Raw)
		}
		if id := read.Get("thread.turns.0.id").Str; id != turnA {
			t.Errorf("thread/read's turn id %s, turn/start's %s", id, turnA)
		}
		read = l4OK(t, "thread/read", c.call(ctlID("read"), "thread/read", map[string]any{"thread_id": a}), "thread/read")
		if read.Get("thread.turns").Exists() || read.Get("thread.id").Str != a {
			t.Errorf("thread/read without include_turns: %s", read.Raw)
		}

		// A second thread; a slow answer interrupted, then a turn.
		from = len(c.got)
		b := l4OK(t, "thread/start", c.call(ctlID("start"), "thread/start", nil), "thread/start").Get("thread.id").Str
		if b == a || uuid.Validate(b) != nil {
			t.Fatalf("the second thread/start gave %q (the first %s)", b, a)
		}
		c.waitFrom(from, "the second thread/started", func(l []byte) bool {
			return l4IsEvent("thread/started", "")(l) && get(l, "payload.params.thread.id").Str == b
		})
		from = len(c.got)
		r = c.call(ctlID("slow"), "turn/start", l4Text(b, "SLOW "+token("slow")))
		slow := l4OK(t, "turn/start SLOW", r, "turn/start").Get("turn.id").Str
		c.waitFrom(from, "a delta of the slow turn", l4IsEvent("item/agentMessage/delta", slow))
		start := time.Now()
		ir := c.call(ctlID("int"), "turn/interrupt", map[string]any{"threadId": b, "turnId": slow})
		l4Interrupted(t, c, from, b, slow, ir, start)
		tokC := token("NEXT")
		turnC, f, to := c.turn(b, "next "+tokC)
		l4CheckTurn(t, "the turn after the interrupt", c.workerLines(f, to), b, turnC, l4Mock, "completed")

		// thread/resume of the first thread: its next turn has its history.
		res := l4OK(t, "thread/resume", c.call(ctlID("resume"), "thread/resume", map[string]any{"threadId": a}), "thread/resume")
		if res.Get("thread.id").Str != a {
			t.Errorf("thread/resume's thread: %s", res.Raw)
		}
		tokD := token("AGAIN")
		turnD, f, to := c.turn(a, "again "+tokD)
		l4CheckTurn(t, "the resumed thread's turn", c.workerLines(f, to), a, turnD, l4Mock, "completed")
		if !seenByModel(t, tokD, tokA) || seenByModel(t, tokD, tokC) {
			t.Errorf("the resumed thread's prompt does not carry that thread's history alone")
		}
		read = l4OK(t, "thread/read", c.call(ctlID("read"), "thread/read", map[string]any{"threadId": a, "include_turns": true}), "thread/read")
		users, agents = l4Turns(read)
		if !slices.Equal(users, []string{textA, "again " + tokD}) || !slices.Equal(agents, []string{l4Mock, l4Mock}) {
			t.Errorf("thread/read of the resumed thread: users %q, agents %q", users, agents)
		}
		// A title in b's session file (as /rename writes it) is its name.
		fileB := clifiles.SessionFile(filepath.Join(w.b.home, ".claude"), cwd, b)
		if fh, err := os.OpenFile(fileB, os.O_APPEND|os.O_WRONLY, 0); err != nil {
			t.Errorf("opening %s's session file: %v", b, err)
		} else {
			fh.WriteString(`{"type":"custom-title","customTitle":"Named thread","sessionId":"` + b + `"}` + "\n")
			fh.Close()
		}
		list = l4OK(t, "thread/list", c.call(ctlID("list"), "thread/list", map[string]any{"limit": 10}), "thread/list")
		if n := l4Listed(t, list, b).Get("name"); n.Str != "Named thread" {
			t.Errorf("thread/list: %s has name %s, want the session file's title", b, n.Raw)
		}
		if p := l4Listed(t, list, a).Get("preview").Str; p != "again "+tokD {
			t.Errorf("thread/list: %s has preview %q", a, p)
		}
		if p := l4Listed(t, list, b).Get("preview").Str; p != "next "+tokC {
			t.Errorf("thread/list: %s has preview %q", b, p)
		}

		l4Consecutive(t, lane+": the whole stream", c.got)
		c.checkShapes()
		if lane == "socket" {
			// stdio sent no lane-004 line: it follows no stream.
			for _, l := range w.stdio.got {
				if l4IsWorker(l) {
					t.Errorf("stdio got a lane-004 line without asking: %.300s", l)
				}
			}
		}
	}
}

// TestLane004OneWorker: the lane-004 scenarios that leave the worker as
// they found it (idle, on its thread, in the same CLI), each a subtest
// named for the test it was alone, in one ccbridge --ui control --control
// and one CLI, one after the other (see inOneSession): one CLI start for
// six rules. TestLane004Errors/stdio comes first, so that stdio's whole
// stream is the one it checks; each Errors removes the file its approved
// Write made. --permission-mode default is TestLane004Errors' and
// TestSteerLane004's (and the CLI's default); --interrupt-timeout 1s is
// the timeout scenario's (the others' interrupts reach a CLI that
// answers). It comes last: its CLI is replaced after the timeout.
func TestLane004OneWorker(t *testing.T) {
	t.Parallel()
	open := func(t *testing.T) *ctlWorker {
		return l4Start(t, ctlOpts{socket: true, args: []string{"--permission-mode", "default", "--interrupt-timeout", "1s"}})
	}
	inOneSession(t, open, ctlBind,
		scenario[*ctlWorker]{"TestLane004Errors/stdio", l4Errors("stdio")},
		scenario[*ctlWorker]{"TestLane004Errors/socket", l4Errors("socket")},
		scenario[*ctlWorker]{"TestLane004Dedupe", l4Dedupe},
		scenario[*ctlWorker]{"TestLane004Reconnect", l4Reconnect},
		scenario[*ctlWorker]{"TestSteerLane004", l4Steer},
		scenario[*ctlWorker]{"TestLane004TimeoutAndInternalError/timeout", l4InterruptTimeout},
	)
}

// TestLane004Errors: every error code from a real situation, on stdio and
// on a socket connection: invalid_request (turn/start without thread_id;
// malformed JSON, answered with no seq and request_id null),
// unsupported_method, conflict (another thread; a turn running; an
// interrupt of a turn that ended; an approval answered twice), and an
// approval: with --permission-mode default the model's Write waits for
// ccbridge/approval/respond, accept writes the file.
func l4Errors(lane string) func(t *testing.T, w *ctlWorker) {
	return func(t *testing.T, w *ctlWorker) {
		c := l4Stdio(w)
		if lane == "socket" {
			c = l4Dial(t, w)
		}
		bad := token("BAD")

		p := l4Fail(t, "turn/start without thread_id", c.call(ctlID("nothread"), "turn/start",
			map[string]any{"input": []any{map[string]any{"type": "text", "text": bad}}}), "turn/start", "invalid_request")
		if !strings.Contains(p.Get("message").Str, "thread_id") {
			t.Errorf("invalid_request's message does not name thread_id: %s", p.Raw)
		}
		from := len(c.got)
		c.send(`{"request":{"request_id":"` + ctlID("malformed") + `","method":"thread/list"}} trailing`)
		i := c.waitFrom(from, "the refusal of malformed JSON", func(l []byte) bool { return get(l, "event_type").Str == "worker.error" })
		m := c.got[i]
		if get(m, "seq").Exists() || get(m, "payload.request_id").Type != gjson.Null || get(m, "payload.method").Type != gjson.Null ||
			get(m, "payload.code").Str != "invalid_request" || !strings.HasPrefix(get(m, "payload.message").Str, "malformed JSON") {
			t.Errorf("malformed JSON: want a seq-less invalid_request with request_id null, got %s", m)
		}
		p = l4Fail(t, "thread/fork", c.call(ctlID("fork"), "thread/fork", map[string]any{"threadId": w.sid}), "thread/fork", "unsupported_method")
		if !strings.Contains(p.Get("message").Str, "thread/fork") {
			t.Errorf("unsupported_method's message: %s", p.Raw)
		}
		other := uuid.NewString()
		p = l4Fail(t, "turn/start on another thread", c.call(ctlID("other"), "turn/start", l4Text(other, bad)), "turn/start", "conflict")
		if p.Get("details.current_thread_id").Str != w.sid || p.Get("details.current_turn_id").Type != gjson.Null {
			t.Errorf("conflict's details for another thread: %s", p.Raw)
		}

		// A turn running: another turn/start is a conflict naming it.
		from = len(c.got)
		slow := l4OK(t, "turn/start SLOW", c.call(ctlID("slow"), "turn/start", l4Text(w.sid, "SLOW "+token("slow"))), "turn/start").Get("turn.id").Str
		c.waitFrom(from, "a delta of the slow turn", l4IsEvent("item/agentMessage/delta", slow))
		p = l4Fail(t, "turn/start during a turn", c.call(ctlID("busy"), "turn/start", l4Text(w.sid, bad)), "turn/start", "conflict")
		if p.Get("details.current_turn_id").Str != slow || p.Get("details.current_thread_id").Str != w.sid {
			t.Errorf("conflict's details during a turn: %s", p.Raw)
		}
		p = l4Fail(t, "turn/interrupt of another turn", c.call(ctlID("int"), "turn/interrupt",
			map[string]any{"threadId": w.sid, "turnId": uuid.NewString()}), "turn/interrupt", "conflict")
		if p.Get("details.current_turn_id").Str != slow {
			t.Errorf("conflict's details for an interrupt of another turn: %s", p.Raw)
		}
		l4OK(t, "turn/interrupt", c.call(ctlID("int"), "turn/interrupt", map[string]any{"thread_id": w.sid, "turn_id": slow}), "turn/interrupt")
		end := c.waitFrom(from, "the interrupted turn's end", l4IsEvent("turn/completed", slow))
		if st := get(c.got[end], "payload.params.turn.status").Str; st != "interrupted" {
			t.Errorf("the interrupted turn ended %s", st)
		}
		p = l4Fail(t, "turn/interrupt of the ended turn", c.call(ctlID("stale"), "turn/interrupt",
			map[string]any{"threadId": w.sid, "turnId": slow}), "turn/interrupt", "conflict")
		if p.Get("details.current_turn_id").Type != gjson.Null || p.Get("details.current_thread_id").Str != w.sid {
			t.Errorf("conflict's details for a stale interrupt: %s", p.Raw)
		}

		// An approval: Write waits for ccbridge/approval/respond.
		tok := token("WRITE")
		from = len(c.got)
		wr := l4OK(t, "turn/start WRITEFILE", c.call(ctlID("write"), "turn/start", l4Text(w.sid, "WRITEFILE "+tok)), "turn/start").Get("turn.id").Str
		ai := c.waitFrom(from, "the approval request", l4IsEvent("item/fileChange/requestApproval", wr))
		ap := get(c.got[ai], "payload.params")
		approval := ap.Get("approvalId").Str
		written := filepath.Join(w.b.dir, "written.txt")
		tool := c.got[c.waitFrom(from, "the Write item", func(l []byte) bool {
			return l4IsEvent("item/started", wr)(l) && get(l, "payload.params.item.type").Str == "toolCall"
		})]
		if approval == "" || ap.Get("threadId").Str != w.sid || ap.Get("tool").Str != "Write" ||
			ap.Get("itemId").Str != get(tool, "payload.params.item.id").Str || !fileIn(ap.Get("input.file_path").Str, w.b.dir, "written.txt") {
			t.Errorf("the approval request: %s (the tool item %s)", ap.Raw, tool)
		}
		if _, err := os.Stat(written); err == nil {
			t.Fatalf("the file was written before the approval")
		}
		l4OK(t, "approval accept", c.call(ctlID("accept"), "ccbridge/approval/respond", map[string]any{"approvalId": approval, "decision": "accept"}), "ccbridge/approval/respond")
		res := c.got[c.waitFrom(ai, "serverRequest/resolved", l4IsEvent("serverRequest/resolved", ""))]
		if get(res, "payload.params.approvalId").Str != approval || get(res, "payload.params.resolution").Str != "accept" {
			t.Errorf("serverRequest/resolved: %s", res)
		}
		p = l4Fail(t, "the same approval answered again", c.call(ctlID("again"), "ccbridge/approval/respond",
			map[string]any{"approval_id": approval, "decision": "accept"}), "ccbridge/approval/respond", "conflict")
		if !strings.Contains(p.Get("message").Str, approval) {
			t.Errorf("conflict's message for an approval answered twice: %s", p.Raw)
		}
		end = c.waitFrom(from, "the Write turn's end", l4IsEvent("turn/completed", wr))
		if st := get(c.got[end], "payload.params.turn.status").Str; st != "completed" {
			t.Errorf("the Write turn ended %s", st)
		}
		if data, err := os.ReadFile(written); err != nil || string(data) != "hello world\n" {
			t.Errorf("written.txt after accept: %q, %v", data, err)
		}
		if n := count(c.got[from:], l4IsEvent("serverRequest/resolved", "")); n != 1 {
			t.Errorf("%d serverRequest/resolved for one approval", n)
		}
		ctlPromptCount(t, tok, 1)
		ctlPromptCount(t, bad, 0)
		l4Consecutive(t, lane+": the whole stream", c.got)
		c.checkShapes()
		// The next scenario's Write must find no file.
		if err := os.Remove(written); err != nil {
			t.Error(err)
		}
	}
}

// TestLane004WorkerUnavailable: a CLI that cannot start (its path, a link,
// removed): turn/start after the CLI died, and thread/start, are
// worker_unavailable (retryable); once the CLI is back the worker goes on
// with the thread it had, and a turn accepted for a thread runs in it.
func TestLane004WorkerUnavailable(t *testing.T) {
	t.Parallel()
	link := filepath.Join(t.TempDir(), "claude")
	relink := func() {
		t.Helper()
		if err := os.Symlink(realCLI(t), link); err != nil {
			t.Fatal(err)
		}
	}
	relink()
	w := l4Start(t, ctlOpts{env: []string{"CCBRIDGE_CLAUDE=" + link}})
	c := l4Stdio(w)
	tokA := token("FIRST")
	turnA, f, to := c.turn(w.sid, "first "+tokA)
	l4CheckTurn(t, "the first turn", c.workerLines(f, to), w.sid, turnA, l4Mock, "completed")

	// The CLI dies and cannot start again: the next turn is refused.
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	from := len(c.got)
	if err := syscall.Kill(w.cliPID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.waitFrom(from, "the worker's exit", func(l []byte) bool {
		return typeOf(l) == "control.worker.state" && get(l, "state").Str == "exited"
	})
	tokB := token("NOCLI")
	p := l4Fail(t, "turn/start with no CLI", c.call(ctlID("nocli"), "turn/start", l4Text(w.sid, "never "+tokB)), "turn/start", "worker_unavailable")
	if !strings.Contains(p.Get("message").Str, "could not start") || p.Get("retryable").Type != gjson.True {
		t.Errorf("worker_unavailable: %s", p.Raw)
	}
	relink()
	tokC := token("BACK")
	turnC, f, to := c.turn(w.sid, "back "+tokC)
	l4CheckTurn(t, "the turn once the CLI is back", c.workerLines(f, to), w.sid, turnC, l4Mock, "completed")
	if !seenByModel(t, tokC, tokA) {
		t.Errorf("the CLI started again did not resume the thread")
	}

	// thread/start cannot start its CLI.
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	p = l4Fail(t, "thread/start with no CLI", c.call(ctlID("start"), "thread/start", nil), "thread/start", "worker_unavailable")
	if !strings.Contains(p.Get("message").Str, "could not start") {
		t.Errorf("worker_unavailable: %s", p.Raw)
	}
	relink()
	ctlPromptCount(t, tokB, 0)
	// The thread that failed to start is none: the worker's thread is
	// still the one it had, and a turn accepted for a thread runs in it.
	tokD := token("AFTER")
	r := c.call(ctlID("after"), "turn/start", l4Text(w.sid, "after "+tokD))
	if get(r, "event_type").Str != "worker.response" {
		cur := get(r, "payload.details.current_thread_id").Str
		t.Errorf("after a thread/start that failed, turn/start on the worker's thread %s: %s", w.sid, r)
		if cur == "" || cur == w.sid {
			return
		}
		// The conflict names another thread as current: one turn on it
		// must run in that thread.
		from = len(c.got)
		r = c.call(ctlID("phantom"), "turn/start", l4Text(cur, "phantom "+tokD))
		turn := l4OK(t, "turn/start on the thread the conflict names", r, "turn/start").Get("turn.id").Str
		st := c.got[c.waitFrom(from, "turn/started", l4IsEvent("turn/started", turn))]
		c.waitFrom(from, "the turn's end", l4IsEvent("turn/completed", turn))
		if th := get(st, "payload.params.threadId").Str; th != cur {
			read := l4OK(t, "thread/read", c.call(ctlID("read"), "thread/read", map[string]any{"threadId": th}), "thread/read")
			t.Errorf("turn/start on %s (named current by the conflict) was accepted and runs in thread %s, whose preview is now %q: %.300s",
				cur, th, read.Get("thread.preview").Str, st)
		}
		return
	}
	turnD := l4OK(t, "turn/start", r, "turn/start").Get("turn.id").Str
	st := c.got[c.waitFrom(f, "turn/started", l4IsEvent("turn/started", turnD))]
	if th := get(st, "payload.params.threadId").Str; th != w.sid {
		t.Errorf("the turn runs in thread %s, want %s", th, w.sid)
	}
	c.waitFrom(f, "the turn's end", l4IsEvent("turn/completed", turnD))
	ctlPromptCount(t, tokD, 1)
	c.checkShapes()
}

// TestLane004Dedupe: one turn/start sent 1,000 times on stdio, one after
// the other, and another 50 times on each of 20 socket connections at
// once: every receipt is the same line (the same seq), the turn starts
// once, the model gets one prompt.
func l4Dedupe(t *testing.T, w *ctlWorker) {
	c := l4Stdio(w)
	tok := token("ONCE")
	line := l4Req(ctlID("dup"), "turn/start", l4Text(w.sid, "once "+tok))
	id := gjson.Get(line, "request.request_id").Str
	isR := l4IsReceipt(id)
	from := len(c.got)
	var r0 []byte
	n := 0
	for i := range 1000 {
		c.send(line)
		for n <= i {
			if !c.read() {
				t.Fatalf("stdio ended after %d receipts", n)
			}
			if l := c.got[len(c.got)-1]; isR(l) {
				if r0 == nil {
					r0 = l
				} else if !bytes.Equal(l, r0) {
					t.Fatalf("receipt %d differs from the first:\n%s\n%s", n+1, l, r0)
				}
				n++
			}
		}
	}
	turn := l4OK(t, "turn/start", r0, "turn/start").Get("turn.id").Str
	end := c.waitFrom(from, "the turn's end", l4IsEvent("turn/completed", turn))
	started := c.waitFrom(from, "turn/started", l4IsEvent("turn/started", turn))
	if l4Seq(c.got[started]) <= l4Seq(r0) {
		t.Errorf("turn/started seq %d, the receipt's %d", l4Seq(c.got[started]), l4Seq(r0))
	}
	// Counted from the first receipt on: stdio may still hold the events
	// of an earlier scenario's turns (TestLane004OneWorker).
	if k := count(c.got[from:end+1], func(l []byte) bool {
		return l4IsEvent("turn/started", "")(l) && l4Seq(l) > l4Seq(r0)
	}); k != 1 {
		t.Errorf("%d turn/started for 1,000 sends of one request", k)
	}
	ctlPromptCount(t, tok, 1)

	// 20 connections, each following the stream before the first send.
	tok2 := token("CONC")
	line2 := l4Req(ctlID("conc"), "turn/start", l4Text(w.sid, "concurrent "+tok2))
	id2 := gjson.Get(line2, "request.request_id").Str
	conns := make([]*l4Conn, 20)
	for k := range conns {
		conns[k] = l4Dial(t, w)
		l4OK(t, "thread/list", conns[k].call(ctlID("sub"), "thread/list", nil), "thread/list")
	}
	type result struct {
		lines [][]byte
		err   string
	}
	results := make(chan result, len(conns))
	for _, cn := range conns {
		go func() {
			var r result
			defer func() { results <- r }()
			timer := time.NewTimer(60 * time.Second)
			defer timer.Stop()
			receipts, turn, done := 0, "", false
			readOne := func() bool {
				select {
				case l, ok := <-cn.lines:
					if !ok {
						r.err = "the connection ended"
						return false
					}
					r.lines = append(r.lines, l)
					if l4IsReceipt(id2)(l) {
						receipts++
						turn = get(l, "payload.response.turn.id").Str
					}
					if turn != "" && l4IsEvent("turn/completed", turn)(l) {
						done = true
					}
					return true
				case <-timer.C:
					r.err = "no line within 60 s"
					return false
				}
			}
			for i := range 50 {
				if err := cn.write(line2); err != nil {
					r.err = err.Error()
					return
				}
				for receipts <= i {
					if !readOne() {
						return
					}
				}
			}
			for !done {
				if !readOne() {
					return
				}
			}
		}()
	}
	var ref []byte
	for range conns {
		r := <-results
		if r.err != "" {
			t.Errorf("a concurrent connection: %s", r.err)
		}
		var receipts [][]byte
		for _, l := range r.lines {
			if l4IsReceipt(id2)(l) {
				receipts = append(receipts, l)
			}
		}
		// 50 answers, and the receipt once more as the stream's event.
		if len(receipts) < 50 || len(receipts) > 51 {
			t.Errorf("a connection got %d receipts for 50 sends", len(receipts))
		}
		for _, l := range receipts {
			if ref == nil {
				ref = l
			} else if !bytes.Equal(l, ref) {
				t.Errorf("receipts differ:\n%s\n%s", l, ref)
			}
		}
		if ref == nil {
			continue
		}
		turn := get(ref, "payload.response.turn.id").Str
		if k := count(r.lines, l4IsEvent("turn/started", turn)); k != 1 {
			t.Errorf("a connection saw %d turn/started for the turn", k)
		}
		if s := first(r.lines, l4IsEvent("turn/started", turn)); s != nil && l4Seq(s) <= l4Seq(ref) {
			t.Errorf("turn/started seq %d, the receipt's %d", l4Seq(s), l4Seq(ref))
		}
	}
	if ref != nil {
		turn := l4OK(t, "turn/start", ref, "turn/start").Get("turn.id").Str
		c.waitFrom(end, "stdio's turn/completed of the concurrent turn", l4IsEvent("turn/completed", turn))
		if k := count(c.got, l4IsEvent("turn/started", turn)); k != 1 {
			t.Errorf("stdio saw %d turn/started for the concurrent turn", k)
		}
	}
	ctlPromptCount(t, tok2, 1)
	// Nothing more answered the 1,000 stdio sends meanwhile.
	if k := count(c.got, isR); k != 1000 {
		t.Errorf("stdio got %d receipts for 1,000 sends", k)
	}
	c.checkShapes()
}

// TestLane004Reconnect: a socket client that disconnects during a turn,
// after some deltas, reconnects and replays from the last seq it saw: it
// gets exactly the events it missed, in order, none twice (each the same
// line stdio got), then the replay's receipt, then the live stream. Then
// 200 new connections whose first line is a replay, each checked the same
// way (the follower a connection starts races with the replay's rewind).
func l4Reconnect(t *testing.T, w *ctlWorker) {
	obs := l4Stdio(w)
	l4OK(t, "thread/list", obs.call(ctlID("sub"), "thread/list", nil), "thread/list")

	c1 := l4Dial(t, w)
	from := len(c1.got)
	turn := l4OK(t, "turn/start", c1.call(ctlID("slow"), "turn/start", l4Text(w.sid, "SLOW "+token("slow"))), "turn/start").Get("turn.id").Str
	seen := 0
	c1.waitFrom(from, "three deltas", func(l []byte) bool {
		if l4IsEvent("item/agentMessage/delta", turn)(l) {
			seen++
		}
		return seen == 3
	})
	var last uint64
	for _, l := range c1.got {
		last = max(last, l4Seq(l))
	}
	c1.conn.Close()
	// The stream goes on without it.
	obs.waitFrom(0, "three more events", func(l []byte) bool { return l4Seq(l) >= last+3 })

	c2 := l4Dial(t, w)
	from = len(c2.got)
	rid := ctlID("replay")
	c2.send(l4Req(rid, "ccbridge/events/replay", map[string]any{"after": last}))
	ri := c2.waitFrom(from, "the replay's receipt", l4IsReceipt(rid))
	r := c2.got[ri]
	resp := l4OK(t, "replay", r, "ccbridge/events/replay")
	if resp.Get("after").Uint() != last || resp.Get("resume_after").Type != gjson.Null || resp.Get("latest_seq").Uint() != l4Seq(r)-1 {
		t.Errorf("the replay's response %s (after %d, the receipt's seq %d)", resp.Raw, last, l4Seq(r))
	}
	l4OK(t, "turn/interrupt", c2.call(ctlID("int"), "turn/interrupt", map[string]any{"threadId": w.sid, "turnId": turn}), "turn/interrupt")
	end := c2.waitFrom(ri, "the turn's end", l4IsEvent("turn/completed", turn))
	obs.waitFrom(0, "stdio's turn/completed", l4IsEvent("turn/completed", turn))

	got := c2.workerLines(from, end)
	if len(got) == 0 || l4Seq(got[0]) != last+1 {
		t.Fatalf("after replay from %d the first line is %.300s", last, got)
	}
	l4Consecutive(t, "the replayed stream", got)
	bySeq := map[uint64][]byte{}
	for _, l := range obs.got {
		if get(l, "seq").Exists() {
			bySeq[l4Seq(l)] = l
		}
	}
	for _, l := range got {
		if !bytes.Equal(l, bySeq[l4Seq(l)]) {
			t.Errorf("seq %d differs from stdio's:\n%s\n%s", l4Seq(l), l, bySeq[l4Seq(l)])
		}
	}
	if n := int(l4Seq(r) - last - 1); indexOf(got, l4IsReceipt(rid)) != n || n < 3 {
		t.Errorf("the receipt is line %d of the replay, want %d (the events missed, at least 3)", indexOf(got, l4IsReceipt(rid)), n)
	}
	c2.checkShapes()
	obs.checkShapes()

	// New connections whose first line is a replay, one after another:
	// each gets the events after its cursor, in order, once, then its
	// receipt. (A follower that reads the log between the check for a
	// rewind and the rewind's arrival would send the receipt first.)
	after := l4Seq(r) // the receipts of the replays follow it
	for i := range 200 {
		cn := l4Dial(t, w)
		from := len(cn.got)
		id := ctlID("fresh")
		cn.send(l4Req(id, "ccbridge/events/replay", map[string]any{"after": after}))
		ri := cn.waitFrom(from, "the replay's receipt", l4IsReceipt(id))
		lines := cn.workerLines(from, ri)
		rs := l4Seq(cn.got[ri])
		if l4Seq(lines[0]) != after+1 || uint64(len(lines)) != rs-after {
			var seqs []uint64
			for _, l := range lines {
				seqs = append(seqs, l4Seq(l))
			}
			t.Errorf("replay %d, after %d, as a connection's first line: seqs %v up to the receipt (seq %d), want %d..%d",
				i, after, seqs, rs, after+1, rs)
		}
		cn.conn.Close()
		after = rs - 2
	}
}

// TestLane004StaleCursor: with --retain-events 10 a turn makes more
// events than are kept; a replay from seq 1, on stdio and on a new socket
// connection, gets worker.cursor_stale (no seq) with resume_after the
// oldest kept seq - 1, then the kept events from there, the receipt among
// them.
func TestLane004StaleCursor(t *testing.T) {
	t.Parallel()
	w := l4Start(t, ctlOpts{socket: true, args: []string{"--retain-events", "10"}})
	c := l4Stdio(w)
	turn, _, to := c.turn(w.sid, "hello "+token("stale"))
	if l4Seq(c.got[to]) <= 12 {
		t.Fatalf("the turn made only %d events", l4Seq(c.got[to]))
	}
	sock := l4Dial(t, w)
	for _, l := range []*l4Conn{c, sock} {
		from := len(l.got)
		rid := ctlID("stale")
		l.send(l4Req(rid, "ccbridge/events/replay", map[string]any{"after": 1}))
		ri := l.waitFrom(from, "the replay's receipt", l4IsReceipt(rid))
		r := l.got[ri]
		resp := l4OK(t, l.name+": replay", r, "ccbridge/events/replay")
		lines := l.workerLines(from, ri)
		st := lines[0]
		if get(st, "event_type").Str != "worker.cursor_stale" || get(st, "seq").Exists() || get(st, "payload.after").Uint() != 1 {
			t.Fatalf("%s: want worker.cursor_stale first, got %s", l.name, st)
		}
		resume := get(st, "payload.resume_after").Uint()
		// The receipt itself may push the oldest event out: the stream
		// resumes from the oldest kept when it looked.
		if ra := resp.Get("resume_after").Uint(); resume != ra && resume != ra+1 || resp.Get("after").Uint() != 1 || resp.Get("latest_seq").Uint() != l4Seq(r)-1 {
			t.Errorf("%s: the replay's response %s, the stale line's resume_after %d", l.name, resp.Raw, resume)
		}
		if latest := get(st, "payload.latest_seq").Uint(); latest != l4Seq(r) && latest != l4Seq(r)-1 {
			t.Errorf("%s: the stale line's latest_seq %d, the receipt's seq %d", l.name, latest, l4Seq(r))
		}
		if len(lines) < 2 || l4Seq(lines[1]) != resume+1 {
			t.Fatalf("%s: after resume_after %d comes %.300s", l.name, resume, lines[1:])
		}
		l4Consecutive(t, l.name+": the replay", lines)
		if n := len(lines) - 1; n != 10 && n != 11 {
			t.Errorf("%s: %d events replayed with 10 kept (and the receipt)", l.name, n)
		}
		if k := count(lines, func(b []byte) bool { return get(b, "event_type").Str == "worker.cursor_stale" }); k != 1 {
			t.Errorf("%s: %d cursor_stale lines", l.name, k)
		}
		if l == c && indexOf(lines, l4IsEvent("turn/completed", turn)) < 0 {
			t.Errorf("%s: the replay lacks the turn's end", l.name)
		}
		l.checkShapes()
	}
}

// TestLane004Restart: with --state-dir, ccbridge stopped after a turn and
// started again on the same state, HOME and working directory: the first
// new receipt's seq follows the last one, and a retry of the old
// request_id gets the old receipt byte for byte and runs nothing.
func TestLane004Restart(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	w1 := l4Start(t, ctlOpts{durable: true, args: []string{"--state-dir", state}})
	c1 := l4Stdio(w1)
	tok1 := token("DUR")
	line1 := l4Req(ctlID("dur"), "turn/start", l4Text(w1.sid, "first "+tok1))
	id1 := gjson.Get(line1, "request.request_id").Str
	c1.send(line1)
	r1 := c1.got[c1.waitFrom(0, "the receipt", l4IsReceipt(id1))]
	turn1 := l4OK(t, "turn/start", r1, "turn/start").Get("turn.id").Str
	c1.waitFrom(0, "the turn's end", l4IsEvent("turn/completed", turn1))
	w1.b.stdin.Close()
	for c1.read() {
	}
	if code := w1.b.wait(); code != 0 {
		t.Fatalf("the first ccbridge exited with %d", code)
	}
	var last uint64
	for _, l := range c1.got {
		last = max(last, l4Seq(l))
	}
	c1.checkShapes()

	w2 := l4Start(t, ctlOpts{durable: true, sid: w1.sid, resume: true,
		args: []string{"--state-dir", state, "--cwd", w1.b.dir}, env: []string{"HOME=" + w1.b.home}})
	c2 := l4Stdio(w2)
	tok2 := token("DUR2")
	r2 := c2.call(ctlID("dur2"), "turn/start", l4Text(w1.sid, "second "+tok2))
	turn2 := l4OK(t, "the first request after the restart", r2, "turn/start").Get("turn.id").Str
	if l4Seq(r2) != last+1 {
		t.Errorf("the first receipt after the restart has seq %d, want %d", l4Seq(r2), last+1)
	}
	for i := range 2 {
		from := len(c2.got)
		c2.send(line1)
		again := c2.got[c2.waitFrom(from, "the old receipt", l4IsReceipt(id1))]
		if !bytes.Equal(again, r1) {
			t.Errorf("retry %d of the old request after the restart:\n%s\nwant\n%s", i, again, r1)
		}
	}
	c2.waitFrom(0, "the new turn's end", l4IsEvent("turn/completed", turn2))
	if k := count(c2.got, l4IsEvent("turn/started", "")); k != 1 {
		t.Errorf("%d turns started after the restart, want 1", k)
	}
	ctlPromptCount(t, tok1, 1)
	ctlPromptCount(t, tok2, 1)
	if !seenByModel(t, tok2, tok1) {
		t.Errorf("the second ccbridge did not resume the thread")
	}
	c2.checkShapes()
}

// l4Interrupted checks a SLOW turn interrupted at start (ir is the
// receipt of its turn/interrupt): {} as the response, then turn/completed
// interrupted, well before the whole answer (5 s) and after the receipt.
// It returns the index of turn/completed in c.got.
func l4Interrupted(t *testing.T, c *l4Conn, from int, thread, slow string, ir []byte, start time.Time) int {
	t.Helper()
	if resp := l4OK(t, "turn/interrupt", ir, "turn/interrupt"); resp.Raw != "{}" {
		t.Errorf("turn/interrupt's response %s, want {}", resp.Raw)
	}
	done := c.waitFrom(from, "the interrupted turn/completed", l4IsEvent("turn/completed", slow))
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("the turn ended %v after the interrupt (the whole answer takes 5 s)", d)
	}
	l4CheckTurn(t, "the interrupted turn", c.workerLines(from, done), thread, slow, "", "interrupted")
	if l4Seq(c.got[done]) < l4Seq(ir) {
		t.Errorf("turn/completed (seq %d) before the interrupt's receipt (seq %d)", l4Seq(c.got[done]), l4Seq(ir))
	}
	return done
}

// TestLane004TimeoutAndInternalError: the two codes that come from a
// failing CLI or a crash. timeout: the CLI, stopped with SIGSTOP during a
// SLOW turn, does not answer turn/interrupt within --interrupt-timeout;
// the turn ends interrupted all the same and the next turn runs in a new
// CLI. internal_error: ccbridge is killed (SIGKILL) while a thread/start
// waits for a stopped CLI to exit; after a restart on the same
// --state-dir, a retry of that request gets an internal_error receipt
// saying whether it took effect is not known, and a second retry the
// same bytes.
// l4InterruptTimeout is TestLane004TimeoutAndInternalError/timeout (in
// TestLane004OneWorker, whose worker has --interrupt-timeout 1s).
func l4InterruptTimeout(t *testing.T, w *ctlWorker) {
	c := l4Stdio(w)
	r := c.call(ctlID("slow"), "turn/start", l4Text(w.sid, "SLOW "+token("slow")))
	slow := l4OK(t, "turn/start SLOW", r, "turn/start").Get("turn.id").Str
	from := c.waitFrom(0, "a delta of the slow turn", l4IsEvent("item/agentMessage/delta", slow))
	cont := ctlStopProc(t, w.cliPID())
	defer cont()
	ir := c.call(ctlID("int"), "turn/interrupt", map[string]any{"threadId": w.sid, "turnId": slow})
	p := l4Fail(t, "turn/interrupt of a stopped CLI", ir, "turn/interrupt", "timeout")
	if p.Get("retryable").Type != gjson.True || !strings.Contains(p.Get("message").Str, "did not answer the interrupt") {
		t.Errorf("the timeout receipt: %s", ir)
	}
	done := c.waitFrom(from, "the turn's end", l4IsEvent("turn/completed", slow))
	if st := get(c.got[done], "payload.params.turn.status").Str; st != "interrupted" {
		t.Errorf("the turn ended %q after the timeout, want interrupted: %s", st, c.got[done])
	}
	tok := token("AFTER")
	turn, f, to := c.turn(w.sid, "after "+tok)
	l4CheckTurn(t, "the turn after the timeout", c.workerLines(f, to), w.sid, turn, l4Mock, "completed")
	ctlPromptCount(t, tok, 1)
}

func TestLane004TimeoutAndInternalError(t *testing.T) {
	t.Parallel()
	t.Run("internal_error", func(t *testing.T) {
		t.Parallel()
		state := t.TempDir()
		w1 := l4Start(t, ctlOpts{durable: true, args: []string{"--state-dir", state}})
		c1 := l4Stdio(w1)
		c1.turn(w1.sid, "first "+token("FIRST"))
		ctlStopProc(t, w1.cliPID())
		line := l4Req(ctlID("start"), "thread/start", map[string]any{})
		c1.send(line)
		// The request is in flight: the stopped CLI is being retired.
		w1.b.waitStderr(`"reason":"thread switch"`)
		w1.b.cmd.Process.Signal(syscall.SIGKILL)
		w1.b.wait()

		w2 := l4Start(t, ctlOpts{durable: true, sid: w1.sid, resume: true,
			args: []string{"--state-dir", state, "--cwd", w1.b.dir}, env: []string{"HOME=" + w1.b.home}})
		c2 := l4Stdio(w2)
		id := gjson.Get(line, "request.request_id").Str
		c2.send(line)
		r := c2.got[c2.waitFrom(0, "the receipt of the request in flight", l4IsReceipt(id))]
		p := l4Fail(t, "the request in flight at the crash", r, "thread/start", "internal_error")
		if !strings.Contains(p.Get("message").Str, "in flight when ccbridge stopped") || p.Get("retryable").Type != gjson.True {
			t.Errorf("the receipt of the request in flight: %s", r)
		}
		from := len(c2.got)
		c2.send(line)
		again := c2.got[c2.waitFrom(from, "the retry's receipt", l4IsReceipt(id))]
		if !bytes.Equal(again, r) {
			t.Errorf("the retry:\n%s\nwant\n%s", again, r)
		}
		if n := count(c2.got, l4IsEvent("thread/started", "")); n != 0 {
			t.Errorf("%d threads started after the restart", n)
		}
	})
}
