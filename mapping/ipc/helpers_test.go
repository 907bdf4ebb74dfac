package ipc_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ccbridge/ccbridge/internal/golden"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/ipc"
	"github.com/tidwall/gjson"
)

// feed routes CLI lines through tr and returns every ipc line produced,
// checking each is valid JSON with ipc_version 2.
func feed(t testing.TB, tr *ipc.Translator, lines ...string) []string {
	t.Helper()
	var out [][]byte
	for _, l := range lines {
		if !gjson.Valid(l) {
			t.Fatalf("test input is not valid JSON: %s", l)
		}
		out = tr.FromCLI(mapping.Route([]byte(l)), out)
	}
	got := make([]string, len(out))
	for i, o := range out {
		if !json.Valid(o) || gjson.GetBytes(o, "ipc_version").Int() != 2 {
			t.Fatalf("bad output line: %s", o)
		}
		got[i] = string(o)
	}
	return got
}

// ofType returns the lines of one ipc type.
func ofType(lines []string, typ string) []string {
	var r []string
	for _, l := range lines {
		if gjson.Get(l, "type").Str == typ {
			r = append(r, l)
		}
	}
	return r
}

func types(lines []string) string {
	var ts []string
	for _, l := range lines {
		ts = append(ts, gjson.Get(l, "type").Str)
	}
	return strings.Join(ts, " ")
}

// transcriptCLILines returns the CLI → host lines of a transcript.
func transcriptCLILines(t testing.TB, name string) []string {
	t.Helper()
	lines, out := golden.ReadTranscript(t, transcriptDir+"/"+name+".ndjson")
	var r []string
	for i, l := range lines {
		if out[i] {
			r = append(r, string(l))
		}
	}
	return r
}

// firstLine returns the first CLI line of a transcript containing all subs.
func firstLine(t testing.TB, name string, subs ...string) string {
	t.Helper()
	for _, l := range transcriptCLILines(t, name) {
		ok := true
		for _, s := range subs {
			ok = ok && strings.Contains(l, s)
		}
		if ok {
			return l
		}
	}
	t.Fatalf("%s: no line with %q", name, subs)
	return ""
}
