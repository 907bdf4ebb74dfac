package control

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"weak"

	"github.com/tidwall/gjson"
	bolt "go.etcd.io/bbolt"
)

// evLine is a worker.event line of seq, shaped as lane 004 writes it.
func evLine(seq uint64) []byte {
	return fmt.Appendf(nil, `{"event_type":"worker.event","seq":%d,"worker_id":"w1","payload":{"method":"turn/progress","params":{"n":%d},"occurred_at":"2025-01-02T03:04:05.000Z"}}`, seq, seq)
}

// appendEvents appends n events built by evLine, checking each seq is the
// one after the last.
func appendEvents(t testing.TB, l *EventLog, n int) {
	t.Helper()
	for range n {
		want := l.Latest() + 1
		var given uint64
		got := l.Append(func(seq uint64) []byte { given = seq; return evLine(seq) })
		if got != want || given != want {
			t.Fatalf("Append gave seq %d to build and returned %d, want %d", given, got, want)
		}
	}
}

// seqsOf reads the top-level seq of each line.
func seqsOf(t testing.TB, lines [][]byte) []uint64 {
	t.Helper()
	var out []uint64
	for _, b := range lines {
		v := gjson.GetBytes(b, "seq")
		if v.Type != gjson.Number {
			t.Fatalf("line without a seq: %s", b)
		}
		out = append(out, v.Uint())
	}
	return out
}

// seqRange is first..last.
func seqRange(first, last uint64) []uint64 {
	var out []uint64
	for s := first; s <= last; s++ {
		out = append(out, s)
	}
	return out
}

// openLog opens an event log with a logger writing to the returned buffer;
// the log is closed at the end of the test.
func openLog(t testing.TB, cfg EventLogConfig) (*EventLog, *syncBuffer) {
	t.Helper()
	var out syncBuffer
	cfg.Logger = slog.New(slog.NewTextHandler(&out, nil))
	l, err := OpenEventLog(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, &out
}

func warnings(out *syncBuffer) int { return strings.Count(out.String(), "level=WARN") }

func TestEventLogSeqFromOne(t *testing.T) {
	l, _ := openLog(t, EventLogConfig{})
	if l.retain != DefaultRetain {
		t.Errorf("retain = %d, want DefaultRetain", l.retain)
	}
	if l.Latest() != 0 || l.Oldest() != 1 {
		t.Fatalf("empty log: Latest %d Oldest %d, want 0 and 1", l.Latest(), l.Oldest())
	}
	if lines, stale, resume := l.After(0, 0, nil); len(lines) != 0 || stale || resume != 0 {
		t.Fatalf("empty log After(0) = %d lines, stale %v, resume %d", len(lines), stale, resume)
	}
	appendEvents(t, l, 3) // checks 1, 2, 3
	if l.Latest() != 3 || l.Oldest() != 1 {
		t.Fatalf("Latest %d Oldest %d, want 3 and 1", l.Latest(), l.Oldest())
	}
	lines, _, _ := l.After(0, 0, nil)
	if !bytes.Equal(lines[0], evLine(1)) || !bytes.Equal(lines[2], evLine(3)) {
		t.Fatalf("lines are not the ones built: %q", lines)
	}
}

func TestEventLogAfterCursors(t *testing.T) {
	l, _ := openLog(t, EventLogConfig{Retain: 10})
	appendEvents(t, l, 25) // kept: 16..25
	if l.Oldest() != 16 || l.Latest() != 25 {
		t.Fatalf("Oldest %d Latest %d, want 16 and 25", l.Oldest(), l.Latest())
	}
	for _, tc := range []struct {
		name        string
		cursor      uint64
		first, last uint64 // lines first..last (none when first > last)
		stale       bool
		resume      uint64
	}{
		{"zero", 0, 16, 25, true, 15},
		{"older than kept", 14, 16, 25, true, 15},
		{"just before oldest", 15, 16, 25, false, 15},
		{"oldest", 16, 17, 25, false, 16},
		{"middle", 20, 21, 25, false, 20},
		{"latest", 25, 26, 25, false, 25},
		{"future", 26, 16, 25, true, 15},
		{"far future", 1 << 40, 16, 25, true, 15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines, stale, resume := l.After(tc.cursor, 0, nil)
			if stale != tc.stale || resume != tc.resume {
				t.Errorf("stale %v resume %d, want %v %d", stale, resume, tc.stale, tc.resume)
			}
			if got, want := seqsOf(t, lines), seqRange(tc.first, tc.last); !slices.Equal(got, want) {
				t.Errorf("seqs %v, want %v", got, want)
			}
		})
	}

	// A log that never wrapped: cursor 0 is not stale.
	m, _ := openLog(t, EventLogConfig{Retain: 100})
	appendEvents(t, m, 5)
	lines, stale, resume := m.After(0, 0, nil)
	if stale || resume != 0 || !slices.Equal(seqsOf(t, lines), seqRange(1, 5)) {
		t.Errorf("After(0) = %v stale %v resume %d", seqsOf(t, lines), stale, resume)
	}
	// An empty log and a cursor from an earlier life: stale, resume from 0.
	e, _ := openLog(t, EventLogConfig{})
	if lines, stale, resume := e.After(3, 0, nil); len(lines) != 0 || !stale || resume != 0 {
		t.Errorf("empty log After(3) = %d lines, stale %v, resume %d; want stale, 0", len(lines), stale, resume)
	}
}

