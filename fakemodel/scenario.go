package fakemodel

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

//go:embed default.json
var defaultScenarioJSON []byte

// Built-in scenario names accepted by Load.
const DefaultScenario = "default"

// Limits that keep a scenario from making the server hang or explode.
const (
	maxDelayMS   = 60_000    // per-event delay and latency, each
	maxTextSize  = 256 << 20 // generated text ("size")
	defaultSig   = "sig"
	defaultInTok = 12
	defaultOutTk = 20
)

// Scenario scripts the fake model. See docs/fake-model.md for the format.
// A Scenario is read-only once validated and may be shared by servers.
type Scenario struct {
	// Name identifies the scenario in logs. Load fills it from the file name
	// when empty.
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	// Usage reported for every call unless a step overrides it
	// (default 12 input and 20 output tokens).
	Usage *Usage `json:"usage,omitempty"`
	// DelayMS is the default pause between two streamed events.
	DelayMS int `json:"delay_ms,omitempty"`
	// Ping sends an SSE "ping" event after message_start, like the real API.
	Ping bool `json:"ping,omitempty"`
	// Rules are tried in order; the first that matches the request wins.
	Rules []Rule `json:"rules"`
	// Fallback answers requests no rule matches. It must not have match
	// fields. Without it the reply is a short text naming the problem.
	Fallback *Rule `json:"fallback,omitempty"`
}

// Rule selects a scripted exchange. All match fields that are set must match
// the latest prompt (and model); a rule without match fields is invalid except
// as the fallback.
type Rule struct {
	// Name shows in logs and the request log; default is the keyword.
	Name string `json:"name,omitempty"`
	// Keyword matches as a whole word, case-sensitively ("BASH" does not
	// match "BASHRO"). {{arg}} is the word that follows it.
	Keyword string `json:"keyword,omitempty"`
	// Contains matches a case-sensitive substring. {{arg}} is the word that
	// follows it.
	Contains string `json:"contains,omitempty"`
	// Regex is a Go regular expression. {{arg}} is its first group.
	Regex string `json:"regex,omitempty"`
	// Model matches a substring of the requested model id.
	Model string `json:"model,omitempty"`
	// Loop makes the last step repeat for ever; it is required when the last
	// step calls a tool, so that endless loops are deliberate.
	Loop bool `json:"loop,omitempty"`
	// Steps are the scripted responses: step i answers the call made after
	// i assistant turns since the prompt. Calls past the end reuse the last.
	Steps []Step `json:"steps"`
}

// Step is one response of the fake model.
type Step struct {
	// Blocks are the content blocks, streamed in order.
	Blocks []Block `json:"blocks,omitempty"`
	// StopReason defaults to "tool_use" when a block calls a tool, else
	// "end_turn".
	StopReason string `json:"stop_reason,omitempty"`
	// DelayMS overrides the scenario's pause between streamed events.
	DelayMS *int `json:"delay_ms,omitempty"`
	// LatencyMS is a pause before the response starts (before its headers).
	LatencyMS int `json:"latency_ms,omitempty"`
	// Usage overrides the scenario's usage for this response.
	Usage *Usage `json:"usage,omitempty"`
	// Error makes the call fail: with an HTTP status, or as an SSE error
	// event after the blocks when InStream is set.
	Error *APIError `json:"error,omitempty"`
}

// Block is one content block of a response.
type Block struct {
	// Type is "text", "thinking", "redacted_thinking" or "tool_use".
	Type string `json:"type"`
	// Text of a text block. With Size, it is the pattern repeated to fill
	// Size bytes.
	Text string `json:"text,omitempty"`
	// Thinking and Signature of a thinking block (signature default "sig").
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	// Data of a redacted_thinking block.
	Data string `json:"data,omitempty"`
	// Name, Input and optional ID of a tool_use block. Input is a JSON
	// object (default {}); its string values may use templates. The ID is
	// random when empty.
	Name  string          `json:"name,omitempty"`
	ID    string          `json:"id,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// Size makes a text block exactly this many bytes: a number, or a
	// template string such as "{{arg|1048576}}".
	Size Size `json:"size,omitempty"`
	// ChunkSize is the largest delta in bytes. Default: text is streamed a
	// word per delta, thinking in one delta, tool input in two deltas.
	ChunkSize int `json:"chunk_size,omitempty"`
}

// Usage is the token usage reported for a call.
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens,omitempty"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens,omitempty"`
}

