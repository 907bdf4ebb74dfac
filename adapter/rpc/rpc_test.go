package rpc

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/internal/adaptertest"
	"github.com/ccbridge/ccbridge/mapping/rpc"
	"github.com/ccbridge/ccbridge/session"
	"github.com/ccbridge/ccbridge/session/clifiles"
)

// startRPCFake runs an rpc connection against the fake "session" CLI,
// whose log (argv of each start, stdin lines) the second result reads.
func startRPCFake(t *testing.T) (*adaptertest.Host, func() string) {
	h, log, _ := startRPCFakeHome(t)
	return h, log
}

// startRPCFakeHome is startRPCFake that also returns a function writing a
// session file for the fake (which writes none), so that a respawn can
// resume it: entries are its lines, by default one user message.
func startRPCFakeHome(t *testing.T) (*adaptertest.Host, func() string, func(sid string, entries ...string)) {
	t.Helper()
	logFile := filepath.Join(t.TempDir(), "log")
	home := t.TempDir()
	save := func(sid string, entries ...string) {
		wd, _ := os.Getwd()
		wd, _ = filepath.EvalSymlinks(wd)
		dir := filepath.Join(home, ".claude", "projects", clifiles.ProjectDirName(wd))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if len(entries) == 0 {
			entries = []string{`{"type":"user","message":{"role":"user","content":"HANG"},"sessionId":"` + sid + `"}`}
		}
		data := strings.Join(entries, "\n") + "\n"
		if err := os.WriteFile(filepath.Join(dir, sid+".jsonl"), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := &RPC{Settings: adapter.Settings{
		Logger:           adaptertest.Logger(t),
		Child:            adaptertest.Config(t, "session", nil, "FAKE_LOG="+logFile, "HOME="+home),
		Options:          session.Options{},
		InterruptTimeout: 300 * time.Millisecond,
		ControlTimeout:   2 * time.Second,
	}}
	h := adaptertest.StartRunner(t, s.Run)
	return h, func() string { b, _ := os.ReadFile(logFile); return string(b) }, save
}

func reply(id string) func([]byte) bool {
	return func(l []byte) bool { return gjson.GetBytes(l, "id").Raw == id && !gjson.GetBytes(l, "method").Exists() }
}

func status(run, st string) func([]byte) bool {
	return func(l []byte) bool {
		return gjson.GetBytes(l, "method").Str == rpc.MethodRunStatus && gjson.GetBytes(l, "params.run_id").Str == run &&
			gjson.GetBytes(l, "params.status").Str == st
	}
}

func runStart(h *adaptertest.Host, id, text string) string {
	h.T.Helper()
	h.Send(`{"jsonrpc":"2.0","id":"` + id + `","method":"run.start","params":{"input":{"type":"text","text":"` + text + `"}}}`)
	r := h.Until(reply(`"` + id + `"`))
	run := gjson.GetBytes(r, "result.run_id").Str
	if run == "" {
		h.T.Fatalf("run.start: %s", r)
	}
	return run
}

func TestRPCCancelNotAcknowledgedRestartsAndResumes(t *testing.T) {
	h, log, save := startRPCFakeHome(t)
	h.Send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol_version":"0","client":{"name":"t","version":"1"}}}`)
	sid := gjson.GetBytes(h.Until(reply("1")), "result.runtime.session_id").Str
	save(sid)
	run := runStart(h, "a", "HANG")
	h.Until(func(l []byte) bool { return gjson.GetBytes(l, "params.event.type").Str == "text.delta" })
	start := time.Now()
	h.Send(`{"jsonrpc":"2.0","id":"c","method":"run.cancel","params":{"run_id":"` + run + `"}}`)
	if r := h.Until(reply(`"c"`)); !gjson.GetBytes(r, "result.ok").Bool() {
		t.Fatalf("run.cancel: %s", r)
	}
	// The held run waits for the restart, then runs in a CLI that resumes.
	run2 := runStart(h, "b", "again")
	h.Until(status(run2, rpc.StatusCompleted))
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("restarted after %v, before the 300 ms deadline", d)
	}
	if l := log(); !strings.Contains(l, "--resume="+sid) || strings.Count(l, "argv ") != 2 {
		t.Errorf("the new CLI does not resume %s:\n%s", sid, l)
	}
	h.In.Close()
	for _, l := range h.Rest() {
		if gjson.GetBytes(l, "params.run_id").Str == run && gjson.GetBytes(l, "method").Str == rpc.MethodAgentEvent {
			t.Errorf("an event of the cancelled run: %s", l)
		}
	}
	h.Wait()
}

func TestRPCChildDeathReportedAndResumed(t *testing.T) {
	h, log, save := startRPCFakeHome(t)
	h.Send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol_version":"0","client":{"name":"t","version":"1"}}}`)
	sid := gjson.GetBytes(h.Until(reply("1")), "result.runtime.session_id").Str
	save(sid)
	run := runStart(h, "a", "DIE")
	st := h.Until(status(run, rpc.StatusError))
	if !strings.Contains(gjson.GetBytes(st, "params.message").Str, "fell over") {
		t.Errorf("no last words in %s", st)
	}
	ex := h.Until(func(l []byte) bool { return gjson.GetBytes(l, "method").Str == rpc.MethodChildExited })
	if gjson.GetBytes(ex, "params.exit_code").Int() != 3 {
		t.Errorf("runtime.child_exited: %s", ex)
	}
	run = runStart(h, "b", "fine")
	h.Until(status(run, rpc.StatusCompleted))
	if !strings.Contains(log(), "--resume="+sid) {
		t.Errorf("not resumed:\n%s", log())
	}
}

// A CLI that died before saving anything is not resumed (the CLI would
// refuse the id): a new CLI starts the session afresh under the same id.
func TestRPCChildDeathBeforeSavingKeepsTheID(t *testing.T) {
	h, log := startRPCFake(t)
	h.Send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol_version":"0","client":{"name":"t","version":"1"}}}`)
	sid := gjson.GetBytes(h.Until(reply("1")), "result.runtime.session_id").Str
	run := runStart(h, "a", "DIE")
	h.Until(status(run, rpc.StatusError))
	run = runStart(h, "b", "fine")
	h.Until(status(run, rpc.StatusCompleted))
	if l := log(); strings.Contains(l, "--resume=") || strings.Count(l, "--session-id="+sid) != 2 {
		t.Errorf("the second CLI should start session %s afresh:\n%s", sid, l)
	}
}

// run.start into a session the CLI cannot resume is refused before any
// child is stopped or started: -32004 without a file, -32005 for a file
// with no user or assistant message.
func TestRPCResumeRefusedBeforeAnyChild(t *testing.T) {
	h, log, save := startRPCFakeHome(t)
	run := runStart(h, "a", "fine")
	h.Until(status(run, rpc.StatusCompleted))
	empty, missing := uuid.NewString(), uuid.NewString()
	save(empty, `{"type":"summary","summary":"no conversation","leafUuid":"x"}`)
	for id, c := range map[string]struct {
		sid  string
		code int64
	}{"r1": {empty, rpc.CodeSessionLoadFailed}, "r2": {missing, rpc.CodeSessionNotFound}} {
		h.Send(`{"jsonrpc":"2.0","id":"` + id + `","method":"run.start","params":{"input":{"type":"text","text":"x"},"session_id":"` + c.sid + `"}}`)
		if r := h.Until(reply(`"` + id + `"`)); gjson.GetBytes(r, "error.code").Int() != c.code {
			t.Errorf("run.start into session %s: %s", c.sid, r)
		}
	}
	run = runStart(h, "b", "fine")
	h.Until(status(run, rpc.StatusCompleted))
	if n := strings.Count(log(), "argv "); n != 1 {
		t.Errorf("%d CLIs started, want the first one only:\n%s", n, log())
	}
}

// A CLI line over CLIMaxLine is reported with runtime.error and the
// session goes on. Here the dropped lines are an assistant frame and the
// turn's result: the CLI, asked, says it is idle, so the run ends with
// error, and the next run works in the same CLI.
func TestRPCCLILineTooLong(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "log")
	s := &RPC{Settings: adapter.Settings{
		Logger:     adaptertest.Logger(t),
		Child:      adaptertest.Config(t, "session", nil, "FAKE_LOG="+logFile, "HOME="+t.TempDir()),
		CLIMaxLine: 100000,
	}}
	h := adaptertest.StartRunner(t, s.Run)
	run := runStart(h, "a", "BIG")
	var dropped [][]byte
	st := h.Until(func(l []byte) bool {
		if gjson.GetBytes(l, "method").Str == "runtime.error" {
			dropped = append(dropped, l)
		}
		return status(run, rpc.StatusError)(l)
	})
	if !strings.Contains(gjson.GetBytes(st, "params.message").Str, "--max-cli-line") {
		t.Errorf("the run's end: %s", st)
	}
	if len(dropped) != 2 {
		t.Fatalf("%d runtime.error notifications, want 2 (assistant and result)", len(dropped))
	}
	for _, l := range dropped {
		p := gjson.GetBytes(l, "params")
		if p.Get("run_id").Str != run || p.Get("error.code").Int() != rpc.CodeRuntimeInternal ||
			p.Get("error.data.reason").Str != "cli_line_too_long" || p.Get("error.data.limit").Int() != 100000 || p.Get("error.data.size").Int() < 300<<10 {
			t.Errorf("runtime.error: %s", l)
		}
	}
	run = runStart(h, "b", "fine")
	h.Until(status(run, rpc.StatusCompleted))
	b, _ := os.ReadFile(logFile)
	if n := strings.Count(string(b), "argv "); n != 1 {
		t.Errorf("%d CLIs started, want one", n)
	}
}

