package acp

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/internal/jsonw"
)

// ToolKind returns the ACP tool kind for a Claude Code tool name.
func ToolKind(name string) string {
	switch name {
	case "Read", "NotebookRead":
		return "read"
	case "Edit", "MultiEdit", "Write", "NotebookEdit":
		return "edit"
	case "Bash", "BashOutput", "KillShell", "KillBash", "PowerShell", "TaskOutput", "TaskStop", "Monitor":
		return "execute"
	case "Glob", "Grep", "LS", "ToolSearch":
		return "search"
	case "WebFetch", "WebSearch":
		return "fetch"
	case "Task", "Agent", "TodoWrite":
		return "think"
	case "ExitPlanMode", "EnterPlanMode":
		return "switch_mode"
	}
	return "other"
}

// ToolTitle returns a human title for a tool call from its name and input
// (which may be empty while the input still streams).
func ToolTitle(name string, input gjson.Result) string {
	str := func(k string) string { return input.Get(k).Str }
	with := func(prefix, v string) string {
		if v == "" {
			return name
		}
		return prefix + firstLine(v, 200)
	}
	switch name {
	case "Read":
		t := with("Read ", str("file_path"))
		if off := input.Get("offset"); off.Exists() && t != name {
			t += " (from line " + off.Raw + ")"
		}
		return t
	case "Write":
		return with("Write ", str("file_path"))
	case "Edit", "MultiEdit":
		return with("Edit ", str("file_path"))
	case "NotebookEdit":
		return with("Edit ", str("notebook_path"))
	case "Bash", "PowerShell":
		if c := str("command"); c != "" {
			return firstLine(c, 200)
		}
		return with("", str("description"))
	case "Glob":
		t := with("Find ", str("pattern"))
		if p := str("path"); p != "" && t != name {
			t += " in " + p
		}
		return t
	case "Grep":
		t := with("Search for ", str("pattern"))
		if p := str("path"); p != "" && t != name {
			t += " in " + p
		}
		return t
	case "WebFetch":
		return with("Fetch ", str("url"))
	case "WebSearch":
		return with("Search the web: ", str("query"))
	case "ToolSearch":
		return with("Search tools: ", str("query"))
	case "Task", "Agent":
		return with("", str("description"))
	case "TodoWrite":
		return "Update the plan"
	case "ExitPlanMode":
		return "Ready to code?"
	case "EnterPlanMode":
		return "Enter plan mode"
	case "AskUserQuestion":
		return with("", input.Get("questions.0.question").Str)
	case "Skill":
		return with("Skill: ", str("skill"))
	}
	if strings.HasPrefix(name, "mcp__") {
		parts := strings.SplitN(name[len("mcp__"):], "__", 2)
		if len(parts) == 2 {
			return parts[1] + " (MCP: " + parts[0] + ")"
		}
	}
	return name
}

// appendLocations appends ,"locations":[…] for tools that touch a file,
// or nothing.
func appendLocations(dst []byte, name string, input gjson.Result) []byte {
	var path string
	var line gjson.Result
	switch name {
	case "Read":
		path, line = input.Get("file_path").Str, input.Get("offset")
	case "Write", "Edit", "MultiEdit":
		path = input.Get("file_path").Str
	case "NotebookEdit":
		path = input.Get("notebook_path").Str
	case "Glob", "Grep":
		path = input.Get("path").Str
	}
	if path == "" {
		return dst
	}
	dst = append(dst, `,"locations":[{"path":`...)
	dst = jsonw.String(dst, path)
	if line.Type == gjson.Number && line.Num >= 0 {
		dst = append(dst, `,"line":`...)
		dst = jsonw.Int(dst, line.Int())
	}
	return append(dst, "}]"...)
}

