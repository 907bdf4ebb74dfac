package control

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"

	"github.com/tidwall/gjson"
)

// The worker lane's event log. Every receipt (worker.response,
// worker.error) and progress event (worker.event) of one worker gets the
// next sequence number, seq 1, 2, …, and the last Retain events are kept so
// that a client can replay from its cursor (the last seq it saw). With
// RetainBytes the kept lines are bounded in bytes too: the oldest are
// dropped once they hold more (ccbridge serve's web sessions, whose lines
// may be many megabytes each).
//
// With a Path the log is also an NDJSON file, one event line per line, so
// that the seq goes on across restarts and replay survives them. Lines are
// appended with one write each and no fsync: a crash of the machine (not
// of the process) can lose the last lines, and their seqs are then given
// again. The file is rewritten with only the kept lines (compacted) when it
// holds more than 2×Retain lines, so it stays bounded.
//
// The file is never read back while the log is open: readers are served
// from memory. A file that cannot be written (disk full, removed device)
// costs the persistence, never the worker: the log warns once and goes on
// in memory.

// DefaultRetain is how many events an EventLog keeps for replay when
// EventLogConfig.Retain is zero.
const DefaultRetain = 10000

// EventLogConfig configures an EventLog. Zero fields take defaults.
type EventLogConfig struct {
	// Retain is how many events are kept for replay (DefaultRetain when
	// zero or negative).
	Retain int
	// RetainBytes bounds the bytes of the event lines kept: once they
	// hold more, the oldest are dropped, and their references with them
	// (the newest line is kept whatever its size). Zero or negative: no
	// bound but Retain.
	RetainBytes int64
	// Path is the log's NDJSON file: "" keeps the log in memory only. The
	// file is created with mode 0600, its missing parent folders with 0700.
	Path string
	// Logger receives the warnings (dropped lines, a file that cannot be
	// written). nil: slog.Default().
	Logger *slog.Logger
}

// eventLogWriteBuf bounds the write buffer an EventLog keeps between
// Appends: a larger line is written through a buffer made for it alone.
const eventLogWriteBuf = 64 << 10

// eventLogOpenWarnings bounds the per-line warnings OpenEventLog logs
// about a damaged file; the rest are counted in one warning.
const eventLogOpenWarnings = 10

// closedChan is the channel Changed returns once the log is closed.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// logEntry is one kept event.
type logEntry struct {
	seq  uint64
	line []byte
}

// EventLog is one worker's event log: sequence numbers and the ring of the
// last Retain event lines, optionally kept in an NDJSON file. It is safe
// for concurrent use; it is meant for one writer (the session's loop,
// calling Append) and many readers (After, Changed, Latest, Oldest from
// HTTP handlers and socket connections). Lines handed in and out are
// shared, never copied: nobody may modify them.
type EventLog struct {
	retain      int
	retainBytes int64
	path        string
	log         *slog.Logger

	// wmu serialises Append, compaction and Close: the writer's disk work
	// happens under it, never under mu, so readers do not wait for the disk.
	// It guards f, fileLines, fileBytes and wbuf. ring, start, n, bytes
	// and latest change only under both locks, so either one suffices to
	// read them.
	wmu       sync.Mutex
	f         *os.File // nil: in memory (no Path, the file failed, or closed)
	fileLines int      // lines in the file
	fileBytes int64    // bytes in the file
	wbuf      []byte   // reused for line+"\n"

	mu sync.Mutex
	// ring holds the kept entries, at most retain: n of them from
	// ring[start] on, wrapping around; bytes is the sum of their lines'
	// lengths. An empty slot holds nothing.
	ring    []logEntry
	start   int
	n       int
	bytes   int64
	latest  uint64
	changed chan struct{} // nil until a reader asks; closed by the next Append
	closed  bool
}

