package e2e

// The harness of the end-to-end tests. TestMain builds ccbridge once into a
// temporary folder (with -race when this test binary has it, so that the
// race detector covers ccbridge too); every test runs that binary in front
// of the real Claude Code CLI, which talks to a fake Messages API
// (fakemodel, scenario default) of the test's own. The tests need
// the real CLI: scripts/install-tools.sh puts it in the repository's
// .tools/, or CCBRIDGE_TEST_CLAUDE names it; the Agent SDK and ACP tests
// need node and the npm packages in .tools/ too. Without them the tests are
// skipped, except under CI=true, where they fail.
//
// Then one client helper per dialect: drop-in (stream-json lines and the
// Agent SDK), ipc, rpc and acp (the ACP client library).

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/fakemodel"
	"github.com/ccbridge/ccbridge/mapping/rpc"
	"github.com/ccbridge/ccbridge/session/clifiles"
)

// defaultParallel is how many tests of this package run at once when
// -parallel is not given. The tests spend most of their time waiting (for
// the CLI to start, for the fake model's paced streams), so more than the
// GOMAXPROCS that go test's default would give.
const defaultParallel = 4

var (
	// repoRoot is the module's root folder, the parent of e2e/.
	repoRoot string
	// ccbridgeBin is ccbridge, built by TestMain.
	ccbridgeBin string
	// raceLogs is where a -race ccbridge writes its race reports (GORACE
	// log_path); TestMain fails the run when one is there.
	raceLogs string
	// ccbridgeRace: ccbridgeBin is built with -race.
	ccbridgeRace bool
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(perfHelperEnv); mode != "" {
		runPerfHelper(mode) // perf_test.go; it exits
		return
	}
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	flag.Parse()
	parallelSet := false
	flag.Visit(func(f *flag.Flag) { parallelSet = parallelSet || f.Name == "test.parallel" })
	if !parallelSet {
		flag.Set("test.parallel", strconv.Itoa(defaultParallel))
	}
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	repoRoot = filepath.Dir(wd)
	tmp, err := os.MkdirTemp("", "ccbridge-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	ccbridgeBin = filepath.Join(tmp, "ccbridge")
	// -buildvcs=auto records the commit (ccbridge version) even where
	// GOFLAGS turns it off.
	args := []string{"build", "-buildvcs=auto", "-o", ccbridgeBin}
	ccbridgeRace = raceEnabled() || os.Getenv("CCBRIDGE_E2E_RACE") == "1"
	if ccbridgeRace {
		args = append(args, "-race")
		raceLogs = filepath.Join(tmp, "race")
		if err := os.Mkdir(raceLogs, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
		// Every ccbridge the tests start inherits it.
		os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" log_path="+filepath.Join(raceLogs, "report")))
	}
	start := time.Now()
	build := exec.Command("go", append(args, ".")...)
	build.Dir = repoRoot
	cgo := "" // -race needs cgo
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if !ccbridgeRace {
		// The static binary ccbridge ships as (README, scripts/test.sh):
		// built with cgo it would map libc too, about 1.5 MB more of
		// every process's peak RSS than users see.
		cgo = "CGO_ENABLED=0 "
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
	}
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %sgo %s in %s: %v\n%s", cgo, strings.Join(args, " "), repoRoot, err, out)
		return 1
	}
	if testing.Verbose() {
		fmt.Printf("e2e: %sgo %s: %.1f s\n", cgo, strings.Join(args, " "), time.Since(start).Seconds())
	}
	code := m.Run()
	stopBrowser() // browser_harness_test.go
	if raceLogs != "" {
		reports, _ := filepath.Glob(filepath.Join(raceLogs, "report.*"))
		for _, r := range reports {
			data, _ := os.ReadFile(r)
			fmt.Fprintf(os.Stderr, "e2e: the race detector reported in a ccbridge (%s):\n%s\n", filepath.Base(r), data)
			code = 1
		}
	}
	return code
}

// raceEnabled reports whether the test binary was built with -race. The
// ccbridge the tests run is built the same way, or with -race alone when
// CCBRIDGE_E2E_RACE=1 (ccbridgeRace: scripts/test.sh builds this package
// without it, as the static build does, so that they share their compiled
// packages, and the race detector watches the product, not the harness);
// the performance harnesses, whose fakes are this binary, skip themselves
// under either.
func raceEnabled() bool {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" && s.Value == "true" {
				return true
			}
		}
	}
	return false
}

