package control

import (
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/tidwall/gjson"
)

// The worker lane's event log. Every receipt (worker.response,
// worker.error) and progress event (worker.event) of one worker gets the
// next sequence number, seq 1, 2, …, and the last Retain events are kept so
// that a client can replay from its cursor (the last seq it saw).
//
// With a Store that keeps events (the durable store of lane 004, opened
// with StoreConfig.Events), the log is kept there, so that the seq goes on
// across restarts and replay survives them. A line is committed (fsynced)
// before anyone can read it: what a reader saw, a crash cannot take back,
// and so no seq a reader saw is ever given again. A receipt is committed
// in one transaction with its request's store entry and the seq it takes
// (AppendReceipt): a crash or a failed write keeps both or neither.
//
// Progress events are committed by a goroutine of the log, as many as
// have come at once in one transaction, so that the session's loop never
// waits for the disk; they become readable once committed, in seq order.
// A commit that fails (a full disk) keeps them waiting, at most Retain of
// them (older ones are dropped, their seqs never used; while commits work
// nothing is dropped, however far the disk lags), and tries again;
// meanwhile nothing new is readable, and a receipt, which cannot be
// recorded either, is an error for its caller. Readers are served from
// memory: the file is read once, at open.

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
	// Store keeps the log when it is a durable store opened with
	// StoreConfig.Events; otherwise (nil, or another store) the log lives
	// in memory only.
	Store Store
	// Logger receives the warnings (events that cannot be recorded).
	// nil: slog.Default().
	Logger *slog.Logger
}

// eventJournal is a store that keeps an event log (boltStore with
// StoreConfig.Events).
type eventJournal interface {
	keepsEvents() bool
	loadEvents(n int) ([]logEntry, uint64, error)
	appendEvents(lines []logEntry, keep int, fin *receiptFinish) error
}

// partialJournal is a journal whose appendEvents may commit some of its
// lines and fail (the bus: each line is a publish of its own, the entry a
// write of its own): committed is the last seq it holds, whose lines an
// appendEvents called again skips.
type partialJournal interface {
	committed() uint64
}

// commitRetry is how long the log's committer waits after a failed
// commit before it tries again (new events do not hurry it).
const commitRetry = 200 * time.Millisecond

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
// last Retain event lines, optionally kept in a store. It is safe for
// concurrent use; it is meant for one writer of progress events (the
// session's loop, calling Append), receipts from any goroutine
// (AppendReceipt) and many readers (After, Changed, Latest, Oldest from
// HTTP handlers and socket connections). Lines handed in and out are
// shared, never copied: nobody may modify them.
type EventLog struct {
	retain      int
	retainBytes int64
	j           eventJournal // nil: in memory
	log         *slog.Logger

	// cmu serialises commits (the committer's and AppendReceipt's), so
	// that lines become readable in seq order. Lock order: cmu, wmu, mu.
	// It guards failing.
	cmu     sync.Mutex
	failing bool // the last commit failed (warned once per run of failures)

	// wmu serialises the giving of seqs: it guards next, pending,
	// dropped, stalled and stopped. ring, start and latest change only
	// under mu and, to keep seq order, cmu (kept in a store) or wmu (in
	// memory, or once stopped), so mu suffices to read them.
	wmu     sync.Mutex
	next    uint64     // the last seq given
	pending []logEntry // given a seq, waiting to be committed (durable)
	dropped int        // pending lines dropped beyond retain, since the last warning
	stalled bool       // the last commit failed: pending is bounded by retain
	stopped bool       // Close began: no committer, events stay in memory

	kick     chan struct{} // wakes the committer (durable)
	quit     chan struct{}
	done     chan struct{}
	stopOnce sync.Once

	mu sync.Mutex
	// ring holds the kept entries, at most retain: n of them from
	// ring[start] on, wrapping around; bytes is the sum of their lines'
	// lengths. An empty slot holds nothing.
	ring    []logEntry
	start   int
	n       int
	bytes   int64
	latest  uint64        // the last seq readable
	changed chan struct{} // nil until a reader asks; closed by the next line shown
	closed  bool
}

