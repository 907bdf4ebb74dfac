package fakemodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
)

// block is a content block with its templates expanded, ready to send.
type block struct {
	typ       string
	text      string // text or thinking
	signature string
	data      string
	id, name  string
	input     []byte // compact JSON object
	chunkSize int
}

// response is a step rendered for one request.
type response struct {
	id         string
	model      string
	blocks     []block
	stopReason string
	usage      Usage
	delayMS    int
	latencyMS  int
	err        *APIError
}

// render expands a step for one request.
func (sc *Scenario) render(st *Step, v *vars) *response {
	resp := &response{
		id:         "msg_" + randomID(),
		model:      v.model,
		stopReason: st.StopReason,
		usage:      Usage{InputTokens: defaultInTok, OutputTokens: defaultOutTk},
		delayMS:    sc.DelayMS,
		latencyMS:  st.LatencyMS,
		err:        st.Error,
	}
	if resp.model == "" {
		resp.model = "claude-fake"
	}
	if sc.Usage != nil {
		resp.usage = *sc.Usage
	}
	if st.Usage != nil {
		resp.usage = *st.Usage
	}
	if st.DelayMS != nil {
		resp.delayMS = *st.DelayMS
	}
	for _, b := range st.Blocks {
		out := block{typ: b.Type, chunkSize: b.ChunkSize}
		switch b.Type {
		case "text":
			out.text = v.expand(b.Text)
			if b.Size != "" {
				s := v.expand(string(b.Size))
				n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
				if err != nil || n < 0 || n > maxTextSize {
					out.text = fmt.Sprintf("fake model: size %q is not a byte count between 0 and %d", s, maxTextSize)
				} else {
					out.text = fill(out.text, int(n))
				}
			}
		case "thinking":
			out.text = v.expand(b.Thinking)
			out.signature = b.Signature
			if out.signature == "" {
				out.signature = defaultSig
			}
		case "redacted_thinking":
			out.data = b.Data
		case "tool_use":
			out.name = b.Name
			out.id = b.ID
			if out.id == "" {
				out.id = "toolu_" + randomID()
			}
			in := v.expandJSON(b.input())
			var buf bytes.Buffer
			if err := json.Compact(&buf, in); err != nil {
				// Only a default containing JSON syntax can get here.
				buf.Reset()
				buf.WriteString("{}")
			}
			out.input = buf.Bytes()
			if resp.stopReason == "" {
				resp.stopReason = "tool_use"
			}
		}
		resp.blocks = append(resp.blocks, out)
	}
	if resp.stopReason == "" {
		resp.stopReason = "end_turn"
	}
	return resp
}

// randomID returns 24 random hex digits, so ids never repeat, even across
// servers (a resumed session must not see an id twice).
func randomID() string {
	u := uuid.New()
	return strings.ReplaceAll(u.String(), "-", "")[:24]
}

