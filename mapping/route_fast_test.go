package mapping

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/internal/golden"
)

// sameEvent compares two Events field by field; Body by type and bytes.
func sameEvent(a, b Event) bool {
	if a.Body.Type != b.Body.Type || a.Body.Raw != b.Body.Raw {
		return false
	}
	a.Body, b.Body = gjson.Result{}, gjson.Result{}
	return reflect.DeepEqual(a, b)
}

// TestRouteDeltaFastPath checks that the fast path for deltas gives exactly
// the general router's Event, on every delta of every transcript and on
// hand-made variants, and that it is taken for the CLI's own deltas.
func TestRouteDeltaFastPath(t *testing.T) {
	files, _ := filepath.Glob("../testdata/transcripts/*.ndjson")
	taken := 0
	for _, f := range files {
		lines, fromCLI := golden.ReadTranscript(t, f)
		for i, l := range lines {
			if !fromCLI[i] {
				continue
			}
			line := string(l)
			var fast Event
			if !routeDelta(line, &fast) {
				continue
			}
			taken++
			if slow := routeGeneral(line); !sameEvent(fast, slow) {
				t.Fatalf("%s:\nfast %+v\nslow %+v", line, fast, slow)
			}
		}
	}
	if taken < 100 {
		t.Errorf("the fast path took %d transcript lines; the CLI's deltas should use it", taken)
	}
	for _, line := range []string{
		`{"type":"stream_event","event":{"type":"content_block_delta","index":12,"delta":{"type":"text_delta","text":"a \"b\" \\ \u00e9"}},"session_id":"s","parent_tool_use_id":"toolu_1","uuid":"u","api_message_id":"m","ttft_ms":3}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}},"session_id":"s","parent_tool_use_id":null}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}}`,
		// The CLI's own tail, read without a general walk, and tails
		// that only look like it, which take the walk.
		`{"type":"stream_event","event":{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"x"}},"session_id":"s1","parent_tool_use_id":"toolu_9","uuid":"u1","api_message_id":"msg_1"}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"x"}},"session_id":"s\"1","parent_tool_use_id":null,"uuid":"u1","api_message_id":"msg_1"}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"x"}},"session_id":"s1","parent_tool_use_id":null,"uuid":"u\u00e9","api_message_id":"msg_1"}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"x"}},"session_id":"s1","parent_tool_use_id":null,"uuid":"u1","api_message_id":"msg_1","ttft_ms":3}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"x"}},"session_id":"s1","parent_tool_use_id":7,"uuid":"u1","api_message_id":"msg_1"}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"x"}},"session_id":"s1","parent_tool_use_id":null,"api_message_id":"msg_1","uuid":"u1"}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"x"}},"session_id":"s1" ,"parent_tool_use_id":null,"uuid":"u1","api_message_id":"msg_1"}`,
	} {
		var fast Event
		if !routeDelta(line, &fast) {
			t.Errorf("fast path not taken: %s", line)
			continue
		}
		if slow := routeGeneral(line); !sameEvent(fast, slow) {
			t.Errorf("%s:\nfast %+v\nslow %+v", line, fast, slow)
		}
	}
	for _, line := range []string{
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x","extra":1}},"session_id":"s"}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}},"type":"user"}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":01,"delta":{"type":"text_delta","text":"x"}}}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{"}}}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}},"s":1} trailing`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}},"session_id":"s","parent_tool_use_id":null,"uuid":"u","api_message_id":"m"}}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}},"session_id":"s","parent_tool_use_id":null,"uuid":"u","api_message_id":"m","type":"user"}`,
	} {
		if routeDelta(line, new(Event)) {
			t.Errorf("fast path taken for a line it must leave to the general router: %s", line)
		}
	}
}

// FuzzRouteDelta: wherever the fast path answers, it answers as the
// general router does.
func FuzzRouteDelta(f *testing.F) {
	f.Add(`{"type":"stream_event","event":{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"hi"}},"session_id":"s","parent_tool_use_id":null,"uuid":"u","api_message_id":"m"}`)
	f.Add(`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"\"\\"}},"x":[1,{"y":"}"}]}`)
	f.Fuzz(func(t *testing.T, line string) {
		var fast Event
		if !routeDelta(line, &fast) || !gjson.Valid(line) {
			return
		}
		if slow := routeGeneral(line); !sameEvent(fast, slow) {
			t.Fatalf("%q:\nfast %+v\nslow %+v", line, fast, slow)
		}
	})
}
