package mapping

import "strconv"

// Kind says what a line from the CLI's stdout is. Tier 1 of the router picks
// it from the top-level "type" (and "subtype", and for control_request the
// "request.subtype"); tier 2 refines a stream_event by its inner event's
// "type" (and the delta's "type").
//
// Every type and subtype the protocol reference lists (protocol README §c)
// has its own Kind. Anything else gets one of the Unknown kinds; those are
// never errors, and the Event still carries the whole line.
type Kind uint8

// Kinds. The comment on each gives the wire form it stands for.
const (
	KindUnknown Kind = iota // not an object, no string "type", or an unknown type

	// system/*
	KindSystemInit             // system/init: start of every turn
	KindStatus                 // system/status
	KindThinkingTokens         // system/thinking_tokens
	KindCompactBoundary        // system/compact_boundary
	KindAPIRetry               // system/api_retry
	KindTaskStarted            // system/task_started
	KindTaskProgress           // system/task_progress
	KindTaskUpdated            // system/task_updated
	KindTaskNotification       // system/task_notification
	KindBackgroundTasksChanged // system/background_tasks_changed
	KindHookStarted            // system/hook_started
	KindHookProgress           // system/hook_progress
	KindHookResponse           // system/hook_response
	KindSessionStateChanged    // system/session_state_changed
	KindSessionTitleChanged    // system/session_title_changed
	KindPermissionDenied       // system/permission_denied
	KindLocalCommandOutput     // system/local_command_output
	KindInformational          // system/informational
	KindNotification           // system/notification
	KindCommandsChanged        // system/commands_changed
	KindFilesPersisted         // system/files_persisted
	KindMemoryRecall           // system/memory_recall
	KindModelRefusalFallback   // system/model_refusal_fallback
	KindModelRefusalNoFallback // system/model_refusal_no_fallback
	KindControlRequestProgress // system/control_request_progress
	KindElicitationComplete    // system/elicitation_complete
	KindPluginInstall          // system/plugin_install
	KindMirrorError            // system/mirror_error
	KindWorkerShuttingDown     // system/worker_shutting_down
	KindSessionWritesLost      // system/session_writes_lost
	KindUnknownSystem          // system with a missing or unknown subtype

	// assistant and user
	KindAssistant        // assistant: one frame per completed content block
	KindUser             // user: any other user frame (interrupt markers, subagent prompts, compact summary)
	KindUserReplay       // user with isReplay:true: the host's prompt echoed back
	KindUserLocalCommand // user whose content is <local-command-stdout|stderr>…</…>
	KindToolResult       // user carrying tool_result blocks

	// stream_event/* (tier 2)
	KindMessageStart       // stream_event message_start
	KindContentBlockStart  // stream_event content_block_start
	KindTextDelta          // stream_event content_block_delta text_delta
	KindThinkingDelta      // stream_event content_block_delta thinking_delta
	KindSignatureDelta     // stream_event content_block_delta signature_delta
	KindInputJSONDelta     // stream_event content_block_delta input_json_delta
	KindCitationsDelta     // stream_event content_block_delta citations_delta
	KindUnknownDelta       // stream_event content_block_delta of another delta type
	KindContentBlockStop   // stream_event content_block_stop
	KindMessageDelta       // stream_event message_delta
	KindMessageStop        // stream_event message_stop
	KindStreamPing         // stream_event ping
	KindStreamError        // stream_event error
	KindUnknownStreamEvent // stream_event with a missing or unknown event type

	// result
	KindResult // result, any subtype; see Event.Result

	// control_request (CLI → host), by request.subtype
	KindCanUseTool              // can_use_tool
	KindHookCallback            // hook_callback
	KindMCPMessage              // mcp_message
	KindElicitation             // elicitation
	KindRequestUserDialog       // request_user_dialog
	KindOAuthTokenRefresh       // oauth_token_refresh
	KindHostAuthTokenRefresh    // host_auth_token_refresh
	KindRemoteControlWorkSecret // remote_control_work_secret
	KindUIRequest               // ui_* (any subtype with that prefix)
	KindUnknownControlRequest   // any other request.subtype

	// other top-level types
	KindControlResponse      // control_response: answers to host requests, and the echo of the host's own answers
	KindControlCancelRequest // control_cancel_request: the CLI withdraws one of its requests
	KindKeepAlive            // keep_alive
	KindCommandLifecycle     // command_lifecycle
	KindToolProgress         // tool_progress
	KindToolUseSummary       // tool_use_summary
	KindRateLimitEvent       // rate_limit_event
	KindPromptSuggestion     // prompt_suggestion
	KindAuthStatus           // auth_status
	KindConversationReset    // conversation_reset
	KindActiveGoal           // active_goal
	KindAutocompactState     // autocompact_state
	KindTranscriptMirror     // transcript_mirror

	numKinds
)

