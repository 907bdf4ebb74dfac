//go:build linux

package worker

// --ui control --pty end to end: ControlUI.Run with the "ptyagent" fake
// (ptyagent_test.go) as the program after --, driven by lane 000 on the
// UI's stdin as a controller drives it. Each test sets the agent into one
// trap of driving a terminal program and checks what the controller sees
// (the acks, control.worker.* and control.screen) against what the agent
// took (its log of submissions).

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/adapter/control"
	"github.com/ccbridge/ccbridge/internal/adaptertest"
	"github.com/ccbridge/ccbridge/mapping/lane000"
	"github.com/ccbridge/ccbridge/session"
)

const (
	ptwTeam   = "team-pty"
	ptwAgent  = "agent-pty"
	ptwSender = "lead"
	// ptwStable is --stable-after; ptwTimeout the lane's timeout.
	ptwStable  = 300 * time.Millisecond
	ptwTimeout = 3 * time.Second
	// ptwDeadline bounds every wait for a line.
	ptwDeadline = 10 * time.Second
)

// ptwRun is one ccbridge --ui control --pty -- ptyagent, seen from its
// controller: every line it wrote so far, and the agent's log.
type ptwRun struct {
	t          *testing.T
	h          *adaptertest.Host
	logPath    string
	sid        string
	cols, rows int
	seq        int
	ackAt      int // the index of the last ack request waited for

	mu      sync.Mutex
	lines   []gjson.Result
	ended   bool
	changed chan struct{} // closed and replaced at every line
}

type ptwConfig struct {
	cols, rows int
	timeout    time.Duration
	env        []string // PTYAGENT_* beyond the short delays
	socket     string   // --control PATH, "" for none
}

// startPTW starts the worker and reads its first line, the capabilities
// (the session id requests must name).
func startPTW(t *testing.T, cfg ptwConfig) *ptwRun {
	t.Helper()
	if cfg.cols == 0 {
		cfg.cols, cfg.rows = 80, 24
	}
	if cfg.timeout == 0 {
		cfg.timeout = ptwTimeout
	}
	logPath := filepath.Join(t.TempDir(), "prompts.jsonl")
	env := append([]string{"PTYAGENT_LOG=" + logPath, "PTYAGENT_START_DELAY=50ms", "PTYAGENT_CHAR_DELAY=5ms"}, cfg.env...)
	c := &ControlUI{
		Settings: adapter.Settings{
			Child:          adaptertest.Config(t, "ptyagent", nil, env...),
			Options:        session.Options{Extra: []string{os.Args[0]}}, // the command after --
			ControlTimeout: cfg.timeout,
			Control:        control.Config{Team: ptwTeam, AgentID: ptwAgent, Senders: []string{ptwSender}, Socket: cfg.socket},
			Logger:         adaptertest.Logger(t),
		},
		PTY: PTYConfig{On: true, Cols: cfg.cols, Rows: cfg.rows, StableAfter: ptwStable},
	}
	r := &ptwRun{t: t, logPath: logPath, cols: cfg.cols, rows: cfg.rows, changed: make(chan struct{})}
	r.h = adaptertest.StartRunner(t, c.Run)
	go r.read()
	_, caps := r.wait(0, "the capabilities", func(l gjson.Result) bool { return true })
	if caps.Get("type").Str != lane000.TypeCapabilities || caps.Get("session_id").Str == "" {
		t.Fatalf("the first line is %s, want control.capabilities with a session_id", caps.Raw)
	}
	r.sid = caps.Get("session_id").Str
	return r
}

func (r *ptwRun) read() {
	for l := range r.h.Lines {
		r.mu.Lock()
		r.lines = append(r.lines, gjson.ParseBytes(l))
		close(r.changed)
		r.changed = make(chan struct{})
		r.mu.Unlock()
	}
	r.mu.Lock()
	r.ended = true
	close(r.changed)
	r.mu.Unlock()
}

// mark is the index of the next line.
func (r *ptwRun) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.lines)
}

// all is every line so far.
func (r *ptwRun) all() []gjson.Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.lines)
}