// OpenEventLog opens an event log. With a Path it reads the file (created
// when missing), keeps its last Retain lines and continues the seq after
// the last line's top-level "seq". Damaged lines are dropped with a
// warning: a torn last line (no trailing newline, not valid JSON, or no
// positive integer seq) is cut off the file, which is truncated to its
// last good line; a line whose seq does not increase on the one before, or
// a damaged line followed by good ones, is dropped and the file rewritten
// without it. A file that cannot be read, truncated or rewritten is an
// error.
func OpenEventLog(cfg EventLogConfig) (*EventLog, error) {
	l := &EventLog{retain: cfg.Retain, retainBytes: cfg.RetainBytes, path: cfg.Path, log: cfg.Logger}
	if l.retain <= 0 {
		l.retain = DefaultRetain
	}
	if l.log == nil {
		l.log = slog.Default()
	}
	if l.path == "" {
		return l, nil
	}
	if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
		return nil, fmt.Errorf("worker event log: %w", err)
	}
	f, err := os.OpenFile(l.path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("worker event log: %w", err)
	}
	l.f = f
	if err := l.load(); err != nil {
		l.f.Close() // best effort: the open already failed
		return nil, fmt.Errorf("worker event log %s: %w", l.path, err)
	}
	return l, nil
}

// rejected is a line load drops.
type rejected struct {
	lineNo int
	reason string
}