var kindNames = [numKinds]string{
	KindUnknown:                 "unknown",
	KindSystemInit:              "system/init",
	KindStatus:                  "system/status",
	KindThinkingTokens:          "system/thinking_tokens",
	KindCompactBoundary:         "system/compact_boundary",
	KindAPIRetry:                "system/api_retry",
	KindTaskStarted:             "system/task_started",
	KindTaskProgress:            "system/task_progress",
	KindTaskUpdated:             "system/task_updated",
	KindTaskNotification:        "system/task_notification",
	KindBackgroundTasksChanged:  "system/background_tasks_changed",
	KindHookStarted:             "system/hook_started",
	KindHookProgress:            "system/hook_progress",
	KindHookResponse:            "system/hook_response",
	KindSessionStateChanged:     "system/session_state_changed",
	KindSessionTitleChanged:     "system/session_title_changed",
	KindPermissionDenied:        "system/permission_denied",
	KindLocalCommandOutput:      "system/local_command_output",
	KindInformational:           "system/informational",
	KindNotification:            "system/notification",
	KindCommandsChanged:         "system/commands_changed",
	KindFilesPersisted:          "system/files_persisted",
	KindMemoryRecall:            "system/memory_recall",
	KindModelRefusalFallback:    "system/model_refusal_fallback",
	KindModelRefusalNoFallback:  "system/model_refusal_no_fallback",
	KindControlRequestProgress:  "system/control_request_progress",
	KindElicitationComplete:     "system/elicitation_complete",
	KindPluginInstall:           "system/plugin_install",
	KindMirrorError:             "system/mirror_error",
	KindWorkerShuttingDown:      "system/worker_shutting_down",
	KindSessionWritesLost:       "system/session_writes_lost",
	KindUnknownSystem:           "system/?",
	KindAssistant:               "assistant",
	KindUser:                    "user",
	KindUserReplay:              "user/replay",
	KindUserLocalCommand:        "user/local_command",
	KindToolResult:              "user/tool_result",
	KindMessageStart:            "stream_event/message_start",
	KindContentBlockStart:       "stream_event/content_block_start",
	KindTextDelta:               "stream_event/text_delta",
	KindThinkingDelta:           "stream_event/thinking_delta",
	KindSignatureDelta:          "stream_event/signature_delta",
	KindInputJSONDelta:          "stream_event/input_json_delta",
	KindCitationsDelta:          "stream_event/citations_delta",
	KindUnknownDelta:            "stream_event/content_block_delta/?",
	KindContentBlockStop:        "stream_event/content_block_stop",
	KindMessageDelta:            "stream_event/message_delta",
	KindMessageStop:             "stream_event/message_stop",
	KindStreamPing:              "stream_event/ping",
	KindStreamError:             "stream_event/error",
	KindUnknownStreamEvent:      "stream_event/?",
	KindResult:                  "result",
	KindCanUseTool:              "control_request/can_use_tool",
	KindHookCallback:            "control_request/hook_callback",
	KindMCPMessage:              "control_request/mcp_message",
	KindElicitation:             "control_request/elicitation",
	KindRequestUserDialog:       "control_request/request_user_dialog",
	KindOAuthTokenRefresh:       "control_request/oauth_token_refresh",
	KindHostAuthTokenRefresh:    "control_request/host_auth_token_refresh",
	KindRemoteControlWorkSecret: "control_request/remote_control_work_secret",
	KindUIRequest:               "control_request/ui_*",
	KindUnknownControlRequest:   "control_request/?",
	KindControlResponse:         "control_response",
	KindControlCancelRequest:    "control_cancel_request",
	KindKeepAlive:               "keep_alive",
	KindCommandLifecycle:        "command_lifecycle",
	KindToolProgress:            "tool_progress",
	KindToolUseSummary:          "tool_use_summary",
	KindRateLimitEvent:          "rate_limit_event",
	KindPromptSuggestion:        "prompt_suggestion",
	KindAuthStatus:              "auth_status",
	KindConversationReset:       "conversation_reset",
	KindActiveGoal:              "active_goal",
	KindAutocompactState:        "autocompact_state",
	KindTranscriptMirror:        "transcript_mirror",
}

// String returns the wire form the kind stands for, such as "system/init" or
// "stream_event/text_delta"; unknown kinds end in "?".
func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Unknown reports whether k is one of the kinds for types or subtypes the
// router does not know. Such events should be logged at debug level and,
// where a dialect allows it, forwarded raw; they are never errors.
func (k Kind) Unknown() bool {
	switch k {
	case KindUnknown, KindUnknownSystem, KindUnknownDelta, KindUnknownStreamEvent, KindUnknownControlRequest:
		return true
	}
	return false
}

// ControlRequest reports whether k is a CLI → host control_request, which
// the host must answer (or deliberately leave unanswered) by request_id.
func (k Kind) ControlRequest() bool {
	return k >= KindCanUseTool && k <= KindUnknownControlRequest
}

// StreamEvent reports whether k comes from a stream_event line.
func (k Kind) StreamEvent() bool {
	return k >= KindMessageStart && k <= KindUnknownStreamEvent
}

// Kinds returns every defined Kind in order, KindUnknown first.
func Kinds() []Kind {
	ks := make([]Kind, numKinds)
	for i := range ks {
		ks[i] = Kind(i)
	}
	return ks
}