// fill repeats pattern to exactly n bytes (cut at a rune boundary, padded
// with spaces when a rune would be split).
func fill(pattern string, n int) string {
	if n <= 0 {
		return ""
	}
	if pattern == "" {
		pattern = "x"
	}
	var sb strings.Builder
	sb.Grow(n + len(pattern))
	for sb.Len() < n {
		sb.WriteString(pattern)
	}
	s := sb.String()[:n]
	for len(s) > 0 {
		if r, size := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || size > 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s + strings.Repeat(" ", n-len(s))
}

// splitWords splits s into pieces that each end after a run of whitespace,
// the way the mock streamed "Hello ", "from ", "the ", ...
func splitWords(s string) []string {
	var out []string
	start := 0
	inSpace, word := false, false
	for i, r := range s {
		sp := unicode.IsSpace(r)
		if inSpace && !sp && word {
			out = append(out, s[start:i])
			start = i
		}
		inSpace = sp
		word = word || !sp
		if start == i {
			word = !sp
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// splitBytes splits s into pieces of at most n bytes, never inside a rune
// (a piece may exceed n only when a single rune is longer than n).
func splitBytes(s string, n int) []string {
	if n <= 0 || len(s) <= n {
		if s == "" {
			return nil
		}
		return []string{s}
	}
	var out []string
	for len(s) > 0 {
		if len(s) <= n {
			out = append(out, s)
			break
		}
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		if cut == 0 {
			_, size := utf8.DecodeRuneInString(s)
			cut = size
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
}

// textPieces is how a text or thinking block is streamed: text a word per
// delta, thinking in one delta, as the mock did, unless chunkSize is set.
func (b *block) textPieces() []string {
	if b.chunkSize > 0 || b.typ == "thinking" {
		return splitBytes(b.text, b.chunkSize)
	}
	return splitWords(b.text)
}

// inputPieces is how a tool input is streamed: two halves by default.
func (b *block) inputPieces() []string {
	s := string(b.input)
	if b.chunkSize > 0 {
		return splitBytes(s, b.chunkSize)
	}
	if len(s) < 8 {
		return []string{s}
	}
	return splitBytes(s, (len(s)+1)/2)
}

// contentJSON is the block as it appears in a non-streaming response.
func (b *block) contentJSON() []byte {
	switch b.typ {
	case "text":
		return fmt.Appendf(nil, `{"type":"text","text":%s}`, jsonString(b.text))
	case "thinking":
		return fmt.Appendf(nil, `{"type":"thinking","thinking":%s,"signature":%s}`, jsonString(b.text), jsonString(b.signature))
	case "redacted_thinking":
		return fmt.Appendf(nil, `{"type":"redacted_thinking","data":%s}`, jsonString(b.data))
	case "tool_use":
		return fmt.Appendf(nil, `{"type":"tool_use","id":%s,"name":%s,"input":%s}`, jsonString(b.id), jsonString(b.name), b.input)
	}
	return []byte(`{}`)
}

// startJSON is the content_block of a content_block_start event.
func (b *block) startJSON() []byte {
	switch b.typ {
	case "text":
		return []byte(`{"type":"text","text":""}`)
	case "thinking":
		return []byte(`{"type":"thinking","thinking":"","signature":""}`)
	case "redacted_thinking":
		return b.contentJSON()
	case "tool_use":
		return fmt.Appendf(nil, `{"type":"tool_use","id":%s,"name":%s,"input":{}}`, jsonString(b.id), jsonString(b.name))
	}
	return []byte(`{}`)
}

// jsonString encodes s as a JSON string without HTML escaping.
func jsonString(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func (r *response) messageJSON() []byte {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, `{"id":%s,"type":"message","role":"assistant","model":%s,"content":[`, jsonString(r.id), jsonString(r.model))
	for i := range r.blocks {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(r.blocks[i].contentJSON())
	}
	fmt.Fprintf(&buf, `],"stop_reason":%s,"stop_sequence":null,"usage":%s}`, jsonString(r.stopReason), r.usageJSON(r.usage.OutputTokens))
	return buf.Bytes()
}

func (r *response) usageJSON(output int) []byte {
	return fmt.Appendf(nil, `{"input_tokens":%d,"output_tokens":%d,"cache_read_input_tokens":%d,"cache_creation_input_tokens":%d}`,
		r.usage.InputTokens, output, r.usage.CacheReadInputTokens, r.usage.CacheCreationInputTokens)
}

// errorTypes maps HTTP statuses to Anthropic error types.
var errorTypes = map[int]string{
	400: "invalid_request_error",
	401: "authentication_error",
	402: "billing_error",
	403: "permission_error",
	404: "not_found_error",
	413: "request_too_large",
	429: "rate_limit_error",
	500: "api_error",
	503: "overloaded_error",
	504: "timeout_error",
	529: "overloaded_error",
}

// errorStatuses maps error types back, for errors sent without a status.
var errorStatuses = map[string]int{
	"invalid_request_error": 400,
	"authentication_error":  401,
	"billing_error":         402,
	"permission_error":      403,
	"not_found_error":       404,
	"request_too_large":     413,
	"rate_limit_error":      429,
	"api_error":             500,
	"timeout_error":         504,
	"overloaded_error":      529,
}

// resolve fills in the type, status and message of a scripted error.
func (e *APIError) resolve() (status int, typ, msg string) {
	status, typ, msg = e.Status, e.Type, e.Message
	if typ == "" {
		typ = errorTypes[status]
		if typ == "" {
			if status >= 500 {
				typ = "api_error"
			} else {
				typ = "invalid_request_error"
			}
		}
	}
	if status == 0 {
		status = errorStatuses[typ]
		if status == 0 {
			status = 500
		}
	}
	if msg == "" {
		msg = fmt.Sprintf("fake %s (%d)", typ, status)
	}
	return status, typ, msg
}

func errorBody(typ, msg, requestID string) []byte {
	return fmt.Appendf(nil, `{"type":"error","error":{"type":%s,"message":%s},"request_id":%s}`, jsonString(typ), jsonString(msg), jsonString(requestID))
}
