package e2e

// Lane 001 of issue #11 (seed 001: pause, resume, cancel, escalate) end to
// end: the real CLI behind `--ui control`, the fake model's TOOLSTEPS
// scenario (three Bash steps, the first sleeping a second, each appending
// to steps.txt, then a text answer) and a controller on stdio or on the
// control socket. Flows A to D of the seed are checked field for field
// (l1Shape). Helpers of this file start with l1.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// l1Run is the --run-id of the seed's flows A and C.
const l1Run = "loop-1703123456-12345"

// l1Req is a lane-001 REQUEST as the seed writes it.
func l1Req(id, command, runID, issueID string, payload map[string]any) string {
	target := map[string]any{"run_id": runID}
	if issueID != "" {
		target["issue_id"] = issueID
	}
	if payload == nil {
		payload = map[string]any{}
	}
	b, _ := json.Marshal(map[string]any{"schema": 0, "type": "REQUEST", "request_id": id, "command": command,
		"target": target, "timestamp": time.Now().UTC().Format(time.RFC3339), "payload": payload})
	return string(b)
}

func l1Is(typ, id string) func([]byte) bool {
	return func(l []byte) bool { return get(l, "type").Str == typ && get(l, "request_id").Str == id }
}

func l1IsEvent(ev string) func([]byte) bool {
	return func(l []byte) bool { return get(l, "event").Str == ev }
}

// l1Keys lists the keys of a JSON object in the order written.
func l1Keys(o gjson.Result) []string {
	var ks []string
	o.ForEach(func(k, _ gjson.Result) bool {
		ks = append(ks, k.Str)
		return true
	})
	return ks
}

// l1Shape checks a line against the seed's example of it: the same keys in
// the same order (plus "topic" after "schema"), recursively for target,
// payload and the stack entries, and equal values where want gives one
// that is not "*".
func l1Shape(t *testing.T, what string, line []byte, want string) {
	t.Helper()
	got, exp := gjson.ParseBytes(line), gjson.Parse(want)
	var walk func(path string, g, e gjson.Result)
	walk = func(path string, g, e gjson.Result) {
		switch {
		case e.IsObject():
			if !g.IsObject() {
				t.Errorf("%s: %s is %s, want an object: %s", what, path, g.Raw, line)
				return
			}
			if gk, ek := l1Keys(g), l1Keys(e); !slices.Equal(gk, ek) {
				t.Errorf("%s: %s has keys %v, want %v: %s", what, path, gk, ek, line)
				return
			}
			e.ForEach(func(k, v gjson.Result) bool {
				walk(path+"."+k.Str, g.Get(gjson.Escape(k.Str)), v)
				return true
			})
		case e.IsArray():
			ga, ea := g.Array(), e.Array()
			if !g.IsArray() || len(ga) != len(ea) {
				t.Errorf("%s: %s is %s, want %d entries: %s", what, path, g.Raw, len(ea), line)
				return
			}
			for i := range ea {
				walk(path+"[]", ga[i], ea[i])
			}
		case e.Str == "*":
			if !g.Exists() {
				t.Errorf("%s: %s missing: %s", what, path, line)
			}
		default:
			if g.Raw != e.Raw && !(e.Type == gjson.String && g.Str == e.Str) {
				t.Errorf("%s: %s is %s, want %s: %s", what, path, g.Raw, e.Raw, line)
			}
		}
	}
	walk("", got, exp)
	if ts := got.Get("timestamp"); ts.Exists() {
		if _, err := time.Parse(time.RFC3339, ts.Str); err != nil || !strings.HasSuffix(ts.Str, "Z") {
			t.Errorf("%s: timestamp %q is not RFC 3339 UTC", what, ts.Str)
		}
	}
}

// l1Command sends a REQUEST on lane l and returns its ACK and RESULT,
// checking that the ACK came first and nothing else answered it.
func l1Command(t *testing.T, l *ctlLane, req string) (ack, result []byte) {
	t.Helper()
	id := gjson.Get(req, "request_id").Str
	from := len(l.got)
	l.send(req)
	ai := l.waitFrom(from, "the ACK of "+id, func(b []byte) bool { return get(b, "request_id").Str == id })
	if typeOf(l.got[ai]) != "ACK" {
		t.Fatalf("%s: the first answer to %s is not its ACK: %s", l.name, id, l.got[ai])
	}
	ri := l.waitFrom(ai+1, "the RESULT of "+id, func(b []byte) bool { return get(b, "request_id").Str == id })
	if typeOf(l.got[ri]) != "RESULT" {
		t.Fatalf("%s: the second answer to %s is not its RESULT: %s", l.name, id, l.got[ri])
	}
	return l.got[ai], l.got[ri]
}

