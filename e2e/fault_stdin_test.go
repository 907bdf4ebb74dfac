//go:build linux

package e2e

// A CLI that stops reading its stdin (docs/reliability.md, "The CLI's
// input"): the CLI is stopped with SIGSTOP, so that it reads nothing,
// and then gets a prompt larger than its stdin pipe holds. Before, the
// session loop blocked in its write to the CLI and served nothing more:
// SIGTERM, the interrupt deadline, a web session's interrupts and DELETE
// waited forever. Now the CLI's input is written by a goroutine of its
// own, and everything but the UI's ordinary lines is still served.

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/tidwall/gjson"
)

// bigPrompt is the size of the prompt sent to a stopped CLI: many times
// its stdin pipe (64 KiB) and ccbridge's own bound on the CLI's input.
const bigPrompt = 1 << 20

// stopCLI stops process pid with SIGSTOP; the test's end lets it go on
// (a process killed while stopped needs nothing, one left would hang).
func stopCLI(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("stopping the CLI %d: %v", pid, err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })
}

// ipcStdinStalled runs one turn in b's ipc session, then stops the CLI
// (stopCLI) and sends a prompt of bigPrompt bytes, until the CLI's stdin
// is full (stdinFull); it returns the CLI's pid.
func ipcStdinStalled(t *testing.T, b *bridge) int {
	t.Helper()
	complete(t, turn(t, b, "hello"))
	cli := b.childPID()
	stopCLI(t, cli)
	b.send(userMessage(strings.Repeat("x", bigPrompt)))
	stdinFull(t, cli)
	return cli
}

// stdinFull waits until the stdin pipe of process pid holds all it can:
// whoever writes to it must now wait for pid to read.
func stdinFull(t *testing.T, pid int) {
	t.Helper()
	f, err := os.OpenFile("/proc/"+strconv.Itoa(pid)+"/fd/0", os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatalf("opening the CLI's stdin: %v", err)
	}
	defer f.Close()
	conn, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var size, queued int
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		conn.Control(func(fd uintptr) {
			s, _, _ := syscall.Syscall(syscall.SYS_FCNTL, fd, 1032 /* F_GETPIPE_SZ */, 0)
			size = int(s)
			syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&queued)))
		})
		if size > 0 && queued >= size-size/8 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the CLI's stdin holds %d bytes of %d after 30 s", queued, size)
		}
	}
}

// TestFaultStdinIPCStoppedCLI: --ui ipc with a CLI stopped (SIGSTOP) and
// a prompt of 1 MiB, which it never reads. SIGTERM still runs the staged
// shutdown (stdin closed, --grace, SIGTERM, --term-grace, SIGKILL; the
// stopped CLI only goes with the SIGKILL): ccbridge exits within those
// bounds, and the prompt still gets its terminal message. An interrupt
// still arms its deadline: turn_cancelled comes when --interrupt-timeout
// has passed, the stopped CLI is killed, and the next prompt runs in a
// new one.
func TestFaultStdinIPCStoppedCLI(t *testing.T) {
	t.Parallel()
	t.Run("sigterm", func(t *testing.T) {
		t.Parallel()
		b := startIPC(t, "--grace", "1s", "--term-grace", "1s")
		expectSessionInit(t, b)
		cli := ipcStdinStalled(t, b)
		start := time.Now()
		b.cmd.Process.Signal(syscall.SIGTERM)
		var lines [][]byte
		for {
			l, err := recv(t, b, 30*time.Second)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("ccbridge wrote nothing and did not end its output within 30 s of SIGTERM (%d lines)", len(lines))
			}
			lines = append(lines, l)
		}
		select {
		case <-b.exited:
		case <-time.After(10 * time.Second):
			t.Fatal("ccbridge did not exit within 10 s of the end of its output")
		}
		took := time.Since(start)
		t.Logf("exited %v after SIGTERM, code %d", took.Round(time.Millisecond), b.code)
		// 1 s + 1 s of grace, the guardian's sweep, the child's WaitDelay
		// (2 s at most), and room for a loaded machine.
		if took > 12*time.Second {
			t.Errorf("ccbridge took %v to exit after SIGTERM, want about --grace + --term-grace (2 s)", took)
		}
		if ts := terminals(lines); len(ts) != 1 {
			t.Errorf("terminal messages %v for the one prompt, want one", ts)
		}
		if running(cli) {
			t.Errorf("the stopped CLI %d still runs after ccbridge exited", cli)
		}
	})
}

func init() { ipcStoppedCLIInterrupt = ipcStoppedCLIInterruptLinux }

