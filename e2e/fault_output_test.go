//go:build linux

package e2e

// Faults of the UI's side of stdout: a UI that stops reading, and a UI
// that closes its end (docs/reliability/output.md). Each runs against
// the real CLI in every dialect, with a prompt whose answer is
// megabytes long, and a UI that reads none of it.

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/tidwall/gjson"
)

// bigAnswer is the size of the text the prompt asks for: its deltas
// alone are more than the UI's pipe, ccbridge's queue and the CLI's pipe
// hold together (256 KiB each).
const bigAnswer = 3 << 20

// stalledUI runs ccbridge with a stdout that the test reads only as far
// as it must, and then never again (or closes).
type stalledUI struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *os.File // the read end of ccbridge's stdout
	rd     *bufio.Reader
	stderr *lockedBuffer
	dir    string
	exited chan struct{}
	state  *os.ProcessState
}

func startStalled(t *testing.T, args []string) *stalledUI {
	t.Helper()
	cli := realCLI(t)
	api := fakeAPI(t)
	u := &stalledUI{t: t, stderr: &lockedBuffer{}, dir: t.TempDir(), exited: make(chan struct{})}
	u.cmd = exec.Command(ccbridgeBin, args...)
	u.cmd.Dir = u.dir
	u.cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "CCBRIDGE_CLAUDE="+cli, "CCBRIDGE_LOG_LEVEL=debug")
	u.cmd.Env = append(u.cmd.Env, api.Env()...)
	u.cmd.Stderr = u.stderr
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	u.out, u.rd = r, bufio.NewReader(r)
	u.cmd.Stdout = w
	if u.stdin, err = u.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := u.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	go func() {
		u.cmd.Wait()
		u.state = u.cmd.ProcessState
		close(u.exited)
	}()
	t.Cleanup(func() {
		u.stdin.Close()
		select {
		case <-u.exited:
		default:
			u.cmd.Process.Kill()
			<-u.exited
		}
		u.out.Close()
		if t.Failed() || os.Getenv("FAULT_LOG") != "" {
			t.Logf("ccbridge stderr (tail):\n%s", tail(u.stderr.String(), 6000))
		}
	})
	return u
}

func (u *stalledUI) send(line string) {
	u.t.Helper()
	if _, err := io.WriteString(u.stdin, line+"\n"); err != nil {
		u.t.Fatalf("writing to ccbridge: %v", err)
	}
}

// readUntil reads ccbridge's output until a line for which pred holds.
func (u *stalledUI) readUntil(what string, pred func([]byte) bool) []byte {
	u.t.Helper()
	u.out.SetReadDeadline(time.Now().Add(60 * time.Second))
	defer u.out.SetReadDeadline(time.Time{})
	for {
		line, err := u.rd.ReadBytes('\n')
		if err != nil {
			u.t.Fatalf("reading ccbridge's output before %s: %v", what, err)
		}
		if pred(line) {
			return line
		}
	}
}

// pipeFull waits until ccbridge's stdout pipe holds all it can: ccbridge
// can write no more until the UI reads.
func (u *stalledUI) pipeFull() {
	u.t.Helper()
	conn, err := u.out.SyscallConn()
	if err != nil {
		u.t.Fatal(err)
	}
	var size, queued int
	stat := func() {
		conn.Control(func(fd uintptr) {
			s, _, _ := syscall.Syscall(syscall.SYS_FCNTL, fd, 1032 /* F_GETPIPE_SZ */, 0)
			size = int(s)
			syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&queued)))
		})
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		// Pages may be left partly filled: full is within an eighth.
		if stat(); size > 0 && queued >= size-size/8 {
			return
		}
		if time.Now().After(deadline) {
			u.t.Fatalf("ccbridge's stdout holds %d bytes of %d after 60 s", queued, size)
		}
	}
}

// exitWithin waits up to d for ccbridge to exit, and kills it (failing
// the test) when it does not.
func (u *stalledUI) exitWithin(d time.Duration, after string) time.Duration {
	u.t.Helper()
	start := time.Now()
	select {
	case <-u.exited:
		return time.Since(start)
	case <-time.After(d):
		u.cmd.Process.Kill()
		<-u.exited
		u.t.Fatalf("ccbridge did not exit within %v of %s; killed", d, after)
		return 0
	}
}

