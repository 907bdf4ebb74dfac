package fakemodel

// The Gemini API (POST /v1beta/models/{model}:generateContent and
// :streamGenerateContent), as Gemini CLI speaks it (0.61.0, with an API
// key and GOOGLE_GEMINI_BASE_URL): the same scenarios answer it, each
// step rendered as the parts of one candidate. What differs from the
// Messages API:
//
//   - The model is in the path, not the body. The body's contents are
//     user and model turns of parts: text, functionCall (model),
//     functionResponse (user), inlineData. Gemini CLI sends its context as
//     a text part of one tag (<session_context>…</session_context>, which
//     names the workspace directories) before the prompt, in the prompt's
//     turn; such a part is never the prompt.
//   - A step's tool_use blocks become the tools Gemini CLI declares: Bash
//     run_shell_command, Write write_file, Edit replace, Read read_file.
//     Any other tool is called by its own name with its input as args. A
//     request that declares no tools (the CLI's own side calls: a session
//     summary, say) gets the text only. Thinking blocks are left out.
//   - A stream is server-sent events of whole GenerateContentResponse
//     objects, "data: {…}" each, with no event names; the last carries
//     finishReason and usageMetadata. Errors have Google's shape
//     ({"error":{"code","message","status"}}); an in-stream error is a
//     last data line holding one.

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/tidwall/gjson"
)

// geminiPath matches a Gemini API model method: the API version, the
// model and the method.
var geminiPath = regexp.MustCompile(`^/(v1|v1beta|v1alpha)/models/([^/:]+):([A-Za-z]+)$`)

// analyzeGemini extracts the selection inputs from a Gemini request.
func analyzeGemini(body []byte, model string, stream bool) requestInfo {
	info := requestInfo{model: model, stream: stream}
	contents := gjson.GetBytes(body, "contents").Array()
	var promptIdx int
	info.prompt, promptIdx = lastPrompt(contents, geminiPrompt)
	for _, c := range contents {
		c.Get("parts").ForEach(func(_, p gjson.Result) bool {
			if p.Get("inlineData").Exists() && c.Get("role").Str != "model" {
				info.images++
			}
			if d := workspaceDir(p.Get("text").Str); d != "" && info.cwd == "" {
				info.cwd = d
			}
			return true
		})
	}
	// The step is the number of model turns after the prompt: runs of
	// model contents, ended by a user turn (function responses).
	inTurn := false
	for i := promptIdx + 1; i < len(contents); i++ {
		if contents[i].Get("role").Str == "model" {
			if !inTurn {
				info.step++
			}
			inTurn = true
			continue
		}
		inTurn = false
		contents[i].Get("parts").ForEach(func(_, p gjson.Result) bool {
			if r := p.Get("functionResponse.response"); r.Exists() {
				info.toolResult = functionResponseText(r)
			}
			return true
		})
	}
	return info
}

// geminiPrompt returns the prompt a content carries: the last text part of
// a user turn that is not one tagged block (Gemini CLI's context). A turn
// holding function responses carries none.
func geminiPrompt(c gjson.Result) (text string, ok bool) {
	if c.Get("role").Str == "model" {
		return "", false
	}
	c.Get("parts").ForEach(func(_, p gjson.Result) bool {
		if p.Get("functionResponse").Exists() {
			text, ok = "", false
			return false
		}
		if t := p.Get("text"); t.Exists() && !p.Get("thought").Bool() && !isTagBlock(t.Str) {
			text, ok = t.Str, true
		}
		return true
	})
	return text, ok
}

// workspaceDir is the first directory of the "Workspace Directories"
// list in Gemini CLI's session context, or "".
func workspaceDir(s string) string {
	if !strings.HasPrefix(strings.TrimSpace(s), "<session_context>") {
		return ""
	}
	_, rest, ok := strings.Cut(s, "Workspace Directories:")
	if !ok {
		return ""
	}
	for _, line := range strings.Split(rest, "\n")[1:] {
		d, ok := strings.CutPrefix(strings.TrimSpace(line), "- ")
		if !ok {
			break
		}
		if d = strings.TrimSpace(d); strings.HasPrefix(d, "/") {
			return d
		}
	}
	return ""
}

