package ipc_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/ccbridge/ccbridge/mapping/ipc"
)

// FuzzFromUI: FromUI never panics; a command's stdin line and an error's ipc
// line are always single-line valid JSON.
func FuzzFromUI(f *testing.F) {
	for _, s := range []string{
		`{"type":"user_message","text":"hello"}`,
		`{"type":"user_message","text":"look","attachments":[{"kind":"image","media_type":"image/png","content":"` + png1x1 + `"},{"kind":"text","name":"a","content":"b"}]}`,
		`{"type":"tool_approval","request_id":"R1","decision":"allow","updatedInput":{"command":"y"},"updatedPermissions":[]}`,
		`{"type":"tool_approval","request_id":"R1","decision":"deny","message":"no","interrupt":true}`,
		`{"type":"question_answer","request_id":"Q1","answers":{"Which color do you prefer?":"Blue","Which sizes?":["S","M"]}}`,
		`{"type":"interrupt","cancel_queued":true}`,
		`{"type":"permission_mode","mode":"plan"}`,
		`{"type":"model_change","model":"default"}`,
		`{"type":"stop_task","task_id":"t"}`,
		`{"type":"session_command","command":"fork","session_id":"s"}`,
		`{"type":"nope"}`, `{`, `[]`, `null`, "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr := ipc.New(ipc.Options{})
		feed(t, tr, canUse, askLine)
		cmd, err := tr.FromUI(data)
		if err != nil {
			var e *ipc.Error
			if !errors.As(err, &e) {
				t.Fatalf("untyped error %v", err)
			}
			if l := e.AppendIPC(nil); !json.Valid(l) {
				t.Fatalf("invalid error line %q", l)
			}
			if cmd.Stdin != nil {
				t.Fatalf("stdin with an error")
			}
			return
		}
		if cmd.Kind == ipc.CmdSessionCommand {
			if cmd.Stdin != nil {
				t.Fatal("session command with stdin")
			}
			return
		}
		if !json.Valid(cmd.Stdin) {
			t.Fatalf("invalid stdin line %q for %q", cmd.Stdin, data)
		}
		for _, c := range cmd.Stdin {
			if c == '\n' {
				t.Fatalf("newline in stdin line %q", cmd.Stdin)
			}
		}
	})
}
