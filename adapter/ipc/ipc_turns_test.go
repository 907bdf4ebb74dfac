package ipc

// One terminal message per prompt in the ipc dialect, against the fake
// "merge" CLI (internal/adaptertest), which merges queued prompts into one
// turn the way the real CLI 2.1.330 does.

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
	"github.com/ccbridge/ccbridge/session"
)

func init() {
	// merge: holds every prompt until it has read three, then plays what
	// FAKE_PLAY says with their uuids: "merge" (the first prompt's turn,
	// then the other two merged into one turn), "cancel" (waits for an
	// interrupt with cancel_queued: the queued two are cancelled, the
	// first turn aborted), "lost" (the first turn's result is missing, its
	// command_lifecycle completed comes; then the merged turn), "eof"
	// (waits for the end of its input and exits 1 without a result).
	adaptertest.Register("merge", func() {
		stdin := bufio.NewReaderSize(os.Stdin, 1<<20)
		var ids []string
		read := func() []byte {
			line, err := stdin.ReadBytes('\n')
			if err != nil {
				return nil
			}
			return line
		}
		for len(ids) < 3 {
			line := read()
			if line == nil {
				os.Exit(9)
			}
			if gjson.GetBytes(line, "type").Str != "user" {
				continue
			}
			ids = append(ids, gjson.GetBytes(line, "uuid").Str)
			if len(ids) == 1 {
				fmt.Println(`{"type":"system","subtype":"init","session_id":"sess-m"}`)
				fmt.Println(`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"partial "}},"session_id":"sess-m","parent_tool_use_id":null,"api_message_id":"msg_1"}`)
			}
		}
		result := func(extra string, uuids ...string) {
			fmt.Printf(`{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"sess-m","total_cost_usd":0.1,"terminal_reason":"completed","user_message_uuids":["%s"]%s}`+"\n",
				strings.Join(uuids, `","`), extra)
		}
		lifecycle := func(state string, uuids ...string) {
			for _, id := range uuids {
				fmt.Printf(`{"type":"command_lifecycle","command_uuid":%q,"state":%q,"session_id":"sess-m"}`+"\n", id, state)
			}
		}
		switch os.Getenv("FAKE_PLAY") {
		case "merge", "lost":
			if os.Getenv("FAKE_PLAY") == "merge" {
				result("", ids[0])
			}
			lifecycle("completed", ids[0])
			fmt.Println(`{"type":"system","subtype":"init","session_id":"sess-m"}`)
			result("", ids[1], ids[2])
			lifecycle("completed", ids[1], ids[2])
		case "cancel":
			for {
				line := read()
				if line == nil {
					os.Exit(9)
				}
				if gjson.GetBytes(line, "request.subtype").Str == "interrupt" {
					lifecycle("cancelled", ids[1], ids[2])
					fmt.Printf(`{"type":"control_response","response":{"subtype":"success","request_id":%q,"response":{"still_queued":[],"cancelled":["%s","%s"]}}}`+"\n",
						gjson.GetBytes(line, "request_id").Str, ids[1], ids[2])
					fmt.Printf(`{"type":"result","subtype":"error_during_execution","is_error":true,"result":"","session_id":"sess-m","total_cost_usd":0.1,"terminal_reason":"aborted_streaming","user_message_uuids":[%q]}`+"\n", ids[0])
					lifecycle("cancelled", ids[0])
					break
				}
			}
		case "eof":
			for read() != nil {
			}
			fmt.Fprintln(os.Stderr, "fatal: the fake CLI fell over at the end of its input")
			os.Exit(1)
		}
		for read() != nil {
		}
	})
}

// startMerge runs an ipc session against the fake "merge" CLI playing
// play, sends three prompts, and returns the host.
func startMerge(t *testing.T, play string) *adaptertest.Host {
	t.Helper()
	s := &IPC{Settings: adapter.Settings{
		Child:            adaptertest.Config(t, "merge", nil, "FAKE_PLAY="+play, "HOME="+t.TempDir(), "CLAUDE_CONFIG_DIR="),
		InterruptTimeout: 5 * time.Second,
	}}
	h := adaptertest.StartRunner(t, s.Run)
	h.NextOf("session_init")
	for _, p := range []string{"one", "two", "three"} {
		h.Send(`{"type":"user_message","text":"` + p + `"}`)
	}
	return h
}

