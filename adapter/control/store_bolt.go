package control

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The durable store is one bbolt file, DIR/control.db, with four buckets:
//
//	entries  encoded Key → entry (format byte, flags, since, outcome at, result, detail)
//	expiry   since (8 bytes, big-endian, ordered) + encoded Key → empty;
//	         completed entries only, oldest first: the sweep and eviction
//	         read its first keys and never scan
//	seq      lane → last sequence number (8 bytes, big-endian)
//	meta     "format" → 1
//
// Every change is one read-write transaction, committed with bbolt's
// fsync (NoSync is not used): Begin's in-flight entry is on disk before the
// lane injects, so a crash after the injection cannot let a retry inject
// again. A Begin that finds a live entry reads it in a read-only
// transaction and writes nothing.

// StoreFile is the durable store's file name inside the state directory.
const StoreFile = "control.db"

// lockTimeout is how long OpenStore waits for bbolt's file lock before
// saying another process holds the store.
const lockTimeout = 250 * time.Millisecond

const storeFormat = 1

var (
	bucketEntries = []byte("entries")
	bucketExpiry  = []byte("expiry")
	bucketSeq     = []byte("seq")
	bucketMeta    = []byte("meta")
	keyFormat     = []byte("format")
)

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

	mu     sync.Mutex // serialises every operation, guards count and closed
	db     *bolt.DB
	count  int // entries held
	closed bool
}

// OpenStore opens (creating it if needed) the durable store in dir: the
// directory is created with mode 0700 when missing, the file with 0600.
// Entries found in flight are recovered as completed with result
// internal_error (see recoveredDetail). A store another process holds
// open, or a file that is not a store, gives an error that says so.
func OpenStore(dir string, c StoreConfig) (Store, error) {
	c = c.withDefaults()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("control store: state dir: %w", err)
	}
	path := filepath.Join(dir, StoreFile)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout})
	switch {
	case errors.Is(err, bolt.ErrTimeout):
		return nil, fmt.Errorf("control store %s: locked by another process (another ccbridge with the same --state-dir?): %w", path, err)
	case err != nil:
		return nil, fmt.Errorf("control store %s: cannot open (not a store file, or corrupt; move it aside to start afresh): %w", path, err)
	}
	s := &boltStore{cfg: c, path: path, db: db}
	if err := s.prepare(c.Now()); err != nil {
		db.Close() // best effort: the open already failed
		return nil, fmt.Errorf("control store %s: %w", path, err)
	}
	return s, nil
}

// prepare creates the buckets, checks the format, counts the entries and
// turns in-flight ones into completed ones. A panic from a damaged file is
// an error, not a crash.
func (s *boltStore) prepare(now time.Time) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("corrupt store file (move it aside to start afresh): %v", p)
		}
	}()
	return s.db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		switch f := meta.Get(keyFormat); {
		case f == nil:
			if err := meta.Put(keyFormat, []byte{storeFormat}); err != nil {
				return err
			}
		case len(f) != 1 || f[0] != storeFormat:
			return fmt.Errorf("unknown store format %x (written by another version of ccbridge?)", f)
		}
		for _, name := range [][]byte{bucketEntries, bucketExpiry, bucketSeq} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		eb, xb := tx.Bucket(bucketEntries), tx.Bucket(bucketExpiry)
		var stuck [][]byte
		n := 0
		err = eb.ForEach(func(k, v []byte) error {
			e, err := decodeEntry(v)
			if err != nil {
				return err
			}
			n++
			if e.InFlight {
				stuck = append(stuck, bytes.Clone(k))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range stuck {
			e := Entry{Outcome: Outcome{Result: recoveredResult, Detail: recoveredDetail, At: now}, Since: now}
			if err := putEntry(eb, xb, k, e); err != nil {
				return err
			}
		}
		s.count = n
		return nil
	})
}

func (s *boltStore) Begin(k Key, now time.Time) (Entry, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Entry{}, false, ErrClosed
	}
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
		key := appendKey(nil, k)
		v := eb.Get(key)
		if v == nil {
			return 0, ErrNoEntry
		}
		old, err := decodeEntry(v)
		if err != nil {
			return 0, err
		}
		if !old.InFlight {
			if err := xb.Delete(expiryKey(old.Since, key)); err != nil {
				return 0, err
			}
		}
		return 0, putEntry(eb, xb, key, Entry{Outcome: o, Since: s.cfg.finishTime(o)})
	})
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

// update runs fn in one read-write transaction; fn returns the change in
// the number of entries, applied once the transaction is committed.
func (s *boltStore) update(fn func(eb, xb *bolt.Bucket) (int, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
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
}

func (s *boltStore) NextSeq(lane string) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, ErrClosed
	}
	var n uint64
	err := s.db.Update(func(tx *bolt.Tx) error {
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
	return s.db.Close()
}

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
