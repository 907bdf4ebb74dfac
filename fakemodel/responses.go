package fakemodel

// The OpenAI Responses API (POST /v1/responses), as Codex CLI speaks it
// (0.171.0, wire_api "responses"): the same scenarios answer it, each step
// rendered as Responses output items. What differs from the Messages API:
//
//   - The request's input is a list of items: messages (role developer,
//     user or assistant; content parts input_text/output_text), function
//     and custom tool calls, and their outputs. Codex sends its context as
//     user messages of one tag each (<environment_context>…</…>), which
//     are never the prompt; the working directory comes from its <cwd>.
//   - A step's tool_use blocks become the tools Codex has: Bash a call of
//     exec_command (or shell, when the request offers that instead), Write
//     and Edit an apply_patch (a custom tool taking the patch as its
//     input), Read an exec_command of cat. Any other tool is called by its
//     own name with its input as arguments. Thinking blocks are left out.
//   - Errors have OpenAI's shape ({"error":{"message","type","code"}}); an
//     in-stream error is a response.failed event.

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// analyzeResponses extracts the selection inputs from a Responses request.
func analyzeResponses(body []byte) requestInfo {
	info := requestInfo{
		model:  gjson.GetBytes(body, "model").String(),
		stream: gjson.GetBytes(body, "stream").Bool(),
	}
	items := gjson.GetBytes(body, "input").Array()
	var promptIdx int
	info.prompt, promptIdx = lastPrompt(items, responsesPrompt)
	for _, it := range items {
		if it.Get("type").Str != "message" || it.Get("role").Str != "user" {
			continue
		}
		it.Get("content").ForEach(func(_, p gjson.Result) bool {
			switch p.Get("type").Str {
			case "input_image":
				info.images++
			case "input_text":
				if c := tagged(p.Get("text").Str, "cwd"); c != "" {
					info.cwd = c
				}
			}
			return true
		})
	}
	// The step is the number of assistant turns after the prompt: runs of
	// calls and assistant messages, ended by tool outputs or user input.
	inTurn := false
	for i := promptIdx + 1; i < len(items); i++ {
		switch t := items[i].Get("type").Str; {
		case t == "function_call_output" || t == "custom_tool_call_output" || items[i].Get("role").Str == "user":
			inTurn = false
			if strings.HasSuffix(t, "_output") {
				info.toolResult = outputText(items[i].Get("output"))
			}
		case t == "reasoning" || strings.HasSuffix(t, "_call") || items[i].Get("role").Str == "assistant":
			if !inTurn {
				info.step++
			}
			inTurn = true
		}
	}
	return info
}

// responsesPrompt returns the prompt an input item carries: the last text
// part of a user message that is not one of Codex's tagged context blocks.
func responsesPrompt(it gjson.Result) (text string, ok bool) {
	if it.Get("type").Str != "message" || it.Get("role").Str != "user" {
		return "", false
	}
	c := it.Get("content")
	if c.Type == gjson.String {
		return c.Str, !isTagBlock(c.Str)
	}
	c.ForEach(func(_, p gjson.Result) bool {
		if p.Get("type").Str == "input_text" && !isTagBlock(p.Get("text").Str) {
			text, ok = p.Get("text").Str, true
		}
		return true
	})
	return text, ok
}

// isTagBlock reports whether s is one element, <name>…</name>, as Codex
// wraps its context (environment, instructions, skills, an aborted turn).
func isTagBlock(s string) bool {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "<") {
		return false
	}
	end := strings.IndexAny(s, "> \n")
	if end < 2 {
		return false
	}
	return strings.HasSuffix(s, "</"+s[1:end]+">")
}

// tagged returns the text of the first <name>…</name> in s, trimmed.
func tagged(s, name string) string {
	_, rest, ok := strings.Cut(s, "<"+name+">")
	if !ok {
		return ""
	}
	v, _, ok := strings.Cut(rest, "</"+name+">")
	if !ok {
		return ""
	}
	return strings.TrimSpace(v)
}

// outputText is a tool output as text: a string, or the text of its parts.
func outputText(o gjson.Result) string {
	if o.Type == gjson.String {
		return o.Str
	}
	var b strings.Builder
	o.ForEach(func(_, p gjson.Result) bool {
		b.WriteString(p.Get("text").Str)
		return true
	})
	return b.String()
}

