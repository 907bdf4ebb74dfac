//go:build unix

package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// usesFake records that a mode is used indirectly (by another mode).
func usesFake(name string) {
	if _, ok := fakes[name]; !ok {
		panic("unregistered fake mode " + name)
	}
	fakesUsed.Store(name, true)
}

func TestStartEchoAndEOFExit(t *testing.T) {
	t.Parallel()
	c := start(t, fakeConfig("echo"))
	out := readLines(c.Stdout())
	out.expect(t, "ready")
	for _, s := range []string{"hello", `{"type":"user"}`, strings.Repeat("z", 200<<10)} {
		if _, err := io.WriteString(c.Stdin(), s+"\n"); err != nil {
			t.Fatal(err)
		}
		out.expect(t, s)
	}
	if err := c.CloseStdin(); err != nil {
		t.Fatalf("CloseStdin: %v", err)
	}
	if err := out.eof(t, 10*time.Second); err != io.EOF {
		t.Errorf("stdout ended with %v, want io.EOF", err)
	}
	ex := waitDone(t, c, 10*time.Second)
	if ex.Code != 0 || ex.Signal != 0 || ex.Err != nil {
		t.Errorf("Exit = %+v, want code 0", ex)
	}
	if got, want := ex.String(), "claude exited with code 0"; got != want {
		t.Errorf("Exit.String() = %q, want %q", got, want)
	}
	// Idempotent, and Stdin().Close is the same thing.
	if err := c.CloseStdin(); err != nil {
		t.Errorf("second CloseStdin: %v", err)
	}
	if err := c.Stdin().Close(); err != nil {
		t.Errorf("Stdin().Close after CloseStdin: %v", err)
	}
	if _, err := c.Stdin().Write([]byte("late\n")); err == nil {
		t.Error("Write after exit succeeded")
	}
	if err := c.Kill(); err != nil {
		t.Errorf("Kill after exit: %v", err)
	}
}

func TestExitCodeAndStderr(t *testing.T) {
	t.Parallel()
	c := start(t, fakeConfig("exit", "7", "boom:", "bad", "flag"))
	ex := waitDone(t, c, 10*time.Second)
	if ex.Code != 7 || ex.Signal != 0 || ex.Err != nil {
		t.Errorf("Exit = %+v, want code 7", ex)
	}
	if ex.Stderr != "boom: bad flag" {
		t.Errorf("Exit.Stderr = %q", ex.Stderr)
	}
	if got, want := ex.String(), "claude exited with code 7: boom: bad flag"; got != want {
		t.Errorf("Exit.String() = %q, want %q", got, want)
	}
	if got := c.StderrTail(); got != ex.Stderr {
		t.Errorf("StderrTail() = %q, want %q", got, ex.Stderr)
	}
}

func TestExitBeforeDone(t *testing.T) {
	t.Parallel()
	c := start(t, fakeConfig("hang"))
	readLines(c.Stdout()).expect(t, "ready")
	if ex := c.Exit(); ex.Code != -1 {
		t.Errorf("Exit() while running = %+v, want Code -1", ex)
	}
	select {
	case <-c.Done():
		t.Fatal("Done closed while running")
	default:
	}
}

func TestKillReportsSIGKILL(t *testing.T) {
	t.Parallel()
	c := start(t, fakeConfig("ignore-term"))
	readLines(c.Stdout()).expect(t, "ready")
	if err := c.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	ex := waitDone(t, c, 10*time.Second)
	if ex.Code != 137 || ex.Signal != syscall.SIGKILL {
		t.Errorf("Exit = %+v, want code 137, SIGKILL", ex)
	}
	if got, want := ex.String(), "claude killed by SIGKILL (code 137)"; got != want {
		t.Errorf("Exit.String() = %q, want %q", got, want)
	}
	if err := c.Kill(); err != nil {
		t.Errorf("second Kill: %v", err)
	}
}

