package main

// End-to-end tests: the test binary runs as ccbridge (see TestMain), in
// front of the real Claude Code CLI, which talks to the fake Messages API.
// They need the real CLI: scripts/install-tools.sh puts it in .tools/, or
// CCBRIDGE_TEST_CLAUDE names it. Without it they are skipped, except under
// CI=true, where a missing CLI fails them.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/session/fakemodel"
)

// runAsCCBridge is the environment variable that makes the test binary act
// as ccbridge itself.
const runAsCCBridge = "CCBRIDGE_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runAsCCBridge) == "1" {
		os.Unsetenv(runAsCCBridge)
		main()
		return
	}
	if mode := os.Getenv(perfHelperEnv); mode != "" {
		runPerfHelper(mode) // perf_test.go; it exits
		return
	}
	os.Exit(m.Run())
}

// realCLI returns the path of the real Claude Code CLI, or skips the test.
func realCLI(t testing.TB) string {
	t.Helper()
	candidates := []string{os.Getenv("CCBRIDGE_TEST_CLAUDE")}
	if wd, err := os.Getwd(); err == nil {
		candidates = append(candidates,
			filepath.Join(wd, ".tools/node_modules/@anthropic-ai/claude-code/bin/claude.exe"))
	}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if fi, err := os.Stat(c); err == nil && fi.Mode()&0o111 != 0 {
			return c
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("the real Claude Code CLI is missing (run scripts/install-tools.sh or set CCBRIDGE_TEST_CLAUDE)")
	}
	t.Skip("the real Claude Code CLI is not installed; run scripts/install-tools.sh")
	return ""
}

var (
	fakeOnce sync.Once
	fakeSrv  *fakemodel.Server
	fakeErr  error
)

// fakeAPI is one fake Messages API shared by the tests; its answers depend
// only on each request.
func fakeAPI(t testing.TB) *fakemodel.Server {
	t.Helper()
	fakeOnce.Do(func() {
		sc, err := fakemodel.Load("default")
		if err != nil {
			fakeErr = err
			return
		}
		fakeSrv, fakeErr = fakemodel.Start(sc, slog.New(slog.DiscardHandler))
	})
	if fakeErr != nil {
		t.Fatalf("fake model: %v", fakeErr)
	}
	return fakeSrv
}

// bridge is one ccbridge process under test.
type bridge struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte
	stderr *lockedBuffer
	dir    string
	exited chan struct{}
	code   int
}

// cliFlags is the argument list a typical host (the Agent SDK, say) passes.
var cliFlags = []string{
	"--output-format", "stream-json", "--input-format", "stream-json", "--verbose",
	"--permission-prompt-tool", "stdio", "--include-partial-messages", "--replay-user-messages",
}

// startBridge runs ccbridge with args in a fresh working directory and HOME.
func startBridge(t *testing.T, args []string, env ...string) *bridge {
	t.Helper()
	cli := realCLI(t)
	api := fakeAPI(t)
	b := &bridge{t: t, lines: make(chan []byte, 1024), stderr: &lockedBuffer{}, dir: t.TempDir(), exited: make(chan struct{})}
	home := t.TempDir()
	b.cmd = exec.Command(os.Args[0], args...)
	b.cmd.Dir = b.dir
	b.cmd.Env = append(os.Environ(), runAsCCBridge+"=1", "HOME="+home, "CCBRIDGE_CLAUDE="+cli, "CCBRIDGE_LOG_LEVEL=debug")
	b.cmd.Env = append(b.cmd.Env, api.Env()...)
	b.cmd.Env = append(b.cmd.Env, env...)
	b.cmd.Stderr = b.stderr
	var err error
	if b.stdin, err = b.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := b.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				b.lines <- bytes.TrimSuffix(line, []byte("\n"))
			}
			if err != nil {
				close(b.lines)
				err := b.cmd.Wait()
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					b.code = ee.ExitCode()
					if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
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
	return b
}

func (b *bridge) send(line string) {
	b.t.Helper()
	if _, err := io.WriteString(b.stdin, line+"\n"); err != nil {
		b.t.Fatalf("writing to ccbridge: %v", err)
	}
}

func (b *bridge) prompt(text string) {
	b.t.Helper()
	b.send(userLine(text))
}