// functionResponseText is a function response as text: its output (or
// error) when a string, else its JSON.
func functionResponseText(r gjson.Result) string {
	for _, k := range []string{"output", "error", "content"} {
		if v := r.Get(k); v.Type == gjson.String {
			return v.Str
		}
	}
	return r.Raw
}

// gPart is one part of a Gemini answer: text, or a function call (args a
// JSON object).
type gPart struct {
	text  string
	call  string // the function's name; "" for text
	args  []byte
	chunk int
}

// geminiDeclared is the names of the functions a request declares.
func geminiDeclared(body []byte) map[string]bool {
	names := map[string]bool{}
	gjson.GetBytes(body, "tools").ForEach(func(_, tool gjson.Result) bool {
		tool.Get("functionDeclarations").ForEach(func(_, f gjson.Result) bool {
			names[f.Get("name").Str] = true
			return true
		})
		return true
	})
	return names
}

// geminiParts renders a step's blocks as parts for the tools the request
// declares.
func geminiParts(resp *response, declared map[string]bool) []gPart {
	var parts []gPart
	for i := range resp.blocks {
		b := &resp.blocks[i]
		switch b.typ {
		case "text":
			parts = append(parts, gPart{text: b.text, chunk: b.chunkSize})
		case "tool_use":
			if len(declared) == 0 {
				continue
			}
			name, args := geminiCall(b)
			parts = append(parts, gPart{call: name, args: args})
		}
	}
	return parts
}

// geminiCall is a tool_use block as the call Gemini CLI would get for it.
func geminiCall(b *block) (name string, args []byte) {
	in := gjson.ParseBytes(b.input)
	obj := func(kv ...string) []byte {
		var buf bytes.Buffer
		buf.WriteByte('{')
		for i := 0; i < len(kv); i += 2 {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.Write(jsonString(kv[i]))
			buf.WriteByte(':')
			buf.WriteString(kv[i+1])
		}
		buf.WriteByte('}')
		return buf.Bytes()
	}
	str := func(path string) string { return string(jsonString(in.Get(path).Str)) }
	switch b.name {
	case "Bash":
		if d := in.Get("description"); d.Type == gjson.String {
			return "run_shell_command", obj("command", str("command"), "description", str("description"))
		}
		return "run_shell_command", obj("command", str("command"))
	case "Read":
		return "read_file", obj("file_path", str("file_path"))
	case "Write":
		return "write_file", obj("file_path", str("file_path"), "content", str("content"))
	case "Edit":
		kv := []string{"file_path", str("file_path"), "instruction", string(jsonString("Replace the text as asked.")),
			"old_string", str("old_string"), "new_string", str("new_string")}
		if in.Get("replace_all").Bool() {
			kv = append(kv, "allow_multiple", "true")
		}
		return "replace", obj(kv...)
	}
	return b.name, b.input
}

// json is the part as it appears in a candidate's content.
func (p *gPart) json(text string) []byte {
	if p.call != "" {
		return fmt.Appendf(nil, `{"functionCall":{"name":%s,"args":%s}}`, jsonString(p.call), p.args)
	}
	return fmt.Appendf(nil, `{"text":%s}`, jsonString(text))
}

// pieces is how a part is streamed: a text a word per chunk (or
// chunk_size bytes), a function call whole, as Gemini sends them.
func (p *gPart) pieces() []string {
	switch {
	case p.call != "":
		return []string{""}
	case p.chunk > 0:
		return splitBytes(p.text, p.chunk)
	}
	if ws := splitWords(p.text); len(ws) > 0 {
		return ws
	}
	return []string{""}
}

// geminiFinish is the finishReason of a stop reason.
func geminiFinish(stop string) string {
	switch stop {
	case "max_tokens", "model_context_window_exceeded":
		return "MAX_TOKENS"
	case "refusal":
		return "SAFETY"
	}
	return "STOP"
}

