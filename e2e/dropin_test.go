package e2e

// End-to-end tests of drop-in mode (the test as the host, writing
// stream-json lines; the official Agent SDK through
// pathToClaudeCodeExecutable) and of `ccbridge --ui stream`. See
// harness_test.go.

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// TestDropInOneSession: the drop-in scenarios that leave the session as
// they found it (idle, in the same CLI), each a subtest named for the test
// it was alone, in one ccbridge and one CLI, turn after turn (see
// inOneSession): one CLI start for eleven rules, then the end of input
// that ended five of them (no line after the last result, exit 0). The
// first is the session's first turn; Permission/deny wants no written.txt
// before Permission/allow makes one; TestDropInInputCorpus, whose host
// lines the CLI reads without exiting but which may change its settings,
// comes after the others but the ten MiB lines; those come last, as every
// later turn would send them to the model again. The log level is the
// default (info), which TestDropInKillerLinesDropped is about.
func TestDropInOneSession(t *testing.T) {
	t.Parallel()
	open := func(t *testing.T) *bridge { return startBridge(t, cliFlags, "CCBRIDGE_LOG_LEVEL=info") }
	bind := func(b *bridge, t *testing.T) { b.t = t }
	inOneSession(t, open, bind,
		scenario[*bridge]{"TestDropInTextTurn", dropInTextTurn},
		scenario[*bridge]{"TestDropInNonJSONLineDropped", dropInNonJSONLineDropped},
		scenario[*bridge]{"TestDropInKillerLinesDropped", dropInKillerLinesDropped},
		scenario[*bridge]{"TestDropInPermission/deny", dropInPermission(false)},
		scenario[*bridge]{"TestDropInPermission/allow", dropInPermission(true)},
		scenario[*bridge]{"TestDropInHostInterrupt", dropInHostInterrupt},
		scenario[*bridge]{"TestDropInSIGINT", dropInSIGINT},
		scenario[*bridge]{"TestFaultToolongDropIn", dropInToolong},
		scenario[*bridge]{"TestFaultNoPayloadInWarnings/dropin", func(t *testing.T, b *bridge) {
			noPayloadCheck(t, b, noPayloadDropIn, func() {})
		}},
		scenario[*bridge]{"TestDropInInputCorpus", dropInInputCorpus},
		scenario[*bridge]{"TestDropInTenMiBLines", dropInTenMiBLines},
		scenario[*bridge]{"end of input", dropInEndOfInput},
	)
}

