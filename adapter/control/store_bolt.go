package control

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	bolt "go.etcd.io/bbolt"
)

// The durable store is one bbolt file, DIR/control.db, with these buckets:
//
//	entries  encoded Key → entry (format byte, flags, since, outcome at, result, detail)
//	expiry   since (8 bytes, big-endian, ordered) + encoded Key → empty;
//	         completed entries only, oldest first: the sweep and eviction
//	         read its first keys and never scan
//	seq      lane → last sequence number (8 bytes, big-endian)
//	meta     "format" → 1, or 2 when the store keeps an event log;
//	         "events_seq" → the event log's last seq (8 bytes, big-endian)
//	events   seq (8 bytes, big-endian) → event line; only with
//	         StoreConfig.Events (lane 004), the last Retain lines
//
// Every change is one read-write transaction, committed with bbolt's
// fsync (NoSync is not used): Begin's in-flight entry is on disk before the
// lane injects, so a crash after the injection cannot let a retry inject
// again. A Begin that finds a live entry reads it in a read-only
// transaction and writes nothing. A receipt of lane 004 is committed in
// the same transaction as its line in the event log and the seq it takes
// (appendEvents), so that no crash and no failed write can keep one
// without the other.
//
// A damaged file is found at open: its pages are checked by reading the
// file (checkPages), every record is read through bbolt and decoded, and
// bbolt's own consistency check (Tx.Check) runs, so that the store opens
// only when it is whole. Every call into bbolt runs with memory faults
// turned into panics and the panics recovered (guard): damage the check
// missed fails the call, marks the store broken (every later call returns
// the same error) and never takes the process down.

// StoreFile is the durable store's file name inside the state directory.
const StoreFile = "control.db"

// lockTimeout is how long OpenStore waits for bbolt's file lock before
// saying another process holds the store.
const lockTimeout = 250 * time.Millisecond

// The store's formats: 1 without an event log, 2 with one (a version
// that does not keep the log there must not open it: it would give the
// log's seqs again).
const (
	storeFormat       = 1
	storeFormatEvents = 2
)

var (
	bucketEntries = []byte("entries")
	bucketExpiry  = []byte("expiry")
	bucketSeq     = []byte("seq")
	bucketMeta    = []byte("meta")
	bucketEvents  = []byte("events")
	keyFormat     = []byte("format")
	keyEventsSeq  = []byte("events_seq")
)

// legacyEventsFile is the event log of lane 004 as versions before the
// log moved into the store kept it, beside the store: read into the store
// once, then removed.
const legacyEventsFile = "events.ndjson"

// The outcome given to entries found in flight when the store is opened:
// the process that began them died before finishing, so whether the input
// reached the worker is unknown. Treating them as completed makes a retry
// a duplicate, which never injects twice; the cost is that a request which
// never reached the worker is not retried by that request_id (the
// controller sends a new one).
const (
	recoveredResult = "internal_error"
	recoveredDetail = "in flight when ccbridge stopped; outcome unknown"
)

type boltStore struct {
	cfg  StoreConfig
	path string

	mu     sync.Mutex // serialises every operation, guards the fields below
	db     *bolt.DB
	count  int // entries held
	closed bool
	broken error // set when bbolt panicked or faulted: the file is damaged

	// The event log (cfg.Events): lines held and the last seq given.
	evCount  int
	evLatest uint64
}