// wait waits for the first line from index from on for which ok holds,
// and returns it and its index.
func (r *ptwRun) wait(from int, what string, ok func(gjson.Result) bool) (int, gjson.Result) {
	r.t.Helper()
	deadline := time.NewTimer(ptwDeadline)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		n, ended, ch := len(r.lines), r.ended, r.changed
		for i := from; i < n; i++ {
			if l := r.lines[i]; ok(l) {
				r.mu.Unlock()
				return i, l
			}
		}
		r.mu.Unlock()
		from = n
		if ended {
			r.t.Fatalf("the output ended before %s:\n%s", what, r.dump())
		}
		select {
		case <-ch:
		case <-deadline.C:
			r.t.Fatalf("no %s within %v:\n%s", what, ptwDeadline, r.dump())
		}
	}
}

// dump is the last lines, for a failure.
func (r *ptwRun) dump() string {
	ls := r.all()
	var b strings.Builder
	for _, l := range ls[max(0, len(ls)-40):] {
		raw := l.Raw
		if len(raw) > 300 {
			raw = raw[:300] + "…"
		}
		b.WriteString(raw + "\n")
	}
	return b.String()
}

// waitState waits for a control.worker.state line of state from index
// from on and returns its index.
func (r *ptwRun) waitState(from int, state string) int {
	r.t.Helper()
	i, _ := r.wait(from, "the state "+state, func(l gjson.Result) bool {
		return l.Get("type").Str == lane000.TypeWorkerState && l.Get("state").Str == state
	})
	return i
}

// idleAfterAck waits for the worker to be idle after the last ack: an
// input is acked ok once the screen moved after its return, which makes
// the worker running (the state line comes before the ack); idle follows
// once the answer has ended. (The worker may be idle before the ack as
// well: a paste shown, then a return lost for longer than --stable-after.)
func (r *ptwRun) idleAfterAck() {
	r.t.Helper()
	r.waitState(r.ackAt, "idle")
}

func (r *ptwRun) id(tag string) string {
	r.seq++
	return fmt.Sprintf("req-%s-%d", tag, r.seq)
}

func (r *ptwRun) stdinLine(id, content string, interrupt bool) string {
	m := map[string]any{"type": lane000.TypeStdinRequest, "v": 1, "request_id": id, "team": ptwTeam, "session_id": r.sid,
		"agent_id": ptwAgent, "sender": ptwSender, "sent_at": time.Now().UTC().Format(time.RFC3339), "content": content}
	if interrupt {
		m["interrupt"] = true
	}
	b, err := json.Marshal(m)
	if err != nil {
		r.t.Fatal(err)
	}
	return string(b)
}

// request sends line and waits for the ack of id (of type typ).
func (r *ptwRun) request(line, typ, id string) gjson.Result {
	r.t.Helper()
	from := r.mark()
	r.h.Send(line)
	i, ack := r.wait(from, "the "+typ+" of "+id, func(l gjson.Result) bool {
		return l.Get("type").Str == typ && l.Get("request_id").Str == id
	})
	r.ackAt = i
	return ack
}

// stdin sends a control.stdin.request of id and returns its ack.
func (r *ptwRun) stdin(id, content string, interrupt bool) gjson.Result {
	r.t.Helper()
	return r.request(r.stdinLine(id, content, interrupt), lane000.TypeStdinAck, id)
}

// interrupt sends a control.interrupt.request and returns its ack.
func (r *ptwRun) interrupt(id string) gjson.Result {
	r.t.Helper()
	b, _ := json.Marshal(map[string]any{"type": lane000.TypeInterruptRequest, "v": 1, "request_id": id, "team": ptwTeam,
		"session_id": r.sid, "agent_id": ptwAgent, "sender": ptwSender, "sent_at": time.Now().UTC().Format(time.RFC3339), "signal": "interrupt"})
	return r.request(string(b), lane000.TypeInterruptAck, id)
}

