package rpc

import (
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/mapping"
)

// History turns a session file into agent.event lines for
// session.history. Each user prompt starts a run whose id is
// "<session_id>:<n>" (n counts the file's prompts from 1) and whose events
// are numbered from 0: hidden_user_message with the prompt, then text,
// reasoning, tool_call, tool_result, error and compaction_complete as the
// file has them, and final with the run's last text unless the run was
// interrupted. Only the newest MaxRuns runs are kept.
type History struct {
	SessionID string
	MaxRuns   int

	runs      []*histRun
	dropped   int // runs dropped from the front
	n         int // prompts seen
	tools     map[string]string
	valid     int   // JSON lines seen
	compactAt int64 // a compaction not yet reported, and when
}

type histRun struct {
	id          string
	seq         int64
	lines       [][]byte
	last        string
	lastErr     bool
	interrupted bool
	ended       bool
}

// Valid is how many lines of the file were JSON: 0 means the file is not a
// session file.
func (h *History) Valid() int { return h.valid }

// Line takes one line of the file; lines that are not JSON are skipped.
func (h *History) Line(line []byte) {
	if !gjson.ValidBytes(line) {
		return
	}
	h.valid++
	e := gjson.ParseBytes(line)
	now := parseMillis(e.Get("timestamp").Str)
	switch e.Get("type").Str {
	case "user":
		if mapping.SideEntry(e) {
			return
		}
		content := e.Get("message.content")
		text, kind := mapping.UserText(content)
		switch kind {
		case mapping.UserPrompt, mapping.UserCommand:
			h.startRun(text, now)
		case mapping.UserStdout:
			if r := h.cur(); r != nil {
				x := h.event(r, EventText, len(text)+64)
				x.str("content", text)
				x.str("source", "slash_command")
				r.add(x.done(now))
			}
		case mapping.UserStderr:
			if r := h.cur(); r != nil {
				x := h.event(r, EventError, len(text)+64)
				x.str("message", text)
				x.str("source", "slash_command")
				r.add(x.done(now))
			}
		case mapping.UserInterrupted:
			if r := h.cur(); r != nil {
				r.interrupted = true
			}
		case mapping.UserToolResult:
			if r := h.cur(); r != nil {
				h.toolResults(r, e, content, now)
			}
		}
	case "assistant":
		r := h.cur()
		if r == nil || mapping.SideEntry(e) {
			return
		}
		isErr := e.Get("isApiErrorMessage").Bool()
		e.Get("message.content").ForEach(func(_, b gjson.Result) bool {
			switch typ := b.Get("type").Str; {
			case typ == "text":
				text := b.Get("text").Str
				if isErr {
					x := h.event(r, EventError, len(text)+64)
					x.str("message", text)
					r.add(x.done(now))
				} else {
					x := h.event(r, EventText, len(text)+64)
					x.str("content", text)
					x.strIf("message_id", e.Get("message.id").Str)
					r.add(x.done(now))
				}
				r.last, r.lastErr = text, isErr
			case typ == "thinking" || typ == "redacted_thinking":
				text := b.Get("thinking").Str
				x := h.event(r, EventReasoning, len(text)+64)
				x.str("content", text)
				if typ == "redacted_thinking" {
					x.boolean("redacted", true)
				}
				r.add(x.done(now))
			case mapping.IsToolUseBlock(typ):
				id, name, input := b.Get("id").Str, b.Get("name").Str, b.Get("input")
				if h.tools == nil {
					h.tools = make(map[string]string)
				}
				h.tools[strings.Clone(id)] = strings.Clone(name)
				x := h.event(r, EventToolCall, len(input.Raw)+96)
				x.str("tool", name)
				if input.Exists() {
					x.raw("args", input.Raw)
				} else {
					x.raw("args", "{}")
				}
				x.str("tool_call_id", id)
				r.add(x.done(now))
			}
			return true
		})
	case "system":
		if e.Get("subtype").Str == "compact_boundary" {
			// The CLI writes the boundary before the /compact command
			// that caused it: it goes with the next run.
			h.compactAt = max(now, 1)
		}
	}
}

