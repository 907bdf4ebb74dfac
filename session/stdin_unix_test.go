//go:build unix

package session

import (
	"bytes"
	"errors"
	"os"
	"testing"
	"time"
)

// fillNow writes to c with WriteNow until its stdin takes nothing more,
// failing if a call waits; it returns how many bytes went in.
func fillNow(t *testing.T, c *Child) int {
	t.Helper()
	chunk := bytes.Repeat([]byte("x"), 4<<10)
	total := 0
	for deadline := time.Now().Add(10 * time.Second); ; {
		start := time.Now()
		n, err := c.WriteNow(chunk)
		if err != nil {
			t.Fatalf("WriteNow after %d bytes: %v", total, err)
		}
		if took := time.Since(start); took > time.Second {
			t.Fatalf("WriteNow took %v: it waited", took)
		}
		total += n
		if n < len(chunk) {
			return total
		}
		if time.Now().After(deadline) {
			t.Fatalf("stdin took %d bytes and still has room", total)
		}
	}
}

// TestWriteNow: WriteNow writes what the pipe takes and never waits: to
// a child that reads, a whole line; to one that reads nothing, the pipe's
// worth and then nothing, at once; once stdin is closed, an error.
func TestWriteNow(t *testing.T) {
	t.Parallel()
	c := start(t, fakeConfig("echo"))
	out := readLines(c.Stdout())
	out.expect(t, "ready")
	if n, err := c.WriteNow([]byte("hello\n")); n != 6 || err != nil {
		t.Fatalf("WriteNow = %d, %v; want 6, nil", n, err)
	}
	out.expect(t, "hello")

	h := start(t, fakeConfig("hang"))
	readLines(h.Stdout()).expect(t, "ready")
	if n := fillNow(t, h); n == 0 {
		t.Error("the pipe of a child that reads nothing took nothing")
	}
	if n, err := h.WriteNow([]byte("more")); n != 0 || err != nil {
		t.Errorf("WriteNow to a full pipe = %d, %v; want 0, nil", n, err)
	}
	h.CloseStdin()
	if _, err := h.WriteNow([]byte("late")); !errors.Is(err, os.ErrClosed) {
		t.Errorf("WriteNow after CloseStdin: %v, want ErrClosed", err)
	}
}
