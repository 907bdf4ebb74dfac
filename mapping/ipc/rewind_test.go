package ipc_test

import (
	"testing"

	"github.com/ccbridge/ccbridge/mapping/ipc"
)

// TestRewindFromUI: rewind takes turns (a whole number of 1 or more) or
// user_message_id, never both, and the booleans files and dry_run; it is
// an ordinary command with no stdin line.
func TestRewindFromUI(t *testing.T) {
	t.Parallel()
	tr := ipc.New(ipc.Options{})
	for _, tc := range []struct {
		line string
		want ipc.Rewind
	}{
		{`{"type":"rewind","turns":1}`, ipc.Rewind{Turns: 1}},
		{`{"type":"rewind","turns":3,"files":true,"dry_run":true}`, ipc.Rewind{Turns: 3, Files: true, DryRun: true}},
		{`{"type":"rewind","user_message_id":"u1","files":false,"turns":null}`, ipc.Rewind{UserMessageID: "u1"}},
	} {
		cmd, err := tr.FromUI([]byte(tc.line))
		if err != nil || cmd.Kind != ipc.CmdRewind || cmd.Rewind != tc.want || cmd.Stdin != nil || cmd.Control() {
			t.Errorf("%s: %+v, %v; want %+v", tc.line, cmd, err, tc.want)
		}
	}
	for _, tc := range []struct {
		line string
		code ipc.ErrorCode
	}{
		{`{"type":"rewind"}`, ipc.CodeMissingField},
		{`{"type":"rewind","turns":0}`, ipc.CodeInvalidValue},
		{`{"type":"rewind","turns":-1}`, ipc.CodeInvalidValue},
		{`{"type":"rewind","turns":1.5}`, ipc.CodeInvalidValue},
		{`{"type":"rewind","turns":"1"}`, ipc.CodeWrongType},
		{`{"type":"rewind","turns":1,"user_message_id":"u1"}`, ipc.CodeInvalidValue},
		{`{"type":"rewind","user_message_id":""}`, ipc.CodeInvalidValue},
		{`{"type":"rewind","user_message_id":7}`, ipc.CodeWrongType},
		{`{"type":"rewind","turns":1,"files":"yes"}`, ipc.CodeWrongType},
		{`{"type":"rewind","turns":1,"dry_run":1}`, ipc.CodeWrongType},
	} {
		if _, err := tr.FromUI([]byte(tc.line)); !isCode(err, tc.code) {
			t.Errorf("%s: %v, want %s", tc.line, err, tc.code)
		}
	}
}

func TestAppendRewindResult(t *testing.T) {
	t.Parallel()
	got := string(ipc.AppendRewindResult(nil, ipc.RewindResult{DryRun: true, UserMessageID: "u2", Prompt: "WRITEFILE \"x\"", Turns: 1, Kept: 1, Files: []string{"/w/a.txt"}, Deletions: 1}))
	want := `{"type":"rewind_result","ipc_version":2,"dry_run":true,"user_message_id":"u2","prompt":"WRITEFILE \"x\"","turns":1,"kept":1,"files":["/w/a.txt"],"insertions":0,"deletions":1}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	got = string(ipc.AppendRewindResult(nil, ipc.RewindResult{UserMessageID: "u1", Turns: 2}))
	want = `{"type":"rewind_result","ipc_version":2,"dry_run":false,"user_message_id":"u1","prompt":"","turns":2,"kept":0,"files":null,"insertions":0,"deletions":0}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
