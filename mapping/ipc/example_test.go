package ipc_test

import (
	"fmt"

	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/ipc"
)

func Example() {
	tr := ipc.New(ipc.Options{})

	// CLI → UI.
	var out [][]byte
	for _, line := range []string{
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}},"session_id":"s1","parent_tool_use_id":null,"api_message_id":"msg_1"}`,
		`{"type":"control_request","request_id":"R1","request":{"subtype":"can_use_tool","tool_name":"Bash","display_name":"Bash","input":{"command":"touch x"},"description":"Touch x","tool_use_id":"toolu_1"}}`,
	} {
		out = tr.FromCLI(mapping.Route([]byte(line)), out)
	}
	for _, l := range out {
		fmt.Printf("%s\n", l)
	}

	// UI → CLI.
	cmd, err := tr.FromUI([]byte(`{"type":"tool_approval","request_id":"R1","decision":"deny","message":"not now"}`))
	fmt.Printf("%v %s %v\n", cmd.Kind, cmd.Stdin, err)
	_, err = tr.FromUI([]byte(`{"type":"tool_approval","request_id":"R1","decision":"allow"}`))
	fmt.Printf("%s\n", err.(*ipc.Error).AppendIPC(nil))
	// Output:
	// {"type":"session_init","ipc_version":2,"session_id":"s1","capabilities":["steer","rewind","query"]}
	// {"type":"assistant_text","ipc_version":2,"msg_id":"msg_1","seq":0,"text":"Hi","is_partial":true,"status":"streaming","parent_tool_use_id":null,"block_index":0}
	// {"type":"control_request_forward","ipc_version":2,"request_id":"R1","tool_name":"Bash","display_name":"Bash","description":"Touch x","input":{"command":"touch x"},"decision_reason":null,"blocked_path":null,"permission_suggestions":null,"is_question":false,"tool_use_id":"toolu_1","parent_tool_use_id":null,"requires_user_interaction":false}
	// tool_approval {"type":"control_response","response":{"subtype":"success","request_id":"R1","response":{"behavior":"deny","message":"not now","toolUseID":"toolu_1"}}} <nil>
	// {"type":"error","ipc_version":2,"code":"unknown_request","message":"request \"R1\" was already answered or withdrawn","recoverable":true,"field":"request_id","in_reply_to":"tool_approval","request_id":"R1"}
}
