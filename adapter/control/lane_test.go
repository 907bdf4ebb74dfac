package control

import (
	"bufio"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/mapping/lane000"
)

const testSession = "11111111-2222-4333-8444-555555555555"

// fakeTarget is a session whose loop is one goroutine: Submit hands it
// work, as Loop.Submit does. It records the prompts it took.
type fakeTarget struct {
	work    chan func()
	stopped chan struct{}
	prompts [][]byte // owned by the loop goroutine
	hold    bool     // never call done: the worker does not take input
	late    chan func()
}

func newFakeTarget(t testing.TB) *fakeTarget {
	f := &fakeTarget{work: make(chan func()), stopped: make(chan struct{}), late: make(chan func(), 16)}
	go func() {
		for fn := range f.work {
			fn()
		}
		close(f.stopped)
	}()
	t.Cleanup(func() { f.stop() })
	return f
}

var stopOnce sync.Map

func (f *fakeTarget) stop() {
	if _, done := stopOnce.LoadOrStore(f, true); !done {
		close(f.work)
		<-f.stopped
	}
}

func (f *fakeTarget) submit(fn func()) bool {
	select {
	case <-f.stopped:
		return false
	default:
	}
	defer func() { recover() }() // a send on the closed channel: the loop ended
	f.work <- fn
	return true
}

// count returns how many prompts the target took, asked on its loop.
func (f *fakeTarget) count() int {
	ch := make(chan int, 1)
	f.submit(func() { ch <- len(f.prompts) })
	return <-ch
}

func (f *fakeTarget) ControlSessionID() string  { return testSession }
func (f *fakeTarget) ControlState() WorkerState { return WorkerIdle }
func (f *fakeTarget) ControlInject(text []byte, interrupt bool, done func(lane000.Result, string)) {
	f.prompts = append(f.prompts, slices.Clone(text))
	if f.hold {
		f.late <- func() { done(lane000.OK, "sent") }
		return
	}
	done(lane000.OK, "sent")
}
func (f *fakeTarget) ControlInterrupt(done func(lane000.Result, string)) {
	done(lane000.OK, "no turn running")
}

func newTestLane(t testing.TB, f *fakeTarget, store Store) *Lane {
	if store == nil {
		store = NewMemoryStore(StoreConfig{})
	}
	t.Cleanup(func() { store.Close() })
	return NewLane(LaneConfig{
		Store:   store,
		Policy:  lane000.Policy{Team: "t", AgentID: "a1", Senders: []string{"boss"}, MaxAge: time.Minute, ClockSkew: time.Minute, SoftLimit: 64 << 10, HardLimit: 1 << 20},
		Timeout: time.Second,
		Target:  f,
		Submit:  f.submit,
	})
}

func stdinRequest(id, content string) []byte {
	return []byte(fmt.Sprintf(`{"type":"control.stdin.request","v":1,"request_id":%q,"team":"t","session_id":%q,"agent_id":"a1","sender":"boss","sent_at":%q,"content":%q}`,
		id, testSession, time.Now().UTC().Format(time.RFC3339), content))
}

// handle runs one line through the lane and returns its one answer.
func handle(l *Lane, line []byte) gjson.Result {
	var got [][]byte
	l.Handle(line, func(b []byte) { got = append(got, b) })
	if len(got) != 1 {
		panic(fmt.Sprintf("%d answers to one line", len(got)))
	}
	return gjson.ParseBytes(got[0])
}

