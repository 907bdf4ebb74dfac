package acp

import (
	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/acp"
	"github.com/ccbridge/ccbridge/mapping/jsonrpc"
)

// rewindErr is a failed rewind as an ACP error: -32602 for a request
// that names no turn of the conversation, -32002 for a session with
// nothing to rewind, -32600 while a prompt runs, -32603 when the CLI
// failed or cannot restore the files; data.reason is the core's code.
func rewindErr(e *adapter.RewindError) *acp.Error {
	code := jsonrpc.CodeInternalError
	switch e.Code {
	case adapter.RewindInvalid, adapter.RewindNotFound:
		code = jsonrpc.CodeInvalidParams
	case adapter.RewindNoSession:
		code = acp.CodeResourceNotFound
	case adapter.RewindBusy:
		code = jsonrpc.CodeInvalidRequest
	}
	return &acp.Error{Code: code, Message: acp.MethodSessionRewind + ": " + e.Message, Data: `{"reason":"` + e.Code + `"}`}
}

// busy reports whether a prompt of s runs, waits, or is being set up.
func (s *acpSession) busy() bool {
	return s.running != nil || len(s.queue) > 0 || s.pending != nil || s.replaying
}

// rewind serves _session/rewind, between prompts only.
func (l *acpLoop) rewind(id string, params gjson.Result) {
	p, err := acp.ParseRewind(params)
	if err != nil {
		l.fail(id, err)
		return
	}
	s, err := l.sessionFor(acp.MethodSessionRewind, params)
	if err != nil {
		l.fail(id, err)
		return
	}
	if s.busy() {
		l.fail(id, rewindErr(&adapter.RewindError{Code: adapter.RewindBusy, Message: "a prompt is running; wait for its answer or cancel it"}))
		return
	}
	req := adapter.RewindRequest{Turns: p.NumTurns, UserMessageID: p.MessageID, Files: p.Files(), DryRun: p.DryRun, KeepConversation: !p.Conversation()}
	s.sup.Rewind(req, func(res adapter.RewindResult, e *adapter.RewindError) {
		defer l.emit()
		defer l.next(s) // a prompt sent meanwhile waited for the rewind
		if e != nil {
			l.fail(id, rewindErr(e))
			return
		}
		l.reply(id, acp.AppendRewindResult(nil, acp.RewindResult{Params: p, MessageID: res.UserMessageID, Prompt: res.Prompt,
			Turns: res.Turns, Files: res.Files, Insertions: res.Insertions, Deletions: res.Deletions}))
	})
}

// rewindPoints serves _session/rewind_points.
func (l *acpLoop) rewindPoints(id string, params gjson.Result) {
	s, err := l.sessionFor(acp.MethodSessionRewindPoints, params)
	if err != nil {
		l.fail(id, err)
		return
	}
	s.sup.RewindPoints(func(points []mapping.Prompt, e *adapter.RewindError) {
		defer l.emit()
		if e != nil {
			l.fail(id, rewindErr(e))
			return
		}
		l.reply(id, acp.AppendRewindPoints(nil, points))
	})
}
