package fakemodel

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// requestInfo is what the rule selection needs to know about a
// /v1/messages request. Everything is derived from the request alone.
type requestInfo struct {
	model      string
	stream     bool
	prompt     string // latest prompt text ("" if none)
	step       int    // assistant turns since the prompt
	cwd        string
	images     int
	toolResult string
	steer      string // mid-turn user messages after the prompt (steerPrefix)
}

// steerPrefix starts the system message in which the CLI (2.1.330) hands
// the model a user message written to its stdin while a turn ran: it takes
// such a message into the running turn after the next tool result, as
// "<steerPrefix><text>\n\nThis is how Claude Code surfaces messages …".
const steerPrefix = "The user sent a new message while you were working:\n"

// wrapperPrefixes mark text blocks the CLI adds around what the user typed
// (reminders, local command output, "[Image: source: ...]" after an image).
// They are never taken as the prompt.
var wrapperPrefixes = []string{
	"<system-reminder>",
	"<local-command-",
	"<command-name>",
	"<command-message>",
	"<command-args>",
	"[Image",
	"[Request interrupted",
}

func isWrapperText(s string) bool {
	t := strings.TrimLeftFunc(s, unicode.IsSpace)
	for _, p := range wrapperPrefixes {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// promptText returns the prompt carried by a user message: the last text
// block that is not a CLI wrapper (system reminder, local command output).
// ok is false for messages carrying tool results or only wrappers.
func promptText(content gjson.Result) (text string, ok bool) {
	if content.Type == gjson.String {
		s := content.String()
		return s, !isWrapperText(s)
	}
	if !content.IsArray() {
		return "", false
	}
	content.ForEach(func(_, b gjson.Result) bool {
		switch b.Get("type").String() {
		case "tool_result":
			text, ok = "", false
			return false
		case "text":
			if s := b.Get("text").String(); !isWrapperText(s) {
				text, ok = s, true
			}
		}
		return true
	})
	return text, ok
}

// analyze extracts the selection inputs from a request body.
func analyze(body []byte) requestInfo {
	info := requestInfo{
		model:  gjson.GetBytes(body, "model").String(),
		stream: gjson.GetBytes(body, "stream").Bool(),
		cwd:    findCwd(body),
	}
	msgs := gjson.GetBytes(body, "messages").Array()
	var promptIdx int
	info.prompt, promptIdx = lastPrompt(msgs, func(m gjson.Result) (string, bool) {
		if m.Get("role").String() != "user" {
			return "", false
		}
		return promptText(m.Get("content"))
	})
	// The step is the number of assistant turns after the prompt: runs of
	// assistant messages, so a response split over several messages still
	// counts once. Messages with other roles ("system") are transparent.
	prevAssistant := false
	for i := promptIdx + 1; i < len(msgs); i++ {
		switch msgs[i].Get("role").String() {
		case "assistant":
			if !prevAssistant {
				info.step++
			}
			prevAssistant = true
		case "user":
			prevAssistant = false
		}
	}
	for _, m := range msgs {
		info.images += countImages(m.Get("content"))
	}
	var steers []string
	for i := promptIdx + 1; i < len(msgs); i++ {
		if msgs[i].Get("role").String() == "system" {
			// The content is an array of text blocks in the call that
			// first carries it, a string in the calls after.
			c := msgs[i].Get("content")
			add := func(t string) {
				if strings.HasPrefix(t, steerPrefix) {
					t = t[len(steerPrefix):]
					if j := strings.Index(t, "\n\n"); j >= 0 {
						t = t[:j]
					}
					steers = append(steers, t)
				}
			}
			if c.Type == gjson.String {
				add(c.String())
			}
			c.ForEach(func(_, b gjson.Result) bool {
				add(b.Get("text").String())
				return true
			})
		}
	}
	info.steer = strings.Join(steers, " | ")
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Get("role").String() == "user" {
			info.toolResult = toolResultText(msgs[i].Get("content"))
			break
		}
	}
	return info
}

func countImages(content gjson.Result) int {
	n := 0
	if !content.IsArray() {
		return 0
	}
	content.ForEach(func(_, b gjson.Result) bool {
		switch b.Get("type").String() {
		case "image":
			n++
		case "tool_result":
			n += countImages(b.Get("content"))
		}
		return true
	})
	return n
}

func toolResultText(content gjson.Result) string {
	var parts []string
	content.ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").String() != "tool_result" {
			return true
		}
		c := b.Get("content")
		if c.Type == gjson.String {
			parts = append(parts, c.String())
		} else {
			c.ForEach(func(_, x gjson.Result) bool {
				if x.Get("type").String() == "text" {
					parts = append(parts, x.Get("text").String())
				}
				return true
			})
		}
		return true
	})
	return strings.Join(parts, "\n")
}

