package control

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The tests in this file run against both stores.

var t0 = time.Date(2026, 2, 20, 21, 15, 0, 0, time.UTC)

// fakeClock is an injected StoreConfig.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

type storeKind struct {
	name string
	open func(t testing.TB, c StoreConfig) Store
}

var storeKinds = []storeKind{
	{"memory", func(t testing.TB, c StoreConfig) Store {
		s := NewMemoryStore(c)
		t.Cleanup(func() { s.Close() })
		return s
	}},
	{"durable", func(t testing.TB, c StoreConfig) Store {
		s, err := OpenStore(t.TempDir(), c)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}},
}

func forEachStore(t *testing.T, fn func(t *testing.T, k storeKind)) {
	for _, k := range storeKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			fn(t, k)
		})
	}
}

func key(id string) Key {
	return Key{Lane: "000", Team: "atm-dev", SessionID: "sess", AgentID: "codex:abc", RequestID: id}
}

func mustBegin(t *testing.T, s Store, k Key, now time.Time) (Entry, bool) {
	t.Helper()
	prev, fresh, err := s.Begin(k, now)
	if err != nil {
		t.Fatalf("Begin(%q): %v", k.RequestID, err)
	}
	return prev, fresh
}

func wantFresh(t *testing.T, s Store, k Key, now time.Time) {
	t.Helper()
	if prev, fresh := mustBegin(t, s, k, now); !fresh {
		t.Fatalf("Begin(%q) at %v: duplicate of %+v, want fresh", k.RequestID, now, prev)
	}
}

func wantDup(t *testing.T, s Store, k Key, now time.Time) Entry {
	t.Helper()
	prev, fresh := mustBegin(t, s, k, now)
	if fresh {
		t.Fatalf("Begin(%q) at %v: fresh, want a duplicate", k.RequestID, now)
	}
	return prev
}

func mustFinish(t *testing.T, s Store, k Key, o Outcome) {
	t.Helper()
	if err := s.Finish(k, o); err != nil {
		t.Fatalf("Finish(%q): %v", k.RequestID, err)
	}
}

func TestStoreLifecycle(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk storeKind) {
		s := sk.open(t, StoreConfig{TTL: time.Minute})
		k := key("r1")
		wantFresh(t, s, k, t0)
		prev := wantDup(t, s, k, t0.Add(time.Second))
		if !prev.InFlight || !prev.Since.Equal(t0) {
			t.Fatalf("in flight: got %+v, want InFlight since %v", prev, t0)
		}
		o := Outcome{Result: "ok", Detail: "queued", At: t0.Add(2 * time.Second)}
		mustFinish(t, s, k, o)
		prev = wantDup(t, s, k, t0.Add(3*time.Second))
		if prev.InFlight || prev.Outcome.Result != o.Result || prev.Outcome.Detail != o.Detail ||
			!prev.Outcome.At.Equal(o.At) || !prev.Since.Equal(o.At) {
			t.Fatalf("completed: got %+v, want outcome %+v since its At", prev, o)
		}
		if err := s.Release(k); err != nil {
			t.Fatal(err)
		}
		wantFresh(t, s, k, t0.Add(4*time.Second))
		if err := s.Release(key("never")); err != nil {
			t.Fatalf("Release of an absent key: %v", err)
		}
		if err := s.Finish(key("never"), Outcome{Result: "ok"}); !errors.Is(err, ErrNoEntry) {
			t.Fatalf("Finish of an absent key: %v, want ErrNoEntry", err)
		}
	})
}

// Fields that run together must not make keys collide.
func TestStoreKeyFieldsDistinct(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk storeKind) {
		s := sk.open(t, StoreConfig{})
		keys := []Key{
			{Lane: "000", Team: "a|b", SessionID: "c", AgentID: "d", RequestID: "e"},
			{Lane: "000", Team: "a", SessionID: "b|c", AgentID: "d", RequestID: "e"},
			{Lane: "000", Team: "a\x00", SessionID: "b", AgentID: "d", RequestID: "e"},
			{Lane: "000", Team: "a", SessionID: "\x00b", AgentID: "d", RequestID: "e"},
			{Lane: "001", Team: "a", SessionID: "b", AgentID: "d", RequestID: "e"},
			{Lane: "000", Team: "a", SessionID: "b", AgentID: "d", RequestID: "e"},
			{Lane: "000", Team: "a", SessionID: "b", AgentID: "", RequestID: "de"},
		}
		for _, k := range keys {
			wantFresh(t, s, k, t0)
		}
		for _, k := range keys {
			wantDup(t, s, k, t0)
		}
	})
}

// Many goroutines Begin the same keys at once: exactly one Begin per key is fresh.
func TestStoreConcurrentSameKey(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk storeKind) {
		s := sk.open(t, StoreConfig{})
		const keys, perKey = 10, 20
		var fresh [keys]atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := 0; i < keys*perKey; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				n := i % keys
				k := key(fmt.Sprint("same-", n))
				_, f, err := s.Begin(k, t0)
				if err != nil {
					t.Error(err)
					return
				}
				if f {
					fresh[n].Add(1)
					if err := s.Finish(k, Outcome{Result: "ok", At: t0}); err != nil {
						t.Error(err)
					}
				}
			}()
		}
		close(start)
		wg.Wait()
		for n := range fresh {
			if got := fresh[n].Load(); got != 1 {
				t.Errorf("key %d: %d fresh Begins, want exactly 1", n, got)
			}
		}
	})
}

