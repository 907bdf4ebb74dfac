package mapping

// AppendAutoReply appends the answer ccbridge gives on its own to a CLI
// control_request that no dialect handles, and reports whether there is
// one. It follows what the SDK does when it has no handler:
//
//   - can_use_tool: none (false); the dialect must answer.
//   - request_user_dialog: none (false); the SDK deliberately stays silent.
//   - hook_callback: success {} ("no opinion"); ccbridge registers no hooks,
//     so this only answers a request it did not ask for.
//   - elicitation: success {"action":"decline"}.
//   - mcp_message, oauth_token_refresh, host_auth_token_refresh,
//     remote_control_work_secret, ui_*, and any unknown subtype: an error
//     "Unsupported control request subtype: X" with error_code
//     "unsupported_request", as the SDK answers.
//
// For any other Kind it returns dst, false.
func AppendAutoReply(dst []byte, ev *Event) ([]byte, bool) {
	switch ev.Kind {
	case KindHookCallback:
		return AppendControlResponse(dst, ev.RequestID, "{}"), true
	case KindElicitation:
		return AppendControlResponse(dst, ev.RequestID, `{"action":"decline"}`), true
	case KindMCPMessage, KindOAuthTokenRefresh, KindHostAuthTokenRefresh,
		KindRemoteControlWorkSecret, KindUIRequest, KindUnknownControlRequest:
		return AppendControlError(dst, ev.RequestID, "Unsupported control request subtype: "+ev.Subtype, "unsupported_request"), true
	}
	return dst, false
}
