package mapping

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/internal/jscan"
)

// Route classifies one line of the CLI's stdout. It copies the line once (so
// the Event does not alias the caller's buffer) and reads only the routing
// fields with gjson.
//
// The caller checks the line once at the boundary (gjson.ValidBytes, which
// also rejects invalid UTF-8) and should not route lines that fail; Route
// itself never panics on any input, valid or not, and never returns an
// error: what it cannot classify is KindUnknown with the line kept.
func Route(line []byte) Event {
	return RouteString(string(trimSpaceBytes(line)))
}

// RouteString is Route for a line the caller already holds as a string. The
// Event aliases s; nothing is copied.
func RouteString(s string) (ev Event) {
	s = strings.TrimSpace(s)
	if routeDelta(s, &ev) {
		return ev
	}
	return routeGeneral(s)
}

// routeGeneral routes any line: one pass over its top-level members, then
// the second tier.
func routeGeneral(s string) Event {
	ev := Event{Line: s, Index: -1}
	if len(s) == 0 || s[0] != '{' {
		return ev
	}
	root := gjson.Result{Type: gjson.JSON, Raw: s}
	ev.Body = root

	var f topFields
	jscan.ForEach(s, func(k string, v gjson.Result) bool {
		f.set(k, v)
		return true
	})
	if f.typ.Type != gjson.String {
		return ev
	}
	ev.Type = f.typ.Str
	ev.SessionID = str(f.sessionID)
	ev.UUID = str(f.uuid)
	ev.ParentToolUseID = str(f.parentToolUseID)

	switch ev.Type {
	case "system":
		ev.Subtype = str(f.subtype)
		ev.Kind = systemKind(ev.Subtype)
		switch ev.Kind {
		case KindPermissionDenied:
			ev.ToolName = str(f.toolName)
			ev.ToolUseID = str(f.toolUseID)
		case KindTaskStarted, KindTaskProgress, KindTaskNotification:
			ev.ToolUseID = str(f.toolUseID)
		case KindLocalCommandOutput:
			ev.Text = root.Get("content").Str
		}
	case "assistant":
		ev.Kind = KindAssistant
		ev.Body = f.message
		ev.MessageID = str(f.message.Get("id"))
		ev.BlockType = str(f.message.Get("content.0.type"))
		ev.IsError = f.isAPIError.Type == gjson.True
		ev.Aborted = f.aborted.Type == gjson.True
		ev.LocalCommand = str(f.localCommandRun.Get("command"))
	case "user":
		ev.Body = f.message
		ev.IsReplay = f.isReplay.Type == gjson.True
		routeUser(&ev, jscan.Get(f.message.Raw, "content"))
	case "stream_event":
		ev.Body = f.event
		ev.MessageID = str(f.apiMessageID)
		routeStream(&ev, f.event)
	case "result":
		ev.Kind = KindResult
		ev.Subtype = str(f.subtype)
		ev.IsError = f.isError.Type == gjson.True
		ev.LocalCommand = str(f.localCommand)
		ev.Result = classifyResult(ev.Subtype, ev.IsError, str(f.terminalReason), f.apiErrorStatus)
	case "control_request":
		ev.Body = f.request
		ev.RequestID = str(f.requestID)
		ev.Subtype = str(f.request.Get("subtype"))
		ev.Kind = controlRequestKind(ev.Subtype)
		switch ev.Kind {
		case KindCanUseTool:
			ev.ToolName = str(f.request.Get("tool_name"))
			ev.ToolUseID = str(f.request.Get("tool_use_id"))
		case KindHookCallback:
			ev.ToolUseID = str(f.request.Get("tool_use_id"))
		}
	case "control_response":
		ev.Kind = KindControlResponse
		ev.Body = f.response
		ev.RequestID = str(f.response.Get("request_id"))
		ev.Subtype = str(f.response.Get("subtype"))
		ev.IsError = ev.Subtype == "error"
	case "control_cancel_request":
		ev.Kind = KindControlCancelRequest
		ev.RequestID = str(f.requestID)
	case "keep_alive":
		ev.Kind = KindKeepAlive
	case "command_lifecycle":
		ev.Kind = KindCommandLifecycle
	case "tool_progress":
		ev.Kind = KindToolProgress
		ev.ToolName = str(f.toolName)
		ev.ToolUseID = str(f.toolUseID)
	case "tool_use_summary":
		ev.Kind = KindToolUseSummary
	case "rate_limit_event":
		ev.Kind = KindRateLimitEvent
	case "prompt_suggestion":
		ev.Kind = KindPromptSuggestion
	case "auth_status":
		ev.Kind = KindAuthStatus
	case "conversation_reset":
		ev.Kind = KindConversationReset
	case "active_goal":
		ev.Kind = KindActiveGoal
	case "autocompact_state":
		ev.Kind = KindAutocompactState
	case "transcript_mirror":
		ev.Kind = KindTranscriptMirror
	}
	return ev
}