// APIError is a scripted API failure.
type APIError struct {
	// Status is the HTTP status (400-599). Required unless InStream.
	Status int `json:"status,omitempty"`
	// Type is the Anthropic error type; default derived from Status
	// (400 invalid_request_error, 401 authentication_error, 403
	// permission_error, 404 not_found_error, 413 request_too_large, 429
	// rate_limit_error, 500 api_error, 529 overloaded_error, ...).
	Type string `json:"type,omitempty"`
	// Message defaults to "fake <type> (<status>)".
	Message string `json:"message,omitempty"`
	// RetryAfter sets the retry-after header in seconds (HTTP errors only).
	RetryAfter int `json:"retry_after,omitempty"`
	// InStream answers 200, streams the step's blocks and then sends an SSE
	// "error" event instead of message_delta/message_stop.
	InStream bool `json:"in_stream,omitempty"`
}

// Size is a byte count given as a JSON number or a template string.
type Size string

// UnmarshalJSON accepts a number or a string.
func (s *Size) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var str string
		if err := json.Unmarshal(b, &str); err != nil {
			return err
		}
		*s = Size(str)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("size must be a whole number or a template string, got %s", b)
	}
	*s = Size(strconv.FormatInt(n, 10))
	return nil
}

// Load returns the built-in scenario "default", or reads and validates the
// JSON scenario file at nameOrPath. Errors name the file and the problem.
func Load(nameOrPath string) (*Scenario, error) {
	if nameOrPath == DefaultScenario {
		sc, err := Parse(defaultScenarioJSON)
		if err != nil {
			return nil, fmt.Errorf("fakemodel: built-in scenario %q: %w", nameOrPath, err)
		}
		return sc, nil
	}
	data, err := os.ReadFile(nameOrPath)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && !strings.ContainsAny(nameOrPath, `/\.`) {
			return nil, fmt.Errorf("fakemodel: unknown scenario %q (built-in: %s; otherwise give a path to a JSON file)", nameOrPath, DefaultScenario)
		}
		return nil, fmt.Errorf("fakemodel: scenario: %w", err)
	}
	sc, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("fakemodel: scenario %s: %w", nameOrPath, err)
	}
	if sc.Name == "" {
		sc.Name = strings.TrimSuffix(filepath.Base(nameOrPath), filepath.Ext(nameOrPath))
	}
	return sc, nil
}

// Parse decodes and validates a JSON scenario. Unknown fields are errors.
func Parse(data []byte) (*Scenario, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var sc Scenario
	if err := dec.Decode(&sc); err != nil {
		return nil, describeJSONError(data, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the scenario object")
	}
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	return &sc, nil
}

func describeJSONError(data []byte, err error) error {
	var off int64 = -1
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		off = typ.Offset
		if typ.Field != "" {
			err = fmt.Errorf("field %s: cannot use JSON %s as %s", typ.Field, typ.Value, typ.Type)
		}
	}
	if off >= 0 && off <= int64(len(data)) {
		line := 1 + bytes.Count(data[:off], []byte("\n"))
		return fmt.Errorf("line %d: %w", line, err)
	}
	return err
}

