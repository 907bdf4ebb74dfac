package control

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// A damaged store file (issue #26, defect 5): whatever a page of it holds,
// OpenStore refuses it with an error that names the file and says to move
// it aside, or the store opens and every call returns (an error at worst);
// never a panic or a fault that takes the process down. Before the fix a
// damaged leaf of the expiry index opened, answered duplicates, then
// panicked in the first new Begin's sweep (index out of range inside
// bbolt), and other damage faulted (SIGSEGV) at open.

// damagePatterns are the ways a page is damaged: its header's fields, its
// first element's fields (offsets for a leaf; a branch's differ, and the
// same bytes then hit its pgid), the whole page zeroed or random.
var damagePatterns = []struct {
	name string
	fn   func(page []byte, rnd *rand.Rand)
}{
	{"zeroed", func(p []byte, _ *rand.Rand) { clear(p) }},
	{"count 0xffff", func(p []byte, _ *rand.Rand) { binary.LittleEndian.PutUint16(p[10:], 0xffff) }},
	{"leaf and branch swapped", func(p []byte, _ *rand.Rand) { p[8] ^= 0x03 }},
	{"overflow huge", func(p []byte, _ *rand.Rand) { binary.LittleEndian.PutUint32(p[12:], 0x7fffffff) }},
	{"element pos huge", func(p []byte, _ *rand.Rand) {
		binary.LittleEndian.PutUint32(p[16:], 0xfffffff0)
		binary.LittleEndian.PutUint32(p[20:], 0xfffffff0)
	}},
	{"element sizes huge", func(p []byte, _ *rand.Rand) {
		binary.LittleEndian.PutUint32(p[24:], 0x7ffffff0)
		binary.LittleEndian.PutUint32(p[28:], 0x7ffffff0)
	}},
	{"random body", func(p []byte, rnd *rand.Rand) {
		for i := 16; i < len(p); i++ {
			p[i] = byte(rnd.Uint32())
		}
	}},
	{"random bytes here and there", func(p []byte, rnd *rand.Rand) {
		for range 8 {
			p[rnd.IntN(len(p))] = byte(rnd.Uint32())
		}
	}},
}