func TestEventLogAfterMax(t *testing.T) {
	l, _ := openLog(t, EventLogConfig{Retain: 10})
	appendEvents(t, l, 25)
	for _, tc := range []struct {
		cursor      uint64
		max         int
		first, last uint64
	}{
		{16, 3, 17, 19},
		{16, 0, 17, 25},
		{16, -1, 17, 25},
		{16, 9, 17, 25},
		{16, 100, 17, 25},
		{24, 3, 25, 25},
		{0, 2, 16, 17}, // stale: the first after resumeAfter
	} {
		lines, _, _ := l.After(tc.cursor, tc.max, nil)
		if got, want := seqsOf(t, lines), seqRange(tc.first, tc.last); !slices.Equal(got, want) {
			t.Errorf("After(%d, max %d) = %v, want %v", tc.cursor, tc.max, got, want)
		}
	}
	// dst is appended to, not overwritten.
	dst := [][]byte{[]byte(`{"seq":999}`)}
	lines, _, _ := l.After(23, 0, dst)
	if got := seqsOf(t, lines); !slices.Equal(got, []uint64{999, 24, 25}) {
		t.Errorf("After onto dst = %v, want [999 24 25]", got)
	}
}

func TestEventLogChangedWakesWaiter(t *testing.T) {
	l, _ := openLog(t, EventLogConfig{})
	appendEvents(t, l, 1)
	ch := l.Changed()
	if l.Changed() != ch {
		t.Fatal("two Changed calls with no Append between gave different channels")
	}
	select {
	case <-ch:
		t.Fatal("Changed's channel is closed before any Append")
	default:
	}

	ready := make(chan struct{})
	got := make(chan []uint64)
	go func() {
		c := l.Changed() // taken before After, as a reader does
		lines, _, _ := l.After(1, 0, nil)
		close(ready)
		if len(lines) == 0 {
			<-c
			lines, _, _ = l.After(1, 0, nil)
		}
		got <- seqsOf(t, lines)
	}()
	<-ready
	appendEvents(t, l, 1)
	select {
	case seqs := <-got:
		if !slices.Equal(seqs, []uint64{2}) {
			t.Fatalf("the woken reader read %v, want [2]", seqs)
		}
	case <-time.After(10 * time.Second): // a guard against a hang, not synchronisation
		t.Fatal("the waiter was not woken by Append")
	}
	select {
	case <-ch:
	default:
		t.Fatal("the channel taken before Append is not closed")
	}
	if next := l.Changed(); next == ch {
		t.Fatal("Changed after Append returned the closed channel")
	}
}

