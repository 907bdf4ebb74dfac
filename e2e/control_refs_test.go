package e2e

// Lane 000 (issue #9) end to end, the rules a controller must not get
// past: content_ref (a good reference is injected byte for byte, every
// escape is refused with nothing injected), the inline limits, identity,
// authorization and replay age, and the audit trail. On stdio (`--ui
// control`) and on the control socket (`--control PATH`, beside `--ui
// control` and beside `--ui ipc`). docs/control/lane000.md and
// docs/control/ref-and-socket.md say the rules.
//
// One ccbridge serves many cases in sequence; its requests that must be
// refused all come before the first that must be injected, so that any
// refused content that reached the CLI anyway would be in the fake model's
// requests by the time the good one's turn has ended (the CLI reads its
// input in order).
//
// Helpers here start with ref (control_test.go's start with ctl).

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/fakemodel"
)

const (
	refTeam   = "atm-refs"
	refAgent  = "codex:refs"
	refSender = "alice"
	refWait   = 60 * time.Second // the longest wait for one expected line
)

// refWorker is one ccbridge under test, a worker steered on lane 000.
type refWorker struct {
	t     *testing.T
	b     *bridge
	api   *fakemodel.Server // the test's fake model (fakeAPI of the top-level test)
	sid   string            // the worker's session id (--session-id)
	sock  string            // --control PATH, or ""
	audit string            // --audit-log FILE, or ""
	n     int
}

// refStart runs `ccbridge --team refTeam --agent-id refAgent --session-id
// <new> args…`; args names the dialect and every other flag.
func refStart(t *testing.T, args ...string) *refWorker {
	t.Helper()
	w := &refWorker{t: t, api: fakeAPI(t), sid: uuid.NewString()}
	for i, a := range args {
		switch {
		case a == "--control" && i+1 < len(args):
			w.sock = args[i+1]
		case a == "--audit-log" && i+1 < len(args) && args[i+1] != "-":
			w.audit = args[i+1]
		}
	}
	w.b = startBridge(t, append([]string{"--team", refTeam, "--agent-id", refAgent, "--session-id", w.sid}, args...))
	return w
}

// refConn is one lane-000 connection: ccbridge's stdio under --ui
// control, or a connection to its control socket. Lines read while waiting
// for another are kept for later waits.
type refConn struct {
	t       *testing.T
	w       *refWorker
	write   func(line string)
	lines   <-chan []byte
	backlog [][]byte
	seen    [][]byte // every line read
	caps    []byte   // the control.capabilities line the connection began with
}

// refStdio is the lane on ccbridge's stdio (--ui control); its first line
// must be control.capabilities naming the worker.
func (w *refWorker) refStdio() *refConn {
	w.t.Helper()
	c := &refConn{t: w.t, w: w, lines: w.b.lines, write: w.b.send}
	c.refGreeting()
	return c
}

// refDial connects to the worker's control socket once it listens.
func (w *refWorker) refDial() *refConn {
	t := w.t
	t.Helper()
	var conn net.Conn
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if conn, err = net.Dial("unix", w.sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the control socket %s did not accept within 30 s: %v", w.sock, err)
		}
	}
	t.Cleanup(func() { conn.Close() })
	if fi, err := os.Stat(w.sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the control socket's mode is %v (%v), want 0600", fi.Mode(), err)
	}
	lines := make(chan []byte, 64)
	go func() {
		defer close(lines)
		r := bufio.NewReaderSize(conn, 1<<16)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				lines <- bytes.TrimSuffix(line, []byte("\n"))
			}
			if err != nil {
				return
			}
		}
	}()
	c := &refConn{t: t, w: w, lines: lines, write: func(line string) {
		t.Helper()
		if _, err := conn.Write([]byte(line + "\n")); err != nil {
			t.Fatalf("writing to the control socket: %v", err)
		}
	}}
	c.refGreeting()
	return c
}

func (c *refConn) refGreeting() {
	c.t.Helper()
	c.caps = c.refAwait("control.capabilities", func(l []byte) bool { return true })
	if typeOf(c.caps) != "control.capabilities" {
		c.t.Fatalf("the lane's first line is not control.capabilities: %.400s", c.caps)
	}
	for k, want := range map[string]string{"team": refTeam, "agent_id": refAgent, "session_id": c.w.sid} {
		if got := get(c.caps, k).Str; got != want {
			c.t.Errorf("control.capabilities: %s %q, want %q: %s", k, got, want, c.caps)
		}
	}
}

