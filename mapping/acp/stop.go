package acp

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/internal/jsonw"
	"github.com/ccbridge/ccbridge/mapping"
)

// Stop reasons.
const (
	StopEndTurn         = "end_turn"
	StopMaxTokens       = "max_tokens"
	StopMaxTurnRequests = "max_turn_requests"
	StopRefusal         = "refusal"
	StopCancelled       = "cancelled"
)

// TurnOutcome says how a result line ends the prompt turn: a stop reason,
// or (for a failed turn) a JSON-RPC error. cancelled says the client sent
// session/cancel during the turn: the answer is then "cancelled" whatever
// the result, as the spec asks.
//
//	result                                   outcome
//	success, stop_reason max_tokens          max_tokens (also model_context_window_exceeded)
//	success, stop_reason refusal             refusal
//	success, otherwise                       end_turn
//	interrupted (aborted_streaming/_tools)   cancelled
//	error_max_turns, error_max_budget_usd    max_turn_requests
//	API error 401, "Not logged in"/"/login"  error -32000 (authentication required)
//	other API errors and failures            error -32603 with the CLI's text
func TurnOutcome(ev *mapping.Event, cancelled bool) (string, *Error) {
	if cancelled {
		return StopCancelled, nil
	}
	switch ev.Result {
	case mapping.ResultSuccess:
		switch ev.Get("stop_reason").Str {
		case "max_tokens", "model_context_window_exceeded":
			return StopMaxTokens, nil
		case "refusal":
			return StopRefusal, nil
		}
		return StopEndTurn, nil
	case mapping.ResultInterrupted:
		return StopCancelled, nil
	case mapping.ResultMaxTurns, mapping.ResultBudget:
		return StopMaxTurnRequests, nil
	}
	msg := ev.Get("result").Str
	if msg == "" {
		var parts []string
		ev.Get("errors").ForEach(func(_, e gjson.Result) bool {
			if e.Type == gjson.String && !strings.HasPrefix(e.Str, "[ede_diagnostic]") {
				parts = append(parts, e.Str)
			}
			return true
		})
		msg = strings.Join(parts, "; ")
	}
	if msg == "" {
		msg = "the turn failed (" + ev.Subtype + ")"
	}
	code := -32603
	if ev.Get("api_error_status").Int() == 401 || strings.Contains(msg, "/login") || strings.Contains(msg, "Not logged in") ||
		strings.Contains(msg, "Invalid API key") {
		code = CodeAuthRequired
	}
	return "", &Error{Code: code, Message: msg, Data: string(appendResultData(nil, ev))}
}

// appendResultData appends the error data of a failed turn: the result's
// subtype, terminal_reason, api_error_status and errors, copied as they
// are.
func appendResultData(dst []byte, ev *mapping.Event) []byte {
	dst = append(dst, `{"subtype":`...)
	dst = jsonw.String(dst, ev.Subtype)
	for _, k := range []string{"terminal_reason", "api_error_status", "errors"} {
		if v := ev.Get(k); v.Exists() {
			dst = append(dst, ',', '"')
			dst = append(dst, k...)
			dst = append(dst, '"', ':')
			dst = append(dst, v.Raw...)
		}
	}
	return append(dst, '}')
}