// dropInEndOfInput: the end of input after the turns of the scenarios
// before (TestDropInTextTurn, TestDropInPermission,
// TestDropInNonJSONLineDropped, TestDropInKillerLinesDropped,
// TestDropInSIGINT, whose last turn succeeded): no line after the last
// result, exit 0.
func dropInEndOfInput(t *testing.T, b *bridge) {
	b.stdin.Close()
	if rest := b.rest(); len(rest) != 0 {
		t.Errorf("lines after the last result and EOF: %d", len(rest))
	}
	if code := b.wait(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
}

// TestDropInTextTurn: the session's first turn.
func dropInTextTurn(t *testing.T, b *bridge) {
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
}

// TestDropInPermission: a Write allowed (the file is there) or denied (no
// file, one permission denial).
func dropInPermission(allow bool) func(t *testing.T, b *bridge) {
	return func(t *testing.T, b *bridge) {
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
	}
}

func dropInHostInterrupt(t *testing.T, b *bridge) {
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

// TestDropInSIGINT: its last turn succeeds, so the end of input that
// follows exits 0 (dropInEndOfInput).
func dropInSIGINT(t *testing.T, b *bridge) {
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
}

func TestDropInDoubleSIGINTShutsDown(t *testing.T) {
	t.Parallel()
	b := startBridge(t, cliFlags)
	b.prompt("SLOW please")
	b.until("streaming text", func(l []byte) bool {
		return gjson.GetBytes(l, "event.delta.type").Str == "text_delta"
	})
	pid := b.childPID()
	b.cmd.Process.Signal(syscall.SIGINT)
	// The second SIGINT once the first has been taken (within the 2 s
	// window), so that the two are not merged into one.
	b.waitStderr(`"msg":"interrupting the current turn","reason":"SIGINT"`)
	b.cmd.Process.Signal(syscall.SIGINT)
	lines := b.rest()
	if n := count(lines, isType("result")); n != 1 {
		t.Errorf("%d results after two SIGINTs, want 1", n)
	}
	b.wait()
	groupGone(t, pid)
}

func TestDropInSIGTERMShutsDown(t *testing.T) {
	t.Parallel()
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

func TestDropInChildKilledMidTurn(t *testing.T) {
	t.Parallel()
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

func TestDropInStdinEOFMidTurn(t *testing.T) {
	t.Parallel()
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

func dropInNonJSONLineDropped(t *testing.T, b *bridge) {
	logged := len(b.stderr.String())
	b.send("{this is not json")
	b.send("\xff\xfe not utf-8")
	b.prompt("hello there")
	lines := b.until("the result", isType("result"))
	if res := lines[len(lines)-1]; gjson.GetBytes(res, "subtype").Str != "success" {
		t.Fatalf("the CLI did not survive a bad host line: %s", res)
	}
	if !strings.Contains(b.stderr.String()[logged:], "not valid JSON") {
		t.Errorf("no warning about the dropped line on stderr")
	}
}

func dropInTenMiBLines(t *testing.T, b *bridge) {
	const size = 10 << 20
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

// TestStreamOneSession: the `--ui stream` scenarios, each a subtest named
// for the test it was alone, in one ccbridge --ui stream --control and one
// CLI, one after the other (see inOneSession): one CLI start where they
// took two. TestDropInUIStream comes last: the CLI exits 1 at the end of
// input after an interrupted turn (TestControlSocketStream's last), 0
// after a turn that succeeded. The end of input then ends both: no line
// after the last result, exit 0 (TestDropInUIStream's checks).
func TestStreamOneSession(t *testing.T) {
	t.Parallel()
	open := func(t *testing.T) *ctlWorker { return ctlStart(t, ctlOpts{ui: "stream", socket: true}) }
	bind := func(w *ctlWorker, t *testing.T) {
		w.t, w.b.t = t, t
		useFakeAPI(t, w.b.api)
	}
	inOneSession(t, open, bind,
		scenario[*ctlWorker]{"TestControlSocketStream", ctlSocketStream},
		scenario[*ctlWorker]{"TestDropInUIStream", func(t *testing.T, w *ctlWorker) { dropInUIStream(t, w.b) }},
		scenario[*ctlWorker]{"end of input", func(t *testing.T, w *ctlWorker) { dropInEndOfInput(t, w.b) }},
	)
}

// TestDropInUIStream: `ccbridge --ui stream` gives the CLI the stream
// dialect's arguments itself (stream-json both ways, permission prompts
// over stdio, partial messages), and otherwise behaves as drop-in mode: a
// Write asked for and allowed, the turn's result (and exit 0 at EOF: see
// TestStreamOneSession).
func dropInUIStream(t *testing.T, b *bridge) {
	b.prompt("Please WRITEFILE now")
	lines := b.until("the permission request", isCanUseTool)
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(b.childPID()) + "/cmdline")
	for _, want := range []string{"--output-format\x00stream-json", "--input-format\x00stream-json", "--verbose",
		"--permission-prompt-tool\x00stdio", "--include-partial-messages"} {
		if !strings.Contains(string(cmdline), want) {
			t.Errorf("the CLI's arguments lack %q: %q", want, cmdline)
		}
	}
	req := lines[len(lines)-1]
	if tool := gjson.GetBytes(req, "request.tool_name").Str; tool != "Write" {
		t.Fatalf("permission asked for %q, want Write", tool)
	}
	path := gjson.GetBytes(req, "request.input.file_path").Str
	b.send(allowLine(gjson.GetBytes(req, "request_id").Str))
	lines = append(lines, b.until("the result", isType("result"))...)
	res := lines[len(lines)-1]
	if gjson.GetBytes(res, "subtype").Str != "success" || gjson.GetBytes(res, "is_error").Bool() {
		t.Fatalf("result: %s", res)
	}
	if count(lines, isTypeSub("system", "init")) != 1 || count(lines, isType("stream_event")) == 0 {
		t.Errorf("want one system/init and stream_event lines before the result")
	}
	if data, err := os.ReadFile(path); err != nil || string(data) != "hello world\n" || !fileIn(path, b.dir, "written.txt") {
		t.Errorf("the allowed Write left %q (%v) at %s, want it in %s", data, err, path, b.dir)
	}
}

func TestDropInAgentSDKWriteAllowed(t *testing.T) {
	t.Parallel()
	checkSDKWriteAllowed(t, agentSDK(t, "write"))
}

// checkSDKWriteAllowed checks the events of the SDK's "write" scenario: a
// Write the SDK's canUseTool allowed, its file written, a successful
// result.
func checkSDKWriteAllowed(t *testing.T, events []gjson.Result) {
	t.Helper()
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

func TestDropInAgentSDKInterrupt(t *testing.T) {
	t.Parallel()
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
