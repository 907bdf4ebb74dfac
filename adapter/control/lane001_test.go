package control

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/mapping/lane001"
)

const testRun001 = "loop-abc-123"

// loop001 stands for a session's loop: one goroutine running what Submit
// hands it, in order.
type loop001 struct {
	work    chan func()
	quit    chan struct{}
	stopped chan struct{}
	on      atomic.Bool // fn is running on the loop goroutine
	stopMu  sync.Once
}

func newLoop001(t *testing.T) *loop001 {
	t.Helper()
	lp := &loop001{work: make(chan func()), quit: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(lp.stopped)
		for {
			select {
			case fn := <-lp.work:
				lp.on.Store(true)
				fn()
				lp.on.Store(false)
			case <-lp.quit:
				return
			}
		}
	}()
	t.Cleanup(lp.stop)
	return lp
}

func (lp *loop001) submit(fn func()) bool {
	select {
	case <-lp.quit:
		return false
	default:
	}
	select {
	case lp.work <- fn:
		return true
	case <-lp.quit:
		return false
	}
}

func (lp *loop001) stop() {
	lp.stopMu.Do(func() { close(lp.quit) })
	<-lp.stopped
}

// target001 is a fake Target001: it records the commands it gets and
// answers each with res; with hold set it keeps done on held instead.
type target001 struct {
	runID string
	res   lane001.Result
	hold  bool
	held  chan func(lane001.Result)

	mu    sync.Mutex
	calls []string
}

func newTarget001() *target001 {
	return &target001{runID: testRun001, res: lane001.Result{Status: lane001.StatusSuccess}, held: make(chan func(lane001.Result), 4)}
}

func (f *target001) RunID() string     { return f.runID }
func (f *target001) StateLine() []byte { return []byte(`{"event":"STATE"}`) }

func (f *target001) command(call string, done func(lane001.Result)) {
	f.mu.Lock()
	f.calls = append(f.calls, call)
	f.mu.Unlock()
	if f.hold {
		f.held <- done
		return
	}
	done(f.res)
}

func (f *target001) Pause(done func(lane001.Result))  { f.command("pause", done) }
func (f *target001) Resume(done func(lane001.Result)) { f.command("resume", done) }
func (f *target001) Cancel(done func(lane001.Result)) { f.command("cancel", done) }
func (f *target001) Escalate(model, reason string, done func(lane001.Result)) {
	f.command("escalate "+model+" / "+reason, done)
}

func (f *target001) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// sent001 is one line a peer was given: through Send, or SendOnLoop.
type sent001 struct {
	onLoop bool
	line   string
}

func (s sent001) String() string {
	if s.onLoop {
		return "onloop " + s.line
	}
	return "send " + s.line
}

// peer001 records what it is sent, in order. SendOnLoop checks that it is
// called on the loop and, when store is set, that the RESULT's outcome is
// already recorded there.
type peer001 struct {
	t     *testing.T
	loop  *loop001
	store Store

	mu      sync.Mutex
	got     []sent001
	checked int // RESULTs whose stored outcome was checked
}

func (p *peer001) Send(line []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, sent001{false, string(line)})
}

func (p *peer001) SendOnLoop(line []byte) {
	if p.loop != nil && !p.loop.on.Load() {
		p.t.Errorf("SendOnLoop called off the loop: %s", line)
	}
	if p.store != nil {
		r := gjson.ParseBytes(line)
		k := Key{Lane: "001", RequestID: r.Get("request_id").Str}
		prev, fresh, err := p.store.Begin(k, t0)
		switch {
		case err != nil:
			p.t.Errorf("store Begin in SendOnLoop: %v", err)
		case fresh || prev.InFlight:
			p.t.Errorf("RESULT %s sent before its outcome was recorded (fresh %v, entry %+v)", line, fresh, prev)
		case prev.Outcome.Result != r.Get("payload.status").Str:
			p.t.Errorf("stored result %q, RESULT says %s", prev.Outcome.Result, r.Get("payload").Raw)
		}
		p.mu.Lock()
		p.checked++
		p.mu.Unlock()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, sent001{true, string(line)})
}

func (p *peer001) lines() []sent001 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]sent001(nil), p.got...)
}

// lane001Env is a lane-001 receiver with its loop, target and store.
type lane001Env struct {
	loop   *loop001
	target *target001
	store  Store
	lane   *Lane001
}

