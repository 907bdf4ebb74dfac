package e2e

// Bad input from the UI, against the real CLI: lines the CLI exits on
// (drop-in), bytes that are not UTF-8 (every dialect), model names and
// session ids the CLI would take and then fail on. docs/reliability/input.md
// lists what each test holds.

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/mapping/dropin"
)

// killerLines are valid JSON lines the CLI (2.1.330) exits on with code 1,
// written straight to it; the last two read a duplicated key as the CLI
// does (the last one wins).
var killerLines = []string{
	`null`,
	`{"type":"user"}`,
	`{"type":"user","message":null}`,
	`{"type":"user","message":{"role":"assistant","content":"hi"}}`,
	`{"type":"control_request"}`,
	`{"type":"control_request","request_id":"r1","request":null}`,
	`{"type":"keep_alive","type":"user"}`,
	`{"type":"user","message":{"role":"user","content":"hi"},"message":null}`,
}

// dropped counts ccbridge's warnings about dropped host lines, and fails t
// when a warning holds secret (previews are for the debug level only).
func dropped(t *testing.T, stderr, secret string) int {
	t.Helper()
	n := 0
	for _, l := range strings.Split(stderr, "\n") {
		if gjson.Get(l, "level").Str != "WARN" {
			continue
		}
		if secret != "" && strings.Contains(l, secret) {
			t.Errorf("a warning holds the line's text: %s", l)
		}
		if strings.HasPrefix(gjson.Get(l, "msg").Str, "host line dropped") {
			n++
		}
	}
	return n
}

// TestDropInKillerLinesDropped: each line the CLI would exit on is dropped
// with a warning that holds none of its text at the default log level (at
// debug level the warning carries a preview: TestFaultNoPayloadInWarnings),
// and the next prompt gets its answer from the same CLI.
func dropInKillerLinesDropped(t *testing.T, b *bridge) {
	logged := len(b.stderr.String())
	secret := token("secret")
	lines := append(append([]string(nil), killerLines...),
		`{"type":"user","message":{"role":"assistant","content":"`+secret+`"}}`, `[]`, `"a string"`)
	for _, l := range lines {
		b.send(l)
	}
	b.prompt("hello there")
	out := b.until("the result", isType("result"))
	res := out[len(out)-1]
	if gjson.GetBytes(res, "subtype").Str != "success" || gjson.GetBytes(res, "ccbridge_synthetic").Exists() {
		t.Fatalf("the CLI did not answer the prompt after the bad lines: %s\nstderr: %s", res, tail(b.stderr.String(), 2000))
	}
	// Each line was dropped (and logged) before the prompt went on.
	if n := dropped(t, b.stderr.String()[logged:], secret); n != len(lines) {
		t.Errorf("%d warnings about dropped lines, want %d", n, len(lines))
	}
}

// corpusLines reads testdata/dropin/NAME, one host line a line.
func corpusLines(t *testing.T, name string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "testdata", "dropin", name))
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		lines = append(lines, bytes.Clone(sc.Bytes()))
	}
	return lines
}

// TestDropInInputCorpus writes every line of the corpus to the real CLI
// through ccbridge: each is either dropped by ccbridge (drop.ndjson, with
// a warning) or read by the CLI without it exiting (pass.ndjson: every user
// line among them gets its result, and so does a prompt after them all).
// It runs in TestDropInOneSession's session: the warnings it counts are
// those logged after its start, once as many as drop.ndjson's lines have
// come (as noPayloadCheck waits for its own).
func dropInInputCorpus(t *testing.T, b *bridge) {
	pass, drop := corpusLines(t, "pass.ndjson"), corpusLines(t, "drop.ndjson")
	from := b.stderrLen()
	for i := 0; i < len(pass) || i < len(drop); i++ {
		if i < len(drop) {
			if v := dropin.Check(drop[i]); v.OK() {
				t.Fatalf("the filter passes a line of drop.ndjson: %s", drop[i])
			}
			b.send(string(drop[i]))
		}
		if i < len(pass) {
			if v := dropin.Check(pass[i]); !v.OK() {
				t.Fatalf("the filter drops a line of pass.ndjson (%s): %s", v.Reason, pass[i])
			}
			b.send(string(pass[i]))
		}
	}
	// The CLI runs the prompts queued behind a turn as one turn, so the
	// last prompt is known by its uuid, which its result names.
	last := uuid.NewString()
	b.send(`{"type":"user","session_id":"","uuid":"` + last + `","message":{"role":"user","content":"hello there"},"parent_tool_use_id":null}`)
	out := b.until("the last prompt's result", func(l []byte) bool {
		return isType("result")(l) && (bytes.Contains(l, []byte(last)) || gjson.GetBytes(l, "ccbridge_synthetic").Exists())
	})
	if res := out[len(out)-1]; gjson.GetBytes(res, "ccbridge_synthetic").Exists() {
		t.Fatalf("the CLI exited: %s\nstderr: %s", res, tail(b.stderr.String(), 3000))
	}
	for deadline := time.Now().Add(30 * time.Second); dropped(t, b.stderr.String()[from:], "") < len(drop); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			break
		}
	}
	if n := dropped(t, b.stderr.String()[from:], ""); n != len(drop) {
		t.Errorf("%d warnings about dropped lines, want %d", n, len(drop))
	}
}