// Each stage of Shutdown, with the fake that makes it the last one needed.
func TestShutdownStages(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode       string
		wantCode   int
		wantSignal syscall.Signal
		minTime    time.Duration // the grace periods that must have passed
	}{
		{"eof-exit", 0, 0, 0},
		{"hang", 128 + int(syscall.SIGTERM), syscall.SIGTERM, 100 * time.Millisecond},
		{"ignore-term", 128 + int(syscall.SIGKILL), syscall.SIGKILL, 300 * time.Millisecond},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			cfg := fakeConfig(tc.mode)
			cfg.Grace = 100 * time.Millisecond
			cfg.TermGrace = 200 * time.Millisecond
			if tc.mode == "eof-exit" {
				cfg.Grace = 10 * time.Second // must not be waited out
			}
			c := start(t, cfg)
			out := readLines(c.Stdout())
			out.expect(t, "ready")

			t0 := time.Now()
			if err := c.Shutdown(context.Background()); err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
			took := time.Since(t0)
			ex := waitDone(t, c, time.Second)
			if ex.Code != tc.wantCode || ex.Signal != tc.wantSignal || ex.Err != nil {
				t.Errorf("Exit = %+v, want code %d signal %v", ex, tc.wantCode, tc.wantSignal)
			}
			if took < tc.minTime || took > tc.minTime+5*time.Second {
				t.Errorf("Shutdown took %v, want about %v", took, tc.minTime)
			}
			if err := out.eof(t, 5*time.Second); err != io.EOF {
				t.Errorf("stdout ended with %v, want io.EOF", err)
			}
			if tc.mode == "eof-exit" && ex.Stderr != "bye\n" {
				t.Errorf("Exit.Stderr = %q, want %q", ex.Stderr, "bye\n")
			}
		})
	}
}

func TestShutdownConcurrentAndIdempotent(t *testing.T) {
	t.Parallel()
	cfg := fakeConfig("hang")
	cfg.Grace = 100 * time.Millisecond
	c := start(t, cfg)
	readLines(c.Stdout()).expect(t, "ready")

	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 8 {
		wg.Go(func() { errs <- c.Shutdown(context.Background()) })
		if i%3 == 0 {
			wg.Go(func() { errs <- c.CloseStdin() })
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent call: %v", err)
		}
	}
	if ex := c.Exit(); ex.Signal != syscall.SIGTERM {
		t.Errorf("Exit = %+v, want SIGTERM (one escalation, not several)", ex)
	}
	// After the child is gone, Shutdown returns at once, even with a
	// cancelled context.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown after exit with cancelled ctx: %v", err)
	}
}

func TestShutdownContextCutsShort(t *testing.T) {
	t.Parallel()
	cfg := fakeConfig("ignore-term")
	cfg.Grace = time.Minute
	cfg.TermGrace = time.Minute
	c := start(t, cfg)
	readLines(c.Stdout()).expect(t, "ready")

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	err := c.Shutdown(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want context.DeadlineExceeded", err)
	}
	if took := time.Since(t0); took > 5*time.Second {
		t.Errorf("Shutdown took %v despite a 100ms context", took)
	}
	if ex := waitDone(t, c, time.Second); ex.Signal != syscall.SIGKILL || ex.Code != 137 {
		t.Errorf("Exit = %+v, want SIGKILL", ex)
	}
	// A concurrent caller without a deadline returns too.
	if err := c.Shutdown(context.Background()); err != nil {
		t.Errorf("later Shutdown: %v", err)
	}
}