// appendInputContent appends ,"content":[…] that shows a tool call before it
// runs: the proposed diff of Edit and Write, the command's description of
// Bash, the prompt of Agent, the plan of ExitPlanMode. plan is the plan
// text when input lacks it (the ExitPlanMode permission request has an
// empty input; the model's tool_use carried the plan).
func appendInputContent(dst []byte, name string, input gjson.Result, plan string) []byte {
	switch name {
	case "Edit":
		path := input.Get("file_path").Str
		if path == "" || !input.Get("new_string").Exists() {
			return dst
		}
		return appendDiff(append(dst, `,"content":[`...), path, input.Get("old_string").Str, true, input.Get("new_string").Str)
	case "MultiEdit":
		path := input.Get("file_path").Str
		edits := input.Get("edits")
		if path == "" || !edits.IsArray() {
			return dst
		}
		dst = append(dst, `,"content":[`...)
		n := 0
		edits.ForEach(func(_, e gjson.Result) bool {
			if n > 0 {
				dst = append(dst, ',')
			}
			n++
			dst = appendDiffItem(dst, path, e.Get("old_string").Str, true, e.Get("new_string").Str)
			return true
		})
		return append(dst, ']')
	case "Write":
		path := input.Get("file_path").Str
		if path == "" || !input.Get("content").Exists() {
			return dst
		}
		return appendDiff(append(dst, `,"content":[`...), path, "", false, input.Get("content").Str)
	case "Bash":
		return appendTextContent(dst, input.Get("description").Str)
	case "Task", "Agent":
		return appendTextContent(dst, input.Get("prompt").Str)
	case "ExitPlanMode":
		if p := input.Get("plan").Str; p != "" {
			plan = p
		}
		return appendTextContent(dst, plan)
	}
	return dst
}

func appendTextContent(dst []byte, text string) []byte {
	if text == "" {
		return dst
	}
	dst = append(dst, `,"content":[{"type":"content","content":{"type":"text","text":`...)
	dst = jsonw.String(dst, text)
	return append(dst, "}}]"...)
}

// appendDiff appends one diff item and the closing bracket of the content
// array.
func appendDiff(dst []byte, path, oldText string, hasOld bool, newText string) []byte {
	return append(appendDiffItem(dst, path, oldText, hasOld, newText), ']')
}

func appendDiffItem(dst []byte, path, oldText string, hasOld bool, newText string) []byte {
	dst = append(dst, `{"type":"diff","path":`...)
	dst = jsonw.String(dst, path)
	if hasOld {
		dst = append(dst, `,"oldText":`...)
		dst = jsonw.String(dst, oldText)
	} else {
		dst = append(dst, `,"oldText":null`...)
	}
	dst = append(dst, `,"newText":`...)
	dst = jsonw.String(dst, newText)
	return append(dst, '}')
}

// appendResultContent appends ,"content":[…] for a finished tool: a diff for
// Edit and Write (from the structured tool_use_result: the whole file
// before and after), else the tool_result's text and images.
func appendResultContent(dst []byte, name string, block, structured gjson.Result) []byte {
	isErr := block.Get("is_error").Bool()
	if !isErr && structured.IsObject() {
		switch name {
		case "Edit", "MultiEdit":
			if d, ok := editDiff(structured); ok {
				return d.appendTo(dst)
			}
		case "Write":
			path := structured.Get("filePath").Str
			if path != "" && structured.Get("content").Exists() {
				orig := structured.Get("originalFile")
				return appendDiff(append(dst, `,"content":[`...), path, orig.Str, orig.Type == gjson.String, structured.Get("content").Str)
			}
		}
	}
	content := block.Get("content")
	switch {
	case content.Type == gjson.String:
		return appendTextContent(dst, stripToolError(content.Str))
	case content.IsArray():
		start := len(dst)
		dst = append(dst, `,"content":[`...)
		n := 0
		content.ForEach(func(_, c gjson.Result) bool {
			switch c.Get("type").Str {
			case "text":
				t := stripToolError(c.Get("text").Str)
				if t == "" {
					return true
				}
				if n > 0 {
					dst = append(dst, ',')
				}
				n++
				dst = append(dst, `{"type":"content","content":{"type":"text","text":`...)
				dst = jsonw.String(dst, t)
				dst = append(dst, "}}"...)
			case "image":
				src := c.Get("source")
				if src.Get("type").Str != "base64" {
					return true
				}
				if n > 0 {
					dst = append(dst, ',')
				}
				n++
				dst = append(dst, `{"type":"content","content":{"type":"image","data":`...)
				dst = jsonw.String(dst, src.Get("data").Str)
				dst = append(dst, `,"mimeType":`...)
				dst = jsonw.String(dst, src.Get("media_type").Str)
				dst = append(dst, "}}"...)
			}
			return true
		})
		if n == 0 {
			return dst[:start]
		}
		return append(dst, ']')
	}
	return dst
}

