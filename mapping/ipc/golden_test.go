package ipc_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/ipc"
	"github.com/tidwall/gjson"
)

var update = flag.Bool("update", false, "rewrite testdata/ipc/*.golden from the transcripts")

const (
	transcriptDir = "../../testdata/transcripts"
	goldenDir     = "../../testdata/ipc"
)

// readTranscript returns the lines of a transcript with their direction:
// out is true for "<< " (CLI → host) lines.
func readTranscript(t testing.TB, path string) (lines [][]byte, out []bool) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		l := sc.Bytes()
		switch {
		case bytes.HasPrefix(l, []byte("<< ")):
			lines, out = append(lines, bytes.Clone(l[3:])), append(out, true)
		case bytes.HasPrefix(l, []byte(">> ")):
			lines, out = append(lines, bytes.Clone(l[3:])), append(out, false)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines, out
}

// translate drives one transcript through Route and a Translator the way the
// adapter does: CLI lines go to FromCLI; the host's own lines tell the
// translator what the host wrote (its control requests are tracked, its
// answers settle the CLI's requests).
func translate(t testing.TB, path string) [][]byte {
	t.Helper()
	lines, fromCLI := readTranscript(t, path)
	tr := ipc.New(ipc.Options{ForwardUnknown: true})
	var got [][]byte
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
		got = tr.FromCLI(mapping.Route(l), got)
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
	files, err := filepath.Glob(filepath.Join(transcriptDir, "*.ndjson"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts in %s: %v", transcriptDir, err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".ndjson")
		t.Run(name, func(t *testing.T) {
			got := translate(t, f)
			var buf bytes.Buffer
			for _, l := range got {
				buf.Write(l)
				buf.WriteByte('\n')
			}
			golden := filepath.Join(goldenDir, name+".golden")
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGolden -update to create it)", err)
			}
			if bytes.Equal(buf.Bytes(), want) {
				return
			}
			g, w := strings.Split(buf.String(), "\n"), strings.Split(string(want), "\n")
			for i := 0; i < max(len(g), len(w)); i++ {
				var gl, wl string
				if i < len(g) {
					gl = g[i]
				}
				if i < len(w) {
					wl = w[i]
				}
				if gl != wl {
					t.Fatalf("%s line %d differs (run with -update after checking):\n got: %.600s\nwant: %.600s", golden, i+1, gl, wl)
				}
			}
		})
	}
}
