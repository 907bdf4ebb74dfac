package ipc

// Steering in the ipc dialect, against the fake "steer" CLI, which plays
// what the real CLI 2.1.330 does with a user message written during a
// turn (docs/protocol/ipc.md, "steer"): taken into the running turn, it is
// replayed, reported completed before the turn's result, and named in
// that result; one that comes too late runs as a turn of its own.

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
	// steer: reads a prompt and two more user messages (the steers), then
	// plays: the second taken into the first's turn (replay, lifecycle
	// completed before the result, both named in the result), the third
	// as a turn of its own after it.
	adaptertest.Register("steer", func() {
		stdin := bufio.NewReaderSize(os.Stdin, 1<<20)
		var ids []string
		for len(ids) < 3 {
			line, err := stdin.ReadBytes('\n')
			if err != nil {
				os.Exit(9)
			}
			if gjson.GetBytes(line, "type").Str != "user" {
				continue
			}
			ids = append(ids, gjson.GetBytes(line, "uuid").Str)
			if len(ids) == 1 {
				fmt.Println(`{"type":"system","subtype":"init","session_id":"sess-s"}`)
				fmt.Println(`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"working "}},"session_id":"sess-s","parent_tool_use_id":null,"api_message_id":"msg_1"}`)
			}
		}
		say := func(format string, a ...any) { fmt.Printf(format+"\n", a...) }
		replay := func(id, text string) {
			say(`{"type":"user","message":{"role":"user","content":[{"type":"text","text":%q}]},"session_id":"sess-s","parent_tool_use_id":null,"uuid":%q,"isReplay":true}`, text, id)
		}
		lifecycle := func(id, state string) {
			say(`{"type":"command_lifecycle","command_uuid":%q,"state":%q,"session_id":"sess-s"}`, id, state)
		}
		replay(ids[1], "two")
		lifecycle(ids[1], "started")
		lifecycle(ids[1], "completed")
		say(`{"type":"result","subtype":"success","is_error":false,"result":"done one","session_id":"sess-s","total_cost_usd":0.1,"terminal_reason":"completed","user_message_uuids":[%q,%q]}`, ids[0], ids[1])
		lifecycle(ids[0], "completed")
		lifecycle(ids[2], "started")
		replay(ids[2], "three")
		say(`{"type":"result","subtype":"success","is_error":false,"result":"done three","session_id":"sess-s","total_cost_usd":0.2,"terminal_reason":"completed","user_message_uuids":[%q]}`, ids[2])
		lifecycle(ids[2], "completed")
		for {
			if _, err := stdin.ReadBytes('\n'); err != nil {
				return
			}
		}
	})
}

func TestIPCSteer(t *testing.T) {
	s := &IPC{EchoInput: true, Settings: adapter.Settings{
		Child:            adaptertest.Config(t, "steer", nil, "HOME="+t.TempDir(), "CLAUDE_CONFIG_DIR="),
		InterruptTimeout: 5 * time.Second,
	}}
	h := adaptertest.StartRunner(t, s.Run)
	if l := h.NextOf("session_init"); !gjson.GetBytes(l, `capabilities.#(=="steer")`).Exists() {
		t.Errorf("session_init does not name the steer capability: %s", l)
	}
	// No turn runs: refused, not echoed, nothing reaches the CLI (the fake
	// would count it).
	h.Send(`{"type":"steer","text":"too early"}`)
	if l := h.Next(); gjson.GetBytes(l, "type").Str != "error" || gjson.GetBytes(l, "code").Str != "no_turn" || !gjson.GetBytes(l, "recoverable").Bool() {
		t.Fatalf("a steer with no turn: %s, want error no_turn", l)
	}
	h.Send(`{"type":"user_message","text":"one"}`)
	h.NextOf("assistant_text")
	h.Send(`{"type":"steer","text":"two"}`)
	h.Send(`{"type":"steer","text":"three"}`)
	// The first steer is taken (steer_taken, no terminal message of its
	// own, no result_lost for its lifecycle's early completed); the
	// second came too late and ends with the turn it ran as.
	var got, echoes []string
	for len(got) < 3 {
		l := h.Next()
		switch typ := gjson.GetBytes(l, "type").Str; {
		case typ == "steer_taken":
			got = append(got, typ)
		case typ == "steer":
			echoes = append(echoes, gjson.GetBytes(l, "text").Str)
		default:
			if s, ok := ipcTerminal(l); ok {
				got = append(got, s+":"+gjson.GetBytes(l, "result").Str)
			}
		}
	}
	if want := "steer_taken turn_complete/:done one turn_complete/:done three"; strings.Join(got, " ") != want {
		t.Fatalf("got %q, want %q", strings.Join(got, " "), want)
	}
	if strings.Join(echoes, " ") != "two three" {
		t.Errorf("the steers echoed: %q, want the two taken (the refused one is not)", echoes)
	}
	h.In.Close()
	for _, l := range h.Rest() {
		if s, ok := ipcTerminal(l); ok {
			t.Errorf("a third terminal message %s: %s", s, l)
		}
		if gjson.GetBytes(l, "type").Str == "steer_taken" {
			t.Errorf("a second steer_taken: %s", l)
		}
	}
}