// load reads l.f into the ring and repairs the file (see OpenEventLog).
// It runs before the log is shared, so it takes no lock.
func (l *EventLog) load() error {
	r := bufio.NewReaderSize(l.f, 64<<10)
	var (
		off, goodEnd int64
		lineNo, kept int
		middle       int        // rejected lines followed by a good one
		pending      []rejected // rejected lines since the last good one
		warned       int
	)
	warn := func(rj rejected) {
		warned++
		if warned <= eventLogOpenWarnings {
			l.log.Warn("worker event log: dropping a damaged line", "path", l.path, "line", rj.lineNo, "reason", rj.reason)
		}
	}
	for {
		b, err := r.ReadBytes('\n')
		if len(b) > 0 {
			lineNo++
			off += int64(len(b))
			var seq uint64
			reason := ""
			if b[len(b)-1] != '\n' {
				reason = "torn: no trailing newline"
			} else {
				b = b[:len(b)-1]
				seq, reason = lineSeq(b)
				if reason == "" && seq <= l.latest {
					reason = fmt.Sprintf("seq %d does not increase on %d", seq, l.latest)
				}
			}
			if reason != "" {
				pending = append(pending, rejected{lineNo, reason})
			} else {
				for _, rj := range pending {
					warn(rj)
				}
				middle += len(pending)
				pending = pending[:0]
				l.push(logEntry{seq, b})
				l.latest = seq
				kept++
				goodEnd = off
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
	}
	for _, rj := range pending {
		warn(rj)
	}
	if warned > eventLogOpenWarnings {
		l.log.Warn("worker event log: more damaged lines dropped", "path", l.path, "dropped", warned)
	}
	if len(pending) > 0 {
		l.log.Warn("worker event log: torn last line dropped (or damaged last lines); file truncated to the last good line",
			"path", l.path, "lines_dropped", len(pending), "bytes_dropped", off-goodEnd, "last_seq", l.latest)
	}
	if middle > 0 || kept > 2*l.retain || l.retainBytes > 0 && goodEnd > 2*l.retainBytes {
		// Rewriting keeps only the good, kept lines: this also drops the tail.
		f, err := l.rewrite()
		if err != nil {
			return err
		}
		l.f.Close() // the old file is replaced; nothing of it is needed
		l.f = f
		l.fileLines, l.fileBytes = l.n, l.keptFileBytes()
		return nil
	}
	if len(pending) > 0 {
		if err := l.f.Truncate(goodEnd); err != nil {
			return fmt.Errorf("truncate the torn last line: %w", err)
		}
	}
	l.fileLines, l.fileBytes = kept, goodEnd
	return nil
}

// lineSeq returns the top-level "seq" of an event line, or why the line
// is not a good one.
func lineSeq(b []byte) (uint64, string) {
	if !gjson.ValidBytes(b) {
		return 0, "not valid JSON"
	}
	root := gjson.ParseBytes(b)
	if !root.IsObject() {
		return 0, "not a JSON object"
	}
	v := root.Get("seq")
	if !v.Exists() {
		return 0, "no top-level seq"
	}
	n, err := strconv.ParseUint(v.Raw, 10, 64)
	if v.Type != gjson.Number || err != nil || n == 0 {
		return 0, "seq is not a positive integer"
	}
	return n, ""
}

// Append gives the next seq to build, which returns the event's whole line
// (one JSON object on one line, no trailing newline, whose top-level "seq"
// is that seq: reopening the file reads it back). The log keeps the line:
// the caller must not reuse it. Append keeps it in memory, writes it to
// the file (one write of line+"\n", no fsync), wakes the waiters and
// returns the seq. build runs with the writer's lock held: it must not
// call Append or Close.
//
// Append never fails: a file that cannot be written is logged once and the
// log goes on in memory. After Close, Append still keeps events in memory
// (the file is closed, and no waiter is woken any more: Changed's channel
// is already closed).
func (l *EventLog) Append(build func(seq uint64) []byte) uint64 {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	seq := l.latest + 1 // latest changes only under wmu
	line := build(seq)
	if l.f != nil {
		l.write(line)
	}
	l.mu.Lock()
	l.push(logEntry{seq, line})
	l.latest = seq
	var wake chan struct{}
	if !l.closed {
		wake, l.changed = l.changed, nil
	}
	l.mu.Unlock()
	if wake != nil {
		close(wake)
	}
	if l.f != nil && (l.fileLines > 2*l.retain || l.retainBytes > 0 && l.fileBytes > 2*l.retainBytes) {
		l.compact()
	}
	return seq
}

// push adds e as the newest entry, dropping the oldest once retain are
// held, and then the oldest but e while the kept lines hold more than
// retainBytes. The ring grows up to retain entries and no further; a
// dropped entry's slot is cleared, so nothing keeps its line alive.
// The caller holds the locks (or owns the log, in load).
func (l *EventLog) push(e logEntry) {
	if l.n == len(l.ring) {
		if l.n < l.retain {
			grown := make([]logEntry, min(max(2*len(l.ring), 64), l.retain))
			for i := range l.n {
				grown[i] = l.at(i)
			}
			l.ring, l.start = grown, 0
		} else {
			l.drop()
		}
	}
	i := l.start + l.n
	if i >= len(l.ring) {
		i -= len(l.ring)
	}
	l.ring[i] = e
	l.n++
	l.bytes += int64(len(e.line))
	for l.retainBytes > 0 && l.bytes > l.retainBytes && l.n > 1 {
		l.drop()
	}
}

// drop forgets the oldest kept entry. The caller holds the locks.
func (l *EventLog) drop() {
	l.bytes -= int64(len(l.ring[l.start].line))
	l.ring[l.start] = logEntry{}
	l.start++
	if l.start == len(l.ring) {
		l.start = 0
	}
	l.n--
}

// keptFileBytes is how many bytes the kept lines take in a file.
func (l *EventLog) keptFileBytes() int64 { return l.bytes + int64(l.n) }

// at returns the i-th kept entry, oldest first. The caller holds a lock.
func (l *EventLog) at(i int) logEntry {
	i += l.start
	if i >= len(l.ring) {
		i -= len(l.ring)
	}
	return l.ring[i]
}

// write appends line+"\n" to the file in one write. The caller holds wmu.
func (l *EventLog) write(line []byte) {
	b := append(l.wbuf[:0], line...)
	b = append(b, '\n')
	_, err := l.f.Write(b)
	if cap(b) <= eventLogWriteBuf {
		l.wbuf = b
	} else {
		l.wbuf = nil
	}
	if err != nil {
		l.fail("write", err)
		return
	}
	l.fileLines++
	l.fileBytes += int64(len(b))
}

// compact rewrites the file with the kept lines. The caller holds wmu.
func (l *EventLog) compact() {
	f, err := l.rewrite()
	if err != nil {
		l.fail("compact", err)
		return
	}
	l.f.Close() // replaced by the rename; its lines are all in f
	l.f = f
	l.fileLines, l.fileBytes = l.n, l.keptFileBytes()
}

// fail gives up the file after an error: the log warns once (there is no
// file afterwards to fail again) and goes on in memory. The caller holds
// wmu. Giving up also keeps the file bounded when compaction fails.
func (l *EventLog) fail(op string, err error) {
	l.log.Warn("worker event log: cannot "+op+" the file; events are kept in memory only from now on (replay will not survive a restart)",
		"path", l.path, "err", err, "seq", l.latest)
	l.f.Close() // best effort: the file is given up
	l.f = nil
}

// rewrite writes the kept lines to a new file beside the log's, synced,
// and renames it over the log's; it returns the new file, open for
// appending (its offset is at its end). The caller holds wmu (or owns the
// log, in load), so the ring does not change meanwhile.
func (l *EventLog) rewrite() (*os.File, error) {
	dir := filepath.Dir(l.path)
	f, err := os.CreateTemp(dir, ".events-*") // mode 0600
	if err != nil {
		return nil, fmt.Errorf("compact: %w", err)
	}
	tmp := f.Name()
	w := bufio.NewWriterSize(f, 64<<10)
	for i := range l.n {
		w.Write(l.at(i).line) // a write error sticks: Flush reports it
		w.WriteByte('\n')
	}
	err = w.Flush()
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = os.Rename(tmp, l.path)
	}
	if err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("compact: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // the rename itself; best effort
		d.Close()
	}
	return f, nil
}

// Latest returns the last seq given (0 for none).
func (l *EventLog) Latest() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.latest
}