func TestRPCSIGINTCancelsTheRun(t *testing.T) {
	h, _ := startRPCFake(t)
	run := runStart(h, "a", "HANG")
	h.Until(func(l []byte) bool { return gjson.GetBytes(l, "params.event.type").Str == "text.delta" })
	h.Sigs <- syscall.SIGINT
	if st := h.Until(status(run, rpc.StatusCancelled)); !strings.Contains(gjson.GetBytes(st, "params.message").Str, "SIGINT") {
		t.Errorf("cancelled: %s", st)
	}
}

func TestRPCControlTimeout(t *testing.T) {
	h, _ := startRPCFake(t)
	run := runStart(h, "a", "HANG") // the fake ignores everything from now on
	h.Until(func(l []byte) bool { return gjson.GetBytes(l, "params.event.type").Str == "text.delta" })
	_ = run
	h.Send(`{"jsonrpc":"2.0","id":"m","method":"model.list"}`)
	r := h.Until(reply(`"m"`))
	if gjson.GetBytes(r, "error.code").Int() != rpc.CodeRuntimeInternal || !strings.Contains(gjson.GetBytes(r, "error.message").Str, "did not answer") {
		t.Errorf("model.list to a CLI that does not answer: %s", r)
	}
}

func TestRPCDedupe(t *testing.T) {
	d := newRPCDedupe(time.Minute)
	now := time.Now()
	if _, st := d.begin(`"1"`, "run.cancel", `{"run_id":"r"}`, true, now); st != dedupeNew {
		t.Fatal("first")
	}
	if _, st := d.begin(`"1"`, "run.cancel", `{"run_id":"r"}`, true, now); st != dedupeInFlight {
		t.Fatal("in flight")
	}
	d.answer(`"1"`, []byte("ANSWER"))
	if a, st := d.begin(`"1"`, "run.cancel", `{"run_id":"r"}`, true, now); st != dedupeReplay || string(a) != "ANSWER" {
		t.Fatal("replay")
	}
	if _, st := d.begin(`"1"`, "run.cancel", `{"run_id":"x"}`, true, now); st != dedupeConflict {
		t.Fatal("conflict")
	}
	if _, st := d.begin(`"2"`, "model.list", ``, false, now); st != dedupeNew {
		t.Fatal("query")
	}
	d.answer(`"2"`, []byte("A"))
	if _, st := d.begin(`"2"`, "model.list", ``, false, now); st != dedupeNew {
		t.Fatal("a retried query runs again")
	}
	if _, st := d.begin(`"1"`, "run.cancel", `{"run_id":"r"}`, true, now.Add(2*time.Minute)); st != dedupeNew {
		t.Fatal("expired")
	}
	for i := 0; i < dedupeMaxEntries+5; i++ {
		d.begin(`"x`+string(rune('a'+i%26))+strings.Repeat("y", i/26)+`"`, "m", "", true, now.Add(2*time.Minute))
	}
	if len(d.entries) > dedupeMaxEntries || len(d.order) > dedupeMaxEntries {
		t.Errorf("%d entries kept", len(d.entries))
	}
}

