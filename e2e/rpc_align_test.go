package e2e

// End-to-end tests of the behaviours every dialect shares, in the rpc
// dialect (docs/protocol/rpc.md), against the real CLI: a CLI line over
// --max-cli-line, a resume refused before any child is touched, a cancel
// answered at once while a large session file is read, and session.list
// for a working directory of more than 200 characters. They use the
// helpers of e2e_test.go and e2e_rpc_test.go and nothing else.

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/mapping/rpc"
	"github.com/ccbridge/ccbridge/session/clifiles"
)

// alignProjectDir is where the CLI started by c (HOME home, --cwd dir)
// keeps its session files; it is created if missing.
func alignProjectDir(t *testing.T, home, dir string) string {
	t.Helper()
	p := clifiles.ProjectDir(filepath.Join(home, ".claude"), mustReal(t, dir))
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// alignStarts counts the CLIs ccbridge started, from its log (the
// supervisor's line, which names the child's generation).
func alignStarts(c *rpcConn) int {
	n := 0
	for _, l := range strings.Split(c.b.stderr.String(), "\n") {
		if gjson.Get(l, "msg").Str == "claude started" && gjson.Get(l, "gen").Exists() {
			n++
		}
	}
	return n
}

// TestRPCAlignCLILineTooLong: with --max-cli-line 100000, BIGTEXT 300000
// makes the CLI write an assistant line and a result line over the limit.
// Each is reported with runtime.error on the run; the CLI, asked, is idle,
// so the run ends with error; the text still reached the UI as deltas, and
// the next run works in the same CLI.
func TestRPCAlignCLILineTooLong(t *testing.T) {
	t.Parallel()
	c := startRPC(t, []string{"--max-cli-line", "100000"})
	c.initialize("")
	pid := c.b.childPID()

	run := c.start("BIGTEXT 300000")
	lines, status := c.finishRun(run)
	var dropped []gjson.Result
	deltas := 0
	for _, l := range lines {
		switch {
		case isMethod("runtime.error")(l):
			dropped = append(dropped, gjson.GetBytes(l, "params"))
		case isEvent(run, rpc.EventTextDelta)(l):
			deltas += len(gjson.GetBytes(l, "params.event.content").Str)
		}
	}
	if len(dropped) == 0 {
		t.Fatalf("no runtime.error for the lines over the limit; the run ended %s", lines[len(lines)-1])
	}
	for _, p := range dropped {
		if p.Get("run_id").Str != run || p.Get("error.code").Int() != rpc.CodeRuntimeInternal ||
			p.Get("error.data.reason").Str != "cli_line_too_long" || p.Get("error.data.limit").Int() != 100000 ||
			p.Get("error.data.size").Int() < 300000 || !strings.Contains(p.Get("error.message").Str, "--max-cli-line") {
			t.Errorf("runtime.error: %s", p.Raw)
		}
	}
	if status != rpc.StatusError || !strings.Contains(gjson.GetBytes(lines[len(lines)-1], "params.message").Str, "--max-cli-line") {
		t.Errorf("the run ended %s", lines[len(lines)-1])
	}
	if deltas != 300000 {
		t.Errorf("%d bytes of text.delta, want 300000", deltas)
	}

	if _, _, status := c.runText("hello after the long line"); status != rpc.StatusCompleted {
		t.Errorf("the next run: %s", status)
	}
	if c.b.childPID() != pid || alignStarts(c) != 1 {
		t.Errorf("the CLI was replaced (%d started)", alignStarts(c))
	}
	c.close()
}

// TestRPCAlignResumeRefusedBeforeAnyChild: run.start into a session whose
// file holds only a line that is no message, or that has no file, is
// refused with -32005 / -32004 before any CLI is stopped or started; the
// connection goes on in the CLI it had.
func TestRPCAlignResumeRefusedBeforeAnyChild(t *testing.T) {
	t.Parallel()
	home, dir := t.TempDir(), t.TempDir()
	c := startRPC(t, []string{"--cwd", dir}, "HOME="+home)
	c.initialize("")
	if _, _, status := c.runText("hello first"); status != rpc.StatusCompleted {
		t.Fatalf("first run: %s", status)
	}
	pid := c.b.childPID()

	empty := uuid.NewString()
	file := filepath.Join(alignProjectDir(t, home, dir), empty+".jsonl")
	entry := `{"type":"summary","summary":"a summary and no conversation","leafUuid":"` + uuid.NewString() + `"}` + "\n"
	if err := os.WriteFile(file, []byte(entry), 0o644); err != nil {
		t.Fatal(err)
	}
	e := c.rpcError(c.call("run.start", `{"input":{"type":"text","text":"x"},"session_id":"`+empty+`"}`), rpc.CodeSessionLoadFailed)
	if !strings.Contains(e.Get("message").Str, "no user or assistant message") {
		t.Errorf("-32005: %s", e.Raw)
	}
	c.rpcError(c.call("run.start", `{"input":{"type":"text","text":"x"},"session_id":"`+uuid.NewString()+`"}`), rpc.CodeSessionNotFound)

	if err := syscall.Kill(pid, 0); err != nil || c.b.childPID() != pid || alignStarts(c) != 1 {
		t.Errorf("a CLI was stopped or started: pid %d (%v), %d started", pid, err, alignStarts(c))
	}
	if _, _, status := c.runText("hello again"); status != rpc.StatusCompleted {
		t.Errorf("the run after the refusals: %s", status)
	}
	if c.b.childPID() != pid || alignStarts(c) != 1 {
		t.Errorf("the CLI was replaced (%d started)", alignStarts(c))
	}
	c.close()
}

// TestRPCAlignCancelWhileReadingABigSession: session.history and then
// session.list read a session file of about 100 MB, off the loop. While
// each read runs, cheap requests (request.cancel of an id not in flight)
// and then the request.cancel of the read are answered at once: the
// median of the five answers within 50 ms (the median, so that one stall
// of a shared machine does not decide), and the read's cancel finds it
// still under way (ok:true). A loop busy with the file would answer none of
// them before the read's end, and the cancel would then find nothing.
//
// Not parallel: the other tests' CLIs would share the two cores with the
// measurement.
func TestRPCAlignCancelWhileReadingABigSession(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	c := startRPC(t, []string{"--cwd", dir}, "HOME="+home)
	c.initialize("")

	sid := uuid.NewString()
	path := filepath.Join(alignProjectDir(t, home, dir), sid+".jsonl")
	size := writeBigSession(t, path, sid, 100<<20)

	for _, method := range []string{rpc.MethodSessionHistory, rpc.MethodSessionList} {
		params := `{"session_id":"` + sid + `"}`
		if method == rpc.MethodSessionList {
			params = `{"limit":5}`
		}
		id := c.call(method, params)
		time.Sleep(100 * time.Millisecond) // the read is under way
		var took []time.Duration
		for range 4 {
			d, _ := alignTimedCall(c, rpc.MethodRequestCancel, `{"id":"not-in-flight"}`)
			took = append(took, d)
		}
		d, got := alignTimedCall(c, rpc.MethodRequestCancel, `{"id":`+id+`}`)
		took = append(took, d)
		t.Logf("%s of a %d-byte file: answers while it is read in %v (the last: its request.cancel)", method, size, took)
		slices.Sort(took)
		if took[len(took)/2] >= 50*time.Millisecond {
			t.Errorf("%s: answers while the file is read took %v, want a median under 50ms", method, took)
		}
		if ok := gjson.GetBytes(got[len(got)-1], "result.ok"); !ok.Bool() {
			t.Errorf("%s: the read had ended before the cancel: %s", method, got[len(got)-1])
		}
		if r := findLine(got, isReply(id)); gjson.GetBytes(r, "error.code").Int() != rpc.CodeUserCancelled {
			t.Errorf("%s: the cancelled request's answer: %.300s", method, r)
		}
	}
	c.close()
}

// alignTimedCall sends a request and reads to its answer; it returns the
// time that took and the lines read.
func alignTimedCall(c *rpcConn, method, params string) (time.Duration, [][]byte) {
	c.t.Helper()
	start := time.Now()
	id := c.call(method, params)
	var got [][]byte
	for {
		l, err := c.read(rpcWait)
		if err != nil {
			c.t.Fatalf("waiting for the answer to %s: %v", method, err)
		}
		got = append(got, l)
		if isReply(id)(l) {
			return time.Since(start), got
		}
	}
}

// writeBigSession writes a session file of about size bytes: prompts and
// answers of 1 KB, all of them replayable.
func writeBigSession(t *testing.T, path, sid string, size int) int {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	text := strings.Repeat("lorem ipsum ", 85)
	n := 0
	for i := 0; n < size; i++ {
		ts := time.Unix(1_700_000_000+int64(i), 0).UTC().Format(time.RFC3339)
		k := strconv.Itoa(i)
		m, _ := w.WriteString(`{"type":"user","message":{"role":"user","content":"prompt ` + k + `"},"sessionId":"` + sid + `","timestamp":"` + ts + `","uuid":"u` + k + `"}` + "\n")
		n += m
		m, _ = w.WriteString(`{"type":"assistant","message":{"id":"msg_` + k + `","role":"assistant","content":[{"type":"text","text":"` + text + `"}]},"sessionId":"` + sid + `","timestamp":"` + ts + `","uuid":"a` + k + `"}` + "\n")
		n += m
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRPCAlignSessionListLongCWD: a real turn in a working directory whose
// path is over 200 characters (the CLI then names its project folder by a
// cut name and a hash) is found by session.list.
func TestRPCAlignSessionListLongCWD(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	dir := filepath.Join(t.TempDir(), strings.Repeat("a", 70), strings.Repeat("b", 70), strings.Repeat("c", 70))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if n := len(mustReal(t, dir)); n <= 200 {
		t.Fatalf("the working directory has %d characters, want over 200", n)
	}
	c := startRPC(t, []string{"--cwd", dir}, "HOME="+home)
	sid := c.initialize("").Get("runtime.session_id").Str
	if _, _, status := c.runText("hello from a long path"); status != rpc.StatusCompleted {
		t.Fatalf("run: %s", status)
	}
	if name := clifiles.ProjectDirName(mustReal(t, dir)); len(name) <= 201 {
		t.Errorf("project folder name %q is not cut and hashed", name)
	}
	var s gjson.Result
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		list := c.result(c.call(rpc.MethodSessionList, `{}`)).Get("sessions")
		if s = list.Get(`#(session_id=="` + sid + `")`); s.Exists() || time.Now().After(deadline) {
			break
		}
	}
	if s.Get("last_user_message").Str != "hello from a long path" || s.Get("message_count").Int() < 1 {
		entries, _ := os.ReadDir(filepath.Join(home, ".claude", "projects"))
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("session.list does not list %s: %s (project folders: %q)", sid, s.Raw, names)
	}
	c.close()
}