// stripToolError removes the <tool_use_error> wrapper the CLI puts around
// error texts.
func stripToolError(s string) string {
	const open, close = "<tool_use_error>", "</tool_use_error>"
	if strings.HasPrefix(s, open) {
		s = strings.TrimSuffix(s[len(open):], close)
	}
	return s
}

type diff struct {
	path, oldText, newText string
}

func (d diff) appendTo(dst []byte) []byte {
	return appendDiff(append(dst, `,"content":[`...), d.path, d.oldText, true, d.newText)
}

// editDiff builds the whole-file diff of an Edit from its tool_use_result:
// originalFile with structuredPatch applied (checked line by line), or,
// when the patch does not apply, originalFile with oldString replaced by
// newString as Edit does, or at least the two strings.
func editDiff(r gjson.Result) (diff, bool) {
	path := r.Get("filePath").Str
	if path == "" {
		return diff{}, false
	}
	orig := r.Get("originalFile")
	oldS, newS := r.Get("oldString").Str, r.Get("newString").Str
	if orig.Type == gjson.String {
		if out, ok := applyPatch(orig.Str, r.Get("structuredPatch")); ok {
			return diff{path, orig.Str, out}, true
		}
		if oldS != "" && strings.Contains(orig.Str, oldS) {
			n := 1
			if r.Get("replaceAll").Bool() {
				n = -1
			}
			return diff{path, orig.Str, strings.Replace(orig.Str, oldS, newS, n)}, true
		}
	}
	if !r.Get("newString").Exists() {
		return diff{}, false
	}
	return diff{path, oldS, newS}, true
}

// applyPatch applies jsdiff-style hunks ({oldStart, oldLines, lines:[" ctx",
// "-old", "+new"]}) to orig. Context and removed lines must match; any
// mismatch fails.
func applyPatch(orig string, hunks gjson.Result) (string, bool) {
	if !hunks.IsArray() {
		return "", false
	}
	lines := strings.Split(orig, "\n")
	var out []string
	pos := 0
	ok := true
	count := 0
	hunks.ForEach(func(_, h gjson.Result) bool {
		count++
		start := int(h.Get("oldStart").Int()) - 1
		if h.Get("oldLines").Int() == 0 {
			start++ // an insertion names the line it follows
		}
		if start < pos || start > len(lines) {
			ok = false
			return false
		}
		out = append(out, lines[pos:start]...)
		pos = start
		h.Get("lines").ForEach(func(_, l gjson.Result) bool {
			s := l.Str
			if s == "" {
				ok = false
				return false
			}
			switch s[0] {
			case ' ', '-':
				if pos >= len(lines) || lines[pos] != s[1:] {
					ok = false
					return false
				}
				if s[0] == ' ' {
					out = append(out, s[1:])
				}
				pos++
			case '+':
				out = append(out, s[1:])
			case '\\':
			default:
				ok = false
				return false
			}
			return true
		})
		return ok
	})
	if !ok || count == 0 {
		return "", false
	}
	out = append(out, lines[pos:]...)
	return strings.Join(out, "\n"), true
}

// appendPlanEntries appends the entries of a plan update from TodoWrite's
// input {todos:[{content, status, activeForm?, priority?}]}.
func appendPlanEntries(dst []byte, input gjson.Result) []byte {
	dst = append(dst, `,"entries":[`...)
	n := 0
	input.Get("todos").ForEach(func(_, t gjson.Result) bool {
		content := t.Get("content").Str
		if content == "" {
			return true
		}
		status := t.Get("status").Str
		switch status {
		case "pending", "in_progress", "completed":
		default:
			status = "pending"
		}
		prio := t.Get("priority").Str
		switch prio {
		case "high", "medium", "low":
		default:
			prio = "medium"
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = append(dst, `{"content":`...)
		dst = jsonw.String(dst, content)
		dst = append(dst, `,"priority":"`...)
		dst = append(dst, prio...)
		dst = append(dst, `","status":"`...)
		dst = append(dst, status...)
		dst = append(dst, `"}`...)
		return true
	})
	return append(dst, ']')
}
