package ipc_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/ccbridge/ccbridge/internal/golden"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/ipc"
	"github.com/tidwall/gjson"
)

var update = flag.Bool("update", false, "rewrite testdata/ipc/*.golden from the transcripts")

const (
	transcriptDir = "../../testdata/transcripts"
	goldenDir     = "../../testdata/ipc"
)

// translate drives one transcript through Route and a Translator the way the
// adapter does: CLI lines go to FromCLI; the host's own lines tell the
// translator what the host wrote (its control requests are tracked, its
// answers settle the CLI's requests). With appendCLI it uses AppendCLI,
// into one reused buffer, instead of FromCLI, and routes each CLI line
// from one reused buffer that is overwritten after the call, as the ipc
// loop's pooled blocks are.
func translate(t testing.TB, path string, appendCLI bool) [][]byte {
	t.Helper()
	lines, fromCLI := golden.ReadTranscript(t, path)
	tr := ipc.New(ipc.Options{ForwardUnknown: true})
	var got [][]byte
	var buf, in []byte
	for i, l := range lines {
		if !gjson.ValidBytes(l) {
			continue // protocol_errors ends with a deliberately broken host line
		}
		if !fromCLI[i] {
			switch gjson.GetBytes(l, "type").Str {
			case "control_request":
				tr.Track(gjson.GetBytes(l, "request_id").Str, gjson.GetBytes(l, "request.subtype").Str)
			case "control_response":
				tr.Settle(gjson.GetBytes(l, "response.request_id").Str)
			}
			continue
		}
		n := len(got)
		if appendCLI {
			in = append(in[:0], l...)
			ev := mapping.RouteString(unsafe.String(unsafe.SliceData(in), len(in)))
			buf = tr.AppendCLI(buf[:0], &ev)
			for j := range in {
				in[j] = 'X' // whatever the translator kept of the line is gone
			}
			if len(buf) > 0 && buf[len(buf)-1] != '\n' {
				t.Fatalf("line %d: AppendCLI's output does not end with a newline: %q", i+1, buf)
			}
			for o := range bytes.Lines(buf) {
				got = append(got, bytes.Clone(o[:len(o)-1]))
			}
		} else {
			got = tr.FromCLI(mapping.Route(l), got)
		}
		for _, o := range got[n:] {
			if !json.Valid(o) {
				t.Fatalf("line %d: output is not valid JSON: %s", i+1, o)
			}
			if gjson.GetBytes(o, "ipc_version").Int() != 2 || !strings.HasPrefix(string(o), `{"type":"`) {
				t.Fatalf("line %d: output lacks type/ipc_version 2: %s", i+1, o)
			}
			if bytes.ContainsAny(o, "\n") {
				t.Fatalf("line %d: output contains a newline: %s", i+1, o)
			}
		}
	}
	return got
}

func TestGolden(t *testing.T) {
	files := golden.Transcripts(t, transcriptDir)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".ndjson")
		t.Run(name, func(t *testing.T) {
			golden.Compare(t, filepath.Join(goldenDir, name+".golden"), golden.Join(translate(t, f, false)), *update)
		})
	}
}

// TestGoldenReusedLines: AppendCLI writes exactly the lines FromCLI
// returns, for every transcript, and the translator keeps nothing of a
// line whose memory is reused after the call.
func TestGoldenReusedLines(t *testing.T) {
	for _, f := range golden.Transcripts(t, transcriptDir) {
		name := strings.TrimSuffix(filepath.Base(f), ".ndjson")
		t.Run(name, func(t *testing.T) {
			golden.Compare(t, filepath.Join(goldenDir, name+".golden"), golden.Join(translate(t, f, true)), false)
		})
	}
}