// OpenStore opens (creating it if needed) the durable store in dir: the
// directory is created with mode 0700 when missing, the file with 0600.
// The file is checked whole first: a damaged one is an error that names
// it and says to move it aside. Entries found in flight are recovered as
// completed with result internal_error (see recoveredDetail). A store
// another process holds open, or a file that is not a store, gives an
// error that says so.
func OpenStore(dir string, c StoreConfig) (Store, error) {
	c = c.withDefaults()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("control store: state dir: %w", err)
	}
	path := filepath.Join(dir, StoreFile)
	var db *bolt.DB
	err := guardPanics(func() (err error) {
		db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout})
		return err
	})
	var dmg *damageError
	switch {
	case errors.Is(err, bolt.ErrTimeout):
		return nil, fmt.Errorf("control store %s: locked by another process (another ccbridge with the same --state-dir?): %w", path, err)
	case errors.As(err, &dmg):
		// bbolt gave up inside Open: the file stays open (and locked) in
		// this process, which is about to report the error and stop.
		return nil, fmt.Errorf("control store %s: %w", path, err)
	case err != nil:
		return nil, fmt.Errorf("control store %s: cannot open (not a store file, or corrupt; move it aside to start afresh): %w", path, err)
	}
	s := &boltStore{cfg: c, path: path, db: db}
	if err := s.open(dir, c.Now()); err != nil {
		guardPanics(db.Close) // best effort: the open already failed
		return nil, fmt.Errorf("control store %s: %w", path, err)
	}
	return s, nil
}

// damageError is a panic or a memory fault inside bbolt, turned into an
// error: the file is damaged where the call looked.
type damageError struct{ p any }

func (e *damageError) Error() string {
	return fmt.Sprintf("damaged file (bbolt failed reading it: %v); %s", e.p, moveAside)
}

// moveAside is what every error about a damaged store tells the operator.
const moveAside = "stop ccbridge and move the file aside to start afresh (the request ids and receipts it held are forgotten)"

// guardPanics runs fn, a call into bbolt, with memory faults turned into
// panics (bbolt reads its file through a memory map: a damaged page can
// point outside it) and any panic turned into a *damageError.
func guardPanics(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = &damageError{p}
		}
	}()
	return fn()
}

// guard runs fn with the store's lock held and bbolt's panics recovered:
// after one, the store is broken, and this call and every later one
// return the error (bbolt's own deferred rollbacks have released its
// locks; the file is not used again).
func (s *boltStore) guard(fn func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return ErrClosed
	case s.broken != nil:
		return s.broken
	}
	err := guardPanics(fn)
	var dmg *damageError
	if errors.As(err, &dmg) {
		s.broken = fmt.Errorf("control store %s: %w", s.path, err)
		return s.broken
	}
	return err
}

// openState is what open's check finds in the file.
type openState struct {
	format   []byte   // meta's format, nil when none
	count    int      // entries
	stuck    [][]byte // keys of entries in flight
	receipts bool     // look for the highest seq a receipt names:
	receipt  uint64   // lane 004's receipts, when its log moves in
	evCount  int      // lines in events
	evLast   uint64   // the last line's seq
	evSeq    uint64   // meta's events_seq
}

// open checks the file whole, then readies it: buckets, format, entries
// left in flight, the event log. Damage is an error, not a crash.
func (s *boltStore) open(dir string, now time.Time) error {
	var st openState
	var unknown error
	err := guardPanics(func() error {
		return s.db.View(func(tx *bolt.Tx) error {
			if err := s.checkFile(tx); err != nil {
				return err
			}
			// The format first: a file of another version is not damaged.
			if m := tx.Bucket(bucketMeta); m != nil {
				st.format = bytes.Clone(m.Get(keyFormat))
			}
			if f := st.format; f != nil && (len(f) != 1 || f[0] != storeFormat && f[0] != storeFormatEvents) {
				unknown = fmt.Errorf("unknown store format %x (written by another version of ccbridge?)", f)
				return nil
			}
			st.receipts = s.cfg.Events && (st.format == nil || st.format[0] != storeFormatEvents)
			return st.check(tx)
		})
	})
	var dmg *damageError
	switch {
	case errors.As(err, &dmg):
		return err
	case err != nil:
		return fmt.Errorf("damaged file (%w); %s", err, moveAside)
	case unknown != nil:
		return unknown
	}
	var legacy []logEntry
	if s.cfg.Events && !bytes.Equal(st.format, []byte{storeFormatEvents}) {
		// The event log moves into the store: the file an earlier version
		// kept, if any, is read in (its seqs go on).
		if legacy, err = readLegacyEvents(filepath.Join(dir, legacyEventsFile)); err != nil {
			return err
		}
	}
	err = guardPanics(func() error { return s.db.Update(func(tx *bolt.Tx) error { return s.prepare(tx, &st, legacy, now) }) })
	if err != nil {
		return err
	}
	if legacy != nil {
		// Committed: the old file is not needed (a failed removal leaves a
		// file nobody reads again: the store's format says it moved).
		os.Remove(filepath.Join(dir, legacyEventsFile))
	}
	return nil
}