// topFields holds the top-level members the router looks at, gathered in
// one pass because key order is not stable (a result's "type" sits in the
// middle of the object).
type topFields struct {
	typ, subtype, sessionID, uuid, parentToolUseID gjson.Result
	requestID, apiMessageID, toolName, toolUseID   gjson.Result
	message, event, request, response              gjson.Result
	isReplay, isError, isAPIError                  gjson.Result
	terminalReason, apiErrorStatus, localCommand   gjson.Result
	localCommandRun, aborted                       gjson.Result
}

func (f *topFields) set(key string, v gjson.Result) {
	switch key {
	case "type":
		f.typ = v
	case "subtype":
		f.subtype = v
	case "session_id":
		f.sessionID = v
	case "uuid":
		f.uuid = v
	case "parent_tool_use_id":
		f.parentToolUseID = v
	case "request_id":
		f.requestID = v
	case "api_message_id":
		f.apiMessageID = v
	case "tool_name":
		f.toolName = v
	case "tool_use_id":
		f.toolUseID = v
	case "message":
		f.message = v
	case "event":
		f.event = v
	case "request":
		f.request = v
	case "response":
		f.response = v
	case "isReplay":
		f.isReplay = v
	case "is_error":
		f.isError = v
	case "is_api_error_message":
		f.isAPIError = v
	case "terminal_reason":
		f.terminalReason = v
	case "api_error_status":
		f.apiErrorStatus = v
	case "local_command":
		f.localCommand = v
	case "local_command_run":
		f.localCommandRun = v
	case "aborted":
		f.aborted = v
	}
}

// str returns r's string value, or "" when r is not a JSON string.
func str(r gjson.Result) string {
	if r.Type == gjson.String {
		return r.Str
	}
	return ""
}

func systemKind(subtype string) Kind {
	switch subtype {
	case "init":
		return KindSystemInit
	case "status":
		return KindStatus
	case "thinking_tokens":
		return KindThinkingTokens
	case "compact_boundary":
		return KindCompactBoundary
	case "api_retry":
		return KindAPIRetry
	case "task_started":
		return KindTaskStarted
	case "task_progress":
		return KindTaskProgress
	case "task_updated":
		return KindTaskUpdated
	case "task_notification":
		return KindTaskNotification
	case "background_tasks_changed":
		return KindBackgroundTasksChanged
	case "hook_started":
		return KindHookStarted
	case "hook_progress":
		return KindHookProgress
	case "hook_response":
		return KindHookResponse
	case "session_state_changed":
		return KindSessionStateChanged
	case "session_title_changed":
		return KindSessionTitleChanged
	case "permission_denied":
		return KindPermissionDenied
	case "local_command_output":
		return KindLocalCommandOutput
	case "informational":
		return KindInformational
	case "notification":
		return KindNotification
	case "commands_changed":
		return KindCommandsChanged
	case "files_persisted":
		return KindFilesPersisted
	case "memory_recall":
		return KindMemoryRecall
	case "model_refusal_fallback":
		return KindModelRefusalFallback
	case "model_refusal_no_fallback":
		return KindModelRefusalNoFallback
	case "control_request_progress":
		return KindControlRequestProgress
	case "elicitation_complete":
		return KindElicitationComplete
	case "plugin_install":
		return KindPluginInstall
	case "mirror_error":
		return KindMirrorError
	case "worker_shutting_down":
		return KindWorkerShuttingDown
	case "session_writes_lost":
		return KindSessionWritesLost
	}
	return KindUnknownSystem
}