func TestHeadTailBuf(t *testing.T) {
	var b headTailBuf
	b.Write([]byte("short"))
	if s, cut := b.text(); s != "short" || cut {
		t.Errorf("short: %q %v", s, cut)
	}
	var big headTailBuf
	chunk := strings.Repeat("é", 1000) // 2000 bytes: cuts fall inside characters
	for i := 0; i < 200; i++ {
		big.Write([]byte(chunk))
	}
	big.Write([]byte("END"))
	s, cut := big.text()
	if !cut || !strings.HasSuffix(s, "END") || !strings.HasPrefix(s, "é") || len(s) > 2*shellKeep+64 || !strings.Contains(s, "bytes omitted]") {
		t.Errorf("big: cut %v, %d bytes, ends %q", cut, len(s), s[len(s)-8:])
	}
	if strings.ContainsRune(s, '\ufffd') {
		t.Error("a character was cut in half")
	}
}

func TestRunShellKillsTheGroup(t *testing.T) {
	dir := t.TempDir()
	// The command leaves a background child behind that would write a file.
	res, _, err := runShell(context.Background(), []string{"/bin/sh", "-c", "(sleep 1; touch late) & echo started"}, dir, 5*time.Second, "", nil)
	if err != nil || res.ExitCode != 0 || res.Stdout != "started\n" {
		t.Fatalf("runShell: %+v %v", res, err)
	}
	time.Sleep(1500 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(dir, "late")); err == nil {
		t.Error("a process of the command outlived it")
	}
	res, _, err = runShell(context.Background(), []string{"/bin/sh", "-c", "trap '' TERM; sleep 10"}, dir, 100*time.Millisecond, "", nil)
	if err != nil || !res.TimedOut || res.Signal != "SIGKILL" {
		t.Errorf("a command that ignores SIGTERM: %+v %v", res, err)
	}
}

