package jsonw

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzString(f *testing.F) {
	for _, s := range []string{"", "plain", "q\"b\\n\n\t\x00\x1f<>&", "\u2028\u2029é😀", "\xff\xfe bad", "a\xc3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := String(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		want := s
		if !utf8.ValidString(s) {
			// each invalid byte becomes one U+FFFD
			var sb strings.Builder
			for i := 0; i < len(s); {
				r, n := utf8.DecodeRuneInString(s[i:])
				if r == utf8.RuneError && n == 1 {
					sb.WriteRune('\ufffd')
				} else {
					sb.WriteString(s[i : i+n])
				}
				i += n
			}
			want = sb.String()
		}
		if got != want {
			t.Fatalf("round trip %q -> %q, want %q", s, got, want)
		}
	})
}

func TestWriters(t *testing.T) {
	b := []byte("{")
	b = Key(b, "a")
	b = Raw(b, "")
	b = Key(b, "b")
	b = Bool(b, true)
	b = Key(b, "c")
	b = Int(b, -12)
	b = Key(b, "d")
	b = Float(b, 0.00044800000000000005)
	b = Key(b, "e")
	b = String(b, "<x> & \u2028")
	b = append(b, '}')
	want := `{"a":null,"b":true,"c":-12,"d":0.00044800000000000005,"e":"<x> & \u2028"}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	if inf := math.Inf(1); string(Float(nil, inf)) != "0" || string(Float(nil, math.NaN())) != "0" {
		t.Error("Inf/NaN")
	}
}

func TestRawDropsLineBreaks(t *testing.T) {
	for in, want := range map[string]string{
		"":                        "null",
		`{"a":1}`:                 `{"a":1}`,
		"{\n\"a\" :\r\n [1,\n2]}": `{"a" : [1,2]}`,
		`{"s":"x\ny"}`:            `{"s":"x\ny"}`, // an escaped newline stays
	} {
		if got := string(Raw(nil, in)); got != want {
			t.Errorf("Raw(%q) = %q, want %q", in, got, want)
		}
	}
}