// checkFile checks the file's pages as transaction tx sees them
// (checkPages), before bbolt reads them.
func (s *boltStore) checkFile(tx *bolt.Tx) error {
	f, err := os.Open(s.path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return checkPages(f, fi.Size(), s.db.Info().PageSize, uint64(tx.ID()))
}

// check reads every record of the file, decoding each, then runs bbolt's
// consistency check (every page reachable once, none both used and free,
// keys in order). The records are read first, under guard, so that a page
// that would make bbolt fault does so here, where it is recovered, and
// not in the goroutine Tx.Check runs on.
func (st *openState) check(tx *bolt.Tx) error {
	err := tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		if b == nil {
			return fmt.Errorf("a value %q where a bucket should be", name)
		}
		var rec func(k, v []byte) error
		switch string(name) {
		case string(bucketEntries):
			rec = func(k, v []byte) error {
				e, err := decodeEntry(v)
				if err != nil {
					return err
				}
				st.count++
				if e.InFlight {
					st.stuck = append(st.stuck, bytes.Clone(k))
				} else if st.receipts && receiptLine(e.Outcome.Detail) {
					st.receipt = max(st.receipt, gjson.Get(e.Outcome.Detail, "seq").Uint())
				}
				return nil
			}
		case string(bucketExpiry):
			rec = func(k, v []byte) error {
				if _, _, err := splitExpiryKey(k); err != nil || len(v) != 0 {
					return errCorrupt
				}
				return nil
			}
		case string(bucketSeq):
			rec = func(k, v []byte) error {
				if len(v) != 8 {
					return errCorrupt
				}
				return nil
			}
		case string(bucketMeta):
			rec = func(k, v []byte) error {
				switch {
				case bytes.Equal(k, keyEventsSeq) && len(v) != 8:
					return errCorrupt
				case bytes.Equal(k, keyEventsSeq):
					st.evSeq = binary.BigEndian.Uint64(v)
				}
				return nil
			}
		case string(bucketEvents):
			rec = func(k, v []byte) error {
				if len(k) != 8 {
					return errCorrupt
				}
				seq := binary.BigEndian.Uint64(k)
				if n, why := lineSeq(v); why != "" || n != seq || seq <= st.evLast {
					return errCorrupt
				}
				st.evCount++
				st.evLast = seq
				return nil
			}
		default:
			return fmt.Errorf("an unknown bucket %q", name)
		}
		return b.ForEach(func(k, v []byte) error {
			if v == nil {
				return fmt.Errorf("a bucket inside %q", name)
			}
			if err := rec(k, v); err != nil {
				return fmt.Errorf("a corrupt record in %q", name)
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	var problems []string
	for err := range tx.Check() { // read to its end: Check's goroutine stops then
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		if len(problems) > 3 {
			problems = append(problems[:3], fmt.Sprintf("and %d more", len(problems)-3))
		}
		return fmt.Errorf("bbolt's check: %s", strings.Join(problems, "; "))
	}
	return nil
}

// prepare creates the buckets, checks the format, turns in-flight entries
// into completed ones and readies the event log (cfg.Events), taking in
// legacy, the lines of an earlier version's file.
func (s *boltStore) prepare(tx *bolt.Tx, st *openState, legacy []logEntry, now time.Time) error {
	meta, err := tx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return err
	}
	format := byte(storeFormat)
	if st.format != nil {
		format = st.format[0] // a known one: open checked it
	}
	for _, name := range [][]byte{bucketEntries, bucketExpiry, bucketSeq} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	eb, xb := tx.Bucket(bucketEntries), tx.Bucket(bucketExpiry)
	for _, k := range st.stuck {
		e := Entry{Outcome: Outcome{Result: recoveredResult, Detail: recoveredDetail, At: now}, Since: now}
		if err := putEntry(eb, xb, k, e); err != nil {
			return err
		}
	}
	s.count = st.count
	if s.cfg.Events {
		evb, err := tx.CreateBucketIfNotExists(bucketEvents)
		if err != nil {
			return err
		}
		s.evCount, s.evLatest = st.evCount, max(st.evSeq, st.evLast)
		if format != storeFormatEvents {
			// The log moves in: no seq a receipt or the old file named
			// is given again, even if the file lost its last lines.
			for _, e := range legacy {
				if e.seq <= s.evLatest {
					continue
				}
				if err := evb.Put(seqKey(e.seq), e.line); err != nil {
					return err
				}
				s.evCount++
				s.evLatest = e.seq
			}
			s.evLatest = max(s.evLatest, st.receipt)
			format = storeFormatEvents
		}
		if err := meta.Put(keyEventsSeq, seqKey(s.evLatest)); err != nil {
			return err
		}
	}
	if !bytes.Equal(st.format, []byte{format}) {
		return meta.Put(keyFormat, []byte{format})
	}
	return nil
}

// readLegacyEvents reads an event log file of an earlier version: its
// good lines with increasing seqs (a torn or damaged line is skipped), or
// nil when there is no file.
func readLegacyEvents(path string) ([]logEntry, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the event log of an earlier version: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	lines := []logEntry{}
	var last uint64
	for {
		b, err := r.ReadBytes('\n')
		if len(b) > 0 && b[len(b)-1] == '\n' {
			b = b[:len(b)-1]
			if seq, why := lineSeq(b); why == "" && seq > last {
				lines = append(lines, logEntry{seq, b})
				last = seq
			}
		}
		if errors.Is(err, io.EOF) {
			return lines, nil
		}
		if err != nil {
			return nil, fmt.Errorf("the event log of an earlier version: %w", err)
		}
	}
}

func (s *boltStore) Begin(k Key, now time.Time) (prev Entry, fresh bool, err error) {
	err = s.guard(func() error {
		prev, fresh, err = s.begin(k, now)
		return err
	})
	return prev, fresh, err
}

// begin is Begin under guard.
func (s *boltStore) begin(k Key, now time.Time) (Entry, bool, error) {
	key := appendKey(nil, k)
	// A live entry is answered from a read transaction: a read-write one
	// rolled back costs bbolt a reload of its freelist. s.mu keeps the
	// look-up and the insert below one atomic step.
	var prev Entry
	live := false
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketEntries).Get(key)
		if v == nil {
			return nil
		}
		e, err := decodeEntry(v)
		if err == nil && !s.cfg.expired(e, now) {
			prev, live = e, true
		}
		return err
	})
	if err != nil || live {
		return prev, false, err
	}
	tx, err := s.db.Begin(true)
	if err != nil {
		return Entry{}, false, err
	}
	defer tx.Rollback() // after a Commit: ErrTxClosed, ignored
	eb, xb := tx.Bucket(bucketEntries), tx.Bucket(bucketExpiry)
	delta := 0
	if v := eb.Get(key); v != nil {
		e, err := decodeEntry(v)
		if err != nil {
			return Entry{}, false, err
		}
		if !s.cfg.expired(e, now) {
			return e, false, nil // rolled back: nothing written
		}
		if err := delEntry(eb, xb, key, e); err != nil {
			return Entry{}, false, err
		}
		delta--
	}
	n, err := s.sweep(eb, xb, now, sweepBatch)
	if err != nil {
		return Entry{}, false, err
	}
	delta -= n
	if s.count+delta >= s.cfg.MaxKeys {
		ok, err := s.evictOldest(eb, xb)
		if err != nil {
			return Entry{}, false, err
		}
		if !ok {
			return Entry{}, false, ErrStoreFull
		}
		delta--
	}
	if err := putEntry(eb, xb, key, Entry{InFlight: true, Since: now}); err != nil {
		return Entry{}, false, err
	}
	if err := tx.Commit(); err != nil {
		return Entry{}, false, err
	}
	s.count += delta + 1
	return Entry{}, true, nil
}