// screen asks for the whole screen and returns the answer and its rows.
func (r *ptwRun) screen() (gjson.Result, []string) {
	r.t.Helper()
	id := r.id("screen")
	ans := r.request(`{"type":"control.screen.request","v":1,"request_id":"`+id+`"}`, lane000.TypeScreen, id)
	var rows []string
	for i, l := range ans.Get("lines").Array() {
		if l.Get("n").Int() != int64(i) {
			r.t.Fatalf("control.screen row %d is numbered %d: %s", i, l.Get("n").Int(), ans.Raw)
		}
		rows = append(rows, l.Get("text").Str)
	}
	return ans, rows
}

// wantAck checks an ack's result and duplicate flag.
func (r *ptwRun) wantAck(what string, ack gjson.Result, result string, duplicate bool) {
	r.t.Helper()
	if ack.Get("result").Str != result || ack.Get("duplicate").Bool() != duplicate {
		r.t.Fatalf("%s: ack %s, want result %s, duplicate %v", what, ack.Raw, result, duplicate)
	}
}

// scrollback is every line of the control.worker.scrollback lines so
// far, in order, one entry each.
func (r *ptwRun) scrollback() []string {
	var out []string
	for _, l := range r.all() {
		if l.Get("type").Str == lane000.TypeWorkerScrollback {
			for _, s := range l.Get("lines").Array() {
				out = append(out, s.Str)
			}
		}
	}
	return out
}

// shown reports whether a control.worker.screen row or a scrollback line
// so far holds s.
func (r *ptwRun) shown(s string) bool {
	return slices.ContainsFunc(r.all(), func(l gjson.Result) bool { return showsText(l, s) })
}

// waitShown waits until s shows in a control.worker.screen or scrollback
// line: the agent may still be drawing it when the worker is idle (its
// screen still for StableAfter on a loaded machine).
func (r *ptwRun) waitShown(s string) {
	r.t.Helper()
	r.wait(0, strconv.Quote(s)+" on the screen", func(l gjson.Result) bool { return showsText(l, s) })
}

// showsText reports whether line l is a control.worker.screen or
// scrollback line with s in one of its rows.
func showsText(l gjson.Result, s string) bool {
	switch l.Get("type").Str {
	case lane000.TypeWorkerScreen:
		for _, row := range l.Get("lines").Array() {
			if strings.Contains(row.Get("text").Str, s) {
				return true
			}
		}
	case lane000.TypeWorkerScrollback:
		for _, row := range l.Get("lines").Array() {
			if strings.Contains(row.Str, s) {
				return true
			}
		}
	}
	return false
}

// prompts is what the agent logged as submitted.
func (r *ptwRun) prompts() []string { return ptyAgentLog(r.t, r.logPath) }

func (r *ptwRun) wantPrompts(want ...string) {
	r.t.Helper()
	if got := r.prompts(); !slices.Equal(got, want) {
		r.t.Fatalf("the agent logged %.300q, want %.300q", got, want)
	}
}

// waitPrompts waits (polling the log) until the agent logged n prompts.
func (r *ptwRun) waitPrompts(n int) {
	r.t.Helper()
	deadline := time.Now().Add(ptwDeadline)
	for len(r.prompts()) < n {
		if time.Now().After(deadline) {
			r.t.Fatalf("the agent logged %q, want %d prompts", r.prompts(), n)
		}
		time.Sleep(5 * time.Millisecond) // polling a file: nothing to wait on
	}
}

