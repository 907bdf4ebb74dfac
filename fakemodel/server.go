package fakemodel

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
)

// APIKey is the API key Env hands to the CLI. The server accepts any key.
const APIKey = "sk-ant-fake"

const (
	maxBody     = 512 << 20 // request bodies larger than this are refused
	maxLog      = 1_000     // request log entries kept (Options.MaxLog's default)
	keepBodies  = 16        // most recent requests whose bodies are kept (Options.KeepBodies's default)
	promptLimit = 500       // bytes of the prompt kept in the log
)

// Options says how much of its request log a Server keeps. The zero value
// keeps what Start keeps.
//
// A logged entry holds copies of a few small fields (the prompt cut to 500
// bytes, the model, the rule), never a piece of the request's body, so it
// costs well under a kilobyte however long the conversation has grown.
// Bodies are another matter: the CLI sends the whole conversation with
// every call, so each kept body is as large as the session so far.
type Options struct {
	// MaxLog is how many entries the request log keeps, the latest ones.
	// 0 means 1,000; a negative value keeps none (Count still counts).
	MaxLog int
	// KeepBodies is how many of the latest entries keep their request's
	// raw body. 0 means 16; a negative value keeps none.
	KeepBodies int
}

func (o Options) withDefaults() Options {
	switch {
	case o.MaxLog == 0:
		o.MaxLog = maxLog
	case o.MaxLog < 0:
		o.MaxLog = 0
	}
	switch {
	case o.KeepBodies == 0:
		o.KeepBodies = keepBodies
	case o.KeepBodies < 0:
		o.KeepBodies = 0
	}
	return o
}

// Request is one entry of the server's request log.
type Request struct {
	Time   time.Time
	Method string
	Path   string // without the query (the CLI adds ?beta=true)
	Model  string
	Stream bool
	// For /v1/messages: the latest prompt (cut to 500 bytes), the step
	// index and the rule that answered ("fallback" or "none" when no rule
	// matched).
	Prompt string
	Step   int
	Rule   string
	// Status is the HTTP status; 0 while the response is being sent.
	Status int
	// Body is kept for the 16 most recent requests only (Options.KeepBodies),
	// nil for older ones.
	Body []byte
}

// Server is a running fake Messages API.
type Server struct {
	sc     *Scenario
	opts   Options
	res    []*regexp.Regexp // compiled Regex of each rule
	log    *slog.Logger
	srv    *http.Server
	url    string
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
	reqs   []*Request
	total  int
	done   chan struct{}
	serErr error
}

// Start validates sc and serves it on 127.0.0.1 on a free port. logger may
// be nil. Every request is logged at debug level. The request log keeps
// what Options' zero value says.
func Start(sc *Scenario, logger *slog.Logger) (*Server, error) {
	return StartWith(sc, logger, Options{})
}

// StartWith is Start with the request log's limits given.
func StartWith(sc *Scenario, logger *slog.Logger, opts Options) (*Server, error) {
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("fakemodel: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	res := make([]*regexp.Regexp, len(sc.Rules))
	for i, r := range sc.Rules {
		if r.Regex != "" {
			res[i] = regexp.MustCompile(r.Regex) // checked by Validate
		}
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakemodel: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		sc:     sc,
		opts:   opts.withDefaults(),
		res:    res,
		log:    logger,
		url:    "http://" + ln.Addr().String(),
		ctx:    ctx,
		cancel: cancel,
		done:   make(chan struct{}),
	}
	s.srv = &http.Server{
		Handler:           http.HandlerFunc(s.serveHTTP),
		ReadHeaderTimeout: 30 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.serErr = err
		}
	}()
	logger.Debug("fakemodel: listening", "url", s.url, "scenario", sc.Name)
	return s, nil
}

// URL is the server's base URL, e.g. http://127.0.0.1:40321.
func (s *Server) URL() string { return s.url }

// Env returns the variables that point the Claude Code CLI at this server,
// as KEY=value strings to append to the child's environment (set HOME to a
// scratch folder yourself).
func (s *Server) Env() []string {
	return []string{
		"ANTHROPIC_BASE_URL=" + s.url,
		"ANTHROPIC_API_KEY=" + APIKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_AUTOUPDATER=1",
		// The CLI sends even loopback requests through HTTP(S)_PROXY;
		// the fake must be reached directly.
		"NO_PROXY=" + noProxy(os.Getenv("NO_PROXY")),
		"no_proxy=" + noProxy(os.Getenv("no_proxy")),
	}
}

