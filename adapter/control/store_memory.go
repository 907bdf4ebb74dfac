package control

import (
	"container/list"
	"sync"
	"time"
)

// memStore is the in-memory Store: a map under one mutex, plus the
// completed entries in a list by time of completion (oldest at the front),
// which serves both the lazy expiry sweep and eviction. In-flight entries
// are only in the map.
type memStore struct {
	cfg StoreConfig

	mu     sync.Mutex
	m      map[string]*memEntry
	done   *list.List // of string keys, completed entries, oldest first
	seq    map[string]uint64
	closed bool
	kbuf   []byte
}

type memEntry struct {
	key  string // the map key, shared with the done list
	e    Entry
	elem *list.Element // in done when completed
}

// NewMemoryStore returns a Store that lives in memory: a restart forgets
// every key (the capabilities say durable: false).
func NewMemoryStore(c StoreConfig) Store {
	return &memStore{
		cfg:  c.withDefaults(),
		m:    make(map[string]*memEntry),
		done: list.New(),
		seq:  make(map[string]uint64),
	}
}

// key encodes k into the reused buffer; the string(...) conversion in a
// map lookup does not allocate, only an insert keeps a copy.
func (s *memStore) key(k Key) []byte {
	s.kbuf = appendKey(s.kbuf[:0], k)
	return s.kbuf
}

func (s *memStore) Begin(k Key, now time.Time) (Entry, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Entry{}, false, ErrClosed
	}
	s.sweep(now, sweepBatch)
	kb := s.key(k)
	if me, ok := s.m[string(kb)]; ok {
		if !s.cfg.expired(me.e, now) {
			return me.e, false, nil
		}
		s.remove(string(kb), me)
	}
	if len(s.m) >= s.cfg.MaxKeys {
		front := s.done.Front()
		if front == nil {
			return Entry{}, false, ErrStoreFull
		}
		oldest := front.Value.(string)
		s.remove(oldest, s.m[oldest])
	}
	key := string(kb)
	s.m[key] = &memEntry{key: key, e: Entry{InFlight: true, Since: now}}
	return Entry{}, true, nil
}

func (s *memStore) Finish(k Key, o Outcome) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	kb := s.key(k)
	me, ok := s.m[string(kb)]
	if !ok {
		return ErrNoEntry
	}
	me.e = Entry{Outcome: o, Since: s.cfg.finishTime(o)}
	if me.elem != nil {
		s.done.MoveToBack(me.elem)
	} else {
		me.elem = s.done.PushBack(me.key)
	}
	return nil
}

func (s *memStore) Release(k Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	kb := s.key(k)
	if me, ok := s.m[string(kb)]; ok {
		s.remove(string(kb), me)
	}
	return nil
}

func (s *memStore) NextSeq(lane string) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, ErrClosed
	}
	s.seq[lane]++
	return s.seq[lane], nil
}

func (s *memStore) Durable() bool { return false }

func (s *memStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.m, s.done, s.seq = nil, nil, nil
	return nil
}

// sweep removes at most n expired entries from the front of done. The list
// is in order of completion, so it stops at the first live one (an entry
// finished with an earlier Outcome.At than one before it may linger a
// little; it still counts as absent when looked up).
func (s *memStore) sweep(now time.Time, n int) {
	for ; n > 0; n-- {
		front := s.done.Front()
		if front == nil {
			return
		}
		key := front.Value.(string)
		me := s.m[key]
		if !s.cfg.expired(me.e, now) {
			return
		}
		s.remove(key, me)
	}
}

func (s *memStore) remove(key string, me *memEntry) {
	if me.elem != nil {
		s.done.Remove(me.elem)
	}
	delete(s.m, key)
}

// len is the number of entries held, expired ones not yet swept included.
func (s *memStore) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
