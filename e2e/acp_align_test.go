package e2e

// End-to-end tests of the behaviours every dialect shares, in the acp
// dialect: the official ACP client library (@agentclientprotocol/sdk)
// drives `ccbridge --ui acp` (this test binary, acting as ccbridge) in
// front of the real Claude Code CLI and the fake Messages API. Each test
// is a script of its own, written here and run by node after the prelude
// below (alignPrelude), so this file needs nothing but the helpers of
// e2e_test.go and e2e_acp_test.go (realCLI, fakeAPI, acpRun, tail).

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/session/clifiles"
)

// alignPrelude is the start of every script: the library, an output of
// one JSON object a line, and connect, which starts one ccbridge (in dir,
// with extra arguments) and returns a connection to it:
//
//	call(method, params)   a request; prints its response (with the time)
//	notify(method, params) a notification
//	when(pred)             resolves with the first printed event pred holds for
//	close()                ends ccbridge's input and waits for its exit
//
// Every session/update and _ccbridge/error is printed, with the time in
// milliseconds (performance.now). Permission requests are allowed.
const alignPrelude = `
import { pathToFileURL } from 'node:url';
import { spawn } from 'node:child_process';
import { Readable, Writable } from 'node:stream';
import { performance } from 'node:perf_hooks';

const acp = await import(pathToFileURL(process.env.ACP_SDK).href);
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const cwd = process.env.WORKDIR;
const origError = console.error;
console.error = (...args) => {
  out({ event: 'sdk_error', message: args.map((a) => (typeof a === 'string' ? a : JSON.stringify(a))).join(' ') });
  origError(...args);
};
const clientCaps = { protocolVersion: 1, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false }, clientInfo: { name: 'ccbridge-align', version: '1.0.0' } };

function connect(name, extraArgs = [], dir = cwd) {
  const child = spawn(process.env.CCBRIDGE_BIN, ['--ui', 'acp', ...extraArgs], { cwd: dir, env: process.env, stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const waiters = [];
  const seen = (e) => {
    e.at = performance.now();
    out(e);
    for (const w of [...waiters]) {
      if (w.pred(e)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(e);
      }
    }
    return e;
  };
  const app = acp.client({ name })
    .onNotification('session/update', ({ params }) => seen({ event: 'update', conn: name, sessionId: params.sessionId, update: params.update }))
    .onNotification('_ccbridge/error', (p) => p, ({ params }) => seen({ event: 'ccbridge_error', conn: name, params }))
    .onRequest('session/request_permission', async () => ({ outcome: { outcome: 'selected', optionId: 'allow' } }));
  const conn = app.connect(acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)));
  const call = async (method, params, tag) => {
    try {
      const result = await conn.agent.request(method, params);
      return seen({ event: 'response', conn: name, method, tag, result: result ?? null });
    } catch (err) {
      return seen({ event: 'response', conn: name, method, tag, error: { code: err.code, message: err.message, data: err.data } });
    }
  };
  const when = (pred) => new Promise((resolve) => waiters.push({ pred, resolve }));
  const close = async () => {
    child.stdin.end();
    const e = await exited;
    out({ event: 'exit', conn: name, ...e });
    conn.close();
  };
  return { child, call, notify: (m, p) => conn.agent.notify(m, p), when, close };
}

async function newSession(c, dir = cwd) {
  await c.call('initialize', clientCaps);
  const s = await c.call('session/new', { cwd: dir, mcpServers: [] });
  if (s.error) throw new Error('session/new failed: ' + s.error.message);
  return s.result.sessionId;
}

const prompt = (c, sessionId, text, tag) => c.call('session/prompt', { sessionId, prompt: [{ type: 'text', text }] }, tag);
`

// alignEnv is one test's ccbridge environment: its working directory and
// its HOME (whose .claude holds the CLI's session files).
type alignEnv struct {
	t       *testing.T
	workdir string
	home    string
}

func newAlignEnv(t *testing.T) *alignEnv {
	return &alignEnv{t: t, workdir: t.TempDir(), home: t.TempDir()}
}

