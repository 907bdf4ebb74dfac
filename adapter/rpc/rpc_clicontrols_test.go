package rpc

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/mapping/rpc"
)

// workspace.suggest, mcp.reconnect, mcp.toggle and session.title each
// ask the CLI one control request and shape its answer; bad params are
// -32602 before anything reaches the CLI.
func TestRPCCLIControls(t *testing.T) {
	h, log, save := startRPCFakeHome(t)
	ask := func(id, method, params string) []byte {
		h.T.Helper()
		h.Send(`{"jsonrpc":"2.0","id":"` + id + `","method":"` + method + `","params":` + params + `}`)
		return h.Until(reply(`"` + id + `"`))
	}
	if r := ask("s1", "workspace.suggest", `{"query":"he"}`); gjson.GetBytes(r, "result").Raw != `{"suggestions":[{"path":"hello.txt","kind":"file"}],"cwd":"/","truncated":false}` {
		t.Errorf("workspace.suggest: %s", r)
	}
	if r := ask("s2", "workspace.suggest", `{"query":"he","limit":0}`); gjson.GetBytes(r, "error.code").Int() != rpc.CodeInvalidParams {
		t.Errorf("workspace.suggest with limit 0: %s", r)
	}
	if r := ask("m1", "mcp.reconnect", `{"id":"broken"}`); gjson.GetBytes(r, "result").Raw != `{"id":"broken","ok":false,"last_error":"ENOENT: no such file or directory, posix_spawn 'stdio'"}` {
		t.Errorf("mcp.reconnect of a server that fails again: %s", r)
	}
	if r := ask("m2", "mcp.reconnect", `{"id":"nosuch"}`); gjson.GetBytes(r, "error.code").Int() != rpc.CodeInvalidParams ||
		!strings.Contains(gjson.GetBytes(r, "error.message").Str, "Server not found: nosuch") {
		t.Errorf("mcp.reconnect of an unknown server: %s", r)
	}
	if r := ask("m3", "mcp.toggle", `{"id":"docs","enabled":false}`); gjson.GetBytes(r, "result").Raw != `{"id":"docs","ok":true}` {
		t.Errorf("mcp.toggle: %s", r)
	}
	for id, p := range map[string]string{"b1": `{"id":"docs"}`, "b2": `{"id":"docs","enabled":"no"}`, "b3": `{"enabled":true}`} {
		if r := ask(id, "mcp.toggle", p); gjson.GetBytes(r, "error.code").Int() != rpc.CodeInvalidParams {
			t.Errorf("mcp.toggle %s: %s", p, r)
		}
	}
	if r := ask("t1", "session.title", `{"description":"fix the parser","persist":true}`); gjson.GetBytes(r, "result").Raw != `{"title":"Fake model session","persisted":true}` {
		t.Errorf("session.title: %s", r)
	}
	if r := ask("t2", "session.title", `{"description":" "}`); gjson.GetBytes(r, "error.code").Int() != rpc.CodeInvalidParams {
		t.Errorf("session.title without a description: %s", r)
	}
	var got []string
	for _, l := range strings.Split(log(), "\n") {
		if s, ok := strings.CutPrefix(l, "stdin "); ok && gjson.Get(s, "type").Str == "control_request" && gjson.Get(s, "request.subtype").Str != "initialize" {
			got = append(got, gjson.Get(s, "request").Raw)
		}
	}
	want := `{"subtype":"file_suggestions","query":"he"}
{"subtype":"mcp_reconnect","serverName":"broken"}
{"subtype":"mcp_reconnect","serverName":"nosuch"}
{"subtype":"mcp_toggle","serverName":"docs","enabled":false}
{"subtype":"generate_session_title","description":"fix the parser","persist":true}`
	if strings.Join(got, "\n") != want {
		t.Errorf("the CLI got\n%s\nwant\n%s", strings.Join(got, "\n"), want)
	}

	// session.list shows the CLI's title: a /rename over an AI title.
	titled, plain := uuid.NewString(), uuid.NewString()
	save(titled, `{"type":"user","message":{"role":"user","content":"hi"}}`, `{"type":"ai-title","aiTitle":"AI made"}`, `{"type":"custom-title","customTitle":"Renamed"}`)
	save(plain, `{"type":"user","message":{"role":"user","content":"hello"}}`)
	r := ask("l1", "session.list", `{}`)
	for _, c := range []struct{ sid, title string }{{titled, "Renamed"}, {plain, ""}} {
		s := gjson.GetBytes(r, `result.sessions.#(session_id=="`+c.sid+`")`)
		if !s.Exists() || s.Get("title").Str != c.title || (c.title == "" && s.Get("title").Exists()) {
			t.Errorf("session.list entry of %s: %s, want title %q", c.sid, s.Raw, c.title)
		}
	}
}