// l1After returns the first line after the RESULT of request id on l
// for which pred holds: the event the command caused, written after it.
func l1After(l *ctlLane, id string, what string, pred func([]byte) bool) []byte {
	l.t.Helper()
	ri := l.waitFrom(0, "the RESULT of "+id, l1Is("RESULT", id))
	return l.got[l.waitFrom(ri+1, what, pred)]
}

func l1Status(t *testing.T, what string, res []byte, status, code string) {
	t.Helper()
	if get(res, "payload.status").Str != status || get(res, "payload.code").Str != code {
		t.Fatalf("%s: RESULT %s/%s, want %s/%s: %s", what, get(res, "payload.status").Str, get(res, "payload.code").Str, status, code, res)
	}
}

// l1StepsFile is what TOOLSTEPS' tools wrote so far.
func l1StepsFile(w *ctlWorker) string {
	b, _ := os.ReadFile(filepath.Join(w.b.dir, "steps.txt"))
	return string(b)
}

// l1Requests counts the fake model's requests for the TOOLSTEPS prompt
// holding tok (every step, first calls and continuations).
func l1Requests(t *testing.T, tok string) int {
	n := 0
	for _, r := range fakeAPI(t).Requests() {
		if r.Path == "/v1/messages" && r.Rule == "TOOLSTEPS" && strings.Contains(r.Prompt, tok) {
			n++
		}
	}
	return n
}

// l1Tools is the Bash tool_use lines of the worker so far.
func l1Tools(l *ctlLane) int {
	n := 0
	for _, b := range l.got {
		if typeOf(b) == "control.worker.tool" {
			n++
		}
	}
	return n
}

// TestLane001OneWorker: the lane-001 scenarios that leave the worker as
// they found it (idle, not paused, the same CLI), each a subtest named for
// the test it was alone, in one ccbridge --ui control --control and one
// CLI, one after the other (see inOneSession): one CLI start for five
// rules. The run is --run-id l1Run (TestLane001PauseResume's, the seed's
// flow A; TestLane001Cancel's flow B alone ran as grind-1703123456-99999,
// TestLane001Dedupe and the socket's pause as the session id, which
// TestLane001NotFoundAndBadInput checks is the default). The order:
// TestLane001PauseResume first, as it checks the session's first STATE
// and that iter goes from 0 to 2; the others count iter, steps.txt, the
// STATE and ABORT lines and the log from their own start; the ones that
// pause resume at their end. TestLane001EndWhilePaused comes last: it
// ends the input, and ccbridge with it.
func TestLane001OneWorker(t *testing.T) {
	t.Parallel()
	open := func(t *testing.T) *ctlWorker {
		return ctlStart(t, ctlOpts{socket: true, args: []string{"--run-id", l1Run, "--", "--allowedTools", "Bash"}})
	}
	inOneSession(t, open, ctlBind,
		scenario[*ctlWorker]{"TestLane001PauseResume", l1PauseResume},
		scenario[*ctlWorker]{"TestLane001Cancel", l1Cancel},
		scenario[*ctlWorker]{"TestLane001Dedupe", l1Dedupe},
		scenario[*ctlWorker]{"TestLane001Socket/control", l1SocketControl},
		scenario[*ctlWorker]{"TestLane001EndWhilePaused", l1EndWhilePaused},
	)
}

// l1Iter is the iter of the latest STATE read on l: the run's turns so
// far, where a scenario in a shared worker counts from.
func l1Iter(l *ctlLane) int64 {
	for i := len(l.got) - 1; i >= 0; i-- {
		if get(l.got[i], "event").Str == "STATE" {
			return get(l.got[i], "stack.0.iter").Int()
		}
	}
	return 0
}