// agentPid is the agent's pid: the test's child whose environment names
// its log.
func (r *ptwRun) agentPid() int {
	r.t.Helper()
	marker := []byte("PTYAGENT_LOG=" + r.logPath)
	ents, err := os.ReadDir("/proc")
	if err != nil {
		r.t.Skip(err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		if slices.ContainsFunc(bytes.Split(env, []byte{0}), func(kv []byte) bool { return bytes.Equal(kv, marker) }) {
			return pid
		}
	}
	r.t.Fatal("the agent's process was not found")
	return 0
}

// TestPTYWorkerBasic: starting until the first stable screen (a request
// then is not_live, and not remembered), then idle; a prompt is pasted
// and submitted once, whole, acked ok once the screen moved; the answer
// shows in control.worker.screen; a retry of the request is a duplicate
// and types nothing.
func TestPTYWorkerBasic(t *testing.T) {
	t.Parallel()
	r := startPTW(t, ptwConfig{})
	const prompt = "hello world from the controller"
	id := r.id("basic")

	// Before the first stable screen (50 ms of start delay, then 300 ms
	// unchanged): starting.
	if ans, _ := r.screen(); ans.Get("state").Str != "starting" {
		t.Fatalf("control.screen right after the start: state %q, want starting", ans.Get("state").Str)
	}
	ack := r.stdin(id, prompt, false)
	r.wantAck("a prompt while starting", ack, "not_live", false)
	if !strings.Contains(ack.Get("detail").Str, "starting") {
		t.Errorf("not_live while starting: detail %q", ack.Get("detail").Str)
	}

	idle := r.waitState(0, "idle")
	for _, l := range r.all()[:idle] {
		if l.Get("type").Str == lane000.TypeWorkerState {
			t.Errorf("a state line before the first idle: %s", l.Raw)
		}
	}
	r.wantPrompts() // nothing typed while starting

	// The same request id again: the not_live was not remembered.
	r.wantAck("the prompt once idle", r.stdin(id, prompt, false), "ok", false)
	r.idleAfterAck()
	r.wantPrompts(prompt)
	r.waitShown("answer to: " + prompt)
	if !r.shown("> " + prompt) {
		t.Errorf("the echoed prompt is in no control.worker.screen line:\n%s", r.dump())
	}

	// A retry: a duplicate, nothing typed.
	ack = r.stdin(id, prompt, false)
	r.wantAck("a retry", ack, "ok", true)
	ans, rows := r.screen()
	if in, _, ok := paBox(rows, r.cols, false); !ok || !slices.Equal(in, []string{""}) || ans.Get("state").Str != "idle" {
		t.Errorf("after the retry: state %s, screen:\n%s\nwant idle with an empty box", ans.Get("state").Str, strings.Join(rows, "\n"))
	}
	r.wantPrompts(prompt)
}

// TestPTYWorkerNoEcho: a program that shows nothing of the input (the
// paste does not move the screen): the prompt is still acked ok (the
// screen moves when the answer starts), and submitted once.
func TestPTYWorkerNoEcho(t *testing.T) {
	t.Parallel()
	r := startPTW(t, ptwConfig{env: []string{"PTYAGENT_ECHO=0"}})
	r.waitState(0, "idle")
	r.wantAck("a prompt without echo", r.stdin(r.id("noecho"), "secret words", false), "ok", false)
	r.idleAfterAck()
	r.wantPrompts("secret words")
	r.waitShown("answer to: secret words")
	if r.shown("> secret") {
		t.Errorf("want the answer shown and not the prompt:\n%s", r.dump())
	}
}

// TestPTYWorkerBoxSwitch: the prompt box is drawn differently after the
// first answer; both prompts are acked ok and submitted once each.
func TestPTYWorkerBoxSwitch(t *testing.T) {
	t.Parallel()
	r := startPTW(t, ptwConfig{env: []string{"PTYAGENT_BOX=switch"}})
	r.waitState(0, "idle")
	for _, p := range []string{"one", "two"} {
		r.wantAck("prompt "+p, r.stdin(r.id("box"), p, false), "ok", false)
		r.idleAfterAck()
	}
	r.wantPrompts("one", "two")
	_, rows := r.screen()
	if _, _, ok := paBox(rows, r.cols, true); !ok || !slices.Contains(rows, "answer to: two") {
		t.Errorf("screen:\n%s\nwant the second answer above the ascii box", strings.Join(rows, "\n"))
	}
}

// TestPTYWorkerScrollback: answers much longer than the screen: every
// line of the transcript is delivered exactly once across the scrollback
// lines and the final screen, in order, one line an entry, across two
// prompts.
func TestPTYWorkerScrollback(t *testing.T) {
	t.Parallel()
	const n = 100
	r := startPTW(t, ptwConfig{env: []string{"PTYAGENT_ANSWER_LINES=" + strconv.Itoa(n), "PTYAGENT_CHAR_DELAY=1ms"}})
	r.waitState(0, "idle")
	one, two := "scroll one", "scroll two"
	entry := regexp.MustCompile(`^(|> scroll (one|two)|answer to: scroll (one|two)|line [0-9]+ of ` + strconv.Itoa(n) + `)$`)
	answerLine := regexp.MustCompile(`^(answer to: .*|line [0-9]+ of [0-9]+)$`)
	check := func(want []string) {
		t.Helper()
		sb := r.scrollback()
		for i, s := range sb {
			if !entry.MatchString(s) {
				t.Fatalf("scrollback entry %d is %q: not one transcript line", i, s)
			}
		}
		ans, rows := r.screen()
		if len(rows) != r.rows || ans.Get("state").Str != "idle" {
			t.Fatalf("control.screen: %d rows, state %s", len(rows), ans.Get("state").Str)
		}
		var got, prompts []string
		for _, s := range append(sb, rows...) {
			if answerLine.MatchString(s) {
				got = append(got, s)
			}
			if strings.HasPrefix(s, "> ") {
				prompts = append(prompts, s)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("answer lines across the scrollback and the screen (%d):\n%s\nwant (%d) each once, in order;\nscrollback:\n%s",
				len(got), strings.Join(got, "\n"), len(want), strings.Join(sb, "\n"))
		}
		if wantP := len(want) / n; len(prompts) != wantP {
			t.Errorf("prompt lines %q, want %d", prompts, wantP)
		}
	}

	// answered waits for the agent to be idle with its whole answer
	// written: the worker's idle is a quiet screen, which a loaded
	// machine can give mid-answer (the agent stalled); it is running again
	// with the next character.
	answered := func(last string) {
		t.Helper()
		r.idleAfterAck()
		deadline := time.Now().Add(30 * time.Second)
		for {
			ans, rows := r.screen()
			if ans.Get("state").Str == "idle" && slices.Contains(rows, last) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("30 s after the ack: state %s, the screen:\n%s", ans.Get("state").Str, strings.Join(rows, "\n"))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	r.wantAck("the first prompt", r.stdin(r.id("sb"), one, false), "ok", false)
	want := ptyAgentAnswer(one, n)
	answered(want[len(want)-1])
	check(want)

	r.wantAck("the second prompt", r.stdin(r.id("sb"), two, false), "ok", false)
	want2 := ptyAgentAnswer(two, n)
	answered(want2[len(want2)-1])
	check(append(want, want2...))
	r.wantPrompts(one, two)
}

// TestPTYWorkerCRResent: the program loses the first carriage return; it
// is sent again once the screen has not moved, and the prompt is
// submitted exactly once.
func TestPTYWorkerCRResent(t *testing.T) {
	t.Parallel()
	r := startPTW(t, ptwConfig{env: []string{"PTYAGENT_IGNORE_CR=1"}})
	r.waitState(0, "idle")
	start := time.Now()
	r.wantAck("a prompt whose return is lost", r.stdin(r.id("cr"), "return lost", false), "ok", false)
	if d := time.Since(start); d < ptyCRRetry {
		t.Errorf("acked after %v, before the return could have been sent again (%v)", d, ptyCRRetry)
	}
	r.idleAfterAck()
	r.wantPrompts("return lost")
	r.waitShown("answer to: return lost")
}

// TestPTYWorkerTimeouts: a program that hangs after a submission, and
// one that ignores the interrupt keys: the acks say timeout after the
// lane's timeout.
func TestPTYWorkerTimeouts(t *testing.T) {
	t.Parallel()
	const timeout = 1500 * time.Millisecond
	within := func(t *testing.T, d time.Duration) {
		t.Helper()
		if d < timeout || d > timeout+2*time.Second {
			t.Errorf("the timeout ack came after %v, want the lane's timeout (%v)", d, timeout)
		}
	}

	t.Run("stdin", func(t *testing.T) {
		t.Parallel()
		r := startPTW(t, ptwConfig{timeout: timeout, env: []string{"PTYAGENT_HANG_AFTER_SUBMIT=1"}})
		r.waitState(0, "idle")
		start := time.Now()
		ack := r.stdin(r.id("hang"), "stuck", false)
		r.wantAck("a prompt the program hangs on", ack, "timeout", false)
		within(t, time.Since(start))
		r.wantPrompts("stuck")
	})

	t.Run("interrupt", func(t *testing.T) {
		t.Parallel()
		r := startPTW(t, ptwConfig{timeout: timeout, env: []string{"PTYAGENT_IGNORE_ESC=1", "PTYAGENT_ANSWER_LINES=100", "PTYAGENT_CHAR_DELAY=10ms"}})
		r.waitState(0, "idle")
		r.wantAck("the prompt", r.stdin(r.id("long"), "a long answer", false), "ok", false)
		start := time.Now()
		ack := r.interrupt(r.id("int"))
		r.wantAck("an interrupt the program ignores", ack, "timeout", false)
		within(t, time.Since(start))
		if r.shown("[interrupted]") {
			t.Error("the agent shows [interrupted] with PTYAGENT_IGNORE_ESC=1")
		}
		r.wantPrompts("a long answer")
	})
}

// TestPTYWorkerBusyInterrupt: while an answer streams, a prompt without
// interrupt is busy (nothing typed); an interrupt is ok once the screen
// is stable after the keys; a prompt with interrupt interrupts the
// answer, then goes in.
func TestPTYWorkerBusyInterrupt(t *testing.T) {
	t.Parallel()
	r := startPTW(t, ptwConfig{env: []string{"PTYAGENT_ANSWER_LINES=50", "PTYAGENT_CHAR_DELAY=10ms"}})
	r.waitState(0, "idle")
	r.wantAck("the first prompt", r.stdin(r.id("first"), "first", false), "ok", false)
	ack := r.stdin(r.id("busy"), "second", false)
	r.wantAck("a prompt during the answer", ack, "busy", false)

	from := r.mark()
	ack = r.interrupt(r.id("int"))
	r.wantAck("the interrupt", ack, "ok", false)
	if d := ack.Get("detail").Str; !strings.Contains(d, "stable after the interrupt keys") {
		t.Errorf("the interrupt's detail %q, want the keys sent and the screen stable", d)
	}
	r.waitState(from, "idle")
	ans, rows := r.screen()
	if ans.Get("state").Str != "idle" || !slices.Contains(rows, "[interrupted]") || slices.Contains(rows, "line 50 of 50") {
		t.Fatalf("after the interrupt: state %s, screen:\n%s\nwant idle, the answer cut short by [interrupted]", ans.Get("state").Str, strings.Join(rows, "\n"))
	}
	r.wantPrompts("first")

	r.wantAck("the third prompt", r.stdin(r.id("third"), "third", false), "ok", false)
	r.wait(from, "the third answer streaming", func(l gjson.Result) bool {
		return l.Get("type").Str == lane000.TypeWorkerScreen && strings.Contains(l.Get("lines").Raw, "answer to: third")
	})
	from = r.mark()
	r.wantAck("a prompt with interrupt", r.stdin(r.id("fourth"), "fourth", true), "ok", false)
	r.waitPrompts(3)
	r.wantPrompts("first", "third", "fourth")
	r.wait(from, "the fourth prompt's echo", func(l gjson.Result) bool {
		return l.Get("type").Str == lane000.TypeWorkerScreen && strings.Contains(l.Get("lines").Raw, `"> fourth"`)
	})
}

// TestPTYWorkerLargePaste: 100 KiB of many lines goes in as one paste and
// one submission, byte for byte (line breaks as "\n").
func TestPTYWorkerLargePaste(t *testing.T) {
	t.Parallel()
	r := startPTW(t, ptwConfig{})
	var b strings.Builder
	breaks := []string{"\n", "\r\n", "\n\n", "\r", "\n"}
	for i := 0; b.Len() < 100<<10; i++ {
		fmt.Fprintf(&b, "%05d the quick brown fox — jumps over\tthe lazy dog; café, naïve {\"json\": [1, 2]} <tag> & 'quotes'", i)
		b.WriteString(breaks[i%len(breaks)])
	}
	b.WriteString("the end")
	content := b.String()
	want := strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(content)

	r.waitState(0, "idle")
	r.wantAck("a 100 KiB prompt", r.stdin(r.id("big"), content, false), "ok", false)
	r.idleAfterAck()
	// The screen may be idle before the agent has logged the submission
	// (a loaded machine): its log is waited for.
	r.waitPrompts(1)
	got := r.prompts()
	if len(got) != 1 {
		t.Fatalf("the agent logged %d prompts, want 1", len(got))
	}
	if got[0] != want {
		i := 0
		for i < min(len(got[0]), len(want)) && got[0][i] == want[i] {
			i++
		}
		t.Fatalf("the logged prompt (%d bytes) differs from the input (%d bytes) at byte %d: got %.80q, want %.80q",
			len(got[0]), len(want), i, got[0][i:], want[i:])
	}
	r.waitShown("answer to: 00000 the quick brown fox")
}

// TestPTYWorkerKilled: the program killed with SIGKILL: the worker is
// exited, and a prompt or an interrupt then is not_live.
func TestPTYWorkerKilled(t *testing.T) {
	t.Parallel()
	r := startPTW(t, ptwConfig{})
	r.waitState(0, "idle")
	from := r.mark()
	if err := syscall.Kill(r.agentPid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r.waitState(from, "exited")
	r.wantAck("a prompt after the exit", r.stdin(r.id("dead"), "anyone?", false), "not_live", false)
	r.wantAck("an interrupt after the exit", r.interrupt(r.id("dead")), "not_live", false)
	if ans, _ := r.screen(); ans.Get("state").Str != "exited" {
		t.Errorf("control.screen after the exit: state %s", ans.Get("state").Str)
	}
	r.wantPrompts()
}

// TestPTYWorkerScreen: control.screen is the whole screen, every row of
// the terminal's size, numbered, the prompt box at the bottom.
func TestPTYWorkerScreen(t *testing.T) {
	t.Parallel()
	sock := filepath.Join(t.TempDir(), "c.sock")
	r := startPTW(t, ptwConfig{cols: 100, rows: 30, socket: sock})
	r.waitState(0, "idle")
	ans, rows := r.screen()
	// The same on the control socket: its greeting, then the screen.
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, `{"type":"control.screen.request","v":1,"request_id":"sock-1"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			t.Fatalf("reading the socket: %v", err)
		}
		if gjson.GetBytes(line, "type").Str != lane000.TypeScreen {
			continue
		}
		if gjson.GetBytes(line, "request_id").Str != "sock-1" || len(gjson.GetBytes(line, "lines").Array()) != 30 ||
			gjson.GetBytes(line, "lines.29.text").Str != rows[29] {
			t.Fatalf("control.screen on the socket: %s", line)
		}
		break
	}
	if len(rows) != 30 || ans.Get("rows").Int() != 30 || ans.Get("cols").Int() != 100 || ans.Get("state").Str != "idle" {
		t.Fatalf("control.screen: %d rows, size %dx%d, state %s; want 30 rows of 100x30, idle: %s",
			len(rows), ans.Get("cols").Int(), ans.Get("rows").Int(), ans.Get("state").Str, ans.Raw)
	}
	in, top, ok := paBox(rows, 100, false)
	if !ok || top != 30-4 || !slices.Equal(in, []string{""}) {
		t.Fatalf("screen:\n%s\nwant an empty prompt box on rows %d to %d", strings.Join(rows, "\n"), 30-3, 30-1)
	}
	if c := ans.Get("cursor").Array(); len(c) != 2 || c[0].Int() != 4 || c[1].Int() != 30-3 {
		t.Errorf("cursor %s, want [4,%d] (after \"│ > \")", ans.Get("cursor").Raw, 30-3)
	}
}
