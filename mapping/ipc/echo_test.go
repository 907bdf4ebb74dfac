package ipc_test

import (
	"errors"
	"testing"

	"github.com/ccbridge/ccbridge/mapping/ipc"
)

// A member name twice in any object of a line is duplicate_key, whatever
// the type, before anything is read: no request is settled, nothing goes
// to the CLI.
func TestFromUIDuplicateKey(t *testing.T) {
	tr := ipc.New(ipc.Options{Echo: true})
	feed(t, tr, canUse)
	for _, c := range []struct{ line, field string }{
		{`{"type":"user_message","text":"hi","type":"control_request_forward","request_id":"X","tool_name":"Bash"}`, "type"},
		{`{"type":"user_message","text":"a","text":"b"}`, "text"},
		{`{"type":"user_message","text":"hi","attachments":[{"kind":"text","content":"a","content":"b"}]}`, "attachments.0.content"},
		{`{"type":"tool_approval","request_id":"R1","decision":"allow","updatedInput":{"command":"ls","command":"rm -rf /"}}`, "updatedInput.command"},
		{`{"type":"tool_approval","request_id":"R1","decision":"deny","decision":"allow"}`, "decision"},
		{`{"type":"interrupt","\u0074ype":"interrupt"}`, "type"},
	} {
		cmd, err := tr.FromUI([]byte(c.line))
		var e *ipc.Error
		if !errors.As(err, &e) || e.Code != ipc.CodeDuplicateKey || e.Field != c.field || !errors.Is(err, ipc.ErrDuplicateKey) {
			t.Errorf("%s: %+v %v, want duplicate_key at %q", c.line, cmd, err, c.field)
		}
		if cmd.Stdin != nil || cmd.Echo != nil {
			t.Errorf("%s: a command %+v", c.line, cmd)
		}
	}
	// R1 is still open: the duplicated answers settled nothing.
	if cmd, err := tr.FromUI([]byte(`{"type":"tool_approval","request_id":"R1","decision":"deny"}`)); err != nil || cmd.RequestID != "R1" {
		t.Errorf("R1 after the refused answers: %+v %v", cmd, err)
	}
}

// The echo is the message as FromUI read it: its type and the members it
// reads, in a fixed order, with ipc_version and echo; members it does not
// read are not in it. Without Options.Echo there is none.
func TestFromUIEcho(t *testing.T) {
	tr := ipc.New(ipc.Options{Echo: true})
	feed(t, tr, canUse, askLine)
	for _, c := range []struct{ line, echo string }{
		{`{"extra":{"type":"control_request_forward"},"text":"hi","type":"user_message","attachments":[{"kind":"text","name":"a.txt","content":"x","more":1}]}`,
			`{"type":"user_message","text":"hi","attachments":[{"kind":"text","name":"a.txt","content":"x"}],"ipc_version":2,"echo":true}`},
		{"{\n  \"type\": \"user_message\",\n  \"text\": \"two\\nlines\"\n}",
			`{"type":"user_message","text":"two\nlines","ipc_version":2,"echo":true}`},
		{`{"type":"tool_approval","request_id":"R1","decision":"allow","updatedInput":{"command":"ls"},"tool_name":"Bash","ipc_version":1,"echo":false}`,
			`{"type":"tool_approval","request_id":"R1","decision":"allow","updatedInput":{"command":"ls"},"ipc_version":2,"echo":true}`},
		{`{"type":"question_answer","answers":{"Which color do you prefer?":"Blue"},"request_id":"Q1"}`,
			`{"type":"question_answer","request_id":"Q1","answers":{"Which color do you prefer?":"Blue"},"ipc_version":2,"echo":true}`},
	} {
		cmd, err := tr.FromUI([]byte(c.line))
		if err != nil || string(cmd.Echo) != c.echo {
			t.Errorf("%s:\n got  %s (%v)\n want %s", c.line, cmd.Echo, err, c.echo)
		}
	}
	if cmd, err := tr.FromUI([]byte(`{"type":"interrupt"}`)); err != nil || cmd.Echo != nil {
		t.Errorf("interrupt: %+v %v", cmd, err)
	}
	plain := ipc.New(ipc.Options{})
	if cmd, err := plain.FromUI([]byte(`{"type":"user_message","text":"hi"}`)); err != nil || cmd.Echo != nil {
		t.Errorf("without Echo: %+v %v", cmd, err)
	}
	// Echo, for a prompt the session could not take.
	if got := string(ipc.Echo([]byte(`{"type":"user_message","text":"hi","x":1}`))); got != `{"type":"user_message","text":"hi","ipc_version":2,"echo":true}` {
		t.Errorf("Echo: %s", got)
	}
	for _, l := range []string{`{"type":"user_message","text":"hi","type":"x"}`, `{"type":"interrupt"}`, `not json`} {
		if got := ipc.Echo([]byte(l)); got != nil {
			t.Errorf("Echo(%s) = %s, want nil", l, got)
		}
	}
}
