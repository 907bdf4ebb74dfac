//go:build linux

package control

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tidwall/gjson"
)

// Lane 004 when its receipts cannot be recorded (issue #26, defect 4): the
// caller gets a seq-less internal_error, nothing is recorded, and a retry
// gets the same class of answer or, when nothing ran, a fresh receipt;
// never a receipt that contradicts an earlier answer.

// l4Unrecorded checks a seq-less internal_error for id.
func l4Unrecorded(t *testing.T, what string, r []byte, fresh bool, id string) {
	t.Helper()
	p := gjson.ParseBytes(r)
	if fresh || p.Get("seq").Exists() || p.Get("event_type").Str != "worker.error" || p.Get("payload.code").Str != "internal_error" ||
		p.Get("payload.request_id").Str != id || p.Get("payload.retryable").Type != gjson.True {
		t.Errorf("%s: want a seq-less retryable internal_error for %s, not fresh; fresh %v: %s", what, id, fresh, r)
	}
}

// TestLane004ReceiptNotRecorded: the request ran, its receipt's commit
// failed: the caller is told (internal_error, no seq, nothing on the
// stream); retries run nothing and get internal_error, a recorded receipt
// saying so once the store works again, the same bytes after.
func TestLane004ReceiptNotRecorded(t *testing.T) {
	f, log, _ := openFailing(t, 0)
	e := newL4Env(t, f, log)
	r1, fresh, _ := e.lane.Request(l4Req("r-1", "thread/list", ""), nil)
	if !fresh || gjson.GetBytes(r1, "seq").Uint() != 1 {
		t.Fatalf("first request: fresh %v: %s", fresh, r1)
	}
	f.fail.Store(true)
	line := l4Req("r-2", "thread/list", "")
	r2, fresh, _ := e.lane.Request(line, nil)
	l4Unrecorded(t, "the request whose receipt failed", r2, fresh, "r-2")
	if msg := gjson.GetBytes(r2, "payload.message").Str; !strings.Contains(msg, "could not be recorded") || !strings.Contains(msg, "no space left on device") {
		t.Errorf("the message does not say why: %q", msg)
	}
	again, fresh, _ := e.lane.Request(line, nil)
	l4Unrecorded(t, "its retry while the store fails", again, fresh, "r-2")
	if log.Latest() != 1 {
		t.Errorf("Latest %d after failed receipts, want 1", log.Latest())
	}

	f.fail.Store(false)
	r3, fresh, _ := e.lane.Request(line, nil)
	p := gjson.ParseBytes(r3)
	if !fresh || p.Get("seq").Uint() != 2 || p.Get("payload.code").Str != "internal_error" ||
		!strings.Contains(p.Get("payload.message").Str, "could not be recorded when it was carried out") {
		t.Errorf("the retry once the store works: fresh %v: %s", fresh, r3)
	}
	if r4, fresh, _ := e.lane.Request(line, nil); fresh || !bytes.Equal(r3, r4) {
		t.Errorf("the next retry: fresh %v\n got %s\nwant %s", fresh, r4, r3)
	}
	if r, _, _ := e.lane.Request(l4Req("r-1", "thread/list", ""), nil); !bytes.Equal(r, r1) {
		t.Errorf("r-1 retried: %s, want %s", r, r1)
	}
	if calls := e.target.called(); len(calls) != 2 {
		t.Errorf("the target ran %q, want r-1 and r-2 once each", calls)
	}
	if lines := l4Lines(log); len(lines) != 2 || !bytes.Equal(lines[0], r1) || !bytes.Equal(lines[1], r3) {
		t.Errorf("the stream holds %q", lines)
	}
}

// diskFullChild names the environment variable under which the test
// binary runs one test as a child whose file size limit it lowers itself.
const diskFullChild = "CCBRIDGE_TEST_DISK_FULL_CHILD"

// fullDisk gives a folder whose disk the test can fill and free: a tmpfs
// of 256 KiB (as root; filled by a file that takes its every block), or,
// where none can be mounted, the folder of a child process of the test
// binary that runs the test with its file size limit (RLIMIT_FSIZE)
// lowered to the store file's size (a write past it fails with EFBIG, as
// a full disk fails with ENOSPC). In the parent of such a child, fullDisk
// runs the child, reports its result and returns ok false.
func fullDisk(t *testing.T) (dir string, fill, free func(), ok bool) {
	t.Helper()
	if os.Getenv(diskFullChild) != "" {
		dir = t.TempDir()
		var old syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
			t.Fatal(err)
		}
		fill = func() {
			fi, err := os.Stat(filepath.Join(dir, StoreFile))
			if err != nil {
				t.Fatal(err)
			}
			lim := old
			lim.Cur = uint64(fi.Size())
			if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
				t.Fatal(err)
			}
		}
		free = func() { syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old) }
		t.Cleanup(free)
		return dir, fill, free, true
	}
	mnt := t.TempDir()
	if os.Getenv("CCBRIDGE_TEST_NO_TMPFS") == "" && syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=256k,mode=0700") == nil {
		t.Cleanup(func() {
			if err := syscall.Unmount(mnt, 0); err != nil {
				t.Errorf("unmount %s: %v", mnt, err)
			}
		})
		filler := filepath.Join(mnt, "filler")
		fill = func() {
			f, err := os.OpenFile(filler, os.O_CREATE|os.O_WRONLY, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			buf := make([]byte, 4096)
			for {
				if _, err := f.Write(buf); err != nil {
					if !errors.Is(err, syscall.ENOSPC) {
						t.Fatal(err)
					}
					return
				}
			}
		}
		free = func() {
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
		}
		return filepath.Join(mnt, "state"), fill, free, true
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), diskFullChild+"=1")
	out, err := cmd.CombinedOutput()
	t.Logf("no tmpfs could be mounted: the test ran in a child process with RLIMIT_FSIZE:\n%s", out)
	if err != nil || !bytes.Contains(out, []byte("--- PASS")) {
		t.Fatalf("the child: %v", err)
	}
	return "", nil, nil, false
}

