package mapping

import (
	"strings"

	"github.com/tidwall/gjson"
)

// SideEntry reports whether an entry of a CLI session file is no part of
// the main conversation as its user saw it: a subagent's (sidechain), a
// meta entry the CLI adds, a compaction summary, or one shown only in the
// transcript. Listings, replays and histories of a session leave these
// out.
func SideEntry(e gjson.Result) bool {
	return e.Get("isSidechain").Bool() || e.Get("isMeta").Bool() ||
		e.Get("isCompactSummary").Bool() || e.Get("isVisibleInTranscriptOnly").Bool()
}

// UserKind is what the content of a user entry of a session file holds.
type UserKind uint8

const (
	UserOther       UserKind = iota // a wrapper the CLI added, or nothing
	UserPrompt                      // the user's prompt
	UserCommand                     // a slash command the user typed (<command-name>)
	UserStdout                      // <local-command-stdout>
	UserStderr                      // <local-command-stderr>
	UserInterrupted                 // [Request interrupted …]
	UserToolResult                  // tool_result blocks
)

// PromptText returns the prompt a user entry's content holds: the text
// the user wrote (the CLI's wrappers left out), or a slash command with its
// arguments. ok is false for anything else: tool results, command output,
// interrupt markers, wrappers only.
func PromptText(content gjson.Result) (text string, ok bool) {
	text, kind := UserText(content)
	return text, kind == UserPrompt || kind == UserCommand
}

// UserText classifies a user entry's content (message.content: a string
// or blocks) and returns its text: for a prompt, its text blocks without
// the CLI's wrappers (reminders, caveats, pasted images' notes), joined by
// newlines; for a slash command, its name and arguments; for command
// output or an interrupt marker, the text inside.
func UserText(content gjson.Result) (string, UserKind) {
	var texts []string
	switch {
	case content.Type == gjson.String:
		texts = []string{content.Str}
	case content.IsArray():
		tool := false
		content.ForEach(func(_, b gjson.Result) bool {
			switch b.Get("type").Str {
			case "tool_result":
				tool = true
				return false
			case "text":
				texts = append(texts, b.Get("text").Str)
			}
			return true
		})
		if tool {
			return "", UserToolResult
		}
	}
	if len(texts) == 0 {
		return "", UserOther
	}
	first := strings.TrimSpace(texts[0])
	switch {
	case strings.HasPrefix(first, "<command-name>"):
		name := between(first, "<command-name>", "</command-name>")
		if args := strings.TrimSpace(between(first, "<command-args>", "</command-args>")); args != "" {
			name += " " + args
		}
		return name, UserCommand
	case strings.HasPrefix(first, "<local-command-stdout>"):
		return strings.TrimSuffix(strings.TrimPrefix(first, "<local-command-stdout>"), "</local-command-stdout>"), UserStdout
	case strings.HasPrefix(first, "<local-command-stderr>"):
		return strings.TrimSuffix(strings.TrimPrefix(first, "<local-command-stderr>"), "</local-command-stderr>"), UserStderr
	case strings.HasPrefix(first, "[Request interrupted"):
		return first, UserInterrupted
	}
	var kept []string
	for _, t := range texts {
		tt := strings.TrimSpace(t)
		if strings.HasPrefix(tt, "<system-reminder>") || strings.HasPrefix(tt, "<local-command-caveat>") ||
			strings.HasPrefix(tt, "[Image") || strings.HasPrefix(tt, "<command-message>") {
			continue
		}
		kept = append(kept, t)
	}
	if len(kept) == 0 {
		return "", UserOther
	}
	return strings.Join(kept, "\n"), UserPrompt
}

func between(s, open, close string) string {
	i := strings.Index(s, open)
	if i < 0 {
		return ""
	}
	s = s[i+len(open):]
	if j := strings.Index(s, close); j >= 0 {
		return s[:j]
	}
	return s
}