func controlRequestKind(subtype string) Kind {
	switch subtype {
	case "can_use_tool":
		return KindCanUseTool
	case "hook_callback":
		return KindHookCallback
	case "mcp_message":
		return KindMCPMessage
	case "elicitation":
		return KindElicitation
	case "request_user_dialog":
		return KindRequestUserDialog
	case "oauth_token_refresh":
		return KindOAuthTokenRefresh
	case "host_auth_token_refresh":
		return KindHostAuthTokenRefresh
	case "remote_control_work_secret":
		return KindRemoteControlWorkSecret
	}
	if strings.HasPrefix(subtype, "ui_") {
		return KindUIRequest
	}
	return KindUnknownControlRequest
}

// Tags wrapping the output of local slash commands in replayed user frames.
const (
	localStdoutOpen  = "<local-command-stdout>"
	localStdoutClose = "</local-command-stdout>"
	localStderrOpen  = "<local-command-stderr>"
	localStderrClose = "</local-command-stderr>"
)

// LocalCommandOutput reports whether s is wrapped in <local-command-stdout>
// or <local-command-stderr> tags and returns the text inside (the closing
// tag is optional) and whether it was stderr.
func LocalCommandOutput(s string) (text string, isStderr, ok bool) {
	switch {
	case strings.HasPrefix(s, localStdoutOpen):
		return strings.TrimSuffix(s[len(localStdoutOpen):], localStdoutClose), false, true
	case strings.HasPrefix(s, localStderrOpen):
		return strings.TrimSuffix(s[len(localStderrOpen):], localStderrClose), true, true
	}
	return "", false, false
}

// routeUser picks the user sub-kind from message.content: a string or an
// array of blocks.
func routeUser(ev *Event, content gjson.Result) {
	ev.Kind = KindUser
	if ev.IsReplay {
		ev.Kind = KindUserReplay
	}
	var first string
	switch {
	case content.Type == gjson.String:
		first = content.Str
	case content.IsArray():
		firstText := true
		// jscan steps over a tool result's long content with IndexByte.
		jscan.Elements(content.Raw, func(b gjson.Result) bool {
			switch jscan.Get(b.Raw, "type").Str {
			case "tool_result":
				ev.Kind = KindToolResult
				ev.ToolUseID = str(jscan.Get(b.Raw, "tool_use_id"))
				return false
			case "text":
				if firstText {
					first = jscan.Get(b.Raw, "text").Str
					firstText = false
				}
			}
			return true
		})
		if ev.Kind == KindToolResult {
			return
		}
	}
	if text, isErr, ok := LocalCommandOutput(first); ok {
		ev.Kind = KindUserLocalCommand
		ev.Text = text
		ev.IsError = isErr
	}
}

