//go:build unix

package worker

// Lane 001 of the control dialect (lane001.go) against the fake
// "ctlrun" CLI: the run is steered with REQUEST lines on the UI's stdin,
// as a controller does, and what the CLI says is scripted by the test
// through a FIFO, so that hook_callback and control_cancel_request lines
// arrive exactly when a test wants them.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/adapter/control"
	"github.com/ccbridge/ccbridge/internal/adaptertest"
	"github.com/ccbridge/ccbridge/session"
)

func init() {
	// ctlrun: a CLI for lane 001. It appends every stdin line, as read, to
	// FAKE_LOG, and writes to stdout every line it reads from the FIFO
	// FAKE_SAY (the test's script: hook_callback, control_cancel_request,
	// pings). A control_request gets a success, except set_model with
	// FAKE_SETMODEL=error (an error answer naming the model) or
	// FAKE_SETMODEL=exit (the CLI exits with code 1 without answering);
	// set_model's success names the model asked for. It exits at the end
	// of its input.
	adaptertest.Register("ctlrun", func() {
		logf, err := os.OpenFile(os.Getenv("FAKE_LOG"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			os.Exit(98)
		}
		var mu sync.Mutex
		say := func(line string) {
			mu.Lock()
			defer mu.Unlock()
			os.Stdout.WriteString(line + "\n")
		}
		go func() {
			f, err := os.Open(os.Getenv("FAKE_SAY"))
			if err != nil {
				return
			}
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 1<<16), 1<<20)
			for sc.Scan() {
				say(sc.Text())
			}
		}()
		answer := func(id, resp string) {
			say(fmt.Sprintf(`{"type":"control_response","response":{"subtype":"success","request_id":%q,"response":%s}}`, id, resp))
		}
		stdin := bufio.NewReaderSize(os.Stdin, 1<<20)
		for {
			line, err := stdin.ReadBytes('\n')
			if err != nil {
				return
			}
			logf.Write(line)
			if gjson.GetBytes(line, "type").Str != "control_request" {
				continue
			}
			id := gjson.GetBytes(line, "request_id").Str
			switch gjson.GetBytes(line, "request.subtype").Str {
			case "initialize":
				answer(id, `{"commands":[],"models":[]}`)
			case "set_model":
				model := gjson.GetBytes(line, "request.model").Str
				switch os.Getenv("FAKE_SETMODEL") {
				case "error":
					say(fmt.Sprintf(`{"type":"control_response","response":{"subtype":"error","request_id":%q,"error":%q}}`,
						id, "model "+model+" is not available to this account"))
				case "exit":
					fmt.Fprintln(os.Stderr, "fatal: the fake CLI exits instead of answering set_model")
					os.Exit(1)
				default:
					answer(id, fmt.Sprintf(`{"model":%q}`, model))
				}
			default:
				answer(id, `{}`)
			}
		}
	})
}

const (
	ctlRunID    = "run-ctl-001"
	ctlRunModel = "claude-old-model-1"
)

// ctlRun drives a ControlUI whose CLI is the fake ctlrun.
type ctlRun struct {
	t     *testing.T
	h     *adaptertest.Host
	say   *os.File // the FIFO the fake repeats on its stdout
	log   string   // what the CLI read
	seen  [][]byte // every UI line read so far
	seq   int
	pings int
}

func startCtlRun(t *testing.T, env ...string) *ctlRun {
	t.Helper()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "say")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// Read-write: the open does not wait for the fake, and the fake's
	// own open finds a writer at once.
	say, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	r := &ctlRun{t: t, say: say, log: filepath.Join(dir, "log")}
	c := &ControlUI{Settings: adapter.Settings{
		Child: adaptertest.Config(t, "ctlrun", nil, append([]string{"FAKE_LOG=" + r.log, "FAKE_SAY=" + fifo,
			"HOME=" + t.TempDir(), "CLAUDE_CONFIG_DIR="}, env...)...),
		Options:          session.Options{Model: ctlRunModel},
		Control:          control.Config{RunID: ctlRunID},
		InterruptTimeout: 5 * time.Second,
		ControlTimeout:   5 * time.Second,
		Logger:           adaptertest.Logger(t),
	}}
	r.h = adaptertest.StartRunner(t, c.Run)
	// Registered after startRunner's cleanup, so run before it: the fake
	// is gone by the time the FIFO closes either way.
	t.Cleanup(func() { say.Close() })
	return r
}

