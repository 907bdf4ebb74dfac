package ipc

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/ccbridge/ccbridge/adapter"
)

// BenchmarkIPCFromCLI is the ipc loop's work for one block of 200
// stream_event text deltas: routing, translating and writing each line.
// The lines are handed to the handler as the loop hands them over (a
// text delta needs no child, so none is started).
func BenchmarkIPCFromCLI(b *testing.B) {
	line := `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` +
		strings.Repeat("lorem ipsum ", 18) + `"}},"session_id":"5c3bb572-859f-4ecf-9616-2b9d21f1b011","parent_tool_use_id":null,"uuid":"6ee59b9f-a072-407b-9bd6-a8195be95338","api_message_id":"msg_01perf"}`
	l := (&IPC{Settings: adapter.Settings{Logger: slog.New(slog.DiscardHandler)}}).newLoop()
	l.loop.Start(io.Discard)
	b.SetBytes(int64(200 * (len(line) + 1)))
	b.ReportAllocs()
	for b.Loop() {
		for range 200 {
			l.CLILine(nil, line)
		}
		if err := l.loop.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*200), "ns/line")
}