func newLane001Env(t *testing.T, store Store) *lane001Env {
	t.Helper()
	if store == nil {
		store = NewMemoryStore(StoreConfig{TTL: DedupeWindow001})
	}
	t.Cleanup(func() { store.Close() })
	e := &lane001Env{loop: newLoop001(t), target: newTarget001(), store: store}
	e.lane = NewLane001(Lane001Config{
		Store:  store,
		Now:    func() time.Time { return t0 },
		Target: e.target,
		Submit: e.loop.submit,
		Logger: slog.New(slog.DiscardHandler),
	})
	return e
}

func (e *lane001Env) peer(t *testing.T) *peer001 {
	return &peer001{t: t, loop: e.loop, store: e.store}
}

// handle001 runs line through l with a fresh peer and returns what it sent.
func handle001(t *testing.T, l *Lane001, p *peer001, line []byte) []sent001 {
	t.Helper()
	l.Handle(line, p)
	return p.lines()
}

func request001(id, cmd, runID, payload string) []byte {
	return fmt.Appendf(nil, `{"schema":0,"type":"REQUEST","request_id":%q,"command":%q,"target":{"run_id":%q},"timestamp":"2026-02-20T21:14:59Z","payload":%s}`,
		id, cmd, runID, payload)
}

// wantAnswer checks that s is a loop:control line of type typ correlated
// with the request (id, cmd, runID) and returns it parsed.
func wantAnswer(t *testing.T, s sent001, onLoop bool, typ, id, cmd, runID string) gjson.Result {
	t.Helper()
	if s.onLoop != onLoop {
		t.Errorf("%s: onLoop %v, want %v", s, s.onLoop, onLoop)
	}
	r := gjson.Parse(s.line)
	if !gjson.Valid(s.line) {
		t.Fatalf("not JSON: %s", s.line)
	}
	for _, f := range []struct{ path, want string }{
		{"type", typ}, {"topic", lane001.TopicControl}, {"request_id", id}, {"command", cmd}, {"target.run_id", runID},
	} {
		if got := r.Get(f.path).Str; got != f.want {
			t.Errorf("%s: %s = %q, want %q", s, f.path, got, f.want)
		}
	}
	if r.Get("schema").Raw != "0" {
		t.Errorf("%s: schema %s", s, r.Get("schema").Raw)
	}
	return r
}

// wantPayload checks a RESULT's payload members (absent ones must be "").
func wantPayload(t *testing.T, r gjson.Result, want lane001.Result) {
	t.Helper()
	got := lane001.Result{
		Status:        r.Get("payload.status").Str,
		Code:          r.Get("payload.code").Str,
		Message:       r.Get("payload.message").Str,
		PreviousModel: r.Get("payload.previous_model").Str,
		NewModel:      r.Get("payload.new_model").Str,
	}
	if got != want {
		t.Errorf("payload %s\n got %+v\nwant %+v", r.Get("payload").Raw, got, want)
	}
}

func TestLane001Commands(t *testing.T) {
	for _, tc := range []struct {
		cmd, payload string
		call         string
		res          lane001.Result
	}{
		{"pause", `{}`, "pause", lane001.Result{Status: lane001.StatusSuccess}},
		{"resume", `{}`, "resume", lane001.Result{Status: lane001.StatusFailure, Code: lane001.CodeInvalidState, Message: "Run is not paused"}},
		{"cancel", `{}`, "cancel", lane001.Result{Status: lane001.StatusSuccess}},
		{"escalate", `{"model":"opus","reason":"stuck on tests"}`, "escalate opus / stuck on tests",
			lane001.Result{Status: lane001.StatusSuccess, PreviousModel: "sonnet", NewModel: "opus"}},
		{"escalate", `{"model":"haiku"}`, "escalate haiku / ", lane001.Result{Status: lane001.StatusSuccess, PreviousModel: "opus", NewModel: "haiku"}},
	} {
		t.Run(tc.call, func(t *testing.T) {
			e := newLane001Env(t, nil)
			e.target.res = tc.res
			p := e.peer(t)
			line := []byte(fmt.Sprintf(`{"schema":0,"type":"REQUEST","request_id":"req-1","command":%q,"target":{"run_id":%q,"issue_id":"ISS-7"},"timestamp":"2026-02-20T21:14:59Z","payload":%s}`,
				tc.cmd, testRun001, tc.payload))
			got := handle001(t, e.lane, p, line)
			if len(got) != 2 {
				t.Fatalf("sent %d lines, want ACK and RESULT: %v", len(got), got)
			}
			ack := wantAnswer(t, got[0], false, "ACK", "req-1", tc.cmd, testRun001)
			if ack.Get("payload").Raw != "{}" || ack.Get("target.issue_id").Str != "ISS-7" {
				t.Errorf("ACK %s", got[0].line)
			}
			res := wantAnswer(t, got[1], true, "RESULT", "req-1", tc.cmd, testRun001)
			if res.Get("target.issue_id").Str != "ISS-7" {
				t.Errorf("RESULT lost the issue_id: %s", got[1].line)
			}
			wantPayload(t, res, tc.res)
			if calls := e.target.called(); len(calls) != 1 || calls[0] != tc.call {
				t.Errorf("target calls %q, want [%q]", calls, tc.call)
			}
			if p.checked != 1 {
				t.Errorf("the stored outcome was checked %d times, want 1", p.checked)
			}
		})
	}
}

