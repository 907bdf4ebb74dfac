package mapping

import "github.com/tidwall/gjson"

// Event is one routed line from the CLI's stdout: its Kind plus the few
// fields every dialect needs, all read with gjson and never decoded into Go
// structures. Fields a line does not carry are empty (Index is -1).
//
// An Event owns an immutable copy of its line (Line) and every string field
// and gjson.Result in it is a substring of that copy, so an Event stays valid
// after the reader reuses its buffer and may be sent across goroutines. Keeping
// any of its strings keeps the whole line alive; clone (strings.Clone) what
// you store for long.
type Event struct {
	Kind Kind

	// Type is the top-level "type". Subtype is the subtype that routed the
	// line: "subtype" for system and result, request.subtype for
	// control_request, response.subtype for control_response, event.type for
	// stream_event.
	Type    string
	Subtype string

	SessionID string // "session_id"
	UUID      string // "uuid" of the frame

	// ParentToolUseID is "parent_tool_use_id" when it is a string: set on
	// frames that come from a subagent (the Agent tool_use id). For
	// tool_progress it is the id of the running tool.
	ParentToolUseID string

	// MessageID is the API message id: message.id on assistant frames,
	// api_message_id (or event.message.id) on stream events.
	MessageID string

	// Index is the content block index of content_block_* stream events, -1
	// otherwise.
	Index int

	// BlockType is the content block type: content_block.type on
	// content_block_start, the first block's type on assistant frames.
	BlockType string

	// DeltaType is delta.type on content_block_delta.
	DeltaType string

	// RequestID is the control request id: request_id on control_request and
	// control_cancel_request, response.request_id on control_response.
	RequestID string

	// ToolName and ToolUseID: request.tool_name / request.tool_use_id on
	// can_use_tool (tool_use_id also on hook_callback), content_block.name /
	// content_block.id on a tool_use content_block_start, tool_name on
	// tool_progress and permission_denied, the first tool_result's
	// tool_use_id on KindToolResult.
	ToolName  string
	ToolUseID string

	// Text is the unescaped text a small event carries: the delta's text,
	// thinking, partial_json, or signature on content_block_delta; the text
	// inside the tags on KindUserLocalCommand; content on
	// system/local_command_output.
	Text string

	// TextRaw is Text as the CLI wrote it: the JSON string with its quotes
	// and escapes, on content_block_delta. A dialect that writes the text
	// into JSON again copies it instead of encoding Text anew.
	TextRaw string

	// Result classifies a result line (KindResult only).
	Result ResultClass

	// IsError is is_error on result; true on a control_response with
	// subtype "error", on an assistant frame that reports an API error
	// (is_api_error_message), and on <local-command-stderr> output.
	IsError bool

	// IsReplay is isReplay on user frames.
	IsReplay bool

	// Aborted is "aborted": true on an assistant frame, the partial frame
	// the CLI writes when a turn is interrupted while it streams.
	Aborted bool

	// LocalCommand names the local slash command: local_command on result,
	// local_command_run.command on the synthetic assistant frame.
	LocalCommand string

	// Body is the subtree that matters for the kind, for reading further
	// fields with Body.Get: "message" for assistant and user, "event" for
	// stream_event, "request" for control_request, "response" for
	// control_response, and the whole line for everything else. Body.Raw is
	// the input bytes, never re-encoded.
	Body gjson.Result

	// Line is the whole line, without surrounding white space.
	Line string
}

// Get reads path from the whole line (a convenience for gjson.Get(ev.Line,
// path); the result aliases Line and allocates nothing for plain strings).
func (ev *Event) Get(path string) gjson.Result {
	return gjson.Get(ev.Line, path)
}

// ResultClass classifies a result line by how the turn ended.
type ResultClass uint8

const (
	ResultNone ResultClass = iota // not a result

	// ResultSuccess: the turn completed (subtype success, is_error false),
	// including local slash commands (see Event.LocalCommand) and
	// shouldQuery:false messages.
	ResultSuccess

	// ResultAPIError: the turn failed on an API error. The CLI reports these
	// as subtype "success" with is_error true, terminal_reason "api_error"
	// and api_error_status (protocol §c.6).
	ResultAPIError

	// ResultInterrupted: the turn was ended by an interrupt, a deny with
	// interrupt:true, or a priority:"now" message (terminal_reason
	// aborted_streaming or aborted_tools, whatever the subtype).
	ResultInterrupted

	// ResultMaxTurns: subtype error_max_turns.
	ResultMaxTurns

	// ResultBudget: subtype error_max_budget_usd (or terminal_reason
	// budget_exhausted).
	ResultBudget

	// ResultStructuredOutput: subtype error_max_structured_output_retries.
	ResultStructuredOutput

	// ResultError: any other failure: error_during_execution that is not an
	// interrupt (such as an unknown --resume id), success with is_error
	// true and no API error, or an unknown subtype with is_error true.
	ResultError
)

var resultNames = [...]string{"none", "success", "api_error", "interrupted", "max_turns", "budget", "structured_output", "error"}

// String returns a short name: "success", "api_error", "interrupted", ….
func (c ResultClass) String() string {
	if int(c) < len(resultNames) {
		return resultNames[c]
	}
	return "error"
}

// Failed reports whether the turn did not complete normally.
func (c ResultClass) Failed() bool { return c > ResultSuccess }
