package rpc

import (
	"path/filepath"
	"testing"

	"github.com/ccbridge/ccbridge/mapping"
)

// BenchmarkTextDelta is the hot path: one streamed text delta routed and
// turned into an agent.event line.
func BenchmarkTextDelta(b *testing.B) {
	tr := New(Options{})
	var out Output
	tr.BeginRun("run-1", &out)
	tr.SentPrompt("run-1")
	line := []byte(lineDelta)
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		out.Reset()
		tr.FromCLI(mapping.Route(line), 1, &out)
		if len(out.UI) != 1 {
			b.Fatalf("%d lines", len(out.UI))
		}
	}
}

// BenchmarkTranscript replays a whole tool turn (write_allow.ndjson) with
// a simulated UI.
func BenchmarkTranscript(b *testing.B) {
	path := filepath.Join(transcriptDir, "write_allow.ndjson")
	b.ReportAllocs()
	for b.Loop() {
		replay(b, path)
	}
}