func (h *History) toolResults(r *histRun, e, content gjson.Result, now int64) {
	first := true
	content.ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").Str != "tool_result" {
			return true
		}
		id := b.Get("tool_use_id").Str
		text := mapping.ToolResultText(b.Get("content"))
		x := h.event(r, EventToolResult, len(text)+96)
		x.str("tool", h.tools[id])
		x.str("result", text)
		x.str("tool_call_id", id)
		x.boolean("is_error", b.Get("is_error").Type == gjson.True)
		if s := e.Get("toolUseResult"); first && (s.IsObject() || s.IsArray()) {
			x.raw("structured", s.Raw)
		}
		first = false
		r.add(x.done(now))
		return true
	})
}

func (h *History) cur() *histRun {
	if len(h.runs) == 0 {
		return nil
	}
	return h.runs[len(h.runs)-1]
}

func (h *History) startRun(prompt string, now int64) {
	h.endRun(false)
	h.n++
	r := &histRun{id: h.SessionID + ":" + strconv.Itoa(h.n)}
	x := h.event(r, EventHiddenUserMessage, len(prompt)+32)
	x.str("content", prompt)
	r.add(x.done(now))
	h.runs = append(h.runs, r)
	h.compacted(r)
	if len(h.runs) > max(h.MaxRuns, 1) {
		h.runs[0] = nil
		h.runs = h.runs[1:]
		h.dropped++
	}
}

// endRun closes the current run with final, unless it was interrupted. At
// the end of the file (last) a compaction still pending goes into it.
func (h *History) endRun(last bool) {
	r := h.cur()
	if r == nil || r.ended {
		return
	}
	r.ended = true
	if last {
		h.compacted(r)
	}
	if r.interrupted {
		return
	}
	x := h.event(r, EventFinal, len(r.last)+64)
	x.str("content", r.last)
	if r.lastErr {
		x.str("termination_reason", "api_error")
		x.boolean("is_error", true)
	} else {
		x.str("termination_reason", "normal")
		x.boolean("is_error", false)
	}
	r.add(x.done(0))
}

// compacted reports a pending compaction in run r.
func (h *History) compacted(r *histRun) {
	if h.compactAt == 0 {
		return
	}
	x := h.event(r, EventCompactionComplete, 32)
	x.boolean("compacted", true)
	r.add(x.done(h.compactAt))
	h.compactAt = 0
}

func (h *History) event(r *histRun, typ string, hint int) ev {
	e := newEvent(r.id, r.seq, typ, hint)
	r.seq++
	return e
}

func (r *histRun) add(line []byte) { r.lines = append(r.lines, line) }

// Result ends the file and returns the agent.event lines of the kept runs
// (at most maxEvents of them), how many runs they belong to, and whether
// anything was left out (older runs, or events past maxEvents). With
// MaxRuns 0 or maxEvents 0 nothing is sent.
func (h *History) Result(maxEvents int) (lines [][]byte, runs int, truncated bool) {
	h.endRun(true)
	if h.MaxRuns == 0 || maxEvents == 0 {
		return nil, 0, len(h.runs) > 0
	}
	truncated = h.dropped > 0
	for _, r := range h.runs {
		if len(lines) >= maxEvents {
			truncated = true
			break
		}
		runs++
		for _, l := range r.lines {
			if len(lines) >= maxEvents {
				truncated = true
				break
			}
			lines = append(lines, l)
		}
	}
	return lines, runs, truncated
}

// parseMillis reads an RFC 3339 timestamp as Unix milliseconds, 0 if it
// is not one.
func parseMillis(s string) int64 {
	if s == "" {
		return 0
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0
	}
	return t.UnixMilli()
}
