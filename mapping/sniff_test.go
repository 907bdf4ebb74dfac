package mapping

import (
	"bytes"
	"testing"

	"github.com/tidwall/gjson"
)

func TestSniffer(t *testing.T) {
	cases := []struct{ in, typ, sid string }{
		{`{"type":"result","session_id":"s1"}`, "result", "s1"},
		{`{"duration_ms":1,"usage":{"type":"x","session_id":"inner"},"type":"result","session_id":"s2"}`, "result", "s2"},
		{`{"a":["type","session_id"],"type":"user"}`, "user", ""},
		{`{"a":"\"type\":\"fake\"","type":"assistant"}`, "assistant", ""},
		{`{"type" : "system" , "session_id" : "s3"}`, "system", "s3"},
		{`{"a":{"b":[{"type":"deep"}]},"x":1}`, "", ""},
		{`["type","result"]`, "", ""},
		{`{"type":"a\"b"}`, `a\"b`, ""},
	}
	for _, c := range cases {
		for _, split := range []int{1, 2, 3, 7, len(c.in)} {
			var s Sniffer
			s.Reset()
			for i := 0; i < len(c.in); i += split {
				s.Feed([]byte(c.in[i:min(i+split, len(c.in))]))
			}
			if string(s.Type) != c.typ || string(s.SessionID) != c.sid {
				t.Errorf("%s (pieces of %d): type %q session %q, want %q %q", c.in, split, s.Type, s.SessionID, c.typ, c.sid)
			}
		}
	}
}

// FuzzSniffer checks the Sniffer against gjson on valid JSON objects whose
// type and session_id are plain strings.
func FuzzSniffer(f *testing.F) {
	f.Add([]byte(`{"type":"result","session_id":"s1"}`), 3)
	f.Add([]byte(`{"x":{"type":"no"},"type":"yes","session_id":"id"}`), 1)
	f.Fuzz(func(t *testing.T, in []byte, split int) {
		if split <= 0 || split > len(in) {
			split = len(in) + 1
		}
		var s Sniffer
		for i := 0; i < len(in); i += split {
			s.Feed(in[i:min(i+split, len(in))])
		}
		if !gjson.ValidBytes(in) || !gjson.ParseBytes(in).IsObject() || bytes.IndexByte(in, '\\') >= 0 {
			return // escapes are compared raw by the Sniffer, decoded by gjson
		}
		for key, got := range map[string][]byte{"type": s.Type, "session_id": s.SessionID} {
			want := gjson.GetBytes(in, key)
			if want.Type != gjson.String || len(want.Raw) > maxSniffValue || want.Raw[1:len(want.Raw)-1] != want.Str {
				continue // absent, not a string, long, or escaped: not compared
			}
			if n := countKey(in, key); n != 1 {
				continue // duplicate keys: gjson takes the first, the Sniffer the last
			}
			if string(got) != want.Str {
				t.Fatalf("%s: sniffed %s %q, gjson %q", in, key, got, want.Str)
			}
		}
	})
}

func countKey(in []byte, key string) int {
	n := 0
	gjson.ParseBytes(in).ForEach(func(k, _ gjson.Result) bool {
		if k.Str == key {
			n++
		}
		return true
	})
	return n
}