// toolsFile returns the path of rel in the repository's .tools/ folder, or
// "" when it is not there. The tests run in e2e/, so ../.tools is the one;
// .tools is looked at too.
func toolsFile(rel string) string {
	for _, dir := range []string{filepath.Join(repoRoot, ".tools"), ".tools"} {
		p, err := filepath.Abs(filepath.Join(dir, rel))
		if err != nil {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// clientScript is the path of a client script in testdata/clients.
func clientScript(name string) string {
	return filepath.Join(repoRoot, "testdata", "clients", name)
}

// realCLI returns the path of the real Claude Code CLI, or skips the test
// (fails it under CI=true).
func realCLI(t testing.TB) string {
	t.Helper()
	candidates := []string{os.Getenv("CCBRIDGE_TEST_CLAUDE"), toolsFile("node_modules/@anthropic-ai/claude-code/bin/claude.exe")}
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

// nodeModule returns node and the path of rel under .tools/node_modules, or
// skips the test (fails it under CI=true) when either is missing; what
// names the package in the message.
func nodeModule(t testing.TB, rel, what string) (node, module string) {
	t.Helper()
	module = toolsFile(filepath.Join("node_modules", rel))
	node, err := exec.LookPath("node")
	if err != nil || module == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node or %s is missing (run scripts/install-tools.sh): node: %v; %s in .tools/node_modules: %v", what, err, rel, module != "")
		}
		t.Skipf("node or %s is not installed; run scripts/install-tools.sh", what)
	}
	return node, module
}

var (
	fakeMu   sync.Mutex
	fakeAPIs = map[testing.TB]*fakemodel.Server{}
)

// fakeAPI is the fake Messages API of test t (a test or a subtest), started
// on first use and closed when t ends. Each test has its own so that what
// the server keeps (the bodies of its 16 latest requests, which
// seenByModel reads) is that test's alone while others run in parallel.
func fakeAPI(t testing.TB) *fakemodel.Server {
	t.Helper()
	fakeMu.Lock()
	defer fakeMu.Unlock()
	if s := fakeAPIs[t]; s != nil {
		return s
	}
	sc, err := fakemodel.Load("default")
	if err != nil {
		t.Fatalf("fake model: %v", err)
	}
	s, err := fakemodel.Start(sc, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("fake model: %v", err)
	}
	fakeAPIs[t] = s
	t.Cleanup(func() {
		fakeMu.Lock()
		delete(fakeAPIs, t)
		fakeMu.Unlock()
		s.Close()
	})
	return s
}

// bridge is one ccbridge process under test.
type bridge struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte
	stderr *lockedBuffer
	dir    string // its working directory
	home   string // its HOME, unless env gave another
	api    *fakemodel.Server
	exited chan struct{}
	code   int
}

// cliFlags is the argument list a typical host (the Agent SDK, say) passes.
var cliFlags = []string{
	"--output-format", "stream-json", "--input-format", "stream-json", "--verbose",
	"--permission-prompt-tool", "stdio", "--include-partial-messages", "--replay-user-messages",
}

// startBridge runs ccbridge with args in a fresh working directory and HOME
// (env may name another HOME: the later entry wins).
func startBridge(t *testing.T, args []string, env ...string) *bridge {
	t.Helper()
	cli := realCLI(t)
	api := fakeAPI(t)
	b := &bridge{t: t, lines: make(chan []byte, 1024), stderr: &lockedBuffer{}, dir: t.TempDir(), home: t.TempDir(), api: api, exited: make(chan struct{})}
	b.cmd = exec.Command(ccbridgeBin, args...)
	b.cmd.Dir = b.dir
	b.cmd.Env = append(os.Environ(), "HOME="+b.home, "CCBRIDGE_CLAUDE="+cli, "CCBRIDGE_LOG_LEVEL=debug")
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

// waitStderr waits until ccbridge's stderr (its log) holds s.
func (b *bridge) waitStderr(s string) {
	b.t.Helper()
	b.waitStderrFrom(0, s)
}

// stderrLen is how many bytes ccbridge's stderr holds so far: a mark for
// waitStderrFrom.
func (b *bridge) stderrLen() int { return len(b.stderr.String()) }

// waitStderrFrom waits until ccbridge's stderr after its first from bytes
// holds s: a line logged after that mark (in a shared session, not one an
// earlier scenario caused).
func (b *bridge) waitStderrFrom(from int, s string) {
	b.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(b.stderr.String()[from:], s); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.t.Fatalf("ccbridge did not log %q within 30 s", s)
		}
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

// children returns the pids of the child processes of pid.
func children(pid int) []int {
	var pids []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, p := range tasks {
		data, _ := os.ReadFile(p)
		for _, f := range strings.Fields(string(data)) {
			if n, err := strconv.Atoi(f); err == nil {
				pids = append(pids, n)
			}
		}
	}
	return pids
}

// childPID finds the CLI process started by ccbridge: its child, or its
// guardian's (session.Guard).
func (b *bridge) childPID() int {
	b.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		// The child may have been started by any thread of ccbridge.
		// A child that runs ccbridge's program is the guardian, or the CLI
		// before its exec.
		if pids := children(b.cmd.Process.Pid); len(pids) > 0 {
			pid := pids[0]
			if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); exe == ccbridgeBin {
				cli := children(pid)
				if len(cli) == 0 {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				// The guardian's first child; later ones are orphans of the
				// CLI's. The same pid once it has run exec.
				pid = slices.MinFunc(cli, func(a, b int) int { return cmp.Compare(startTime(a), startTime(b)) })
			}
			if hasExeced(pid) {
				return pid
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.t.Fatal("ccbridge has no child process")
	return 0
}

// hasExeced reports whether pid has finished its exec into a program other
// than ccbridge: its exe link reads and its command line is set. Go's
// Start returns once exec has begun, and for a moment after that the
// kernel shows an empty command line.
func hasExeced(pid int) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil || exe == ccbridgeBin {
		return false
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return len(cmdline) > 0
}

// startTime is when pid started, in clock ticks since boot (field 22 of
// /proc/PID/stat, after the parenthesised command name).
func startTime(pid int) uint64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(f[19], 10, 64)
	return n
}

// execed waits until process pid runs another program than ccbridge: a
// child ccbridge forked has run exec.
func execed(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if hasExeced(pid) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not exec within 10 s", pid)
		}
	}
}

// groupGone waits until no process is left in the process group pgid,
// and pgid itself is gone. (Under a guardian the CLI runs in the
// guardian's group, and everything below it is swept: see
// fault_orphans_test.go.)
func groupGone(t *testing.T, pgid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) && errors.Is(syscall.Kill(pgid, 0), syscall.ESRCH) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("processes are left in the CLI's process group %d", pgid)
}