// TestLane001PauseResume is flow A on a running multi-step tool loop: after
// pause the tool the model asks for next waits, no tool runs and the model
// gets no request for 10 s, a prompt sent meanwhile waits too; resume
// continues the same turn to its end, then the held prompt runs. It is
// the worker's first scenario (see TestLane001OneWorker).
func l1PauseResume(t *testing.T, w *ctlWorker) {
	l := w.stdio
	state := l.wait("the first STATE", l1IsEvent("STATE"))
	l1Shape(t, "the first STATE", state, `{"schema":1,"topic":"loop:current","event":"STATE","run_id":"`+l1Run+`","updated_at":"*","stack":[{"id":"`+l1Run+`","mode":"*","iter":0,"model":"*","state":"idle"}]}`)

	// Resuming a run that is not paused is invalid_state.
	_, res := l1Command(t, l, l1Req("req-resume-early", "resume", l1Run, "", nil))
	l1Status(t, "resume before pause", res, "failure", "invalid_state")

	tok := token("STEPS")
	m := w.stdinReq(ctlID("steps"), "TOOLSTEPS "+tok)
	ctlAck(t, l.request(m.String()), m, "ok", false)
	l.wait("the first tool call", func(b []byte) bool { return typeOf(b) == "control.worker.tool" })

	pause := l1Req("req-pause-001", "pause", l1Run, "auth-123", nil)
	logFrom := w.b.stderrLen()
	ack, res := l1Command(t, l, pause)
	l1Shape(t, "A: ACK", ack, `{"schema":0,"topic":"loop:control","type":"ACK","request_id":"req-pause-001","command":"pause","target":{"run_id":"`+l1Run+`","issue_id":"auth-123"},"timestamp":"*","payload":{}}`)
	l1Shape(t, "A: RESULT", res, `{"schema":0,"topic":"loop:control","type":"RESULT","request_id":"req-pause-001","command":"pause","target":{"run_id":"`+l1Run+`","issue_id":"auth-123"},"timestamp":"*","payload":{"status":"success","message":"*"}}`)
	if msg := get(res, "payload.message").Str; !strings.Contains(msg, "iteration 0") || !strings.Contains(msg, "next tool call waits") {
		t.Errorf("the pause's RESULT does not say where it paused: %q", msg)
	}
	// The RESULT comes before the STATE it causes.
	ri := l.waitFrom(0, "the pause's RESULT", l1Is("RESULT", "req-pause-001"))
	pi := l.waitFrom(0, "the STATE paused", func(b []byte) bool { return get(b, "stack.0.state").Str == "paused" })
	if pi < ri {
		t.Errorf("the STATE paused (line %d) came before the pause's RESULT (line %d)", pi, ri)
	}
	// Pausing again is invalid_state.
	_, res = l1Command(t, l, l1Req("req-pause-again", "pause", l1Run, "", nil))
	l1Status(t, "pause while paused", res, "failure", "invalid_state")

	// The model's answer in flight may still come; the tool it asks for
	// waits (the first, or, when its hook was answered before the pause,
	// the second: the first sleeps a second, so it is still running).
	n0 := l1Requests(t, tok)
	w.b.waitStderrFrom(logFrom, "a tool call waits for resume")
	held := tok + "-held"
	mh := w.stdinReq(ctlID("held"), "hello "+held)
	if d := ctlAck(t, l.request(mh.String()), mh, "ok", false); !strings.Contains(d, "held") {
		t.Errorf("a prompt sent while paused: ack detail %q", d)
	}
	requests, steps := l1Requests(t, tok), l1StepsFile(w)
	if requests > n0+1 || requests > 2 || l1Tools(l) != requests || strings.Count(steps, "\n") != requests-1 {
		t.Fatalf("when a tool call is held: %d model requests (%d at the pause), %d tool calls, steps.txt %q", requests, n0, l1Tools(l), steps)
	}
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		if n, s := l1Requests(t, tok), l1StepsFile(w); n != requests || s != steps {
			t.Fatalf("while paused: the model got %d requests (had %d), steps.txt %q", n, requests, s)
		}
		if len(ctlPrompts(t, held)) != 0 {
			t.Fatalf("while paused: the held prompt reached the model")
		}
	}
	for _, b := range l.got {
		if ctlTurnOf(m.id())(b) {
			t.Fatalf("the turn ended while paused: %s", b)
		}
	}

	resume := l1Req("req-resume-001", "resume", l1Run, "auth-123", nil)
	_, res = l1Command(t, l, resume)
	l1Shape(t, "A: resume RESULT", res, `{"schema":0,"topic":"loop:control","type":"RESULT","request_id":"req-resume-001","command":"resume","target":{"run_id":"`+l1Run+`","issue_id":"auth-123"},"timestamp":"*","payload":{"status":"success","message":"*"}}`)
	st := l1After(l, "req-resume-001", "the STATE after resume", l1IsEvent("STATE"))
	if get(st, "stack.0.state").Str != "running" {
		t.Errorf("the STATE after resume: %s", st)
	}
	turn := w.turn(m.id(), "success")
	if !strings.Contains(get(turn, "text").Str, "Steps done.") || get(turn, "num_turns").Int() != 4 {
		t.Errorf("the resumed turn did not end as the loop's own: %s", turn)
	}
	if s := l1StepsFile(w); s != "step-1\nstep-2\nstep-3\n" {
		t.Errorf("steps.txt after resume: %q", s)
	}
	w.turn(mh.id(), "success")
	ctlPromptCount(t, held, 1)
	idle := l.wait("an idle STATE with iter 2", func(b []byte) bool {
		return get(b, "event").Str == "STATE" && get(b, "stack.0.iter").Int() == 2 && get(b, "stack.0.state").Str == "idle"
	})
	l1Shape(t, "STATE", idle, `{"schema":1,"topic":"loop:current","event":"STATE","run_id":"`+l1Run+`","updated_at":"*","stack":[{"id":"`+l1Run+`","mode":"default","iter":2,"model":"claude-opus-5-5","state":"idle"}]}`)
}