// geminiChunk is one GenerateContentResponse: parts (each a JSON part),
// and, when finish is set, the finishReason and the usage.
func geminiChunk(resp *response, parts [][]byte, finish bool) []byte {
	var b bytes.Buffer
	b.WriteString(`{"candidates":[{"content":{"role":"model","parts":[`)
	b.Write(bytes.Join(parts, []byte(",")))
	b.WriteString(`]}`)
	if finish {
		fmt.Fprintf(&b, `,"finishReason":%s`, jsonString(geminiFinish(resp.stopReason)))
	}
	b.WriteString(`,"index":0}]`)
	if finish {
		u := resp.usage
		fmt.Fprintf(&b, `,"usageMetadata":{"promptTokenCount":%d,"candidatesTokenCount":%d,"cachedContentTokenCount":%d,"totalTokenCount":%d}`,
			u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.InputTokens+u.OutputTokens)
	}
	fmt.Fprintf(&b, `,"modelVersion":%s,"responseId":%s}`, jsonString(resp.model), jsonString(strings.TrimPrefix(resp.id, "msg_")))
	return b.Bytes()
}

// googleStatus is the canonical status name Google's APIs give an HTTP
// status.
func googleStatus(status int) string {
	switch status {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 409:
		return "ABORTED"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case 501:
		return "UNIMPLEMENTED"
	case 503, 529:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	}
	if status >= 500 {
		return "INTERNAL"
	}
	return "FAILED_PRECONDITION"
}

// googleError is an error body in Google's shape.
func googleError(status int, msg string) []byte {
	return fmt.Appendf(nil, `{"error":{"code":%d,"message":%s,"status":%s}}`, status, jsonString(msg), jsonString(googleStatus(status)))
}

// gemini answers the Gemini API's model methods: generateContent,
// streamGenerateContent and countTokens.
func (s *Server) gemini(w http.ResponseWriter, r *http.Request, body []byte, entry *Request, model, method string) {
	entry.Model = strings.Clone(model)
	fail := func(status int, msg string) {
		entry.Status = status
		s.record(entry)
		s.log.Debug("fakemodel: bad gemini request", "method", method, "status", status, "body_bytes", len(body))
		writeJSON(w, status, googleError(status, "fake model: "+msg))
	}
	switch method {
	case "countTokens", "generateContent", "streamGenerateContent":
	default:
		fail(http.StatusNotFound, "no such method: "+method)
		return
	}
	if !gjson.ValidBytes(body) || !gjson.GetBytes(body, "contents").IsArray() {
		fail(http.StatusBadRequest, "the body must be a JSON object with a contents array")
		return
	}
	if method == "countTokens" {
		s.record(entry)
		writeJSON(w, http.StatusOK, fmt.Appendf(nil, `{"totalTokens":%d}`, max(1, len(body)/4)))
		s.update(func() { entry.Status = http.StatusOK })
		return
	}
	stream := method == "streamGenerateContent"
	info := analyzeGemini(body, model, stream)
	resp := s.answer(&info, entry, "fakemodel: gemini")
	if model == "" {
		resp.model = GeminiModel
	}
	parts := geminiParts(resp, geminiDeclared(body))
	sse := r.URL.Query().Get("alt") == "sse"
	status := s.respondGemini(r.Context(), w, resp, parts, stream, sse)
	s.update(func() { entry.Status = status })
}