var cwdMarker = []byte("Primary working directory: ")

// findCwd finds the working directory the CLI puts in its environment
// section ("Primary working directory: /path"), searching the raw JSON so
// that it works whether the section is in "system" or in "messages".
func findCwd(body []byte) string {
	i := bytes.Index(body, cwdMarker)
	if i < 0 {
		return ""
	}
	rest := body[i+len(cwdMarker):]
	// Collect the JSON-escaped text up to the end of the line (an escaped
	// \n) or of the string, then unescape it.
	end := len(rest)
scan:
	for j := 0; j < len(rest); j++ {
		switch rest[j] {
		case '"':
			end = j
			break scan
		case '\\':
			if j+1 < len(rest) && (rest[j+1] == 'n' || rest[j+1] == 'r') {
				end = j
				break scan
			}
			j++
		}
	}
	var s string
	if err := json.Unmarshal(append(append([]byte{'"'}, rest[:end]...), '"'), &s); err != nil {
		return ""
	}
	return strings.TrimSpace(s)
}

// wordAfter returns the whitespace-delimited word that starts after
// position i in s (skipping leading spaces).
func wordAfter(s string, i int) string {
	s = strings.TrimLeftFunc(s[i:], unicode.IsSpace)
	if j := strings.IndexFunc(s, unicode.IsSpace); j >= 0 {
		s = s[:j]
	}
	return s
}

func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// findWord finds kw in s as a whole word and returns the index just after it.
func findWord(s, kw string) (int, bool) {
	from := 0
	for {
		i := strings.Index(s[from:], kw)
		if i < 0 {
			return 0, false
		}
		start, end := from+i, from+i+len(kw)
		before, _ := utf8.DecodeLastRuneInString(s[:start])
		after, _ := utf8.DecodeRuneInString(s[end:])
		if (start == 0 || !isWordRune(before)) && (end == len(s) || !isWordRune(after)) {
			return end, true
		}
		from = start + 1
	}
}

// match reports whether the rule matches, and the {{arg}} value.
// re is the rule's compiled Regex (nil if none).
func (r *Rule) match(info *requestInfo, re *regexp.Regexp) (arg string, ok bool) {
	if r.Model != "" && !strings.Contains(info.model, r.Model) {
		return "", false
	}
	p := info.prompt
	if r.Keyword != "" {
		end, found := findWord(p, r.Keyword)
		if !found {
			return "", false
		}
		arg = wordAfter(p, end)
	}
	if r.Contains != "" {
		i := strings.Index(p, r.Contains)
		if i < 0 {
			return "", false
		}
		if arg == "" {
			arg = wordAfter(p, i+len(r.Contains))
		}
	}
	if re != nil {
		m := re.FindStringSubmatch(p)
		if m == nil {
			return "", false
		}
		if len(m) > 1 && arg == "" {
			arg = m[1]
		}
	}
	return arg, true
}

// lastPrompt returns the prompt of a conversation (Messages, Responses or
// Gemini API) and its index: the last item prompt finds one in; -1 when
// none does.
func lastPrompt(items []gjson.Result, prompt func(gjson.Result) (string, bool)) (string, int) {
	for i := len(items) - 1; i >= 0; i-- {
		if t, ok := prompt(items[i]); ok {
			return t, i
		}
	}
	return "", -1
}