func (s *boltStore) Finish(k Key, o Outcome) error {
	return s.update(func(eb, xb *bolt.Bucket) (int, error) {
		return 0, s.finish(eb, xb, appendKey(nil, k), o)
	})
}

// finish completes the entry of key with o, within a transaction.
func (s *boltStore) finish(eb, xb *bolt.Bucket, key []byte, o Outcome) error {
	v := eb.Get(key)
	if v == nil {
		return ErrNoEntry
	}
	old, err := decodeEntry(v)
	if err != nil {
		return err
	}
	if !old.InFlight {
		if err := xb.Delete(expiryKey(old.Since, key)); err != nil {
			return err
		}
	}
	return putEntry(eb, xb, key, Entry{Outcome: o, Since: s.cfg.finishTime(o)})
}

func (s *boltStore) Release(k Key) error {
	return s.update(func(eb, xb *bolt.Bucket) (int, error) {
		key := appendKey(nil, k)
		v := eb.Get(key)
		if v == nil {
			return 0, nil
		}
		e, err := decodeEntry(v)
		if err != nil {
			return 0, err
		}
		return -1, delEntry(eb, xb, key, e)
	})
}

// update runs fn in one read-write transaction, under guard; fn returns
// the change in the number of entries, applied once the transaction is
// committed.
func (s *boltStore) update(fn func(eb, xb *bolt.Bucket) (int, error)) error {
	return s.guard(func() error {
		delta := 0
		err := s.db.Update(func(tx *bolt.Tx) error {
			var err error
			delta, err = fn(tx.Bucket(bucketEntries), tx.Bucket(bucketExpiry))
			return err
		})
		if err == nil {
			s.count += delta
		}
		return err
	})
}