// sessionFile is where the CLI keeps session id of a CLI run with HOME
// home in the folder dir.
func sessionFile(t *testing.T, home, dir, id string) string {
	t.Helper()
	return filepath.Join(home, ".claude", "projects", clifiles.ProjectDirName(mustReal(t, dir)), id+".jsonl")
}

// waitSessionFile waits until the session file holds n lines for which
// pred holds.
func waitSessionFile(t *testing.T, file, what string, n int, pred func(line []byte) bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		data, _ := os.ReadFile(file)
		if count(bytes.Split(data, []byte("\n")), pred) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the CLI did not save %s in %s within 30 s", what, file)
		}
	}
}

func mustReal(t *testing.T, dir string) string {
	t.Helper()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return real
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

var tokenN atomic.Int64

// token returns a word no other prompt of this run contains.
func token(tag string) string {
	return tag + strconv.FormatInt(time.Now().UnixNano()%1e9, 36) + "x" + strconv.FormatInt(tokenN.Add(1), 10)
}

// modelRequest returns the latest /v1/messages request the fake model of
// test t got whose prompt contains tok (not the session-title call).
func modelRequest(t *testing.T, tok string) fakemodel.Request {
	t.Helper()
	return modelRequestIn(t, fakeAPI(t), tok)
}

// modelRequestIn is modelRequest of the fake model api (a subtest's
// bridge.api, which its parent test started).
func modelRequestIn(t *testing.T, api *fakemodel.Server, tok string) fakemodel.Request {
	t.Helper()
	reqs := api.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		r := reqs[i]
		if r.Path == "/v1/messages" && r.Rule != "session-title" && strings.Contains(r.Prompt, tok) {
			return r
		}
	}
	t.Fatalf("the fake model got no request for the prompt with %q", tok)
	return fakemodel.Request{}
}

// seenByModel reports whether the fake model's request for the prompt
// holding tok also holds the word want (earlier history).
func seenByModel(t *testing.T, tok, want string) bool {
	t.Helper()
	return seenByModelIn(t, fakeAPI(t), tok, want)
}

// seenByModelIn is seenByModel of the fake model api.
func seenByModelIn(t *testing.T, api *fakemodel.Server, tok, want string) bool {
	t.Helper()
	r := modelRequestIn(t, api, tok)
	if r.Body == nil {
		t.Fatalf("the fake model kept no body for the request with %q", tok)
	}
	return bytes.Contains(r.Body, []byte(want))
}

// useFakeAPI makes api the fake model of test t (a subtest in a session
// its parent started, see inOneSession) until t ends: fakeAPI(t) returns
// it. A test that has a fake model of its own keeps it.
func useFakeAPI(t *testing.T, api *fakemodel.Server) {
	fakeMu.Lock()
	defer fakeMu.Unlock()
	if fakeAPIs[t] != nil {
		return
	}
	fakeAPIs[t] = api
	t.Cleanup(func() {
		fakeMu.Lock()
		delete(fakeAPIs, t)
		fakeMu.Unlock()
	})
}

// scenario is one rule that a test checks in a session it shares with
// other rules: run drives the session from idle to idle.
type scenario[S any] struct {
	name string // the name of the test the rule had alone
	run  func(t *testing.T, s S)
}

// inOneSession runs scenarios as subtests of t, one after the other, in
// one session that open starts (one ccbridge, one CLI, started once
// rather than once a rule: a CLI start costs about half a CPU-second).
// Each scenario leaves the session idle for the next; bind points the
// session's helpers at the subtest running, so that their failures are
// its own. After a scenario fails, the next ones get a new session:
// a failed rule leaves a state no other should inherit.
func inOneSession[S any](t *testing.T, open func(t *testing.T) S, bind func(s S, t *testing.T), scenarios ...scenario[S]) {
	t.Helper()
	var s S
	fresh := true
	for _, sc := range scenarios {
		if fresh {
			s = open(t)
		}
		fresh = !t.Run(sc.name, func(st *testing.T) {
			bind(s, st)
			defer bind(s, t)
			sc.run(st, s)
		})
	}
}

func jsonStr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func lastLines(lines [][]byte, n int) string {
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	var sb strings.Builder
	for _, l := range lines {
		sb.WriteString("  ")
		sb.WriteString(tail(string(l), 400))
		sb.WriteByte('\n')
	}
	return sb.String()
}

// ---- drop-in: stream-json lines, and the official Agent SDK

func (b *bridge) prompt(text string) {
	b.t.Helper()
	b.send(userLine(text))
}

func userLine(text string) string {
	return `{"type":"user","session_id":"","message":{"role":"user","content":[{"type":"text","text":` +
		strconv.Quote(text) + `}]},"parent_tool_use_id":null}`
}

func allowLine(requestID string) string {
	return `{"type":"control_response","response":{"subtype":"success","request_id":"` + requestID +
		`","response":{"behavior":"allow"}}}`
}

func denyLine(requestID string) string {
	return `{"type":"control_response","response":{"subtype":"success","request_id":"` + requestID +
		`","response":{"behavior":"deny","message":"not in this test"}}}`
}

