package jsonrpc

import (
	"testing"

	"github.com/tidwall/gjson"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in      string
		kind    Kind
		id      string
		method  string
		problem string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"a":1}}`, KindRequest, "1", "initialize", ""},
		{`{"jsonrpc":"2.0","id":"x","method":"m"}`, KindRequest, `"x"`, "m", ""},
		{`{"jsonrpc":"2.0","id":null,"method":"m"}`, KindRequest, "", "m", ""},
		{`{"jsonrpc":"2.0","method":"session/cancel","params":{}}`, KindNotification, "", "session/cancel", ""},
		{`{"jsonrpc":"2.0","id":7,"result":{"ok":true}}`, KindResponse, "7", "", ""},
		{`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no"}}`, KindErrorResponse, "7", "", ""},
		{`{this is not json`, KindInvalid, "", "", "parse error"},
		{`[1,2]`, KindInvalid, "", "", "a JSON-RPC message must be an object"},
		{`{"id":1,"method":"m"}`, KindInvalid, "1", "", `"jsonrpc" must be "2.0"`},
		{`{"jsonrpc":"2.0","id":{},"method":"m"}`, KindInvalid, "", "", "id must be a string, a number or null"},
		{`{"jsonrpc":"2.0","id":1,"method":5}`, KindInvalid, "1", "", "method must be a non-empty string"},
		{`{"jsonrpc":"2.0","id":1,"method":"m","params":3}`, KindInvalid, "1", "m", "params must be an object or an array"},
		{`{"jsonrpc":"2.0","id":1}`, KindInvalid, "1", "", "neither a request, a notification nor a response"},
	}
	for _, c := range cases {
		m := Parse([]byte(c.in))
		if m.Kind != c.kind || m.ID != c.id || m.Method != c.method || m.Problem != c.problem {
			t.Errorf("Parse(%s) = kind %d id %q method %q problem %q; want %d %q %q %q",
				c.in, m.Kind, m.ID, m.Method, m.Problem, c.kind, c.id, c.method, c.problem)
		}
	}
	if m := Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a": [1, 2]}}`)); m.Params.Raw != `{"a": [1, 2]}` {
		t.Errorf("params not kept raw: %s", m.Params.Raw)
	}
}

func TestAppend(t *testing.T) {
	cases := map[string]string{
		string(AppendResult(nil, "1", `{"a":1}`)):                           `{"jsonrpc":"2.0","id":1,"result":{"a":1}}`,
		string(AppendResult(nil, `"s"`, "")):                                `{"jsonrpc":"2.0","id":"s","result":null}`,
		string(AppendError(nil, "", CodeParseError, `bad "x"`, "")):         `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad \"x\""}}`,
		string(AppendError(nil, "2", -32002, "gone", `{"uri":"u"}`)):        `{"jsonrpc":"2.0","id":2,"error":{"code":-32002,"message":"gone","data":{"uri":"u"}}}`,
		string(AppendRequest(nil, "3", "session/request_permission", `{}`)): `{"jsonrpc":"2.0","id":3,"method":"session/request_permission","params":{}}`,
		string(AppendNotification(nil, "session/update", `{"x":1}`)):        `{"jsonrpc":"2.0","method":"session/update","params":{"x":1}}`,
		string(AppendNotification(nil, "ping", "")):                         `{"jsonrpc":"2.0","method":"ping"}`,
	}
	for got, want := range cases {
		if got != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
		if !gjson.Valid(got) {
			t.Errorf("not JSON: %s", got)
		}
	}
	if code, msg := ErrorCode(Parse([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}`))); code != -32602 || msg != "bad" {
		t.Errorf("ErrorCode = %d %q", code, msg)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":{}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"a","result":1}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		m := Parse(in)
		if m.Kind == KindInvalid && m.Problem == "" {
			t.Fatalf("invalid without a problem: %q", in)
		}
		if m.Kind != KindInvalid && !gjson.ValidBytes(in) {
			t.Fatalf("accepted invalid JSON: %q", in)
		}
		// Every answer built from it is valid JSON.
		if out := AppendError(nil, m.ID, CodeInvalidRequest, m.Problem, ""); !gjson.ValidBytes(out) {
			t.Fatalf("error answer not JSON: %s", out)
		}
	})
}

func TestProblemCode(t *testing.T) {
	for line, want := range map[string]int{
		`{"jsonrpc":"2.0",`:                     CodeParseError,
		`[1,2]`:                                 CodeInvalidRequest,
		`{"jsonrpc":"1.0","id":1,"method":"x"}`: CodeInvalidRequest,
	} {
		if got := Parse([]byte(line)).ProblemCode(); got != want {
			t.Errorf("%s: code %d, want %d", line, got, want)
		}
	}
}

func TestParseInvalidUTF8(t *testing.T) {
	for _, l := range []string{
		"{\"jsonrpc\":\"2.0\",\"id\":\"a\xffb\",\"method\":\"initialize\",\"params\":{}}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"t\":\"\xc3\"}}",
	} {
		m := Parse([]byte(l))
		if m.Kind != KindInvalid || m.ProblemCode() != CodeParseError || m.ID != "" {
			t.Errorf("Parse(%q) = %+v, want a parse error with no id", l, m)
		}
	}
}
