//go:build linux

package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// guarded is fakeConfig with the test binary as the guardian.
func guarded(mode string, args ...string) Config {
	cfg := fakeConfig(mode, args...)
	cfg.Guardian = testExe
	return cfg
}

// cliOf returns the pid of the CLI a guardian runs.
func cliOf(t *testing.T, guardian int) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", guardian))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			if fs := strings.Fields(string(b)); len(fs) > 0 {
				pid, _ := strconv.Atoi(fs[0])
				return pid
			}
		}
	}
	t.Fatalf("the guardian %d has no child", guardian)
	return 0
}

// A grandchild that left the CLI's session (setsid) dies when the CLI
// exits: at once, not after WaitDelay, and stdout reaches EOF with it.
// Without a guardian it survives (TestWaitDelayClosesPipesHeldByEscapee).
func TestGuardianSweepsEscapeeWhenCLIExits(t *testing.T) {
	t.Parallel()
	usesFake("sleep")
	cfg := guarded("grandchild", "setsid")
	cfg.WaitDelay = 10 * time.Second // EOF must come from the sweep
	c := start(t, cfg)
	out := readLines(c.Stdout())
	var gc int
	if _, err := fmt.Sscanf(out.next(t), "gc %d", &gc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(gc, syscall.SIGKILL) })
	out.expect(t, "ready")
	if gone(gc) {
		t.Fatal("the grandchild is gone before the CLI exited")
	}

	t0 := time.Now()
	c.CloseStdin()
	if ex := waitDone(t, c, 5*time.Second); ex.Code != 0 || ex.Signal != 0 {
		t.Errorf("Exit = %+v, want code 0", ex)
	}
	if err := out.eof(t, 5*time.Second); err != io.EOF {
		t.Errorf("stdout ended with %v, want io.EOF", err)
	}
	if took := time.Since(t0); took > 3*time.Second {
		t.Errorf("exit and EOF took %v", took)
	}
	waitGone(t, gc, 5*time.Second)
}

// ccbridge killed with SIGKILL: the guardian's lifeline reads EOF, and it
// sweeps the CLI and the grandchild that left its session, then exits.
// The fake "guarded-spawner" plays ccbridge.
func TestGuardianSweepsWhenParentKilled(t *testing.T) {
	t.Parallel()
	usesFake("grandchild")
	usesFake("sleep")
	c := start(t, fakeConfig("guarded-spawner"))
	out := readLines(c.Stdout())
	var gc, guardian int
	if _, err := fmt.Sscanf(out.next(t), "gc %d", &gc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(gc, syscall.SIGKILL) })
	if _, err := fmt.Sscanf(out.next(t), "guardian %d", &guardian); err != nil {
		t.Fatal(err)
	}
	cli := cliOf(t, guardian)
	if gone(gc) || gone(cli) {
		t.Fatal("the CLI or its grandchild is gone before ccbridge died")
	}
	if err := syscall.Kill(c.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitDone(t, c, 5*time.Second)
	waitGone(t, gc, 5*time.Second)
	waitGone(t, cli, 5*time.Second)
	waitGone(t, guardian, 5*time.Second)
}

// Kill (and so Shutdown's last stage) closes the lifeline: the CLI and
// what it started die, and the child is reported killed by SIGKILL, as
// with a SIGKILL to the group.
func TestGuardianKill(t *testing.T) {
	t.Parallel()
	usesFake("sleep")
	c := start(t, guarded("grandchild", "setsid"))
	out := readLines(c.Stdout())
	var gc int
	if _, err := fmt.Sscanf(out.next(t), "gc %d", &gc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(gc, syscall.SIGKILL) })
	out.expect(t, "ready")
	if err := c.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if ex := waitDone(t, c, 5*time.Second); ex.Code != 137 || ex.Signal != syscall.SIGKILL {
		t.Errorf("Exit = %+v, want code 137, SIGKILL", ex)
	}
	waitGone(t, gc, 5*time.Second)
}