// routeStream is tier 2: the stream_event's inner event.
func routeStream(ev *Event, e gjson.Result) {
	ev.Kind = KindUnknownStreamEvent
	var typ, index, delta, block, message gjson.Result
	e.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "type":
			typ = v
		case "index":
			index = v
		case "delta":
			delta = v
		case "content_block":
			block = v
		case "message":
			message = v
		}
		return true
	})
	ev.Subtype = str(typ)
	if index.Type == gjson.Number {
		ev.Index = int(index.Int())
	}
	switch ev.Subtype {
	case "message_start":
		ev.Kind = KindMessageStart
		if ev.MessageID == "" {
			ev.MessageID = str(message.Get("id"))
		}
	case "content_block_start":
		ev.Kind = KindContentBlockStart
		ev.BlockType = str(block.Get("type"))
		ev.ToolUseID = str(block.Get("id"))
		ev.ToolName = str(block.Get("name"))
	case "content_block_delta":
		// One pass over the delta: its type, and each field a delta
		// kind carries its text in (only the one matching the type is
		// used).
		var dtyp, text, thinking, signature, partial gjson.Result
		delta.ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "type":
				dtyp = v
			case "text":
				text = v
			case "thinking":
				thinking = v
			case "signature":
				signature = v
			case "partial_json":
				partial = v
			}
			return true
		})
		ev.DeltaType = str(dtyp)
		var body gjson.Result
		switch ev.DeltaType {
		case "text_delta":
			ev.Kind, body = KindTextDelta, text
		case "thinking_delta":
			ev.Kind, body = KindThinkingDelta, thinking
		case "signature_delta":
			ev.Kind, body = KindSignatureDelta, signature
		case "input_json_delta":
			ev.Kind, body = KindInputJSONDelta, partial
		case "citations_delta":
			ev.Kind = KindCitationsDelta
		default:
			ev.Kind = KindUnknownDelta
		}
		if body.Type == gjson.String {
			ev.Text, ev.TextRaw = body.Str, body.Raw
		}
	case "content_block_stop":
		ev.Kind = KindContentBlockStop
	case "message_delta":
		ev.Kind = KindMessageDelta
	case "message_stop":
		ev.Kind = KindMessageStop
	case "ping":
		ev.Kind = KindStreamPing
	case "error":
		ev.Kind = KindStreamError
	}
}

// classifyResult implements ResultClass. An interrupt wins over everything
// (a priority:"now" abort reports subtype success); an API error is
// recognised by terminal_reason or api_error_status, not by the subtype.
func classifyResult(subtype string, isError bool, terminalReason string, apiErrorStatus gjson.Result) ResultClass {
	switch terminalReason {
	case "aborted_streaming", "aborted_tools":
		return ResultInterrupted
	}
	if isError && (terminalReason == "api_error" || (apiErrorStatus.Exists() && apiErrorStatus.Type != gjson.Null)) {
		return ResultAPIError
	}
	switch subtype {
	case "error_max_turns":
		return ResultMaxTurns
	case "error_max_budget_usd":
		return ResultBudget
	case "error_max_structured_output_retries":
		return ResultStructuredOutput
	}
	if terminalReason == "budget_exhausted" {
		return ResultBudget
	}
	if terminalReason == "max_turns" {
		return ResultMaxTurns
	}
	if isError || strings.HasPrefix(subtype, "error") {
		return ResultError
	}
	return ResultSuccess
}