func userLine(text string) string {
	return `{"type":"user","session_id":"","message":{"role":"user","content":[{"type":"text","text":` +
		strconv.Quote(text) + `}]},"parent_tool_use_id":null}`
}

// next returns the next line, failing after timeout.
func (b *bridge) next(timeout time.Duration) ([]byte, bool) {
	b.t.Helper()
	select {
	case line, ok := <-b.lines:
		if ok && !gjson.ValidBytes(line) {
			b.t.Errorf("ccbridge wrote a line that is not JSON: %.200s", line)
		}
		return line, ok
	case <-time.After(timeout):
		b.t.Fatalf("no line from ccbridge within %v", timeout)
		return nil, false
	}
}

// until reads lines until pred holds for one, returning every line read.
func (b *bridge) until(what string, pred func(line []byte) bool) [][]byte {
	b.t.Helper()
	var seen [][]byte
	deadline := time.Now().Add(90 * time.Second)
	for {
		line, ok := b.next(time.Until(deadline))
		if !ok {
			b.t.Fatalf("ccbridge's output ended before %s; saw %d lines", what, len(seen))
		}
		seen = append(seen, line)
		if pred(line) {
			return seen
		}
	}
}

// rest reads every line until ccbridge's output ends.
func (b *bridge) rest() [][]byte {
	b.t.Helper()
	var seen [][]byte
	for {
		line, ok := b.next(90 * time.Second)
		if !ok {
			return seen
		}
		seen = append(seen, line)
	}
}

func (b *bridge) wait() int {
	b.t.Helper()
	select {
	case <-b.exited:
		return b.code
	case <-time.After(60 * time.Second):
		b.t.Fatalf("ccbridge did not exit")
		return -1
	}
}

func isType(typ string) func([]byte) bool {
	return func(line []byte) bool { return gjson.GetBytes(line, "type").Str == typ }
}

func isTypeSub(typ, sub string) func([]byte) bool {
	return func(line []byte) bool {
		return gjson.GetBytes(line, "type").Str == typ && gjson.GetBytes(line, "subtype").Str == sub
	}
}

func isCanUseTool(line []byte) bool {
	return gjson.GetBytes(line, "type").Str == "control_request" &&
		gjson.GetBytes(line, "request.subtype").Str == "can_use_tool"
}

func count(lines [][]byte, pred func([]byte) bool) int {
	n := 0
	for _, l := range lines {
		if pred(l) {
			n++
		}
	}
	return n
}