// refAwait returns the first line (kept or new) for which pred holds.
func (c *refConn) refAwait(what string, pred func([]byte) bool) []byte {
	c.t.Helper()
	if i := slices.IndexFunc(c.backlog, pred); i >= 0 {
		l := c.backlog[i]
		c.backlog = slices.Delete(c.backlog, i, i+1)
		return l
	}
	timer := time.NewTimer(refWait)
	defer timer.Stop()
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				c.t.Fatalf("the lane's output ended before %s; the last lines:\n%s", what, lastLines(c.seen, 8))
			}
			if !gjson.ValidBytes(l) {
				c.t.Errorf("the lane wrote a line that is not JSON: %.300s", l)
			}
			c.seen = append(c.seen, l)
			if pred(l) {
				return l
			}
			c.backlog = append(c.backlog, l)
		case <-timer.C:
			c.t.Fatalf("no %s within %v; the last lines:\n%s", what, refWait, lastLines(c.seen, 8))
			return nil
		}
	}
}

// refFields are the members of one lane-000 request; nil removes a
// member, and every other value replaces or adds one.
type refFields map[string]any

// refLine builds a control.stdin.request from the worker's identity, the
// allowed sender and sent_at now, with fields over it.
func (c *refConn) refLine(id string, fields refFields) string {
	m := map[string]any{
		"type": "control.stdin.request", "v": 1, "request_id": id,
		"team": refTeam, "session_id": c.w.sid, "agent_id": refAgent, "sender": refSender,
		"sent_at": refTime(time.Now()),
	}
	for k, v := range fields {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		c.t.Fatal(err)
	}
	return string(b)
}

func refTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// refID returns a request id no other request of the run has.
func (c *refConn) refID(tag string) string {
	c.w.n++
	return token("req-"+tag+"-") + "-" + strconv.Itoa(c.w.n)
}

// refRequest sends a request and returns its ack (or control.error).
func (c *refConn) refRequest(id string, fields refFields) []byte {
	c.t.Helper()
	c.write(c.refLine(id, fields))
	return c.refAck(id)
}

// refAck waits for the answer to the request id.
func (c *refConn) refAck(id string) []byte {
	c.t.Helper()
	return c.refAwait("the ack of "+id, func(l []byte) bool {
		typ := typeOf(l)
		return (strings.HasSuffix(typ, ".ack") || typ == "control.error") && get(l, "request_id").Str == id
	})
}

// refCheckAck checks an ack: its type, request id, echoed identity,
// duplicate false, the result, the error code (when code is not "") and a
// detail holding every part of want.
func refCheckAck(t *testing.T, what string, ack []byte, result, code string, want ...string) {
	t.Helper()
	if typ := typeOf(ack); typ != "control.stdin.ack" && typ != "control.interrupt.ack" {
		t.Errorf("%s: answered by %s, want an ack: %.500s", what, typ, ack)
	}
	if got := get(ack, "result").Str; got != result {
		t.Errorf("%s: result %q, want %q: %.500s", what, got, result, ack)
	}
	if d := get(ack, "duplicate"); d.Type != gjson.False {
		t.Errorf("%s: duplicate is %s, want false: %.500s", what, d.Raw, ack)
	}
	if result == "ok" && get(ack, "error").Exists() {
		t.Errorf("%s: an ok ack with an error: %.500s", what, ack)
	}
	if code != "" && get(ack, "error").Str != code {
		t.Errorf("%s: error %q, want %q: %.500s", what, get(ack, "error").Str, code, ack)
	}
	detail := get(ack, "detail").Str
	if result != "ok" && detail == "" {
		t.Errorf("%s: a refusal without a detail: %.500s", what, ack)
	}
	for _, w := range want {
		if !strings.Contains(detail, w) {
			t.Errorf("%s: the detail does not say %q: %q", what, w, detail)
		}
	}
}

// refFile writes data to dir/name and returns its path.
func refFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// refText is n bytes of UTF-8 text that begins with tok, holds no keyword
// of the fake model, and has a few multi-byte runes and line breaks.
func refText(tok string, n int) []byte {
	var b bytes.Buffer
	b.WriteString(tok + "\n")
	for i := 0; b.Len() < n; i++ {
		b.WriteString("line " + strconv.Itoa(i) + ": the quick brown fox – «jumps» over the lazy dog\n")
	}
	out := b.Bytes()[:n]
	for !utf8.Valid(out) { // a multi-byte rune cut at the end
		out[len(out)-1] = '.'
	}
	return out
}

// refRef is a content_ref object for path that claims data's size and
// hash.
func refRef(path string, data []byte) map[string]any {
	sum := sha256.Sum256(data)
	return map[string]any{"path": path, "size_bytes": len(data), "sha256": hex.EncodeToString(sum[:]), "mime": "text/plain"}
}

// refWith returns a copy of ref with k set to v.
func refWith(ref map[string]any, k string, v any) map[string]any {
	out := make(map[string]any, len(ref)+1)
	for kk, vv := range ref {
		out[kk] = vv
	}
	out[k] = v
	return out
}

// refCase is one request that must be refused, and how.
type refCase struct {
	name   string
	fields refFields
	result string // rejected unless set
	code   string // the ack's error, when the codec or Check refuses
	detail []string
}

