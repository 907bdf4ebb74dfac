package e2e

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/fakemodel"
	"github.com/ccbridge/ccbridge/mapping/rpc"
)

// Processes the CLI starts must not outlive ccbridge, whichever way it or
// the CLI ends (docs/reliability/orphans.md). The CLI runs each Bash tool
// command in a session of its own, so a process the command leaves in the
// background is in neither the CLI's process group nor its session: a
// group kill misses it, and so does the parent-death signal.

// orphanScenario: RUNBASH <command> has the model run <command> with the
// Bash tool; SLOW streams for a while.
const orphanScenario = `{"rules": [
  {"regex": "RUNBASH (.*)", "steps": [
    {"blocks": [{"type": "tool_use", "name": "Bash", "input": {"command": "{{arg}}", "description": "Start a process in the background"}}]},
    {"blocks": [{"type": "text", "text": "Started. "}]}
  ]},
  {"keyword": "SLOW", "steps": [{"blocks": [{"type": "text", "text": "counting ", "size": 450}], "delay_ms": 100}]}
], "fallback": {"steps": [{"blocks": [{"type": "text", "text": "Hello. "}]}]}}`

// backgroundCommand leaves a process running in the background and
// writes its pid to bg.pid in the CLI's working directory.
const backgroundCommand = `tail -f /dev/null >/dev/null 2>&1 & echo $! > bg.pid`

// orphanModel starts the scenario's fake model for t and returns the
// environment that points the CLI at it (it overrides the harness's).
func orphanModel(t *testing.T) []string {
	t.Helper()
	sc, err := fakemodel.Parse([]byte(orphanScenario))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := fakemodel.Start(sc, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv.Env()
}

// startOrphanBridge is startBridge in drop-in mode with Bash allowed and
// the scenario's model, but with the UI's end of ccbridge's stdout kept,
// so that a test can close it.
func startOrphanBridge(t *testing.T) (*bridge, *os.File) {
	t.Helper()
	cli := realCLI(t)
	b := &bridge{t: t, lines: make(chan []byte, 1024), stderr: &lockedBuffer{}, dir: t.TempDir(), home: t.TempDir(), exited: make(chan struct{})}
	b.cmd = exec.Command(ccbridgeBin, append(cliFlags, "--allowedTools", "Bash")...)
	b.cmd.Dir = b.dir
	b.cmd.Env = append(os.Environ(), "HOME="+b.home, "CCBRIDGE_CLAUDE="+cli, "CCBRIDGE_LOG_LEVEL=debug")
	b.cmd.Env = append(b.cmd.Env, orphanModel(t)...)
	b.cmd.Stderr = b.stderr
	var err error
	if b.stdin, err = b.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	b.cmd.Stdout = w
	err = b.cmd.Start()
	w.Close()
	if err != nil {
		out.Close()
		t.Fatal(err)
	}
	go func() {
		r := bufio.NewReaderSize(out, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				b.lines <- bytes.TrimSuffix(line, []byte("\n"))
			}
			if err != nil {
				close(b.lines)
				b.cmd.Wait()
				if ps := b.cmd.ProcessState; ps != nil {
					b.code = ps.ExitCode()
					if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
						b.code = 128 + int(ws.Signal())
					}
				}
				close(b.exited)
				return
			}
		}
	}()
	t.Cleanup(func() {
		b.stdin.Close()
		out.Close()
		select {
		case <-b.exited:
		case <-time.After(30 * time.Second):
			b.cmd.Process.Kill()
			<-b.exited
			t.Errorf("ccbridge did not exit within 30 s of the end of its input")
		}
		if t.Failed() {
			t.Logf("ccbridge stderr (tail):\n%s", tail(b.stderr.String(), 6000))
		}
	})
	return b, out
}

// running reports whether pid exists and is not a zombie.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z'
}

// sessionOf is the session id of pid, or -1.
func sessionOf(pid int) int {
	sid, _, errno := syscall.RawSyscall(syscall.SYS_GETSID, uintptr(pid), 0, 0)
	if errno != 0 {
		return -1
	}
	return int(sid)
}

// waitPidFile waits for a pid in file and for that process to run, and
// makes sure it is killed when the test ends, whatever happened.
func waitPidFile(t *testing.T, file string) int {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(file)
		if s := strings.TrimSpace(string(b)); s != "" && bytes.HasSuffix(b, []byte("\n")) {
			pid, err := strconv.Atoi(s)
			if err != nil {
				t.Fatalf("%s holds %q", file, b)
			}
			t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
			if !running(pid) {
				t.Fatalf("process %d of %s is not running", pid, file)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s within 30 s", file)
		}
	}
}

// waitNotRunning fails t unless pid has stopped running within 5 s.
func waitNotRunning(t *testing.T, pid int, what string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); running(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			t.Fatalf("%s: process %d (%q, session %d) still runs 5 s later", what, pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}), sessionOf(pid))
		}
	}
}

