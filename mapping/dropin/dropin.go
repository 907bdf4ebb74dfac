// Package dropin decides which host lines drop-in mode may pass to the
// Claude Code CLI: only the lines the CLI can read without exiting.
//
// The CLI (2.1.330) exits with code 1 on some valid JSON lines, and its
// JSON.parse reads a duplicated key's last value. The rules below were
// found by writing each kind of line to the real CLI (the corpus in
// testdata/dropin/pass.ndjson and drop.ndjson, replayed by the end-to-end test
// TestDropInInputCorpus):
//
//   - the line must be valid UTF-8 and valid JSON;
//   - it must be an object (null kills the CLI; other values it ignores);
//   - it must have a "type" string;
//   - the type must not be one of the CLI's internal input types
//     (assistant, system, bash_command, queued_notification,
//     session_notice, workflow_launch): the CLI reads them, a host never
//     sends them, and some poison the session ({"type":"assistant",
//     "message":"x"} makes every later turn fail) or run a shell command;
//   - a type the CLI does not know passes: the CLI ignores it, as the
//     protocol reference says and a transcript shows, and a newer CLI may
//     know it;
//   - a user line needs "message" to be an object whose "role" is the
//     string "user" (the CLI exits on anything else; "content" it
//     takes as it comes);
//   - a control_request needs "request" to be an object (the CLI exits
//     when it is missing, null, false, 0 or "").
//
// Keys are read the way the CLI reads them: escapes decoded, and the last
// of duplicated keys wins.
//
// The package is pure: no I/O, no state that changes; Check is safe for
// concurrent use.
package dropin

import (
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// The types a host writes to the CLI (the CLI's stdin schema).
const (
	TypeUser                 = "user"
	TypeControlRequest       = "control_request"
	TypeControlResponse      = "control_response"
	TypeControlCancelRequest = "control_cancel_request"
	TypeKeepAlive            = "keep_alive"
	TypeUpdateEnv            = "update_environment_variables"
)

// internal are the types the CLI reads from its input for its own use
// (remote sessions, the TUI); a host never writes them.
var internal = map[string]bool{
	"assistant": true, "system": true, "bash_command": true,
	"queued_notification": true, "session_notice": true, "workflow_launch": true,
}

// Reason says why a line is dropped; the empty Reason means it passes.
type Reason string

// The reasons, worded for a log line ("host line dropped: <reason>").
const (
	Pass         Reason = ""
	NotUTF8      Reason = "not valid UTF-8"
	NotJSON      Reason = "not valid JSON"
	NotObject    Reason = "not a JSON object"
	NoType       Reason = `no "type" string`
	InternalType Reason = "one of the CLI's internal types, which a host never sends"
	NoMessage    Reason = `a user line whose "message" is not an object`
	NotUserRole  Reason = `a user line whose message "role" is not "user"`
	NoRequest    Reason = `a control_request whose "request" is not an object`
)

// Verdict is Check's decision on one line.
type Verdict struct {
	// Type is the line's "type" (the last one, as the CLI reads it), or ""
	// when it has none that is a string.
	Type string
	// Reason is why the line must not reach the CLI; Pass when it may.
	Reason Reason
}

// OK reports whether the line may be written to the CLI.
func (v Verdict) OK() bool { return v.Reason == Pass }

// Check decides whether the CLI can read line (one line, without its
// terminator) without exiting.
func Check(line []byte) Verdict {
	if !utf8.Valid(line) {
		return Verdict{Reason: NotUTF8}
	}
	if !gjson.ValidBytes(line) {
		return Verdict{Reason: NotJSON}
	}
	root := gjson.ParseBytes(line)
	if !root.IsObject() {
		return Verdict{Reason: NotObject}
	}
	var typ, message, request gjson.Result
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "type":
			typ = v
		case "message":
			message = v
		case "request":
			request = v
		}
		return true
	})
	if typ.Type != gjson.String {
		return Verdict{Reason: NoType}
	}
	v := Verdict{Type: typ.Str}
	switch typ.Str {
	case TypeUser:
		if !message.IsObject() {
			v.Reason = NoMessage
			return v
		}
		var role gjson.Result
		message.ForEach(func(k, v gjson.Result) bool {
			if k.Str == "role" {
				role = v
			}
			return true
		})
		if role.Type != gjson.String || role.Str != "user" {
			v.Reason = NotUserRole
		}
	case TypeControlRequest:
		if !request.IsObject() {
			v.Reason = NoRequest
		}
	default:
		if internal[typ.Str] {
			v.Reason = InternalType
		}
	}
	return v
}