// The guardian ends as the CLI did: its exit code and stderr; the
// signal that killed it, SIGTERM from Shutdown's group signal (which the
// guardian survives) or a SIGABRT (no traceback from the guardian, no
// status 2); and the CLI runs in the guardian's process group.
func TestGuardianMirrorsExit(t *testing.T) {
	t.Parallel()
	c := start(t, guarded("exit", "7", "boom"))
	if ex := waitDone(t, c, 10*time.Second); ex.Code != 7 || ex.Signal != 0 || ex.Stderr != "boom" {
		t.Errorf("Exit = %+v, want code 7 and stderr boom", ex)
	}

	cfg := guarded("hang")
	cfg.Grace = -1
	c = start(t, cfg)
	readLines(c.Stdout()).expect(t, "ready")
	if err := c.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ex := c.Exit(); ex.Code != 143 || ex.Signal != syscall.SIGTERM {
		t.Errorf("after SIGTERM: Exit = %+v, want code 143, SIGTERM", ex)
	}

	c = start(t, guarded("hang"))
	readLines(c.Stdout()).expect(t, "ready")
	if pgid, _ := syscall.Getpgid(cliOf(t, c.Pid())); pgid != c.Pid() {
		t.Errorf("the CLI's process group is %d, want the guardian's %d", pgid, c.Pid())
	}
	c.Kill()
	waitDone(t, c, 10*time.Second)

	// A Go program would catch SIGABRT; a shell dies of it.
	c = start(t, Config{Path: "/bin/sh", Args: []string{"-c", "kill -ABRT $$"}, Guardian: testExe, Env: cfg.Env[1:]})
	if ex := waitDone(t, c, 10*time.Second); ex.Code != 128+int(syscall.SIGABRT) || ex.Signal != syscall.SIGABRT {
		t.Errorf("after SIGABRT: Exit = %+v", ex)
	}
	if s := c.Exit().Stderr; strings.Contains(s, "goroutine") {
		t.Errorf("a traceback on stderr: %.300s", s)
	}
}

// A SIGINT to the process group reaches the CLI once: the guardian
// neither dies of it nor passes it on.
func TestGuardianSignalOnce(t *testing.T) {
	t.Parallel()
	c := start(t, guarded("count-int"))
	out := readLines(c.Stdout())
	out.expect(t, "ready")
	if err := c.signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	out.expect(t, "SIGINT 1")
	select {
	case s := <-out.ch:
		t.Errorf("another line after one SIGINT: %q", s)
	case <-c.Done():
		t.Errorf("the child ended after a SIGINT: %+v", c.Exit())
	case <-time.After(300 * time.Millisecond):
	}
}

// A CLI that cannot be started fails Start as without a guardian, and no
// guardian is left behind.
func TestGuardianStartError(t *testing.T) {
	t.Parallel()
	missing := t.TempDir() + "/no-such-claude"
	_, err := Start(Config{Path: missing, Guardian: testExe})
	if err == nil || !strings.Contains(err.Error(), missing) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Start(missing) = %v, want an error naming the path, ErrNotExist", err)
	}
	plain := t.TempDir() + "/not-executable"
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(Config{Path: plain, Guardian: testExe}); !errors.Is(err, syscall.EACCES) {
		t.Errorf("Start(not executable) = %v, want EACCES", err)
	}
}

// In pty mode the guardian leads the terminal's session, and the CLI,
// in its process group, reads and writes the terminal as before.
func TestGuardianPTY(t *testing.T) {
	t.Parallel()
	cfg := guarded("tty")
	cfg.PTY = true
	c := start(t, cfg)
	out := readLines(c.Stdout())
	out.expect(t, fmt.Sprintf("tty 0=true 1=true 2=false size=24x80 pgid=%d sid=%d\r", c.Pid(), c.Pid()))
	if _, err := io.WriteString(c.Stdin(), "hello\n"); err != nil {
		t.Fatal(err)
	}
	out.expect(t, "hello\r")
	c.CloseStdin()
	if ex := waitDone(t, c, 10*time.Second); ex.Code != 0 || ex.Stderr != "bye\n" {
		t.Errorf("Exit = %+v, want code 0, stderr bye", ex)
	}
}
