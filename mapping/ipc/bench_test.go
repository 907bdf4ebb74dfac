package ipc_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/ipc"
	"github.com/tidwall/gjson"
)

// Lines as the CLI writes them (text_turn.ndjson).
const (
	benchDelta     = `{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hello "}},"session_id":"5c3bb572-859f-4ecf-9616-2b9d21f1b011","parent_tool_use_id":null,"uuid":"6ee59b9f-a072-407b-9bd6-a8195be95338","api_message_id":"msg_0142"}`
	benchAssistant = `{"type":"assistant","message":{"id":"msg_0142","type":"message","role":"assistant","model":"claude-opus-5-5","content":[{"type":"text","text":"Hello from the mock model. "}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":1,"cache_read_input_tokens":0,"cache_creation_input_tokens":0},"context_management":null},"parent_tool_use_id":null,"session_id":"5c3bb572-859f-4ecf-9616-2b9d21f1b011","uuid":"600b3289-d028-4ac9-9bdf-22534796e959","timestamp":"2026-11-21T22:55:28.928Z","request_id":"req_mock_142"}`
)

func benchRoute(b *testing.B, line string) {
	buf := []byte(line)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		ev := mapping.Route(buf)
		if ev.Kind == mapping.KindUnknown {
			b.Fatal("unknown")
		}
	}
}

// benchTranslate is the ipc loop's work on one line: RouteString over
// the line in place, then AppendCLI into a reused buffer.
func benchTranslate(b *testing.B, line string) {
	tr := ipc.New(ipc.Options{})
	first := mapping.RouteString(line)
	buf := tr.AppendCLI(nil, &first) // session_init once
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		ev := mapping.RouteString(line)
		buf = tr.AppendCLI(buf[:0], &ev)
		if bytes.Count(buf, []byte{'\n'}) != 1 {
			b.Fatalf("%q", buf)
		}
	}
}

// benchAssistant4KiB is the harness's long frame: one 4 KiB text block.
var benchAssistant4KiB = `{"type":"assistant","message":{"id":"msg_01perf","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"` +
	strings.Repeat("lorem ipsum ", 340) + `"}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}},"parent_tool_use_id":null,"session_id":"5c3bb572-859f-4ecf-9616-2b9d21f1b011","uuid":"600b3289-d028-4ac9-9bdf-22534796e959"}`

func BenchmarkRouteAndTranslateAssistant4KiB(b *testing.B) { benchTranslate(b, benchAssistant4KiB) }

// BenchmarkValidAssistant4KiB is what checking every such line as JSON
// would cost, which is why the ipc loop checks only lines that route to no
// known type (docs/performance.md).
func BenchmarkValidAssistant4KiB(b *testing.B) {
	b.SetBytes(int64(len(benchAssistant4KiB)))
	for b.Loop() {
		if !gjson.Valid(benchAssistant4KiB) {
			b.Fatal("invalid")
		}
	}
}

func BenchmarkRouteTextDelta(b *testing.B)             { benchRoute(b, benchDelta) }
func BenchmarkRouteAssistant(b *testing.B)             { benchRoute(b, benchAssistant) }
func BenchmarkRouteAndTranslateTextDelta(b *testing.B) { benchTranslate(b, benchDelta) }
func BenchmarkRouteAndTranslateAssistant(b *testing.B) { benchTranslate(b, benchAssistant) }

// BenchmarkRouteStringTextDelta is the zero-copy form, for a caller that
// already holds the line as an immutable string.
func BenchmarkRouteStringTextDelta(b *testing.B) {
	b.SetBytes(int64(len(benchDelta)))
	b.ReportAllocs()
	for b.Loop() {
		if mapping.RouteString(benchDelta).Kind != mapping.KindTextDelta {
			b.Fatal("kind")
		}
	}
}

// BenchmarkRouteLargeToolResult routes a user frame with a 1 MiB tool
// result: the cost is one copy of the line and one scan.
func BenchmarkRouteLargeToolResult(b *testing.B) {
	line := `{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"` +
		strings.Repeat("0123456789abcdef", 1<<16) + `"}]},"parent_tool_use_id":null,"session_id":"s","tool_use_result":{"stdout":"x"}}`
	benchRoute(b, line)
}

// The same work with encoding/json decoding the whole line, for comparison.
func BenchmarkStdlibDecodeTextDelta(b *testing.B) { benchStdlib(b, benchDelta) }
func BenchmarkStdlibDecodeAssistant(b *testing.B) { benchStdlib(b, benchAssistant) }

func benchStdlib(b *testing.B, line string) {
	buf := []byte(line)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		var m map[string]any
		if err := json.Unmarshal(buf, &m); err != nil {
			b.Fatal(err)
		}
		if m["type"] == "" {
			b.Fatal()
		}
	}
}