// interrupted reports whether a result ended a turn by interrupt.
func interrupted(res []byte) bool {
	return gjson.GetBytes(res, "subtype").Str == "error_during_execution" &&
		strings.HasPrefix(gjson.GetBytes(res, "terminal_reason").Str, "aborted")
}

// agentSDK runs testdata/clients/sdk_dropin.mjs: the official Agent SDK
// driving ccbridge as its pathToClaudeCodeExecutable. It returns the
// script's events.
func agentSDK(t *testing.T, scenario string) []gjson.Result {
	t.Helper()
	return agentSDKWith(t, ccbridgeBin, scenario)
}

// agentSDKWith is agentSDK with the ccbridge binary bin.
func agentSDKWith(t *testing.T, bin, scenario string) []gjson.Result {
	t.Helper()
	cli := realCLI(t)
	node, module := nodeModule(t, "@anthropic-ai/claude-agent-sdk/sdk.mjs", "the Agent SDK")
	dir := t.TempDir()
	cmd := exec.Command(node, clientScript("sdk_dropin.mjs"))
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "CCBRIDGE_CLAUDE="+cli,
		"SDK_MODULE="+module, "CCBRIDGE_BIN="+bin, "WORKDIR="+dir, "SCENARIO="+scenario)
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

// ---- ipc (docs/protocol/ipc.md)

const (
	ipcWait  = 30 * time.Second       // the longest wait for one expected line
	ipcQuiet = 400 * time.Millisecond // how long nothing more may follow a terminal message
)

// pngB64 is a valid 1×1 PNG, the one of docs/protocol/ipc.md.
const pngB64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"

// startIPC runs `ccbridge --ui ipc args…` in a fresh working directory and
// HOME.
func startIPC(t *testing.T, args ...string) *bridge {
	t.Helper()
	return startBridge(t, append([]string{"--ui", "ipc"}, args...))
}

var errQuiet = errors.New("no line")

// recv returns ccbridge's next line within d: errQuiet when none came,
// io.EOF when its output ended. Every line must be an ipc v2 message.
func recv(t *testing.T, b *bridge, d time.Duration) ([]byte, error) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case l, ok := <-b.lines:
		if !ok {
			return nil, io.EOF
		}
		checkIPCLine(t, l)
		return l, nil
	case <-timer.C:
		return nil, errQuiet
	}
}

// checkIPCLine checks the envelope every outbound message has: a JSON
// object with "type" first and "ipc_version": 2.
func checkIPCLine(t *testing.T, l []byte) {
	t.Helper()
	if !gjson.ValidBytes(l) {
		t.Errorf("ccbridge wrote a line that is not JSON: %.300s", l)
		return
	}
	if !bytes.HasPrefix(l, []byte(`{"type":"`)) {
		t.Errorf("ipc line does not start with \"type\": %.300s", l)
	}
	if v := gjson.GetBytes(l, "ipc_version"); v.Type != gjson.Number || v.Int() != 2 {
		t.Errorf("ipc line without ipc_version 2: %.300s", l)
	}
}

// ipcUntil reads lines until pred holds for one, returning every line read;
// it fails the test when none does within ipcWait of the previous line.
func ipcUntil(t *testing.T, b *bridge, what string, pred func([]byte) bool) [][]byte {
	t.Helper()
	var seen [][]byte
	for {
		l, err := recv(t, b, ipcWait)
		if err != nil {
			t.Fatalf("waiting for %s: %v after %d lines; the last ones:\n%s", what, err, len(seen), lastLines(seen, 8))
		}
		seen = append(seen, l)
		if pred(l) {
			return seen
		}
	}
}

// quiet reads whatever ccbridge writes within d.
func quiet(t *testing.T, b *bridge, d time.Duration) [][]byte {
	t.Helper()
	var seen [][]byte
	deadline := time.Now().Add(d)
	for {
		l, err := recv(t, b, time.Until(deadline))
		if err != nil {
			return seen
		}
		seen = append(seen, l)
	}
}

func typeOf(l []byte) string { return gjson.GetBytes(l, "type").Str }

func get(l []byte, path string) gjson.Result { return gjson.GetBytes(l, path) }

// isTerminal reports whether l ends a turn: turn_complete, turn_cancelled,
// or an error with recoverable false.
func isTerminal(l []byte) bool {
	switch typeOf(l) {
	case "turn_complete", "turn_cancelled":
		return true
	case "error":
		r := get(l, "recoverable")
		return r.Type == gjson.False
	}
	return false
}

func ofType(lines [][]byte, typ string) [][]byte {
	var out [][]byte
	for _, l := range lines {
		if typeOf(l) == typ {
			out = append(out, l)
		}
	}
	return out
}

func first(lines [][]byte, pred func([]byte) bool) []byte {
	for _, l := range lines {
		if pred(l) {
			return l
		}
	}
	return nil
}

func indexOf(lines [][]byte, pred func([]byte) bool) int {
	for i, l := range lines {
		if pred(l) {
			return i
		}
	}
	return -1
}

// userMessage is a user_message line; each attachment is a JSON object.
func userMessage(text string, attachments ...string) string {
	s := `{"type":"user_message","text":` + jsonStr(text)
	if len(attachments) > 0 {
		s += `,"attachments":[` + strings.Join(attachments, ",") + `]`
	}
	return s + "}"
}

func imageAttachment(mediaType, content string) string {
	return `{"kind":"image","media_type":` + jsonStr(mediaType) + `,"content":` + jsonStr(content) + `}`
}