// ipcStoppedCLIInterruptLinux is TestFaultStdinIPCStoppedCLI/interrupt (in
// TestIPCChildKilled, whose ccbridge has --interrupt-timeout 2s): an
// interrupt that the stopped CLI cannot take ends the prompt
// turn_cancelled interrupt_timeout once the timeout has passed, the CLI
// is gone, and the session goes on.
func ipcStoppedCLIInterruptLinux(t *testing.T, s *ipcSession) {
	b, sid := s.b, s.sid
	cli := ipcStdinStalled(t, b)
	start := time.Now()
	b.send(`{"type":"interrupt"}`)
	var lines [][]byte
	for {
		l, err := recv(t, b, 10*time.Second)
		if err != nil {
			t.Fatalf("no terminal message for the prompt within 10 s of the interrupt (--interrupt-timeout 2s): %v; lines:\n%s", err, lastLines(lines, 8))
		}
		lines = append(lines, l)
		if isTerminal(l) {
			break
		}
	}
	took := time.Since(start)
	last := lines[len(lines)-1]
	t.Logf("%s %v after the interrupt", typeOf(last), took.Round(time.Millisecond))
	if typeOf(last) != "turn_cancelled" || get(last, "reason").Str != "interrupt_timeout" {
		t.Fatalf("the prompt ended with %.400s, want turn_cancelled interrupt_timeout", last)
	}
	if took < 2*time.Second {
		t.Errorf("turn_cancelled %v after the interrupt, before --interrupt-timeout", took)
	}
	waitNotRunning(t, cli, "the stopped CLI after the interrupt deadline")
	lines = turn(t, b, "hello again")
	complete(t, lines)
	noSessionChange(t, lines, sid)
}

// TestFaultStdinWebStoppedCLI: a web session of ccbridge serve whose CLI
// is stopped (SIGSTOP) takes a message of 1 MiB, which the CLI never
// reads; then 80 interrupts POSTed to it are each answered at once, the
// turn ends turn_cancelled when --interrupt-timeout has passed (the
// stopped CLI is killed), DELETE is answered at once, and serve exits on
// SIGTERM.
func TestFaultStdinWebStoppedCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := svStart(t, svOpts{args: []string{"--dir", dir, "--interrupt-timeout", "2s"}})
	s.dirs["web"] = dir
	origin := strings.TrimSuffix(s.base, svPath)
	id := webCreateSession(t, s, dir)
	prompt := &http.Client{Timeout: 10 * time.Second}
	post := func(what string, msg any) time.Duration {
		t.Helper()
		body, _ := json.Marshal(msg)
		start := time.Now()
		code, _, b, err := svDo(prompt, http.MethodPost, origin+"/api/web/sessions/"+id+"/messages", "", bytes.NewReader(body))
		took := time.Since(start)
		if err != nil || code != http.StatusAccepted {
			t.Fatalf("POST %s: HTTP %d after %v, %v: %.300s", what, code, took.Round(time.Millisecond), err, b)
		}
		return took
	}
	isType := func(typ string) func(gjson.Result) bool {
		return func(l gjson.Result) bool { return l.Get("type").Str == typ && !l.Get("history").Bool() }
	}
	post("hello", map[string]any{"type": "user_message", "text": "hello"})
	webStreamWait(t, s, id, "the first turn's end", isType("turn_complete"))
	cli := s.cliPID("web")
	stopCLI(t, cli)
	post("the big message", map[string]any{"type": "user_message", "text": strings.Repeat("x", bigPrompt)})
	stdinFull(t, cli)
	start := time.Now()
	var slowest time.Duration
	for i := range 80 {
		slowest = max(slowest, post("interrupt "+strconv.Itoa(i+1), map[string]any{"type": "interrupt"}))
	}
	t.Logf("80 interrupts answered, the slowest in %v", slowest.Round(time.Millisecond))
	end := webStreamWait(t, s, id, "the big message's terminal message", func(l gjson.Result) bool {
		return l.Get("type").Str == "turn_cancelled" || l.Get("type").Str == "error" && l.Get("recoverable").Type == gjson.False
	})
	took := time.Since(start)
	t.Logf("%s %v after the first interrupt", end.Raw, took.Round(time.Millisecond))
	if end.Get("type").Str != "turn_cancelled" || end.Get("reason").Str != "interrupt_timeout" {
		t.Errorf("the big message ended with %s, want turn_cancelled interrupt_timeout", end.Raw)
	}
	if took > 15*time.Second {
		t.Errorf("turn_cancelled came %v after the first interrupt, want about --interrupt-timeout (2 s)", took)
	}
	waitNotRunning(t, cli, "the stopped CLI after the interrupt deadline")

	start = time.Now()
	code, _, b, err := svDo(prompt, http.MethodDelete, origin+"/api/web/sessions/"+id, "", nil)
	if err != nil || code != http.StatusNoContent {
		t.Fatalf("DELETE the session: HTTP %d after %v, %v: %.300s", code, time.Since(start).Round(time.Millisecond), err, b)
	}
	webStreamWait(t, s, id, "session_ended", isType("session_ended"))
	start = time.Now()
	if code := s.stop(syscall.SIGTERM); code != 0 {
		t.Errorf("ccbridge serve exited %d after SIGTERM", code)
	}
	t.Logf("serve exited %v after SIGTERM", time.Since(start).Round(time.Millisecond))
	if running(cli) {
		t.Errorf("the stopped CLI %d still runs after serve exited", cli)
	}
}
