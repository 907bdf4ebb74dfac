package control

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/tidwall/gjson"
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

// fileLines returns the lines of the file at path (each without its
// newline) and whether the file ends with a newline.
func fileLines(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		return nil
	}
	if b[len(b)-1] != '\n' {
		t.Fatalf("file %s does not end with a newline: %q", path, b)
	}
	return strings.Split(string(b[:len(b)-1]), "\n")
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

func TestEventLogCloseWakesWaiters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.ndjson")
	l, _ := openLog(t, EventLogConfig{Path: path})
	appendEvents(t, l, 2)
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
	// The kept events stay readable; an Append after Close stays in memory.
	if got := l.Append(evLine); got != 3 {
		t.Errorf("Append after Close = %d, want 3", got)
	}
	lines, _, _ := l.After(0, 0, nil)
	if got := seqsOf(t, lines); !slices.Equal(got, seqRange(1, 3)) {
		t.Errorf("after Close: %v, want 1..3", got)
	}
	if n := len(fileLines(t, path)); n != 2 {
		t.Errorf("file has %d lines after Close and an Append, want 2", n)
	}
}

func TestEventLogReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "workers")
	path := filepath.Join(dir, "w1.ndjson")
	l, _ := openLog(t, EventLogConfig{Retain: 10, Path: path})
	appendEvents(t, l, 25)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v (%v), want 0600", fi.Mode(), err)
	}
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("folder %s mode %v (%v), want 0700", d, fi.Mode(), err)
		}
	}

	r, out := openLog(t, EventLogConfig{Retain: 10, Path: path})
	if r.Latest() != 25 || r.Oldest() != 16 {
		t.Fatalf("reopened: Latest %d Oldest %d, want 25 and 16", r.Latest(), r.Oldest())
	}
	lines, stale, resume := r.After(15, 0, nil)
	if stale || resume != 15 {
		t.Errorf("After(15): stale %v resume %d", stale, resume)
	}
	if len(lines) != 10 {
		t.Fatalf("reopened: %d lines, want 10", len(lines))
	}
	for i, b := range lines {
		if want := evLine(uint64(16 + i)); !bytes.Equal(b, want) {
			t.Errorf("line %d = %s, want %s", i, b, want)
		}
	}
	if got := r.Append(evLine); got != 26 {
		t.Fatalf("Append after reopen = %d, want 26", got)
	}
	if n := warnings(out); n != 0 {
		t.Errorf("%d warnings reopening a good file: %s", n, out.String())
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r2, _ := openLog(t, EventLogConfig{Retain: 10, Path: path})
	if r2.Latest() != 26 || r2.Oldest() != 17 {
		t.Errorf("second reopen: Latest %d Oldest %d, want 26 and 17", r2.Latest(), r2.Oldest())
	}
}

func TestEventLogTornLastLine(t *testing.T) {
	good := string(evLine(1)) + "\n" + string(evLine(2)) + "\n" + string(evLine(3)) + "\n"
	for _, tc := range []struct{ name, tail string }{
		{"cut mid-line", `{"event_type":"worker.event","seq":4,"work`},
		{"whole object but no newline", string(evLine(4))},
		{"not JSON", "garbage\n"},
		{"no seq", `{"event_type":"worker.event","worker_id":"w1"}` + "\n"},
		{"seq not a number", `{"seq":"4"}` + "\n"},
		{"seq not an integer", `{"seq":4.5}` + "\n"},
		{"seq not increasing", string(evLine(3)) + "\n"},
		{"two bad lines", string(evLine(2)) + "\n" + `{"seq":5,`},
		{"empty line", "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.ndjson")
			if err := os.WriteFile(path, []byte(good+tc.tail), 0o600); err != nil {
				t.Fatal(err)
			}
			l, out := openLog(t, EventLogConfig{Path: path})
			if l.Latest() != 3 || l.Oldest() != 1 {
				t.Errorf("Latest %d Oldest %d, want 3 and 1", l.Latest(), l.Oldest())
			}
			if !strings.Contains(out.String(), "truncated to the last good line") {
				t.Errorf("no warning about the torn line: %q", out.String())
			}
			if b, _ := os.ReadFile(path); string(b) != good {
				t.Errorf("file not truncated to the good lines:\n%s", b)
			}
			if got := l.Append(evLine); got != 4 {
				t.Errorf("next Append = %d, want 4", got)
			}
			if got := fileLines(t, path); len(got) != 4 || got[3] != string(evLine(4)) {
				t.Errorf("file after Append: %q", got)
			}
		})
	}
}

