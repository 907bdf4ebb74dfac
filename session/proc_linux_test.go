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

// TestStdoutPipeGrown: the CLI's stdout pipe holds Config.PipeSize bytes
// (DefaultPipeSize unless set), so the CLI can write ahead while ccbridge
// works; a negative PipeSize keeps the system's size.
func TestStdoutPipeGrown(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/fs/pipe-max-size")
	if err != nil {
		t.Skip(err)
	}
	if limit, _ := strconv.Atoi(strings.TrimSpace(string(b))); limit < 1<<20 {
		t.Skipf("pipe-max-size is %d here, under 1 MiB", limit)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	system := pipeSize(t, r)

	for _, c := range []struct{ set, want int }{{0, DefaultPipeSize}, {1 << 20, 1 << 20}, {-1, system}} {
		cfg := fakeConfig("echo")
		cfg.PipeSize = c.set
		if got := pipeSize(t, start(t, cfg).stdout); got != c.want {
			t.Errorf("PipeSize %d: the CLI's stdout pipe holds %d bytes, want %d", c.set, got, c.want)
		}
	}

	// GrowPipe from either end; on something else, or with no size, it
	// does nothing.
	GrowPipe(w, 0)
	if got := pipeSize(t, r); got != system {
		t.Errorf("GrowPipe with size 0 changed the pipe to %d bytes", got)
	}
	GrowPipe(w, DefaultPipeSize)
	if got := pipeSize(t, r); got != DefaultPipeSize {
		t.Errorf("a pipe grown from its write end holds %d bytes, want %d", got, DefaultPipeSize)
	}
	f, err := os.CreateTemp(t.TempDir(), "f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	GrowPipe(f, DefaultPipeSize)
}
