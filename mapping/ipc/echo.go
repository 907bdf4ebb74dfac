package ipc

import (
	"bytes"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/internal/jscan"
	"github.com/ccbridge/ccbridge/internal/jsonw"
)

// CheckLine checks what every inbound line must be before any field of it
// is read, and returns it parsed: UTF-8, JSON, one object, and no member
// name twice in any object of it. JSON readers differ in which of two
// members they keep (ccbridge reads the first, a browser's JSON.parse the
// last), so a line with one could be taken as one message here and shown
// as another wherever it goes on; it is refused with duplicate_key. The
// error is the one FromUI returns for the line; a transport that takes
// lines for a session (ccbridge serve's POST) checks them the same way.
func CheckLine(line []byte) (gjson.Result, *Error) {
	line = bytes.TrimSpace(line)
	if !utf8.Valid(line) {
		return gjson.Result{}, &Error{Code: CodeInvalidJSON, Message: "the line is not valid UTF-8"}
	}
	if !gjson.ValidBytes(line) {
		return gjson.Result{}, &Error{Code: CodeInvalidJSON, Message: "the line is not valid JSON"}
	}
	root := gjson.Parse(string(line))
	if !root.IsObject() {
		return gjson.Result{}, &Error{Code: CodeInvalidJSON, Message: "the line is not a JSON object"}
	}
	if name, dup := jscan.DuplicateKey(root.Raw); dup {
		return gjson.Result{}, &Error{Code: CodeDuplicateKey, Field: name,
			Message: "member " + quote(name) + " appears more than once; JSON readers differ in which one they keep, so the line is refused"}
	}
	return root, nil
}

// Echo returns the echo (see Options.Echo) of a user_message,
// tool_approval or question_answer line, built from what CheckLine
// parsed, without taking the message (no prompt id, no request settled):
// for a prompt the session could not send. It is nil for a line CheckLine
// refuses and for another type.
func Echo(line []byte) []byte {
	root, err := CheckLine(line)
	if err != nil {
		return nil
	}
	switch typ := root.Get("type").Str; typ {
	case "user_message", "steer", "tool_approval", "question_answer":
		return echo(typ, root)
	}
	return nil
}

// echoMembers are the members of each echoed type, in the order the echo
// writes them: those FromUI reads, and no other.
var echoMembers = map[string][]string{
	"user_message":    {"text", "attachments"},
	"steer":           {"text", "attachments"},
	"tool_approval":   {"request_id", "decision", "updatedInput", "updatedPermissions", "message", "interrupt"},
	"question_answer": {"request_id", "answers"},
}

// attachmentMembers are the members of an attachment FromUI reads.
var attachmentMembers = []string{"kind", "name", "media_type", "content"}

// echo builds the echo of a message of type typ from its parsed object
// root (checked by CheckLine: no member twice, so each value is the one
// FromUI read): its type, the members FromUI reads that it has, in a fixed
// order, then "ipc_version": 2 and "echo": true. Unknown members are left
// out, and so is the line as it was sent.
func echo(typ string, root gjson.Result) []byte {
	o := jsonw.NewObj(nil).Str("type", typ)
	for _, name := range echoMembers[typ] {
		v := root.Get(gjson.Escape(name))
		switch {
		case !v.Exists():
		case name == "attachments" && v.IsArray():
			b := []byte{'['}
			v.ForEach(func(_, a gjson.Result) bool {
				if len(b) > 1 {
					b = append(b, ',')
				}
				ao := jsonw.NewObj(b)
				for _, m := range attachmentMembers {
					if mv := a.Get(m); mv.Exists() {
						ao.Raw(m, mv.Raw)
					}
				}
				b = ao.End()
				return true
			})
			o.Raw(name, string(append(b, ']')))
		default:
			o.Raw(name, v.Raw)
		}
	}
	return o.Int("ipc_version", 2).Bool("echo", true).End()
}