// respondGemini sends a rendered step as a Gemini answer and returns the
// HTTP status (499 when the client left before it started). A stream
// without alt=sse is one JSON array of the chunks, as Google's REST API
// sends it.
func (s *Server) respondGemini(ctx context.Context, w http.ResponseWriter, resp *response, parts []gPart, stream, sse bool) int {
	if !s.sleep(ctx, resp.latencyMS) {
		return 499
	}
	if e := resp.err; e != nil && (!e.InStream || !stream) {
		status, _, msg := e.resolve()
		if e.RetryAfter > 0 {
			w.Header().Set("retry-after", fmt.Sprint(e.RetryAfter))
		}
		writeJSON(w, status, googleError(status, msg))
		return status
	}
	if !stream {
		whole := make([][]byte, len(parts))
		for i := range parts {
			whole[i] = parts[i].json(parts[i].text)
		}
		writeJSON(w, http.StatusOK, geminiChunk(resp, whole, true))
		return http.StatusOK
	}
	// The chunks: one per piece of each part, the finish on the last.
	var chunks [][]byte
	for i := range parts {
		for _, piece := range parts[i].pieces() {
			chunks = append(chunks, parts[i].json(piece))
		}
	}
	h := w.Header()
	if sse {
		h.Set("Content-Type", "text/event-stream")
	} else {
		h.Set("Content-Type", "application/json; charset=UTF-8")
	}
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	n := 0
	send := func(data []byte) bool {
		if n > 0 && !s.sleep(ctx, resp.delayMS) {
			return false
		}
		var err error
		switch {
		case sse:
			_, err = fmt.Fprintf(w, "data: %s\r\n\r\n", data)
		case n == 0:
			_, err = fmt.Fprintf(w, "[%s", data)
		default:
			_, err = fmt.Fprintf(w, ",\r\n%s", data)
		}
		n++
		if err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	ok := true
	for i := 0; ok && i < len(chunks); i++ {
		last := i == len(chunks)-1 && resp.err == nil
		ok = send(geminiChunk(resp, chunks[i:i+1], last))
	}
	if ok && len(chunks) == 0 && resp.err == nil {
		ok = send(geminiChunk(resp, nil, true))
	}
	if ok && resp.err != nil {
		status, _, msg := resp.err.resolve()
		ok = send(googleError(status, msg))
	}
	if !ok {
		s.log.Debug("fakemodel: stream cut short", "id", resp.id)
		return http.StatusOK
	}
	if !sse {
		fmt.Fprint(w, "]")
	}
	return http.StatusOK
}

// GeminiModel is the model a Gemini CLI pointed at the server asks for
// (GeminiSettings): a fixed one, so that the CLI routes no prompt through
// a classifier call first; every request still comes here.
const GeminiModel = "gemini-2.5-pro"

// GeminiAPIKey is the API key GeminiEnv hands to Gemini CLI. The server
// accepts any key.
const GeminiAPIKey = "fake-gemini-key"

// GeminiEnv returns the variables that point Gemini CLI (0.61.0) at this
// server, with home as its GEMINI_CLI_HOME (the folder whose .gemini/
// holds GeminiSettings): the base URL and an API key, the working
// directory trusted (no folder trust dialog), and the proxies' loopback
// exception.
func (s *Server) GeminiEnv(home string) []string {
	return []string{
		"GEMINI_CLI_HOME=" + home,
		"GOOGLE_GEMINI_BASE_URL=" + s.url,
		"GEMINI_API_KEY=" + GeminiAPIKey,
		"GEMINI_CLI_TRUST_WORKSPACE=true",
		"NO_PROXY=" + noProxy(""),
		"no_proxy=" + noProxy(""),
	}
}

// GeminiSettings is a Gemini CLI settings.json (GEMINI_CLI_HOME/.gemini/)
// for a CLI that GeminiEnv points here: the API key's authentication
// chosen (no auth dialog), the model fixed (GeminiModel), and none of
// what would open a dialog, nudge or call elsewhere at the start: no
// update check, no usage statistics, no IDE nudge. Its retries are left
// as they are: with general.maxAttempts 1, Gemini CLI 0.61.0 answered a
// 5xx by calling again at once, for ever (its fallback to another model
// starts the attempts over).
func (s *Server) GeminiSettings() []byte {
	return fmt.Appendf(nil, `{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "model": {"name": %s, "disableLoopDetection": true},
  "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
  "privacy": {"usageStatisticsEnabled": false},
  "ide": {"enabled": false, "hasSeenNudge": true}
}
`, jsonString(GeminiModel))
}
