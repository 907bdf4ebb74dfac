package control

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func openBolt(t *testing.T, dir string, c StoreConfig) Store {
	t.Helper()
	s, err := OpenStore(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// What was accepted before a restart is still a duplicate after it, an
// entry left in flight comes back completed as internal_error, and the
// sequence numbers go on.
func TestBoltSurvivesReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clk := &fakeClock{t: t0}
	cfg := StoreConfig{TTL: time.Minute, Now: clk.Now}
	s := openBolt(t, dir, cfg)
	done, stuck := key("done"), key("stuck")
	wantFresh(t, s, done, t0)
	mustFinish(t, s, done, Outcome{Result: "not_live", Detail: "worker exited", At: t0})
	wantFresh(t, s, stuck, t0)
	for i := 0; i < 3; i++ {
		if _, err := s.NextSeq("000"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	reopened := t0.Add(30 * time.Second)
	clk.Set(reopened)
	s = openBolt(t, dir, cfg)
	defer s.Close()
	prev := wantDup(t, s, done, reopened)
	if prev.InFlight || prev.Outcome.Result != "not_live" || prev.Outcome.Detail != "worker exited" ||
		!prev.Outcome.At.Equal(t0) || !prev.Since.Equal(t0) {
		t.Fatalf("completed entry after reopen: %+v", prev)
	}
	prev = wantDup(t, s, stuck, reopened)
	if prev.InFlight || prev.Outcome.Result != recoveredResult || prev.Outcome.Detail != recoveredDetail ||
		!prev.Since.Equal(reopened) {
		t.Fatalf("in-flight entry after reopen: %+v, want completed %q since the reopen", prev, recoveredResult)
	}
	if n, err := s.NextSeq("000"); err != nil || n != 4 {
		t.Fatalf("NextSeq after reopen = %d, %v; want 4", n, err)
	}
	if got := s.(interface{ len() int }).len(); got != 2 {
		t.Fatalf("entries counted at open: %d, want 2", got)
	}
	// The TTL still runs: "done" from its Finish, "stuck" from the reopen.
	wantFresh(t, s, done, t0.Add(time.Minute+time.Nanosecond))
	wantDup(t, s, stuck, reopened.Add(time.Minute))
	wantFresh(t, s, stuck, reopened.Add(time.Minute+time.Nanosecond))
}

// MaxKeys and eviction keep working across a reopen (the count is rebuilt).
func TestBoltBoundAfterReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := StoreConfig{TTL: time.Hour, MaxKeys: 2}
	s := openBolt(t, dir, cfg)
	wantFresh(t, s, key("a"), t0)
	mustFinish(t, s, key("a"), Outcome{Result: "ok", At: t0})
	wantFresh(t, s, key("b"), t0)
	mustFinish(t, s, key("b"), Outcome{Result: "ok", At: t0.Add(time.Second)})
	s.Close()
	s = openBolt(t, dir, cfg)
	defer s.Close()
	wantFresh(t, s, key("c"), t0.Add(2*time.Second)) // evicts a
	wantDup(t, s, key("b"), t0.Add(2*time.Second))
	wantFresh(t, s, key("a"), t0.Add(2*time.Second))
}

func TestBoltModes(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state", "nested")
	s := openBolt(t, dir, StoreConfig{})
	defer s.Close()
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, StoreFile): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", path, got, want)
		}
	}
}

// A second OpenStore on a directory in use fails fast and says why.
func TestBoltLocked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openBolt(t, dir, StoreConfig{})
	defer s.Close()
	start := time.Now()
	s2, err := OpenStore(dir, StoreConfig{})
	if err == nil {
		s2.Close()
		t.Fatal("second OpenStore on the same dir succeeded")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("second OpenStore took %v to fail", took)
	}
	if !strings.Contains(err.Error(), "locked by another process") {
		t.Errorf("error does not say the store is locked: %v", err)
	}
}

func TestBoltNotAStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	junk := []byte(strings.Repeat("this is not a bbolt file\n", 1000))
	if err := os.WriteFile(filepath.Join(dir, StoreFile), junk, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := OpenStore(dir, StoreConfig{})
	if err == nil {
		s.Close()
		t.Fatal("OpenStore on a junk file succeeded")
	}
	if !strings.Contains(err.Error(), "not a store file, or corrupt") {
		t.Errorf("unclear error: %v", err)
	}
}

func TestBoltStateDirIsAFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := OpenStore(file, StoreConfig{}); err == nil {
		s.Close()
		t.Fatal("OpenStore with a file as its dir succeeded")
	} else if !strings.Contains(err.Error(), "state dir") {
		t.Errorf("unclear error: %v", err)
	}
}

// A damaged record is an error at open (and at Begin), never a crash.
func TestBoltCorruptRecord(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openBolt(t, dir, StoreConfig{})
	wantFresh(t, s, key("a"), t0)
	db := s.(*boltStore).db
	err := db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketEntries).Put(appendKey(nil, key("a")), []byte{entryFormat, 0, 1})
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Begin(key("a"), t0); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("Begin on a damaged record: %v, want a corrupt-record error", err)
	}
	s.Close()
	if s, err := OpenStore(dir, StoreConfig{}); err == nil {
		s.Close()
		t.Fatal("OpenStore over a damaged record succeeded")
	} else if !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("unclear error: %v", err)
	}
}

func TestBoltUnknownFormat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openBolt(t, dir, StoreConfig{})
	err := s.(*boltStore).db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keyFormat, []byte{99})
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err := OpenStore(dir, StoreConfig{}); err == nil {
		s.Close()
		t.Fatal("OpenStore of an unknown format succeeded")
	} else if !strings.Contains(err.Error(), "unknown store format") {
		t.Errorf("unclear error: %v", err)
	}
}

func TestEntryCodec(t *testing.T) {
	cases := []Entry{
		{InFlight: true, Since: t0},
		{Outcome: Outcome{Result: "ok", Detail: "queued", At: t0.Add(time.Second)}, Since: t0.Add(time.Second)},
		{Outcome: Outcome{Result: "internal_error", Detail: strings.Repeat("é", 300)}, Since: time.Unix(-5, 0)},
	}
	for _, e := range cases {
		got, err := decodeEntry(encodeEntry(e))
		if err != nil {
			t.Fatal(err)
		}
		if got.InFlight != e.InFlight || !got.Since.Equal(e.Since) || got.Outcome.Result != e.Outcome.Result ||
			got.Outcome.Detail != e.Outcome.Detail || !got.Outcome.At.Equal(e.Outcome.At) {
			t.Errorf("round trip: %+v → %+v", e, got)
		}
		v := encodeEntry(e)
		for n := 0; n < len(v); n++ {
			if _, err := decodeEntry(v[:n]); err == nil {
				t.Errorf("decodeEntry of %d of %d bytes succeeded", n, len(v))
			}
		}
	}
	// Expiry keys order by time, before 1970 included.
	a, b := expiryKey(time.Unix(-1, 0), []byte("k")), expiryKey(time.Unix(1, 0), []byte("k"))
	if string(a) >= string(b) {
		t.Error("expiry keys do not sort by time")
	}
}
