package dropin

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"unicode/utf8"
)

// corpus reads one of the files of testdata/dropin: the lines the real
// CLI reads (pass.ndjson) and the lines ccbridge drops, many of which the
// CLI exits on (drop.ndjson). The end-to-end test TestDropInInputCorpus
// writes both to the real CLI through ccbridge.
func corpus(t testing.TB, name string) [][]byte {
	t.Helper()
	data, err := os.ReadFile("../../testdata/dropin/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		lines = append(lines, bytes.Clone(sc.Bytes()))
	}
	if len(lines) == 0 {
		t.Fatalf("%s is empty", name)
	}
	return lines
}

func TestCheckCorpus(t *testing.T) {
	for _, l := range corpus(t, "pass.ndjson") {
		if v := Check(l); !v.OK() {
			t.Errorf("dropped (%s), want passed: %s", v.Reason, l)
		}
	}
	for _, l := range corpus(t, "drop.ndjson") {
		if v := Check(l); v.OK() {
			t.Errorf("passed (type %q), want dropped: %q", v.Type, l)
		}
	}
}

func TestCheckReasons(t *testing.T) {
	cases := []struct {
		line string
		want Verdict
	}{
		{`{"type":"user","message":{"role":"user","content":"hi"}}`, Verdict{Type: "user"}},
		{`{"type":"keep_alive","type":"user"}`, Verdict{Type: "user", Reason: NoMessage}},
		{`{"type":"user","type":"keep_alive"}`, Verdict{Type: "keep_alive"}},
		{`{"typ\u0065":"control_request","request":{}}`, Verdict{Type: "control_request"}},
		{"{\"type\":\"user\",\"x\":\"\xff\"}", Verdict{Reason: NotUTF8}},
		{`{"type":"user"`, Verdict{Reason: NotJSON}},
		{`null`, Verdict{Reason: NotObject}},
		{`["user"]`, Verdict{Reason: NotObject}},
		{`{"type":5}`, Verdict{Reason: NoType}},
		{`{"type":"bash_command","command":"true"}`, Verdict{Type: "bash_command", Reason: InternalType}},
		{`{"type":"assistant","message":"x"}`, Verdict{Type: "assistant", Reason: InternalType}},
		{`{"type":"mystery_type","x":1}`, Verdict{Type: "mystery_type"}},
		{`{"type":"user","message":{"role":"assistant"}}`, Verdict{Type: "user", Reason: NotUserRole}},
		{`{"type":"control_request","request":"interrupt"}`, Verdict{Type: "control_request", Reason: NoRequest}},
		{`{"type":"control_response"}`, Verdict{Type: "control_response"}},
	}
	for _, c := range cases {
		if got := Check([]byte(c.line)); got != c.want {
			t.Errorf("Check(%q) = %+v, want %+v", c.line, got, c.want)
		}
	}
}

// reference is Check written another way: encoding/json, which, like the
// CLI's JSON.parse, rejects what is not JSON and keeps a duplicated key's
// last value.
func reference(line []byte) (typ string, ok bool) {
	if !utf8.Valid(line) {
		return "", false
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.InputOffset() != int64(len(bytes.TrimRight(line, " \t\r"))) {
		return "", false
	}
	if _, err := dec.Token(); err == nil {
		return "", false // more than one value
	}
	obj, isObj := v.(map[string]any)
	if !isObj {
		return "", false
	}
	typ, _ = obj["type"].(string)
	switch typ {
	case "user":
		m, _ := obj["message"].(map[string]any)
		role, _ := m["role"].(string)
		return typ, m != nil && role == "user"
	case "control_request":
		_, isObj := obj["request"].(map[string]any)
		return typ, isObj
	case "assistant", "system", "bash_command", "queued_notification", "session_notice", "workflow_launch":
		return typ, false
	}
	_, isString := obj["type"].(string)
	return typ, isString
}

func TestCheckMatchesReference(t *testing.T) {
	for _, name := range []string{"pass.ndjson", "drop.ndjson"} {
		for _, l := range corpus(t, name) {
			typ, ok := reference(l)
			if v := Check(l); v.OK() != ok || (ok && v.Type != typ) {
				t.Errorf("%s: Check = %+v, reference = %q %v: %q", name, v, typ, ok, l)
			}
		}
	}
}

// FuzzCheck holds the filter's decisions: it never panics, decides the same
// line the same way every time, agrees with the reference reading (which
// reads as the CLI reads) and with the golden corpus it is seeded with.
func FuzzCheck(f *testing.F) {
	golden := map[string]bool{}
	for _, l := range corpus(f, "pass.ndjson") {
		golden[string(l)] = true
		f.Add(l)
	}
	for _, l := range corpus(f, "drop.ndjson") {
		golden[string(l)] = false
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.ContainsAny(line, "\n") {
			return // one line at a time: framing splits on '\n'
		}
		v := Check(line)
		if again := Check(bytes.Clone(line)); again != v {
			t.Fatalf("unstable: %+v then %+v for %q", v, again, line)
		}
		if want, known := golden[string(line)]; known && v.OK() != want {
			t.Fatalf("golden says pass=%v, Check says %+v for %q", want, v, line)
		}
		typ, ok := reference(line)
		if v.OK() != ok || (ok && v.Type != typ) {
			t.Fatalf("Check = %+v, reference = %q %v for %q", v, typ, ok, line)
		}
		if v.OK() && (!utf8.Valid(line) || !json.Valid(line)) {
			t.Fatalf("passed a line that is not UTF-8 JSON: %q", line)
		}
	})
}