// A flood of stderr must neither block the child (the drain keeps up) nor be
// kept whole (only the head and tail are).
func TestStderrFloodDrainedHeadAndTail(t *testing.T) {
	t.Parallel()
	const size = 3 << 20
	cfg := fakeConfig("stderr-flood", strconv.Itoa(size))
	cfg.StderrKeep = 4 << 10
	c := start(t, cfg)
	out := readLines(c.Stdout())
	out.expect(t, "done")
	ex := waitDone(t, c, 20*time.Second)
	if ex.Code != 3 {
		t.Errorf("Exit = code %d, want 3", ex.Code)
	}
	s := ex.Stderr
	if !strings.HasPrefix(s, "HEAD-MARKER\n") {
		t.Errorf("stderr head = %q", s[:min(len(s), 40)])
	}
	if !strings.HasSuffix(s, "TAIL-MARKER\n") {
		t.Errorf("stderr tail = %q", s[max(0, len(s)-40):])
	}
	if !strings.Contains(s, " bytes …\n") || !strings.Contains(s, "\n… omitting ") {
		t.Errorf("no omission marker in stderr")
	}
	if len(s) > 2*cfg.StderrKeep+100 {
		t.Errorf("kept %d bytes of stderr, want about %d", len(s), 2*cfg.StderrKeep)
	}
	if got := ex.String(); !strings.HasPrefix(got, "claude exited with code 3: …") || !strings.HasSuffix(got, "TAIL-MARKER") {
		t.Errorf("Exit.String() = %.80q…", got)
	}
}

func TestStderrTailWhileRunning(t *testing.T) {
	t.Parallel()
	c := start(t, fakeConfig("stderr-ready"))
	readLines(c.Stdout()).expect(t, "ready")
	// The drain runs concurrently with our read of "ready"; poll briefly.
	deadline := time.Now().Add(10 * time.Second)
	for c.StderrTail() != "hello from stderr\n" {
		if time.Now().After(deadline) {
			t.Fatalf("StderrTail() = %q", c.StderrTail())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := c.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use, for log output.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestStderrLoggedLineByLine(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	cfg := fakeConfig("stderr-lines")
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := start(t, cfg)
	ex := waitDone(t, c, 10*time.Second)
	if ex.Code != 1 {
		t.Errorf("Exit = %+v, want code 1", ex)
	}
	if got, want := ex.String(), "claude exited with code 1: …last words"; !strings.HasSuffix(got, "last words") || len(got) > 600 {
		t.Errorf("Exit.String() = %q, want something like %q", got, want)
	}
	var stderrLines []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `msg="claude stderr"`) {
			stderrLines = append(stderrLines, l)
		}
	}
	if len(stderrLines) != 3 {
		t.Fatalf("got %d stderr log records, want 3:\n%s", len(stderrLines), logs.String())
	}
	pid := "pid=" + strconv.Itoa(c.Pid())
	for _, l := range stderrLines {
		if !strings.Contains(l, pid) {
			t.Errorf("log record without %s: %s", pid, l)
		}
	}
	if !strings.Contains(stderrLines[0], "line=\"first line\"") {
		t.Errorf("first record: %s", stderrLines[0])
	}
	if !strings.Contains(stderrLines[1], "bytes=5000") || len(stderrLines[1]) > maxLogLine+200 {
		t.Errorf("long line not cut: %.200s…", stderrLines[1])
	}
	if !strings.Contains(stderrLines[2], "line=\"last words\"") {
		t.Errorf("last record: %s", stderrLines[2])
	}
}

func TestOwnProcessGroup(t *testing.T) {
	t.Parallel()
	c := start(t, fakeConfig("pgid"))
	var pid, pgid int
	line := readLines(c.Stdout()).next(t)
	if _, err := fmt.Sscan(line, &pid, &pgid); err != nil {
		t.Fatalf("parsing %q: %v", line, err)
	}
	if pid != c.Pid() || pgid != c.Pid() {
		t.Errorf("child pid %d pgid %d, want both %d", pid, pgid, c.Pid())
	}
	if pgid == syscall.Getpgrp() {
		t.Error("child shares the test's process group")
	}
	waitDone(t, c, 10*time.Second)
}

func TestArgsDirEnv(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := fakeConfig("env", "CCB_A", "CCB_B", "HOME")
	cfg.Dir = dir
	cfg.Env = append(cfg.Env, "CCB_A=1", "CCB_B=first", "CCB_B=second")
	c := start(t, cfg)
	out := readLines(c.Stdout())
	wantDir, _ := os.Stat(dir)
	if gotDir, err := os.Stat(out.next(t)); err != nil || !os.SameFile(gotDir, wantDir) {
		t.Errorf("child cwd is not %s", dir)
	}
	out.expect(t, "CCB_A=1")
	out.expect(t, "CCB_B=second")
	out.expect(t, "HOME="+os.Getenv("HOME")) // inherited
	waitDone(t, c, 10*time.Second)

	args := []string{"--resume=-weird", "two words", "", `quote"d`}
	c = start(t, fakeConfig("args", args...))
	out = readLines(c.Stdout())
	for _, a := range args {
		out.expect(t, strconv.Quote(a))
	}
	waitDone(t, c, 10*time.Second)
}

func TestStartErrors(t *testing.T) {
	t.Parallel()
	if _, err := Start(Config{}); !errors.Is(err, ErrNoPath) {
		t.Errorf("Start(Config{}) = %v, want ErrNoPath", err)
	}
	missing := t.TempDir() + "/no-such-claude"
	if _, err := Start(Config{Path: missing}); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Start(missing) = %v, want an error naming the path", err)
	}
	cfg := fakeConfig("echo")
	cfg.Dir = t.TempDir() + "/no-such-dir"
	if _, err := Start(cfg); err == nil {
		t.Error("Start with a missing Dir succeeded")
	}
}