// TestLane001OutcomeRecordedBeforeResult: when the RESULT is sent (the
// peer's SendOnLoop looks), the store already holds the outcome, so a
// controller that saw it and retries gets it again.
func TestLane001OutcomeRecordedBeforeResult(t *testing.T) {
	e := newLane001Env(t, nil)
	e.target.res = lane001.Result{Status: lane001.StatusFailure, Code: lane001.CodeInvalidState, Message: "already paused"}
	var checks []string
	p := &peer001{t: t, loop: e.loop}
	// A store check of our own, so that what it saw can be asserted here.
	hooked := &hookPeer001{peer001: p, onLoop: func(line []byte) {
		prev, fresh, err := e.store.Begin(Key{Lane: "001", RequestID: "req-1"}, t0)
		checks = append(checks, fmt.Sprintf("fresh=%v inflight=%v result=%q err=%v", fresh, prev.InFlight, prev.Outcome.Result, err))
	}}
	e.lane.Handle(request001("req-1", "pause", testRun001, `{}`), hooked)
	want := `fresh=false inflight=false result="failure" err=<nil>`
	if len(checks) != 1 || checks[0] != want {
		t.Fatalf("store seen from SendOnLoop: %q, want [%s]", checks, want)
	}
	if got := p.lines(); len(got) != 2 || !got[1].onLoop {
		t.Fatalf("sent %v", got)
	}
}

// hookPeer001 runs onLoop (on the loop) before SendOnLoop records.
type hookPeer001 struct {
	*peer001
	onLoop func([]byte)
}

func (h *hookPeer001) SendOnLoop(line []byte) {
	h.onLoop(line)
	h.peer001.SendOnLoop(line)
}

// TestLane001CompletedDuplicate: a request id that completed gets the same
// RESULT payload again, from the lane's goroutine, and nothing runs twice.
func TestLane001CompletedDuplicate(t *testing.T) {
	for _, tc := range []struct {
		name, cmd, payload string
		res                lane001.Result
	}{
		{"escalate success", "escalate", `{"model":"opus","reason":"r"}`, lane001.Result{Status: lane001.StatusSuccess, PreviousModel: "sonnet", NewModel: "opus"}},
		{"pause failure", "pause", `{}`, lane001.Result{Status: lane001.StatusFailure, Code: lane001.CodeInvalidState, Message: "Run is already paused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newLane001Env(t, nil)
			e.target.res = tc.res
			line := request001("req-dup", tc.cmd, testRun001, tc.payload)
			first := handle001(t, e.lane, e.peer(t), line)
			second := handle001(t, e.lane, e.peer(t), line)
			if len(first) != 2 || len(second) != 2 {
				t.Fatalf("first %v\nsecond %v", first, second)
			}
			wantAnswer(t, second[0], false, "ACK", "req-dup", tc.cmd, testRun001)
			r1 := wantAnswer(t, first[1], true, "RESULT", "req-dup", tc.cmd, testRun001)
			r2 := wantAnswer(t, second[1], false, "RESULT", "req-dup", tc.cmd, testRun001)
			if r1.Get("payload").Raw != r2.Get("payload").Raw {
				t.Errorf("payloads differ:\nfirst  %s\nsecond %s", r1.Get("payload").Raw, r2.Get("payload").Raw)
			}
			wantPayload(t, r2, tc.res)
			if calls := e.target.called(); len(calls) != 1 {
				t.Errorf("target calls %q, want one", calls)
			}
		})
	}
}