// noProxy adds the loopback addresses to a NO_PROXY list.
func noProxy(list string) string {
	const loopback = "127.0.0.1,localhost,::1"
	if list == "" {
		return loopback
	}
	return loopback + "," + list
}

// Requests returns a copy of the request log, oldest first (at most the
// latest 1,000 requests, or Options.MaxLog).
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.reqs))
	for i, r := range s.reqs {
		out[i] = *r
	}
	return out
}

// Count returns how many requests the server has received, including those
// dropped from the log.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// Close stops the server, cuts running streams and waits for the handlers.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	err := s.srv.Close()
	s.wg.Wait()
	<-s.done
	if err == nil {
		err = s.serErr
	}
	return err
}

// record adds a request to the log when it arrives.
func (s *Server) record(r *Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total++
	keep, bodies := s.opts.MaxLog, s.opts.KeepBodies
	if bodies == 0 || keep == 0 {
		r.Body = nil
	}
	if keep == 0 {
		return
	}
	if len(s.reqs) >= keep {
		n := copy(s.reqs, s.reqs[len(s.reqs)-keep+1:])
		clear(s.reqs[n:])
		s.reqs = s.reqs[:n]
	}
	s.reqs = append(s.reqs, r)
	if n := len(s.reqs) - bodies - 1; n >= 0 {
		s.reqs[n].Body = nil
	}
}

// update changes a logged request under the lock.
func (s *Server) update(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn()
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		http.Error(w, "closed", http.StatusServiceUnavailable)
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()

	entry := &Request{Time: time.Now(), Method: r.Method, Path: r.URL.Path}
	body, err := readBody(w, r)
	if err != nil {
		entry.Status = http.StatusBadRequest
		s.record(entry)
		s.log.Debug("fakemodel: unreadable request body", "method", r.Method, "path", r.URL.Path, "err", err)
		writeAPIError(w, http.StatusBadRequest, "invalid_request_error", "fake model: "+err.Error(), "req_"+randomID(), 0)
		return
	}
	entry.Body = body
	// The log outlives the request: it keeps copies, never a string that
	// points into the body (or into gjson's copy of a part of it).
	entry.Model = strings.Clone(gjson.GetBytes(body, "model").String())
	path := strings.TrimSuffix(r.URL.Path, "/")
	if r.Method == http.MethodPost && path == "/v1/messages" {
		s.messages(w, r, body, entry)
		return
	}
	if r.Method == http.MethodPost && path == "/v1/responses" {
		s.responses(w, r, body, entry)
		return
	}
	if m := geminiPath.FindStringSubmatch(path); m != nil && r.Method == http.MethodPost {
		s.gemini(w, r, body, entry, m[2], m[3])
		return
	}
	s.record(entry)
	status := http.StatusOK
	switch {
	case r.Method == http.MethodPost && path == "/v1/messages/count_tokens":
		// A rough, deterministic estimate: four bytes a token.
		writeJSON(w, http.StatusOK, fmt.Appendf(nil, `{"input_tokens":%d}`, max(1, len(body)/4)))
	case (r.Method == http.MethodGet || r.Method == http.MethodHead) && path == "/v1/models":
		writeJSON(w, http.StatusOK, modelList())
	case (r.Method == http.MethodGet || r.Method == http.MethodHead) && strings.HasPrefix(path, "/v1/models/"):
		writeJSON(w, http.StatusOK, modelJSON(strings.TrimPrefix(path, "/v1/models/")))
	case (r.Method == http.MethodGet || r.Method == http.MethodHead) && path == "":
		// Connectivity checks.
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			io.WriteString(w, "fakemodel ok\n")
		}
	default:
		s.log.Debug("fakemodel: unknown endpoint", "method", r.Method, "path", r.URL.Path, "query", r.URL.RawQuery, "body_bytes", len(body))
		writeAPIError(w, http.StatusNotFound, "not_found_error", "fake model: no such endpoint: "+r.Method+" "+r.URL.Path, "req_"+randomID(), 0)
		status = http.StatusNotFound
	}
	s.update(func() { entry.Status = status })
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	var rd io.Reader = http.MaxBytesReader(w, r.Body, maxBody)
	switch strings.ToLower(r.Header.Get("Content-Encoding")) {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(rd)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		rd = io.LimitReader(zr, maxBody)
	default:
		return nil, fmt.Errorf("unsupported Content-Encoding %q", r.Header.Get("Content-Encoding"))
	}
	return io.ReadAll(rd)
}