// childPID finds the CLI process started by ccbridge.
func (b *bridge) childPID() int {
	b.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", b.cmd.Process.Pid, b.cmd.Process.Pid))
		if err == nil {
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil {
					return pid
				}
			}
		}
		// The child may have been started by another thread of ccbridge.
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", b.cmd.Process.Pid))
		for _, p := range tasks {
			data, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil {
					return pid
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.t.Fatal("ccbridge has no child process")
	return 0
}

// groupGone waits until no process is left in the process group pgid.
func groupGone(t *testing.T, pgid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("processes are left in the CLI's process group %d", pgid)
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

func allowLine(requestID string) string {
	return `{"type":"control_response","response":{"subtype":"success","request_id":"` + requestID +
		`","response":{"behavior":"allow"}}}`
}

func denyLine(requestID string) string {
	return `{"type":"control_response","response":{"subtype":"success","request_id":"` + requestID +
		`","response":{"behavior":"deny","message":"not in this test"}}}`
}

func TestE2EDropInTextTurn(t *testing.T) {
	b := startBridge(t, cliFlags)
	b.prompt("hello there")
	lines := b.until("the result", isType("result"))
	res := lines[len(lines)-1]
	if gjson.GetBytes(res, "subtype").Str != "success" || gjson.GetBytes(res, "is_error").Bool() {
		t.Fatalf("result: %s", res)
	}
	if count(lines, isTypeSub("system", "init")) != 1 {
		t.Errorf("want one system/init before the result")
	}
	if count(lines, isType("stream_event")) == 0 {
		t.Errorf("no stream_event passed through")
	}
	if gjson.GetBytes(res, "ccbridge_synthetic").Exists() {
		t.Errorf("a real result was marked synthetic: %s", res)
	}
	b.stdin.Close()
	if rest := b.rest(); len(rest) != 0 {
		t.Errorf("lines after the last result and EOF: %d", len(rest))
	}
	if code := b.wait(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
}

func TestE2EDropInPermission(t *testing.T) {
	for _, allow := range []bool{true, false} {
		t.Run(map[bool]string{true: "allow", false: "deny"}[allow], func(t *testing.T) {
			b := startBridge(t, cliFlags)
			b.prompt("Please WRITEFILE now")
			lines := b.until("the permission request", isCanUseTool)
			req := lines[len(lines)-1]
			if tool := gjson.GetBytes(req, "request.tool_name").Str; tool != "Write" {
				t.Fatalf("permission asked for %q, want Write", tool)
			}
			path := gjson.GetBytes(req, "request.input.file_path").Str
			id := gjson.GetBytes(req, "request_id").Str
			if allow {
				b.send(allowLine(id))
			} else {
				b.send(denyLine(id))
			}
			lines = b.until("the result", isType("result"))
			res := lines[len(lines)-1]
			_, statErr := os.Stat(path)
			denials := gjson.GetBytes(res, "permission_denials.#").Int()
			if allow {
				if statErr != nil {
					t.Errorf("allowed Write left no file at %s: %v", path, statErr)
				}
				if denials != 0 {
					t.Errorf("permission_denials = %d after allow", denials)
				}
			} else {
				if statErr == nil {
					t.Errorf("denied Write created %s", path)
				}
				if denials != 1 {
					t.Errorf("permission_denials = %d after deny, want 1: %s", denials, res)
				}
			}
			b.stdin.Close()
			b.rest()
			if code := b.wait(); code != 0 {
				t.Errorf("exit code %d, want 0", code)
			}
		})
	}
}

// interrupted reports whether a result ended a turn by interrupt.
func interrupted(res []byte) bool {
	return gjson.GetBytes(res, "subtype").Str == "error_during_execution" &&
		strings.HasPrefix(gjson.GetBytes(res, "terminal_reason").Str, "aborted")
}

func TestE2EDropInHostInterrupt(t *testing.T) {
	b := startBridge(t, cliFlags)
	b.prompt("SLOW please")
	b.until("streaming text", func(l []byte) bool {
		return gjson.GetBytes(l, "event.delta.type").Str == "text_delta"
	})
	b.send(`{"type":"control_request","request_id":"host-int-1","request":{"subtype":"interrupt"}}`)
	lines := b.until("the result", isType("result"))
	if !interrupted(lines[len(lines)-1]) {
		t.Fatalf("result after interrupt: %s", lines[len(lines)-1])
	}
	if count(lines, func(l []byte) bool {
		return gjson.GetBytes(l, "type").Str == "control_response" && gjson.GetBytes(l, "response.request_id").Str == "host-int-1"
	}) != 1 {
		t.Errorf("the host's own interrupt was not answered to the host")
	}
	// The session goes on.
	b.prompt("hello again")
	lines = b.until("the second result", isType("result"))
	if res := lines[len(lines)-1]; gjson.GetBytes(res, "subtype").Str != "success" {
		t.Errorf("turn after the interrupt: %s", res)
	}
}

func TestE2EDropInSIGINT(t *testing.T) {
	b := startBridge(t, cliFlags)
	b.prompt("SLOW please")
	b.until("streaming text", func(l []byte) bool {
		return gjson.GetBytes(l, "event.delta.type").Str == "text_delta"
	})
	if err := b.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	lines := b.until("the result", isType("result"))
	if !interrupted(lines[len(lines)-1]) {
		t.Fatalf("result after SIGINT: %s", lines[len(lines)-1])
	}
	if n := count(lines, isType("control_response")); n != 0 {
		t.Errorf("the host saw %d control_response lines for a request it never made", n)
	}
	b.prompt("hello again")
	lines = b.until("the second result", isType("result"))
	if res := lines[len(lines)-1]; gjson.GetBytes(res, "subtype").Str != "success" {
		t.Errorf("turn after SIGINT: %s", res)
	}
	b.stdin.Close()
	b.rest()
	if code := b.wait(); code != 0 {
		t.Errorf("exit code %d, want 0 (the last turn succeeded)", code)
	}
}

func TestE2EDropInDoubleSIGINTShutsDown(t *testing.T) {
	b := startBridge(t, cliFlags)
	b.prompt("SLOW please")
	b.until("streaming text", func(l []byte) bool {
		return gjson.GetBytes(l, "event.delta.type").Str == "text_delta"
	})
	pid := b.childPID()
	b.cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(100 * time.Millisecond)
	b.cmd.Process.Signal(syscall.SIGINT)
	lines := b.rest()
	if n := count(lines, isType("result")); n != 1 {
		t.Errorf("%d results after two SIGINTs, want 1", n)
	}
	b.wait()
	groupGone(t, pid)
}

func TestE2EDropInSIGTERMShutsDown(t *testing.T) {
	b := startBridge(t, cliFlags)
	b.prompt("hello")
	b.until("the result", isType("result"))
	pid := b.childPID()
	start := time.Now()
	b.cmd.Process.Signal(syscall.SIGTERM)
	b.rest()
	b.wait()
	groupGone(t, pid)
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("SIGTERM shutdown took %v", d)
	}
}

func TestE2EDropInChildKilledMidTurn(t *testing.T) {
	b := startBridge(t, cliFlags)
	b.prompt("SLOW please")
	lines := b.until("streaming text", func(l []byte) bool {
		return gjson.GetBytes(l, "event.delta.type").Str == "text_delta"
	})
	sessionID := ""
	for _, l := range lines {
		if id := gjson.GetBytes(l, "session_id").Str; id != "" {
			sessionID = id
		}
	}
	pid := b.childPID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	lines = b.rest()
	results := 0
	for _, l := range lines {
		if !isType("result")(l) {
			continue
		}
		results++
		if !gjson.GetBytes(l, "ccbridge_synthetic").Bool() || !gjson.GetBytes(l, "is_error").Bool() ||
			gjson.GetBytes(l, "subtype").Str != "error_during_execution" {
			t.Errorf("result after the child died: %s", l)
		}
		if got := gjson.GetBytes(l, "session_id").Str; got != sessionID {
			t.Errorf("synthetic result session_id %q, want %q", got, sessionID)
		}
		if !strings.Contains(gjson.GetBytes(l, "errors.0").Str, "signal") {
			t.Errorf("synthetic result does not say the child was killed: %s", l)
		}
	}
	if results != 1 {
		t.Errorf("%d results after the child was killed, want exactly 1", results)
	}
	if code := b.wait(); code != 128+int(syscall.SIGKILL) {
		t.Errorf("exit code %d, want %d (the child's)", code, 128+int(syscall.SIGKILL))
	}
	groupGone(t, pid)
}

func TestE2EDropInStdinEOFMidTurn(t *testing.T) {
	b := startBridge(t, cliFlags)
	b.prompt("SLOW please")
	b.until("streaming text", func(l []byte) bool {
		return gjson.GetBytes(l, "event.delta.type").Str == "text_delta"
	})
	b.stdin.Close()
	lines := b.rest()
	results := 0
	for _, l := range lines {
		if isType("result")(l) {
			results++
			if gjson.GetBytes(l, "subtype").Str != "success" || gjson.GetBytes(l, "ccbridge_synthetic").Exists() {
				t.Errorf("the turn did not finish normally after EOF: %s", l)
			}
		}
	}
	if results != 1 {
		t.Errorf("%d results after EOF, want 1", results)
	}
	if code := b.wait(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
}

func TestE2EDropInNonJSONLineDropped(t *testing.T) {
	b := startBridge(t, cliFlags)
	b.send("{this is not json")
	b.send("\xff\xfe not utf-8")
	b.prompt("hello there")
	lines := b.until("the result", isType("result"))
	if res := lines[len(lines)-1]; gjson.GetBytes(res, "subtype").Str != "success" {
		t.Fatalf("the CLI did not survive a bad host line: %s", res)
	}
	if !strings.Contains(b.stderr.String(), "not valid JSON") {
		t.Errorf("no warning about the dropped line on stderr")
	}
	b.stdin.Close()
	b.rest()
	if code := b.wait(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
}

func TestE2EDropInTenMiBLines(t *testing.T) {
	const size = 10 << 20
	b := startBridge(t, cliFlags)
	// Host → CLI: a 10 MiB prompt comes back whole in the replay.
	big := strings.Repeat("0123456789abcdef", size/16)
	b.prompt(big)
	lines := b.until("the replay", func(l []byte) bool {
		return isType("user")(l) && gjson.GetBytes(l, "isReplay").Bool()
	})
	replay := lines[len(lines)-1]
	if got := gjson.GetBytes(replay, "message.content.0.text").Str; got != big {
		t.Fatalf("the 10 MiB prompt came back changed: %d bytes, want %d", len(got), len(big))
	}
	b.until("the first result", isType("result"))
	// CLI → host: a 10 MiB assistant text.
	b.prompt("BIGTEXT " + strconv.Itoa(size))
	lines = b.until("the second result", isType("result"))
	var text string
	for _, l := range lines {
		if isType("assistant")(l) {
			text += gjson.GetBytes(l, "message.content.0.text").Str
		}
	}
	if len(text) != size {
		t.Errorf("assistant text of %d bytes, want %d", len(text), size)
	}
}

// agentSDK runs testdata/clients/sdk_dropin.mjs: the official Agent SDK
// driving ccbridge (this test binary, acting as ccbridge) as its
// pathToClaudeCodeExecutable. It returns the script's events.
func agentSDK(t *testing.T, scenario string) []gjson.Result {
	t.Helper()
	cli := realCLI(t)
	wd, _ := os.Getwd()
	module := filepath.Join(wd, ".tools/node_modules/@anthropic-ai/claude-agent-sdk/sdk.mjs")
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(module); err != nil || serr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the Agent SDK or node is missing (run scripts/install-tools.sh): %v %v", err, serr)
		}
		t.Skip("the Agent SDK is not installed; run scripts/install-tools.sh")
	}
	dir := t.TempDir()
	cmd := exec.Command(node, "testdata/clients/sdk_dropin.mjs")
	cmd.Env = append(os.Environ(), runAsCCBridge+"=1", "HOME="+t.TempDir(), "CCBRIDGE_CLAUDE="+cli,
		"SDK_MODULE="+module, "CCBRIDGE_BIN="+os.Args[0], "WORKDIR="+dir, "SCENARIO="+scenario)
	cmd.Env = append(cmd.Env, fakeAPI(t).Env()...)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the SDK script failed: %v\nstdout:\n%s\nstderr:\n%s", err, out, tail(stderr.String(), 4000))
	}
	var events []gjson.Result
	for _, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		events = append(events, gjson.ParseBytes(l))
	}
	if len(events) == 0 || events[len(events)-1].Get("event").Str != "done" {
		t.Fatalf("the SDK run did not finish: %s\nstderr:\n%s", out, tail(stderr.String(), 4000))
	}
	return events
}