// TestLane001InFlightDuplicate: while a request is pending on the target,
// the same id from another connection gets failure/duplicate at once; the
// first then completes normally.
func TestLane001InFlightDuplicate(t *testing.T) {
	e := newLane001Env(t, nil)
	e.target.hold = true
	line := request001("req-slow", "cancel", testRun001, `{}`)
	p1 := e.peer(t)
	firstDone := make(chan struct{})
	go func() {
		defer close(firstDone)
		e.lane.Handle(line, p1)
	}()
	var done func(lane001.Result)
	select {
	case done = <-e.target.held:
	case <-time.After(5 * time.Second):
		t.Fatal("the target never got the command")
	}

	p2 := e.peer(t)
	secondDone := make(chan struct{})
	go func() {
		defer close(secondDone)
		e.lane.Handle(line, p2)
	}()
	select {
	case <-secondDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the duplicate was not answered while the first is pending")
	}
	got := p2.lines()
	if len(got) != 2 {
		t.Fatalf("duplicate: sent %v", got)
	}
	wantAnswer(t, got[0], false, "ACK", "req-slow", "cancel", testRun001)
	r := wantAnswer(t, got[1], false, "RESULT", "req-slow", "cancel", testRun001)
	wantPayload(t, r, lane001.Result{Status: lane001.StatusFailure, Code: lane001.CodeDuplicate, Message: "request req-slow is still in flight"})
	select {
	case <-firstDone:
		t.Fatal("the first request returned before the target answered")
	default:
	}
	if got := p1.lines(); len(got) != 1 {
		t.Fatalf("first request before done: sent %v, want its ACK only", got)
	}

	// The target answers (on the loop, as done must be called).
	ok := e.loop.submit(func() {
		done(lane001.Result{Status: lane001.StatusSuccess})
	})
	if !ok {
		t.Fatal("loop refused")
	}
	select {
	case <-firstDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the first request did not return after done")
	}
	got = p1.lines()
	if len(got) != 2 {
		t.Fatalf("first: sent %v", got)
	}
	wantAnswer(t, got[0], false, "ACK", "req-slow", "cancel", testRun001)
	wantPayload(t, wantAnswer(t, got[1], true, "RESULT", "req-slow", "cancel", testRun001), lane001.Result{Status: lane001.StatusSuccess})
	if calls := e.target.called(); len(calls) != 1 {
		t.Errorf("target calls %q, want one", calls)
	}
}

// TestLane001OtherRunNotFound is the seed's flow D: a request for a run
// that is not this one.
func TestLane001OtherRunNotFound(t *testing.T) {
	e := newLane001Env(t, nil)
	got := handle001(t, e.lane, e.peer(t), request001("req-race-001", "pause", "loop-completed-xyz", `{}`))
	if len(got) != 2 {
		t.Fatalf("sent %v", got)
	}
	wantAnswer(t, got[0], false, "ACK", "req-race-001", "pause", "loop-completed-xyz")
	r := wantAnswer(t, got[1], true, "RESULT", "req-race-001", "pause", "loop-completed-xyz")
	wantPayload(t, r, lane001.Result{Status: lane001.StatusFailure, Code: lane001.CodeNotFound, Message: "Run loop-completed-xyz is not active"})
	if calls := e.target.called(); len(calls) != 0 {
		t.Errorf("target called: %q", calls)
	}
}

// TestLane001SessionOver: Submit refuses (the session ended): not_found,
// recorded, so a retry gets it again.
func TestLane001SessionOver(t *testing.T) {
	e := newLane001Env(t, nil)
	e.loop.stop()
	line := request001("req-late", "resume", testRun001, `{}`)
	for i := range 2 {
		got := handle001(t, e.lane, e.peer(t), line)
		if len(got) != 2 {
			t.Fatalf("try %d: sent %v", i, got)
		}
		wantAnswer(t, got[0], false, "ACK", "req-late", "resume", testRun001)
		r := wantAnswer(t, got[1], false, "RESULT", "req-late", "resume", testRun001)
		wantPayload(t, r, lane001.Result{Status: lane001.StatusFailure, Code: lane001.CodeNotFound, Message: "Run " + testRun001 + " is not active"})
	}
	if prev, fresh, err := e.store.Begin(Key{Lane: "001", RequestID: "req-late"}, t0); err != nil || fresh || prev.InFlight || prev.Outcome.Result != lane001.StatusFailure {
		t.Errorf("store after not_found: %+v, fresh %v, %v", prev, fresh, err)
	}
	if calls := e.target.called(); len(calls) != 0 {
		t.Errorf("target called: %q", calls)
	}
}

