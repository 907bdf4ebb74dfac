//go:build linux

package main

import (
	"bytes"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/ccbridge/ccbridge/session"
)

// TestRunGrowsItsStdoutPipe: when stdout is a pipe, ccbridge asks for
// --pipe-size (CCBRIDGE_PIPE_SIZE) bytes behind it; 0 leaves it alone.
func TestRunGrowsItsStdoutPipe(t *testing.T) {
	for _, c := range []struct {
		size string
		want func(system int) int
	}{
		{"", func(int) int { return session.DefaultPipeSize }},
		{"0", func(system int) int { return system }},
	} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		system := fcntlPipeSize(t, r)
		// The CLI is missing, so run returns just after setting up.
		code := run([]string{"--output-format", "stream-json"}, strings.NewReader(""), w, &bytes.Buffer{},
			env("CCBRIDGE_CLAUDE", "/nonexistent/claude", "PATH", "/nonexistent", "CCBRIDGE_PIPE_SIZE", c.size))
		if code != 127 {
			t.Fatalf("run: code %d", code)
		}
		if got, want := fcntlPipeSize(t, r), c.want(system); got != want {
			t.Errorf("CCBRIDGE_PIPE_SIZE=%q: stdout's pipe holds %d bytes, want %d", c.size, got, want)
		}
		r.Close()
		w.Close()
	}
}

func fcntlPipeSize(t *testing.T, f *os.File) int {
	t.Helper()
	n, _, errno := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), 1032, 0) // F_GETPIPE_SZ
	if errno != 0 {
		t.Fatal(errno)
	}
	return int(n)
}

// TestPTYWorkerNeedsNoCLI: a pty worker running another program starts
// where no Claude Code CLI can be found; the worker of the CLI itself
// (no command after --) still reports the missing CLI (127).
func TestPTYWorkerNeedsNoCLI(t *testing.T) {
	noCLI := env("CCBRIDGE_CLAUDE", "/nonexistent/claude", "PATH", "/nonexistent")
	var stdout, stderr bytes.Buffer
	code := run([]string{"--ui", "control", "--pty", "--team", "t", "--agent-id", "a", "--", "/bin/cat"},
		strings.NewReader(""), &stdout, &stderr, noCLI)
	if code != 0 || !strings.Contains(stdout.String(), `"type":"control.capabilities"`) {
		t.Errorf("--pty -- /bin/cat without a CLI: code %d\nstdout %.300s\nstderr %.500s", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	code = run([]string{"--ui", "control", "--pty", "--team", "t", "--agent-id", "a"}, strings.NewReader(""), &stdout, &stderr, noCLI)
	if code != 127 || !strings.Contains(stderr.String(), "/nonexistent/claude") {
		t.Errorf("--pty (the CLI's TUI) without a CLI: code %d, stderr %.300s", code, stderr.String())
	}
}