// projectDir is the CLI's folder of session files for dir.
func (a *alignEnv) projectDir(dir string) string {
	a.t.Helper()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		a.t.Fatal(err)
	}
	return clifiles.ProjectDir(filepath.Join(a.home, ".claude"), real)
}

// run runs script after alignPrelude (see runACPScript).
func (a *alignEnv) run(script string) *acpRun {
	a.t.Helper()
	file := filepath.Join(a.t.TempDir(), "align.mjs")
	body := alignPrelude + "\ntry {\n" + script + "\n  out({ event: 'done' });\n  process.exit(0);\n} catch (err) {\n  out({ event: 'error', message: String(err?.stack ?? err) });\n  process.exit(1);\n}\n"
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		a.t.Fatal(err)
	}
	return runACPScript(a.t, file, a.home, a.workdir, 150*time.Second)
}

// tagged returns the response to the request the script tagged tag.
func tagged(r *acpRun, tag string) gjson.Result {
	r.t.Helper()
	i := r.index(func(e gjson.Result) bool { return e.Get("event").Str == "response" && e.Get("tag").Str == tag })
	if i < 0 {
		r.t.Fatalf("no response tagged %q", tag)
	}
	return r.events[i]
}

// TestACPAlignCLILineTooLong: with --max-cli-line 100000, BIGTEXT
// 300000 makes the CLI write an assistant line and a result line of about
// 300 KB. Each is dropped and reported with _ccbridge/error; the text
// still streams (its deltas are 64 KiB), the turn ends when the CLI is
// idle, and the next prompt works.
func TestACPAlignCLILineTooLong(t *testing.T) {
	t.Parallel()
	r := newAlignEnv(t).run(`
  const c = connect('a', ['--max-cli-line', '100000']);
  const sid = await newSession(c);
  out({ event: 'session', sid });
  await prompt(c, sid, 'BIGTEXT 300000', 'big');
  await prompt(c, sid, 'hello', 'after');
  await c.close();
`)
	sid := r.filter(func(e gjson.Result) bool { return e.Get("event").Str == "session" })[0].Get("sid").Str
	errs := r.filter(func(e gjson.Result) bool { return e.Get("event").Str == "ccbridge_error" })
	if len(errs) == 0 {
		t.Fatalf("no _ccbridge/error notification")
	}
	for _, e := range errs {
		p := e.Get("params")
		if p.Get("sessionId").Str != sid || p.Get("code").Str != "line_too_long" ||
			!strings.Contains(p.Get("message").Str, "over the 100000-byte limit (--max-cli-line)") {
			t.Errorf("notification: %s", e.Raw)
		}
	}
	big := tagged(r, "big")
	if big.Get("result.stopReason").Str != "end_turn" {
		t.Errorf("the prompt with the long lines: %s", big.Raw)
	}
	bigAt := r.index(func(e gjson.Result) bool { return e.Get("tag").Str == "big" })
	if n := len(chunkText(r.filter(func(e gjson.Result) bool {
		return e.Get("event").Str == "update" && e.Get("update.sessionUpdate").Str == "agent_message_chunk" && e.Get("at").Float() <= big.Get("at").Float()
	}))); n != 300000 {
		t.Errorf("the long turn streamed %d bytes of text, want 300000", n)
	}
	if i := r.index(func(e gjson.Result) bool { return e.Get("event").Str == "ccbridge_error" }); i > bigAt {
		t.Errorf("the notification came after the prompt's answer")
	}
	if after := tagged(r, "after"); after.Get("result.stopReason").Str != "end_turn" {
		t.Errorf("the prompt after: %s", after.Raw)
	}
}