// TestLane001NoTarget: a dialect that cannot be paused answers every
// request invalid_state with the refusal, without the loop.
func TestLane001NoTarget(t *testing.T) {
	var submits atomic.Int32
	const refusal = "this agent's dialect cannot be paused"
	l := NewLane001(Lane001Config{
		Store:   NewMemoryStore(StoreConfig{TTL: DedupeWindow001}),
		Now:     func() time.Time { return t0 },
		Refusal: refusal,
		Submit:  func(fn func()) bool { submits.Add(1); return false },
		Logger:  slog.New(slog.DiscardHandler),
	})
	for _, cmd := range []string{"pause", "escalate"} {
		got := handle001(t, l, &peer001{t: t}, request001("req-"+cmd, cmd, testRun001, `{"model":"opus"}`))
		if len(got) != 2 {
			t.Fatalf("%s: sent %v", cmd, got)
		}
		wantAnswer(t, got[0], false, "ACK", "req-"+cmd, cmd, testRun001)
		wantPayload(t, wantAnswer(t, got[1], false, "RESULT", "req-"+cmd, cmd, testRun001),
			lane001.Result{Status: lane001.StatusFailure, Code: lane001.CodeInvalidState, Message: refusal})
	}
	if n := submits.Load(); n != 0 {
		t.Errorf("Submit called %d times with no target", n)
	}
}

// TestLane001BadLines: refused lines get one answer and no ACK (RESULT when
// a request_id could be read, ERROR otherwise), answers get nothing, and
// nothing reaches the loop or the store.
func TestLane001BadLines(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		typ, id    string // "" typ: no answer at all
		msg        string // a part of the message
	}{
		{"unknown command", `{"schema":0,"type":"REQUEST","request_id":"req-b","command":"jump","target":{"run_id":"loop-abc-123"},"timestamp":"2026-02-20T21:14:59Z","payload":{}}`,
			"RESULT", "req-b", "command: unknown command"},
		{"escalate without model", `{"schema":0,"type":"REQUEST","request_id":"req-m","command":"escalate","target":{"run_id":"loop-abc-123"},"timestamp":"2026-02-20T21:14:59Z","payload":{}}`,
			"RESULT", "req-m", "payload.model: missing"},
		{"no request_id", `{"schema":0,"type":"REQUEST","command":"pause","target":{"run_id":"loop-abc-123"},"timestamp":"2026-02-20T21:14:59Z","payload":{}}`,
			"ERROR", "", "request_id: missing"},
		{"not JSON", `{"schema":0,`, "ERROR", "", "not valid JSON"},
		{"an ACK", `{"schema":0,"topic":"loop:control","type":"ACK","request_id":"req-1","command":"pause","target":{"run_id":"loop-abc-123"},"timestamp":"2026-02-20T21:14:59Z","payload":{}}`,
			"", "", ""},
		{"a STATE event", `{"schema":1,"topic":"loop:current","event":"STATE","run_id":"loop-abc-123","updated_at":"2026-02-20T21:14:59Z","stack":[]}`,
			"", "", ""},
		{"a RESULT", `{"schema":0,"topic":"loop:control","type":"RESULT","request_id":"req-1","command":"pause","target":{"run_id":"loop-abc-123"},"timestamp":"2026-02-20T21:14:59Z","payload":{"status":"success"}}`,
			"", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newLane001Env(t, nil)
			got := handle001(t, e.lane, e.peer(t), []byte(tc.line))
			if tc.typ == "" {
				if len(got) != 0 {
					t.Fatalf("an answer was answered: %v", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("sent %v, want one %s and no ACK", got, tc.typ)
			}
			r := gjson.Parse(got[0].line)
			if got[0].onLoop || r.Get("type").Str != tc.typ || r.Get("topic").Str != lane001.TopicControl {
				t.Errorf("answer %s, want a %s through Send", got[0], tc.typ)
			}
			if id := r.Get("request_id"); id.Str != tc.id || id.Exists() != (tc.id != "") {
				t.Errorf("request_id %s, want %q", id.Raw, tc.id)
			}
			if r.Get("payload.status").Str != lane001.StatusFailure || r.Get("payload.code").Str != lane001.CodeBadRequest ||
				!strings.Contains(r.Get("payload.message").Str, tc.msg) {
				t.Errorf("payload %s, want failure/bad_request mentioning %q", r.Get("payload").Raw, tc.msg)
			}
			if calls := e.target.called(); len(calls) != 0 {
				t.Errorf("target called: %q", calls)
			}
			if tc.id != "" {
				if _, fresh, err := e.store.Begin(Key{Lane: "001", RequestID: tc.id}, t0); err != nil || !fresh {
					t.Errorf("a refused line's id is in the store (fresh %v, %v)", fresh, err)
				}
			}
		})
	}
}