// Validate checks the scenario without changing it. Parse and Start call
// it, so a Scenario built in Go code need not call it first. A Scenario may
// be shared by several servers but must not be changed while one runs.
func (sc *Scenario) Validate() error {
	if sc == nil {
		return errors.New("nil scenario")
	}
	if len(sc.Rules) == 0 && sc.Fallback == nil {
		return errors.New("no rules and no fallback")
	}
	if err := checkDelay("delay_ms", sc.DelayMS); err != nil {
		return err
	}
	if err := checkUsage("usage", sc.Usage); err != nil {
		return err
	}
	for i := range sc.Rules {
		r := &sc.Rules[i]
		where := fmt.Sprintf("rules[%d]", i)
		if r.label() != "" {
			where += " (" + r.label() + ")"
		}
		if err := r.validate(where, false); err != nil {
			return err
		}
	}
	if sc.Fallback != nil {
		if err := sc.Fallback.validate("fallback", true); err != nil {
			return err
		}
	}
	return nil
}

func (r *Rule) label() string {
	switch {
	case r.Name != "":
		return r.Name
	case r.Keyword != "":
		return r.Keyword
	case r.Contains != "":
		return "contains " + strconv.Quote(r.Contains)
	case r.Regex != "":
		return "regex " + strconv.Quote(r.Regex)
	case r.Model != "":
		return "model " + strconv.Quote(r.Model)
	}
	return ""
}

func (r *Rule) validate(where string, fallback bool) error {
	hasMatch := r.Keyword != "" || r.Contains != "" || r.Regex != "" || r.Model != ""
	if fallback && hasMatch {
		return fmt.Errorf("%s: the fallback must not have keyword, contains, regex or model", where)
	}
	if !fallback && !hasMatch {
		return fmt.Errorf("%s: needs at least one of keyword, contains, regex or model", where)
	}
	if r.Keyword != "" && strings.IndexFunc(r.Keyword, unicode.IsSpace) >= 0 {
		return fmt.Errorf("%s: keyword %q must be a single word (use contains or regex for phrases)", where, r.Keyword)
	}
	if r.Regex != "" {
		if _, err := regexp.Compile(r.Regex); err != nil {
			return fmt.Errorf("%s: regex: %w", where, err)
		}
	}
	if len(r.Steps) == 0 {
		return fmt.Errorf("%s: no steps", where)
	}
	for i := range r.Steps {
		if err := r.Steps[i].validate(fmt.Sprintf("%s.steps[%d]", where, i)); err != nil {
			return err
		}
	}
	last := &r.Steps[len(r.Steps)-1]
	if last.callsTool() && last.Error == nil && !r.Loop {
		return fmt.Errorf("%s: the last step calls a tool, so the conversation would never end: add a final text step, or set \"loop\": true to repeat it on purpose", where)
	}
	return nil
}

func (st *Step) callsTool() bool {
	for _, b := range st.Blocks {
		if b.Type == "tool_use" {
			return true
		}
	}
	return false
}

func (st *Step) validate(where string) error {
	if st.DelayMS != nil {
		if err := checkDelay(where+".delay_ms", *st.DelayMS); err != nil {
			return err
		}
	}
	if err := checkDelay(where+".latency_ms", st.LatencyMS); err != nil {
		return err
	}
	if err := checkUsage(where+".usage", st.Usage); err != nil {
		return err
	}
	if e := st.Error; e != nil {
		if e.InStream {
			if e.Status != 0 || e.RetryAfter != 0 {
				return fmt.Errorf("%s.error: status and retry_after make no sense with in_stream (the stream answers 200)", where)
			}
			if e.Type == "" {
				return fmt.Errorf("%s.error: in_stream errors need a type, e.g. \"overloaded_error\"", where)
			}
		} else {
			if e.Status < 400 || e.Status > 599 {
				return fmt.Errorf("%s.error: status %d is not an HTTP error status (400-599)", where, e.Status)
			}
			if len(st.Blocks) > 0 {
				return fmt.Errorf("%s: a step with an HTTP error status cannot have blocks (use \"in_stream\": true to fail mid-stream)", where)
			}
		}
		if e.RetryAfter < 0 {
			return fmt.Errorf("%s.error: negative retry_after", where)
		}
	} else if len(st.Blocks) == 0 {
		return fmt.Errorf("%s: needs blocks or an error", where)
	}
	switch st.StopReason {
	case "", "end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn", "refusal", "model_context_window_exceeded":
	default:
		return fmt.Errorf("%s: unknown stop_reason %q", where, st.StopReason)
	}
	for i := range st.Blocks {
		if err := st.Blocks[i].validate(fmt.Sprintf("%s.blocks[%d]", where, i)); err != nil {
			return err
		}
	}
	return nil
}