// The CLI exits on stdin EOF, but a grandchild in its process group still
// holds stdout and stderr. Shutdown must finish anyway, stdout must reach
// EOF, and the grandchild must be gone.
func TestGrandchildKilledWithGroup(t *testing.T) {
	t.Parallel()
	usesFake("sleep")
	cfg := fakeConfig("grandchild")
	cfg.WaitDelay = 10 * time.Second // EOF must come from the group kill, not the delay
	c := start(t, cfg)
	out := readLines(c.Stdout())
	var gc int
	if _, err := fmt.Sscanf(out.next(t), "gc %d", &gc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(gc, syscall.SIGKILL) })
	out.expect(t, "ready")

	t0 := time.Now()
	if err := c.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if ex := c.Exit(); ex.Code != 0 {
		t.Errorf("Exit = %+v, want code 0", ex)
	}
	if err := out.eof(t, 5*time.Second); err != io.EOF {
		t.Errorf("stdout ended with %v, want io.EOF", err)
	}
	if took := time.Since(t0); took > 5*time.Second {
		t.Errorf("Shutdown and EOF took %v", took)
	}
	waitGone(t, gc, 5*time.Second)
}

// A grandchild that left the process group (setsid) survives the group kill
// and keeps stdout and stderr open; after WaitDelay both read ends are
// closed, Done is closed and the stdout reader sees io.EOF.
func TestWaitDelayClosesPipesHeldByEscapee(t *testing.T) {
	t.Parallel()
	usesFake("sleep")
	cfg := fakeConfig("grandchild", "setsid")
	cfg.WaitDelay = 300 * time.Millisecond
	c := start(t, cfg)
	out := readLines(c.Stdout())
	var gc int
	if _, err := fmt.Sscanf(out.next(t), "gc %d", &gc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(gc, syscall.SIGKILL) })
	out.expect(t, "ready")

	t0 := time.Now()
	if err := c.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := out.eof(t, 5*time.Second); err != io.EOF {
		t.Errorf("stdout ended with %v, want io.EOF", err)
	}
	took := time.Since(t0)
	if took < cfg.WaitDelay || took > 5*time.Second {
		t.Errorf("stdout EOF after %v, want about WaitDelay (%v)", took, cfg.WaitDelay)
	}
	if gone(gc) {
		t.Error("the escaped grandchild died; the test proves nothing")
	}
}