// choose picks the rule and step for a request.
func (s *Server) choose(info *requestInfo) (label string, st *Step, arg string) {
	var rule *Rule
	for i := range s.sc.Rules {
		if a, ok := s.sc.Rules[i].match(info, s.res[i]); ok {
			rule, arg, label = &s.sc.Rules[i], a, s.sc.Rules[i].label()
			break
		}
	}
	if rule == nil {
		if s.sc.Fallback == nil {
			return "none", noRuleStep, ""
		}
		rule, label = s.sc.Fallback, "fallback"
	}
	i := min(info.step, len(rule.Steps)-1)
	return label, &rule.Steps[i], arg
}

var noRuleStep = &Step{Blocks: []Block{{Type: "text", Text: "fake model: no rule of the scenario matches this prompt, and the scenario has no fallback."}}}

// messages answers POST /v1/messages.
func (s *Server) messages(w http.ResponseWriter, r *http.Request, body []byte, entry *Request) {
	reqID := "req_" + randomID()
	if !gjson.ValidBytes(body) || !gjson.GetBytes(body, "messages").IsArray() {
		entry.Status = http.StatusBadRequest
		s.record(entry)
		s.log.Debug("fakemodel: malformed messages request", "body_bytes", len(body))
		writeAPIError(w, http.StatusBadRequest, "invalid_request_error", "fake model: the body must be a JSON object with a messages array", reqID, 0)
		return
	}
	info := analyze(body)
	resp := s.answer(&info, entry, "fakemodel: messages")
	status := s.respond(r.Context(), w, resp, info.stream, reqID)
	s.update(func() { entry.Status = status })
}

// answer chooses the rule and step for a request, records the request in
// the log and renders the step.
func (s *Server) answer(info *requestInfo, entry *Request, logMsg string) *response {
	label, st, arg := s.choose(info)
	entry.Stream, entry.Step, entry.Rule = info.stream, info.step, label
	// info.prompt points into the copy of the whole messages array that
	// gjson made: a clone of at most promptLimit bytes is all the log keeps.
	p := info.prompt
	if len(p) > promptLimit {
		p = strings.ToValidUTF8(p[:promptLimit], "")
	}
	entry.Prompt = strings.Clone(p)
	s.record(entry)
	v := &vars{cwd: info.cwd, arg: arg, prompt: info.prompt, model: info.model, toolResult: info.toolResult, steer: info.steer, images: info.images, step: info.step}
	s.log.Debug(logMsg, "rule", label, "step", info.step, "model", info.model, "stream", info.stream, "cwd", info.cwd, "prompt", truncate(info.prompt, 80))
	return s.sc.render(st, v)
}

// respond sends a rendered response and returns the HTTP status (499 when
// the client left before it started).
func (s *Server) respond(ctx context.Context, w http.ResponseWriter, resp *response, stream bool, reqID string) int {
	if !s.sleep(ctx, resp.latencyMS) {
		return 499
	}
	if e := resp.err; e != nil && (!e.InStream || !stream) {
		status, typ, msg := e.resolve()
		writeAPIError(w, status, typ, msg, reqID, e.RetryAfter)
		return status
	}
	if !stream {
		w.Header().Set("request-id", reqID)
		writeJSON(w, http.StatusOK, resp.messageJSON())
		return http.StatusOK
	}
	s.stream(ctx, w, resp, reqID)
	return http.StatusOK
}

// sleep waits ms milliseconds; false if the client went away or the server
// is closing.
func (s *Server) sleep(ctx context.Context, ms int) bool {
	if ms <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.ctx.Done():
		return false
	}
}