func (s *boltStore) NextSeq(lane string) (uint64, error) {
	var n uint64
	err := s.guard(func() error {
		return s.db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketSeq)
			if v := b.Get([]byte(lane)); v != nil {
				if len(v) != 8 {
					return fmt.Errorf("control store: corrupt sequence number for lane %q", lane)
				}
				n = binary.BigEndian.Uint64(v)
			}
			n++
			return b.Put([]byte(lane), binary.BigEndian.AppendUint64(nil, n))
		})
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

func (s *boltStore) Durable() bool { return true }

func (s *boltStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return guardPanics(s.db.Close)
}

// keepsEvents, loadEvents and appendEvents are the event log's side of
// the store (eventJournal), when it was opened with StoreConfig.Events.
func (s *boltStore) keepsEvents() bool { return s.cfg.Events }

// loadEvents returns the last n lines of the log, oldest first, and the
// last seq given (which may be beyond the last line kept).
func (s *boltStore) loadEvents(n int) (lines []logEntry, latest uint64, err error) {
	err = s.guard(func() error {
		if !s.cfg.Events {
			return errors.New("control store: opened without an event log")
		}
		return s.db.View(func(tx *bolt.Tx) error {
			c := tx.Bucket(bucketEvents).Cursor()
			for k, v := c.Last(); k != nil && len(lines) < n; k, v = c.Prev() {
				lines = append(lines, logEntry{binary.BigEndian.Uint64(k), bytes.Clone(v)})
			}
			return nil
		})
	})
	if err != nil {
		return nil, 0, err
	}
	for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
		lines[i], lines[j] = lines[j], lines[i]
	}
	s.mu.Lock()
	latest = s.evLatest
	s.mu.Unlock()
	return lines, latest, nil
}