func TestE2EAgentSDKWriteAllowed(t *testing.T) {
	events := agentSDK(t, "write")
	var asked, path string
	var result gjson.Result
	for _, e := range events {
		switch {
		case e.Get("event").Str == "can_use_tool":
			asked, path = e.Get("toolName").Str, e.Get("file_path").Str
		case e.Get("type").Str == "result":
			result = e
		}
	}
	if asked != "Write" {
		t.Fatalf("the SDK's canUseTool saw %q, want Write", asked)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the allowed Write left no file: %v", err)
	}
	if result.Get("subtype").Str != "success" || result.Get("is_error").Bool() {
		t.Errorf("result: %s", result.Raw)
	}
}

func TestE2EAgentSDKInterrupt(t *testing.T) {
	events := agentSDK(t, "interrupt")
	acked, results := false, 0
	for _, e := range events {
		if e.Get("event").Str == "interrupt_acknowledged" {
			acked = true
		}
		if e.Get("type").Str == "result" {
			results++
			if !acked || e.Get("subtype").Str != "error_during_execution" {
				t.Errorf("result: %s (interrupt acknowledged before it: %v)", e.Raw, acked)
			}
		}
	}
	if !acked || results != 1 {
		t.Errorf("interrupt acknowledged %v, %d results; want true, 1", acked, results)
	}
}