// stream writes the response as Messages API server-sent events.
func (s *Server) stream(ctx context.Context, w http.ResponseWriter, resp *response, reqID string) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("request-id", reqID)
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	first := true
	send := func(event string, data []byte) bool {
		if !first && !s.sleep(ctx, resp.delayMS) {
			return false
		}
		first = false
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	ok := send("message_start", fmt.Appendf(nil,
		`{"type":"message_start","message":{"id":%s,"type":"message","role":"assistant","model":%s,"content":[],"stop_reason":null,"stop_sequence":null,"usage":%s}}`,
		jsonString(resp.id), jsonString(resp.model), resp.usageJSON(1)))
	if ok && s.sc.Ping {
		ok = send("ping", []byte(`{"type":"ping"}`))
	}
	for i := 0; ok && i < len(resp.blocks); i++ {
		b := &resp.blocks[i]
		ok = send("content_block_start", fmt.Appendf(nil, `{"type":"content_block_start","index":%d,"content_block":%s}`, i, b.startJSON()))
		delta := func(d []byte) {
			if ok {
				ok = send("content_block_delta", fmt.Appendf(nil, `{"type":"content_block_delta","index":%d,"delta":%s}`, i, d))
			}
		}
		switch b.typ {
		case "text":
			for _, p := range b.textPieces() {
				delta(fmt.Appendf(nil, `{"type":"text_delta","text":%s}`, jsonString(p)))
			}
		case "thinking":
			for _, p := range b.textPieces() {
				delta(fmt.Appendf(nil, `{"type":"thinking_delta","thinking":%s}`, jsonString(p)))
			}
			delta(fmt.Appendf(nil, `{"type":"signature_delta","signature":%s}`, jsonString(b.signature)))
		case "tool_use":
			for _, p := range b.inputPieces() {
				delta(fmt.Appendf(nil, `{"type":"input_json_delta","partial_json":%s}`, jsonString(p)))
			}
		}
		if ok {
			ok = send("content_block_stop", fmt.Appendf(nil, `{"type":"content_block_stop","index":%d}`, i))
		}
	}
	if !ok {
		s.log.Debug("fakemodel: stream cut short", "id", resp.id)
		return
	}
	if e := resp.err; e != nil {
		_, typ, msg := e.resolve()
		send("error", fmt.Appendf(nil, `{"type":"error","error":{"type":%s,"message":%s}}`, jsonString(typ), jsonString(msg)))
		return
	}
	if send("message_delta", fmt.Appendf(nil, `{"type":"message_delta","delta":{"stop_reason":%s,"stop_sequence":null},"usage":{"output_tokens":%d}}`,
		jsonString(resp.stopReason), resp.usage.OutputTokens)) {
		send("message_stop", []byte(`{"type":"message_stop"}`))
	}
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

func writeAPIError(w http.ResponseWriter, status int, typ, msg, reqID string, retryAfter int) {
	w.Header().Set("request-id", reqID)
	if retryAfter > 0 {
		w.Header().Set("retry-after", strconv.Itoa(retryAfter))
	}
	writeJSON(w, status, errorBody(typ, msg, reqID))
}

// models the fake lists on /v1/models.
var knownModels = []struct{ id, name string }{
	{"claude-opus-5-5", "Claude Opus 5.5"},
	{"claude-sonnet-4-5", "Claude Sonnet 4.5"},
	{"claude-haiku-4-5", "Claude Haiku 4.5"},
	{"claude-haiku-5-5", "Claude Haiku 5.5"},
}

func modelJSON(id string) []byte {
	name := id
	for _, m := range knownModels {
		if m.id == id {
			name = m.name
		}
	}
	b, _ := json.Marshal(map[string]string{"type": "model", "id": id, "display_name": name, "created_at": "2026-01-01T00:00:00Z"})
	return b
}

func modelList() []byte {
	var parts []string
	for _, m := range knownModels {
		parts = append(parts, string(modelJSON(m.id)))
	}
	return fmt.Appendf(nil, `{"data":[%s],"has_more":false,"first_id":%q,"last_id":%q}`,
		strings.Join(parts, ","), knownModels[0].id, knownModels[len(knownModels)-1].id)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