func trimSpaceBytes(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// The CLI writes its most frequent line, a streamed text or thinking delta,
// with its keys always in this order; the prefixes below match it.
const (
	deltaPrefix    = `{"type":"stream_event","event":{"type":"content_block_delta","index":`
	textDelta      = `,"delta":{"type":"text_delta","text":`
	thinkingDelta  = `,"delta":{"type":"thinking_delta","thinking":`
	deltaEventTail = `}}`
)

// routeDelta routes a text or thinking delta written in the CLI's key
// order without a general parse: the delta's text, usually most of the
// line, is stepped over once. It sets *ev to exactly the Event the general
// router would give (TestRouteDeltaFastPath checks), and reports false for
// any other line, which the general router then takes; *ev is then
// undefined.
func routeDelta(s string, ev *Event) bool {
	if !strings.HasPrefix(s, deltaPrefix) {
		return false
	}
	i := len(deltaPrefix)
	j := i
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j == i || j-i > 9 || (s[i] == '0' && j-i > 1) {
		return false
	}
	index, _ := strconv.Atoi(s[i:j])
	*ev = Event{Line: s, Type: "stream_event", Subtype: "content_block_delta", Index: index}
	rest := s[j:]
	switch {
	case strings.HasPrefix(rest, textDelta):
		ev.Kind, ev.DeltaType = KindTextDelta, "text_delta"
		j += len(textDelta)
	case strings.HasPrefix(rest, thinkingDelta):
		ev.Kind, ev.DeltaType = KindThinkingDelta, "thinking_delta"
		j += len(thinkingDelta)
	default:
		return false
	}
	// Most texts have no escapes: then the first quote ends the string,
	// found with two IndexByte scans rather than a walk.
	end, plain := -1, false
	if j < len(s) && s[j] == '"' {
		if q := strings.IndexByte(s[j+1:], '"'); q >= 0 && strings.IndexByte(s[j+1:j+1+q], '\\') < 0 {
			end, plain = j+2+q, true
		} else {
			end = jscan.SkipString(s, j)
		}
	}
	if end < 0 || !strings.HasPrefix(s[end:], deltaEventTail) {
		return false
	}
	text := gjson.Result{Type: gjson.String, Raw: s[j:end]}
	if plain {
		text.Str = text.Raw[1 : len(text.Raw)-1]
	} else {
		text.Str = gjson.Parse(text.Raw).Str
	}
	ev.Text, ev.TextRaw = text.Str, text.Raw
	eventStart := len(`{"type":"stream_event","event":`)
	ev.Body = gjson.Result{Type: gjson.JSON, Raw: s[eventStart : end+len(deltaEventTail)]}
	tail := end + len(deltaEventTail)
	if deltaTail(s[tail:], ev) {
		return true
	}
	ev.SessionID, ev.ParentToolUseID, ev.UUID, ev.MessageID = "", "", "", ""
	var dup bool
	ok := jscan.Rest(s, tail, func(k string, v gjson.Result) bool {
		switch k {
		case "type", "event":
			dup = true // a repeated key: let the general router decide
			return false
		case "session_id":
			ev.SessionID = str(v)
		case "uuid":
			ev.UUID = str(v)
		case "parent_tool_use_id":
			ev.ParentToolUseID = str(v)
		case "api_message_id":
			ev.MessageID = str(v)
		}
		return true
	})
	if !ok || dup {
		return false
	}
	return true
}

// deltaTail reads the members that follow a delta's event when they are
// exactly the four the CLI writes, in its order and without escapes:
// `,"session_id":"…","parent_tool_use_id":null|"…","uuid":"…","api_message_id":"…"}`.
// It reports false for anything else, with ev partly filled; the caller
// then clears those fields and walks the members in general.
func deltaTail(s string, ev *Event) bool {
	// One scan for escapes in the whole tail, so that each string's end
	// is its next quote.
	if strings.IndexByte(s, '\\') >= 0 {
		return false
	}
	var ok bool
	if s, ok = strings.CutPrefix(s, `,"session_id":`); !ok {
		return false
	}
	if ev.SessionID, s, ok = plainString(s); !ok {
		return false
	}
	if s, ok = strings.CutPrefix(s, `,"parent_tool_use_id":`); !ok {
		return false
	}
	if rest, isNull := strings.CutPrefix(s, "null"); isNull {
		s = rest
	} else if ev.ParentToolUseID, s, ok = plainString(s); !ok {
		return false
	}
	if s, ok = strings.CutPrefix(s, `,"uuid":`); !ok {
		return false
	}
	if ev.UUID, s, ok = plainString(s); !ok {
		return false
	}
	if s, ok = strings.CutPrefix(s, `,"api_message_id":`); !ok {
		return false
	}
	if ev.MessageID, s, ok = plainString(s); !ok {
		return false
	}
	return s == "}"
}

// plainString reads the JSON string at the start of s, which holds no
// backslash (deltaTail checked): its text and what follows it.
func plainString(s string) (text, rest string, ok bool) {
	if len(s) == 0 || s[0] != '"' {
		return "", s, false
	}
	n := strings.IndexByte(s[1:], '"')
	if n < 0 {
		return "", s, false
	}
	return s[1 : 1+n], s[2+n:], true
}

// IsToolUseBlock reports whether a content block type is a tool call:
// tool_use, server_tool_use or mcp_tool_use.
func IsToolUseBlock(typ string) bool {
	return typ == "tool_use" || typ == "server_tool_use" || typ == "mcp_tool_use"
}