// refRefCases are the content_ref escapes for a worker with --ref-root
// root and --ref-max 256 KiB; out is a folder outside root. The files
// they point to hold the tokens returned, which must never reach the
// model.
func refRefCases(t *testing.T, root, out string) ([]refCase, []string) {
	t.Helper()
	badTok, secretTok, bigTok := token("REFBAD"), token("REFSECRET"), token("REFBIG")
	bad := refText(badTok, 3000)
	badPath := refFile(t, root, "bad.txt", bad)
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	secret := refText(secretTok, 2000)
	secretPath := refFile(t, out, "secret.txt", secret)
	if err := os.Symlink(secretPath, filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(out, filepath.Join(root, "linkdir")); err != nil {
		t.Fatal(err)
	}
	big := refText(bigTok, 300_000) // over --ref-max 262144
	bigPath := refFile(t, root, "big.txt", big)
	if err := os.Mkdir(filepath.Join(root, "dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(root, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	good := refRef(badPath, bad)
	other := sha256.Sum256([]byte("something else"))
	cases := []refCase{
		{name: "relative path", fields: refFields{"content_ref": refWith(good, "path", strings.TrimPrefix(badPath, "/"))},
			detail: []string{"is relative"}},
		{name: "relative path, bare name", fields: refFields{"content_ref": refWith(good, "path", "bad.txt")},
			detail: []string{"is relative"}},
		{name: "a .. element", fields: refFields{"content_ref": refWith(good, "path", filepath.Join(root, "sub")+"/../bad.txt")},
			detail: []string{`contains ".."`}},
		{name: "symlink inside the root to outside", fields: refFields{"content_ref": refRef(filepath.Join(root, "link.txt"), secret)},
			detail: []string{"resolves through a symlink", "outside every --ref-root"}},
		{name: "symlink to a folder outside, mid-path", fields: refFields{"content_ref": refRef(filepath.Join(root, "linkdir", "secret.txt"), secret)},
			detail: []string{"resolves through a symlink", "outside every --ref-root"}},
		{name: "outside every root", fields: refFields{"content_ref": refRef(secretPath, secret)},
			detail: []string{"is outside every --ref-root"}},
		{name: "outside through ..", fields: refFields{"content_ref": refRef(root+"/../"+filepath.Base(out)+"/secret.txt", secret)},
			detail: []string{`contains ".."`}},
		{name: "size mismatch", fields: refFields{"content_ref": refWith(good, "size_bytes", len(bad)+1)},
			detail: []string{"size_bytes is 3001 but the file has 3000 bytes"}},
		{name: "sha256 mismatch", fields: refFields{"content_ref": refWith(good, "sha256", hex.EncodeToString(other[:]))},
			detail: []string{"sha256 differs"}},
		{name: "expired", fields: refFields{"content_ref": refWith(good, "expires_at", refTime(time.Now().Add(-time.Minute)))},
			detail: []string{"expired at"}},
		{name: "a directory", fields: refFields{"content_ref": refRef(filepath.Join(root, "dir"), []byte("x"))},
			detail: []string{"is not a regular file (a directory)"}},
		{name: "a fifo", fields: refFields{"content_ref": refRef(fifo, []byte("x"))},
			detail: []string{"is not a regular file (a fifo)"}},
		{name: "larger than --ref-max", fields: refFields{"content_ref": refRef(bigPath, big)},
			detail: []string{"size_bytes 300000 is over --ref-max 262144"}},
		{name: "file larger than --ref-max, size_bytes small", fields: refFields{"content_ref": refWith(refRef(bigPath, big), "size_bytes", 1000)},
			detail: []string{"file is 300000 bytes, over --ref-max 262144"}},
		{name: "missing file", fields: refFields{"content_ref": refWith(good, "path", filepath.Join(root, "nope.txt"))},
			detail: []string{"does not exist"}},
	}
	for i := range cases {
		cases[i].detail = append([]string{"content_ref"}, cases[i].detail...)
	}
	return cases, []string{badTok, secretTok, bigTok}
}

// refIdentityCases are the identity, authorization and replay refusals
// for a worker with --max-age 1m and the default --clock-skew (30 s), and
// the inline content ones every worker has; each content holds a token
// returned, which must never reach the model.
func refIdentityCases() ([]refCase, []string) {
	var toks []string
	content := func() string {
		tok := token("REFDENY")
		toks = append(toks, tok)
		return tok + " must not be injected"
	}
	cases := []refCase{
		{name: "unknown sender", fields: refFields{"sender": "mallory", "content": content()},
			code: "unauthorized", detail: []string{`sender: "mallory" is not allowed`}},
		{name: "another team", fields: refFields{"team": "atm-other", "content": content()},
			code: "unauthorized", detail: []string{`team: "atm-other" is not this worker's team`}},
		{name: "another team, interrupt", fields: refFields{"type": "control.interrupt.request", "signal": "interrupt", "team": "atm-other"},
			code: "unauthorized", detail: []string{"not this worker's team"}},
		{name: "another session", fields: refFields{"session_id": uuid.NewString(), "content": content()},
			result: "not_found", code: "unknown_session", detail: []string{"is not this worker's session"}},
		{name: "another agent", fields: refFields{"agent_id": "codex:other", "content": content()},
			result: "not_found", code: "unknown_agent", detail: []string{`agent_id: "codex:other" is not this worker's agent`}},
		{name: "sent_at older than --max-age", fields: refFields{"sent_at": refTime(time.Now().Add(-2 * time.Minute)), "content": content()},
			code: "stale", detail: []string{"sent_at:", "over the max age of 1m0s"}},
		{name: "sent_at past the clock skew", fields: refFields{"sent_at": refTime(time.Now().Add(2 * time.Minute)), "content": content()},
			code: "future", detail: []string{"sent_at:", "in the future, over the clock skew of 30s"}},
		{name: "empty content", fields: refFields{"content": ""},
			code: "empty_content", detail: []string{"content: empty"}},
	}
	return cases, toks
}

// refRun sends every case and checks its refusal.
func (c *refConn) refRun(cases []refCase) {
	c.t.Helper()
	for _, k := range cases {
		id := c.refID("deny")
		ack := c.refRequest(id, k.fields)
		res := k.result
		if res == "" {
			res = "rejected"
		}
		refCheckAck(c.t, k.name, ack, res, k.code, k.detail...)
		for _, f := range []string{"team", "session_id", "agent_id"} {
			want, _ := k.fields[f].(string)
			if want == "" {
				want = map[string]string{"team": refTeam, "session_id": c.w.sid, "agent_id": refAgent}[f]
			}
			if got := get(ack, f).Str; got != want {
				c.t.Errorf("%s: the ack's %s is %q, want the request's %q", k.name, f, got, want)
			}
		}
	}
}

// refInjected returns the text block of the fake model's latest request
// that holds tok, exactly as the model got it (the request body is kept
// whole; Request.Prompt is cut).
func (w *refWorker) refInjected(tok string) []byte {
	w.t.Helper()
	reqs := w.api.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		r := reqs[i]
		if r.Path != "/v1/messages" || r.Rule == "session-title" || !strings.Contains(r.Prompt, tok) {
			continue
		}
		if r.Body == nil {
			w.t.Fatalf("the fake model kept no body for the request with %s", tok)
		}
		var found []byte
		gjson.GetBytes(r.Body, "messages").ForEach(func(_, m gjson.Result) bool {
			if m.Get("role").Str != "user" {
				return true
			}
			blocks := m.Get("content")
			if blocks.Type == gjson.String && strings.Contains(blocks.Str, tok) {
				found = []byte(blocks.Str)
			}
			blocks.ForEach(func(_, b gjson.Result) bool {
				if b.Get("type").Str == "text" && strings.Contains(b.Get("text").Str, tok) {
					found = []byte(b.Get("text").Str)
				}
				return true
			})
			return true
		})
		if found == nil {
			w.t.Fatalf("the fake model's request with %s has no text block holding it", tok)
		}
		return found
	}
	w.t.Fatalf("the fake model got no request with %s", tok)
	return nil
}

// refNeverInjected checks that no request the fake model got holds any of
// toks.
func (w *refWorker) refNeverInjected(toks []string) {
	w.t.Helper()
	for _, r := range w.api.Requests() {
		for _, tok := range toks {
			if strings.Contains(r.Prompt, tok) || bytes.Contains(r.Body, []byte(tok)) {
				w.t.Errorf("refused content %s reached the model (request %s, rule %s)", tok, r.Path, r.Rule)
			}
		}
	}
}

// refTurnOf waits for the control.worker.turn that answers request id.
func (c *refConn) refTurnOf(id string) []byte {
	c.t.Helper()
	return c.refAwait("the turn of "+id, func(l []byte) bool {
		if typeOf(l) != "control.worker.turn" {
			return false
		}
		for _, r := range get(l, "request_ids").Array() {
			if r.Str == id {
				return true
			}
		}
		return false
	})
}

// refEntries parses the audit entries (lane 000) in data, skipping other
// lines (ccbridge's own log, when the audit goes to stderr).
func refEntries(t *testing.T, data []byte) []gjson.Result {
	t.Helper()
	var out []gjson.Result
	for _, l := range bytes.Split(data, []byte("\n")) {
		l = bytes.TrimSpace(l)
		if len(l) == 0 || l[0] != '{' || !gjson.ValidBytes(l) {
			continue
		}
		e := gjson.ParseBytes(l)
		if e.Get("event").Exists() && e.Get("lane").Exists() && e.Get("duplicate").Exists() {
			out = append(out, e)
		}
	}
	return out
}

// refAuditFields checks that every entry has every field the audit
// promises, of the right type.
func refAuditFields(t *testing.T, entries []gjson.Result) {
	t.Helper()
	if len(entries) == 0 {
		t.Fatal("the audit trail is empty")
	}
	for _, e := range entries {
		for _, f := range []string{"time", "event", "request_id", "team", "session_id", "agent_id", "sender", "lane", "result", "detail"} {
			if e.Get(f).Type != gjson.String {
				t.Errorf("audit entry without a string %s: %s", f, e.Raw)
			}
		}
		if d := e.Get("duplicate"); !d.IsBool() {
			t.Errorf("audit entry without duplicate: %s", e.Raw)
		}
		if e.Get("lane").Str != "000" && e.Get("event").Str != "audit_dropped" {
			t.Errorf("audit entry of lane %q: %s", e.Get("lane").Str, e.Raw)
		}
		if e.Get("event").Str == "audit_dropped" {
			t.Errorf("the audit dropped events: %s", e.Raw)
		}
	}
}

// refOf returns the audit entries of request id, in order.
func refOf(entries []gjson.Result, id string) []gjson.Result {
	var out []gjson.Result
	for _, e := range entries {
		if e.Get("request_id").Str == id {
			out = append(out, e)
		}
	}
	return out
}

// refEvents returns the events of entries, in order.
func refEvents(entries []gjson.Result) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.Get("event").Str)
	}
	return out
}

