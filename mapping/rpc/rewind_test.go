package rpc

import (
	"testing"

	"github.com/tidwall/gjson"
)

// TestParseSessionRewind: turns (1 or more) or user_message_id, exactly
// one; files and dry_run booleans; anything else -32602.
func TestParseSessionRewind(t *testing.T) {
	t.Parallel()
	ok := map[string]SessionRewindParams{
		`{"turns":1}`: {Turns: 1},
		`{"turns":2,"files":true,"dry_run":true}`:            {Turns: 2, Files: true, DryRun: true},
		`{"user_message_id":"u1","session_id":"s"}`:          {UserMessageID: "u1", SessionID: "s"},
		`{"user_message_id":"u1","turns":null}`:              {UserMessageID: "u1"},
		`{"turns":1,"files":false,"dry_run":null}`:           {Turns: 1},
		`{"turns":1,"session_id":null,"user_message_id":""}`: {Turns: 1},
	}
	for params, want := range ok {
		got, err := ParseSessionRewind(gjson.Parse(params))
		if err != nil || got != want {
			t.Errorf("%s: %+v, %v; want %+v", params, got, err, want)
		}
	}
	for _, params := range []string{`{}`, `{"turns":0}`, `{"turns":-1}`, `{"turns":1.5}`, `{"turns":"1"}`,
		`{"turns":1,"user_message_id":"u1"}`, `{"user_message_id":3}`, `{"turns":1,"files":"yes"}`, `{"turns":1,"dry_run":1}`} {
		if _, err := ParseSessionRewind(gjson.Parse(params)); err == nil || err.Code != CodeInvalidParams {
			t.Errorf("%s: %v, want -32602", params, err)
		}
	}
}

func TestAppendSessionRewindResult(t *testing.T) {
	t.Parallel()
	got := string(AppendSessionRewindResult(nil, `"7"`, SessionRewindResult{DryRun: true, UserMessageID: "u2", Prompt: "p", Turns: 1, Kept: 1, Files: []string{"/a", "/b"}, Deletions: 2}))
	want := `{"jsonrpc":"2.0","id":"7","result":{"dry_run":true,"user_message_id":"u2","prompt":"p","turns":1,"kept":1,"files":["/a","/b"],"insertions":0,"deletions":2}}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	got = string(AppendSessionRewindResult(nil, `8`, SessionRewindResult{UserMessageID: "u1", Turns: 2}))
	want = `{"jsonrpc":"2.0","id":8,"result":{"dry_run":false,"user_message_id":"u1","prompt":"","turns":2,"kept":0,"files":null,"insertions":0,"deletions":0}}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
