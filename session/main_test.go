//go:build unix

package session

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as a fake Claude Code CLI. When CCBRIDGE_FAKE_CLI
// names a mode, TestMain runs that mode's behaviour instead of the tests and
// exits. TestMain is used rather than a Test function because the testing
// package replaces os.Stdout and friends, and a fake must own the real ones.
const fakeEnv = "CCBRIDGE_FAKE_CLI"

var (
	testExe   string // this test binary, the fake CLI
	fakes     = map[string]func(args []string){}
	fakesUsed sync.Map
)

// registerFake adds a fake mode. Registering a name twice is a bug.
func registerFake(name string, fn func(args []string)) {
	if _, dup := fakes[name]; dup {
		panic("duplicate fake mode " + name)
	}
	fakes[name] = fn
}

func TestMain(m *testing.M) {
	// The test binary is the guardian too (Config.Guardian), as ccbridge
	// is; its environment is the fake CLI's.
	if len(os.Args) > 1 && os.Args[1] == GuardianArg {
		os.Exit(RunGuardian(os.Args[2:]))
	}
	if mode := os.Getenv(fakeEnv); mode != "" {
		fn := fakes[mode]
		if fn == nil {
			fmt.Fprintf(os.Stderr, "fake claude: unknown mode %q\n", mode)
			os.Exit(2)
		}
		fn(os.Args[1:])
		os.Exit(0)
	}

	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "os.Executable:", err)
		os.Exit(2)
	}
	testExe = exe

	code := m.Run()
	if code == 0 && flagValue("test.run") == "" && flagValue("test.skip") == "" && flagValue("test.list") == "" {
		for name := range fakes {
			if _, ok := fakesUsed.Load(name); !ok {
				fmt.Fprintf(os.Stderr, "fake mode %q registered but never used\n", name)
				code = 1
			}
		}
	}
	if code == 0 {
		if err := checkNoLeakedGoroutines(5 * time.Second); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

func flagValue(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// checkNoLeakedGoroutines waits up to d for every goroutine running this
// package's non-test code (the stderr drain, the waiter, the escalation) to
// end.
func checkNoLeakedGoroutines(d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var leaked []string
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, "session.(*Child)") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("leaked goroutines:\n%s", strings.Join(leaked, "\n\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fakeConfig returns a Config that runs the fake CLI in mode with args, with
// short grace periods so tests stay fast.
func fakeConfig(mode string, args ...string) Config {
	if _, ok := fakes[mode]; !ok {
		panic("unregistered fake mode " + mode)
	}
	fakesUsed.Store(mode, true)
	return Config{
		Path: testExe,
		Args: args,
		// A race-enabled binary sleeps 1 s before exiting unless told not to.
		Env:       []string{fakeEnv + "=" + mode, "GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")},
		Grace:     2 * time.Second,
		TermGrace: 2 * time.Second,
		WaitDelay: time.Second,
	}
}

// start starts cfg and makes sure the child is gone when the test ends.
func start(t *testing.T, cfg Config) *Child {
	t.Helper()
	c, err := Start(cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		c.Kill()
		<-c.Done()
	})
	return c
}

// lines reads the child's stdout line by line in a goroutine of its own, so
// a test can wait for a line with a timeout instead of hanging.
type lines struct {
	ch  chan string
	err chan error
}

func readLines(r io.Reader) *lines {
	l := &lines{ch: make(chan string, 16), err: make(chan error, 1)}
	go func() {
		br := bufio.NewReader(r)
		for {
			s, err := br.ReadString('\n')
			if s != "" && err == nil {
				l.ch <- strings.TrimSuffix(s, "\n")
			}
			if err != nil {
				close(l.ch)
				l.err <- err
				return
			}
		}
	}()
	return l
}

// next returns the next line or fails the test after 10 s.
func (l *lines) next(t *testing.T) string {
	t.Helper()
	select {
	case s, ok := <-l.ch:
		if !ok {
			t.Fatalf("stdout ended early: %v", <-l.err)
		}
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for a line on stdout")
	}
	return ""
}

// expect fails the test unless the next line is want.
func (l *lines) expect(t *testing.T, want string) {
	t.Helper()
	if got := l.next(t); got != want {
		t.Fatalf("stdout line = %q, want %q", got, want)
	}
}

// eof waits up to d for stdout to end and returns the error that ended it.
func (l *lines) eof(t *testing.T, d time.Duration) error {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case s, ok := <-l.ch:
			if ok {
				t.Logf("extra stdout line %q", s)
				continue
			}
			return <-l.err
		case <-timeout:
			t.Fatalf("stdout not at EOF after %v", d)
			return nil
		}
	}
}

// waitDone fails the test if c is not done within d.
func waitDone(t *testing.T, c *Child, d time.Duration) Exit {
	t.Helper()
	select {
	case <-c.Done():
		return c.Exit()
	case <-time.After(d):
		t.Fatalf("child %d not done after %v", c.Pid(), d)
		return Exit{}
	}
}

// gone reports whether pid no longer runs: it does not exist, or it is a
// zombie waiting for an init process to reap it.
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return os.IsNotExist(err)
	}
	// pid (comm) S ...; comm may contain spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// waitGone fails the test unless pid is gone within d.