func allowAnswer(requestID string) string {
	return `{"type":"tool_approval","request_id":` + jsonStr(requestID) + `,"decision":"allow"}`
}

func denyAnswer(requestID, message string) string {
	return `{"type":"tool_approval","request_id":` + jsonStr(requestID) + `,"decision":"deny","message":` + jsonStr(message) + `}`
}

// allowAll answers every permission request with allow.
func allowAll(req []byte) string { return allowAnswer(get(req, "request_id").Str) }

// turn sends a user_message (msg is its text, or a whole line starting with
// "{") and reads its lines up to the terminal message. A permission request
// fails the test; use turnAnswering for those.
func turn(t *testing.T, b *bridge, msg string) [][]byte {
	t.Helper()
	return turnAnswering(t, b, msg, nil)
}

// turnAnswering is turn with answer called for every
// control_request_forward; the line it returns (if any) is sent.
func turnAnswering(t *testing.T, b *bridge, msg string, answer func(req []byte) string) [][]byte {
	t.Helper()
	if !strings.HasPrefix(msg, "{") {
		msg = userMessage(msg)
	}
	b.send(msg)
	return finishTurn(t, b, answer)
}

// finishTurn reads up to the turn's terminal message and checks that
// exactly one terminal message ends the turn: none follows within ipcQuiet.
// A turn_complete, and a turn_cancelled from the CLI's result, must come
// right after a cost_update.
func finishTurn(t *testing.T, b *bridge, answer func(req []byte) string) [][]byte {
	t.Helper()
	lines := ipcUntil(t, b, "the end of the turn", func(l []byte) bool {
		if typeOf(l) == "control_request_forward" {
			if answer == nil {
				t.Fatalf("unexpected permission request: %.400s", l)
			}
			if reply := answer(l); reply != "" {
				b.send(reply)
			}
		}
		return isTerminal(l)
	})
	checkTurnEnd(t, b, lines)
	return lines
}

func checkTurnEnd(t *testing.T, b *bridge, lines [][]byte) {
	t.Helper()
	last := lines[len(lines)-1]
	fromResult := typeOf(last) == "turn_complete" ||
		(typeOf(last) == "turn_cancelled" && strings.HasPrefix(get(last, "reason").Str, "aborted_"))
	if fromResult && (len(lines) < 2 || typeOf(lines[len(lines)-2]) != "cost_update") {
		t.Errorf("%s is not preceded by a cost_update; the last lines:\n%s", typeOf(last), lastLines(lines, 4))
	}
	for _, l := range quiet(t, b, ipcQuiet) {
		if isTerminal(l) {
			t.Errorf("a second terminal message after %s: %.400s", typeOf(last), l)
		} else {
			t.Logf("line after the terminal message: %.300s", l)
		}
	}
}

// expectSessionInit reads the first line, which must be session_init with
// a UUID, without any input from the UI.
func expectSessionInit(t *testing.T, b *bridge) string {
	t.Helper()
	l, err := recv(t, b, ipcWait)
	if err != nil {
		t.Fatalf("no session_init before any input: %v", err)
	}
	if typeOf(l) != "session_init" {
		t.Fatalf("first line is not session_init: %.400s", l)
	}
	id := get(l, "session_id").Str
	if _, err := uuid.Parse(id); err != nil {
		t.Fatalf("session_init session_id %q is not a UUID: %v", id, err)
	}
	return id
}

// expectError reads the next line, which must be one recoverable error of
// code (and field, when not ""), with nothing after it within ipcQuiet.
func expectError(t *testing.T, b *bridge, code, field string) []byte {
	t.Helper()
	l, err := recv(t, b, ipcWait)
	if err != nil {
		t.Fatalf("no error line for %s: %v", code, err)
	}
	if typeOf(l) != "error" || get(l, "code").Str != code {
		t.Fatalf("want an error with code %s, got %.400s", code, l)
	}
	if r := get(l, "recoverable"); r.Type != gjson.True {
		t.Errorf("error %s is not recoverable: %.400s", code, l)
	}
	if field != "" && get(l, "field").Str != field {
		t.Errorf("error %s names field %q, want %q: %.400s", code, get(l, "field").Str, field, l)
	}
	if get(l, "message").Str == "" {
		t.Errorf("error %s has no message: %.400s", code, l)
	}
	for _, x := range quiet(t, b, 200*time.Millisecond) {
		t.Errorf("another line after the %s error: %.400s", code, x)
	}
	return l
}

// fileIn reports whether path is the file name in dir (symlinks resolved).
func fileIn(path, dir, name string) bool {
	d, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	p, err := filepath.EvalSymlinks(filepath.Dir(path))
	return err == nil && p == d && filepath.Base(path) == name
}

func complete(t *testing.T, lines [][]byte) []byte {
	t.Helper()
	last := lines[len(lines)-1]
	if typeOf(last) != "turn_complete" || get(last, "subtype").Str != "success" || get(last, "is_error").Bool() {
		t.Fatalf("the turn did not complete successfully: %.600s\n%s", last, lastLines(lines, 8))
	}
	return last
}

// noSessionChange checks that lines announce no other session than id:
// no session_init with another id, and system_metadata of id only.
func noSessionChange(t *testing.T, lines [][]byte, id string) {
	t.Helper()
	for _, l := range lines {
		switch typeOf(l) {
		case "session_init", "system_metadata":
			if got := get(l, "session_id").Str; got != id {
				t.Errorf("%s with session %s, want %s", typeOf(l), got, id)
			}
		}
	}
}