// TestACPAlignResumeRefusedBeforeAnyChild: session/load and session/resume of a session
// whose file holds no user or assistant message, or has no file, are
// refused with -32002 before any CLI starts.
func TestACPAlignResumeRefusedBeforeAnyChild(t *testing.T) {
	t.Parallel()
	a := newAlignEnv(t)
	const empty, missing = "5b0d2c43-0000-4000-8000-0000000000e1", "5b0d2c43-0000-4000-8000-0000000000e2"
	dir := a.projectDir(a.workdir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// What the CLI leaves when it is stopped before the first message.
	content := `{"type":"queue-operation","operation":"enqueue","timestamp":"2026-11-24T08:00:00.000Z","sessionId":"` + empty + `"}` + "\n" +
		`{"type":"summary","summary":"nothing yet","leafUuid":"x"}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, empty+".jsonl"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	r := a.run(fmt.Sprintf(`
  const c = connect('a');
  await c.call('initialize', clientCaps);
  for (const [sessionId, what] of [[%q, 'empty'], [%q, 'missing']]) {
    await c.call('session/load', { sessionId, cwd, mcpServers: [] }, 'load ' + what);
    await c.call('session/resume', { sessionId, cwd }, 'resume ' + what);
  }
  await c.close();
`, empty, missing))
	for _, tag := range []string{"load empty", "resume empty", "load missing", "resume missing"} {
		e := tagged(r, tag)
		msg := e.Get("error.message").Str
		if e.Get("error.code").Int() != -32002 {
			t.Errorf("%s: %s", tag, e.Raw)
		}
		if strings.HasSuffix(tag, "empty") && !strings.Contains(msg, "has no conversation to resume") {
			t.Errorf("%s: %s", tag, e.Raw)
		}
		if strings.HasSuffix(tag, "missing") && !strings.Contains(msg, "no session") {
			t.Errorf("%s: %s", tag, e.Raw)
		}
	}
	if strings.Contains(r.stderr, `"msg":"claude started"`) {
		t.Errorf("a CLI was started")
	}
	if updates := r.filter(func(e gjson.Result) bool { return e.Get("event").Str == "update" }); len(updates) != 0 {
		t.Errorf("updates for sessions that cannot be resumed: %v", updates)
	}
}

// TestACPAlignCancelWhileReadingABigSession: a session/cancel is handled within
// 50 ms while a session file of about 100 MB is being read for
// session/load (and a session/list runs): the prompt it cancels, waiting
// behind a running one, is answered at once, before the load.
func TestACPAlignCancelWhileReadingABigSession(t *testing.T) {
	a := newAlignEnv(t)
	const sid = "5b0d2c43-0000-4000-8000-0000000000b1"
	dir := a.projectDir(a.workdir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, sid+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	user := func(text string, i int) {
		fmt.Fprintf(w, `{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":%q},"uuid":"u-%d","timestamp":"2026-11-24T08:00:00.000Z","cwd":%q,"sessionId":%q}`+"\n", text, i, a.workdir, sid)
	}
	user("the start of a long history", 0)
	// Lines of about 120 bytes that the replay reads and leaves out.
	for n, size := 0, 0; size < 100<<20; n++ {
		m, _ := fmt.Fprintf(w, `{"type":"progress","uuid":"p-%07d","data":{"type":"hook_progress","n":%d},"sessionId":%q}`+"\n", n, n, sid)
		size += m
	}
	user("the end of a long history", 1)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if fi, err := os.Stat(f.Name()); err != nil || fi.Size() < 90<<20 {
		t.Fatalf("the session file: %v %v", fi, err)
	}
	r := a.run(fmt.Sprintf(`
  const c = connect('a');
  const live = await newSession(c);
  const slow = prompt(c, live, 'SLOW please', 'slow');
  await c.when((e) => e.event === 'update' && e.sessionId === live && e.update.sessionUpdate === 'agent_message_chunk');
  const queued = prompt(c, live, 'hello', 'queued');
  const load = c.call('session/load', { sessionId: %q, cwd, mcpServers: [] }, 'load');
  const list = c.call('session/list', { cwd }, 'list');
  // The replay is under way once its first update has come.
  await c.when((e) => e.event === 'update' && e.sessionId === %[1]q);
  const sent = performance.now();
  await c.notify('session/cancel', { sessionId: live });
  const answer = await queued;
  out({ event: 'latency', ms: answer.at - sent, sent });
  await Promise.all([slow, load, list]);
  await c.close();
`, sid))
	lat := r.filter(func(e gjson.Result) bool { return e.Get("event").Str == "latency" })[0]
	t.Logf("session/cancel answered %.1f ms after it was sent, during the replay", lat.Get("ms").Float())
	if q := tagged(r, "queued"); q.Get("result.stopReason").Str != "cancelled" {
		t.Fatalf("the cancelled prompt: %s", q.Raw)
	}
	if ms := lat.Get("ms").Float(); ms >= 50 {
		t.Errorf("the cancel took effect after %.1f ms, want < 50 ms", ms)
	}
	load := tagged(r, "load")
	if load.Get("error").Exists() {
		t.Errorf("session/load: %s", load.Raw)
	}
	if load.Get("at").Float() <= tagged(r, "queued").Get("at").Float() {
		t.Errorf("the load was answered before the cancel: the replay was over before the cancel was sent")
	}
	var users []string
	for _, e := range r.filter(func(e gjson.Result) bool { return e.Get("sessionId").Str == sid }) {
		if e.Get("at").Float() < load.Get("at").Float() {
			users = append(users, e.Get("update.content.text").Str)
		}
	}
	if len(users) != 2 || users[0] != "the start of a long history" || users[1] != "the end of a long history" {
		t.Errorf("the replay before the load's answer: %q", users)
	}
	if s := tagged(r, "list").Get("result.sessions").Get(`#(sessionId=="` + sid + `")`); s.Get("title").Str != "the start of a long history" {
		t.Errorf("session/list: %s", tagged(r, "list").Raw)
	}
	if s := tagged(r, "slow"); s.Get("result.stopReason").Str != "cancelled" {
		t.Errorf("the running prompt: %s", s.Raw)
	}
}

// TestACPAlignSessionListLongCWD: session/list with a working directory of
// more than 200 characters finds the session a real turn created there
// (the CLI shortens that folder's name and adds a hash).
func TestACPAlignSessionListLongCWD(t *testing.T) {
	t.Parallel()
	a := newAlignEnv(t)
	long := filepath.Join(a.workdir, strings.Repeat("d", 120), strings.Repeat("e", 120))
	if err := os.MkdirAll(long, 0o755); err != nil {
		t.Fatal(err)
	}
	r := a.run(fmt.Sprintf(`
  const dir = %q;
  const c = connect('a', [], dir);
  const sid = await newSession(c, dir);
  out({ event: 'session', sid });
  await prompt(c, sid, 'hello from a long cwd', 'prompt');
  await c.close();
  const d = connect('b');
  await d.call('initialize', clientCaps);
  await d.call('session/list', { cwd: dir }, 'list cwd');
  await d.call('session/list', {}, 'list all');
  await d.call('session/list', { cwd }, 'list parent');
  await d.close();
`, long))
	sid := r.filter(func(e gjson.Result) bool { return e.Get("event").Str == "session" })[0].Get("sid").Str
	if got := tagged(r, "prompt").Get("result.stopReason").Str; got != "end_turn" {
		t.Fatalf("the turn: %q", got)
	}
	if len(long) <= 200 {
		t.Fatalf("the cwd has %d characters", len(long))
	}
	for _, tag := range []string{"list cwd", "list all"} {
		ss := tagged(r, tag).Get("result.sessions")
		s := ss.Get(`#(sessionId=="` + sid + `")`)
		if s.Get("cwd").Str != long || s.Get("title").Str != "hello from a long cwd" {
			t.Errorf("%s: %s", tag, ss.Raw)
		}
	}
	if ss := tagged(r, "list cwd").Get("result.sessions"); ss.Get("#").Int() != 1 {
		t.Errorf("list cwd: %s", ss.Raw)
	}
	if ss := tagged(r, "list parent").Get("result.sessions"); ss.Get("#").Int() != 0 {
		t.Errorf("the parent folder lists the long one's session: %s", ss.Raw)
	}
	entries, _ := os.ReadDir(filepath.Join(a.home, ".claude", "projects"))
	for _, e := range entries {
		if len(e.Name()) <= 200 {
			t.Errorf("the CLI's project folder %q is not a shortened one", e.Name())
		}
	}
}