// TestLane004DiskFull: lane 004 under --state-dir on a disk that fills
// up, then has room again. Every answer is a receipt in the stream at its
// seq, or a seq-less internal_error that recorded nothing; a retry of a
// receipt is the same bytes; a retry of an error is an error again while
// the disk is full, then a fresh receipt (the request had not run) or an
// internal_error receipt (it had); no seq is given twice, across a
// restart too.
func TestLane004DiskFull(t *testing.T) {
	dir, fill, free, ok := fullDisk(t)
	if !ok {
		return
	}
	open := func() (Store, *EventLog) {
		s, err := OpenStore(dir, StoreConfig{Events: true})
		if err != nil {
			t.Fatal(err)
		}
		l, err := OpenEventLog(EventLogConfig{Store: s, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return s, l
	}
	s, log := open()
	e := newL4Env(t, s, log)
	e.target.res = Receipt004{OK: true, Response: `{"pad":"` + strings.Repeat("p", 1500) + `"}`}
	recorded := map[string][]byte{}
	var failed []string
	ask := func(id string) ([]byte, bool) {
		r, fresh, _ := e.lane.Request(l4Req(id, "thread/list", ""), nil)
		return r, fresh
	}
	for i := range 5 {
		id := fmt.Sprintf("before-%d", i)
		r, fresh := ask(id)
		if !fresh {
			t.Fatalf("%s before the disk is full: %s", id, r)
		}
		recorded[id] = r
	}
	fill()
	for i := 0; i < 400 && len(failed) < 6; i++ {
		id := fmt.Sprintf("full-%d", i)
		r, fresh := ask(id)
		if fresh {
			recorded[id] = r
			continue
		}
		l4Unrecorded(t, id+" on a full disk", r, fresh, id)
		failed = append(failed, id)
	}
	if len(failed) == 0 {
		t.Fatal("no request failed on a full disk")
	}
	checkStream := func(when string) {
		t.Helper()
		bySeq := map[uint64][]byte{}
		for _, l := range l4Lines(log) {
			bySeq[gjson.GetBytes(l, "seq").Uint()] = l
		}
		for id, r := range recorded {
			seq := gjson.GetBytes(r, "seq").Uint()
			if l, ok := bySeq[seq]; !ok || !bytes.Equal(l, r) {
				t.Errorf("%s: the receipt of %s (seq %d) is not the stream's line at its seq: %s", when, id, seq, l)
			}
		}
	}
	checkStream("on the full disk")
	ran := map[string]int{}
	for _, c := range e.target.called() {
		ran[strings.Fields(c)[0]]++
	}
	nRan := 0
	for _, id := range failed {
		nRan += ran[id]
	}
	t.Logf("on the full disk: %d receipts recorded, then %d requests failed (%d of them after they ran)", len(recorded)-5, len(failed), nRan)
	// retry asks for id again: a recorded receipt comes back the same;
	// otherwise the answer is an internal_error, seq-less (not recorded)
	// or recorded, or, for a request that had not run, a fresh receipt.
	retry := func(id, when string) {
		t.Helper()
		r, fresh := ask(id)
		if want, ok := recorded[id]; ok {
			if fresh || !bytes.Equal(r, want) {
				t.Errorf("%s retried %s: fresh %v\n got %s\nwant %s", id, when, fresh, r, want)
			}
			return
		}
		p := gjson.ParseBytes(r)
		switch {
		case !fresh:
			l4Unrecorded(t, id+" retried "+when, r, fresh, id)
		case !p.Get("seq").Exists():
			t.Errorf("%s retried %s: fresh without a seq: %s", id, when, r)
		case ran[id] == 0 && p.Get("payload.ok").Type != gjson.True:
			t.Errorf("%s had not run: its retry should run it afresh: %s", id, r)
		case ran[id] > 0 && (p.Get("payload.code").Str != "internal_error" ||
			!strings.Contains(p.Get("payload.message").Str, "could not be recorded when it was carried out")):
			t.Errorf("%s had run: its retry should say its receipt was lost: %s", id, r)
		}
		if fresh {
			recorded[id] = r
		}
	}
	for _, id := range failed {
		retry(id, "on the full disk")
	}
	free()
	for _, id := range failed {
		retry(id, "with room again")
		if _, ok := recorded[id]; !ok {
			t.Errorf("%s is not recorded with room again", id)
		}
	}
	runs := map[string]int{}
	for _, c := range e.target.called() {
		runs[strings.Fields(c)[0]]++
	}
	for id, n := range runs {
		if n != 1 {
			t.Errorf("%s ran %d times", id, n)
		}
	}
	for id, want := range recorded {
		if r, fresh := ask(id); fresh || !bytes.Equal(r, want) {
			t.Errorf("%s retried: fresh %v\n got %s\nwant %s", id, fresh, r, want)
		}
	}
	checkStream("with room again")
	latest := log.Latest()
	log.Close()
	s.Close()

	s, log = open()
	t.Cleanup(func() { log.Close(); s.Close() })
	e = newL4Env(t, s, log)
	for id, want := range recorded {
		if r, fresh := ask(id); fresh || !bytes.Equal(r, want) {
			t.Errorf("%s retried after a restart: fresh %v\n got %s\nwant %s", id, fresh, r, want)
		}
	}
	if r, _ := ask("after"); gjson.GetBytes(r, "seq").Uint() != latest+1 {
		t.Errorf("the first receipt after the restart: %s, want seq %d", r, latest+1)
	}
	checkStream("after a restart")
}