// TestLane001Cancel is flow B: cancel interrupts the running loop in band,
// RESULT then ABORT, no further tool runs, and the next prompt works;
// cancelling an idle run is invalid_state; a cancel while paused refuses
// the held tool. Its iter, steps.txt and ABORT lines are counted from its
// start (see TestLane001OneWorker).
func l1Cancel(t *testing.T, w *ctlWorker) {
	const run = l1Run
	l := w.stdio
	start, iter0, steps0 := len(l.got), l1Iter(l), l1StepsFile(w)

	_, res := l1Command(t, l, l1Req("req-cancel-idle", "cancel", run, "", nil))
	l1Status(t, "cancel while idle", res, "failure", "invalid_state")

	tok := token("CANCEL")
	m := w.stdinReq(ctlID("cancel"), "TOOLSTEPS "+tok)
	ctlAck(t, l.request(m.String()), m, "ok", false)
	l.waitFrom(start, "the first tool call", func(b []byte) bool { return typeOf(b) == "control.worker.tool" })

	ack, res := l1Command(t, l, l1Req("req-cancel-001", "cancel", run, "", nil))
	l1Shape(t, "B: ACK", ack, `{"schema":0,"topic":"loop:control","type":"ACK","request_id":"req-cancel-001","command":"cancel","target":{"run_id":"`+run+`"},"timestamp":"*","payload":{}}`)
	l1Shape(t, "B: RESULT", res, `{"schema":0,"topic":"loop:control","type":"RESULT","request_id":"req-cancel-001","command":"cancel","target":{"run_id":"`+run+`"},"timestamp":"*","payload":{"status":"success"}}`)
	abort := l1After(l, "req-cancel-001", "the ABORT", l1IsEvent("ABORT"))
	if ai, ri := l.waitFrom(start, "the ABORT", l1IsEvent("ABORT")), l.waitFrom(start, "the RESULT", l1Is("RESULT", "req-cancel-001")); ai < ri {
		t.Errorf("the ABORT (line %d) came before the cancel's RESULT (line %d)", ai, ri)
	}
	l1Shape(t, "B: ABORT", abort, `{"schema":1,"topic":"loop:current","event":"ABORT","reason":"USER_CANCELLED","run_id":"`+run+`","stack":[]}`)
	w.turn(m.id(), "cancelled")
	time.Sleep(1500 * time.Millisecond) // the first step's sleep is over
	if s := strings.TrimPrefix(l1StepsFile(w), steps0); strings.Contains(s, "step-2") || strings.Contains(s, "step-3") {
		t.Errorf("a tool ran after cancel: steps.txt %q", s)
	}

	// The session goes on. (The fake model may carry its script on with
	// steps 2 and 3 here: it reads the conversation, not the turn.)
	tok2 := token("AFTER")
	m2 := w.stdinReq(ctlID("after"), "hello "+tok2)
	ctlAck(t, l.request(m2.String()), m2, "ok", false)
	w.turn(m2.id(), "success")

	// Cancel while paused with a tool held: the tool never runs.
	before := l1StepsFile(w)
	tok3 := token("CANCELP")
	m3 := w.stdinReq(ctlID("cancelp"), "TOOLSTEPS "+tok3)
	ctlAck(t, l.request(m3.String()), m3, "ok", false)
	from, logFrom := len(l.got), w.b.stderrLen()
	_, res = l1Command(t, l, l1Req("req-pause-c", "pause", run, "", nil))
	l1Status(t, "pause", res, "success", "")
	l.waitFrom(from, "the held tool call", func(b []byte) bool { return typeOf(b) == "control.worker.tool" })
	w.b.waitStderrFrom(logFrom, "a tool call waits for resume")
	_, res = l1Command(t, l, l1Req("req-cancel-p", "cancel", run, "", nil))
	l1Status(t, "cancel while paused", res, "success", "")
	l1After(l, "req-cancel-p", "the ABORT", l1IsEvent("ABORT"))
	w.turn(m3.id(), "cancelled")
	time.Sleep(500 * time.Millisecond)
	if s := l1StepsFile(w); s != before {
		t.Errorf("the held tool ran after cancel: steps.txt %q, was %q", s, before)
	}
	l.waitFrom(start, "an idle STATE after the cancel", func(b []byte) bool {
		return get(b, "event").Str == "STATE" && get(b, "stack.0.state").Str == "idle" && get(b, "stack.0.iter").Int() == iter0+3
	})
}