// TestOrphansDropIn: a process left in the background by a Bash tool
// command is gone within seconds of each way ccbridge or the CLI can end:
// ccbridge killed with SIGKILL; the UI closing ccbridge's stdout (ccbridge
// then dies of SIGPIPE, or shuts down, on its next write); the CLI
// killed (a crash); the end of ccbridge's input.
func TestOrphansDropIn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		end  func(t *testing.T, b *bridge, out *os.File)
	}{
		{"ccbridge killed", func(t *testing.T, b *bridge, out *os.File) {
			b.cmd.Process.Signal(syscall.SIGKILL)
			b.wait()
		}},
		{"stdout closed", func(t *testing.T, b *bridge, out *os.File) {
			out.Close()
			b.prompt("hello")
			b.wait()
		}},
		{"CLI killed", func(t *testing.T, b *bridge, out *os.File) {
			syscall.Kill(b.childPID(), syscall.SIGKILL)
			b.wait()
		}},
		{"end of input", func(t *testing.T, b *bridge, out *os.File) {
			b.stdin.Close()
			b.rest()
			if code := b.wait(); code != 0 {
				t.Errorf("exit code %d, want 0", code)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, out := startOrphanBridge(t)
			b.prompt("RUNBASH " + backgroundCommand)
			res := b.until("the result", isType("result"))
			if r := res[len(res)-1]; gjson.GetBytes(r, "is_error").Bool() {
				t.Fatalf("the turn failed: %s", r)
			}
			pid := waitPidFile(t, filepath.Join(b.dir, "bg.pid"))
			cli := b.childPID()
			if sessionOf(pid) == sessionOf(cli) {
				t.Fatalf("the background process %d shares the CLI %d session %d: the test proves nothing", pid, cli, sessionOf(pid))
			}
			tc.end(t, b, out)
			waitNotRunning(t, pid, tc.name)
		})
	}
}

// TestOrphansInterruptDeadline: a cancelled run whose CLI does not stop
// within --interrupt-timeout has its CLI killed and resumed; what the
// killed CLI left running is gone with it, while ccbridge goes on.
func TestOrphansInterruptDeadline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := startRPC(t, []string{"--interrupt-timeout", "1ms", "--cwd", dir, "--", "--allowedTools", "Bash"}, orphanModel(t)...)
	c.initialize("")
	run := c.start("RUNBASH " + backgroundCommand)
	if _, status := c.finishRun(run); status != rpc.StatusCompleted {
		t.Fatalf("the run: %s", status)
	}
	pid := waitPidFile(t, filepath.Join(dir, "bg.pid"))

	run = c.start("SLOW please")
	c.until("streaming", isEvent(run, "text.delta"))
	cli := c.b.childPID()
	c.result(c.call("run.cancel", `{"run_id":"`+run+`"}`))
	for deadline := time.Now().Add(10 * time.Second); !errors.Is(syscall.Kill(cli, 0), syscall.ESRCH); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the CLI was not killed after the interrupt deadline")
		}
	}
	waitNotRunning(t, pid, "the CLI killed at the interrupt deadline")
	if _, status := c.finishRun(c.start("hello again")); status != rpc.StatusCompleted {
		t.Errorf("the run after the restart: %s", status)
	}
}

// TestOrphansShellExec: a shell.exec command that left its process group
// and session with setsid, and the command itself, are gone within
// seconds of ccbridge being killed with SIGKILL.
func TestOrphansShellExec(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := startRPC(t, []string{"--cwd", dir})
	c.initialize("")
	c.call("shell.exec", `{"command":"setsid sh -c 'echo $$ > esc.pid; exec sleep 300' </dev/null >/dev/null 2>&1 & echo $$ > sh.pid; exec sleep 300","timeout_seconds":600}`)
	esc := waitPidFile(t, filepath.Join(dir, "esc.pid"))
	sh := waitPidFile(t, filepath.Join(dir, "sh.pid"))
	if sessionOf(esc) == sessionOf(sh) {
		t.Fatalf("setsid did not start a session: the test proves nothing")
	}
	// Every process below ccbridge (the guardians, the CLI) must be gone
	// too, and before the test's folders are removed: a CLI still exiting
	// writes into its HOME.
	below := descendants(c.b.cmd.Process.Pid)
	c.b.cmd.Process.Signal(syscall.SIGKILL)
	c.b.wait()
	waitNotRunning(t, sh, "the shell.exec command after kill -9 of ccbridge")
	waitNotRunning(t, esc, "its setsid child after kill -9 of ccbridge")
	for _, pid := range below {
		waitNotRunning(t, pid, "a process below ccbridge after kill -9 of ccbridge")
	}
}

// descendants returns the pids of every process below pid.
func descendants(pid int) []int {
	var all []int
	for next := []int{pid}; len(next) > 0; {
		var more []int
		for _, p := range next {
			more = append(more, children(p)...)
		}
		all = append(all, more...)
		next = more
	}
	return all
}
