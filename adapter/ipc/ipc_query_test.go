package ipc

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/internal/adaptertest"
	"github.com/ccbridge/ccbridge/session"
)

// A query reaches the CLI as its control request and comes back as one
// query_result with the UI's id: the CLI's answer copied, or its error;
// a bad query is refused before anything is written to the CLI.
func TestIPCQuery(t *testing.T) {
	h, log := startIPC(t, session.Options{})
	if l := h.NextOf("session_init"); !strings.Contains(gjson.GetBytes(l, "capabilities").Raw, `"query"`) {
		t.Fatalf("session_init does not name the query capability: %s", l)
	}
	h.Send(`{"type":"query","id":"q1","query":"file_suggestions","text":"he"}`)
	r := h.NextOf("query_result")
	if gjson.GetBytes(r, "id").Str != "q1" || gjson.GetBytes(r, "query").Str != "file_suggestions" || !gjson.GetBytes(r, "ok").Bool() ||
		gjson.GetBytes(r, "result").Raw != `{"suggestions":[{"path":"hello.txt"}],"cwd":"/"}` {
		t.Fatalf("file_suggestions: %s", r)
	}
	h.Send(`{"type":"query","id":"q2","query":"mcp_reconnect","server":"nosuch"}`)
	r = h.NextOf("query_result")
	if gjson.GetBytes(r, "id").Str != "q2" || gjson.GetBytes(r, "ok").Bool() || gjson.GetBytes(r, "code").Str != "control_request_failed" ||
		gjson.GetBytes(r, "error").Str != "Server not found: nosuch" {
		t.Fatalf("a refused mcp_reconnect: %s", r)
	}
	// A body-less success is an empty result.
	h.Send(`{"type":"query","id":"q3","query":"mcp_toggle","server":"docs","enabled":false}`)
	if r = h.NextOf("query_result"); gjson.GetBytes(r, "id").Str != "q3" || !gjson.GetBytes(r, "ok").Bool() || gjson.GetBytes(r, "result").Raw != `{}` {
		t.Fatalf("mcp_toggle: %s", r)
	}
	for _, bad := range []struct{ line, code, field string }{
		{`{"type":"query","query":"mcp_status"}`, "missing_field", "id"},
		{`{"type":"query","id":"x","query":"rewind"}`, "invalid_value", "query"},
		{`{"type":"query","id":"x","query":"mcp_toggle","server":"docs"}`, "missing_field", "enabled"},
		{`{"type":"query","id":"x","query":"mcp_toggle","server":"docs","enabled":"yes"}`, "wrong_type", "enabled"},
		{`{"type":"query","id":"x","query":"mcp_reconnect","server":""}`, "invalid_value", "server"},
		{`{"type":"query","id":"x","query":"session_title"}`, "missing_field", "description"},
		{`{"type":"query","id":"x","query":"file_suggestions","text":3}`, "wrong_type", "text"},
	} {
		h.Send(bad.line)
		e := h.NextOf("error")
		if gjson.GetBytes(e, "code").Str != bad.code || gjson.GetBytes(e, "field").Str != bad.field {
			t.Errorf("%s: %s, want %s on %s", bad.line, e, bad.code, bad.field)
		}
	}
	h.Send(`{"type":"query","id":"q4","query":"session_title","description":"fix the parser","persist":true}`)
	if r = h.NextOf("query_result"); gjson.GetBytes(r, "id").Str != "q4" || !gjson.GetBytes(r, "ok").Bool() {
		t.Fatalf("session_title: %s", r)
	}
	want := []string{
		`{"subtype":"file_suggestions","query":"he"}`,
		`{"subtype":"mcp_reconnect","serverName":"nosuch"}`,
		`{"subtype":"mcp_toggle","serverName":"docs","enabled":false}`,
		`{"subtype":"generate_session_title","description":"fix the parser","persist":true}`,
	}
	var got []string
	for _, l := range strings.Split(log(), "\n") {
		if s, ok := strings.CutPrefix(l, "stdin "); ok && gjson.Get(s, "type").Str == "control_request" && gjson.Get(s, "request.subtype").Str != "initialize" {
			got = append(got, gjson.Get(s, "request").Raw)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the CLI got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A query the CLI does not answer in time, and one asked while no CLI
// runs, each get their one failed query_result; the session goes on.
func TestIPCQueryTimeoutAndNoCLI(t *testing.T) {
	s := &IPC{Settings: adapter.Settings{
		Child:            adaptertest.Config(t, "session", nil, "FAKE_SILENT=1", "FAKE_LOG="+filepath.Join(t.TempDir(), "log"), "HOME="+t.TempDir(), "CLAUDE_CONFIG_DIR="),
		InterruptTimeout: 300 * time.Millisecond,
		ControlTimeout:   200 * time.Millisecond,
	}}
	h := adaptertest.StartRunner(t, s.Run)
	h.NextOf("session_init")
	h.Send(`{"type":"query","id":"slow","query":"context_usage"}`)
	r := h.NextOf("query_result")
	if gjson.GetBytes(r, "id").Str != "slow" || gjson.GetBytes(r, "ok").Bool() || gjson.GetBytes(r, "code").Str != "control_timeout" {
		t.Fatalf("unanswered query: %s", r)
	}
	h.Send(`{"type":"user_message","text":"DIE"}`)
	h.NextOf("error")
	h.Send(`{"type":"query","id":"dead","query":"mcp_status"}`)
	r = h.NextOf("query_result")
	if gjson.GetBytes(r, "id").Str != "dead" || gjson.GetBytes(r, "code").Str != "no_session" {
		t.Fatalf("query with no CLI: %s", r)
	}
	h.Send(`{"type":"user_message","text":"again"}`)
	if l := h.NextOf("turn_complete"); gjson.GetBytes(l, "result").Str != "ok" {
		t.Fatalf("the session did not go on: %s", l)
	}
}