// ipcTerminal reports whether l is a terminal message, and names it.
func ipcTerminal(l []byte) (string, bool) {
	typ := gjson.GetBytes(l, "type").Str
	switch {
	case typ == "turn_complete" || typ == "turn_cancelled":
	case typ == "error" && !gjson.GetBytes(l, "recoverable").Bool():
	default:
		return "", false
	}
	s := typ + "/" + gjson.GetBytes(l, "code").Str + gjson.GetBytes(l, "reason").Str
	if gjson.GetBytes(l, "merged").Bool() {
		s += "/merged"
	}
	return s, true
}

// terminalsOf reads n terminal messages and returns their names.
func terminalsOf(h *adaptertest.Host, n int) string {
	h.T.Helper()
	var ts []string
	for len(ts) < n {
		if s, ok := ipcTerminal(h.Next()); ok {
			ts = append(ts, s)
		}
	}
	return strings.Join(ts, " ")
}

func TestIPCMergedPromptsEachGetATerminalMessage(t *testing.T) {
	h := startMerge(t, "merge")
	if got, want := terminalsOf(h, 3), "turn_complete/ turn_complete/ turn_complete//merged"; got != want {
		t.Fatalf("terminal messages %q, want %q", got, want)
	}
	// Nothing more: the count did not drift.
	h.In.Close()
	for _, l := range h.Rest() {
		if s, ok := ipcTerminal(l); ok {
			t.Errorf("a fourth terminal message %s: %s", s, l)
		}
	}
}

func TestIPCCancelQueuedPromptsEachGetATerminalMessage(t *testing.T) {
	h := startMerge(t, "cancel")
	h.NextOf("assistant_text")
	h.Send(`{"type":"interrupt","cancel_queued":true}`)
	// The CLI reports the queued prompts cancelled before the running
	// turn's result: their terminal messages wait for it, in order.
	want := "turn_cancelled/aborted_streaming turn_cancelled/cancel_queued turn_cancelled/cancel_queued"
	if got := terminalsOf(h, 3); got != want {
		t.Fatalf("terminal messages %q, want %q", got, want)
	}
}

func TestIPCLostResultEndsThePrompt(t *testing.T) {
	h := startMerge(t, "lost")
	if got, want := terminalsOf(h, 3), "error/result_lost turn_complete/ turn_complete//merged"; got != want {
		t.Fatalf("terminal messages %q, want %q", got, want)
	}
}

func TestIPCChildExitAfterEndOfInputEndsEveryPrompt(t *testing.T) {
	h := startMerge(t, "eof")
	h.NextOf("assistant_text")
	h.In.Close()
	var ts []string
	for _, l := range h.Rest() {
		if s, ok := ipcTerminal(l); ok {
			ts = append(ts, s)
			if !strings.Contains(gjson.GetBytes(l, "stderr").Str, "fell over") {
				t.Errorf("no stderr tail: %s", l)
			}
		}
	}
	if got, want := strings.Join(ts, " "), "error/child_exited error/child_exited error/child_exited"; got != want {
		t.Fatalf("terminal messages %q, want %q", got, want)
	}
}

// A user_message that waits for a respawn which never comes (the UI's
// input ends first) still gets a terminal message.
func TestIPCLineHeldForARespawnGetsATerminalMessage(t *testing.T) {
	h, _ := startIPC(t, session.Options{})
	h.NextOf("session_init")
	h.Send(`{"type":"user_message","text":"HANG"}`)
	h.NextOf("assistant_text")
	// One write: the message reaches the loop while the old child stops,
	// and the input ends before the new one could start.
	h.Send(`{"type":"session_command","command":"new"}` + "\n" + `{"type":"user_message","text":"held"}`)
	h.In.Close()
	var ts []string
	for _, l := range h.Rest() {
		if s, ok := ipcTerminal(l); ok {
			ts = append(ts, s)
		}
	}
	if got := strings.Join(ts, " "); got != "turn_cancelled/session_command error/shutting_down" {
		t.Fatalf("terminal messages after the end of input %q, want one error/shutting_down", got)
	}
}
