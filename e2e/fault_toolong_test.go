package e2e

// CLI lines over the line cap (--max-cli-line), against the real CLI: the
// fake model's "BIGTEXT n" answers n bytes of text, which the CLI repeats
// in its assistant line and in its result line, so with a 64 KiB cap both
// are dropped. The result line is the turn's end: every dialect must still
// end the turn, saying the line was too long, and go on with the prompts
// queued behind it.

import (
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/mapping/rpc"
)

const (
	tooLongCap    = "65536"
	tooLongPrompt = "BIGTEXT 300000" // text, assistant and result lines of about 300 KB
)

// TestFaultToolongIPC: the turn whose result line was dropped ends with a
// turn_complete saying so, and the prompt sent behind it gets its own.
func ipcToolong(t *testing.T, s *ipcSession) {
	b := s.b
	b.send(userMessage(tooLongPrompt))
	b.send(userMessage("hello"))
	var terminals [][]byte
	tooLong := 0
	ipcUntil(t, b, "two terminal messages", func(l []byte) bool {
		if typeOf(l) == "error" && get(l, "code").Str == "line_too_long" {
			tooLong++
		}
		if isTerminal(l) {
			terminals = append(terminals, l)
		}
		return len(terminals) == 2
	})
	if tooLong < 2 {
		t.Errorf("%d line_too_long errors, want the assistant line's and the result's", tooLong)
	}
	big := gjson.ParseBytes(terminals[0])
	if big.Get("type").Str != "turn_complete" || !big.Get("is_error").Bool() ||
		!strings.Contains(big.Get("errors.0").Str, "result line of") || !strings.Contains(big.Get("errors.0").Str, "--max-cli-line") {
		t.Errorf("the turn whose result was too long: %.600s", terminals[0])
	}
	if typeOf(terminals[1]) != "turn_complete" || get(terminals[1], "is_error").Bool() {
		t.Errorf("the turn queued behind it: %.600s", terminals[1])
	}
	for _, l := range quiet(t, b, ipcQuiet) {
		if isTerminal(l) {
			t.Errorf("a third terminal message: %.300s", l)
		}
	}
}

// TestFaultToolongACP: the session/prompt whose result line was dropped is
// answered (with the stop reason the dropped result held, after a
// _ccbridge/error line_too_long), and so is the prompt queued behind it.
// The answer must not wait for the CLI's idle notice, which a user can
// turn off (CLAUDE_CODE_SDK_READS_SESSION_STATE=0 is kept as it is).
func TestFaultToolongACP(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, state string }{{"idle-notice", ""}, {"no-idle-notice", "0"}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var env []string
			if c.state != "" {
				env = append(env, "CLAUDE_CODE_SDK_READS_SESSION_STATE="+c.state)
			}
			faultToolongACP(t, env)
		})
	}
}

func faultToolongACP(t *testing.T, env []string) {
	b := startBridge(t, []string{"--ui", "acp", "--max-cli-line", tooLongCap}, env...)
	b.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	acpWait(t, b, `1`)
	b.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":` + jsonStr(b.dir) + `,"mcpServers":[]}}`)
	sid := acpWait(t, b, `2`).Get("result.sessionId").Str
	if sid == "" {
		t.Fatal("session/new gave no session id")
	}
	prompt := func(id, text string) {
		b.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"session/prompt","params":{"sessionId":` + jsonStr(sid) +
			`,"prompt":[{"type":"text","text":` + jsonStr(text) + `}]}}`)
	}
	prompt("3", tooLongPrompt)
	prompt("4", "hello")
	var notes []gjson.Result
	first := acpWaitNoting(t, b, `3`, &notes)
	second := acpWaitNoting(t, b, `4`, &notes)
	tooLong := 0
	for _, n := range notes {
		if n.Get("method").Str == "_ccbridge/error" && n.Get("params.code").Str == "line_too_long" {
			tooLong++
		}
	}
	if tooLong < 2 {
		t.Errorf("%d _ccbridge/error line_too_long notifications, want the assistant line's and the result's", tooLong)
	}
	if first.Get("result.stopReason").Str != "end_turn" {
		t.Errorf("the prompt whose result was too long: %s", first.Raw)
	}
	if second.Get("result.stopReason").Str != "end_turn" {
		t.Errorf("the prompt queued behind it: %s", second.Raw)
	}
}

// acpWait reads ccbridge's lines until the response to id.
func acpWait(t *testing.T, b *bridge, id string) gjson.Result {
	t.Helper()
	var notes []gjson.Result
	return acpWaitNoting(t, b, id, &notes)
}

// acpWaitNoting is acpWait that appends the notifications read on the
// way to notes. It answers nothing the agent asks.
func acpWaitNoting(t *testing.T, b *bridge, id string, notes *[]gjson.Result) gjson.Result {
	t.Helper()
	for {
		l, ok := b.next(30 * time.Second)
		if !ok {
			t.Fatalf("ccbridge's output ended before the response to %s", id)
		}
		m := gjson.ParseBytes(l)
		switch {
		case m.Get("method").Exists():
			*notes = append(*notes, m)
		case m.Get("id").Raw == id:
			return m
		}
	}
}

// TestFaultToolongRPC: the run whose result line was dropped ends with
// status error saying so, and the next run works (rpc refuses a second
// run.start while a run is active, so nothing queues behind it).
func rpcToolong(t *testing.T, s *rpcSession) {
	c := s.c
	c.initialize("")
	run1 := c.start(tooLongPrompt)
	lines, status := c.finishRun(run1)
	if status != rpc.StatusError {
		t.Fatalf("%s ended %s", run1, status)
	}
	if msg := gjson.GetBytes(lines[len(lines)-1], "params.message").Str; !strings.Contains(msg, "result line of") || !strings.Contains(msg, "--max-cli-line") {
		t.Errorf("the run whose result was too long: %s", lines[len(lines)-1])
	}
	if findLine(lines, func(l []byte) bool {
		return gjson.GetBytes(l, "method").Str == "runtime.error" && gjson.GetBytes(l, "params.error.data.reason").Str == "cli_line_too_long"
	}) == nil {
		t.Errorf("no runtime.error cli_line_too_long")
	}
	if run2, _, status := c.runText("hello"); status != rpc.StatusCompleted {
		t.Errorf("the next run %s ended %s", run2, status)
	}
}

// TestFaultToolongDropIn: drop-in mode has no CLI line cap (it takes the
// CLI's own arguments, and streams a line of any size): the long result
// line reaches the host whole and ends the turn.
func dropInToolong(t *testing.T, b *bridge) {
	b.send(userLine(tooLongPrompt))
	lines := b.until("the result", isType("result"))
	res := lines[len(lines)-1]
	if len(res) < 300000 || gjson.GetBytes(res, "is_error").Bool() || len(gjson.GetBytes(res, "result").Str) != 300000 {
		t.Errorf("result line of %d bytes: %.300s", len(res), res)
	}
}
