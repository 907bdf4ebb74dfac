package acp

import (
	"bytes"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/internal/jsonw"
	"github.com/ccbridge/ccbridge/mapping"
)

// SessionInfo is one entry of session/list.
type SessionInfo struct {
	ID        string
	CWD       string
	Title     string
	UpdatedAt string // RFC 3339
}

// AppendListResult appends the session/list result.
func AppendListResult(dst []byte, sessions []SessionInfo, nextCursor string) []byte {
	dst = append(dst, `{"sessions":[`...)
	for i, s := range sessions {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"sessionId":`...)
		dst = jsonw.String(dst, s.ID)
		dst = append(dst, `,"cwd":`...)
		dst = jsonw.String(dst, s.CWD)
		if s.Title != "" {
			dst = append(dst, `,"title":`...)
			dst = jsonw.String(dst, s.Title)
		}
		if s.UpdatedAt != "" {
			dst = append(dst, `,"updatedAt":`...)
			dst = jsonw.String(dst, s.UpdatedAt)
		}
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	if nextCursor != "" {
		dst = append(dst, `,"nextCursor":`...)
		dst = jsonw.String(dst, nextCursor)
	}
	return append(dst, '}')
}

// SessionTitle is the title session/list shows for a session file
// summarized in s: the newest custom title (/rename), else the newest AI
// title, else the first line of the first prompt (at most 100 bytes).
func SessionTitle(s *mapping.SessionSummary) string {
	if t := s.Title(); t != "" {
		return t
	}
	return firstLine(s.FirstPrompt, 100)
}

// Replay appends the session/update lines that replay one line of a
// session file (for session/load): user text and images become
// user_message_chunk, assistant text agent_message_chunk, thinking
// agent_thought_chunk, tool_use a tool_call (TodoWrite a plan), and
// tool_result the tool_call_update that finishes it. Other line types
// (attachments, API request records, titles, cost state) and subagent
// lines give nothing.
func (t *Translator) Replay(line []byte, out [][]byte) [][]byte {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' || !gjson.ValidBytes(line) {
		return out
	}
	typ := gjson.GetBytes(line, "type").Str
	if (typ != "user" && typ != "assistant") || mapping.SideEntry(gjson.ParseBytes(line)) {
		return out
	}
	msg := gjson.GetBytes(line, "message")
	content := msg.Get("content")
	switch typ {
	case "user":
		id := gjson.GetBytes(line, "uuid").Str
		if content.Type == gjson.String {
			return t.replayUserText(content.Str, id, out)
		}
		hasResult := false
		content.ForEach(func(_, b gjson.Result) bool {
			switch b.Get("type").Str {
			case "text":
				out = t.replayUserText(b.Get("text").Str, id, out)
			case "image":
				src := b.Get("source")
				if src.Get("type").Str == "base64" {
					l := appendUpdateHead(nil, t.sid, "user_message_chunk")
					l = append(l, `,"content":{"type":"image","data":`...)
					l = jsonw.String(l, src.Get("data").Str)
					l = append(l, `,"mimeType":`...)
					l = jsonw.String(l, src.Get("media_type").Str)
					l = append(l, '}')
					if id != "" {
						l = append(l, `,"messageId":`...)
						l = jsonw.String(l, id)
					}
					out = append(out, appendUpdateTail(l))
				}
			case "tool_result":
				hasResult = true
			}
			return true
		})
		if hasResult {
			out = t.toolResults(content, gjson.GetBytes(line, "toolUseResult"), "", out)
		}
	case "assistant":
		id := msg.Get("id").Str
		content.ForEach(func(_, b gjson.Result) bool {
			switch typ := b.Get("type").Str; {
			case typ == "text":
				if s := b.Get("text").Str; s != "" {
					out = append(out, t.appendChunk(nil, "agent_message_chunk", s, id, ""))
				}
			case typ == "thinking":
				if s := b.Get("thinking").Str; s != "" {
					out = append(out, t.appendChunk(nil, "agent_thought_chunk", s, id, ""))
				}
			case mapping.IsToolUseBlock(typ):
				out = t.toolInput(b.Get("id").Str, b.Get("name").Str, "", b.Get("input"), out)
			}
			return true
		})
	}
	return out
}

// replayUserText replays one user text: what the user typed as
// user_message_chunk, a slash command as "/name args", its output as
// agent_message_chunk, an embedded resource (<context ref="uri">, as
// PromptBlocks writes it) as a resource block again; the CLI's reminders
// are left out.
func (t *Translator) replayUserText(s, id string, out [][]byte) [][]byte {
	switch {
	case s == "" || isWrapper(s):
		return out
	case strings.HasPrefix(s, "<command-name>"):
		cmd := between(s, "<command-name>", "</command-name>")
		if !strings.HasPrefix(cmd, "/") {
			cmd = "/" + cmd
		}
		if args := between(s, "<command-args>", "</command-args>"); args != "" {
			cmd += " " + args
		}
		return append(out, t.appendChunk(nil, "user_message_chunk", cmd, id, ""))
	}
	if text, _, ok := mapping.LocalCommandOutput(s); ok {
		if text == "" {
			return out
		}
		return append(out, t.appendChunk(nil, "agent_message_chunk", text, id, ""))
	}
	if uri, text, ok := contextBlock(s); ok {
		l := appendUpdateHead(nil, t.sid, "user_message_chunk")
		l = append(l, `,"content":{"type":"resource","resource":{"uri":`...)
		l = jsonw.String(l, uri)
		l = append(l, `,"text":`...)
		l = jsonw.String(l, text)
		l = append(l, "}}"...)
		if id != "" {
			l = append(l, `,"messageId":`...)
			l = jsonw.String(l, id)
		}
		return append(out, appendUpdateTail(l))
	}
	return append(out, t.appendChunk(nil, "user_message_chunk", s, id, ""))
}

// between returns the text between open and close in s, or "".
func between(s, open, close string) string {
	i := strings.Index(s, open)
	if i < 0 {
		return ""
	}
	s = s[i+len(open):]
	if j := strings.Index(s, close); j >= 0 {
		return strings.TrimSpace(s[:j])
	}
	return ""
}

// contextBlock reads a text block PromptBlocks made from an embedded
// resource: <context ref="uri">\ntext\n</context>.
func contextBlock(s string) (uri, text string, ok bool) {
	const open, close = `<context ref="`, "\n</context>"
	if !strings.HasPrefix(s, open) || !strings.HasSuffix(s, close) {
		return "", "", false
	}
	rest := s[len(open) : len(s)-len(close)]
	i := strings.Index(rest, "\">\n")
	if i < 0 {
		return "", "", false
	}
	return rest[:i], rest[i+3:], true
}

// ReplayDone forgets the tool calls of a replay that never got a result.
func (t *Translator) ReplayDone() {
	clear(t.tools)
}
