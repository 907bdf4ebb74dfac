package mapping

import (
	"github.com/ccbridge/ccbridge/internal/jsonw"
)

// Builders for every line the host writes to the CLI's stdin (protocol
// README §b). Each appends one complete JSON line, without the trailing
// newline, to dst and returns the extended slice. Request ids are chosen by
// the caller. Raw JSON arguments (updatedInput and the like) are copied
// byte for byte and must be valid JSON; strings are escaped here.

// BlockKind selects a user content block.
type BlockKind uint8

const (
	BlockText  BlockKind = iota // {"type":"text","text":Text}
	BlockImage                  // {"type":"image","source":{"type":"base64","media_type":MediaType,"data":Data}}
	BlockRaw                    // Raw, a complete content block object, copied as is
)

// Block is one content block of a user message.
type Block struct {
	Kind      BlockKind
	Text      string // BlockText
	MediaType string // BlockImage: image/png, image/jpeg, image/gif or image/webp
	Data      string // BlockImage: base64, standard alphabet with padding
	Raw       string // BlockRaw
}

// UserOptions are the optional fields of a user message. The zero value
// writes none of them.
type UserOptions struct {
	UUID     string // client id: the CLI then emits command_lifecycle frames and stamps user_message_uuid
	Priority string // "now" aborts the running turn; "next", "later"
}

// AppendUserMessage appends a user envelope as the SDK writes it:
//
//	{"type":"user","session_id":"","message":{"role":"user","content":[…]},"parent_tool_use_id":null}
//
// with the blocks in the order given. Slash commands are ordinary text.
func AppendUserMessage(dst []byte, opt UserOptions, blocks ...Block) []byte {
	dst = append(dst, `{"type":"user","session_id":"","message":{"role":"user","content":[`...)
	for i, b := range blocks {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendBlock(dst, b)
	}
	dst = append(dst, `]},"parent_tool_use_id":null`...)
	if opt.UUID != "" {
		dst = jsonw.Key(dst, "uuid")
		dst = jsonw.String(dst, opt.UUID)
	}
	if opt.Priority != "" {
		dst = jsonw.Key(dst, "priority")
		dst = jsonw.String(dst, opt.Priority)
	}
	return append(dst, '}')
}

// AppendBlock appends one content block.
func AppendBlock(dst []byte, b Block) []byte {
	switch b.Kind {
	case BlockImage:
		dst = append(dst, `{"type":"image","source":{"type":"base64","media_type":`...)
		dst = jsonw.String(dst, b.MediaType)
		dst = append(dst, `,"data":`...)
		dst = jsonw.String(dst, b.Data)
		return append(dst, "}}"...)
	case BlockRaw:
		return jsonw.Raw(dst, b.Raw)
	default:
		dst = append(dst, `{"type":"text","text":`...)
		dst = jsonw.String(dst, b.Text)
		return append(dst, '}')
	}
}

// AppendControlRequest appends
// {"type":"control_request","request_id":id,"request":request} where request
// is a complete JSON object holding at least "subtype".
func AppendControlRequest(dst []byte, requestID, request string) []byte {
	dst = append(dst, `{"type":"control_request","request_id":`...)
	dst = jsonw.String(dst, requestID)
	dst = append(dst, `,"request":`...)
	dst = jsonw.Raw(dst, request)
	return append(dst, '}')
}

func startRequest(dst []byte, requestID, subtype string) []byte {
	dst = append(dst, `{"type":"control_request","request_id":`...)
	dst = jsonw.String(dst, requestID)
	dst = append(dst, `,"request":{"subtype":"`...)
	dst = append(dst, subtype...)
	return append(dst, '"')
}

// AppendInitialize appends an initialize request with no fields: unlike the
// SDK's default it sends no systemPrompt, so the CLI keeps Claude Code's own
// system prompt (protocol README §a.2).
func AppendInitialize(dst []byte, requestID string) []byte {
	return append(startRequest(dst, requestID, "initialize"), "}}"...)
}