// TestEventLogRingBounded: after 3×Retain appends only Retain lines are
// held, and the dropped lines are garbage (nothing keeps them alive).
func TestEventLogRingBounded(t *testing.T) {
	const retain = 100
	l, _ := openLog(t, EventLogConfig{Retain: retain})
	ptrs := make([]weak.Pointer[byte], 0, 3*retain)
	for range 3 * retain {
		l.Append(func(seq uint64) []byte {
			b := evLine(seq)
			ptrs = append(ptrs, weak.Make(&b[0]))
			return b
		})
	}
	if len(l.ring) != retain || cap(l.ring) != retain {
		t.Fatalf("ring len %d cap %d, want %d", len(l.ring), cap(l.ring), retain)
	}
	runtime.GC()
	for i, p := range ptrs[:2*retain] {
		if p.Value() != nil {
			t.Fatalf("line of seq %d was dropped but is still alive", i+1)
		}
	}
	for i, p := range ptrs[2*retain:] {
		if p.Value() == nil {
			t.Fatalf("kept line of seq %d was collected", 2*retain+i+1)
		}
	}
	lines, _, _ := l.After(0, 0, nil)
	if got := seqsOf(t, lines); !slices.Equal(got, seqRange(2*retain+1, 3*retain)) {
		t.Errorf("kept %v", got)
	}
	runtime.KeepAlive(l)
}

