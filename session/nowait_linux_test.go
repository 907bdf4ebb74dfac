package session

import (
	"errors"
	"os"
	"testing"
)

// TestNoWaitWriter: into a pipe, what fits is written and a full pipe
// says ErrWouldBlock at once; a regular file is unsupported (or
// written); nothing allocates.
func TestNoWaitWriter(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	try := NoWaitWriter(w)
	line := make([]byte, 377)
	if n, err := try(line); errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("no RWF_NOWAIT for pipes on this kernel: %v", err)
	} else if n != len(line) || err != nil {
		t.Fatalf("into an empty pipe: %d, %v", n, err)
	}
	if a := testing.AllocsPerRun(100, func() { try(line) }); a != 0 {
		t.Errorf("%v allocations a write", a)
	}
	total := 0
	for {
		n, err := try(line)
		if errors.Is(err, ErrWouldBlock) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		total += n
		if total > 64<<20 {
			t.Fatal("the pipe never filled")
		}
	}
	buf := make([]byte, 1<<20)
	if _, err := r.Read(buf); err != nil {
		t.Fatal(err)
	}
	if n, err := try(line); n != len(line) || err != nil {
		t.Errorf("after a read: %d, %v", n, err)
	}
	r.Close()
	if _, err := try(line); err == nil || errors.Is(err, ErrWouldBlock) {
		t.Errorf("into a pipe with no reader: %v, want EPIPE", err)
	}

	f, err := os.Create(t.TempDir() + "/f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n, err := NoWaitWriter(f)(line); err != nil && !errors.Is(err, errors.ErrUnsupported) && !errors.Is(err, ErrWouldBlock) || err == nil && n != len(line) {
		t.Errorf("into a file: %d, %v", n, err)
	}
}