// refWantEvents checks that request id's audit entries are exactly the
// events want, and that each names the request's identity and sender.
func refWantEvents(t *testing.T, entries []gjson.Result, id, sid string, want ...string) []gjson.Result {
	t.Helper()
	es := refOf(entries, id)
	if got := refEvents(es); !slices.Equal(got, want) {
		t.Errorf("audit events of %s: %v, want %v", id, got, want)
	}
	for _, e := range es {
		if e.Get("team").Str != refTeam || e.Get("session_id").Str != sid || e.Get("agent_id").Str != refAgent {
			t.Errorf("audit entry of %s without the request's identity: %s", id, e.Raw)
		}
		if e.Get("sender").Str != refSender {
			t.Errorf("audit entry of %s does not name sender %s: %s", id, refSender, e.Raw)
		}
	}
	return es
}

// refClose ends ccbridge's input and waits for it to exit (which closes
// the audit trail, so that everything is written).
func (w *refWorker) refClose() {
	w.t.Helper()
	w.b.stdin.Close()
	for range w.b.lines {
	}
	if code := w.b.wait(); code != 0 {
		w.t.Errorf("ccbridge exited with %d", code)
	}
}

// TestControlRefsStdio: on stdio (--ui control), every content_ref escape,
// every identity, authorization and replay refusal and empty content are
// refused with a detail and nothing reaches the model; then a 200 KiB file
// through content_ref and a 70,000-byte inline content (over the soft
// limit) reach it byte for byte; a retry of the latter is a duplicate.
// The audit file has an entry for every step, with the identity, and no
// payload.
func TestControlRefsStdio(t *testing.T) {
	t.Parallel()
	root, out := t.TempDir(), t.TempDir()
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	w := refStart(t, "--ui", "control", "--allow-sender", "bob", "--allow-sender", refSender,
		"--ref-root", root, "--ref-max", "262144", "--max-age", "1m", "--audit-log", audit)
	c := w.refStdio()
	if get(c.caps, "content_ref").Type != gjson.True || get(c.caps, "ref_max_bytes").Int() != 262144 ||
		get(c.caps, "soft_limit_bytes").Int() != 65536 || get(c.caps, "hard_limit_bytes").Int() != 1<<20 {
		t.Errorf("control.capabilities does not state the limits given: %s", c.caps)
	}
	before := w.api.Count()

	refCases, refToks := refRefCases(t, root, out)
	idCases, idToks := refIdentityCases()
	c.refRun(refCases)
	c.refRun(idCases)
	// A line that is not JSON: control.error, no request id.
	c.write(`{"type":"control.stdin.request",`)
	if e := c.refAwait("the control.error", isType("control.error")); get(e, "error").Str != "invalid_json" {
		t.Errorf("a broken line: %s", e)
	}
	if n := w.api.Count(); n != before {
		t.Errorf("the fake model got %d requests during the refusals", n-before)
	}

	// A 200 KiB file, over the 64 KiB soft limit of inline content.
	goodTok := token("REFGOOD")
	good := refText(goodTok, 200<<10)
	goodID := c.refID("good")
	refCheckAck(t, "a good content_ref", c.refRequest(goodID, refFields{"content_ref": refRef(refFile(t, root, "good.txt", good), good)}), "ok", "")
	if turn := c.refTurnOf(goodID); get(turn, "result").Str != "success" {
		t.Errorf("the content_ref's turn: %s", turn)
	}
	if got := w.refInjected(goodTok); !bytes.Equal(got, good) {
		t.Errorf("the model got %d bytes for the content_ref, want the file's %d bytes exactly", len(got), len(good))
	}
	// Requests are read in order: anything refused that reached the CLI
	// anyway would have reached the model before the good one.
	w.refNeverInjected(append(refToks, idToks...))

	// Inline content over the soft limit is taken, with a warning in the audit.
	softTok := token("REFSOFT")
	soft := string(refText(softTok, 70_000))
	softID := c.refID("soft")
	refCheckAck(t, "inline content over the soft limit", c.refRequest(softID, refFields{"content": soft}), "ok", "")
	c.refTurnOf(softID)
	if got := w.refInjected(softTok); string(got) != soft {
		t.Errorf("the model got %d bytes for the inline content, want %d exactly", len(got), len(soft))
	}
	// The same request again, a retry: a duplicate, not injected twice.
	n := w.api.Count()
	dup := c.refRequest(softID, refFields{"content": soft, "meta": map[string]any{"retry_count": 1}})
	if get(dup, "result").Str != "ok" || get(dup, "duplicate").Type != gjson.True {
		t.Errorf("a retry of a request that was carried out: %s", dup)
	}
	// A fresh request marked as a retry (its first attempt never came).
	retryTok := token("REFRETRY")
	retryID := c.refID("retry")
	refCheckAck(t, "a first attempt marked as a retry", c.refRequest(retryID, refFields{"content": retryTok + " hello", "meta": map[string]any{"retry_count": 2}}), "ok", "")
	c.refTurnOf(retryID)
	if got := w.refInjected(retryTok); string(got) != retryTok+" hello" {
		t.Errorf("the retry's content reached the model as %q", got)
	}
	if reqs := w.api.Requests(); refCount(reqs, softTok) != 1 {
		t.Errorf("the duplicate reached the model: %d requests hold its content (count went %d → %d)", refCount(reqs, softTok), n, w.api.Count())
	}
	w.refClose()

	data, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(audit); err == nil && fi.Mode().Perm() != 0o600 {
		t.Errorf("the audit file's mode is %v, want 0600", fi.Mode().Perm())
	}
	entries := refEntries(t, data)
	refAuditFields(t, entries)
	refWantEvents(t, entries, goodID, w.sid, "request", "ack")
	es := refWantEvents(t, entries, softID, w.sid, "request", "warning", "ack", "retry", "warning", "duplicate")
	if len(es) == 6 {
		if !strings.Contains(es[1].Get("detail").Str, "70000 bytes, over the soft limit of 65536") {
			t.Errorf("the soft limit's warning: %s", es[1].Raw)
		}
		if es[2].Get("result").Str != "ok" || es[5].Get("result").Str != "ok" || es[5].Get("duplicate").Type != gjson.True {
			t.Errorf("the ack and duplicate entries: %s / %s", es[2].Raw, es[5].Raw)
		}
	}
	refWantEvents(t, entries, retryID, w.sid, "retry", "ack")
	// Refusals: received, then failed with the result and why.
	for _, e := range entries {
		if e.Get("event").Str == "failure" && e.Get("request_id").Str != "" &&
			(e.Get("result").Str == "" || e.Get("detail").Str == "") {
			t.Errorf("a failure entry without its result and detail: %s", e.Raw)
		}
	}
	failures := 0
	for _, e := range entries {
		if e.Get("event").Str == "failure" && e.Get("request_id").Str != "" {
			failures++
			if prev := refOf(entries, e.Get("request_id").Str); len(prev) != 2 || prev[0].Get("event").Str != "request" {
				t.Errorf("a refused request's entries: %v", refEvents(prev))
			}
		}
	}
	if want := len(refCases) + len(idCases); failures != want {
		t.Errorf("%d failure entries with a request id, want %d", failures, want)
	}
	if i := slices.IndexFunc(entries, func(e gjson.Result) bool {
		return e.Get("event").Str == "failure" && e.Get("request_id").Str == "" && strings.Contains(e.Get("detail").Str, "JSON")
	}); i < 0 {
		t.Errorf("no failure entry for the line that is not JSON")
	}
	// No payload without --audit-payloads: no content, accepted or refused.
	for _, tok := range append([]string{goodTok, softTok, retryTok}, append(refToks, idToks...)...) {
		if bytes.Contains(data, []byte(tok)) {
			t.Errorf("the audit holds content (%s) without --audit-payloads", tok)
		}
	}
	if bytes.Contains(data, []byte(`"payload"`)) {
		t.Errorf("the audit has a payload field without --audit-payloads")
	}
}