// TestLane001Escalate is flow C: escalate switches the model through the
// CLI's set_model; the model the CLI sends to the API changes, and STATE
// carries the new model, --max-turns and the reason.
func TestLane001Escalate(t *testing.T) {
	t.Parallel()
	w := ctlStart(t, ctlOpts{args: []string{"--run-id", l1Run, "--model", "haiku", "--", "--max-turns", "10"}})
	l := w.stdio
	tok := token("HAIKU")
	m := w.stdinReq(ctlID("haiku"), "hello "+tok)
	ctlAck(t, l.request(m.String()), m, "ok", false)
	w.turn(m.id(), "success")
	if rs := ctlPrompts(t, tok); len(rs) != 1 || rs[0].Model != "claude-haiku-5-5" {
		t.Fatalf("before escalate: %+v", rs)
	}

	req := l1Req("req-escalate-001", "escalate", l1Run, "complex-refactor", map[string]any{"model": "opus", "reason": "Stuck on complex type inference"})
	ack, res := l1Command(t, l, req)
	l1Shape(t, "C: ACK", ack, `{"schema":0,"topic":"loop:control","type":"ACK","request_id":"req-escalate-001","command":"escalate","target":{"run_id":"`+l1Run+`","issue_id":"complex-refactor"},"timestamp":"*","payload":{}}`)
	l1Shape(t, "C: RESULT", res, `{"schema":0,"topic":"loop:control","type":"RESULT","request_id":"req-escalate-001","command":"escalate","target":{"run_id":"`+l1Run+`","issue_id":"complex-refactor"},"timestamp":"*","payload":{"status":"success","previous_model":"claude-haiku-5-5","new_model":"claude-opus-5-5"}}`)
	st := l1After(l, "req-escalate-001", "the STATE after escalate", l1IsEvent("STATE"))
	l1Shape(t, "C: STATE", st, `{"schema":1,"topic":"loop:current","event":"STATE","run_id":"`+l1Run+`","updated_at":"*","stack":[{"id":"`+l1Run+`","mode":"default","iter":1,"max":10,"model":"claude-opus-5-5","state":"idle","escalation_reason":"Stuck on complex type inference"}]}`)

	tok2 := token("OPUS")
	m2 := w.stdinReq(ctlID("opus"), "hello "+tok2)
	ctlAck(t, l.request(m2.String()), m2, "ok", false)
	w.turn(m2.id(), "success")
	if rs := ctlPrompts(t, tok2); len(rs) != 1 || rs[0].Model != "claude-opus-5-5" {
		t.Errorf("after escalate the CLI did not ask the new model: %+v", rs)
	}
}