func TestWithin(t *testing.T) {
	for _, c := range []struct {
		root, path string
		ok         bool
	}{{"/a", "/a", true}, {"/a", "/a/b", true}, {"/a", "/ab", false}, {"/a", "/", false}, {"/a", "/a/../b", false}, {"/a", "/a/..b", true}} {
		if within(c.root, filepath.Clean(c.path)) != c.ok {
			t.Errorf("within(%s, %s) != %v", c.root, c.path, c.ok)
		}
	}
}

func TestUserShell(t *testing.T) {
	if userShell("") != "/bin/sh" || userShell("bash") != "/bin/sh" || userShell("/nonexistent/zsh") != "/bin/sh" {
		t.Error("fallback")
	}
	if sh, err := os.Executable(); err == nil && userShell(sh) != sh {
		t.Errorf("an executable $SHELL is used")
	}
}

// TestRPCCLIResultTooLong: a result line over CLIMaxLine whose head shows
// it is a result (the real CLI's key order, "type" after the text) ends
// the run with error at once, without asking the CLI for its state.
func TestRPCCLIResultTooLong(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "log")
	s := &RPC{Settings: adapter.Settings{
		Logger:     adaptertest.Logger(t),
		Child:      adaptertest.Config(t, "session", nil, "FAKE_LOG="+logFile, "HOME="+t.TempDir()),
		CLIMaxLine: 100000,
	}}
	h := adaptertest.StartRunner(t, s.Run)
	run := runStart(h, "a", "HUGE")
	st := h.Until(status(run, rpc.StatusError))
	if msg := gjson.GetBytes(st, "params.message").Str; !strings.Contains(msg, "result line of") || !strings.Contains(msg, "--max-cli-line") {
		t.Errorf("the run's end: %s", st)
	}
	run = runStart(h, "b", "fine")
	h.Until(status(run, rpc.StatusCompleted))
	b, _ := os.ReadFile(logFile)
	if n := strings.Count(string(b), `"subtype":"initialize"`); n != 1 {
		t.Errorf("%d initialize requests, want the first only (no probe):\n%s", n, b)
	}
}

// rpc: a run held while a cancelled turn drains ends at a shutdown (it
// stayed open, as no CLI would take its prompt).
func TestRPCShutdownEndsTheHeldRun(t *testing.T) {
	h, _ := startRPCFake(t)
	run := runStart(h, "a", "HANG")
	h.Until(func(l []byte) bool { return gjson.GetBytes(l, "params.event.type").Str == "text.delta" })
	h.Send(`{"jsonrpc":"2.0","id":"c","method":"run.cancel","params":{"run_id":"` + run + `"}}`)
	h.Until(reply(`"c"`))
	held := runStart(h, "b", "held")
	h.Sigs <- syscall.SIGTERM
	h.Until(status(held, rpc.StatusCancelled))
}