func TestEventLogDropsNonIncreasing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.ndjson")
	var b []byte
	for _, s := range []uint64{1, 2, 2, 5, 3} {
		b = append(append(b, evLine(s)...), '\n')
	}
	b = append(b, "not json\n"...)
	b = append(append(b, evLine(6)...), '\n')
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	l, out := openLog(t, EventLogConfig{Path: path})
	if l.Latest() != 6 || l.Oldest() != 1 {
		t.Fatalf("Latest %d Oldest %d, want 6 and 1", l.Latest(), l.Oldest())
	}
	lines, _, _ := l.After(0, 0, nil)
	if got := seqsOf(t, lines); !slices.Equal(got, []uint64{1, 2, 5, 6}) {
		t.Errorf("kept %v, want [1 2 5 6]", got)
	}
	// The gap 3..4 is skipped; a cursor in it is not stale.
	lines, stale, _ := l.After(3, 0, nil)
	if got := seqsOf(t, lines); stale || !slices.Equal(got, []uint64{5, 6}) {
		t.Errorf("After(3) = %v stale %v, want [5 6] not stale", got, stale)
	}
	if n := warnings(out); n != 3 {
		t.Errorf("%d warnings, want 3 (one per dropped line): %s", n, out.String())
	}
	var want []string
	for _, s := range []uint64{1, 2, 5, 6} {
		want = append(want, string(evLine(s)))
	}
	if got := fileLines(t, path); !slices.Equal(got, want) {
		t.Errorf("file not rewritten without the dropped lines:\n%q", got)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("rewritten file mode %v (%v), want 0600", fi.Mode(), err)
	}
}