// TestLane001NotFoundAndBadInput is flow D (a run that is not this one is
// not active) and every kind of bad line: each gets RESULT bad_request
// (ERROR when no request_id can be read), ccbridge goes on.
func l1NotFoundAndBadInput(t *testing.T, w *ctlWorker) {
	l := w.stdio

	_, res := l1Command(t, l, l1Req("req-race-001", "pause", "loop-completed-xyz", "", nil))
	l1Shape(t, "D: RESULT", res, `{"schema":0,"topic":"loop:control","type":"RESULT","request_id":"req-race-001","command":"pause","target":{"run_id":"loop-completed-xyz"},"timestamp":"*","payload":{"status":"failure","code":"not_found","message":"Run loop-completed-xyz is not active"}}`)

	// The default run id is the session id.
	_, res = l1Command(t, l, l1Req("req-sid-pause", "pause", w.sid, "", nil))
	l1Status(t, "pause by session id", res, "success", "")

	sock := w.dial()
	bad := []struct{ line, typ, want string }{
		{`{"schema":0,"type":"REQUEST","request_id":"b1","command":"pause","target":{"run_id":"x"},"timestamp":"2024-12-28T10:00:00Z","payload":{}`, "ERROR", "the line is not valid JSON"},
		{`{"schema":1,"type":"REQUEST","request_id":"b2","command":"pause","target":{"run_id":"x"},"timestamp":"2024-12-28T10:00:00Z","payload":{}}`, "RESULT", "schema"},
		{`{"schema":0,"type":"PING","request_id":"b3","command":"pause","target":{"run_id":"x"},"timestamp":"2024-12-28T10:00:00Z","payload":{}}`, "RESULT", "type"},
		{`{"schema":0,"type":"REQUEST","request_id":"b4","command":"stop","target":{"run_id":"x"},"timestamp":"2024-12-28T10:00:00Z","payload":{}}`, "RESULT", "command"},
		{`{"schema":0,"type":"REQUEST","request_id":"b5","command":"pause","target":{},"timestamp":"2024-12-28T10:00:00Z","payload":{}}`, "RESULT", "target.run_id"},
		{`{"schema":0,"type":"REQUEST","command":"pause","target":{"run_id":"x"},"timestamp":"2024-12-28T10:00:00Z","payload":{}}`, "ERROR", "request_id"},
		{`{"schema":0,"type":"REQUEST","request_id":"b7","command":"escalate","target":{"run_id":"x"},"timestamp":"2024-12-28T10:00:00Z","payload":{}}`, "RESULT", "payload.model"},
		{"{\"schema\":0,\"type\":\"REQUEST\",\"request_id\":\"b8\",\"command\":\"pause\",\"target\":{\"run_id\":\"\xff\"},\"timestamp\":\"2024-12-28T10:00:00Z\",\"payload\":{}}", "ERROR", "the line is not valid UTF-8"},
	}
	for _, lane := range []*ctlLane{l, sock} {
		for _, b := range bad {
			from := len(lane.got)
			lane.send(b.line)
			i := lane.waitFrom(from, "the answer to "+b.line, func(x []byte) bool {
				switch typeOf(x) {
				case "RESULT", "ERROR", "control.error", "ACK":
					return true
				}
				return false
			})
			got := lane.got[i]
			switch {
			case b.typ == "" && typeOf(got) != b.want:
				t.Errorf("%s: %s: answer %s, want %s", lane.name, b.line, got, b.want)
			case b.typ != "" && (typeOf(got) != b.typ || get(got, "payload.code").Str != "bad_request" || !strings.HasPrefix(get(got, "payload.message").Str, b.want)):
				t.Errorf("%s: %s: answer %s, want %s bad_request on %s", lane.name, b.line, got, b.typ, b.want)
			}
		}
	}
	// An answer sent back gets no answer; the session goes on.
	l.send(`{"schema":0,"type":"ACK","request_id":"req-x","command":"pause","target":{"run_id":"x"},"timestamp":"2024-12-28T10:00:00Z","payload":{}}`)
	_, res = l1Command(t, l, l1Req("req-resume-end", "resume", w.sid, "", nil))
	l1Status(t, "resume after the bad lines", res, "success", "")
	for _, b := range l.got {
		if get(b, "request_id").Str == "req-x" {
			t.Errorf("an ACK sent to ccbridge was answered: %s", b)
		}
	}
}

