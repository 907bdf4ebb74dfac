package acp_test

import (
	"fmt"

	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/acp"
)

func ExampleTranslator() {
	tr := acp.NewTranslator("sess-1")
	ev := mapping.Route([]byte(`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}},"session_id":"x","parent_tool_use_id":null,"uuid":"u","api_message_id":"msg_1"}`))
	for _, line := range tr.FromCLI(&ev, nil) {
		fmt.Println(string(line))
	}
	res := mapping.Route([]byte(`{"type":"result","subtype":"success","is_error":false,"stop_reason":"end_turn","session_id":"x"}`))
	reason, _ := acp.TurnOutcome(&res, false)
	fmt.Println(reason)
	// Output:
	// {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hello"},"messageId":"msg_1"}}}
	// end_turn
}