// sessionInits returns the session ids announced in lines.
func sessionInits(lines [][]byte) []string {
	var ids []string
	for _, l := range ofType(lines, "session_init") {
		ids = append(ids, get(l, "session_id").Str)
	}
	return ids
}

// TestIPCTextWithThinking: session_init before any input; a plain prompt
// streams thinking_text and assistant_text partials then completes, then

// ---- rpc (docs/protocol/rpc.md)

const rpcWait = 30 * time.Second // the longest wait for one expected line

// rpcConn is a UI speaking the rpc dialect to one ccbridge.
type rpcConn struct {
	t    *testing.T
	b    *bridge
	n    int
	seen [][]byte // every line read, for the invariant checks
}

// startRPC runs `ccbridge --ui rpc args…`.
func startRPC(t *testing.T, args []string, env ...string) *rpcConn {
	t.Helper()
	return &rpcConn{t: t, b: startBridge(t, append([]string{"--ui", "rpc"}, args...), env...)}
}

func (c *rpcConn) send(line string) {
	c.t.Helper()
	c.b.send(line)
}

// call sends a request with a fresh id and returns the id's raw JSON.
func (c *rpcConn) call(method, params string) string {
	c.t.Helper()
	c.n++
	id := `"t` + strconv.Itoa(c.n) + `"`
	c.callID(id, method, params)
	return id
}

func (c *rpcConn) callID(id, method, params string) {
	c.t.Helper()
	line := `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `"`
	if params != "" {
		line += `,"params":` + params
	}
	c.send(line + "}")
}

var errNoLine = errors.New("no line")

// read returns the next line within d: errNoLine when none came, io.EOF
// when the output ended. Every line must be a JSON-RPC 2.0 object.
func (c *rpcConn) read(d time.Duration) ([]byte, error) {
	c.t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case l, ok := <-c.b.lines:
		if !ok {
			return nil, io.EOF
		}
		if !gjson.ValidBytes(l) || gjson.GetBytes(l, "jsonrpc").Str != "2.0" {
			c.t.Errorf("ccbridge wrote a line that is not JSON-RPC 2.0: %.300s", l)
		}
		c.seen = append(c.seen, l)
		return l, nil
	case <-timer.C:
		return nil, errNoLine
	}
}

// until reads lines until pred holds for one and returns every line read.
func (c *rpcConn) until(what string, pred func([]byte) bool) [][]byte {
	c.t.Helper()
	var got [][]byte
	for {
		l, err := c.read(rpcWait)
		if err != nil {
			c.t.Fatalf("waiting for %s: %v after %d lines; the last ones:\n%s", what, err, len(got), lastLines(got, 8))
		}
		got = append(got, l)
		if pred(l) {
			return got
		}
	}
}

// quiet reads whatever comes within d.
func (c *rpcConn) quiet(d time.Duration) [][]byte {
	c.t.Helper()
	var got [][]byte
	deadline := time.Now().Add(d)
	for {
		l, err := c.read(time.Until(deadline))
		if err != nil {
			return got
		}
		got = append(got, l)
	}
}

func isReply(id string) func([]byte) bool {
	return func(l []byte) bool {
		return gjson.GetBytes(l, "id").Raw == id && !gjson.GetBytes(l, "method").Exists()
	}
}

func isMethod(method string) func([]byte) bool {
	return func(l []byte) bool { return gjson.GetBytes(l, "method").Str == method }
}

func isRunStatus(runID, status string) func([]byte) bool {
	return func(l []byte) bool {
		return gjson.GetBytes(l, "method").Str == rpc.MethodRunStatus &&
			gjson.GetBytes(l, "params.run_id").Str == runID && gjson.GetBytes(l, "params.status").Str == status
	}
}

func isTerminalStatus(runID string) func([]byte) bool {
	return func(l []byte) bool {
		return gjson.GetBytes(l, "method").Str == rpc.MethodRunStatus &&
			gjson.GetBytes(l, "params.run_id").Str == runID && rpc.Terminal(gjson.GetBytes(l, "params.status").Str)
	}
}

func isEvent(runID, typ string) func([]byte) bool {
	return func(l []byte) bool {
		return gjson.GetBytes(l, "method").Str == rpc.MethodAgentEvent &&
			gjson.GetBytes(l, "params.run_id").Str == runID && gjson.GetBytes(l, "params.event.type").Str == typ
	}
}

// result waits for the success response to id.
func (c *rpcConn) result(id string) gjson.Result {
	c.t.Helper()
	lines := c.until("the response to "+id, isReply(id))
	l := lines[len(lines)-1]
	if e := gjson.GetBytes(l, "error"); e.Exists() {
		c.t.Fatalf("request %s failed: %s", id, l)
	}
	return gjson.GetBytes(l, "result")
}

// rpcError waits for the error response to id and checks its code.
func (c *rpcConn) rpcError(id string, code int) gjson.Result {
	c.t.Helper()
	lines := c.until("the error response to "+id, isReply(id))
	l := lines[len(lines)-1]
	if got := gjson.GetBytes(l, "error.code"); !got.Exists() || int(got.Int()) != code {
		c.t.Fatalf("response to %s: want error %d, got %s", id, code, l)
	}
	if gjson.GetBytes(l, "error.message").Str == "" {
		c.t.Errorf("error without a message: %s", l)
	}
	return gjson.GetBytes(l, "error")
}