// TestLane001Dedupe: a request id that completed gets its cached RESULT
// again and runs nothing twice; one in flight gets duplicate. Its STATE
// and ABORT lines are counted from its start; it resumes at its end (see
// TestLane001OneWorker).
func l1Dedupe(t *testing.T, w *ctlWorker) {
	l := w.stdio
	start := len(l.got)
	sock := w.dial()
	pause := l1Req("req-dup-pause", "pause", l1Run, "", nil)
	_, first := l1Command(t, l, pause)
	l1Status(t, "pause", first, "success", "")
	_, again := l1Command(t, sock, pause)
	if get(again, "payload").Raw != get(first, "payload").Raw {
		t.Errorf("a completed duplicate: RESULT %s, want the cached %s", again, first)
	}
	_, res := l1Command(t, l, l1Req("req-dup-resume", "resume", l1Run, "", nil))
	l1Status(t, "resume", res, "success", "")
	l1After(l, "req-dup-resume", "the STATE after resume", l1IsEvent("STATE"))
	// Not run twice: one STATE says paused, the resume's comes after it.
	if n := count(l.got[start:], func(b []byte) bool { return get(b, "event").Str == "STATE" && get(b, "stack.0.state").Str == "paused" }); n != 1 {
		t.Errorf("%d STATE paused lines on stdio after a duplicate pause, want 1", n)
	}

	// In flight: a cancel waits for the CLI's answer to its interrupt,
	// which a stopped CLI cannot give.
	tok := token("DUP")
	m := w.stdinReq(ctlID("dup"), "TOOLSTEPS "+tok)
	from := len(l.got)
	ctlAck(t, l.request(m.String()), m, "ok", false)
	l.waitFrom(from, "the first tool call", func(b []byte) bool { return typeOf(b) == "control.worker.tool" })
	cont := ctlStopProc(t, w.cliPID())
	cancel := l1Req("req-dup-cancel", "cancel", l1Run, "", nil)
	l.send(cancel)
	l.wait("the cancel's ACK", l1Is("ACK", "req-dup-cancel"))
	_, dup := l1Command(t, sock, cancel)
	l1Status(t, "a cancel in flight", dup, "failure", "duplicate")
	cont()
	res = l.wait("the cancel's RESULT", l1Is("RESULT", "req-dup-cancel"))
	l1Status(t, "the cancel", res, "success", "")
	l1After(l, "req-dup-cancel", "the ABORT", l1IsEvent("ABORT"))
	_, res = l1Command(t, sock, cancel)
	l1Status(t, "the cancel, completed", res, "success", "")
	w.turn(m.id(), "cancelled")
	// A last command and its STATE: every line before it has been read.
	_, res = l1Command(t, l, l1Req("req-dup-last", "pause", l1Run, "", nil))
	l1Status(t, "the last pause", res, "success", "")
	l1After(l, "req-dup-last", "the last STATE", l1IsEvent("STATE"))
	if n := count(l.got[start:], l1IsEvent("ABORT")); n != 1 {
		t.Errorf("%d ABORT lines for one cancel sent three times", n)
	}
	// The worker as it was found: not paused.
	_, res = l1Command(t, l, l1Req("req-dup-unpause", "resume", l1Run, "", nil))
	l1Status(t, "the resume at the end", res, "success", "")
	l1After(l, "req-dup-unpause", "the STATE after the resume", l1IsEvent("STATE"))
}

// TestLane001PausePersisted: with --state-dir a paused run stays paused
// when ccbridge restarts on the same state folder and session: the first
// STATE says paused, and the next turn waits until resume.
func TestLane001PausePersisted(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	w1 := ctlStart(t, ctlOpts{durable: true, args: []string{"--state-dir", state, "--", "--allowedTools", "Bash"}})
	tok1 := token("FIRST")
	m1 := w1.stdinReq(ctlID("p1"), "hello "+tok1)
	ctlAck(t, w1.stdio.request(m1.String()), m1, "ok", false)
	w1.turn(m1.id(), "success")
	_, res := l1Command(t, w1.stdio, l1Req("req-persist-pause", "pause", w1.sid, "", nil))
	l1Status(t, "pause", res, "success", "")
	// A crash, not a clean end: SIGKILL.
	w1.b.cmd.Process.Signal(syscall.SIGKILL)
	w1.b.wait()

	w2 := ctlStart(t, ctlOpts{durable: true, sid: w1.sid, resume: true,
		args: []string{"--state-dir", state, "--cwd", w1.b.dir, "--", "--allowedTools", "Bash"}, env: []string{"HOME=" + w1.b.home}})
	l := w2.stdio
	st := l.wait("the first STATE", l1IsEvent("STATE"))
	if get(st, "stack.0.state").Str != "paused" || get(st, "stack.0.iter").Int() != 1 {
		t.Fatalf("the first STATE after the restart: %s", st)
	}
	tok2 := token("STEPS2")
	m2 := w2.stdinReq(ctlID("p2"), "TOOLSTEPS "+tok2)
	ctlAck(t, l.request(m2.String()), m2, "ok", false)
	time.Sleep(3 * time.Second)
	if n := l1Requests(t, tok2); n != 0 || l1StepsFile(w1) != "" {
		t.Fatalf("the paused run started a turn after the restart: %d model requests, steps.txt %q", n, l1StepsFile(w1))
	}
	// The pause's id is remembered across the restart too.
	_, res = l1Command(t, l, l1Req("req-persist-pause", "pause", w1.sid, "", nil))
	l1Status(t, "the pause again after the restart", res, "success", "")
	_, res = l1Command(t, l, l1Req("req-persist-resume", "resume", w1.sid, "", nil))
	l1Status(t, "resume", res, "success", "")
	// The held prompt is sent on resume: its STATE running comes after
	// the RESULT.
	ri := l.waitFrom(0, "the resume's RESULT", l1Is("RESULT", "req-persist-resume"))
	if si := l.waitFrom(0, "a STATE running", func(b []byte) bool { return get(b, "stack.0.state").Str == "running" }); si < ri {
		t.Errorf("the STATE running (line %d) came before the resume's RESULT (line %d)", si, ri)
	}
	w2.turn(m2.id(), "success")
	if s := l1StepsFile(w1); s != "step-1\nstep-2\nstep-3\n" {
		t.Errorf("steps.txt after resume: %q", s)
	}
	if !seenByModel(t, tok2, tok1) {
		t.Errorf("the restarted ccbridge did not resume the session")
	}
}