// next is the UI's next line, kept in seen.
func (r *ctlRun) next() []byte {
	r.t.Helper()
	l := r.h.Next()
	r.seen = append(r.seen, l)
	return l
}

func (r *ctlRun) until(what string, pred func(gjson.Result) bool) gjson.Result {
	r.t.Helper()
	for {
		l := gjson.ParseBytes(r.next())
		if pred(l) {
			return l
		}
	}
}

// state waits for the next STATE event and returns its stack's run.
func (r *ctlRun) state() gjson.Result {
	r.t.Helper()
	return r.until("a STATE", func(l gjson.Result) bool { return l.Get("event").Str == "STATE" }).Get("stack.0")
}

// command sends a lane-001 REQUEST on the UI and returns its RESULT's
// payload.
func (r *ctlRun) command(command string, payload map[string]any) gjson.Result {
	r.t.Helper()
	r.seq++
	id := fmt.Sprintf("req-%s-%d", command, r.seq)
	if payload == nil {
		payload = map[string]any{}
	}
	b, err := json.Marshal(map[string]any{"schema": 0, "type": "REQUEST", "request_id": id, "command": command,
		"target": map[string]any{"run_id": ctlRunID}, "timestamp": time.Now().UTC().Format(time.RFC3339), "payload": payload})
	if err != nil {
		r.t.Fatal(err)
	}
	r.h.Send(string(b))
	return r.until("the RESULT of "+id, func(l gjson.Result) bool {
		return l.Get("type").Str == "RESULT" && l.Get("request_id").Str == id
	}).Get("payload")
}

// cli makes the CLI write line to ccbridge.
func (r *ctlRun) cli(line string) {
	r.t.Helper()
	if _, err := r.say.WriteString(line + "\n"); err != nil {
		r.t.Fatal(err)
	}
}

// read is every line the CLI read so far.
func (r *ctlRun) read() []gjson.Result {
	b, _ := os.ReadFile(r.log)
	var ls []gjson.Result
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" {
			ls = append(ls, gjson.Parse(l))
		}
	}
	return ls
}