// rItem is one Responses output item: a message, a function call or a
// custom tool call.
type rItem struct {
	typ    string // "message", "function_call" or "custom_tool_call"
	id     string
	callID string
	name   string
	text   string // message text, function arguments (JSON) or custom input
	chunk  int
}

// codexTools is what a request offers: the names of its function tools and
// of its custom (freeform) tools.
type codexTools struct{ function, custom map[string]bool }

func requestTools(body []byte) codexTools {
	t := codexTools{function: map[string]bool{}, custom: map[string]bool{}}
	gjson.GetBytes(body, "tools").ForEach(func(_, tool gjson.Result) bool {
		switch tool.Get("type").Str {
		case "function":
			t.function[tool.Get("name").Str] = true
		case "custom":
			t.custom[tool.Get("name").Str] = true
		}
		return true
	})
	return t
}

// responsesItems renders a step's blocks as output items for the tools the
// request offers.
func responsesItems(resp *response, tools codexTools) []rItem {
	var items []rItem
	for i := range resp.blocks {
		b := &resp.blocks[i]
		switch b.typ {
		case "text":
			items = append(items, rItem{typ: "message", id: "msg_" + randomID(), text: b.text, chunk: b.chunkSize})
		case "tool_use":
			it := codexCall(b, tools)
			it.id, it.callID, it.chunk = "fc_"+randomID(), "call_"+randomID(), b.chunkSize
			items = append(items, it)
		}
	}
	return items
}

// codexCall is a tool_use block as the call Codex would make for it.
func codexCall(b *block, tools codexTools) rItem {
	in := gjson.ParseBytes(b.input)
	shell := func(cmd string) rItem {
		if !tools.function["exec_command"] && tools.function["shell"] {
			return rItem{typ: "function_call", name: "shell", text: string(fmt.Appendf(nil, `{"command":["bash","-lc",%s]}`, jsonString(cmd)))}
		}
		return rItem{typ: "function_call", name: "exec_command", text: string(fmt.Appendf(nil, `{"cmd":%s}`, jsonString(cmd)))}
	}
	patch := func(p string) rItem {
		if tools.function["apply_patch"] && !tools.custom["apply_patch"] {
			return rItem{typ: "function_call", name: "apply_patch", text: string(fmt.Appendf(nil, `{"input":%s}`, jsonString(p)))}
		}
		return rItem{typ: "custom_tool_call", name: "apply_patch", text: p}
	}
	switch b.name {
	case "Bash":
		return shell(in.Get("command").Str)
	case "Read":
		return shell("cat " + shellQuote(in.Get("file_path").Str))
	case "Write":
		var p strings.Builder
		p.WriteString("*** Begin Patch\n*** Add File: " + in.Get("file_path").Str + "\n")
		for _, l := range strings.SplitAfter(strings.TrimSuffix(in.Get("content").Str, "\n"), "\n") {
			p.WriteString("+" + strings.TrimSuffix(l, "\n") + "\n")
		}
		p.WriteString("*** End Patch\n")
		return patch(p.String())
	case "Edit":
		var p strings.Builder
		p.WriteString("*** Begin Patch\n*** Update File: " + in.Get("file_path").Str + "\n@@\n")
		for _, l := range strings.Split(in.Get("old_string").Str, "\n") {
			p.WriteString("-" + l + "\n")
		}
		for _, l := range strings.Split(in.Get("new_string").Str, "\n") {
			p.WriteString("+" + l + "\n")
		}
		p.WriteString("*** End Patch\n")
		return patch(p.String())
	}
	return rItem{typ: "function_call", name: b.name, text: string(b.input)}
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// itemJSON is an output item, complete (done) or as it starts.
func (it *rItem) itemJSON(done bool) []byte {
	status := "in_progress"
	if done {
		status = "completed"
	}
	switch it.typ {
	case "message":
		content := []byte(`[]`)
		if done {
			content = fmt.Appendf(nil, `[{"type":"output_text","text":%s,"annotations":[]}]`, jsonString(it.text))
		}
		return fmt.Appendf(nil, `{"type":"message","id":%s,"role":"assistant","status":%s,"content":%s}`, jsonString(it.id), jsonString(status), content)
	case "custom_tool_call":
		input := ""
		if done {
			input = it.text
		}
		return fmt.Appendf(nil, `{"type":"custom_tool_call","id":%s,"call_id":%s,"name":%s,"input":%s,"status":%s}`,
			jsonString(it.id), jsonString(it.callID), jsonString(it.name), jsonString(input), jsonString(status))
	}
	args := ""
	if done {
		args = it.text
	}
	return fmt.Appendf(nil, `{"type":"function_call","id":%s,"call_id":%s,"name":%s,"arguments":%s,"status":%s}`,
		jsonString(it.id), jsonString(it.callID), jsonString(it.name), jsonString(args), jsonString(status))
}

// pieces is how an item's text is streamed: a message a word per delta,
// arguments and patches in two halves, unless the block set chunk_size.
func (it *rItem) pieces() []string {
	if it.chunk > 0 {
		return splitBytes(it.text, it.chunk)
	}
	if it.typ == "message" {
		return splitWords(it.text)
	}
	if len(it.text) < 8 {
		return []string{it.text}
	}
	return splitBytes(it.text, (len(it.text)+1)/2)
}

// responseJSON is the response object: in progress (no output yet),
// completed with its items, or failed with an error.
func responseJSON(resp *response, items []rItem, status string, created int64, errJSON []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"id":%s,"object":"response","created_at":%d,"status":%s,"model":%s,"output":[`,
		jsonString("resp_"+strings.TrimPrefix(resp.id, "msg_")), created, jsonString(status), jsonString(resp.model))
	if status == "completed" {
		for i := range items {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(items[i].itemJSON(true))
		}
	}
	b.WriteString(`]`)
	if errJSON != nil {
		b.WriteString(`,"error":`)
		b.Write(errJSON)
	}
	if status == "completed" {
		u := resp.usage
		fmt.Fprintf(&b, `,"usage":{"input_tokens":%d,"input_tokens_details":{"cached_tokens":%d},"output_tokens":%d,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":%d}`,
			u.InputTokens, u.CacheReadInputTokens, u.OutputTokens, u.InputTokens+u.OutputTokens)
	}
	b.WriteString(`}`)
	return b.Bytes()
}