// AppendInitializeHooks appends an initialize request that registers hook
// callbacks: hooks is a JSON object written as it is, such as
// {"PreToolUse":[{"hookCallbackIds":["id"],"timeout":60}]}; the CLI then
// asks hook_callback with the id before each matching event.
func AppendInitializeHooks(dst []byte, requestID, hooks string) []byte {
	dst = startRequest(dst, requestID, "initialize")
	dst = append(dst, `,"hooks":`...)
	dst = append(dst, hooks...)
	return append(dst, "}}"...)
}

// AppendInterrupt appends an interrupt request; cancelQueued also cancels
// prompts queued behind the running turn.
func AppendInterrupt(dst []byte, requestID string, cancelQueued bool) []byte {
	dst = startRequest(dst, requestID, "interrupt")
	if cancelQueued {
		dst = append(dst, `,"cancel_queued":true`...)
	}
	return append(dst, "}}"...)
}

// AppendSetPermissionMode appends set_permission_mode. The CLI checks the
// mode (default, acceptEdits, bypassPermissions, plan, dontAsk, auto) and
// answers an unknown one with error_code "invalid_mode".
func AppendSetPermissionMode(dst []byte, requestID, mode string) []byte {
	dst = startRequest(dst, requestID, "set_permission_mode")
	dst = append(dst, `,"mode":`...)
	dst = jsonw.String(dst, mode)
	return append(dst, "}}"...)
}

// AppendSetModel appends set_model. "default" selects the default model;
// the CLI accepts any name without checking it.
func AppendSetModel(dst []byte, requestID, model string) []byte {
	dst = startRequest(dst, requestID, "set_model")
	dst = append(dst, `,"model":`...)
	dst = jsonw.String(dst, model)
	return append(dst, "}}"...)
}

// AppendStopTask appends stop_task for a task id from system/task_started.
func AppendStopTask(dst []byte, requestID, taskID string) []byte {
	dst = startRequest(dst, requestID, "stop_task")
	dst = append(dst, `,"task_id":`...)
	dst = jsonw.String(dst, taskID)
	return append(dst, "}}"...)
}

// AppendControlCancel appends a control_cancel_request withdrawing one of
// the host's own requests. The CLI sends no reply to it.
func AppendControlCancel(dst []byte, requestID string) []byte {
	dst = append(dst, `{"type":"control_cancel_request","request_id":`...)
	dst = jsonw.String(dst, requestID)
	return append(dst, '}')
}

// AppendControlResponse appends a success answer to a CLI request:
// {"type":"control_response","response":{"subtype":"success","request_id":id,"response":response}}.
// An empty response writes {}.
func AppendControlResponse(dst []byte, requestID, response string) []byte {
	dst = append(dst, `{"type":"control_response","response":{"subtype":"success","request_id":`...)
	dst = jsonw.String(dst, requestID)
	dst = append(dst, `,"response":`...)
	if response == "" {
		response = "{}"
	}
	dst = append(dst, response...)
	return append(dst, "}}"...)
}

// AppendControlError appends an error answer to a CLI request. code is the
// optional snake_case error_code. For can_use_tool an error answer means the
// tool is not run and the model is told the permission request failed.
func AppendControlError(dst []byte, requestID, message, code string) []byte {
	dst = append(dst, `{"type":"control_response","response":{"subtype":"error","request_id":`...)
	dst = jsonw.String(dst, requestID)
	dst = append(dst, `,"error":`...)
	dst = jsonw.String(dst, message)
	if code != "" {
		dst = append(dst, `,"error_code":`...)
		dst = jsonw.String(dst, code)
	}
	return append(dst, "}}"...)
}

// Allow is a can_use_tool allow answer. Every field is optional.
type Allow struct {
	UpdatedInput       string // raw JSON object: what the tool runs with; "" runs the original input
	UpdatedPermissions string // raw JSON array of PermissionUpdate objects (permission_suggestions may be echoed back)
	ToolUseID          string // the request's tool_use_id, sent as toolUseID as the SDK does
}

