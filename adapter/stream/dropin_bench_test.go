package stream

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/ccbridge/ccbridge/framing"
	"github.com/ccbridge/ccbridge/mapping"
)

// Lines of the shapes the CLI writes most, for the drop-in hot path.
var benchLines = []struct {
	name string
	line string
}{
	{"StreamEvent", `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello from the mock model, streaming a few words at a time. "}},"session_id":"5c3bb572-859f-4ecf-9616-2b9d21f1b011","parent_tool_use_id":null,"uuid":"6ee59b9f-a072-407b-9bd6-a8195be95338","api_message_id":"msg_0142"}`},
	{"Assistant4KiB", benchAssistant(4 << 10)},
	{"System", `{"type":"system","subtype":"init","cwd":"/tmp/w","session_id":"5c3bb572-859f-4ecf-9616-2b9d21f1b011","tools":["Bash","Read","Write"],"mcp_servers":[],"model":"claude-sonnet-4-5","permissionMode":"default","slash_commands":[],"apiKeySource":"none","output_style":"default","uuid":"1d1e7a1c-65c4-4d57-9d6e-1f0c1e0a9c11"}`},
	{"Result", `{"type":"result","subtype":"success","is_error":false,"duration_ms":1200,"duration_api_ms":1100,"num_turns":1,"result":"done","stop_reason":"end_turn","session_id":"5c3bb572-859f-4ecf-9616-2b9d21f1b011","total_cost_usd":0.0123,"usage":{"input_tokens":12,"output_tokens":900,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"modelUsage":{},"permission_denials":[],"uuid":"0f6a7a52-3f0e-4d37-bd0b-7b1f8a2b9e10"}`},
	{"ControlResponse", `{"type":"control_response","response":{"subtype":"success","request_id":"host-req-17","response":{"behavior":"allow"}}}`},
}

// benchAssistant is an assistant frame of exactly n bytes.
func benchAssistant(n int) string {
	const (
		head = `{"type":"assistant","message":{"id":"msg_0142","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"`
		tail = `"}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":900,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}},"parent_tool_use_id":null,"session_id":"5c3bb572-859f-4ecf-9616-2b9d21f1b011","uuid":"600b3289-d028-4ac9-9bdf-22534796e959"}`
	)
	fill := strings.Repeat("lorem ipsum dolor sit amet ", n/27+1)[:n-len(head)-len(tail)]
	return head + fill + tail
}

func benchRelay() *relay {
	return &relay{
		log:      slog.New(slog.DiscardHandler),
		toUI:     framing.NewWriter(io.Discard),
		idPrefix: "ccbridge-0a1b2c3d-",
		notify:   make(chan struct{}, 1),
	}
}

// BenchmarkRelayPassLine is the drop-in path of one CLI line that fits in
// one read: passLine, then the flush pumpChild does when the read buffer is
// drained (the worst case: one write per line).
func BenchmarkRelayPassLine(b *testing.B) {
	for _, l := range benchLines {
		b.Run(l.name, func(b *testing.B) {
			r := benchRelay()
			line := []byte(l.line)
			b.SetBytes(int64(len(line) + 1))
			b.ReportAllocs()
			for b.Loop() {
				if err := r.passLine(line); err != nil {
					b.Fatal(err)
				}
				if err := r.toUI.Flush(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRelayPassLineBatched is passLine with one flush per 64 KiB of
// lines, as when a read brings many lines at once.
func BenchmarkRelayPassLineBatched(b *testing.B) {
	r := benchRelay()
	line := []byte(benchLines[0].line)
	per := (64 << 10) / (len(line) + 1)
	b.SetBytes(int64(len(line) + 1))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := r.passLine(line); err != nil {
			b.Fatal(err)
		}
		if i%per == per-1 {
			if err := r.toUI.Flush(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkSniffer feeds a 1 MiB assistant line to the sniffer in the
// 64 KiB pieces ReadSegment hands out.
func BenchmarkSniffer(b *testing.B) {
	line := []byte(benchAssistant(1 << 20))
	var s mapping.Sniffer
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		s.Reset()
		for p := line; len(p) > 0; {
			n := min(len(p), 64<<10)
			s.Feed(p[:n])
			p = p[n:]
		}
		if string(s.Type) != "assistant" {
			b.Fatalf("sniffed type %q", s.Type)
		}
	}
}

// BenchmarkRelayStreamLine is the path of a CLI line too long for one read:
// framing.Reader pieces through the sniffer into the host writer.
func BenchmarkRelayStreamLine(b *testing.B) {
	line := benchAssistant(1 << 20)
	input := []byte(strings.Repeat(line+"\n", 4))
	r := benchRelay()
	fr := framing.NewReader(&benchLoopReader{data: input, chunk: 64 << 10}, 0)
	var sn mapping.Sniffer
	b.SetBytes(int64(len(line) + 1))
	b.ReportAllocs()
	for b.Loop() {
		seg, first, last, err := fr.ReadSegment()
		if err != nil || !first || last {
			b.Fatalf("ReadSegment: first %v last %v err %v", first, last, err)
		}
		if err := r.streamLine(fr, seg, last, &sn); err != nil {
			b.Fatal(err)
		}
	}
	if r.results.Load() != 0 {
		b.Fatal("an assistant line was counted as a result")
	}
}

// benchLoopReader repeats data forever, at most chunk bytes per Read, as a
// pipe hands them out.
type benchLoopReader struct {
	data  []byte
	off   int
	chunk int
}

func (l *benchLoopReader) Read(p []byte) (int, error) {
	if l.off == len(l.data) {
		l.off = 0
	}
	n := copy(p[:min(len(p), l.chunk)], l.data[l.off:])
	l.off += n
	return n, nil
}