// openAIErrorType is the OpenAI error type of an HTTP status.
func openAIErrorType(status int) string {
	switch {
	case status == 401:
		return "invalid_api_key"
	case status == 429:
		return "rate_limit_exceeded"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

func openAIError(status int, msg string) []byte {
	return fmt.Appendf(nil, `{"message":%s,"type":%s,"param":null,"code":%s}`, jsonString(msg), jsonString(openAIErrorType(status)), jsonString(openAIErrorType(status)))
}

// responses answers POST /v1/responses.
func (s *Server) responses(w http.ResponseWriter, r *http.Request, body []byte, entry *Request) {
	reqID := "req_" + randomID()
	if !gjson.ValidBytes(body) || !gjson.GetBytes(body, "input").IsArray() {
		entry.Status = http.StatusBadRequest
		s.record(entry)
		s.log.Debug("fakemodel: malformed responses request", "body_bytes", len(body))
		writeJSON(w, http.StatusBadRequest, fmt.Appendf(nil, `{"error":%s}`, openAIError(400, "fake model: the body must be a JSON object with an input array")))
		return
	}
	info := analyzeResponses(body)
	resp := s.answer(&info, entry, "fakemodel: responses")
	if info.model == "" {
		resp.model = "gpt-fake"
	}
	items := responsesItems(resp, requestTools(body))
	status := s.respondResponses(r.Context(), w, resp, items, info.stream, reqID)
	s.update(func() { entry.Status = status })
}

// respondResponses sends a rendered step as a Responses API answer and
// returns the HTTP status (499 when the client left before it started).
func (s *Server) respondResponses(ctx context.Context, w http.ResponseWriter, resp *response, items []rItem, stream bool, reqID string) int {
	if !s.sleep(ctx, resp.latencyMS) {
		return 499
	}
	created := time.Now().Unix()
	if e := resp.err; e != nil && (!e.InStream || !stream) {
		status, _, msg := e.resolve()
		if e.RetryAfter > 0 {
			w.Header().Set("retry-after", fmt.Sprint(e.RetryAfter))
		}
		w.Header().Set("x-request-id", reqID)
		writeJSON(w, status, fmt.Appendf(nil, `{"error":%s}`, openAIError(status, msg)))
		return status
	}
	if !stream {
		w.Header().Set("x-request-id", reqID)
		writeJSON(w, http.StatusOK, responseJSON(resp, items, "completed", created, nil))
		return http.StatusOK
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("x-request-id", reqID)
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	seq := 0
	send := func(event string, fields []byte) bool {
		if seq > 0 && !s.sleep(ctx, resp.delayMS) {
			return false
		}
		_, err := fmt.Fprintf(w, "event: %s\ndata: {\"type\":%s,\"sequence_number\":%d,%s}\n\n", event, jsonString(event), seq, fields)
		seq++
		if err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	ok := send("response.created", fmt.Appendf(nil, `"response":%s`, responseJSON(resp, items, "in_progress", created, nil))) &&
		send("response.in_progress", fmt.Appendf(nil, `"response":%s`, responseJSON(resp, items, "in_progress", created, nil)))
	for i := 0; ok && i < len(items); i++ {
		it := &items[i]
		ok = send("response.output_item.added", fmt.Appendf(nil, `"output_index":%d,"item":%s`, i, it.itemJSON(false)))
		at := fmt.Appendf(nil, `"item_id":%s,"output_index":%d`, jsonString(it.id), i)
		var delta, done string
		switch it.typ {
		case "message":
			delta, done = "response.output_text.delta", "response.output_text.done"
			at = append(at, `,"content_index":0`...)
			if ok {
				ok = send("response.content_part.added", fmt.Appendf(nil, `%s,"part":{"type":"output_text","text":"","annotations":[]}`, at))
			}
		case "custom_tool_call":
			delta, done = "response.custom_tool_call_input.delta", "response.custom_tool_call_input.done"
		default:
			delta, done = "response.function_call_arguments.delta", "response.function_call_arguments.done"
		}
		for _, p := range it.pieces() {
			if ok {
				ok = send(delta, fmt.Appendf(nil, `%s,"delta":%s`, at, jsonString(p)))
			}
		}
		if ok {
			field := "arguments"
			switch it.typ {
			case "message":
				field = "text"
			case "custom_tool_call":
				field = "input"
			}
			ok = send(done, fmt.Appendf(nil, `%s,%q:%s`, at, field, jsonString(it.text)))
		}
		if ok && it.typ == "message" {
			ok = send("response.content_part.done", fmt.Appendf(nil, `%s,"part":{"type":"output_text","text":%s,"annotations":[]}`, at, jsonString(it.text)))
		}
		if ok {
			ok = send("response.output_item.done", fmt.Appendf(nil, `"output_index":%d,"item":%s`, i, it.itemJSON(true)))
		}
	}
	if !ok {
		s.log.Debug("fakemodel: stream cut short", "id", resp.id)
		return http.StatusOK
	}
	if e := resp.err; e != nil {
		status, _, msg := e.resolve()
		send("response.failed", fmt.Appendf(nil, `"response":%s`, responseJSON(resp, items, "failed", created, openAIError(status, msg))))
		return http.StatusOK
	}
	send("response.completed", fmt.Appendf(nil, `"response":%s`, responseJSON(resp, items, "completed", created, nil)))
	return http.StatusOK
}

// CodexModel is the model a Codex CLI pointed at the server asks for: the
// newest whose metadata Codex 0.171.0 ships, so that it needs no fallback
// (a warning) and offers no migration (a dialog in its TUI); every request
// still comes here.
const CodexModel = "gpt-6.2-sol"

// CodexConfig is a Codex CLI config.toml (in CODEX_HOME) that sends every
// model request to this server's Responses API: a provider of its own
// with no key (the fake asks for none) and no retries (a scripted error
// reaches the screen at once). The folders in trusted are trusted, so
// that Codex's TUI asks nothing before its first prompt there.
func (s *Server) CodexConfig(trusted ...string) []byte {
	b := fmt.Appendf(nil, `model = %s
model_provider = "ccbridge-fake"

[model_providers.ccbridge-fake]
name = "ccbridge fake model"
base_url = %s
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`, tomlString(CodexModel), tomlString(s.url+"/v1"))
	for _, dir := range trusted {
		b = fmt.Appendf(b, "\n[projects.%s]\ntrust_level = \"trusted\"\n", tomlString(dir))
	}
	return b
}

// tomlString is s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