// Goroutines on different keys: every first Begin fresh, every second a duplicate.
func TestStoreConcurrentDifferentKeys(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk storeKind) {
		s := sk.open(t, StoreConfig{})
		workers, per := 8, 100
		if s.Durable() {
			per = 10 // every change is an fsync
		}
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < per; i++ {
					k := key(fmt.Sprintf("w%d-%d", w, i))
					if _, f, err := s.Begin(k, t0); err != nil || !f {
						t.Errorf("%s: first Begin fresh=%v err=%v", k.RequestID, f, err)
					}
					if err := s.Finish(k, Outcome{Result: "ok", At: t0}); err != nil {
						t.Error(err)
					}
					if _, f, err := s.Begin(k, t0); err != nil || f {
						t.Errorf("%s: second Begin fresh=%v err=%v", k.RequestID, f, err)
					}
				}
			}()
		}
		wg.Wait()
		if got, want := s.(interface{ len() int }).len(), workers*per; got != want {
			t.Fatalf("store holds %d entries, want %d", got, want)
		}
	})
}

func TestStoreTTL(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk storeKind) {
		const ttl = time.Minute
		s := sk.open(t, StoreConfig{TTL: ttl})
		done, running := key("done"), key("running")
		wantFresh(t, s, done, t0)
		mustFinish(t, s, done, Outcome{Result: "ok", At: t0.Add(time.Second)})
		wantFresh(t, s, running, t0)
		// The TTL counts from the last change (the Finish), and an age of
		// exactly TTL is still inside the window.
		wantDup(t, s, done, t0.Add(time.Second+ttl))
		wantFresh(t, s, done, t0.Add(time.Second+ttl+time.Nanosecond))
		// In flight never expires.
		if prev := wantDup(t, s, running, t0.Add(100*ttl)); !prev.InFlight {
			t.Fatalf("in-flight entry after 100 TTLs: %+v", prev)
		}
	})
}

// Finish with no Outcome.At takes the store's clock.
func TestStoreFinishUsesClock(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk storeKind) {
		clk := &fakeClock{t: t0.Add(time.Hour)}
		s := sk.open(t, StoreConfig{TTL: time.Minute, Now: clk.Now})
		k := key("r")
		wantFresh(t, s, k, t0)
		mustFinish(t, s, k, Outcome{Result: "ok"})
		if prev := wantDup(t, s, k, t0.Add(time.Hour)); !prev.Since.Equal(t0.Add(time.Hour)) {
			t.Fatalf("Since = %v, want the clock's %v", prev.Since, t0.Add(time.Hour))
		}
	})
}

// The oldest completed entry (by Finish, not by Begin) is evicted first.
func TestStoreEvictionOrder(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk storeKind) {
		s := sk.open(t, StoreConfig{TTL: time.Hour, MaxKeys: 3})
		a, b, c, d := key("a"), key("b"), key("c"), key("d")
		for _, k := range []Key{a, b, c} {
			wantFresh(t, s, k, t0)
		}
		mustFinish(t, s, c, Outcome{Result: "ok", At: t0.Add(1 * time.Second)})
		mustFinish(t, s, a, Outcome{Result: "ok", At: t0.Add(2 * time.Second)})
		mustFinish(t, s, b, Outcome{Result: "ok", At: t0.Add(3 * time.Second)})
		wantFresh(t, s, d, t0.Add(4*time.Second)) // evicts c
		wantDup(t, s, a, t0.Add(5*time.Second))
		wantDup(t, s, b, t0.Add(5*time.Second))
		wantFresh(t, s, c, t0.Add(5*time.Second)) // evicts a
		wantFresh(t, s, a, t0.Add(6*time.Second)) // evicts b
		wantDup(t, s, d, t0.Add(6*time.Second))
		wantDup(t, s, c, t0.Add(6*time.Second))
	})
}

// In-flight entries are never evicted: a full store of them refuses.
func TestStoreFullOfInFlight(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk storeKind) {
		s := sk.open(t, StoreConfig{TTL: time.Hour, MaxKeys: 2})
		a, b, c := key("a"), key("b"), key("c")
		wantFresh(t, s, a, t0)
		wantFresh(t, s, b, t0)
		if _, _, err := s.Begin(c, t0); !errors.Is(err, ErrStoreFull) {
			t.Fatalf("Begin on a store full of in-flight entries: %v, want ErrStoreFull", err)
		}
		wantDup(t, s, a, t0)
		wantDup(t, s, b, t0)
		mustFinish(t, s, a, Outcome{Result: "ok", At: t0})
		wantFresh(t, s, c, t0) // evicts a, the only completed entry
		if prev := wantDup(t, s, b, t0); !prev.InFlight {
			t.Fatalf("b: %+v, want still in flight", prev)
		}
		wantDup(t, s, c, t0)
	})
}