// TestLane001RecoveredInFlight: a request that was in flight when a
// durable store's process stopped is, on a retry after the restart,
// failure/invalid_state (whether it ran is unknown), not run again.
func TestLane001RecoveredInFlight(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenStore(dir, StoreConfig{TTL: DedupeWindow001, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	if _, fresh, err := s.Begin(Key{Lane: "001", RequestID: "req-crash"}, t0); err != nil || !fresh {
		t.Fatalf("Begin: fresh %v, %v", fresh, err)
	}
	if err := s.Close(); err != nil { // a crash: no Finish
		t.Fatal(err)
	}
	s, err = OpenStore(dir, StoreConfig{TTL: DedupeWindow001, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	e := newLane001Env(t, s)
	got := handle001(t, e.lane, e.peer(t), request001("req-crash", "pause", testRun001, `{}`))
	if len(got) != 2 {
		t.Fatalf("sent %v", got)
	}
	wantAnswer(t, got[0], false, "ACK", "req-crash", "pause", testRun001)
	r := wantAnswer(t, got[1], false, "RESULT", "req-crash", "pause", testRun001)
	if st := r.Get("payload.status").Str; st != lane001.StatusFailure || r.Get("payload.code").Str != lane001.CodeInvalidState ||
		!strings.Contains(r.Get("payload.message").Str, "in flight when ccbridge stopped") {
		t.Errorf("payload %s, want failure/invalid_state saying it was in flight", r.Get("payload").Raw)
	}
	if calls := e.target.called(); len(calls) != 0 {
		t.Errorf("target called: %q", calls)
	}
}

// TestLane001LoopStoppedBeforeRunning: a loop that accepted the command
// but ended without running it is noticed (within the lane's 1 s tick):
// not_found, not a Handle that never returns.
func TestLane001LoopStoppedBeforeRunning(t *testing.T) {
	t.Parallel()
	var submits atomic.Int32
	store := NewMemoryStore(StoreConfig{TTL: DedupeWindow001})
	t.Cleanup(func() { store.Close() })
	target := newTarget001()
	l := NewLane001(Lane001Config{
		Store:  store,
		Now:    func() time.Time { return t0 },
		Target: target,
		Submit: func(fn func()) bool { return submits.Add(1) == 1 }, // takes fn, never runs it
		Logger: slog.New(slog.DiscardHandler),
	})
	p := &peer001{t: t}
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		l.Handle(request001("req-lost", "pause", testRun001, `{}`), p)
	}()
	select {
	case <-done:
	case <-time.After(2500 * time.Millisecond):
		t.Fatal("Handle did not answer within 2.5 s a command the loop dropped")
	}
	t.Logf("answered after %v", time.Since(start).Round(time.Millisecond))
	got := p.lines()
	if len(got) != 2 {
		t.Fatalf("sent %v", got)
	}
	wantAnswer(t, got[0], false, "ACK", "req-lost", "pause", testRun001)
	wantPayload(t, wantAnswer(t, got[1], false, "RESULT", "req-lost", "pause", testRun001),
		lane001.Result{Status: lane001.StatusFailure, Code: lane001.CodeNotFound, Message: "Run " + testRun001 + " is not active"})
	if prev, fresh, err := store.Begin(Key{Lane: "001", RequestID: "req-lost"}, t0); err != nil || fresh || prev.InFlight {
		t.Errorf("store after not_found: %+v, fresh %v, %v; want completed", prev, fresh, err)
	}
	if calls := target.called(); len(calls) != 0 {
		t.Errorf("target called: %q", calls)
	}
}
