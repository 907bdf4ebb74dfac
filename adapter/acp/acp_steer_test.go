package acp

// _session/steering against the fake "acpsteer" CLI, which plays
// what the real CLI 2.1.330 does with a user message written during a
// turn: taken into the turn when a tool call follows (the result names
// it), else run as a turn of its own after the result.

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/internal/adaptertest"
)

func init() {
	// acpsteer: a prompt's turn waits for one more user message (the
	// steer); then, for a prompt holding TAKEN, one result naming both
	// (the steer taken into the turn), else a result naming the prompt
	// and, after it, a turn of the steer's own with its own result.
	adaptertest.Register("acpsteer", func() {
		out := func(format string, a ...any) { fmt.Printf(format+"\n", a...) }
		const sid = `"session_id":"fake","parent_tool_use_id":null`
		delta := func(text string) {
			out(`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%q}},"api_message_id":"msg_1",%s}`, text, sid)
		}
		result := func(uuids ...string) {
			out(`{"type":"result","subtype":"success","is_error":false,"terminal_reason":"completed","stop_reason":"end_turn","result":"","total_cost_usd":0.1,"user_message_uuids":["%s"],%s}`, strings.Join(uuids, `","`), sid)
		}
		stdin := bufio.NewReaderSize(os.Stdin, 1<<20)
		var prompt, text string
		started := false
		for {
			line, err := stdin.ReadBytes('\n')
			if err != nil {
				return
			}
			switch gjson.GetBytes(line, "type").Str {
			case "control_request":
				out(`{"type":"control_response","response":{"subtype":"success","request_id":%q,"response":{"commands":[],"models":[{"value":"default","displayName":"Default"}],"current_permission_mode":"default"}}}`,
					gjson.GetBytes(line, "request_id").Str)
			case "user":
				id := gjson.GetBytes(line, "uuid").Str // (none on a prompt)
				if !started {
					started = true
					prompt, text = id, gjson.GetBytes(line, "message.content.0.text").Str
					out(`{"type":"system","subtype":"init","model":"m","cwd":"/",%s}`, sid)
					delta("working ")
					continue
				}
				if strings.Contains(text, "TAKEN") {
					delta("steered ")
					result(prompt, id)
				} else {
					result(prompt)
					delta("late ")
					result(id)
				}
				started = false
			}
		}
	})
}

func TestACPSteer(t *testing.T) {
	for _, c := range []struct {
		name, text string
		results    int // the CLI results the prompt spans
	}{{"taken", "TAKEN", 1}, {"late", "LATE", 2}} {
		t.Run(c.name, func(t *testing.T) {
			a := &ACP{Settings: adapter.Settings{Child: adaptertest.Config(t, "acpsteer", nil), InterruptTimeout: 5 * time.Second}, ClaudeDir: t.TempDir()}
			h := &acpHost{Host: adaptertest.StartRunner(t, a.Run), dir: t.TempDir(), claude: a.ClaudeDir, log: func() string { return "" }}
			if init := h.answer(h.call("initialize", `{"protocolVersion":1}`)); !init.Get("result._meta.steering.supported").Bool() {
				t.Errorf("initialize does not advertise steering: %s", init.Raw)
			}
			sid := h.newSession()
			steer := func(meta string) gjson.Result {
				return h.answer(h.call("_session/steering", `{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"mind the docs"}]`+meta+`}`))
			}
			const promptRequired = `,"_meta":{"steering":{"idleBehavior":"promptRequired"}}`
			if r := steer(promptRequired); r.Get("result").Raw != `{"outcome":"promptRequired","reason":"noRunningTurn"}` {
				t.Fatalf("a steer with no prompt, promptRequired: %s", r.Raw)
			}
			if r := h.answer(h.call("_session/steering", `{"sessionId":"`+sid+`","prompt":[]}`)); r.Get("error.code").Int() != -32602 {
				t.Errorf("a steer with no content: %s", r.Raw)
			}
			p := h.prompt(sid, c.text)
			h.until(func(l gjson.Result) bool { return l.Get("params.update.sessionUpdate").Str == "agent_message_chunk" })
			if r := steer(""); r.Get("result").Raw != `{"outcome":"injected"}` {
				t.Fatalf("a steer during the prompt: %s", r.Raw)
			}
			var said []string
			ans := h.until(func(l gjson.Result) bool {
				if l.Get("params.update.sessionUpdate").Str == "agent_message_chunk" {
					said = append(said, l.Get("params.update.content.text").Str)
				}
				return l.Get("id").Raw == p
			})
			if ans.Get("result.stopReason").Str != "end_turn" {
				t.Errorf("the prompt's answer: %s", ans.Raw)
			}
			// The late steer's own turn is part of the prompt: its text
			// comes before the prompt's answer.
			want := map[int]string{1: "steered ", 2: "late "}[c.results]
			if strings.Join(said, "") != want {
				t.Errorf("the prompt's text after the steer: %q, want %q", said, want)
			}
			if r := steer(promptRequired); r.Get("result.outcome").Str != "promptRequired" {
				t.Errorf("a steer after the prompt's answer, promptRequired: %s", r.Raw)
			}
			// Without idleBehavior the content runs as a prompt of its own.
			if r := steer(""); r.Get("result").Raw != `{"outcome":"startedNewTurn"}` {
				t.Errorf("a steer after the prompt's answer: %s", r.Raw)
			}
			h.until(func(l gjson.Result) bool {
				return l.Get("params.update.sessionUpdate").Str == "agent_message_chunk" && l.Get("params.update.content.text").Str == "working "
			})
		})
	}
}