func (c *rpcConn) initialize(caps string) gjson.Result {
	c.t.Helper()
	params := `{"protocol_version":"0","client":{"name":"e2e","version":"1.0"}`
	if caps != "" {
		params += `,"ui_capabilities":` + caps
	}
	return c.result(c.call("initialize", params+"}"))
}

// start sends run.start with text and returns the run id.
func (c *rpcConn) start(text string) string {
	c.t.Helper()
	return c.start0(`{"input":{"type":"text","text":` + jsonStr(text) + `}}`)
}

// start0 sends run.start with params and returns the run id.
func (c *rpcConn) start0(params string) string {
	c.t.Helper()
	res := c.result(c.call("run.start", params))
	id := res.Get("run_id").Str
	if id == "" {
		c.t.Fatalf("run.start gave no run_id: %s", res.Raw)
	}
	return id
}

// finishRun reads to the run's terminal run.status and returns the lines
// and the status.
func (c *rpcConn) finishRun(runID string) ([][]byte, string) {
	c.t.Helper()
	lines := c.until("the end of "+runID, isTerminalStatus(runID))
	return lines, gjson.GetBytes(lines[len(lines)-1], "params.status").Str
}

// runText starts a run and reads it to the end.
func (c *rpcConn) runText(text string) (string, [][]byte, string) {
	c.t.Helper()
	id := c.start(text)
	lines, status := c.finishRun(id)
	return id, lines, status
}

// close ends the UI's input, reads the rest and checks the dialect's
// rules on everything this connection saw.
func (c *rpcConn) close() {
	c.t.Helper()
	c.b.stdin.Close()
	for {
		if _, err := c.read(rpcWait); err != nil {
			if !errors.Is(err, io.EOF) {
				c.t.Errorf("ccbridge's output did not end after its input did: %v", err)
			}
			break
		}
	}
	c.b.wait()
	c.checkRules()
}

// checkRules: per run, seq counts from 0 without gaps; exactly one
// terminal run.status; no agent.event after it; every request of the UI
// answered at most once (retries aside).
func (c *rpcConn) checkRules() {
	c.t.Helper()
	seq := map[string]int64{}
	terminal := map[string]string{}
	for _, l := range c.seen {
		run := gjson.GetBytes(l, "params.run_id").Str
		switch gjson.GetBytes(l, "method").Str {
		case rpc.MethodAgentEvent:
			if strings.Contains(run, ":") {
				continue // session.history replays
			}
			if st, done := terminal[run]; done {
				c.t.Errorf("agent.event for %s after its run.status %s: %.300s", run, st, l)
			}
			if got := gjson.GetBytes(l, "params.seq").Int(); got != seq[run] {
				c.t.Errorf("%s: seq %d, want %d", run, got, seq[run])
			}
			seq[run]++
		case rpc.MethodRunStatus:
			st := gjson.GetBytes(l, "params.status").Str
			if prev, done := terminal[run]; done {
				c.t.Errorf("run.status %s for %s after its terminal %s", st, run, prev)
			}
			if rpc.Terminal(st) {
				terminal[run] = st
			}
		}
	}
	for run := range seq {
		if _, ok := terminal[run]; !ok {
			c.t.Errorf("%s never ended", run)
		}
	}
}

func eventTypes(lines [][]byte, runID string) []string {
	var types []string
	for _, l := range lines {
		if isMethod(rpc.MethodAgentEvent)(l) && gjson.GetBytes(l, "params.run_id").Str == runID {
			types = append(types, gjson.GetBytes(l, "params.event.type").Str)
		}
	}
	return types
}

func findLine(lines [][]byte, pred func([]byte) bool) []byte {
	for _, l := range lines {
		if pred(l) {
			return l
		}
	}
	return nil
}

// TestRPCRunLifecycle: initialize, a run with its events, bad input of
// every kind, a busy runtime, run.cancel mid-stream (idempotent, retried,

// ---- acp: the ACP client library (@agentclientprotocol/sdk), through testdata/clients/acp_client.mjs

// acpSDKModule is the ACP client library's entry file, under
// .tools/node_modules.
const acpSDKModule = "@agentclientprotocol/sdk/dist/v1/stable/acp.js"

// acpRun is what one run of acp_client.mjs printed.
type acpRun struct {
	t       *testing.T
	events  []gjson.Result
	workdir string
	stderr  string
}

// acpClient runs one scenario of testdata/clients/acp_client.mjs, which
// starts `ccbridge --ui acp` itself.
func acpClient(t *testing.T, scenario string) *acpRun {
	t.Helper()
	return runACPScript(t, clientScript("acp_client.mjs"), t.TempDir(), t.TempDir(), 90*time.Second, "SCENARIO="+scenario)
}