// waitRead waits until the CLI has read a line for which pred holds.
func (r *ctlRun) waitRead(what string, pred func(gjson.Result) bool) gjson.Result {
	r.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, l := range r.read() {
			if pred(l) {
				return l
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the CLI never read %s; it read:\n%s", what, r.dump())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (r *ctlRun) dump() string {
	var s []string
	for _, l := range r.read() {
		s = append(s, l.Raw)
	}
	return strings.Join(s, "\n")
}

// request waits until the CLI has read ccbridge's control_request of
// subtype sub.
func (r *ctlRun) request(sub string) gjson.Result {
	r.t.Helper()
	return r.waitRead("a "+sub+" request", func(l gjson.Result) bool {
		return l.Get("type").Str == "control_request" && l.Get("request.subtype").Str == sub
	})
}

// answersTo is ccbridge's control_responses to the CLI's request id.
func (r *ctlRun) answersTo(id string) []gjson.Result {
	var as []gjson.Result
	for _, l := range r.read() {
		if l.Get("type").Str == "control_response" && l.Get("response.request_id").Str == id {
			as = append(as, l)
		}
	}
	return as
}

// sync makes the CLI send a request no one handles and waits for
// ccbridge's answer to it: every line the CLI wrote before has been
// handled then, and whatever ccbridge wrote for them has been read.
func (r *ctlRun) sync() {
	r.t.Helper()
	r.pings++
	id := fmt.Sprintf("ping-%d", r.pings)
	r.cli(`{"type":"control_request","request_id":"` + id + `","request":{"subtype":"ccbridge_test_ping"}}`)
	r.waitRead("the answer to "+id, func(l gjson.Result) bool {
		return l.Get("type").Str == "control_response" && l.Get("response.request_id").Str == id
	})
}

// hook makes the CLI ask hook callback callbackID about a Bash call.
func (r *ctlRun) hook(requestID, callbackID string) {
	r.t.Helper()
	r.cli(`{"type":"control_request","request_id":"` + requestID + `","request":{"subtype":"hook_callback","callback_id":"` + callbackID +
		`","input":{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"echo hi"}},"tool_use_id":"toolu_` + requestID + `"}}`)
}

// end closes the UI's input and waits for Run to return.
func (r *ctlRun) end() {
	r.t.Helper()
	r.h.In.Close()
	for l := range r.h.Lines {
		r.seen = append(r.seen, l)
	}
	r.h.Wait()
}

// states is the stack entries of every STATE the UI got.
func (r *ctlRun) states() []gjson.Result {
	var ss []gjson.Result
	for _, l := range r.seen {
		if gjson.GetBytes(l, "event").Str == "STATE" {
			ss = append(ss, gjson.GetBytes(l, "stack.0"))
		}
	}
	return ss
}

// wantEmptyAnswer checks that a is ccbridge's success {} to id.
func wantEmptyAnswer(t *testing.T, a gjson.Result, id string) {
	t.Helper()
	if a.Get("response.subtype").Str != "success" || a.Get("response.request_id").Str != id || a.Get("response.response").Raw != "{}" {
		t.Errorf("the answer to %s is %s, want a success with response {}", id, a.Raw)
	}
}

// TestControlRunEscalateRefused: the CLI answers set_model with an error;
// escalate fails bad_request with the CLI's words, and the run keeps its
// model (no STATE ever shows the refused one, the next shows the old one).
func TestControlRunEscalateRefused(t *testing.T) {
	r := startCtlRun(t, "FAKE_SETMODEL=error")
	if m := r.state().Get("model").Str; m != ctlRunModel {
		t.Fatalf("the first STATE's model %q, want %q", m, ctlRunModel)
	}
	r.request("initialize")

	res := r.command("escalate", map[string]any{"model": "claude-new-model-2", "reason": "stuck on a test"})
	if res.Get("status").Str != "failure" || res.Get("code").Str != "bad_request" {
		t.Fatalf("escalate refused by the CLI: %s, want failure/bad_request", res.Raw)
	}
	if msg := res.Get("message").Str; !strings.Contains(msg, "model claude-new-model-2 is not available to this account") {
		t.Errorf("the RESULT's message %q does not carry the CLI's error", msg)
	}
	if res.Get("new_model").Exists() || res.Get("previous_model").Exists() {
		t.Errorf("a refused escalate names models: %s", res.Raw)
	}
	if sm := r.request("set_model"); sm.Get("request.model").Str != "claude-new-model-2" {
		t.Errorf("set_model asked for %s", sm.Raw)
	}

	// The next STATE (the pause's) still has the old model and no reason.
	if res := r.command("pause", nil); res.Get("status").Str != "success" {
		t.Fatalf("pause: %s", res.Raw)
	}
	st := r.state()
	if st.Get("state").Str != "paused" || st.Get("model").Str != ctlRunModel || st.Get("escalation_reason").Exists() {
		t.Errorf("the STATE after the refused escalate: %s, want paused on %s without an escalation_reason", st.Raw, ctlRunModel)
	}
	r.end()
	for _, s := range r.states() {
		if s.Get("model").Str != ctlRunModel {
			t.Errorf("a STATE shows model %q after a refused escalate: %s", s.Get("model").Str, s.Raw)
		}
	}
}

// TestControlRunEscalateCLIExits: the CLI exits before it answers
// set_model; escalate fails invalid_state, and the model is unchanged.
func TestControlRunEscalateCLIExits(t *testing.T) {
	r := startCtlRun(t, "FAKE_SETMODEL=exit")
	r.state()
	r.request("initialize")

	res := r.command("escalate", map[string]any{"model": "claude-new-model-2"})
	if res.Get("status").Str != "failure" || res.Get("code").Str != "invalid_state" ||
		res.Get("message").Str != "the CLI exited before it answered set_model" {
		t.Fatalf("escalate with a CLI that exits: %s, want failure/invalid_state \"the CLI exited before it answered set_model\"", res.Raw)
	}
	if sm := r.request("set_model"); sm.Get("request.model").Str != "claude-new-model-2" {
		t.Errorf("set_model asked for %s", sm.Raw)
	}
	if res := r.command("pause", nil); res.Get("status").Str != "success" {
		t.Fatalf("pause: %s", res.Raw)
	}
	if st := r.state(); st.Get("model").Str != ctlRunModel {
		t.Errorf("the STATE after the failed escalate: %s, want model %s", st.Raw, ctlRunModel)
	}
	r.end()
	for _, s := range r.states() {
		if s.Get("model").Str != ctlRunModel {
			t.Errorf("a STATE shows model %q after a failed escalate: %s", s.Get("model").Str, s.Raw)
		}
	}
}

// TestControlRunForeignHookCallback: a hook_callback of another callback
// id is not lane 001's: paused or not, it gets the usual automatic answer
// ({}) once, at once, and a pause does not hold it; the pause hook asked
// beside it while paused is held until resume.
func TestControlRunForeignHookCallback(t *testing.T) {
	r := startCtlRun(t)
	r.state()
	r.request("initialize")

	r.hook("foreign-1", "hook_0")
	r.sync()
	if as := r.answersTo("foreign-1"); len(as) != 1 {
		t.Fatalf("unpaused: %d answers to a foreign hook_callback, want 1:\n%s", len(as), r.dump())
	} else {
		wantEmptyAnswer(t, as[0], "foreign-1")
	}

	if res := r.command("pause", nil); res.Get("status").Str != "success" {
		t.Fatalf("pause: %s", res.Raw)
	}
	r.hook("foreign-2", "hook_0")
	r.hook("paused-1", pauseHookID)
	r.sync()
	if as := r.answersTo("foreign-2"); len(as) != 1 {
		t.Fatalf("paused: %d answers to a foreign hook_callback, want 1 at once (not held):\n%s", len(as), r.dump())
	} else {
		wantEmptyAnswer(t, as[0], "foreign-2")
	}
	if as := r.answersTo("paused-1"); len(as) != 0 {
		t.Fatalf("paused: the pause hook was answered: %s", as[0].Raw)
	}

	res := r.command("resume", nil)
	if res.Get("status").Str != "success" || !strings.Contains(res.Get("message").Str, ": 1 held tool call released,") {
		t.Fatalf("resume: %s, want success releasing only the pause hook", res.Raw)
	}
	r.sync()
	if as := r.answersTo("foreign-2"); len(as) != 1 {
		t.Errorf("after resume: %d answers to the foreign hook_callback, want still 1", len(as))
	}
	if as := r.answersTo("paused-1"); len(as) != 1 {
		t.Errorf("after resume: %d answers to the held pause hook, want 1", len(as))
	} else {
		wantEmptyAnswer(t, as[0], "paused-1")
	}
	r.end()
}

// TestControlRunWithdrawnHookDropped: a pause hook held by a pause and
// then withdrawn by the CLI (control_cancel_request) is dropped: resume
// releases nothing and never answers it.
func TestControlRunWithdrawnHookDropped(t *testing.T) {
	r := startCtlRun(t)
	r.state()
	r.request("initialize")
	if res := r.command("pause", nil); res.Get("status").Str != "success" {
		t.Fatalf("pause: %s", res.Raw)
	}

	r.hook("held-1", pauseHookID)
	r.sync()
	if as := r.answersTo("held-1"); len(as) != 0 {
		t.Fatalf("paused: the pause hook was answered: %s", as[0].Raw)
	}
	r.cli(`{"type":"control_cancel_request","request_id":"held-1"}`)
	r.sync()

	res := r.command("resume", nil)
	if res.Get("status").Str != "success" || !strings.Contains(res.Get("message").Str, ": 0 held tool calls released,") {
		t.Fatalf("resume after the hook was withdrawn: %s, want success with 0 held tool calls released", res.Raw)
	}
	if st := r.state(); st.Get("state").Str != "idle" {
		t.Errorf("the STATE after resume: %s, want idle", st.Raw)
	}
	r.sync()
	if as := r.answersTo("held-1"); len(as) != 0 {
		t.Errorf("the withdrawn hook was answered: %s", as[0].Raw)
	}
	r.end()
}

// TestControlRunPauseHookUnpaused: not paused, the pause hook is answered
// {} at once, by lane 001 alone (one answer).
func TestControlRunPauseHookUnpaused(t *testing.T) {
	r := startCtlRun(t)
	r.state()
	init := r.request("initialize")
	if h := init.Get(`request.hooks.PreToolUse.0.hookCallbackIds.0`).Str; h != pauseHookID {
		t.Errorf("initialize registers hook %q, want %q: %s", h, pauseHookID, init.Raw)
	}

	r.hook("run-1", pauseHookID)
	a := r.waitRead("the answer to run-1", func(l gjson.Result) bool {
		return l.Get("type").Str == "control_response" && l.Get("response.request_id").Str == "run-1"
	})
	wantEmptyAnswer(t, a, "run-1")
	r.sync()
	if as := r.answersTo("run-1"); len(as) != 1 {
		t.Errorf("%d answers to the pause hook, want 1:\n%s", len(as), r.dump())
	}
	r.end()
}
