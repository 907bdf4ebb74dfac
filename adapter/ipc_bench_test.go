package adapter

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ccbridge/ccbridge/framing"
	"github.com/ccbridge/ccbridge/mapping/ipc"
)

// BenchmarkIPCFromCLI is the ipc loop's work for one block of 200
// stream_event text deltas: routing, translating and writing each line.
func BenchmarkIPCFromCLI(b *testing.B) {
	line := `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` +
		strings.Repeat("lorem ipsum ", 18) + `"}},"session_id":"5c3bb572-859f-4ecf-9616-2b9d21f1b011","parent_tool_use_id":null,"uuid":"6ee59b9f-a072-407b-9bd6-a8195be95338","api_message_id":"msg_01perf"}` + "\n"
	block := strings.Repeat(line, 200)
	l := &ipcLoop{
		log:       slog.New(slog.DiscardHandler),
		tr:        ipc.New(ipc.Options{}),
		ui:        framing.NewWriter(io.Discard),
		deadlines: map[string]time.Time{},
		proc:      &cliProc{gen: 1},
	}
	b.SetBytes(int64(len(block)))
	b.ReportAllocs()
	for b.Loop() {
		l.fromCLI(cliBlock{gen: 1, lines: block})
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*200), "ns/line")
}