// Expired entries are swept a few per Begin, never all at once, and all in the end.
func TestStoreSweepIsBounded(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk storeKind) {
		const ttl, n = time.Minute, 3 * sweepBatch
		s := sk.open(t, StoreConfig{TTL: ttl})
		for i := 0; i < n; i++ {
			k := key(fmt.Sprint("old-", i))
			wantFresh(t, s, k, t0)
			mustFinish(t, s, k, Outcome{Result: "ok", At: t0})
		}
		held := s.(interface{ len() int })
		later := t0.Add(2 * ttl)
		wantFresh(t, s, key("new-0"), later)
		if got, want := held.len(), n-sweepBatch+1; got != want {
			t.Fatalf("after one Begin: %d entries, want %d (one batch swept)", got, want)
		}
		for i := 1; i < 4; i++ {
			wantFresh(t, s, key(fmt.Sprint("new-", i)), later)
		}
		if got := held.len(); got != 4 {
			t.Fatalf("after four Begins: %d entries, want 4 (every expired one swept)", got)
		}
	})
}

func TestStoreNextSeq(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk storeKind) {
		s := sk.open(t, StoreConfig{})
		for want := uint64(1); want <= 3; want++ {
			if got, err := s.NextSeq("004"); err != nil || got != want {
				t.Fatalf("NextSeq(004) = %d, %v; want %d", got, err, want)
			}
		}
		const workers, per = 4, 10
		seen := make(chan uint64, workers*per)
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < per; i++ {
					n, err := s.NextSeq("001")
					if err != nil {
						t.Error(err)
					}
					seen <- n
				}
			}()
		}
		wg.Wait()
		close(seen)
		got := map[uint64]bool{}
		for n := range seen {
			if got[n] || n < 1 || n > workers*per {
				t.Fatalf("NextSeq(001) gave %d twice or out of 1..%d", n, workers*per)
			}
			got[n] = true
		}
		if n, _ := s.NextSeq("004"); n != 4 {
			t.Fatalf("lane 004 after lane 001's: %d, want 4", n)
		}
	})
}

func TestStoreClosed(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk storeKind) {
		s := sk.open(t, StoreConfig{})
		wantFresh(t, s, key("a"), t0)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Begin(key("b"), t0); !errors.Is(err, ErrClosed) {
			t.Errorf("Begin after Close: %v", err)
		}
		if err := s.Finish(key("a"), Outcome{}); !errors.Is(err, ErrClosed) {
			t.Errorf("Finish after Close: %v", err)
		}
		if err := s.Release(key("a")); !errors.Is(err, ErrClosed) {
			t.Errorf("Release after Close: %v", err)
		}
		if _, err := s.NextSeq("000"); !errors.Is(err, ErrClosed) {
			t.Errorf("NextSeq after Close: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	})
}

func TestStoreDurable(t *testing.T) {
	if NewMemoryStore(StoreConfig{}).Durable() {
		t.Error("memory store says durable")
	}
	s, err := OpenStore(t.TempDir(), StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.Durable() {
		t.Error("bbolt store says not durable")
	}
}

// The default bound holds every request id for its whole window at the
// rates ccbridge is sized for (MaxRate000, MaxRate004): eviction, which
// lets a retry be carried out again, cannot come before the window ends.
func TestDefaultDedupeMaxHoldsTheWindow(t *testing.T) {
	for _, c := range []struct {
		lane   string
		rate   int
		window time.Duration
	}{
		{"000", MaxRate000, DefaultDedupeTTL},
		{"001", MaxRate000, DedupeWindow001},
		{"004", MaxRate004, ReceiptTTL},
	} {
		if need := c.rate * int(c.window/time.Second); DefaultDedupeMax < need {
			t.Errorf("lane %s: %d ids a second for %v is %d ids, over DefaultDedupeMax %d", c.lane, c.rate, c.window, need, DefaultDedupeMax)
		}
	}
	var c Config
	c.Defaults()
	if c.DedupeMax != DefaultDedupeMax {
		t.Errorf("Defaults: DedupeMax %d", c.DedupeMax)
	}
}

// The bound's consequence, as documented: past --dedupe-max the oldest
// completed id is forgotten within its window, and its retry is fresh.
func TestStoreEvictedRetryIsFresh(t *testing.T) {
	forEachStore(t, func(t *testing.T, sk storeKind) {
		s := sk.open(t, StoreConfig{MaxKeys: 3, TTL: time.Hour})
		for _, id := range []string{"a", "b", "c", "d"} {
			wantFresh(t, s, key(id), t0)
			mustFinish(t, s, key(id), Outcome{Result: "ok", At: t0})
		}
		wantFresh(t, s, key("a"), t0.Add(time.Minute)) // within the hour: evicted, judged anew
		wantDup(t, s, key("d"), t0.Add(time.Minute))
	})
}