// clis are the pids of the CLIs ccbridge started, from its log.
func (u *stalledUI) clis() []int {
	var pids []int
	for line := range strings.Lines(u.stderr.String()) {
		if gjson.Get(line, "msg").Str == "claude started" {
			if pid := int(gjson.Get(line, "pid").Int()); pid > 0 {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// exitedItself checks that ccbridge exited, not killed by a signal
// (SIGPIPE, say).
func (u *stalledUI) exitedItself() {
	u.t.Helper()
	if ws, ok := u.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		u.t.Fatalf("ccbridge was killed by %v", ws.Signal())
	}
}

// logged reports whether ccbridge's log has a record with message msg
// and, when reason is not empty, that reason.
func (u *stalledUI) logged(msg, reason string) bool {
	for line := range strings.Lines(u.stderr.String()) {
		if gjson.Get(line, "msg").Str == msg && (reason == "" || gjson.Get(line, "reason").Str == reason) {
			return true
		}
	}
	return false
}

// outputDialect is how one dialect asks for a long answer, and what it
// logs when its session shuts down.
type outputDialect struct {
	name string
	args []string
	// ask sends what makes the CLI answer with text of n bytes, reading
	// only the output it needs for that.
	ask func(u *stalledUI, n int)
	// shutdownMsg is the log message of a shutdown, with the reason.
	shutdownMsg string
}

var outputDialects = []outputDialect{
	{
		name: "dropin", args: cliFlags, shutdownMsg: "staged shutdown",
		ask: func(u *stalledUI, n int) { u.send(userLine("BIGTEXT " + strconv.Itoa(n))) },
	},
	{
		name: "ipc", args: []string{"--ui", "ipc"}, shutdownMsg: "shutting down",
		ask: func(u *stalledUI, n int) { u.send(userMessage("BIGTEXT " + strconv.Itoa(n))) },
	},
	{
		name: "rpc", args: []string{"--ui", "rpc"}, shutdownMsg: "shutting down",
		ask: func(u *stalledUI, n int) {
			u.send(`{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocol_version":"0","client":{"name":"e2e","version":"1.0"}}}`)
			u.send(`{"jsonrpc":"2.0","id":"r","method":"run.start","params":{"input":{"type":"text","text":"BIGTEXT ` + strconv.Itoa(n) + `"}}}`)
		},
	},
	{
		name: "acp", args: []string{"--ui", "acp"}, shutdownMsg: "shutting down",
		ask: func(u *stalledUI, n int) {
			u.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
			u.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":` + jsonStr(mustReal(u.t, u.dir)) + `,"mcpServers":[]}}`)
			reply := u.readUntil("the session/new reply", func(l []byte) bool { return gjson.GetBytes(l, "id").Raw == "2" })
			sid := gjson.GetBytes(reply, "result.sessionId").Str
			if sid == "" {
				u.t.Fatalf("session/new: %s", reply)
			}
			u.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"BIGTEXT ` + strconv.Itoa(n) + `"}]}}`)
		},
	},
}

// cliGone checks that no CLI ccbridge started is left: each one's process
// group (the CLI leads its own) is empty.
func (u *stalledUI) cliGone() {
	u.t.Helper()
	pids := u.clis()
	if len(pids) == 0 {
		u.t.Fatal("ccbridge logged no CLI start")
	}
	for _, pid := range pids {
		if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
			u.t.Errorf("the CLI's process group %d is still there after ccbridge exited (kill: %v)", pid, err)
			syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
}

// TestFaultOutputStalledUISIGTERM: a UI that reads none of a
// megabytes-long answer does not freeze ccbridge: SIGTERM still runs the
// staged shutdown, the output the UI never takes is given up, and
// ccbridge exits within seconds (before the 10 s grace of the staged
// shutdown would even send the CLI SIGTERM), leaving no CLI behind. Every
// dialect: each handles its own shutdown.
func TestFaultOutputStalledUISIGTERM(t *testing.T) {
	t.Parallel()
	for _, d := range outputDialects {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			u := startStalled(t, d.args)
			d.ask(u, bigAnswer)
			u.pipeFull()
			u.cmd.Process.Signal(syscall.SIGTERM)
			took := u.exitWithin(20*time.Second, "SIGTERM")
			t.Logf("exited %v after SIGTERM", took.Round(time.Millisecond))
			u.exitedItself()
			if took > 10*time.Second {
				t.Errorf("ccbridge took %v to exit after SIGTERM, want under the 10 s grace", took)
			}
			if !u.logged(d.shutdownMsg, "terminated") {
				t.Errorf("ccbridge did not log %q for SIGTERM", d.shutdownMsg)
			}
			u.cliGone()
		})
	}
}

// TestFaultOutputUIClosesStdout: a UI that closes its end of ccbridge's
// stdout while a long answer streams does not kill ccbridge with
// SIGPIPE: the failed write means "the UI is gone", the staged shutdown
// runs, and ccbridge exits on its own with no CLI left. Drop-in and one
// dialect on the session core: ipc, rpc and acp share its writer.
func TestFaultOutputUIClosesStdout(t *testing.T) {
	t.Parallel()
	for _, d := range outputDialects[:2] {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			u := startStalled(t, d.args)
			d.ask(u, bigAnswer)
			u.pipeFull()
			u.out.Close()
			took := u.exitWithin(20*time.Second, "closing its stdout")
			t.Logf("exited %v after the UI closed its end", took.Round(time.Millisecond))
			u.exitedItself()
			reason := "the UI's output is gone"
			if d.name == "dropin" {
				reason = "the host's output is gone"
			}
			if !u.logged(d.shutdownMsg, reason) {
				t.Errorf("ccbridge did not log %q with reason %q", d.shutdownMsg, reason)
			}
			u.cliGone()
			if code := u.state.ExitCode(); code == 0 {
				t.Errorf("ccbridge exited 0 though its output was lost")
			}
		})
	}
}