// refCount is how many of reqs hold tok in their prompt (the session
// title's aside).
func refCount(reqs []fakemodel.Request, tok string) int {
	n := 0
	for _, r := range reqs {
		if r.Path == "/v1/messages" && r.Rule != "session-title" && strings.Contains(r.Prompt, tok) {
			n++
		}
	}
	return n
}

// TestControlRefsSocket: the same content_ref escapes and identity
// refusals on the control socket beside another dialect (--ui ipc
// --control PATH), then a good content_ref reaches the model byte for
// byte and the ipc UI sees its turn; the audit file records it all,
// without payload.
func TestControlRefsSocket(t *testing.T) {
	t.Parallel()
	root, out := t.TempDir(), t.TempDir()
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	w := refStart(t, "--ui", "ipc", "--control", ctlSocketPath(t), "--allow-sender", refSender,
		"--ref-root", root, "--ref-max", "262144", "--max-age", "1m", "--audit-log", audit)
	if sid := get(w.b.until("session_init", isType("session_init"))[0], "session_id").Str; sid != w.sid {
		t.Fatalf("ipc's session is %s, want --session-id %s", sid, w.sid)
	}
	c := w.refDial()
	before := w.api.Count()

	refCases, refToks := refRefCases(t, root, out)
	idCases, idToks := refIdentityCases()
	c.refRun(refCases)
	c.refRun(idCases)
	if n := w.api.Count(); n != before {
		t.Errorf("the fake model got %d requests during the refusals", n-before)
	}

	goodTok := token("REFGOOD")
	good := refText(goodTok, 200<<10)
	goodID := c.refID("good")
	refCheckAck(t, "a good content_ref", c.refRequest(goodID, refFields{"content_ref": refRef(refFile(t, root, "good.txt", good), good)}), "ok", "")
	if l := w.b.until("the injected prompt's turn_complete", isType("turn_complete")); get(l[len(l)-1], "subtype").Str != "success" {
		t.Errorf("the injected prompt's turn: %s", l[len(l)-1])
	}
	if got := w.refInjected(goodTok); !bytes.Equal(got, good) {
		t.Errorf("the model got %d bytes for the content_ref, want the file's %d bytes exactly", len(got), len(good))
	}
	w.refNeverInjected(append(refToks, idToks...))
	w.refClose()

	data, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	entries := refEntries(t, data)
	refAuditFields(t, entries)
	refWantEvents(t, entries, goodID, w.sid, "request", "ack")
	failures := 0
	for _, e := range entries {
		if e.Get("event").Str == "failure" {
			failures++
			if e.Get("request_id").Str == "" || e.Get("result").Str == "" || e.Get("detail").Str == "" {
				t.Errorf("a failure entry without its request id, result or detail: %s", e.Raw)
			}
		}
	}
	if want := len(refCases) + len(idCases); failures != want {
		t.Errorf("%d failure entries, want %d", failures, want)
	}
	for _, tok := range append([]string{goodTok}, append(refToks, idToks...)...) {
		if bytes.Contains(data, []byte(tok)) {
			t.Errorf("the audit holds content (%s) without --audit-payloads", tok)
		}
	}
}