func TestEventLogCompactionBound(t *testing.T) {
	const retain = 5
	dir := t.TempDir()
	path := filepath.Join(dir, "events.ndjson")
	l, out := openLog(t, EventLogConfig{Retain: retain, Path: path})
	shrank := false
	for i := 1; i <= 60; i++ {
		appendEvents(t, l, 1)
		lines := fileLines(t, path)
		if len(lines) > 2*retain+1 {
			t.Fatalf("after %d appends the file holds %d lines, more than 2×Retain+1", i, len(lines))
		}
		if len(lines) < i && len(lines) < 2*retain {
			shrank = true
		}
		if last := lines[len(lines)-1]; last != string(evLine(uint64(i))) {
			t.Fatalf("after %d appends the file ends with %s", i, last)
		}
		if got := seqsOf(t, toBytes(lines)); !slices.Equal(got, seqRange(uint64(i-len(lines)+1), uint64(i))) {
			t.Fatalf("after %d appends the file holds seqs %v", i, got)
		}
	}
	if !shrank {
		t.Error("the file was never compacted")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temp files left beside the log: %v", entries)
	}
	if n := warnings(out); n != 0 {
		t.Errorf("warnings: %s", out.String())
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("compacted file mode %v (%v), want 0600", fi.Mode(), err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	r, _ := openLog(t, EventLogConfig{Retain: retain, Path: path})
	if r.Latest() != 60 || r.Oldest() != 56 {
		t.Fatalf("reopened: Latest %d Oldest %d, want 60 and 56", r.Latest(), r.Oldest())
	}
	lines, _, _ := r.After(55, 0, nil)
	for i, b := range lines {
		if want := evLine(uint64(56 + i)); !bytes.Equal(b, want) {
			t.Errorf("reopened line %d = %s, want %s", i, b, want)
		}
	}
	if r.Append(evLine) != 61 {
		t.Error("seq does not go on after compaction and reopen")
	}

	// A file left longer than 2×Retain (Retain lowered) is compacted on open.
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	s, _ := openLog(t, EventLogConfig{Retain: 2, Path: path})
	if got := len(fileLines(t, path)); got != 2 || s.Oldest() != 60 || s.Latest() != 61 {
		t.Errorf("Retain 2 reopen: %d file lines, Oldest %d, Latest %d; want 2, 60, 61", got, s.Oldest(), s.Latest())
	}
}

func toBytes(lines []string) [][]byte {
	out := make([][]byte, len(lines))
	for i, s := range lines {
		out[i] = []byte(s)
	}
	return out
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

// TestEventLogConcurrent runs one writer and several readers following it
// from their cursors; run it under -race.
func TestEventLogConcurrent(t *testing.T) {
	for _, withFile := range []bool{false, true} {
		t.Run(fmt.Sprintf("file=%v", withFile), func(t *testing.T) {
			cfg := EventLogConfig{Retain: 50}
			if withFile {
				cfg.Path = filepath.Join(t.TempDir(), "events.ndjson")
			}
			l, out := openLog(t, cfg)
			const total = 3000
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
			if withFile {
				if n := len(fileLines(t, cfg.Path)); n > 2*50+1 {
					t.Errorf("file holds %d lines", n)
				}
			}
			if n := warnings(out); n != 0 {
				t.Errorf("warnings: %s", out.String())
			}
		})
	}
}

// TestEventLogUnwritableFile: a file that cannot be written is warned of
// once and the log goes on in memory.
func TestEventLogUnwritableFile(t *testing.T) {
	for _, tc := range []struct {
		name      string
		breakFile func(t *testing.T, l *EventLog)
	}{
		{"read-only handle", func(t *testing.T, l *EventLog) {
			// As a full disk or a lost device: every write fails.
			ro, err := os.Open(l.path)
			if err != nil {
				t.Fatal(err)
			}
			l.f.Close()
			l.f = ro
		}},
		{"closed", func(t *testing.T, l *EventLog) { l.f.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.ndjson")
			l, out := openLog(t, EventLogConfig{Retain: 4, Path: path})
			appendEvents(t, l, 3)
			tc.breakFile(t, l)
			appendEvents(t, l, 20) // passes compaction's threshold too
			if n := warnings(out); n != 1 || !strings.Contains(out.String(), "memory only") {
				t.Errorf("%d warnings, want 1 saying memory only: %s", n, out.String())
			}
			if l.Latest() != 23 || l.Oldest() != 20 {
				t.Errorf("Latest %d Oldest %d, want 23 and 20", l.Latest(), l.Oldest())
			}
			lines, _, _ := l.After(19, 0, nil)
			if got := seqsOf(t, lines); !slices.Equal(got, seqRange(20, 23)) {
				t.Errorf("in memory: %v, want 20..23", got)
			}
			if got := fileLines(t, path); len(got) != 3 {
				t.Errorf("file has %d lines, want the 3 written before it broke", len(got))
			}
			if err := l.Close(); err != nil {
				t.Errorf("Close after the file was given up: %v", err)
			}
		})
	}
}

func TestEventLogOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := OpenEventLog(EventLogConfig{Path: dir}); err == nil {
		t.Error("a folder as the log's path: no error")
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenEventLog(EventLogConfig{Path: filepath.Join(file, "events.ndjson")}); err == nil {
		t.Error("a path under a file: no error")
	}
}

// BenchmarkEventLogAppend measures Append of a ~190-byte line, in memory
// and with a file (in the test's temp dir: set TMPDIR to measure another
// disk), compactions included. One allocation per op is the line that
// build makes, as a caller's does.
func BenchmarkEventLogAppend(b *testing.B) {
	for _, withFile := range []bool{false, true} {
		name := "memory"
		if withFile {
			name = "file"
		}
		b.Run(name, func(b *testing.B) {
			cfg := EventLogConfig{}
			if withFile {
				cfg.Path = filepath.Join(b.TempDir(), "events.ndjson")
			}
			l, _ := openLog(b, cfg)
			build := func(seq uint64) []byte {
				line := make([]byte, 0, 192)
				line = append(line, `{"event_type":"worker.event","seq":`...)
				line = strconv.AppendUint(line, seq, 10)
				return append(line, `,"worker_id":"w1","payload":{"method":"turn/progress","params":{"delta":"hello"},"occurred_at":"2025-01-02T03:04:05.000Z"}}`...)
			}
			b.ReportAllocs()
			for b.Loop() {
				l.Append(build)
			}
		})
	}
}

// TestEventLogRetainBytes: with RetainBytes the kept lines hold at most
// that many bytes (the newest is kept whatever its size); the dropped
// lines are garbage; a cursor before them is stale; the file is compacted
// by bytes too and a reopened log keeps the same bound.
func TestEventLogRetainBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.ndjson")
	size := int64(len(evLine(100)))
	budget := 10 * size
	l, _ := openLog(t, EventLogConfig{Retain: 1000, RetainBytes: budget, Path: path})
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
	if fl := fileLines(t, path); int64(len(fl))*size > 3*budget {
		t.Errorf("the file holds %d lines: not compacted by bytes", len(fl))
	}
	// A line over the budget is kept alone.
	big := bytes.Repeat([]byte("x"), int(2*budget))
	seq := l.Append(func(seq uint64) []byte { return fmt.Appendf(nil, `{"seq":%d,"big":"%s"}`, seq, big) })
	if lines, _, _ := l.After(0, 0, nil); len(lines) != 1 || l.Oldest() != seq {
		t.Errorf("after a line over the budget: %d lines kept, oldest %d, want only %d", len(lines), l.Oldest(), seq)
	}
	appendEvents(t, l, 3)
	l.Close()
	r, _ := openLog(t, EventLogConfig{Retain: 1000, RetainBytes: budget, Path: path})
	lines, _, _ = r.After(0, 0, nil)
	if got := seqsOf(t, lines); !slices.Equal(got, seqRange(seq+1, seq+3)) || r.Latest() != seq+3 {
		t.Errorf("reopened: kept %v, latest %d", got, r.Latest())
	}
}