func TestLaneInjectsOnceUnderConcurrentRetries(t *testing.T) {
	f := newFakeTarget(t)
	l := newTestLane(t, f, nil)
	var wg sync.WaitGroup
	var mu sync.Mutex
	fresh := 0
	for range 20 {
		wg.Go(func() {
			for range 50 {
				a := handle(l, stdinRequest("r1", "hello\nworld"))
				if a.Get("result").Str != "ok" {
					t.Errorf("ack %s", a.Raw)
				}
				if !a.Get("duplicate").Bool() {
					mu.Lock()
					fresh++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if n := f.count(); n != 1 || fresh != 1 {
		t.Fatalf("%d prompts taken and %d acks not duplicate for 1,000 sends of one request id, want 1 and 1", n, fresh)
	}
	if got := string(f.prompts[0]); got != "hello\nworld" {
		t.Errorf("prompt %q", got)
	}
}

func TestLaneTimeoutNeverInjectsTwice(t *testing.T) {
	f := newFakeTarget(t)
	f.hold = true
	l := newTestLane(t, f, nil)
	l.cfg.Timeout = 50 * time.Millisecond
	a := handle(l, stdinRequest("r1", "hi"))
	if a.Get("result").Str != "timeout" {
		t.Fatalf("ack %s, want timeout", a.Raw)
	}
	(<-f.late)() // the worker takes it after the ack said timeout
	if a := handle(l, stdinRequest("r1", "hi")); a.Get("result").Str != "ok" || !a.Get("duplicate").Bool() {
		t.Fatalf("the retry after a timeout: %s, want ok, duplicate", a.Raw)
	}
	if n := f.count(); n != 1 {
		t.Fatalf("%d prompts, want 1", n)
	}
}

func TestLaneRefusalsReleaseTheKey(t *testing.T) {
	f := newFakeTarget(t)
	l := newTestLane(t, f, nil)
	// A content_ref with no --ref-root is refused before anything runs
	// (Check), and so is one whose file is missing (ReadRef); neither
	// keeps the request id, so a fixed retry is judged anew.
	bad := []byte(fmt.Sprintf(`{"type":"control.stdin.request","v":1,"request_id":"r1","team":"t","session_id":%q,"agent_id":"a1","sender":"boss","sent_at":%q,"content_ref":{"path":"/nonexistent/x","size_bytes":3,"sha256":"%064d","mime":"text/plain"}}`,
		testSession, time.Now().UTC().Format(time.RFC3339), 0))
	if a := handle(l, bad); a.Get("result").Str != "rejected" {
		t.Fatalf("content_ref without roots: %s", a.Raw)
	}
	l.cfg.RefRoots = []string{t.TempDir()}
	l.cfg.Policy.RefsAllowed = true
	if a := handle(l, bad); a.Get("result").Str != "rejected" {
		t.Fatalf("content_ref outside the roots: %s", a.Raw)
	}
	if a := handle(l, stdinRequest("r1", "hi")); a.Get("result").Str != "ok" || a.Get("duplicate").Bool() {
		t.Fatalf("the same id after refusals: %s, want ok, not a duplicate", a.Raw)
	}
}

func TestLaneNotLiveOnceTheSessionEnded(t *testing.T) {
	f := newFakeTarget(t)
	l := newTestLane(t, f, nil)
	f.stop()
	if a := handle(l, stdinRequest("r1", "hi")); a.Get("result").Str != "not_live" {
		t.Fatalf("after the session ended: %s, want not_live", a.Raw)
	}
}

func TestLaneStoreFullIsBusy(t *testing.T) {
	f := newFakeTarget(t)
	f.hold = true
	l := newTestLane(t, f, NewMemoryStore(StoreConfig{MaxKeys: 1}))
	l.cfg.Timeout = 5 * time.Second
	first := make(chan gjson.Result, 1)
	go func() { first <- handle(l, stdinRequest("r1", "one")) }()
	for f.count() == 0 { // r1 is in flight: the worker holds it
		time.Sleep(time.Millisecond)
	}
	if a := handle(l, stdinRequest("r2", "two")); a.Get("result").Str != "busy" {
		t.Fatalf("a second request while the only slot is in flight: %s, want busy", a.Raw)
	}
	(<-f.late)()
	if a := <-first; a.Get("result").Str != "ok" {
		t.Fatalf("the first: %s", a.Raw)
	}
}

// BenchmarkLaneSocket measures the control plane as a controller sees it:
// a request over the unix socket, decoded, checked, deduplicated, handed
// to a session loop that takes it at once, and acked; one connection,
// one request in flight at a time. ns/op is the ack's round trip; the
// median and p99 are reported too.
func BenchmarkLaneSocket(b *testing.B) {
	for _, durable := range []bool{false, true} {
		for _, dup := range []bool{false, true} {
			name := map[bool]string{false: "memory", true: "state-dir"}[durable] + "/" + map[bool]string{false: "inline", true: "duplicate"}[dup]
			b.Run(name, func(b *testing.B) {
				f := newFakeTarget(b)
				var store Store = NewMemoryStore(StoreConfig{MaxKeys: 1 << 22})
				if durable {
					var err error
					if store, err = OpenStore(b.TempDir(), StoreConfig{MaxKeys: 1 << 22}); err != nil {
						b.Fatal(err)
					}
				}
				l := newTestLane(b, f, store)
				ln, err := Listen(filepath.Join(b.TempDir(), "c.sock"))
				if err != nil {
					b.Fatal(err)
				}
				defer ln.Close()
				go ln.Serve(1<<20, nil, l.Handle)
				c, err := net.Dial("unix", ln.Path())
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				r := bufio.NewReader(c)
				lines := make([][]byte, 0, b.N)
				for i := range b.N {
					id := "r" + fmt.Sprint(i)
					if dup {
						id = "r"
					}
					lines = append(lines, append(stdinRequest(id, "hello"), '\n'))
				}
				lat := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for i := range b.N {
					start := time.Now()
					if _, err := c.Write(lines[i]); err != nil {
						b.Fatal(err)
					}
					ack, err := r.ReadBytes('\n')
					if err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(start))
					if gjson.GetBytes(ack, "result").Str != "ok" {
						b.Fatalf("ack %s", ack)
					}
				}
				b.StopTimer()
				sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "acks/s")
			})
		}
	}
}

// subTarget is one session of a multiTarget; its methods run on the
// multiTarget's loop.
type subTarget struct {
	id      string
	prompts [][]byte
}

func (s *subTarget) ControlSessionID() string  { return s.id }
func (s *subTarget) ControlState() WorkerState { return WorkerIdle }
func (s *subTarget) ControlInject(text []byte, _ bool, done func(lane000.Result, string)) {
	s.prompts = append(s.prompts, slices.Clone(text))
	done(lane000.OK, "sent")
}
func (s *subTarget) ControlInterrupt(done func(lane000.Result, string)) {
	done(lane000.OK, "no turn running")
}

// multiTarget hosts several sessions, as the acp dialect does: its own
// methods are its first session's.
type multiTarget struct {
	*fakeTarget
	subs map[string]*subTarget
}

func (m *multiTarget) ControlSessions() []string {
	ids := []string{testSession}
	for id := range m.subs {
		ids = append(ids, id)
	}
	return ids
}

func (m *multiTarget) ControlSession(id string) (Target, bool) {
	s, ok := m.subs[id]
	if !ok {
		return nil, false
	}
	return s, true
}

func TestLaneAddressesEachSessionOfAMultiSessionTarget(t *testing.T) {
	const second = "99999999-8888-4777-8666-555555555555"
	f := newFakeTarget(t)
	m := &multiTarget{fakeTarget: f, subs: map[string]*subTarget{second: {id: second}}}
	l := newTestLane(t, f, nil)
	l.cfg.Target = m
	toSecond := []byte(strings.Replace(string(stdinRequest("r2", "for the second")), testSession, second, 1))
	if a := handle(l, toSecond); a.Get("result").Str != "ok" {
		t.Fatalf("a request for the second session: %s", a.Raw)
	}
	if a := handle(l, stdinRequest("r1", "for the first")); a.Get("result").Str != "ok" {
		t.Fatalf("a request for the first session: %s", a.Raw)
	}
	unknown := []byte(strings.Replace(string(stdinRequest("r3", "for nobody")), testSession, "00000000-0000-4000-8000-000000000000", 1))
	if a := handle(l, unknown); a.Get("result").Str != "not_found" {
		t.Fatalf("a request for a session nobody has: %s, want not_found", a.Raw)
	}
	got := make(chan [2]int, 1)
	f.submit(func() { got <- [2]int{len(f.prompts), len(m.subs[second].prompts)} })
	if n := <-got; n != [2]int{1, 1} {
		t.Fatalf("prompts taken by the first and the second session: %v, want one each", n)
	}
}