// receiptFinish is the store entry a receipt completes.
type receiptFinish struct {
	key Key
	o   Outcome
}

// appendEvents commits lines (seqs increasing, beyond every seq given) to
// the log, drops its oldest lines beyond keep, and with fin completes
// fin's entry (Finish), all in one transaction: either all of it is on
// disk or none of it (a failed write, a full disk: the error, and nothing
// changed).
func (s *boltStore) appendEvents(lines []logEntry, keep int, fin *receiptFinish) error {
	if len(lines) == 0 {
		return nil
	}
	last := lines[len(lines)-1].seq
	return s.guard(func() error {
		if !s.cfg.Events {
			return errors.New("control store: opened without an event log")
		}
		if lines[0].seq <= s.evLatest {
			return fmt.Errorf("control store: event seq %d given twice (the last is %d)", lines[0].seq, s.evLatest)
		}
		held := s.evCount
		err := s.db.Update(func(tx *bolt.Tx) error {
			evb := tx.Bucket(bucketEvents)
			for _, e := range lines {
				if err := evb.Put(seqKey(e.seq), e.line); err != nil {
					return err
				}
			}
			if err := tx.Bucket(bucketMeta).Put(keyEventsSeq, seqKey(last)); err != nil {
				return err
			}
			held += len(lines)
			if drop := held - keep; drop > 0 {
				var old [][]byte
				c := evb.Cursor()
				for k, _ := c.First(); k != nil && len(old) < drop; k, _ = c.Next() {
					old = append(old, bytes.Clone(k))
				}
				for _, k := range old {
					if err := evb.Delete(k); err != nil {
						return err
					}
				}
				held -= len(old)
			}
			if fin == nil {
				return nil
			}
			return s.finish(tx.Bucket(bucketEntries), tx.Bucket(bucketExpiry), appendKey(nil, fin.key), fin.o)
		})
		if err == nil {
			s.evCount, s.evLatest = held, last
		}
		return err
	})
}

// seqKey is seq as 8 big-endian bytes: the events bucket's key order is
// seq order.
func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

// sweep removes at most n expired completed entries, oldest first, and
// returns how many it removed. The keys are read first and deleted after,
// so no cursor is moved across its own deletes.
func (s *boltStore) sweep(eb, xb *bolt.Bucket, now time.Time, n int) (int, error) {
	var dead [][]byte
	c := xb.Cursor()
	for k, _ := c.First(); k != nil && len(dead) < n; k, _ = c.Next() {
		since, _, err := splitExpiryKey(k)
		if err != nil {
			return 0, err
		}
		if now.Sub(since) <= s.cfg.TTL {
			break
		}
		dead = append(dead, bytes.Clone(k))
	}
	removed := 0
	for _, xk := range dead {
		gone, err := dropByExpiryKey(eb, xb, xk)
		if err != nil {
			return removed, err
		}
		if gone {
			removed++
		}
	}
	return removed, nil
}

// evictOldest removes the completed entry changed longest ago; false when
// there is none (every entry is in flight).
func (s *boltStore) evictOldest(eb, xb *bolt.Bucket) (bool, error) {
	k, _ := xb.Cursor().First()
	if k == nil {
		return false, nil
	}
	return dropByExpiryKey(eb, xb, bytes.Clone(k))
}