// Oldest returns the seq of the oldest kept event; Latest()+1 when none is
// kept.
func (l *EventLog) Oldest() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.oldest()
}

// oldest is Oldest with mu held.
func (l *EventLog) oldest() uint64 {
	if l.n == 0 {
		return l.latest + 1
	}
	return l.ring[l.start].seq
}

// After appends to dst the kept event lines with seq > cursor, oldest
// first, at most max of them (max <= 0: all), and returns the extended
// slice. The lines are the log's own: the caller must not modify them.
//
// When the events after cursor are no longer all kept (cursor <
// Oldest()-1), or the cursor is from the future (cursor > Latest(), e.g.
// a cursor of an earlier log), stale is true and resumeAfter is
// Oldest()-1: the lines returned are those after resumeAfter, and the
// client's next cursor follows from them. Otherwise stale is false and
// resumeAfter is cursor.
//
// Only slice headers are copied, under a short lock; seqs in the log may
// have gaps (lines dropped from a damaged file), which After skips.
func (l *EventLog) After(cursor uint64, max int, dst [][]byte) (lines [][]byte, stale bool, resumeAfter uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	oldest := l.oldest()
	if cursor > l.latest || cursor+1 < oldest {
		stale, cursor = true, oldest-1
	}
	n := l.n
	i := sort.Search(n, func(i int) bool { return l.at(i).seq > cursor })
	end := n
	if max > 0 && end-i > max {
		end = i + max
	}
	for ; i < end; i++ {
		dst = append(dst, l.at(i).line)
	}
	return dst, stale, cursor
}

// Changed returns a channel closed at the next Append (or at Close). A
// reader takes it before calling After and, when After found nothing new,
// waits on it and calls After again: taken in that order, no Append
// between the two calls is missed. Once the log is closed the channel is
// closed for good; a reader stops on its own shutdown signal.
func (l *EventLog) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	return l.changed
}

// Close closes the file and the Changed channel, so that waiters return.
// It waits for an Append under way. Closing twice is not an error; the
// kept events stay readable.
func (l *EventLog) Close() error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	wake := l.changed
	l.changed = closedChan
	l.mu.Unlock()
	if wake != nil {
		close(wake)
	}
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	if err != nil {
		return fmt.Errorf("worker event log %s: %w", l.path, err)
	}
	return nil
}
