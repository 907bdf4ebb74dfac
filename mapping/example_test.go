package mapping_test

import (
	"fmt"

	"github.com/ccbridge/ccbridge/mapping"
)

func ExampleRoute() {
	for _, line := range []string{
		`{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hello "}},"session_id":"s1","parent_tool_use_id":null,"api_message_id":"msg_0142"}`,
		`{"type":"control_request","request_id":"a17b","request":{"subtype":"can_use_tool","tool_name":"Write","input":{"file_path":"/p/w.txt"},"tool_use_id":"toolu_1"}}`,
		`{"duration_api_ms":0,"subtype":"success","is_error":true,"terminal_reason":"api_error","api_error_status":400,"type":"result"}`,
		`{"type":"brand_new_type"}`,
	} {
		ev := mapping.Route([]byte(line))
		switch ev.Kind {
		case mapping.KindTextDelta:
			fmt.Printf("%v %s[%d] %q\n", ev.Kind, ev.MessageID, ev.Index, ev.Text)
		case mapping.KindCanUseTool:
			fmt.Printf("%v %s %s input=%s\n", ev.Kind, ev.RequestID, ev.ToolName, ev.Body.Get("input").Raw)
			fmt.Printf("%s\n", mapping.AppendAllow(nil, ev.RequestID, mapping.Allow{ToolUseID: ev.ToolUseID}))
		case mapping.KindResult:
			fmt.Printf("%v %s/%v\n", ev.Kind, ev.Subtype, ev.Result)
		default:
			fmt.Printf("%v unknown=%v\n", ev.Kind, ev.Kind.Unknown())
		}
	}
	// Output:
	// stream_event/text_delta msg_0142[1] "Hello "
	// control_request/can_use_tool a17b Write input={"file_path":"/p/w.txt"}
	// {"type":"control_response","response":{"subtype":"success","request_id":"a17b","response":{"behavior":"allow","toolUseID":"toolu_1"}}}
	// result success/api_error
	// unknown unknown=true
}