// TestLane001Socket/control: lane 001 on --control beside --ui control
// (the first lane-001 line subscribes the connection to loop:current,
// STATE first). It resumes at its end (see TestLane001OneWorker).
func l1SocketControl(t *testing.T, w *ctlWorker) {
	start := len(w.stdio.got)
	sock := w.dial()
	from := len(sock.got)
	_, res := l1Command(t, sock, l1Req("req-sock-pause", "pause", l1Run, "", nil))
	l1Status(t, "pause on the socket", res, "success", "")
	first := sock.got[sock.waitFrom(from, "the first STATE", l1IsEvent("STATE"))]
	if get(first, "stack.0.state").Str != "idle" {
		t.Errorf("the socket's first STATE: %s", first)
	}
	after := l1After(sock, "req-sock-pause", "the STATE after pause", l1IsEvent("STATE"))
	if get(after, "stack.0.state").Str != "paused" {
		t.Errorf("the socket's STATE after pause: %s", after)
	}
	// stdio sees the event too.
	w.stdio.waitFrom(start, "the stdio STATE paused", func(b []byte) bool { return get(b, "stack.0.state").Str == "paused" })

	// The worker as it was found: not paused.
	_, res = l1Command(t, sock, l1Req("req-sock-unpause", "resume", l1Run, "", nil))
	l1Status(t, "the resume at the end", res, "success", "")
	l1After(sock, "req-sock-unpause", "the STATE after the resume", l1IsEvent("STATE"))
}

// TestLane001Socket/ipc: lane 001 on --control beside --ui ipc, whose
// worker cannot be paused (invalid_state), on a connection of its own. It
// runs in TestControlSocketIPC's ccbridge; beside --ui control it is
// TestLane001OneWorker's TestLane001Socket/control.
func l1SocketIPC(t *testing.T, w *ctlWorker) {
	isock := w.dial()
	_, res := l1Command(t, isock, l1Req("req-ipc-pause", "pause", w.sid, "", nil))
	l1Status(t, "pause beside ipc", res, "failure", "invalid_state")
}

// TestLane001EndWhilePaused: the UI's input ends while a tool and a
// prompt are held: ccbridge still ends at once, the held prompt's turn is
// reported lost, the held tool never runs, and the run is DONE. It is the
// worker's last scenario (see TestLane001OneWorker).
func l1EndWhilePaused(t *testing.T, w *ctlWorker) {
	l := w.stdio
	tok := token("ENDP")
	m0 := w.stdinReq(ctlID("endrun"), "TOOLSTEPS "+tok)
	logFrom := w.b.stderrLen()
	ctlAck(t, l.request(m0.String()), m0, "ok", false)
	_, res := l1Command(t, l, l1Req("req-end-pause", "pause", l1Run, "", nil))
	l1Status(t, "pause", res, "success", "")
	w.b.waitStderrFrom(logFrom, "a tool call waits for resume")
	held := token("ENDHELD")
	m := w.stdinReq(ctlID("endp"), "hello "+held)
	ctlAck(t, l.request(m.String()), m, "ok", false)
	steps := l1StepsFile(w)
	start := time.Now()
	w.b.stdin.Close()
	for l.read() {
	}
	if code := w.b.wait(); code != 0 || time.Since(start) > 10*time.Second {
		t.Errorf("ccbridge exited with %d after %v", code, time.Since(start))
	}
	turn := l.wait("the held prompt's turn", ctlTurnOf(m.id()))
	if get(turn, "result").Str != "error" || !strings.Contains(get(turn, "text").Str, "paus") {
		t.Errorf("the held prompt's turn: %s", turn)
	}
	done := l.wait("DONE", l1IsEvent("DONE"))
	l1Shape(t, "DONE", done, `{"schema":1,"topic":"loop:current","event":"DONE","reason":"COMPLETED","run_id":"`+l1Run+`","updated_at":"*","stack":[]}`)
	if l1StepsFile(w) != steps {
		t.Errorf("a held tool ran: steps.txt %q, was %q", l1StepsFile(w), steps)
	}
	ctlPromptCount(t, held, 0)
	l.wait("the paused turn's end", ctlTurnOf(m0.id()))
}