// allUTF8 fails t for every line that is not UTF-8.
func allUTF8(t *testing.T, lines [][]byte) {
	t.Helper()
	for _, l := range lines {
		if !utf8.Valid(l) {
			t.Errorf("ccbridge wrote bytes that are not UTF-8: %q", l)
		}
	}
}

// badID is a JSON-RPC request whose id holds the byte 0xff.
const badID = "{\"jsonrpc\":\"2.0\",\"id\":\"a\xffb\",\"method\":\"initialize\",\"params\":{}}"

// TestRPCInvalidUTF8IsParseError: a line with a byte that is not UTF-8
// gets -32700 with a null id, nothing ccbridge writes holds such a byte,
// and the connection goes on.
func rpcInvalidUTF8IsParseError(t *testing.T, s *rpcSession) {
	c := s.c
	c.send(badID)
	l, err := c.read(rpcWait)
	if err != nil {
		t.Fatalf("no answer to the line: %v", err)
	}
	if gjson.GetBytes(l, "error.code").Int() != -32700 || gjson.GetBytes(l, "id").Raw != "null" {
		t.Errorf("want -32700 with id null, got %q", l)
	}
	c.initialize("")
	if _, _, status := c.runText("hello " + token("utf8")); status != "completed" {
		t.Errorf("the run after the bad line ended %q", status)
	}
	allUTF8(t, c.seen)
}

// TestACPInvalidUTF8IsParseError: the same for acp.
func TestACPInvalidUTF8IsParseError(t *testing.T) {
	t.Parallel()
	b := startBridge(t, []string{"--ui", "acp"})
	b.send(badID)
	got := b.until("the answer", func(l []byte) bool { return !gjson.GetBytes(l, "method").Exists() })
	l := got[len(got)-1]
	if gjson.GetBytes(l, "error.code").Int() != -32700 || gjson.GetBytes(l, "id").Raw != "null" {
		t.Errorf("want -32700 with id null, got %q", l)
	}
	b.send(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1}}`)
	more := b.until("the initialize answer", func(l []byte) bool { return gjson.GetBytes(l, "id").Raw == "2" })
	if r := more[len(more)-1]; !gjson.GetBytes(r, "result").Exists() {
		t.Errorf("initialize after the bad line: %s", r)
	}
	allUTF8(t, append(got, more...))
}

// TestIPCInvalidUTF8IsParseError: the same for ipc, whose parse error is
// invalid_json.
func ipcInvalidUTF8IsParseError(t *testing.T, s *ipcSession) {
	b, sid := s.b, s.sid
	b.send("{\"type\":\"user_message\",\"text\":\"caf\xe9\"}")
	e := expectError(t, b, "invalid_json", "")
	lines := turn(t, b, "hello "+token("utf8"))
	complete(t, lines)
	noSessionChange(t, lines, sid)
	allUTF8(t, append(lines, e))
}

// TestRPCModelSetRefusesBadNames: model.set with a name the CLI would take
// and then fail every prompt with is -32602, and the next run works.
func rpcModelSetRefusesBadNames(t *testing.T, s *rpcSession) {
	c := s.c
	c.initialize("")
	for _, name := range []string{`claude-\u0001x`, "claude-sonnet 4", "claude-" + strings.Repeat("x", 300)} {
		c.rpcError(c.call("model.set", `{"name":"`+name+`"}`), -32602)
	}
	if _, _, status := c.runText("hello " + token("model")); status != "completed" {
		t.Errorf("the run after the refused names ended %q", status)
	}
}

// TestIPCModelChangeAndResumeRefuseBadValues: model_change with a control
// character and session_command resume with an id that is not a UUID are
// invalid_value; resume of a well-formed id with no session is
// session_not_found; each before the CLI is touched, and the next turn
// runs in the same session.
func ipcModelChangeAndResumeRefuseBadValues(t *testing.T, s *ipcSession) {
	b, sid := s.b, s.sid
	complete(t, turn(t, b, "hello "+token("first")))
	pid := b.childPID()
	b.send(`{"type":"model_change","model":"claude-\u0001x"}`)
	expectError(t, b, "invalid_value", "model")
	b.send(`{"type":"session_command","command":"resume","session_id":"not-a-session\u0001"}`)
	expectError(t, b, "invalid_value", "session_id")
	b.send(`{"type":"session_command","command":"resume","session_id":"5a4b0c1d-0000-4000-8000-000000000000"}`)
	expectError(t, b, "session_not_found", "")
	lines := turn(t, b, "hello "+token("second"))
	complete(t, lines)
	noSessionChange(t, lines, sid)
	if b.childPID() != pid {
		t.Errorf("the CLI was replaced (pid %d, then %d)", pid, b.childPID())
	}
}
