package acp_test

import (
	"encoding/json"
	"testing"

	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/acp"
)

// The hot path: one streamed text delta from the CLI to one
// agent_message_chunk notification.
const benchDelta = `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Lorem ipsum dolor sit amet, consectetur adipiscing elit. "}},"session_id":"5c3bb572-859f-4ecf-9616-2b9d21f1b011","parent_tool_use_id":null,"uuid":"6ee59b9f-a072-407b-9bd6-a8195be95338","api_message_id":"msg_01perf"}`

func BenchmarkTextDelta(b *testing.B) {
	tr := acp.NewTranslator("5c3bb572-859f-4ecf-9616-2b9d21f1b011")
	line := []byte(benchDelta)
	out := make([][]byte, 0, 1)
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		ev := mapping.Route(line)
		out = tr.FromCLI(&ev, out[:0])
	}
	if len(out) != 1 {
		b.Fatal("no output")
	}
}

// BenchmarkTextDeltaEncodingJSON does the same with encoding/json: decode
// the line into structs, build the notification, encode it.
func BenchmarkTextDeltaEncodingJSON(b *testing.B) {
	type delta struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	type in struct {
		Type  string `json:"type"`
		Event struct {
			Type  string `json:"type"`
			Index int    `json:"index"`
			Delta delta  `json:"delta"`
		} `json:"event"`
		SessionID    string  `json:"session_id"`
		Parent       *string `json:"parent_tool_use_id"`
		UUID         string  `json:"uuid"`
		APIMessageID string  `json:"api_message_id"`
	}
	type content struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	type update struct {
		SessionUpdate string  `json:"sessionUpdate"`
		Content       content `json:"content"`
		MessageID     string  `json:"messageId,omitempty"`
	}
	type params struct {
		SessionID string `json:"sessionId"`
		Update    update `json:"update"`
	}
	type note struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  params `json:"params"`
	}
	line := []byte(benchDelta)
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		var v in
		if err := json.Unmarshal(line, &v); err != nil {
			b.Fatal(err)
		}
		out, err := json.Marshal(note{"2.0", "session/update", params{"s", update{"agent_message_chunk", content{"text", v.Event.Delta.Text}, v.APIMessageID}}})
		if err != nil || len(out) == 0 {
			b.Fatal(err)
		}
	}
}