// If ccbridge dies without shutting its child down, Pdeathsig kills the
// child. The fake "spawner" plays ccbridge here.
func TestPdeathsig(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Pdeathsig is Linux-only")
	}
	t.Parallel()
	usesFake("sleep")
	c := start(t, fakeConfig("spawner"))
	out := readLines(c.Stdout())
	var child int
	if _, err := fmt.Sscanf(out.next(t), "child %d", &child); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(child, syscall.SIGKILL) })
	if gone(child) {
		t.Fatal("child gone before its parent died")
	}
	c.CloseStdin() // the spawner exits abruptly
	waitDone(t, c, 10*time.Second)
	waitGone(t, child, 5*time.Second)
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := Config{Path: "x"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Grace != DefaultGrace || cfg.TermGrace != DefaultTermGrace || cfg.WaitDelay != DefaultWaitDelay ||
		cfg.StderrKeep != DefaultStderrKeep || cfg.Logger == nil {
		t.Errorf("defaults not applied: %+v", cfg)
	}
	cfg, _ = Config{Path: "x", Grace: -1, TermGrace: -1, WaitDelay: -1, StderrKeep: -1}.withDefaults()
	if cfg.Grace != 0 || cfg.TermGrace != 0 || cfg.WaitDelay != 0 || cfg.StderrKeep != 0 {
		t.Errorf("negative values not turned into zero: %+v", cfg)
	}
}

func TestExitString(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 600) + "\nError: the last line"
	for _, tc := range []struct {
		ex   Exit
		want string
	}{
		{Exit{Code: 0}, "claude exited with code 0"},
		{Exit{Code: 1, Stderr: "  Error: bad\n"}, "claude exited with code 1: Error: bad"},
		{Exit{Code: 143, Signal: syscall.SIGTERM}, "claude killed by SIGTERM (code 143)"},
		{Exit{Code: 128 + 10, Signal: syscall.Signal(10)}, "claude killed by signal 10 (" + syscall.Signal(10).String() + ") (code 138)"},
		{Exit{Code: -1, Err: errors.New("wait: oops")}, "claude: wait: oops"},
		{Exit{Code: 1, Stderr: long}, "claude exited with code 1: …Error: the last line"},
	} {
		if got := tc.ex.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.ex, got, tc.want)
		}
	}
}

func TestSignalName(t *testing.T) {
	t.Parallel()
	for sig, want := range map[syscall.Signal]string{
		syscall.SIGKILL: "SIGKILL", syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT",
		syscall.SIGHUP: "SIGHUP", syscall.SIGQUIT: "SIGQUIT", syscall.SIGABRT: "SIGABRT",
		syscall.SIGSEGV: "SIGSEGV", syscall.SIGPIPE: "SIGPIPE",
		syscall.Signal(10): "", // any other: the caller words it
	} {
		if got := SignalName(sig); got != want {
			t.Errorf("SignalName(%d) = %q, want %q", sig, got, want)
		}
	}
}

// TestChildEnvCheckpoint: every child gets file checkpointing on
// (CheckpointEnv=1) unless the inherited environment or Config.Env gives
// the variable a value of its own, which is kept; a dropped inherited
// value counts as none.
func TestChildEnvCheckpoint(t *testing.T) {
	t.Parallel()
	on := CheckpointEnv + "=1"
	for _, tc := range []struct {
		name           string
		environ, extra []string
		drop           func(string) bool
		want           []string
	}{
		{"none", []string{"A=1"}, nil, nil, []string{"A=1", on}},
		{"inherited", []string{CheckpointEnv + "=0"}, nil, nil, []string{CheckpointEnv + "=0"}},
		{"extra", nil, []string{CheckpointEnv + "=0"}, nil, []string{CheckpointEnv + "=0"}},
		{"dropped", []string{CheckpointEnv + "=0", "B=2"}, nil, func(n string) bool { return n == CheckpointEnv }, []string{"B=2", on}},
	} {
		got := childEnv(tc.environ, tc.extra, tc.drop)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: childEnv = %q, want %q", tc.name, got, tc.want)
		}
	}
}