func (b *Block) validate(where string) error {
	switch b.Type {
	case "text", "thinking", "redacted_thinking", "tool_use":
	case "":
		return fmt.Errorf("%s: block without a type (text, thinking, redacted_thinking, tool_use)", where)
	default:
		return fmt.Errorf("%s: unknown block type %q (text, thinking, redacted_thinking, tool_use)", where, b.Type)
	}
	if b.ChunkSize < 0 {
		return fmt.Errorf("%s: negative chunk_size", where)
	}
	onlyFor := func(field, value, typ string) error {
		if value != "" && b.Type != typ {
			return fmt.Errorf("%s: %s is only for %s blocks", where, field, typ)
		}
		return nil
	}
	for _, c := range []struct{ field, value, typ string }{
		{"text", b.Text, "text"}, {"size", string(b.Size), "text"},
		{"thinking", b.Thinking, "thinking"}, {"signature", b.Signature, "thinking"},
		{"data", b.Data, "redacted_thinking"},
		{"name", b.Name, "tool_use"}, {"id", b.ID, "tool_use"}, {"input", string(b.Input), "tool_use"},
	} {
		if err := onlyFor(c.field, c.value, c.typ); err != nil {
			return err
		}
	}
	switch b.Type {
	case "text":
		if b.Text == "" {
			return fmt.Errorf("%s: text block without text", where)
		}
		if err := checkTemplate(where+".text", b.Text); err != nil {
			return err
		}
		if b.Size != "" {
			if err := checkTemplate(where+".size", string(b.Size)); err != nil {
				return err
			}
			if !strings.Contains(string(b.Size), "{{") {
				n, err := strconv.ParseInt(string(b.Size), 10, 64)
				if err != nil || n < 0 || n > maxTextSize {
					return fmt.Errorf("%s: size %q is not a byte count between 0 and %d", where, string(b.Size), maxTextSize)
				}
			}
		}
	case "thinking":
		if b.Thinking == "" {
			return fmt.Errorf("%s: thinking block without thinking", where)
		}
		if err := checkTemplate(where+".thinking", b.Thinking); err != nil {
			return err
		}
	case "redacted_thinking":
		if b.Data == "" {
			return fmt.Errorf("%s: redacted_thinking block without data", where)
		}
	case "tool_use":
		if b.Name == "" {
			return fmt.Errorf("%s: tool_use block without a tool name", where)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(b.input(), &obj); err != nil || obj == nil {
			return fmt.Errorf("%s: tool_use input must be a JSON object", where)
		}
		if err := checkTemplate(where+".input", string(b.Input)); err != nil {
			return err
		}
	}
	return nil
}

// input is the tool input, {} when absent.
func (b *Block) input() []byte {
	if len(bytes.TrimSpace(b.Input)) == 0 {
		return []byte("{}")
	}
	return b.Input
}

func checkDelay(where string, ms int) error {
	if ms < 0 || ms > maxDelayMS {
		return fmt.Errorf("%s: %d ms is outside 0..%d", where, ms, maxDelayMS)
	}
	return nil
}

func checkUsage(where string, u *Usage) error {
	if u != nil && (u.InputTokens < 0 || u.OutputTokens < 0 || u.CacheReadInputTokens < 0 || u.CacheCreationInputTokens < 0) {
		return fmt.Errorf("%s: negative token count", where)
	}
	return nil
}
