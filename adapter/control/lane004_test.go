package control

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/mapping/lane004"
)

// The helpers of this file are named l4…, so that they cannot collide
// with those of the package's other tests.

const l4Worker = "w-004"

var l4Now = time.Date(2026, 2, 20, 21, 15, 0, 0, time.UTC)

// l4At is l4Now as receipts write it.
const l4At = `"2026-02-20T21:15:00.000Z"`

// l4Target is a fake Target004: it records the requests it gets and
// answers each with res. With gate set, Do blocks (on the loop) until the
// gate is closed, and only then answers.
type l4Target struct {
	t    *testing.T
	loop *loop001
	res  Receipt004
	gate chan struct{}
	// started gets a value when Do begins (buffered; never blocks Do).
	started chan string

	mu    sync.Mutex
	calls []string
}

func newL4Target(t *testing.T, loop *loop001) *l4Target {
	return &l4Target{t: t, loop: loop, res: Receipt004{OK: true, Response: `{"data":[],"nextCursor":null}`}, started: make(chan string, 64)}
}

func (f *l4Target) Do(req *lane004.Request, done func(Receipt004)) {
	if f.loop != nil && !f.loop.on.Load() {
		f.t.Errorf("Do called off the loop for %s", req.RequestID)
	}
	f.mu.Lock()
	f.calls = append(f.calls, req.RequestID+" "+req.Method)
	f.mu.Unlock()
	select {
	case f.started <- req.RequestID:
	default:
	}
	if f.gate != nil {
		<-f.gate
	}
	done(f.res)
}

func (f *l4Target) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// l4Env is a lane-004 receiver with its loop, target, store and log.
type l4Env struct {
	loop   *loop001
	target *l4Target
	store  Store
	log    *EventLog
	lane   *Lane004
}

// newL4Env builds a receiver; a nil store or log is made in memory.
func newL4Env(t *testing.T, store Store, log *EventLog) *l4Env {
	t.Helper()
	if store == nil {
		store = NewMemoryStore(StoreConfig{})
		t.Cleanup(func() { store.Close() })
	}
	if log == nil {
		var err error
		if log, err = OpenEventLog(EventLogConfig{Logger: slog.New(slog.DiscardHandler)}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { log.Close() })
	}
	e := &l4Env{loop: newLoop001(t), store: store, log: log}
	e.target = newL4Target(t, e.loop)
	e.lane = NewLane004(Lane004Config{
		WorkerID: l4Worker,
		Store:    store,
		Now:      func() time.Time { return l4Now },
		Target:   e.target,
		Log:      log,
		Submit:   e.loop.submit,
		Logger:   slog.New(slog.DiscardHandler),
	})
	return e
}

// l4Req is a request line.
func l4Req(id, method, params string) []byte {
	s := fmt.Sprintf(`{"request":{"request_id":%q,"method":%q`, id, method)
	if params != "" {
		s += `,"params":` + params
	}
	return []byte(s + `}}`)
}

// l4Lines returns every line the log keeps.
func l4Lines(l *EventLog) [][]byte {
	lines, _, _ := l.After(0, 0, nil)
	return lines
}

// l4Stored returns the outcome the store holds for request id (it must be
// completed).
func l4Stored(t *testing.T, s Store, id string) Outcome {
	t.Helper()
	prev, fresh, err := s.Begin(Key{Lane: "004", AgentID: l4Worker, RequestID: id}, l4Now)
	if err != nil || fresh || prev.InFlight {
		t.Fatalf("store entry of %s: %+v, fresh %v, %v; want a completed one", id, prev, fresh, err)
	}
	return prev.Outcome
}

// l4Event appends a worker.event to l and returns its line.
func l4Event(l *EventLog, n int) []byte {
	var line []byte
	l.Append(func(seq uint64) []byte {
		line = lane004.AppendEvent(nil, l4Worker, seq, "item/agentMessage/delta", fmt.Sprintf(`{"n":%d}`, n), l4Now)
		return line
	})
	return line
}