// runACPScript runs a node script that drives `ccbridge --ui acp` with
// the ACP client library, in HOME home and working directory workdir,
// for at most timeout, and returns what it printed. It fails the test
// unless the script ran to its end, and on anything the library reported
// or a ccbridge that exited with an error.
func runACPScript(t *testing.T, script, home, workdir string, timeout time.Duration, env ...string) *acpRun {
	t.Helper()
	cli := realCLI(t)
	node, module := nodeModule(t, acpSDKModule, "the ACP client library")
	r := &acpRun{t: t, workdir: workdir}
	cmd := exec.Command(node, script)
	cmd.Env = append(os.Environ(), "HOME="+home, "CCBRIDGE_CLAUDE="+cli,
		"CCBRIDGE_LOG_LEVEL=debug", "ACP_SDK="+module, "CCBRIDGE_BIN="+ccbridgeBin, "WORKDIR="+workdir)
	cmd.Env = append(append(cmd.Env, env...), fakeAPI(t).Env()...)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	timer := time.AfterFunc(timeout, func() { cmd.Process.Kill() })
	out, err := cmd.Output()
	timer.Stop()
	r.stderr = stderr.String()
	for _, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		if len(l) > 0 {
			r.events = append(r.events, gjson.ParseBytes(l))
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("client events (tail):\n%s\nstderr (tail):\n%s", tail(string(out), 8000), tail(r.stderr, 6000))
		}
	})
	if err != nil || len(r.events) == 0 || r.events[len(r.events)-1].Get("event").Str != "done" {
		t.Fatalf("the ACP client did not finish (%v)", err)
	}
	for _, e := range r.events {
		if e.Get("event").Str == "sdk_error" {
			t.Errorf("the ACP client library reported: %s", e.Get("message").Str)
		}
		if e.Get("event").Str == "exit" && (e.Get("code").Int() != 0 || e.Get("signal").Type != gjson.Null) {
			t.Errorf("ccbridge (%s) exited with %s", e.Get("conn").Str, e.Raw)
		}
	}
	return r
}

// phase returns the events of one phase of a run (those after its
// {"event":"phase"} line, up to the next one), and the stderr written
// between its {"e2e_phase":...} line and the next, as a run of its own
// whose failures are t's.
func (r *acpRun) phase(t *testing.T, name string) *acpRun {
	t.Helper()
	isPhase := func(e gjson.Result) bool { return e.Get("event").Str == "phase" }
	start := r.index(func(e gjson.Result) bool { return isPhase(e) && e.Get("name").Str == name })
	if start < 0 {
		t.Fatalf("the run has no phase %s", name)
	}
	end := start + 1
	for end < len(r.events) && !isPhase(r.events[end]) {
		end++
	}
	_, stderr, ok := strings.Cut(r.stderr, `{"e2e_phase":`+jsonStr(name)+`}`)
	if !ok {
		t.Fatalf("the run's stderr has no phase %s", name)
	}
	stderr, _, _ = strings.Cut(stderr, `{"e2e_phase":`)
	return &acpRun{t: t, events: r.events[start+1 : end], workdir: r.workdir, stderr: stderr}
}

// file returns the phase's {"event":"file"} line: whether written.txt
// was there at the phase's end, and what it held.
func (r *acpRun) file() gjson.Result {
	r.t.Helper()
	fs := r.filter(func(e gjson.Result) bool { return e.Get("event").Str == "file" })
	if len(fs) != 1 {
		r.t.Fatalf("%d file events, want 1", len(fs))
	}
	return fs[0]
}

// filter returns the events for which pred holds.
func (r *acpRun) filter(pred func(e gjson.Result) bool) []gjson.Result {
	var es []gjson.Result
	for _, e := range r.events {
		if pred(e) {
			es = append(es, e)
		}
	}
	return es
}

// responses returns the responses to method, in order.
func (r *acpRun) responses(method string) []gjson.Result {
	return r.filter(func(e gjson.Result) bool {
		return e.Get("event").Str == "response" && e.Get("method").Str == method
	})
}

// response returns the i-th response to method.
func (r *acpRun) response(method string, i int) gjson.Result {
	r.t.Helper()
	rs := r.responses(method)
	if i >= len(rs) {
		r.t.Fatalf("no response %d to %s (%d responses)", i, method, len(rs))
	}
	return rs[i]
}

// updates returns the session/update payloads of one kind.
func (r *acpRun) updates(kind string) []gjson.Result {
	return r.filter(func(e gjson.Result) bool {
		return e.Get("event").Str == "update" && e.Get("update.sessionUpdate").Str == kind
	})
}

// requests returns the agent → client requests of one method.
func (r *acpRun) requests(method string) []gjson.Result {
	return r.filter(func(e gjson.Result) bool {
		return e.Get("event").Str == "request" && e.Get("method").Str == method
	})
}

// index returns the position of the first event for which pred holds, or -1.
func (r *acpRun) index(pred func(e gjson.Result) bool) int {
	for i, e := range r.events {
		if pred(e) {
			return i
		}
	}
	return -1
}

func (r *acpRun) stopReason(i int) string {
	r.t.Helper()
	return r.response("session/prompt", i).Get("result.stopReason").Str
}

func chunkText(us []gjson.Result) string {
	var sb strings.Builder
	for _, u := range us {
		sb.WriteString(u.Get("update.content.text").Str)
	}
	return sb.String()
}

// isEnqueue reports a line of a session file that records a prompt the
// CLI has read into its queue.
func isEnqueue(line []byte) bool {
	return gjson.GetBytes(line, "type").Str == "queue-operation" && gjson.GetBytes(line, "operation").Str == "enqueue"
}

// waitDescendant waits until a process below pid runs a command line
// holding s.
func waitDescendant(t *testing.T, pid int, s string) {
	t.Helper()
	var found func(p int) bool
	found = func(p int) bool {
		for _, c := range children(p) {
			if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", c)); strings.Contains(string(cmdline), s) || found(c) {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(30 * time.Second); !found(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no process runs %q below ccbridge within 30 s", s)
		}
	}
}