// openDurable opens a store that keeps events in dir and a log in it;
// both are closed at the end of the test.
func openDurable(t testing.TB, dir string, retain int) (*boltStore, *EventLog, *syncBuffer) {
	t.Helper()
	s, err := OpenStore(dir, StoreConfig{Events: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	l, out := openLog(t, EventLogConfig{Retain: retain, Store: s})
	return s.(*boltStore), l, out
}

// appendWait appends n events to a durable log and waits until they are
// readable.
func appendWait(t testing.TB, l *EventLog, n int) {
	t.Helper()
	var last uint64
	for range n {
		last = l.Append(evLine)
	}
	waitLatest(t, l, last)
}

// waitLatest waits until l's Latest is seq.
func waitLatest(t testing.TB, l *EventLog, seq uint64) {
	t.Helper()
	deadline := time.After(10 * time.Second) // a guard against a hang, not synchronisation
	for {
		ch := l.Changed()
		if got := l.Latest(); got == seq {
			return
		} else if got > seq {
			t.Fatalf("Latest %d, past %d", got, seq)
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("Latest %d, not %d within 10 s", l.Latest(), seq)
		}
	}
}

// storedLines is every line the store's events bucket holds, by seq.
func storedLines(t testing.TB, s *boltStore) map[uint64]string {
	t.Helper()
	out := map[uint64]string{}
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketEvents).ForEach(func(k, v []byte) error {
			out[binary.BigEndian.Uint64(k)] = string(v)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestEventLogCloseWakesWaiters(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(fmt.Sprintf("durable=%v", durable), func(t *testing.T) {
			var l *EventLog
			var s *boltStore
			if durable {
				s, l, _ = openDurable(t, t.TempDir(), 0)
				appendWait(t, l, 2)
			} else {
				l, _ = openLog(t, EventLogConfig{})
				appendEvents(t, l, 2)
			}
			done := make(chan struct{})
			c := l.Changed()
			go func() {
				<-c
				close(done)
			}()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			select {
			case <-done:
			case <-time.After(10 * time.Second): // a guard against a hang, not synchronisation
				t.Fatal("Close did not wake the waiter")
			}
			select {
			case <-l.Changed():
			default:
				t.Fatal("Changed after Close is not closed")
			}
			if err := l.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			// The kept events stay readable; an Append after Close stays in
			// memory.
			if got := l.Append(evLine); got != 3 {
				t.Errorf("Append after Close = %d, want 3", got)
			}
			lines, _, _ := l.After(0, 0, nil)
			if got := seqsOf(t, lines); !slices.Equal(got, seqRange(1, 3)) {
				t.Errorf("after Close: %v, want 1..3", got)
			}
			if durable {
				if n := len(storedLines(t, s)); n != 2 {
					t.Errorf("the store holds %d lines after Close and an Append, want 2", n)
				}
			}
		})
	}
}

// TestEventLogDurableReopen: the log kept in the store comes back with its
// last Retain lines and its seq; the store holds Retain lines at most.
func TestEventLogDurableReopen(t *testing.T) {
	dir := t.TempDir()
	s, l, _ := openDurable(t, dir, 10)
	appendWait(t, l, 25)
	if n := len(storedLines(t, s)); n != 10 {
		t.Errorf("the store holds %d lines, want 10", n)
	}
	l.Close()
	s.Close()

	s, r, out := openDurable(t, dir, 10)
	if r.Latest() != 25 || r.Oldest() != 16 {
		t.Fatalf("reopened: Latest %d Oldest %d, want 25 and 16", r.Latest(), r.Oldest())
	}
	lines, stale, resume := r.After(15, 0, nil)
	if stale || resume != 15 || len(lines) != 10 {
		t.Fatalf("After(15): %d lines, stale %v resume %d", len(lines), stale, resume)
	}
	for i, b := range lines {
		if want := evLine(uint64(16 + i)); !bytes.Equal(b, want) {
			t.Errorf("line %d = %s, want %s", i, b, want)
		}
	}
	if got := r.Append(evLine); got != 26 {
		t.Fatalf("Append after reopen = %d, want 26", got)
	}
	waitLatest(t, r, 26)
	if n := warnings(out); n != 0 {
		t.Errorf("warnings: %s", out.String())
	}
	r.Close()
	s.Close()

	// Retain lowered: the last 2 are read, and the next commit trims the
	// store to 2.
	s, r2, _ := openDurable(t, dir, 2)
	if r2.Latest() != 26 || r2.Oldest() != 25 {
		t.Errorf("Retain 2: Latest %d Oldest %d, want 26 and 25", r2.Latest(), r2.Oldest())
	}
	appendWait(t, r2, 1)
	if got := storedLines(t, s); len(got) != 2 || got[26] == "" || got[27] != string(evLine(27)) {
		t.Errorf("the store after a commit with Retain 2: %v", got)
	}
}

// failJournal is a store whose event commits can be made to fail (as a
// full disk makes them) or to wait.
type failJournal struct {
	*boltStore
	fail    atomic.Bool
	gate    chan struct{} // when not nil, a commit waits for it
	commits atomic.Int32
}

var errNoSpace = fmt.Errorf("write: %w", syscall.ENOSPC)

func (f *failJournal) appendEvents(lines []logEntry, keep int, fin *receiptFinish) error {
	if f.gate != nil {
		<-f.gate
	}
	if f.fail.Load() {
		return errNoSpace
	}
	f.commits.Add(1)
	return f.boltStore.appendEvents(lines, keep, fin)
}

func openFailing(t *testing.T, retain int) (*failJournal, *EventLog, *syncBuffer) {
	t.Helper()
	s, err := OpenStore(t.TempDir(), StoreConfig{Events: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	f := &failJournal{boltStore: s.(*boltStore)}
	l, out := openLog(t, EventLogConfig{Retain: retain, Store: f})
	return f, l, out
}

// TestEventLogDurableShownOnceCommitted: a progress event is readable
// only once committed, and those that come during a commit are committed
// together after it.
func TestEventLogDurableShownOnceCommitted(t *testing.T) {
	f, l, _ := openFailing(t, 0)
	f.gate = make(chan struct{})
	if got := l.Append(evLine); got != 1 {
		t.Fatalf("Append = %d, want 1", got)
	}
	for i := uint64(2); i <= 5; i++ {
		if got := l.Append(evLine); got != i {
			t.Fatalf("Append = %d, want %d", got, i)
		}
	}
	time.Sleep(50 * time.Millisecond) // time for a wrong show; the check below holds without it
	if lines, _, _ := l.After(0, 0, nil); l.Latest() != 0 || len(lines) != 0 {
		t.Fatalf("before the commit: Latest %d, %d lines readable", l.Latest(), len(lines))
	}
	close(f.gate)
	waitLatest(t, l, 5)
	lines, _, _ := l.After(0, 0, nil)
	if got := seqsOf(t, lines); !slices.Equal(got, seqRange(1, 5)) {
		t.Errorf("readable %v, want 1..5", got)
	}
	if n := f.commits.Load(); n > 2 {
		t.Errorf("%d commits for 5 events that came during one, want at most 2", n)
	}
	if got := storedLines(t, f.boltStore); len(got) != 5 {
		t.Errorf("the store holds %d lines, want 5", len(got))
	}
}

// TestEventLogDurableCommitFails: while commits fail, nothing new is
// readable and a receipt records nothing (an error, its entry still in
// flight, its seq given again); events wait, at most Retain of them, and
// are shown once a commit works again.
func TestEventLogDurableCommitFails(t *testing.T) {
	f, l, out := openFailing(t, 5)
	appendWait(t, l, 1)
	f.fail.Store(true)
	for range 3 {
		l.Append(evLine) // 2, 3, 4: waiting
	}
	k := Key{Lane: "004", AgentID: "w1", RequestID: "r-1"}
	if _, fresh, err := f.Begin(k, t0); err != nil || !fresh {
		t.Fatalf("Begin: %v %v", fresh, err)
	}
	var built []uint64
	line, err := l.AppendReceipt(f, k, "ok", t0, func(seq uint64) []byte { built = append(built, seq); return evLine(seq) })
	if !errors.Is(err, syscall.ENOSPC) || line != nil {
		t.Fatalf("AppendReceipt on a full disk: %q, %v; want ENOSPC", line, err)
	}
	if prev, fresh, err := f.Begin(k, t0); err != nil || fresh || !prev.InFlight {
		t.Errorf("the receipt's entry after the failed commit: %+v fresh %v %v; want still in flight", prev, fresh, err)
	}
	if l.Latest() != 1 {
		t.Errorf("Latest %d after failed commits, want 1", l.Latest())
	}
	for range 6 {
		l.Append(evLine) // 5..10: beyond Retain waiting, 2..5 go
	}
	f.fail.Store(false)
	waitLatest(t, l, 10)
	lines, _, _ := l.After(0, 0, nil)
	if got := seqsOf(t, lines); !slices.Equal(got, seqRange(6, 10)) {
		t.Errorf("readable %v, want 6..10 (Retain 5; 2..5 dropped while waiting)", got)
	}
	line, err = l.AppendReceipt(f, k, "ok", t0, func(seq uint64) []byte { built = append(built, seq); return evLine(seq) })
	if err != nil || !bytes.Equal(line, evLine(11)) {
		t.Fatalf("AppendReceipt once commits work: %s, %v; want seq 11", line, err)
	}
	if !slices.Equal(built, []uint64{5, 11}) {
		t.Errorf("the receipt was built for seqs %v, want [5 11] (its first seq, 5, went to the next event)", built)
	}
	if prev, _, _ := f.Begin(k, t0); prev.InFlight || prev.Outcome.Detail != string(line) {
		t.Errorf("the entry after the receipt: %+v", prev)
	}
	if got := storedLines(t, f.boltStore); len(got) != 5 || got[11] != string(line) || got[2] != "" {
		t.Errorf("the store holds %v", got)
	}
	if n := warnings(out); n != 2 || !strings.Contains(out.String(), "cannot record events") || !strings.Contains(out.String(), "dropped=4") {
		t.Errorf("want a warning for the failures and one for the recovery with 4 dropped: %s", out.String())
	}
}

// TestEventLogDurableReceiptSeqGivenAgain: a receipt whose commit failed
// leaves no gap when nothing took a seq after it.
func TestEventLogDurableReceiptSeqGivenAgain(t *testing.T) {
	f, l, _ := openFailing(t, 0)
	k := Key{Lane: "004", RequestID: "r"}
	f.Begin(k, t0)
	f.fail.Store(true)
	if _, err := l.AppendReceipt(f, k, "ok", t0, evLine); err == nil {
		t.Fatal("AppendReceipt succeeded on a failing store")
	}
	f.fail.Store(false)
	line, err := l.AppendReceipt(f, k, "ok", t0, evLine)
	if err != nil || gjson.GetBytes(line, "seq").Uint() != 1 || l.Latest() != 1 {
		t.Errorf("after the failure: %s, %v, Latest %d; want seq 1", line, err, l.Latest())
	}
	// Another store's receipt is refused.
	other := NewMemoryStore(StoreConfig{})
	other.Begin(k, t0)
	if _, err := l.AppendReceipt(other, k, "ok", t0, evLine); err == nil {
		t.Error("a receipt for another store than the log's was taken")
	}
}

// TestEventLogDurableReceiptAtomic: a receipt's line, the seq it took and
// its entry are in the store together; a receipt whose entry is not in
// flight (ErrNoEntry) records no line either.
func TestEventLogDurableReceiptAtomic(t *testing.T) {
	dir := t.TempDir()
	s, l, _ := openDurable(t, dir, 0)
	appendWait(t, l, 2)
	k := Key{Lane: "004", AgentID: "w1", RequestID: "r-1"}
	wantFresh(t, s, k, t0)
	line, err := l.AppendReceipt(s, k, "ok", t0, evLine)
	if err != nil || gjson.GetBytes(line, "seq").Uint() != 3 {
		t.Fatalf("AppendReceipt: %s, %v", line, err)
	}
	if _, err := l.AppendReceipt(s, key("never begun"), "ok", t0, evLine); !errors.Is(err, ErrNoEntry) {
		t.Errorf("a receipt without an entry: %v, want ErrNoEntry", err)
	}
	l.Append(evLine)
	waitLatest(t, l, 4)
	// No Close of the log or the store: as after kill -9, what is
	// committed is there.
	s.db.Close()
	s2, err := OpenStore(dir, StoreConfig{Events: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if prev := wantDup(t, s2, k, t0); prev.InFlight || prev.Outcome.Detail != string(line) {
		t.Errorf("the entry after reopening: %+v", prev)
	}
	if got := storedLines(t, s2.(*boltStore)); len(got) != 4 || got[3] != string(line) {
		t.Errorf("the lines after reopening: %v", got)
	}
	r, _ := openLog(t, EventLogConfig{Store: s2})
	if r.Latest() != 4 {
		t.Errorf("Latest after reopening %d, want 4", r.Latest())
	}
}

// TestEventLogLegacyFile: a store an earlier version kept beside its
// events.ndjson takes the file's good lines in, once, and its seq goes on
// after both the file's last line and the highest seq a receipt names
// (the file may have lost lines its receipts name: issue #26).
func TestEventLogLegacyFile(t *testing.T) {
	dir := t.TempDir()
	old, err := OpenStore(dir, StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	k := Key{Lane: "004", AgentID: "w1", RequestID: "r-9"}
	wantFresh(t, old, k, t0)
	receipt := `{"event_type":"worker.response","seq":9,"worker_id":"w1","payload":{"request_id":"r-9","method":"thread/list","ok":true,"response":{}}}`
	mustFinish(t, old, k, Outcome{Result: "ok", Detail: receipt, At: t0})
	old.Close()
	var file []byte
	for _, seq := range []uint64{1, 2, 5, 6} {
		file = append(append(file, evLine(seq)...), '\n')
	}
	file = append(file, "not json\n"...)
	file = append(file, `{"event_type":"worker.event","seq":7,"wor`...) // torn
	path := filepath.Join(dir, legacyEventsFile)
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	s, l, _ := openDurable(t, dir, 0)
	lines, _, _ := l.After(0, 0, nil)
	if got := seqsOf(t, lines); !slices.Equal(got, []uint64{1, 2, 5, 6}) || l.Latest() != 9 {
		t.Errorf("taken in: %v, Latest %d; want [1 2 5 6] and 9", got, l.Latest())
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the old file is still there: %v", err)
	}
	if got := l.Append(evLine); got != 10 {
		t.Errorf("the next seq %d, want 10", got)
	}
	waitLatest(t, l, 10)
	l.Close()
	s.Close()
	// Once: a file written now is not read again.
	if err := os.WriteFile(path, evLine(50), 0o600); err != nil {
		t.Fatal(err)
	}
	_, l, _ = openDurable(t, dir, 0)
	if l.Latest() != 10 {
		t.Errorf("after a second open: Latest %d, want 10", l.Latest())
	}
}

// TestEventLogConcurrent runs one writer and several readers following it
// from their cursors, in memory and kept in a store; run it under -race.
func TestEventLogConcurrent(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(fmt.Sprintf("durable=%v", durable), func(t *testing.T) {
			var l *EventLog
			var out *syncBuffer
			if durable {
				_, l, out = openDurable(t, t.TempDir(), 50)
			} else {
				l, out = openLog(t, EventLogConfig{Retain: 50})
			}
			total := uint64(3000)
			if durable {
				total = 600 // every commit is fsynced
			}
			const readers = 4
			var wg sync.WaitGroup
			errs := make(chan error, readers)
			for r := range readers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var cursor uint64
					var buf [][]byte
					for cursor < total {
						ch := l.Changed()
						lines, stale, resume := l.After(cursor, 7*(r+1), buf[:0])
						if stale {
							if resume < cursor {
								errs <- fmt.Errorf("reader %d: stale resume %d behind cursor %d", r, resume, cursor)
								return
							}
							cursor = resume
						}
						for _, b := range lines {
							seq := gjson.GetBytes(b, "seq").Uint()
							if seq != cursor+1 || !bytes.Equal(b, evLine(seq)) {
								errs <- fmt.Errorf("reader %d: after %d got %s", r, cursor, b)
								return
							}
							cursor = seq
						}
						if len(lines) == 0 {
							<-ch
						}
						l.Latest()
						l.Oldest()
						buf = lines
					}
				}()
			}
			for range total {
				l.Append(evLine)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if l.Latest() != total || l.Oldest() != total-50+1 {
				t.Errorf("Latest %d Oldest %d", l.Latest(), l.Oldest())
			}
			if n := warnings(out); n != 0 {
				t.Errorf("warnings: %s", out.String())
			}
		})
	}
}

// BenchmarkEventLogAppend measures Append of a ~190-byte line: in
// memory (one allocation per op, the line build makes, as a caller's
// does), and kept in a store (in the test's temp dir: set TMPDIR to
// measure another disk), where an op is one line readable, committed on
// its own ("store/1") or with 99 others that came meanwhile ("store/100",
// per line).
func BenchmarkEventLogAppend(b *testing.B) {
	build := func(seq uint64) []byte {
		line := make([]byte, 0, 192)
		line = append(line, `{"event_type":"worker.event","seq":`...)
		line = strconv.AppendUint(line, seq, 10)
		return append(line, `,"worker_id":"w1","payload":{"method":"turn/progress","params":{"delta":"hello"},"occurred_at":"2025-01-02T03:04:05.000Z"}}`...)
	}
	b.Run("memory", func(b *testing.B) {
		l, _ := openLog(b, EventLogConfig{})
		b.ReportAllocs()
		for b.Loop() {
			l.Append(build)
		}
	})
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprintf("store/%d", batch), func(b *testing.B) {
			_, l, _ := openDurable(b, b.TempDir(), 0)
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				last := l.Append(build)
				if n++; n%batch == 0 {
					waitLatest(b, l, last)
				}
			}
		})
	}
}

// TestEventLogRetainBytes: with RetainBytes the kept lines hold at most
// that many bytes (the newest is kept whatever its size); the dropped
// lines are garbage; a cursor before them is stale.
func TestEventLogRetainBytes(t *testing.T) {
	size := int64(len(evLine(100)))
	budget := 10 * size
	l, _ := openLog(t, EventLogConfig{Retain: 1000, RetainBytes: budget})
	var ptrs []weak.Pointer[byte]
	for range 100 {
		l.Append(func(seq uint64) []byte {
			b := evLine(seq)
			ptrs = append(ptrs, weak.Make(&b[0]))
			return b
		})
	}
	lines, stale, after := l.After(0, 0, nil)
	var held int64
	for _, b := range lines {
		held += int64(len(b))
	}
	if !stale || held > budget || len(lines) < 9 || after != l.Oldest()-1 || l.Oldest()+uint64(len(lines)) != 101 {
		t.Fatalf("kept %d lines of %d bytes (budget %d), stale %v after %d, oldest %d", len(lines), held, budget, stale, after, l.Oldest())
	}
	runtime.GC()
	for i, p := range ptrs[:int(l.Oldest())-1] {
		if p.Value() != nil {
			t.Fatalf("line of seq %d was dropped but is still alive", i+1)
		}
	}
	// A line over the budget is kept alone.
	big := bytes.Repeat([]byte("x"), int(2*budget))
	seq := l.Append(func(seq uint64) []byte { return fmt.Appendf(nil, `{"seq":%d,"big":"%s"}`, seq, big) })
	if lines, _, _ := l.After(0, 0, nil); len(lines) != 1 || l.Oldest() != seq {
		t.Errorf("after a line over the budget: %d lines kept, oldest %d, want only %d", len(lines), l.Oldest(), seq)
	}
}
