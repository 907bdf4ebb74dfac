package framing

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestValidUTF8(t *testing.T) {
	valid := []byte(`{"a":"café ✓"}` + "\n")
	if got := ValidUTF8(valid); &got[0] != &valid[0] {
		t.Errorf("valid input was copied")
	}
	cases := map[string]string{
		"{\"id\":\"a\xffb\"}\n":          "{\"id\":\"a\uFFFDb\"}\n",
		"{\"t\":\"\xe2\x82\"}\n":         "{\"t\":\"\uFFFD\"}\n", // a rune cut short before '"'
		"{\"t\":\"\xed\xa0\x80\"}\n":     "{\"t\":\"\uFFFD\"}\n", // a surrogate
		"{\"t\":\"\xc0\xaf\",\"u\":1}\n": "{\"t\":\"\uFFFD\",\"u\":1}\n",
	}
	for in, want := range cases {
		got := ValidUTF8([]byte(in))
		if string(got) != want {
			t.Errorf("ValidUTF8(%q) = %q, want %q", in, got, want)
		}
		if !utf8.Valid(got) || !json.Valid(got[:len(got)-1]) {
			t.Errorf("ValidUTF8(%q) = %q: not UTF-8 JSON", in, got)
		}
	}
}

func BenchmarkValidUTF8(b *testing.B) {
	block := make([]byte, 0, 64<<10)
	for len(block) < 64<<10-200 {
		block = append(block, `{"type":"stream_event","event":{"type":"content_block_delta","delta":{"type":"text_delta","text":"Hello from the mock model, a few words at a time. "}}}`+"\n"...)
	}
	b.SetBytes(int64(len(block)))
	for b.Loop() {
		ValidUTF8(block)
	}
}

func TestUTF8WriterSplits(t *testing.T) {
	for _, in := range []string{
		`{"t":"café ✓ 𝄞 done"}`,
		"{\"t\":\"a\xffb\xe2\x82\"}",
		"{\"t\":\"\xf0\x9d\x84\"}",
		"\xe2\x82",
	} {
		whole := string(ValidUTF8([]byte(in)))
		for i := 0; i <= len(in); i++ {
			for j := i; j <= len(in); j++ {
				var out bytes.Buffer
				u := UTF8Writer{W: &out}
				for _, piece := range []string{in[:i], in[i:j], in[j:]} {
					if n, err := u.Write([]byte(piece)); n != len(piece) || err != nil {
						t.Fatalf("Write(%q) = %d, %v", piece, n, err)
					}
				}
				if err := u.End(); err != nil {
					t.Fatal(err)
				}
				got := out.String()
				if !utf8.ValidString(got) {
					t.Errorf("%q cut at %d and %d gave %q: not UTF-8", in, i, j, got)
				}
				if utf8.ValidString(in) && got != in {
					t.Errorf("valid %q cut at %d and %d came out as %q", in, i, j, got)
				}
				if strings.Count(got, "\uFFFD") < strings.Count(whole, "\uFFFD") {
					t.Errorf("%q cut at %d and %d gave %q, fewer replacements than %q", in, i, j, got, whole)
				}
			}
		}
	}
}