// dropByExpiryKey deletes an expiry index key and the entry it names,
// when that entry still has this Since; it reports whether an entry went.
func dropByExpiryKey(eb, xb *bolt.Bucket, xk []byte) (bool, error) {
	since, key, err := splitExpiryKey(xk)
	if err != nil {
		return false, err
	}
	if err := xb.Delete(xk); err != nil {
		return false, err
	}
	v := eb.Get(key)
	if v == nil {
		return false, nil
	}
	e, err := decodeEntry(v)
	if err != nil {
		return false, err
	}
	if e.InFlight || !e.Since.Equal(since) {
		return false, nil // a stale index key; the entry is indexed elsewhere
	}
	return true, eb.Delete(key)
}

func putEntry(eb, xb *bolt.Bucket, key []byte, e Entry) error {
	if err := eb.Put(key, encodeEntry(e)); err != nil {
		return err
	}
	if e.InFlight {
		return nil
	}
	return xb.Put(expiryKey(e.Since, key), nil)
}

func delEntry(eb, xb *bolt.Bucket, key []byte, e Entry) error {
	if !e.InFlight {
		if err := xb.Delete(expiryKey(e.Since, key)); err != nil {
			return err
		}
	}
	return eb.Delete(key)
}

// expiryKey is since as 8 big-endian bytes with the sign bit flipped (so
// byte order is time order, before 1970 included) followed by the key.
func expiryKey(since time.Time, key []byte) []byte {
	b := make([]byte, 0, 8+len(key))
	b = binary.BigEndian.AppendUint64(b, uint64(unixNano(since))^(1<<63))
	return append(b, key...)
}

func splitExpiryKey(xk []byte) (time.Time, []byte, error) {
	if len(xk) < 8 {
		return time.Time{}, nil, errCorrupt
	}
	ns := int64(binary.BigEndian.Uint64(xk) ^ (1 << 63))
	return fromUnixNano(ns), xk[8:], nil
}

var errCorrupt = errors.New("control store: corrupt record (move the store file aside to start afresh)")

const (
	entryFormat   = 1
	flagInFlight  = 1
	entryFixedLen = 1 + 1 + 8 + 8
)

// encodeEntry: format byte, flags, since and outcome at (Unix ns, 0 when
// zero), then result and detail each as a uvarint length and bytes. A new
// slice each time: bbolt keeps the value until the transaction ends.
func encodeEntry(e Entry) []byte {
	b := make([]byte, 0, entryFixedLen+4+len(e.Outcome.Result)+len(e.Outcome.Detail))
	var flags byte
	if e.InFlight {
		flags |= flagInFlight
	}
	b = append(b, entryFormat, flags)
	b = binary.BigEndian.AppendUint64(b, uint64(unixNano(e.Since)))
	b = binary.BigEndian.AppendUint64(b, uint64(unixNano(e.Outcome.At)))
	b = binary.AppendUvarint(b, uint64(len(e.Outcome.Result)))
	b = append(b, e.Outcome.Result...)
	b = binary.AppendUvarint(b, uint64(len(e.Outcome.Detail)))
	return append(b, e.Outcome.Detail...)
}

func decodeEntry(v []byte) (Entry, error) {
	if len(v) < entryFixedLen || v[0] != entryFormat {
		return Entry{}, errCorrupt
	}
	var e Entry
	e.InFlight = v[1]&flagInFlight != 0
	e.Since = fromUnixNano(int64(binary.BigEndian.Uint64(v[2:])))
	e.Outcome.At = fromUnixNano(int64(binary.BigEndian.Uint64(v[10:])))
	rest := v[entryFixedLen:]
	var ok bool
	if e.Outcome.Result, rest, ok = readString(rest); !ok {
		return Entry{}, errCorrupt
	}
	if e.Outcome.Detail, rest, ok = readString(rest); !ok || len(rest) != 0 {
		return Entry{}, errCorrupt
	}
	return e, nil
}

func readString(b []byte) (string, []byte, bool) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return "", nil, false
	}
	return string(b[w : w+int(n)]), b[w+int(n):], true
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// len is the number of entries held, expired ones not yet swept included.
func (s *boltStore) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}
