package rpc

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/jsonrpc"
	"github.com/tidwall/gjson"
)

// FuzzTranslator: any CLI line and any UI line, fed to a Translator with a
// run in flight and requests open, never panic and always give
// single-line valid JSON, and nothing reaches the CLI from the UI except
// an answer to a request that was open.
func FuzzTranslator(f *testing.F) {
	for _, s := range []string{
		lineDelta, lineText, lineToolUse, lineCanUse, lineAsk, lineCancelReq, lineToolResult, lineResult, lineMsgStart, lineMsgStop,
		`{"jsonrpc":"2.0","id":"ui-1","result":{"ok":true,"remember":true}}`,
		`{"jsonrpc":"2.0","id":"ui-2","result":{"ids":["1","other"]}}`,
		`{"jsonrpc":"2.0","id":"ui-2","result":{"value":"x"}}`,
		`{"jsonrpc":"2.0","id":"ui-1","error":{"code":1,"message":"m"}}`,
		`{"type":"result"}`, `{`, `[]`, `null`, "",
	} {
		f.Add([]byte(s), []byte(`{"jsonrpc":"2.0","id":"ui-1","result":{"ok":false}}`))
	}
	f.Fuzz(func(t *testing.T, cli, ui []byte) {
		tr := New(Options{Diagnostics: true})
		var out Output
		tr.BeginRun("run-1", &out)
		tr.SentPrompt("run-1")
		for _, l := range []string{lineMsgStart, lineToolUse, lineCanUse, lineAsk} {
			tr.FromCLI(mapping.Route([]byte(l)), 1, &out)
		}
		out.Reset()
		if gjson.ValidBytes(cli) {
			tr.FromCLI(mapping.Route(cli), 2, &out)
		}
		open := tr.PendingRequests()
		m := jsonrpc.Parse(ui)
		if m.Kind == jsonrpc.KindResponse || m.Kind == jsonrpc.KindErrorResponse {
			before := len(out.CLI)
			tr.FromUI(m, 3, &out)
			if len(out.CLI) > before && open == 0 {
				t.Fatalf("an answer reached the CLI with no request open")
			}
		}
		tr.CancelRun("run-1", "", &out)
		tr.ChildExited("gone", 4, &out)
		for _, l := range append(out.UI, out.CLI...) {
			if !json.Valid(l) || strings.IndexByte(string(l), '\n') >= 0 {
				t.Fatalf("bad line %q", l)
			}
		}
	})
}

// FuzzParams: every params parser takes any JSON without panicking, and
// an error is always -32602 with a message.
func FuzzParams(f *testing.F) {
	for _, s := range []string{
		`{"protocol_version":"0","client":{"name":"a","version":"1"}}`,
		`{"input":{"type":"text","text":"hi"},"session_id":"00000000-0000-4000-8000-000000000000"}`,
		`{"command":"ls","timeout_seconds":1e309}`, `{"argv":["a","b"]}`, `{"limit":1e20}`, `[]`, `"x"`,
	} {
		f.Add([]byte(s))
	}
	parsers := []func(gjson.Result) *Error{initErr, startErr, cancelErr, listErr, histErr, modelListErr, modelSetErr,
		mcpErr, skillsErr, inspectErr, shellErr, reqCancelErr, uiCtxErr}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !gjson.ValidBytes(data) {
			return
		}
		p := gjson.ParseBytes(data)
		for _, parse := range parsers {
			if e := parse(p); e != nil && (e.Code != CodeInvalidParams || e.Message == "") {
				t.Fatalf("error %+v", e)
			}
		}
	})
}

// FuzzHistory: any session file content replays without panicking into
// valid lines.
func FuzzHistory(f *testing.F) {
	f.Add([]byte(`{"type":"user","message":{"content":"hi"}}` + "\n" + `{"type":"assistant","message":{"content":[{"type":"text","text":"x"}]}}`))
	f.Add([]byte(`{"type":"system","subtype":"compact_boundary"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		h := History{SessionID: "s", MaxRuns: 3}
		var s mapping.SessionSummary
		for _, l := range strings.Split(string(data), "\n") {
			h.Line([]byte(l))
			s.Line([]byte(l))
		}
		lines, _, _ := h.Result(50)
		for _, l := range lines {
			if !json.Valid(l) {
				t.Fatalf("bad line %q", l)
			}
		}
		_ = s.LastUserMessage()
		ParseSkillFile(data)
	})
}
