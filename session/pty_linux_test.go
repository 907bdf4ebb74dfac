//go:build linux

package session

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

func init() {
	// tty reports what it sees of its terminal, echoes stdin lines until
	// EOF, says "bye" on stderr and exits 0.
	registerFake("tty", func([]string) {
		isTTY := func(fd int) bool {
			var tio syscall.Termios
			_, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TCGETS, uintptr(unsafe.Pointer(&tio)))
			return e == 0
		}
		var ws struct{ Rows, Cols, X, Y uint16 }
		syscall.Syscall(syscall.SYS_IOCTL, 1, syscall.TIOCGWINSZ, uintptr(unsafe.Pointer(&ws)))
		sid, _, _ := syscall.RawSyscall(syscall.SYS_GETSID, 0, 0, 0)
		fmt.Printf("tty 0=%v 1=%v 2=%v size=%dx%d pgid=%d sid=%d\n",
			isTTY(0), isTTY(1), isTTY(2), ws.Rows, ws.Cols, syscall.Getpgrp(), sid)
		br := bufio.NewReader(os.Stdin)
		for {
			line, err := br.ReadString('\n')
			os.Stdout.WriteString(line)
			if err != nil {
				break
			}
		}
		fmt.Fprintln(os.Stderr, "bye")
	})
}

func TestPTY(t *testing.T) {
	t.Parallel()
	cfg := fakeConfig("tty")
	cfg.PTY = true
	cfg.PTYRows, cfg.PTYCols = 45, 123
	cfg.Grace = 10 * time.Second // CloseStdin's end-of-file must be enough
	c := start(t, cfg)
	out := readLines(c.Stdout())
	want := fmt.Sprintf("tty 0=true 1=true 2=false size=45x123 pgid=%d sid=%d", c.Pid(), c.Pid())
	// The output is translated as a terminal emulator's is: each "\n"
	// comes out as "\r\n".
	out.expect(t, want+"\r")

	// Raw input: no echo (each line comes back once), no length limit,
	// control characters pass through.
	for _, s := range []string{"hello", strings.Repeat("p", 100<<10), "a\rb\x03c\x04d", `{"type":"user"}`} {
		if _, err := io.WriteString(c.Stdin(), s+"\n"); err != nil {
			t.Fatal(err)
		}
		if got := out.next(t); got != s+"\r" {
			t.Fatalf("echo = %.60q (%d bytes), want %.60q (%d bytes)", got, len(got), s, len(s))
		}
	}

	t0 := time.Now()
	if err := c.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if took := time.Since(t0); took > 10*time.Second {
		t.Errorf("Shutdown took %v: end-of-file did not reach the child", took)
	}
	if err := out.eof(t, 5*time.Second); err != io.EOF {
		t.Errorf("stdout ended with %v, want io.EOF", err)
	}
	ex := c.Exit()
	if ex.Code != 0 || ex.Signal != 0 || ex.Stderr != "bye\n" {
		t.Errorf("Exit = %+v, want code 0 and stderr bye", ex)
	}
	if _, err := c.Stdin().Write([]byte("late\n")); err == nil {
		t.Error("Write after CloseStdin succeeded")
	}
}

func TestPTYKill(t *testing.T) {
	t.Parallel()
	cfg := fakeConfig("hang")
	cfg.PTY = true
	c := start(t, cfg)
	out := readLines(c.Stdout())
	out.expect(t, "ready\r")
	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := out.eof(t, 5*time.Second); err != io.EOF {
		t.Errorf("stdout ended with %v, want io.EOF", err)
	}
	if ex := waitDone(t, c, 5*time.Second); ex.Signal != syscall.SIGKILL || ex.Code != 137 {
		t.Errorf("Exit = %+v, want SIGKILL", ex)
	}
}

// TestPTYShutdownFullTerminal: a program under a pty that reads nothing,
// its terminal's input full: the staged shutdown does not wait to write
// the end of file; it goes on to SIGTERM after the grace.
func TestPTYShutdownFullTerminal(t *testing.T) {
	t.Parallel()
	cfg := fakeConfig("hang")
	cfg.PTY = true
	cfg.Grace, cfg.TermGrace = 200*time.Millisecond, 5*time.Second
	c := start(t, cfg)
	out := readLines(c.Stdout())
	out.expect(t, "ready\r")
	fillNow(t, c)
	done := make(chan error, 1)
	t0 := time.Now()
	go func() { done <- c.Shutdown(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not end: it waited to write the end of file to a full terminal")
	}
	if took := time.Since(t0); took > 4*time.Second {
		t.Errorf("Shutdown took %v, want about the 200 ms grace", took)
	}
	if ex := c.Exit(); ex.Signal != syscall.SIGTERM {
		t.Errorf("Exit = %+v, want SIGTERM", ex)
	}
}