// TestControlRefsLimits: --ui control with --control PATH beside it, no
// --ref-root, --stdin-hard-limit 4096, the audit on stderr with payloads,
// --control-timeout 1s. Inline content over the hard limit is refused on
// both lanes with a detail that names content_ref, and so is any
// content_ref; content at the limit is taken. An interrupt the worker
// cannot take in time (its CLI is stopped) is acked timeout. The audit
// lines on stderr carry the payloads, the refused ones too.
func TestControlRefsLimits(t *testing.T) {
	t.Parallel()
	w := refStart(t, "--ui", "control", "--control", ctlSocketPath(t), "--allow-sender", refSender,
		"--stdin-hard-limit", "4096", "--audit-log", "-", "--audit-payloads", "--control-timeout", "1s")
	c := w.refStdio()
	s := w.refDial()
	for _, caps := range [][]byte{c.caps, s.caps} {
		if get(caps, "content_ref").Type != gjson.False || get(caps, "hard_limit_bytes").Int() != 4096 {
			t.Errorf("control.capabilities: %s", caps)
		}
	}
	before := w.api.Count()

	var denied []string
	var overIDs []string
	for _, lane := range []*refConn{c, s} {
		tok := token("REFHARD")
		denied = append(denied, tok)
		over := string(refText(tok, 5000))
		id := lane.refID("hard")
		overIDs = append(overIDs, id)
		refCheckAck(t, "inline content over --stdin-hard-limit", lane.refRequest(id, refFields{"content": over}),
			"rejected", "too_large", "content: 5000 bytes, over the hard limit of 4096", "content_ref")

		tok = token("REFNOROOT")
		denied = append(denied, tok)
		data := refText(tok, 100)
		refCheckAck(t, "content_ref without --ref-root", lane.refRequest(lane.refID("noroot"), refFields{"content_ref": refRef(refFile(t, t.TempDir(), "f.txt", data), data)}),
			"rejected", "content_ref_refused", "no --ref-root is configured")
	}
	if n := w.api.Count(); n != before {
		t.Errorf("the fake model got %d requests during the refusals", n-before)
	}

	// At the limit: taken, on the socket; the stdio lane shows its turn.
	atTok := token("REFAT")
	at := string(refText(atTok, 4096))
	atID := s.refID("at")
	refCheckAck(t, "inline content at --stdin-hard-limit", s.refRequest(atID, refFields{"content": at}), "ok", "")
	c.refTurnOf(atID)
	if got := w.refInjected(atTok); string(got) != at {
		t.Errorf("the model got %d bytes, want %d exactly", len(got), len(at))
	}
	w.refNeverInjected(denied)

	// A turn runs; the CLI is stopped, so it cannot answer the interrupt
	// within --control-timeout.
	slowID := c.refID("slow")
	refCheckAck(t, "a slow prompt", c.refRequest(slowID, refFields{"content": "SLOW " + token("REFSLOW")}), "ok", "")
	c.refAwait("the slow turn's text", func(l []byte) bool {
		return typeOf(l) == "control.worker.text" && strings.Contains(get(l, "text").Str, "counting")
	})
	cli := w.b.childPID()
	if err := syscall.Kill(cli, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			syscall.Kill(cli, syscall.SIGCONT)
		}
	}
	t.Cleanup(resume)
	intID := s.refID("int")
	start := time.Now()
	ack := s.refRequest(intID, refFields{"type": "control.interrupt.request", "signal": "interrupt", "content": nil})
	resume()
	refCheckAck(t, "an interrupt the worker cannot take in time", ack, "timeout", "", "did not take the interrupt within 1s")
	if d := time.Since(start); d < time.Second {
		t.Errorf("the timeout ack came after %v, before --control-timeout", d)
	}
	// Once it runs again the CLI takes the interrupt.
	if turn := c.refTurnOf(slowID); get(turn, "result").Str != "cancelled" {
		t.Errorf("the interrupted turn: %s", turn)
	}
	// And goes on: the next prompt is answered.
	lastID := c.refID("last")
	refCheckAck(t, "a prompt after the timeout", c.refRequest(lastID, refFields{"content": token("REFLAST") + " hello"}), "ok", "")
	if turn := c.refTurnOf(lastID); get(turn, "result").Str != "success" {
		t.Errorf("the turn after the timeout: %s", turn)
	}
	w.refClose()

	entries := refEntries(t, []byte(w.b.stderr.String()))
	refAuditFields(t, entries)
	for i, id := range overIDs {
		es := refWantEvents(t, entries, id, w.sid, "request", "failure")
		if len(es) == 2 && es[0].Get("payload").Str != string(refText(denied[2*i], 5000)) {
			t.Errorf("the audit's payload of a refused request is not its content: %.200s", es[0].Get("payload").Raw)
		}
	}
	if es := refWantEvents(t, entries, atID, w.sid, "request", "ack"); len(es) == 2 && es[0].Get("payload").Str != at {
		t.Errorf("the audit's payload is not the content: %.200s", es[0].Get("payload").Raw)
	}
	es := refWantEvents(t, entries, intID, w.sid, "request", "timeout", "failure")
	if len(es) == 3 && (es[1].Get("result").Str != "timeout" || es[2].Get("result").Str != "timeout") {
		t.Errorf("the timeout's entries: %s / %s", es[1].Raw, es[2].Raw)
	}
	for _, e := range entries {
		if e.Get("payload").Exists() && e.Get("event").Str != "request" && e.Get("event").Str != "retry" {
			t.Errorf("a payload on a %s entry: %.300s", e.Get("event").Str, e.Raw)
		}
	}
}

