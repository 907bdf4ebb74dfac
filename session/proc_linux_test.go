//go:build linux

package session

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// pipeSize is F_GETPIPE_SZ of f.
func pipeSize(t *testing.T, f *os.File) int {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n uintptr
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		n, _, errno = syscall.Syscall(syscall.SYS_FCNTL, fd, 1032, 0) // F_GETPIPE_SZ
	}); err != nil {
		t.Fatal(err)
	}
	if errno != 0 {
		t.Fatal(errno)
	}
	return int(n)
}

// TestStdoutPipeGrown: the CLI's stdout pipe holds PipeSize bytes, so the
// CLI can write ahead while ccbridge works.
func TestStdoutPipeGrown(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/fs/pipe-max-size")
	if err != nil {
		t.Skip(err)
	}
	if limit, _ := strconv.Atoi(strings.TrimSpace(string(b))); limit < PipeSize {
		t.Skipf("pipe-max-size is %d here, under %d", limit, PipeSize)
	}
	c := start(t, fakeConfig("echo"))
	if got := pipeSize(t, c.stdout); got != PipeSize {
		t.Errorf("the CLI's stdout pipe holds %d bytes, want %d", got, PipeSize)
	}

	// GrowPipe on any pipe; on something else it does nothing.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	GrowPipe(w, PipeSize)
	if got := pipeSize(t, r); got != PipeSize {
		t.Errorf("a pipe grown from its write end holds %d bytes, want %d", got, PipeSize)
	}
	f, err := os.CreateTemp(t.TempDir(), "f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	GrowPipe(f, PipeSize)
}
