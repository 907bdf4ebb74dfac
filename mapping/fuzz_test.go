package mapping_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccbridge/ccbridge/internal/golden"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/ipc"
	"github.com/tidwall/gjson"
)

// fuzzSeeds returns one short CLI line per Kind seen in the transcripts, plus
// the routing table's lines.
func fuzzSeeds(t testing.TB) []string {
	seeds := []string{"", "{", "{}", `{"type":""}`, `{"type":"result"}`, `{"type":"user","message":{"content":[{"type":"tool_result"}]}}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":"x","delta":7}}`}
	for _, c := range routeCases {
		seeds = append(seeds, c.line)
	}
	files, _ := filepath.Glob("../testdata/transcripts/*.ndjson")
	seen := map[mapping.Kind]bool{}
	for _, f := range files {
		lines, fromCLI := golden.ReadTranscript(t, f)
		for i, l := range lines {
			if !fromCLI[i] || len(l) > 4096 {
				continue
			}
			if k := mapping.Route(l).Kind; !seen[k] {
				seen[k] = true
				seeds = append(seeds, string(l))
			}
		}
	}
	return seeds
}

// FuzzRoute: Route never panics, and for any valid line the ipc translator
// (fed around it with some state) and the auto-replies produce valid JSON.
func FuzzRoute(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add([]byte(s))
	}
	const (
		init = `{"type":"system","subtype":"init","session_id":"s1","cwd":"/p","tools":[],"model":"m","permissionMode":"default"}`
		ask  = `{"type":"control_request","request_id":"R1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{},"tool_use_id":"toolu_1"}}`
		res  = `{"type":"result","subtype":"success","is_error":false,"total_cost_usd":1}`
	)
	f.Fuzz(func(t *testing.T, data []byte) {
		ev := mapping.Route(data)
		if !strings.Contains(string(data), ev.Line) {
			t.Fatalf("Line %q is not part of the input", ev.Line)
		}
		if ev.Kind >= mapping.Kind(len(mapping.Kinds())) {
			t.Fatalf("undefined kind %d", ev.Kind)
		}
		valid := gjson.ValidBytes(data)
		tr := ipc.New(ipc.Options{ForwardUnknown: true})
		var out [][]byte
		for _, l := range []string{init, ask} {
			out = tr.FromCLI(mapping.Route([]byte(l)), out)
		}
		out = tr.FromCLI(ev, out)
		out = tr.FromCLI(mapping.Route([]byte(res)), out)
		reply, _ := mapping.AppendAutoReply(nil, &ev)
		if !valid && !ev.Kind.Unknown() {
			// The CLI writes JSON. A broken line is validated only when
			// it routes nowhere (a stray print, most torn lines); one
			// that still looks like a known type is trusted, since
			// validating every line would cost more than the rest of
			// the work on it. Not panicking is enough.
			return
		}
		for _, o := range out {
			if !json.Valid(o) || bytes.IndexByte(o, '\n') >= 0 {
				t.Fatalf("invalid output %q for input %q", o, data)
			}
		}
		if !valid {
			return
		}
		if reply != nil && !json.Valid(reply) {
			t.Fatalf("invalid auto-reply %q", reply)
		}
	})
}