// OpenEventLog opens an event log: in memory, or kept in cfg.Store (see
// EventLogConfig), whose last Retain lines it reads, and whose seq it
// continues.
func OpenEventLog(cfg EventLogConfig) (*EventLog, error) {
	l := &EventLog{retain: cfg.Retain, retainBytes: cfg.RetainBytes, log: cfg.Logger}
	if l.retain <= 0 {
		l.retain = DefaultRetain
	}
	if l.log == nil {
		l.log = slog.Default()
	}
	j, ok := cfg.Store.(eventJournal)
	if !ok || !j.keepsEvents() {
		return l, nil
	}
	lines, latest, err := j.loadEvents(l.retain)
	if err != nil {
		return nil, fmt.Errorf("worker event log: %w", err)
	}
	for _, e := range lines {
		l.push(e)
	}
	l.j, l.next, l.latest = j, latest, latest
	l.kick, l.quit, l.done = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	go l.commits()
	return l, nil
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
// is that seq). The log keeps the line: the caller must not reuse it. In
// memory the line is readable at once; kept in a store, once the
// committer has committed it (Append does not wait). build runs with the
// writer's lock held: it must not call the log.
//
// Append never fails: a line that cannot be committed waits (see the
// log's comment). After Close, Append still keeps events in memory (no
// waiter is woken any more: Changed's channel is already closed).
func (l *EventLog) Append(build func(seq uint64) []byte) uint64 {
	l.wmu.Lock()
	seq := l.next + 1
	e := logEntry{seq, build(seq)}
	l.next = seq
	if l.j == nil || l.stopped {
		l.show(e)
		l.wmu.Unlock()
		return seq
	}
	l.pending = append(l.pending, e)
	if l.stalled {
		l.bound()
	}
	l.wmu.Unlock()
	select {
	case l.kick <- struct{}{}:
	default:
	}
	return seq
}

// AppendReceipt appends a request's receipt: build gets its seq and
// returns its line, and the request's entry k in s (the lane's store) is
// completed with it (Finish, the line as the outcome's detail, result and
// at as given). Kept in a store, which must be s, the line, the events
// waiting before it and the entry are committed in one transaction, and
// the line is readable once they are; in memory the line is readable once
// the entry is finished. An error (the write failed, the disk is full,
// the store is closed or broken) records nothing: the line is not
// readable, its seq is not used, k stays as it was.
func (l *EventLog) AppendReceipt(s Store, k Key, result string, at time.Time, build func(seq uint64) []byte) ([]byte, error) {
	if l.j == nil {
		return l.appendReceiptMemory(s, k, result, at, build)
	}
	if js, ok := s.(eventJournal); !ok || js != l.j {
		return nil, errors.New("worker event log: a receipt of another store than the log's")
	}
	l.cmu.Lock()
	defer l.cmu.Unlock()
	l.wmu.Lock()
	if l.stopped {
		l.wmu.Unlock()
		return nil, ErrClosed
	}
	seq := l.next + 1
	e := logEntry{seq, build(seq)}
	l.next = seq
	batch := append(l.pending, e)
	l.pending = nil
	l.wmu.Unlock()
	err := l.j.appendEvents(batch, l.retain, &receiptFinish{k, Outcome{Result: result, Detail: string(e.line), At: at}})
	if p, ok := l.j.(partialJournal); ok && err != nil && p.committed() >= seq {
		// The lines are in the journal, the entry not finished (the bus:
		// the receipt is in the stream, its claim not written over): the
		// lines are shown and the seq is not given again; a retry of the
		// request settles the entry from the journal.
		l.showAll(batch)
		return nil, err
	}
	if err != nil {
		l.requeue(batch[:len(batch)-1], seq)
		l.failed(err)
		return nil, err
	}
	l.recovered()
	l.showAll(batch)
	return e.line, nil
}

// appendReceiptMemory is AppendReceipt in memory: under wmu throughout,
// so that lines are shown in seq order.
func (l *EventLog) appendReceiptMemory(s Store, k Key, result string, at time.Time, build func(seq uint64) []byte) ([]byte, error) {
	if s == nil {
		return nil, errors.New("worker event log: a receipt without a store")
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	seq := l.next + 1
	e := logEntry{seq, build(seq)}
	if err := s.Finish(k, Outcome{Result: result, Detail: string(e.line), At: at}); err != nil {
		return nil, err
	}
	l.next = seq
	l.show(e)
	return e.line, nil
}

// requeue puts back lines a failed commit took, before those that came
// meanwhile; the failed receipt's seq is given again when nothing took a
// seq after it (nobody saw it). The caller holds cmu.
func (l *EventLog) requeue(lines []logEntry, receiptSeq uint64) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if receiptSeq != 0 && l.next == receiptSeq {
		l.next--
	}
	l.pending = append(lines[:len(lines):len(lines)], l.pending...)
	l.stalled = true
	l.bound()
}

// bound drops the oldest lines waiting beyond retain, while commits fail:
// they would not be kept anyway, and are never shown (their seqs are
// never used). The caller holds wmu.
func (l *EventLog) bound() {
	if over := len(l.pending) - l.retain; over > 0 {
		l.pending = append(l.pending[:0], l.pending[over:]...)
		l.dropped += over
	}
}

// commits is the committer: it commits what waits whenever Append kicks
// it, pausing commitRetry after a failure; at Close it tries once more.
func (l *EventLog) commits() {
	defer close(l.done)
	var retry *time.Timer
	for {
		if retry != nil {
			select {
			case <-retry.C:
			case <-l.quit:
				retry.Stop()
				l.flush()
				return
			}
		} else {
			select {
			case <-l.kick:
			case <-l.quit:
				l.flush()
				return
			}
		}
		retry = nil
		if !l.flush() {
			retry = time.NewTimer(commitRetry)
		}
	}
}

// flush commits the lines waiting and shows them; false when the commit
// failed (they wait again).
func (l *EventLog) flush() bool {
	l.cmu.Lock()
	defer l.cmu.Unlock()
	l.wmu.Lock()
	batch := l.pending
	l.pending = nil
	l.wmu.Unlock()
	if len(batch) == 0 {
		return true
	}
	if err := l.j.appendEvents(batch, l.retain, nil); err != nil {
		l.requeue(batch, 0)
		l.failed(err)
		return false
	}
	l.recovered()
	l.showAll(batch)
	return true
}

// failed warns about the first failure of a run of them. The caller
// holds cmu.
func (l *EventLog) failed(err error) {
	if l.failing {
		return
	}
	l.failing = true
	l.log.Warn("worker event log: cannot record events; they wait (at most --retain-events of them) and are shown once recorded, and receipts fail meanwhile",
		"err", err, "latest_seq", l.Latest())
}

// recovered notes a commit after failures. The caller holds cmu.
func (l *EventLog) recovered() {
	l.wmu.Lock()
	dropped := l.dropped
	l.dropped, l.stalled = 0, false
	l.wmu.Unlock()
	if l.failing || dropped > 0 {
		l.log.Warn("worker event log: recording events again", "dropped", dropped, "latest_seq", l.Latest())
	}
	l.failing = false
}

// show makes e readable and wakes the waiters. The caller holds wmu (in
// memory) or cmu (kept in a store), so that lines are shown in seq order.
func (l *EventLog) show(e logEntry) { l.showAll([]logEntry{e}) }

// showAll is show of several lines, in seq order.
func (l *EventLog) showAll(lines []logEntry) {
	l.mu.Lock()
	for _, e := range lines {
		l.push(e)
	}
	l.latest = lines[len(lines)-1].seq
	var wake chan struct{}
	if !l.closed {
		wake, l.changed = l.changed, nil
	}
	l.mu.Unlock()
	if wake != nil {
		close(wake)
	}
}

// push adds e as the newest entry, dropping the oldest once retain are
// held, and then the oldest but e while the kept lines hold more than
// retainBytes. The ring grows up to retain entries and no further; a
// dropped entry's slot is cleared, so nothing keeps its line alive.
// The caller holds the locks (or owns the log, in OpenEventLog).
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

// at returns the i-th kept entry, oldest first. The caller holds a lock.
func (l *EventLog) at(i int) logEntry {
	i += l.start
	if i >= len(l.ring) {
		i -= len(l.ring)
	}
	return l.ring[i]
}

// Latest returns the last seq readable (0 for none).
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
// have gaps (lines that waited for a failing disk beyond Retain, a receipt
// given up after its seq was passed, a damaged line of an earlier
// version's file), which After skips.
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

// Changed returns a channel closed when the next lines become readable
// (or at Close). A
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

// Close stops the committer, which commits what waits one last time,
// and closes the Changed channel, so that waiters return. It does not
// close the store. Events that could not be committed are lost (the
// error counts them). Closing twice is not an error; the kept events stay
// readable.
func (l *EventLog) Close() error {
	if l.j != nil {
		l.stopOnce.Do(func() { close(l.quit) })
		<-l.done
	}
	var err error
	l.cmu.Lock() // a receipt being committed is shown before the log stops
	l.wmu.Lock()
	if !l.stopped {
		l.stopped = true
		if n := len(l.pending); n > 0 {
			err = fmt.Errorf("worker event log: %d events could not be recorded", n)
			l.pending = nil
		}
	}
	l.wmu.Unlock()
	l.cmu.Unlock()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return err
	}
	l.closed = true
	wake := l.changed
	l.changed = closedChan
	l.mu.Unlock()
	if wake != nil {
		close(wake)
	}
	return err
}