// TestControlRefsNoSender: without --allow-sender every request is
// refused, whoever sends it, and nothing reaches the model.
func TestControlRefsNoSender(t *testing.T) {
	t.Parallel()
	w := refStart(t, "--ui", "control")
	c := w.refStdio()
	var toks []string
	for _, sender := range []string{refSender, "root", "atm-daemon", refTeam} {
		tok := token("REFNOSENDER")
		toks = append(toks, tok)
		refCheckAck(t, "sender "+sender, c.refRequest(c.refID("nosender"), refFields{"sender": sender, "content": tok + " hello"}),
			"rejected", "unauthorized", "sender: \""+sender+"\" is not allowed")
	}
	refCheckAck(t, "an interrupt", c.refRequest(c.refID("nosender"), refFields{"type": "control.interrupt.request", "signal": "interrupt", "content": nil}),
		"rejected", "unauthorized", "is not allowed")
	// Capabilities carry no identity: still answered.
	c.write(`{"type":"control.capabilities.request","v":1,"request_id":"caps-1"}`)
	if l := c.refAwait("control.capabilities", isType("control.capabilities")); get(l, "request_id").Str != "caps-1" {
		t.Errorf("the capabilities answer: %s", l)
	}
	w.refClose()
	// The CLI reads its input to the end before it exits: a prompt written
	// to it would have been sent to the model.
	if n := w.api.Count(); n != 0 {
		t.Errorf("the fake model got %d requests", n)
	}
	w.refNeverInjected(toks)
	for _, l := range append(c.backlog, c.seen...) {
		if typeOf(l) == "control.worker.turn" || typeOf(l) == "control.worker.text" {
			t.Errorf("a turn ran: %.300s", l)
		}
	}
}
