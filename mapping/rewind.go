package mapping

import (
	"bytes"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/internal/jsonw"
)

// How the CLI 2.1.330 records a conversation rewind (rewind_conversation)
// in its session file: nothing already written is changed. It appends
//
//	{"type":"last-prompt","lastPrompt":"<the cut prompt>","leafUuid":"<the last entry kept>","explicit":true,"rewound":true,"cutUuid":"<the cut prompt's uuid>","sessionId":"…"}
//
// and the next prompt's parentUuid names an entry before the cut. The cut
// prompt and every entry written after it, up to that marker, are no
// longer part of the conversation (the CLI's --resume follows leafUuid
// and never reads them). A reader that goes through the file in order
// drops them when it meets the marker.

var rewoundKey = []byte(`"rewound":true`)

// RewindCut reports whether line is a rewind marker, and the uuid of the
// prompt it cut (the first entry it dropped).
func RewindCut(line []byte) (cut string, ok bool) {
	if !bytes.Contains(line, rewoundKey) {
		return "", false
	}
	r := gjson.GetManyBytes(line, "type", "rewound", "cutUuid")
	if r[0].Str != "last-prompt" || !r[1].Bool() || r[2].Type != gjson.String || r[2].Str == "" {
		return "", false
	}
	return r[2].Str, true
}

// Rewinds gathers, from a session file's lines in file order, the entries
// the file's rewinds dropped: the cut prompt and every entry with a uuid
// written after it and before the marker. A marker whose prompt was not
// seen drops nothing. Session histories read the file twice, this first.
type Rewinds struct {
	order   []string       // uuids of the entries kept so far, in file order
	pos     map[string]int // index in order
	dropped map[string]struct{}
}

// Line takes one line of the file; lines that are not JSON are skipped.
func (r *Rewinds) Line(line []byte) {
	if cut, ok := RewindCut(line); ok {
		i, seen := r.pos[cut]
		if !seen {
			return
		}
		if r.dropped == nil {
			r.dropped = make(map[string]struct{})
		}
		for _, id := range r.order[i:] {
			r.dropped[id] = struct{}{}
			delete(r.pos, id)
		}
		r.order = r.order[:i]
		return
	}
	id := gjson.GetBytes(line, "uuid")
	if id.Type != gjson.String || id.Str == "" {
		return
	}
	if r.pos == nil {
		r.pos = make(map[string]int)
	}
	r.pos[id.Str] = len(r.order)
	r.order = append(r.order, id.Str)
}

// Any reports whether a rewind dropped anything.
func (r *Rewinds) Any() bool { return len(r.dropped) > 0 }

// Dropped reports whether a rewind dropped the entry of line: one with a
// uuid the rewinds dropped, or a rewind marker itself.
func (r *Rewinds) Dropped(line []byte) bool {
	if len(r.dropped) == 0 {
		return false
	}
	if _, ok := RewindCut(line); ok {
		return true
	}
	id := gjson.GetBytes(line, "uuid")
	_, ok := r.dropped[id.Str]
	return ok && id.Type == gjson.String
}

// Prompt is one prompt of a session's main conversation.
type Prompt struct {
	UUID string // the user entry's uuid: what rewind_files and rewind_conversation name
	Text string // PromptText
}

// Prompts gathers the prompts of a session file's main conversation, in
// order, as the file's rewinds left it: the turns a rewind can go back to
// (the prompt of turn n is Prompts.List()[n]).
type Prompts struct {
	list []Prompt
}

// Line takes one line of the file; lines that are not JSON are skipped.
func (p *Prompts) Line(line []byte) {
	if cut, ok := RewindCut(line); ok {
		for i, q := range p.list {
			if q.UUID == cut {
				p.list = p.list[:i]
				break
			}
		}
		return
	}
	if !gjson.ValidBytes(line) {
		return
	}
	e := gjson.ParseBytes(line)
	if e.Get("type").Str != "user" || SideEntry(e) {
		return
	}
	id := e.Get("uuid").Str
	if text, ok := PromptText(e.Get("message.content")); ok && id != "" {
		p.list = append(p.list, Prompt{UUID: id, Text: text})
	}
}

// List is the prompts, oldest first.
func (p *Prompts) List() []Prompt { return p.list }

// AppendRewindFiles appends rewind_files: the CLI restores the files its
// tools changed since the prompt userMessageID (its checkpoint before
// that prompt); with dryRun it only says which (filesChanged). The CLI
// answers {"canRewind":true,"filesChanged":[…],"insertions":n,"deletions":n}
// to a dry run, {"canRewind":true,"skippedLinks":n} to a rewind, and an
// error when file checkpointing is off or the prompt has no checkpoint.
func AppendRewindFiles(dst []byte, requestID, userMessageID string, dryRun bool) []byte {
	dst = startRequest(dst, requestID, "rewind_files")
	dst = jsonw.Key(dst, "user_message_id")
	dst = jsonw.String(dst, userMessageID)
	if dryRun {
		dst = append(dst, `,"dry_run":true`...)
	}
	return append(dst, "}}"...)
}

// AppendRewindConversation appends rewind_conversation: the CLI drops the
// prompt targetUUID and everything after it from the conversation. It
// answers {"rewound":true,"targetMessageUuid":…,"prefillText":"<the
// prompt>","precedingAssistantUuid":…}, or {"rewound":false,…,"error":
// "target not found","reason":"target_not_found"} as a success.
func AppendRewindConversation(dst []byte, requestID, targetUUID string) []byte {
	dst = startRequest(dst, requestID, "rewind_conversation")
	dst = jsonw.Key(dst, "target_message_uuid")
	dst = jsonw.String(dst, targetUUID)
	return append(dst, "}}"...)
}
