package jscan

import (
	"encoding/json"
	"testing"
)

func TestText(t *testing.T) {
	for raw, want := range map[string]string{
		`"plain"`:                         "plain",
		`""`:                              "",
		`"a\"b\\c\/d\b\f\n\r\t"`:          "a\"b\\c/d\b\f\n\r\t",
		`"\u00e9\ud83d\ude00"`:            "é😀",
		`"\ud800\u0041"`:                  "\uFFFDA",
		`"\udc00"`:                        "\uFFFD",
		`"x\ud83dy"`:                      "x\uFFFDy",
		`"\u2028 \u0000"`:                 "\u2028 \x00",
		`"\ud83d\ude00\ud83d\ude00 tail"`: "😀😀 tail",
	} {
		got, ok := Text(raw)
		var std string
		if err := json.Unmarshal([]byte(raw), &std); err != nil {
			t.Fatal(err)
		}
		if !ok || got != want || got != std {
			t.Errorf("Text(%s) = %q, %v; want %q (encoding/json %q)", raw, got, ok, want, std)
		}
	}
	for _, raw := range []string{``, `1`, `null`, `{}`, `["a"]`, `"`} {
		if got, ok := Text(raw); ok || got != "" {
			t.Errorf("Text(%s) = %q, %v", raw, got, ok)
		}
	}
}

func TestLoneSurrogate(t *testing.T) {
	for body, want := range map[string]bool{
		`plain`:               false,
		`\ud83d\ude00`:        false,
		`\u0041\n`:            false,
		`\\ud800`:             false, // an escaped backslash, then text
		`\ud800`:              true,
		`\ude00`:              true,
		`\ud800\u0041`:        true,
		`\ud800x`:             true,
		`a\ud83d\ude00\udc00`: true,
	} {
		if got := LoneSurrogate(body); got != want {
			t.Errorf("LoneSurrogate(%s) = %v, want %v", body, got, want)
		}
	}
}

func TestTrimSpace(t *testing.T) {
	for in, want := range map[string]string{
		" \t\r\n{} \n": "{}",
		"{}":           "{}",
		"\f{}":         "\f{}", // not JSON white space
		"  ":           "",
	} {
		if got := string(TrimSpace([]byte(in))); got != want {
			t.Errorf("TrimSpace(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPick(t *testing.T) {
	names := []string{"a", "b", "c"}
	raw := make([]string, 3)
	if dup := Pick(`{"b":[1,{"a":2}],"x":1,"a":"s","a\u0000":0}`, names, raw); dup != "" || raw[0] != `"s"` || raw[1] != `[1,{"a":2}]` || raw[2] != "" {
		t.Fatalf("dup %q raw %q", dup, raw)
	}
	raw = make([]string, 3)
	if dup := Pick(`{"c":1,"\u0063":2,"a":3}`, names, raw); dup != "c" || raw[2] != "1" {
		t.Fatalf("dup %q raw %q", dup, raw)
	}
}

func TestIsNumber(t *testing.T) {
	for raw, want := range map[string]bool{`0`: true, `-1.5`: true, `12e3`: true, `"1"`: false, `null`: false, ``: false, `[1]`: false} {
		if IsNumber(raw) != want {
			t.Errorf("IsNumber(%s) != %v", raw, want)
		}
	}
}