// SessionSummary is what a session list shows of a CLI session file,
// gathered from its lines (Line, in file order; session/clifiles feeds it
// the whole file, or only its head and tail). Every dialect lists by it,
// so they agree on which files hold a conversation (Conversation) and on
// what a file's prompts are.
type SessionSummary struct {
	CWD         string // the first entry's working directory ("cwd")
	CreatedAt   string // the first entry's timestamp, RFC 3339
	FirstPrompt string // the first prompt of the main conversation (PromptText)
	LastPrompt  string // the latest prompt: of a prompt entry or a last-prompt entry, whichever came later
	CustomTitle string // the newest title the user gave (/rename)
	AITitle     string // the newest title the CLI made up
	// Messages counts the user prompts and assistant messages of the main
	// conversation (not SideEntry) in the lines given: an assistant
	// message written as one entry per content block counts once.
	Messages  int
	lastMsgID string
	// marks: what the summary was before each prompt, for a rewind
	// marker that cuts the conversation back to it (RewindCut).
	marks []summaryMark
}

type summaryMark struct {
	uuid, firstPrompt, lastPrompt, lastMsgID string
	messages                                 int
}

// Line takes one line of the file; lines that are not JSON are skipped.
func (s *SessionSummary) Line(line []byte) {
	if !gjson.ValidBytes(line) {
		return
	}
	e := gjson.ParseBytes(line)
	if s.CreatedAt == "" {
		if ts := e.Get("timestamp"); ts.Type == gjson.String {
			s.CreatedAt = ts.Str
		}
	}
	if s.CWD == "" {
		if c := e.Get("cwd"); c.Type == gjson.String {
			s.CWD = c.Str
		}
	}
	switch e.Get("type").Str {
	case "last-prompt":
		if cut, ok := RewindCut(line); ok {
			s.rewind(cut)
			return
		}
		if p := e.Get("lastPrompt"); p.Type == gjson.String {
			s.LastPrompt = p.Str
		}
	case "custom-title":
		if t := e.Get("customTitle"); t.Type == gjson.String {
			s.CustomTitle = t.Str
		}
	case "ai-title":
		if t := e.Get("aiTitle"); t.Type == gjson.String {
			s.AITitle = t.Str
		}
	case "user":
		if SideEntry(e) {
			return
		}
		if text, ok := PromptText(e.Get("message.content")); ok {
			if id := e.Get("uuid").Str; id != "" {
				s.marks = append(s.marks, summaryMark{uuid: id, firstPrompt: s.FirstPrompt, lastPrompt: s.LastPrompt, lastMsgID: s.lastMsgID, messages: s.Messages})
			}
			s.Messages++
			s.LastPrompt = text
			if s.FirstPrompt == "" {
				s.FirstPrompt = text
			}
		}
	case "assistant":
		if SideEntry(e) {
			return
		}
		if id := e.Get("message.id").Str; id == "" || id != s.lastMsgID {
			s.Messages++
			s.lastMsgID = id
		}
	}
}

// rewind undoes the prompt cut and what came after it. A cut prompt not
// among the lines given (a bounded read skipped it) changes nothing.
func (s *SessionSummary) rewind(cut string) {
	for i, m := range s.marks {
		if m.uuid == cut {
			s.FirstPrompt, s.LastPrompt, s.lastMsgID, s.Messages = m.firstPrompt, m.lastPrompt, m.lastMsgID, m.messages
			s.marks = s.marks[:i]
			return
		}
	}
}

// Conversation reports whether the lines given hold a conversation: a
// user prompt (a slash command included) or an assistant message that is
// no SideEntry. A file of side entries and bookkeeping alone (subagents'
// entries, meta entries, summaries, queue operations, attachments) holds
// none, and no list shows it.
func (s *SessionSummary) Conversation() bool { return s.Messages > 0 }

// Title is the session's title as the CLI records it in the file: the
// newest title the user gave (/rename, rename_session), else the newest
// the CLI made up (generate_session_title with persist, an "ai-title"
// entry); "" when the file has neither.
func (s *SessionSummary) Title() string {
	if s.CustomTitle != "" {
		return s.CustomTitle
	}
	return s.AITitle
}

// LastUserMessage is the latest prompt, cut to its first line and 200
// runes.
func (s *SessionSummary) LastUserMessage() string {
	p := s.LastPrompt
	if i := strings.IndexByte(p, '\n'); i >= 0 {
		p = p[:i]
	}
	p = strings.TrimSpace(p)
	n := 0
	for i := range p {
		if n == 200 {
			return p[:i] + "…"
		}
		n++
	}
	return p
}