func waitGone(t *testing.T, pid int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still running after %v", pid, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ---- the fake CLI's modes ----

func init() {
	out := os.Stdout
	say := func(format string, a ...any) { fmt.Fprintf(out, format+"\n", a...) }
	block := func() { select {} }

	// echo copies stdin lines to stdout and exits 0 at EOF.
	registerFake("echo", func([]string) {
		say("ready")
		br := bufio.NewReader(os.Stdin)
		for {
			line, err := br.ReadString('\n')
			out.WriteString(line)
			if err != nil {
				return
			}
		}
	})
	// exit writes args[1:] to stderr and exits with code args[0].
	registerFake("exit", func(args []string) {
		if len(args) > 1 {
			fmt.Fprint(os.Stderr, strings.Join(args[1:], " "))
		}
		code, _ := strconv.Atoi(args[0])
		os.Exit(code)
	})
	// stderr-flood writes far more than a pipe buffer to stderr (it would
	// block for ever if nobody drained it), then says "done" and exits 3.
	registerFake("stderr-flood", func(args []string) {
		n, _ := strconv.Atoi(args[0])
		w := bufio.NewWriter(os.Stderr)
		fmt.Fprintln(w, "HEAD-MARKER")
		line := strings.Repeat("x", 99) + "\n"
		for i := 0; i < n/100; i++ {
			w.WriteString(line)
		}
		fmt.Fprintln(w, "TAIL-MARKER")
		w.Flush()
		say("done")
		os.Exit(3)
	})
	// stderr-lines writes a short line, a long line and an unterminated last
	// line to stderr, then exits 1.
	registerFake("stderr-lines", func([]string) {
		fmt.Fprintf(os.Stderr, "first line\r\n%s\nlast words", strings.Repeat("y", 5000))
		os.Exit(1)
	})
	// stderr-ready writes to stderr, says ready, and exits at stdin EOF.
	registerFake("stderr-ready", func([]string) {
		fmt.Fprintln(os.Stderr, "hello from stderr")
		say("ready")
		io.Copy(io.Discard, os.Stdin)
	})
	// hang ignores stdin and runs until a signal kills it.
	registerFake("hang", func([]string) {
		say("ready")
		block()
	})
	// ignore-term is hang, but SIGTERM does nothing either.
	registerFake("ignore-term", func([]string) {
		signal.Ignore(syscall.SIGTERM)
		say("ready")
		block()
	})
	// eof-exit exits 0 as soon as stdin reaches EOF.
	registerFake("eof-exit", func([]string) {
		say("ready")
		io.Copy(io.Discard, os.Stdin)
		fmt.Fprintln(os.Stderr, "bye")
	})
	// sleep blocks until killed; it is the grandchild of other modes.
	registerFake("sleep", func([]string) { block() })
	// grandchild starts a sleeping grandchild that shares its stdout and
	// stderr, reports its pid, and exits at stdin EOF. With args[0] ==
	// "setsid" the grandchild leaves the process group.
	registerFake("grandchild", func(args []string) {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), fakeEnv+"=sleep")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if len(args) > 0 && args[0] == "setsid" {
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		}
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		say("gc %d", cmd.Process.Pid)
		say("ready")
		io.Copy(io.Discard, os.Stdin)
	})
	// guarded-spawner plays ccbridge: it starts "grandchild setsid" under
	// a guardian, reports the escapee's pid and the guardian's, and runs
	// until killed.
	registerFake("guarded-spawner", func([]string) {
		c, err := Start(Config{Path: os.Args[0], Args: []string{"setsid"}, Guardian: os.Args[0],
			Env: []string{fakeEnv + "=grandchild"}})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		gc, _ := bufio.NewReader(c.Stdout()).ReadString('\n')
		say("%s", strings.TrimSpace(gc))
		say("guardian %d", c.Pid())
		block()
	})
	// count-int counts the SIGINTs it gets, one line each.
	registerFake("count-int", func([]string) {
		ch := make(chan os.Signal, 4)
		signal.Notify(ch, syscall.SIGINT)
		say("ready")
		for n := 1; ; n++ {
			<-ch
			say("SIGINT %d", n)
		}
	})
	// pgid reports its pid and process group id.
	registerFake("pgid", func([]string) {
		say("%d %d", os.Getpid(), syscall.Getpgrp())
	})
	// env reports the working directory and the values of the named
	// environment variables, one per line.
	registerFake("env", func(args []string) {
		wd, _ := os.Getwd()
		say("%s", wd)
		for _, k := range args {
			say("%s=%s", k, os.Getenv(k))
		}
	})
	// args reports its arguments, one per line, quoted.
	registerFake("args", func(args []string) {
		for _, a := range args {
			say("%q", a)
		}
	})
	// spawner starts a child through this package, reports its pid, and
	// dies abruptly without shutting it down (Pdeathsig must then kill it).
	registerFake("spawner", func([]string) {
		c, err := Start(Config{Path: os.Args[0], Env: []string{fakeEnv + "=sleep"}})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		say("child %d", c.Pid())
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	})
}