// l4Log is an in-memory log holding n events.
func l4Log(t *testing.T, retain, n int) *EventLog {
	t.Helper()
	l, err := OpenEventLog(EventLogConfig{Retain: retain, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	for i := range n {
		l4Event(l, i+1)
	}
	return l
}

func TestLane004FreshRequest(t *testing.T) {
	e := newL4Env(t, nil, nil)
	l4Event(e.log, 1) // the receipt takes the next seq, 2
	receipt, fresh, req := e.lane.Request(l4Req("r-1", "thread/list", `{"limit":5}`), nil)
	want := `{"event_type":"worker.response","seq":2,"worker_id":"` + l4Worker + `","payload":{"request_id":"r-1","method":"thread/list","ok":true,` +
		`"response":{"data":[],"nextCursor":null},"occurred_at":` + l4At + `}}`
	if string(receipt) != want {
		t.Errorf("receipt\n got %s\nwant %s", receipt, want)
	}
	if !fresh {
		t.Error("fresh = false for a request run now")
	}
	if req == nil || req.RequestID != "r-1" || req.Method != lane004.MethodThreadList || req.Limit != 5 {
		t.Errorf("decoded %+v", req)
	}
	if calls := e.target.called(); len(calls) != 1 || calls[0] != "r-1 thread/list" {
		t.Errorf("target calls %q, want one", calls)
	}
	lines := l4Lines(e.log)
	if len(lines) != 2 || !bytes.Equal(lines[1], receipt) || e.log.Latest() != 2 {
		t.Errorf("log (latest %d): %q; want the receipt as seq 2", e.log.Latest(), lines)
	}
	o := l4Stored(t, e.store, "r-1")
	if o.Detail != string(receipt) || o.Result != "ok" {
		t.Errorf("stored outcome %+v, want the receipt's bytes", o)
	}
}

func TestLane004CompletedDuplicate(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  Receipt004
		want string // payload after method
	}{
		{"response", Receipt004{OK: true, Response: `{"thread":{"id":"x"}}`}, `"ok":true,"response":{"thread":{"id":"x"}}`},
		{"error", Receipt004{Code: lane004.CodeConflict, Message: "a turn is running", Details: `{"turnId":"t-1"}`},
			`"code":"conflict","message":"a turn is running","retryable":false,"details":{"turnId":"t-1"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newL4Env(t, nil, nil)
			e.target.res = tc.res
			line := l4Req("r-dup", "thread/list", "")
			first, fresh1, _ := e.lane.Request(line, nil)
			second, fresh2, req := e.lane.Request(line, nil)
			typ := "worker.response"
			if !tc.res.OK {
				typ = "worker.error"
			}
			want := `{"event_type":"` + typ + `","seq":1,"worker_id":"` + l4Worker + `","payload":{"request_id":"r-dup","method":"thread/list",` +
				tc.want + `,"occurred_at":` + l4At + `}}`
			if string(first) != want {
				t.Errorf("first\n got %s\nwant %s", first, want)
			}
			if !bytes.Equal(first, second) {
				t.Errorf("duplicate's receipt differs:\nfirst  %s\nsecond %s", first, second)
			}
			if !fresh1 || fresh2 {
				t.Errorf("fresh %v then %v, want true then false", fresh1, fresh2)
			}
			if req == nil || req.RequestID != "r-dup" {
				t.Errorf("duplicate decoded %+v", req)
			}
			if calls := e.target.called(); len(calls) != 1 {
				t.Errorf("target calls %q, want one", calls)
			}
			if e.log.Latest() != 1 {
				t.Errorf("log latest %d after a duplicate, want 1", e.log.Latest())
			}
		})
	}
}

func TestLane004ConcurrentDuplicates(t *testing.T) {
	e := newL4Env(t, nil, nil)
	gate := make(chan struct{})
	var release sync.Once
	open := func() { release.Do(func() { close(gate) }) }
	t.Cleanup(open) // before the loop's cleanup: a failed test does not hang
	e.target.gate = gate
	line := l4Req("r-many", "thread/list", "")
	const n = 20
	type answer struct {
		receipt []byte
		fresh   bool
	}
	answers := make(chan answer, n)
	var returned atomic.Int32
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			r, fresh, _ := e.lane.Request(line, nil)
			returned.Add(1)
			answers <- answer{r, fresh}
		})
	}
	select {
	case <-e.target.started:
	case <-time.After(5 * time.Second):
		t.Fatal("the target never got the request")
	}
	time.Sleep(100 * time.Millisecond) // the others reach the lane meanwhile
	if got := returned.Load(); got != 0 {
		t.Fatalf("%d requests returned while the target holds its answer", got)
	}
	open()
	wg.Wait()
	close(answers)
	var first []byte
	freshes := 0
	for a := range answers {
		if a.fresh {
			freshes++
		}
		if first == nil {
			first = a.receipt
		} else if !bytes.Equal(a.receipt, first) {
			t.Errorf("receipts differ:\n%s\n%s", first, a.receipt)
		}
	}
	if freshes != 1 {
		t.Errorf("%d fresh receipts, want exactly one", freshes)
	}
	if calls := e.target.called(); len(calls) != 1 {
		t.Errorf("Do ran %d times, want once: %q", len(calls), calls)
	}
	if lines := l4Lines(e.log); len(lines) != 1 || !bytes.Equal(lines[0], first) {
		t.Errorf("log holds %q, want the one receipt", lines)
	}
	if r := gjson.ParseBytes(first); r.Get("seq").Int() != 1 || r.Get("payload.ok").Raw != "true" {
		t.Errorf("receipt %s", first)
	}
}

func TestLane004InFlightWhenStopped(t *testing.T) {
	dir := t.TempDir()
	cfg := StoreConfig{Now: func() time.Time { return l4Now }}
	s, err := OpenStore(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, fresh, err := s.Begin(Key{Lane: "004", AgentID: l4Worker, RequestID: "r-crash"}, l4Now); err != nil || !fresh {
		t.Fatalf("Begin: fresh %v, %v", fresh, err)
	}
	if err := s.Close(); err != nil { // a crash in flight: no Finish
		t.Fatal(err)
	}
	if s, err = OpenStore(dir, cfg); err != nil {
		t.Fatal(err)
	}
	e := newL4Env(t, s, nil)
	line := l4Req("r-crash", "turn/interrupt", `{"threadId":"0c5e3f4e-9a1b-4c2d-8e7f-123456789abc","turnId":"t-1"}`)
	first, fresh, _ := e.lane.Request(line, nil)
	want := `{"event_type":"worker.error","seq":1,"worker_id":"` + l4Worker + `","payload":{"request_id":"r-crash","method":"turn/interrupt",` +
		`"code":"internal_error","message":"the request was in flight when ccbridge stopped; whether it took effect is not known",` +
		`"retryable":true,"occurred_at":` + l4At + `}}`
	if string(first) != want {
		t.Errorf("receipt\n got %s\nwant %s", first, want)
	}
	if !strings.Contains(string(first), "in flight when ccbridge stopped") {
		t.Errorf("receipt does not say it was in flight: %s", first)
	}
	if !fresh {
		t.Error("the in-flight receipt is not fresh (it is published now)")
	}
	second, fresh2, _ := e.lane.Request(line, nil)
	if !bytes.Equal(first, second) || fresh2 {
		t.Errorf("retry: fresh %v\n got %s\nwant %s", fresh2, second, first)
	}
	if lines := l4Lines(e.log); len(lines) != 1 || !bytes.Equal(lines[0], first) {
		t.Errorf("log holds %q, want the receipt once", lines)
	}
	if calls := e.target.called(); len(calls) != 0 {
		t.Errorf("target called: %q", calls)
	}

	// Another restart: the stored receipt, not a second one.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = OpenStore(dir, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	e2 := newL4Env(t, s, e.log)
	third, fresh3, _ := e2.lane.Request(line, nil)
	if !bytes.Equal(first, third) || fresh3 {
		t.Errorf("retry after a second restart: fresh %v\n got %s\nwant %s", fresh3, third, first)
	}
	if e.log.Latest() != 1 || len(e2.target.called()) != 0 {
		t.Errorf("after the second restart: log latest %d, target calls %q", e.log.Latest(), e2.target.called())
	}
}

func TestLane004ReceiptAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	open := func() (Store, *EventLog) {
		s, err := OpenStore(dir, StoreConfig{Now: func() time.Time { return l4Now }, Events: true})
		if err != nil {
			t.Fatal(err)
		}
		l, err := OpenEventLog(EventLogConfig{Store: s, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			s.Close()
			t.Fatal(err)
		}
		return s, l
	}
	s, l := open()
	e := newL4Env(t, s, l)
	r1, fresh, _ := e.lane.Request(l4Req("r-1", "thread/list", ""), nil)
	e.target.res = Receipt004{Code: lane004.CodeInvalidRequest, Message: "no such thread"}
	r2, fresh2, _ := e.lane.Request(l4Req("r-2", "thread/read", `{"threadId":"0c5e3f4e-9a1b-4c2d-8e7f-123456789abc"}`), nil)
	if !fresh || !fresh2 || l.Latest() != 2 {
		t.Fatalf("before the restart: fresh %v %v, latest %d", fresh, fresh2, l.Latest())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, l = open()
	t.Cleanup(func() { l.Close(); s.Close() })
	e2 := newL4Env(t, s, l)
	for _, c := range []struct {
		line []byte
		want []byte
	}{
		{l4Req("r-1", "thread/list", ""), r1},
		{l4Req("r-2", "thread/read", `{"threadId":"0c5e3f4e-9a1b-4c2d-8e7f-123456789abc"}`), r2},
	} {
		got, fresh, _ := e2.lane.Request(c.line, nil)
		if !bytes.Equal(got, c.want) || fresh {
			t.Errorf("retry after the restart: fresh %v\n got %s\nwant %s", fresh, got, c.want)
		}
	}
	if calls := e2.target.called(); len(calls) != 0 {
		t.Errorf("target called after the restart: %q", calls)
	}
	if l.Latest() != 2 {
		t.Fatalf("reopened log latest %d, want 2", l.Latest())
	}
	r3, fresh, _ := e2.lane.Request(l4Req("r-3", "thread/list", ""), nil)
	if seq := gjson.GetBytes(r3, "seq").Uint(); !fresh || seq != 3 || l.Latest() != 3 {
		t.Errorf("new request after the restart: fresh %v seq %d latest %d, want seq 3: %s", fresh, seq, l.Latest(), r3)
	}
	if lines := l4Lines(l); len(lines) != 3 || !bytes.Equal(lines[0], r1) || !bytes.Equal(lines[1], r2) || !bytes.Equal(lines[2], r3) {
		t.Errorf("reopened log holds %q", lines)
	}
}

func TestLane004Refusals(t *testing.T) {
	t.Run("not JSON", func(t *testing.T) {
		e := newL4Env(t, nil, nil)
		r, fresh, req := e.lane.Request([]byte(`{"request":{"request_id":"r-1",`), nil)
		p := gjson.ParseBytes(r)
		if !gjson.ValidBytes(r) || p.Get("event_type").Str != "worker.error" || p.Get("seq").Exists() ||
			p.Get("worker_id").Str != l4Worker || p.Get("payload.request_id").Raw != "null" ||
			p.Get("payload.code").Str != lane004.CodeInvalidRequest || p.Get("payload.retryable").Raw != "false" {
			t.Errorf("refusal %s", r)
		}
		if fresh || req != nil {
			t.Errorf("fresh %v, decoded %+v; want false and nil", fresh, req)
		}
		if e.log.Latest() != 0 || len(e.target.called()) != 0 {
			t.Errorf("log latest %d, target calls %q; want nothing", e.log.Latest(), e.target.called())
		}
	})
	t.Run("unsupported method", func(t *testing.T) {
		e := newL4Env(t, nil, nil)
		line := l4Req("r-u", "thread/delete", "")
		r, fresh, req := e.lane.Request(line, nil)
		p := gjson.ParseBytes(r)
		if p.Get("event_type").Str != "worker.error" || p.Get("seq").Uint() != 1 || p.Get("payload.request_id").Str != "r-u" ||
			p.Get("payload.method").Str != "thread/delete" || p.Get("payload.code").Str != lane004.CodeUnsupportedMethod {
			t.Errorf("receipt %s", r)
		}
		if !fresh || req == nil || req.RequestID != "r-u" {
			t.Errorf("fresh %v, decoded %+v", fresh, req)
		}
		if lines := l4Lines(e.log); len(lines) != 1 || !bytes.Equal(lines[0], r) {
			t.Errorf("log holds %q, want the receipt", lines)
		}
		again, fresh2, _ := e.lane.Request(line, nil)
		if !bytes.Equal(again, r) || fresh2 || e.log.Latest() != 1 {
			t.Errorf("retry: fresh %v latest %d\n got %s\nwant %s", fresh2, e.log.Latest(), again, r)
		}
		if calls := e.target.called(); len(calls) != 0 {
			t.Errorf("target called: %q", calls)
		}
	})
	t.Run("no target", func(t *testing.T) {
		const refusal = "this agent's dialect has no worker lane"
		log := l4Log(t, 0, 0)
		var submits atomic.Int32
		l := NewLane004(Lane004Config{
			WorkerID: l4Worker,
			Store:    NewMemoryStore(StoreConfig{}),
			Now:      func() time.Time { return l4Now },
			Refusal:  refusal,
			Log:      log,
			Submit:   func(func()) bool { submits.Add(1); return true },
			Logger:   slog.New(slog.DiscardHandler),
		})
		r, fresh, req := l.Request(l4Req("r-1", "thread/start", ""), nil)
		want := `{"event_type":"worker.error","worker_id":"` + l4Worker + `","payload":{"request_id":"r-1","method":"thread/start",` +
			`"code":"worker_unavailable","message":"` + refusal + `","retryable":true,"occurred_at":` + l4At + `}}`
		if string(r) != want {
			t.Errorf("refusal\n got %s\nwant %s", r, want)
		}
		if fresh || req == nil || req.RequestID != "r-1" {
			t.Errorf("fresh %v, decoded %+v", fresh, req)
		}
		if log.Latest() != 0 || submits.Load() != 0 {
			t.Errorf("log latest %d, submits %d; want nothing", log.Latest(), submits.Load())
		}
	})
	t.Run("echoed worker.event", func(t *testing.T) {
		e := newL4Env(t, nil, nil)
		line := lane004.AppendEvent(nil, l4Worker, 7, "turn/started", `{"turn":{"id":"t-1"}}`, l4Now)
		r, fresh, req := e.lane.Request(line, nil)
		if r != nil || fresh || req != nil {
			t.Errorf("an echoed event was answered: %s, fresh %v, decoded %+v", r, fresh, req)
		}
		if e.log.Latest() != 0 || len(e.target.called()) != 0 {
			t.Errorf("log latest %d, target calls %q; want nothing", e.log.Latest(), e.target.called())
		}
	})
}

func TestLane004SessionEnded(t *testing.T) {
	e := newL4Env(t, nil, nil)
	e.loop.stop()
	line := l4Req("r-late", "thread/list", "")
	r, fresh, _ := e.lane.Request(line, nil)
	want := `{"event_type":"worker.error","seq":1,"worker_id":"` + l4Worker + `","payload":{"request_id":"r-late","method":"thread/list",` +
		`"code":"worker_unavailable","message":"the worker's session has ended","retryable":true,"occurred_at":` + l4At + `}}`
	if string(r) != want || !fresh {
		t.Errorf("fresh %v\n got %s\nwant %s", fresh, r, want)
	}
	if lines := l4Lines(e.log); len(lines) != 1 || !bytes.Equal(lines[0], r) {
		t.Errorf("log holds %q", lines)
	}
	again, fresh2, _ := e.lane.Request(line, nil)
	if !bytes.Equal(again, r) || fresh2 {
		t.Errorf("retry: fresh %v, %s", fresh2, again)
	}
	if calls := e.target.called(); len(calls) != 0 {
		t.Errorf("target called: %q", calls)
	}
}

// TestLane004LoopStoppedBeforeRunning: a loop that took the request but
// ended without running it is noticed within the lane's 1 s tick.
func TestLane004LoopStoppedBeforeRunning(t *testing.T) {
	t.Parallel()
	var submits atomic.Int32
	log := l4Log(t, 0, 0)
	store := NewMemoryStore(StoreConfig{})
	t.Cleanup(func() { store.Close() })
	target := newL4Target(t, nil)
	l := NewLane004(Lane004Config{
		WorkerID: l4Worker,
		Store:    store,
		Now:      func() time.Time { return l4Now },
		Target:   target,
		Log:      log,
		Submit:   func(func()) bool { return submits.Add(1) == 1 }, // takes fn, never runs it, then stops
		Logger:   slog.New(slog.DiscardHandler),
	})
	type result struct {
		r     []byte
		fresh bool
	}
	ch := make(chan result, 1)
	start := time.Now()
	go func() {
		r, fresh, _ := l.Request(l4Req("r-lost", "thread/list", ""), nil)
		ch <- result{r, fresh}
	}()
	var res result
	select {
	case res = <-ch:
	case <-time.After(2500 * time.Millisecond):
		t.Fatal("Request did not answer within 2.5 s a request the loop dropped")
	}
	t.Logf("answered after %v", time.Since(start).Round(time.Millisecond))
	p := gjson.ParseBytes(res.r)
	if !res.fresh || p.Get("event_type").Str != "worker.error" || p.Get("seq").Uint() != 1 ||
		p.Get("payload.code").Str != lane004.CodeWorkerUnavailable || p.Get("payload.message").Str != "the worker's session has ended" {
		t.Errorf("fresh %v, receipt %s", res.fresh, res.r)
	}
	if n := submits.Load(); n < 2 {
		t.Errorf("Submit called %d times; the tick should have looked again", n)
	}
	if o := l4Stored(t, store, "r-lost"); o.Detail != string(res.r) {
		t.Errorf("stored %+v", o)
	}
	if calls := target.called(); len(calls) != 0 {
		t.Errorf("target called: %q", calls)
	}
}

func TestLane004Replay(t *testing.T) {
	type call struct{ after, latest uint64 }
	for _, tc := range []struct {
		name          string
		retain, n     int
		after         uint64
		wantResponse  string
		wantReplayArg uint64
	}{
		{"kept cursor", 0, 5, 3, `{"after":3,"latest_seq":5,"resume_after":null}`, 3},
		{"cursor 0", 0, 5, 0, `{"after":0,"latest_seq":5,"resume_after":null}`, 0},
		{"latest cursor", 0, 5, 5, `{"after":5,"latest_seq":5,"resume_after":null}`, 5},
		{"older than kept", 5, 20, 2, `{"after":2,"latest_seq":20,"resume_after":15}`, 2},
		{"oldest kept minus one", 5, 20, 15, `{"after":15,"latest_seq":20,"resume_after":null}`, 15},
		{"from the future", 5, 20, 99, `{"after":99,"latest_seq":20,"resume_after":15}`, 99},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := l4Log(t, tc.retain, tc.n)
			e := newL4Env(t, nil, log)
			var calls []call
			replay := func(after uint64) { calls = append(calls, call{after, log.Latest()}) }
			r, fresh, req := e.lane.Request(l4Req("rp-1", lane004.MethodReplay, fmt.Sprintf(`{"after":%d}`, tc.after)), replay)
			if len(calls) != 1 || calls[0] != (call{tc.wantReplayArg, uint64(tc.n)}) {
				t.Errorf("replay calls %+v, want [{after %d, log latest %d}] (before the receipt is in the log)", calls, tc.wantReplayArg, tc.n)
			}
			want := `{"event_type":"worker.response","seq":` + fmt.Sprint(tc.n+1) + `,"worker_id":"` + l4Worker +
				`","payload":{"request_id":"rp-1","method":"ccbridge/events/replay","ok":true,"response":` + tc.wantResponse +
				`,"occurred_at":` + l4At + `}}`
			if string(r) != want {
				t.Errorf("receipt\n got %s\nwant %s", r, want)
			}
			if !fresh || req == nil || req.After != tc.after {
				t.Errorf("fresh %v, decoded %+v", fresh, req)
			}
			if lines := l4Lines(log); len(lines) == 0 || !bytes.Equal(lines[len(lines)-1], r) {
				t.Errorf("the receipt is not the log's last line")
			}
			if c := e.target.called(); len(c) != 0 {
				t.Errorf("the target ran a replay: %q", c)
			}
		})
	}
	t.Run("no stream", func(t *testing.T) {
		log := l4Log(t, 0, 3)
		e := newL4Env(t, nil, log)
		r, fresh, _ := e.lane.Request(l4Req("rp-2", lane004.MethodReplay, `{"after":1}`), nil)
		p := gjson.ParseBytes(r)
		if !fresh || p.Get("event_type").Str != "worker.error" || p.Get("seq").Uint() != 4 ||
			p.Get("payload.code").Str != lane004.CodeInvalidRequest || p.Get("payload.retryable").Raw != "false" ||
			!strings.Contains(p.Get("payload.message").Str, "no stream") {
			t.Errorf("fresh %v, receipt %s", fresh, r)
		}
		if c := e.target.called(); len(c) != 0 {
			t.Errorf("target called: %q", c)
		}
	})
}

// l4Follower runs Follow in a goroutine and reports what it does, in
// order, on ev: "send N" (with the line on lines) and "flush".
type l4Follower struct {
	ev     chan string
	lines  chan []byte
	rewind chan uint64
	stop   chan struct{}
	done   chan struct{}
	sends  atomic.Int32
	stopFn func() // closes stop (once)
}

// follow starts Follow from cursor; sendOK says whether the i-th send
// (from 1) succeeds.
func l4Follow(t *testing.T, l *Lane004, cursor uint64, sendOK func(i int) bool) *l4Follower {
	t.Helper()
	f := &l4Follower{
		ev:     make(chan string, 1024),
		lines:  make(chan []byte, 1024),
		rewind: make(chan uint64),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	var stopOnce sync.Once
	go func() {
		defer close(f.done)
		l.Follow(cursor, func(seq uint64, line []byte) bool {
			i := int(f.sends.Add(1))
			f.ev <- fmt.Sprintf("send %d", seq)
			f.lines <- line
			return sendOK == nil || sendOK(i)
		}, func() bool {
			f.ev <- "flush"
			return true
		}, f.rewind, f.stop)
	}()
	t.Cleanup(func() {
		stopOnce.Do(func() { close(f.stop) })
		select {
		case <-f.done:
		case <-time.After(5 * time.Second):
			t.Error("Follow did not return at the end of the test")
		}
	})
	f.stopFn = func() { stopOnce.Do(func() { close(f.stop) }) }
	return f
}

// expect reads the next events and checks them; the lines sent come
// back in order.
func (f *l4Follower) expect(t *testing.T, want ...string) [][]byte {
	t.Helper()
	var lines [][]byte
	for _, w := range want {
		select {
		case got := <-f.ev:
			if got != w {
				t.Fatalf("Follow did %q, want %q (expected %q)", got, w, want)
			}
			if strings.HasPrefix(got, "send ") {
				lines = append(lines, <-f.lines)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Follow did not %q (expected %q)", w, want)
		}
	}
	return lines
}

// quiet checks that Follow does nothing for a while.
func (f *l4Follower) quiet(t *testing.T) {
	t.Helper()
	select {
	case got := <-f.ev:
		t.Fatalf("Follow did %q, want nothing", got)
	case <-time.After(50 * time.Millisecond):
	}
}

func (f *l4Follower) returns(t *testing.T, why string) {
	t.Helper()
	select {
	case <-f.done:
	case <-time.After(5 * time.Second):
		t.Fatalf("Follow did not return when %s", why)
	}
}

func TestLane004Follow(t *testing.T) {
	log := l4Log(t, 0, 3)
	e := newL4Env(t, nil, log)
	f := l4Follow(t, e.lane, 0, nil)
	got := f.expect(t, "send 1", "send 2", "send 3", "flush")
	kept := l4Lines(log)
	for i := range got {
		if !bytes.Equal(got[i], kept[i]) {
			t.Errorf("line %d sent %s, want %s", i, got[i], kept[i])
		}
	}
	f.quiet(t)

	// A new event wakes it; so does a receipt.
	l4Event(log, 4)
	f.expect(t, "send 4", "flush")
	r, _, _ := e.lane.Request(l4Req("r-1", "thread/list", ""), nil)
	if sent := f.expect(t, "send 5", "flush"); !bytes.Equal(sent[0], r) {
		t.Errorf("followed %s, want the receipt %s", sent[0], r)
	}

	// A rewind re-sends from the cursor; one ahead is ignored.
	f.rewind <- 2
	f.expect(t, "send 3", "send 4", "send 5", "flush")
	f.rewind <- 9
	f.quiet(t)
	l4Event(log, 6)
	f.expect(t, "send 6", "flush")

	f.stopFn()
	f.returns(t, "stop was closed")
}

func TestLane004FollowStaleCursor(t *testing.T) {
	log := l4Log(t, 5, 20)
	e := newL4Env(t, nil, log)
	f := l4Follow(t, e.lane, 2, nil)
	got := f.expect(t, "send 0", "send 16", "send 17", "send 18", "send 19", "send 20", "flush")
	want := `{"event_type":"worker.cursor_stale","worker_id":"` + l4Worker + `","payload":{"after":2,"resume_after":15,"latest_seq":20,"occurred_at":` + l4At + `}}`
	if string(got[0]) != want {
		t.Errorf("stale line\n got %s\nwant %s", got[0], want)
	}
	kept := l4Lines(log)
	for i, b := range got[1:] {
		if !bytes.Equal(b, kept[i]) {
			t.Errorf("line %d sent %s, want %s", i, b, kept[i])
		}
	}
	f.quiet(t)

	// A rewind to a cursor no longer kept is stale again.
	f.rewind <- 1
	got = f.expect(t, "send 0", "send 16", "send 17", "send 18", "send 19", "send 20", "flush")
	if p := gjson.GetBytes(got[0], "payload"); p.Get("after").Uint() != 1 || p.Get("resume_after").Uint() != 15 {
		t.Errorf("stale line after the rewind: %s", got[0])
	}
}

// TestLane004FollowBatches: a long backlog goes in batches of at most
// 256 lines, each flushed.
func TestLane004FollowBatches(t *testing.T) {
	log := l4Log(t, 0, 600)
	e := newL4Env(t, nil, log)
	f := l4Follow(t, e.lane, 0, nil)
	var want []string
	for i := 1; i <= 600; i++ {
		want = append(want, fmt.Sprintf("send %d", i))
		if i == 256 || i == 512 || i == 600 {
			want = append(want, "flush")
		}
	}
	f.expect(t, want...)
	f.quiet(t)
}

// TestLane004FollowSeqGaps: seqs missing from the log (here: lines an
// earlier version's file lost, taken into the store) are skipped, and
// each line is sent with its own seq.
func TestLane004FollowSeqGaps(t *testing.T) {
	dir := t.TempDir()
	var file []byte
	for _, seq := range []uint64{1, 2, 5, 6, 9} {
		file = append(lane004.AppendEvent(file, l4Worker, seq, "turn/started", `{}`, l4Now), '\n')
	}
	if err := os.WriteFile(filepath.Join(dir, legacyEventsFile), file, 0o600); err != nil {
		t.Fatal(err)
	}
	store, err := OpenStore(dir, StoreConfig{Events: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	log, err := OpenEventLog(EventLogConfig{Store: store, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	e := newL4Env(t, store, log)
	f := l4Follow(t, e.lane, 0, nil)
	f.expect(t, "send 1", "send 2", "send 5", "send 6", "send 9", "flush")
	f.rewind <- 5
	f.expect(t, "send 6", "send 9", "flush")
	l4Event(log, 10)
	f.expect(t, "send 10", "flush")
}

// TestLane004FollowEmptyLog: a cursor of an earlier log, on a log that
// holds nothing, is stale once (resume_after 0), not at every turn of the
// loop; the stream then goes on from the first event.
func TestLane004FollowEmptyLog(t *testing.T) {
	log := l4Log(t, 0, 0)
	e := newL4Env(t, nil, log)
	f := l4Follow(t, e.lane, 5, nil)
	got := f.expect(t, "send 0", "flush")
	want := `{"event_type":"worker.cursor_stale","worker_id":"` + l4Worker + `","payload":{"after":5,"resume_after":0,"latest_seq":0,"occurred_at":` + l4At + `}}`
	if string(got[0]) != want {
		t.Errorf("stale line\n got %s\nwant %s", got[0], want)
	}
	f.quiet(t)
	l4Event(log, 1)
	f.expect(t, "send 1", "flush")
}

func TestLane004FollowEnds(t *testing.T) {
	t.Run("send fails", func(t *testing.T) {
		log := l4Log(t, 0, 5)
		e := newL4Env(t, nil, log)
		f := l4Follow(t, e.lane, 0, func(i int) bool { return i < 2 })
		f.expect(t, "send 1", "send 2")
		f.returns(t, "send returned false")
		if n := f.sends.Load(); n != 2 {
			t.Errorf("send called %d times, want 2", n)
		}
		select {
		case got := <-f.ev:
			t.Errorf("Follow did %q after send returned false", got)
		default:
		}
	})
	t.Run("send of the stale line fails", func(t *testing.T) {
		log := l4Log(t, 5, 20)
		e := newL4Env(t, nil, log)
		f := l4Follow(t, e.lane, 2, func(int) bool { return false })
		f.expect(t, "send 0")
		f.returns(t, "send returned false")
		if n := f.sends.Load(); n != 1 {
			t.Errorf("send called %d times, want 1", n)
		}
	})
	t.Run("flush fails", func(t *testing.T) {
		log := l4Log(t, 0, 2)
		e := newL4Env(t, nil, log)
		done := make(chan struct{})
		var flushes, sends atomic.Int32
		go func() {
			defer close(done)
			e.lane.Follow(0, func(uint64, []byte) bool { sends.Add(1); return true },
				func() bool { flushes.Add(1); return false }, nil, nil)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Follow did not return when flush returned false")
		}
		if sends.Load() != 2 || flushes.Load() != 1 {
			t.Errorf("sends %d, flushes %d; want 2 and 1", sends.Load(), flushes.Load())
		}
	})
	t.Run("stop", func(t *testing.T) {
		log := l4Log(t, 0, 1)
		e := newL4Env(t, nil, log)
		f := l4Follow(t, e.lane, 0, nil)
		f.expect(t, "send 1", "flush")
		f.quiet(t)
		f.stopFn()
		f.returns(t, "stop was closed")
	})
	t.Run("log closed", func(t *testing.T) {
		log := l4Log(t, 0, 1)
		e := newL4Env(t, nil, log)
		f := l4Follow(t, e.lane, 0, nil)
		f.expect(t, "send 1", "flush")
		f.quiet(t)
		if err := log.Close(); err != nil {
			t.Fatal(err)
		}
		f.returns(t, "the log was closed")
		if n := f.sends.Load(); n != 1 {
			t.Errorf("send called %d times, want 1", n)
		}
	})
	t.Run("log closed before", func(t *testing.T) {
		log := l4Log(t, 0, 3)
		e := newL4Env(t, nil, log)
		if err := log.Close(); err != nil {
			t.Fatal(err)
		}
		f := l4Follow(t, e.lane, 1, nil)
		f.expect(t, "send 2", "send 3", "flush")
		f.returns(t, "the log was closed")
	})
}