// damageFixture makes a store in dir as a worker's lane 004 leaves it:
// receipts (some in flight), an expiry index large enough for pages of
// its own, sequence numbers and an event log.
func damageFixture(t *testing.T, dir string) {
	t.Helper()
	s, err := OpenStore(dir, StoreConfig{Events: true})
	if err != nil {
		t.Fatal(err)
	}
	l, err := OpenEventLog(EventLogConfig{Store: s, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 120 {
		k := Key{Lane: "004", AgentID: "w1", RequestID: fmt.Sprintf("request-%03d", i)}
		if _, _, err := s.Begin(k, t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
		if i%10 == 9 {
			continue // left in flight
		}
		build := func(seq uint64) []byte {
			return fmt.Appendf(nil, `{"event_type":"worker.response","seq":%d,"worker_id":"w1","payload":{"request_id":%q,"ok":true,"response":{"pad":%q}}}`,
				seq, k.RequestID, strings.Repeat("x", 100))
		}
		if _, err := l.AppendReceipt(s, k, "ok", t0.Add(time.Duration(i)*time.Second), build); err != nil {
			t.Fatal(err)
		}
		l.Append(evLine)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// useDamaged runs a worker's calls on a store that opened: new requests
// (Begin, a receipt through the event log, Finish, Release), a duplicate,
// NextSeq. Errors are allowed; they must say what to do once the store
// is found broken.
func useDamaged(t *testing.T, s Store) (failed int) {
	t.Helper()
	l, err := OpenEventLog(EventLogConfig{Store: s, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		failed++
		l, _ = OpenEventLog(EventLogConfig{Logger: slog.New(slog.DiscardHandler)})
	}
	defer l.Close()
	now := t0.Add(48 * time.Hour) // every completed entry expired: the sweep reads the index
	check := func(err error) {
		if err == nil {
			return
		}
		failed++
		if msg := err.Error(); strings.Contains(msg, "damaged") && !strings.Contains(msg, "move the file aside") {
			t.Errorf("a damaged store's error does not say what to do: %v", err)
		}
	}
	for i := range 3 {
		k := Key{Lane: "004", AgentID: "w1", RequestID: fmt.Sprintf("new-%d", i)}
		_, fresh, err := s.Begin(k, now)
		check(err)
		if err != nil || !fresh {
			continue
		}
		_, err = l.AppendReceipt(s, k, "ok", now, evLine)
		check(err)
	}
	_, _, err = s.Begin(Key{Lane: "004", AgentID: "w1", RequestID: "request-005"}, t0)
	check(err)
	check(s.Finish(Key{Lane: "004", AgentID: "w1", RequestID: "request-009"}, Outcome{Result: "ok", At: now}))
	check(s.Release(Key{Lane: "004", AgentID: "w1", RequestID: "request-019"}))
	_, err = s.NextSeq("004")
	check(err)
	return failed
}

func TestBoltDamagedPages(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	damageFixture(t, base)
	orig, err := os.ReadFile(filepath.Join(base, StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	psz := os.Getpagesize()
	pages := len(orig) / psz
	if pages < 8 {
		t.Fatalf("the fixture has %d pages; too few to damage", pages)
	}
	var refused, opened, failedCalls int
	rnd := rand.New(rand.NewPCG(26, 5))
	// Pages 0 and 1 are the metas (checksummed: bbolt picks the other, or
	// says the file is not a store); from 2 on, every page in use.
	for id := 2; id < pages; id++ {
		if isFreePage(orig, psz, id) {
			continue
		}
		for _, pat := range damagePatterns {
			dir := t.TempDir()
			b := bytes.Clone(orig)
			pat.fn(b[id*psz:(id+1)*psz], rnd)
			path := filepath.Join(dir, StoreFile)
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := OpenStore(dir, StoreConfig{Events: true, MaxKeys: 1 << 20})
			if err != nil {
				refused++
				if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "aside") {
					t.Errorf("page %d, %s: the error does not name the file and what to do: %v", id, pat.name, err)
				}
				continue
			}
			opened++
			failedCalls += useDamaged(t, s)
			s.Close()
		}
	}
	t.Logf("%d pages damaged %d ways: %d refused at open, %d opened (%d calls failed, none crashed)",
		pages-2, len(damagePatterns), refused, opened, failedCalls)
	if refused == 0 {
		t.Error("no damage was found at open")
	}
}

// isFreePage reports whether page id of file is on bbolt's freelist (or
// past the high-water mark), so that damage there changes nothing.
func isFreePage(file []byte, psz, id int) bool {
	db, err := bolt.Open(writeTemp(file), 0o600, nil)
	if err != nil {
		return false
	}
	defer db.Close()
	free := false
	db.View(func(tx *bolt.Tx) error {
		info, err := tx.Page(id)
		free = err != nil || info == nil || info.Type == "free"
		return nil
	})
	return free
}

var tempFiles = map[string]string{}

// writeTemp writes b to a temp file once per content and returns its path.
func writeTemp(b []byte) string {
	k := string(b[:min(len(b), 1<<20)])
	if p, ok := tempFiles[k]; ok {
		return p
	}
	f, err := os.CreateTemp("", "ccbdamage-*.db")
	if err != nil {
		panic(err)
	}
	io.Copy(f, bytes.NewReader(b))
	f.Close()
	tempFiles[k] = f.Name()
	return f.Name()
}

// TestBoltDamagedIndex is the case of issue #26 exactly: a leaf of the
// expiry index whose element count is damaged. Before the fix the store
// opened, answered a duplicate, then panicked at the next new Begin.
func TestBoltDamagedIndex(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	damageFixture(t, dir)
	path := filepath.Join(dir, StoreFile)
	root := bucketRoot(t, path, bucketExpiry)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	psz := os.Getpagesize()
	binary.LittleEndian.PutUint16(b[int(root)*psz+10:], 0xffff)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := OpenStore(dir, StoreConfig{Events: true})
	if err == nil {
		t.Cleanup(func() { s.Close() })
		useDamaged(t, s)
		t.Fatal("a damaged expiry index opened")
	}
	for _, want := range []string{path, "damaged file", "move the file aside"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q: %v", want, err)
		}
	}
}

// bucketRoot is the root page of bucket name in the file at path.
func bucketRoot(t *testing.T, path string, name []byte) uint64 {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var root uint64
	db.View(func(tx *bolt.Tx) error {
		root = uint64(tx.Bucket(name).RootPage())
		return nil
	})
	if root == 0 {
		t.Fatalf("bucket %s is inline: no page of its own to damage", name)
	}
	return root
}

// TestBoltBrokenAfterAPanic: a panic inside bbolt during a call (damage
// the check at open missed, or a fault reading the file) fails that call
// and every later one with an error that names the file and says what to
// do; Close still works.
func TestBoltBrokenAfterAPanic(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openBolt(t, dir, StoreConfig{})
	bs := s.(*boltStore)
	err := bs.guard(func() error { panic("index out of range [65535] with length 12") })
	var nilp *int
	err2 := bs.guard(func() error { return fmt.Errorf("%d", *nilp) })
	for _, e := range []error{err, err2} {
		if e == nil || !strings.Contains(e.Error(), filepath.Join(dir, StoreFile)) || !strings.Contains(e.Error(), "move the file aside") {
			t.Errorf("after a panic: %v", e)
		}
	}
	if _, _, err := s.Begin(key("a"), t0); err == nil || !strings.Contains(err.Error(), "index out of range") {
		t.Errorf("Begin on a broken store: %v", err)
	}
	if err := s.Finish(key("a"), Outcome{}); err == nil {
		t.Error("Finish on a broken store succeeded")
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close of a broken store: %v", err)
	}
	// A fault reading memory, as bbolt's reads of a damaged page through
	// its memory map can be, is recovered too.
	err = guardPanics(func() error {
		var p *[1 << 20]byte
		_ = p[12345]
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "damaged file") {
		t.Errorf("a nil dereference: %v", err)
	}
}
