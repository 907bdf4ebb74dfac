package adapter

import (
	"io"
	"log/slog"
	"strings"
	"testing"
)

// BenchmarkIPCFromCLI is the ipc loop's work for one block of 200
// stream_event text deltas: routing, translating and writing each line.
func BenchmarkIPCFromCLI(b *testing.B) {
	line := `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` +
		strings.Repeat("lorem ipsum ", 18) + `"}},"session_id":"5c3bb572-859f-4ecf-9616-2b9d21f1b011","parent_tool_use_id":null,"uuid":"6ee59b9f-a072-407b-9bd6-a8195be95338","api_message_id":"msg_01perf"}` + "\n"
	block := strings.Repeat(line, 200)
	l := (&IPC{Settings: Settings{Logger: slog.New(slog.DiscardHandler)}}).newLoop()
	l.loop.Start(io.Discard)
	l.loop.h = l
	p := &Proc{Gen: 1, sup: l.sup}
	l.sup.live = p
	l.loop.procs[1] = p
	b.SetBytes(int64(len(block)))
	b.ReportAllocs()
	for b.Loop() {
		l.loop.fromCLI(cliBlock{gen: 1, lines: block})
		if err := l.loop.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*200), "ns/line")
}