// AppendAllow appends the control_response allowing a can_use_tool request:
// {"behavior":"allow",…}. The field is "behavior", never "decision".
func AppendAllow(dst []byte, requestID string, a Allow) []byte {
	dst = append(dst, `{"type":"control_response","response":{"subtype":"success","request_id":`...)
	dst = jsonw.String(dst, requestID)
	dst = append(dst, `,"response":{"behavior":"allow"`...)
	if a.UpdatedInput != "" {
		dst = append(dst, `,"updatedInput":`...)
		dst = append(dst, a.UpdatedInput...)
	}
	if a.UpdatedPermissions != "" {
		dst = append(dst, `,"updatedPermissions":`...)
		dst = append(dst, a.UpdatedPermissions...)
	}
	if a.ToolUseID != "" {
		dst = append(dst, `,"toolUseID":`...)
		dst = jsonw.String(dst, a.ToolUseID)
	}
	return append(dst, "}}}"...)
}

// Deny is a can_use_tool deny answer.
type Deny struct {
	Message   string // what the model is told; "" sends DefaultDenyMessage
	Interrupt bool   // also end the turn (result error_during_execution, aborted_tools)
	ToolUseID string // sent as toolUseID
}

// DefaultDenyMessage is sent when a Deny has no message.
const DefaultDenyMessage = "User denied this tool call"

// AppendDeny appends the control_response denying a can_use_tool request:
// {"behavior":"deny","message":…}.
func AppendDeny(dst []byte, requestID string, d Deny) []byte {
	dst = append(dst, `{"type":"control_response","response":{"subtype":"success","request_id":`...)
	dst = jsonw.String(dst, requestID)
	dst = append(dst, `,"response":{"behavior":"deny","message":`...)
	msg := d.Message
	if msg == "" {
		msg = DefaultDenyMessage
	}
	dst = jsonw.String(dst, msg)
	if d.Interrupt {
		dst = append(dst, `,"interrupt":true`...)
	}
	if d.ToolUseID != "" {
		dst = append(dst, `,"toolUseID":`...)
		dst = jsonw.String(dst, d.ToolUseID)
	}
	return append(dst, "}}}"...)
}

// AppendFileSuggestions appends file_suggestions: the CLI's @-mention
// completion of query (a path or a part of one, relative to its working
// directory). It answers {"suggestions":[{"path"}],"cwd"}; until its file
// index is built (a few seconds after it starts) only "" finds anything,
// the top-level entries.
func AppendFileSuggestions(dst []byte, requestID, query string) []byte {
	dst = startRequest(dst, requestID, "file_suggestions")
	dst = append(dst, `,"query":`...)
	dst = jsonw.String(dst, query)
	return append(dst, "}}"...)
}

// AppendMCPReconnect appends mcp_reconnect of one MCP server (the CLI's
// field is camelCase serverName). Success has no body; a server that
// fails again is an error with its connection error, an unknown one
// "Server not found: NAME".
func AppendMCPReconnect(dst []byte, requestID, server string) []byte {
	dst = startRequest(dst, requestID, "mcp_reconnect")
	dst = append(dst, `,"serverName":`...)
	dst = jsonw.String(dst, server)
	return append(dst, "}}"...)
}

// AppendMCPToggle appends mcp_toggle: enabled false disconnects a server
// and marks it disabled, true connects it again (an error when that
// connection fails).
func AppendMCPToggle(dst []byte, requestID, server string, enabled bool) []byte {
	dst = startRequest(dst, requestID, "mcp_toggle")
	dst = append(dst, `,"serverName":`...)
	dst = jsonw.String(dst, server)
	if enabled {
		dst = append(dst, `,"enabled":true`...)
	} else {
		dst = append(dst, `,"enabled":false`...)
	}
	return append(dst, "}}"...)
}

// AppendGenerateSessionTitle appends generate_session_title: the CLI asks
// the model for a title of description (required: without it the CLI
// answers "description must be a string") and answers {"title"}, null
// when the model's reply was no title. With persist it also writes the
// title to the session file (an "ai-title" entry), where every session
// list finds it (SessionSummary.Title).
func AppendGenerateSessionTitle(dst []byte, requestID, description string, persist bool) []byte {
	dst = startRequest(dst, requestID, "generate_session_title")
	dst = append(dst, `,"description":`...)
	dst = jsonw.String(dst, description)
	if persist {
		dst = append(dst, `,"persist":true`...)
	}
	return append(dst, "}}"...)
}
