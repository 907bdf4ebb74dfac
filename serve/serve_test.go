package serve

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter/control"
	"github.com/ccbridge/ccbridge/adapter/worker"
	"github.com/ccbridge/ccbridge/mapping/lane004"
)

// serveFake is a Target004 standing in for a worker's loop: Do counts the
// calls per request id and answers on a goroutine of its own; turn/start
// waits for hold, when set, after signalling entered.
type serveFake struct {
	mu      sync.Mutex
	calls   map[string]int
	hold    chan struct{}
	entered chan string
}

func (f *serveFake) Do(req *lane004.Request, done func(control.Receipt004)) {
	f.mu.Lock()
	f.calls[req.RequestID]++
	f.mu.Unlock()
	go func() {
		if req.Method == lane004.MethodTurnStart && f.hold != nil {
			if f.entered != nil {
				f.entered <- req.RequestID
			}
			<-f.hold
		}
		done(control.Receipt004{OK: true, Response: `{"method":"` + req.Method + `"}`})
	}()
}

func (f *serveFake) callsOf(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[id]
}

// serveTestWorker is a worker with an in-memory lane: its store, its event
// log and a serveFake.
type serveTestWorker struct {
	*serveWorker
	fake *serveFake
	log  *control.EventLog
}

func newServeTestWorker(t *testing.T, id string, retain int) *serveTestWorker {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	log, err := control.OpenEventLog(control.EventLogConfig{Retain: retain, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	fake := &serveFake{calls: map[string]int{}}
	lane := control.NewLane004(control.Lane004Config{
		WorkerID: id,
		Store:    control.NewMemoryStore(control.StoreConfig{TTL: time.Hour, MaxKeys: 10_000}),
		Log:      log,
		Target:   fake,
		Submit:   func(fn func()) bool { go fn(); return true },
		Logger:   quiet,
	})
	w := worker.Lane004{Lane: lane, Log: log, Status: func() ([]byte, bool) {
		return []byte(`{"state":"idle","thread_id":null}`), true
	}}
	return &serveTestWorker{serveWorker: &serveWorker{id: id, w: w}, fake: fake, log: log}
}

// appendEvents appends n worker.event lines (their params padded to pad
// bytes) and returns them.
func (w *serveTestWorker) appendEvents(n, pad int) [][]byte {
	var lines [][]byte
	params := `{"pad":"` + strings.Repeat("x", pad) + `"}`
	for range n {
		w.log.Append(func(seq uint64) []byte {
			line := lane004.AppendEvent(nil, w.id, seq, "item/agentMessage/delta", params, time.Now())
			lines = append(lines, line)
			return line
		})
	}
	return lines
}

// newServeTest serves the workers; configure changes the API before it
// serves. The API is shut down (its streams end) before the server closes.
func newServeTest(t *testing.T, tokens *serveTokens, configure func(*serveAPI), ws ...*serveTestWorker) (*serveAPI, *httptest.Server) {
	t.Helper()
	var list []*serveWorker
	for _, w := range ws {
		list = append(list, w.serveWorker)
	}
	s := newServeAPI(list, tokens, nil)
	if configure != nil {
		configure(s)
	}
	ts := httptest.NewServer(s.handler())
	t.Cleanup(func() {
		ts.Close()
		s.wait()
	})
	t.Cleanup(s.shutdown)
	return s, ts
}

// serveCtx bounds a test's requests, so that a bug fails the test rather
// than hanging it.
func serveCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

type serveResp struct {
	status int
	header http.Header
	body   []byte
}

func serveDo(t *testing.T, ts *httptest.Server, method, path, token string, body io.Reader) serveResp {
	t.Helper()
	req, err := http.NewRequestWithContext(serveCtx(t), method, ts.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return serveRoundTrip(t, ts, req)
}

// serveRoundTrip sends req to ts and reads the whole answer.
func serveRoundTrip(t *testing.T, ts *httptest.Server, req *http.Request) serveResp {
	t.Helper()
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return serveResp{resp.StatusCode, resp.Header, b}
}

func servePost(t *testing.T, ts *httptest.Server, worker, token, body string) serveResp {
	t.Helper()
	return serveDo(t, ts, "POST", "/api/runtime/codex/workers/"+worker+"/requests", token, strings.NewReader(body))
}

func serveReq(id, method, params string) string {
	if params == "" {
		return `{"request":{"request_id":"` + id + `","method":"` + method + `"}}`
	}
	return `{"request":{"request_id":"` + id + `","method":"` + method + `","params":` + params + `}}`
}

// wantProblem checks a seq-less worker.error body.
func wantProblem(t *testing.T, r serveResp, status int, code string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if ev := gjson.GetBytes(r.body, "event_type").Str; ev != "worker.error" {
		t.Errorf("event_type %q: %s", ev, r.body)
	}
	if gjson.GetBytes(r.body, "seq").Exists() {
		t.Errorf("a seq in %s", r.body)
	}
	if c := gjson.GetBytes(r.body, "payload.code").Str; c != code {
		t.Errorf("code %q, want %q: %s", c, code, r.body)
	}
}

// sseEvent is one event (or comment) of a stream.
type sseEvent struct {
	id      uint64
	hasID   bool
	event   string
	data    string
	comment string
}

// readSSE reads the next event or comment; an event cut short is an error.
func readSSE(r *bufio.Reader) (sseEvent, error) {
	var e sseEvent
	some := false
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return e, err
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			if some {
				return e, nil
			}
			continue
		}
		some = true
		switch {
		case strings.HasPrefix(line, ":"):
			e.comment = strings.TrimSpace(line[1:])
		case strings.HasPrefix(line, "id: "):
			n, err := strconv.ParseUint(line[4:], 10, 64)
			if err != nil {
				return e, fmt.Errorf("id line %q", line)
			}
			e.id, e.hasID = n, true
		case strings.HasPrefix(line, "event: "):
			e.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			e.data = line[6:]
		default:
			return e, fmt.Errorf("unexpected line %q", line)
		}
	}
}

// sseStream is an open stream.
type sseStream struct {
	t    *testing.T
	resp *http.Response
	r    *bufio.Reader
}

func openStream(t *testing.T, ts *httptest.Server, worker, query, lastID string) *sseStream {
	t.Helper()
	req, err := http.NewRequestWithContext(serveCtx(t), "GET", ts.URL+"/api/runtime/codex/workers/"+worker+"/stream"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream: status %d: %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("stream: Content-Type %q", ct)
	}
	return &sseStream{t: t, resp: resp, r: bufio.NewReader(resp.Body)}
}

// next is the next event, keep-alives skipped.
func (s *sseStream) next() sseEvent {
	s.t.Helper()
	for {
		e, err := readSSE(s.r)
		if err != nil {
			s.t.Fatalf("stream: %v", err)
		}
		if e.comment == "" {
			return e
		}
	}
}

// expect reads the events with seqs from, from+1, …, to, in order, and
// checks each against lines (lines[seq-1]) when given.
func (s *sseStream) expect(from, to uint64, lines [][]byte) {
	s.t.Helper()
	for seq := from; seq <= to; seq++ {
		e := s.next()
		if !e.hasID || e.id != seq {
			s.t.Fatalf("event id %d (has %v), want %d", e.id, e.hasID, seq)
		}
		if e.event != "worker.event" {
			s.t.Fatalf("event %d: type %q", seq, e.event)
		}
		if lines != nil && e.data != string(lines[seq-1]) {
			s.t.Fatalf("event %d: data %.80s…, want the log's line", seq, e.data)
		}
	}
}

func TestServeRequest(t *testing.T) {
	a := newServeTestWorker(t, "a", 100)
	_, ts := newServeTest(t, nil, nil, a)
	r := servePost(t, ts, "a", "", serveReq("r1", "thread/list", ""))
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	p := gjson.ParseBytes(r.body)
	if p.Get("event_type").Str != "worker.response" || p.Get("seq").Int() != 1 || p.Get("worker_id").Str != "a" ||
		p.Get("payload.request_id").Str != "r1" || p.Get("payload.method").Str != "thread/list" || !p.Get("payload.ok").Bool() ||
		p.Get("payload.response.method").Str != "thread/list" {
		t.Errorf("receipt %s", r.body)
	}
	// The receipt is the log's event 1.
	lines, _, _ := a.log.After(0, 0, nil)
	if len(lines) != 1 || !bytes.Equal(lines[0], r.body) {
		t.Errorf("log %q, want the receipt", lines)
	}
}

func TestServeStatusAndList(t *testing.T) {
	a := newServeTestWorker(t, "a", 100)
	b := newServeTestWorker(t, "b", 100)
	done := make(chan struct{})
	close(done)
	b.done = done // b's session has ended
	a.appendEvents(3, 0)
	_, ts := newServeTest(t, nil, nil, a, b)

	r := serveDo(t, ts, "GET", "/api/runtime/codex/workers/a", "", nil)
	want := `{"worker_id":"a","latest_seq":3,"oldest_seq":1,"status":{"state":"idle","thread_id":null}}`
	if r.status != http.StatusOK || string(r.body) != want {
		t.Errorf("status %d %s, want %s", r.status, r.body, want)
	}
	r = serveDo(t, ts, "GET", "/api/runtime/codex/workers", "", nil)
	want = `{"workers":[{"worker_id":"a","latest_seq":3,"oldest_seq":1,"status":{"state":"idle","thread_id":null}},` +
		`{"worker_id":"b","latest_seq":0,"oldest_seq":1,"status":{"state":"stopped"}}]}`
	if r.status != http.StatusOK || string(r.body) != want {
		t.Errorf("list %d %s, want %s", r.status, r.body, want)
	}
	// A stopped worker takes no requests.
	wantProblem(t, servePost(t, ts, "b", "", serveReq("r1", "thread/list", "")), http.StatusServiceUnavailable, lane004.CodeWorkerUnavailable)
}

func writeTokenFile(t *testing.T, mode os.FileMode, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestServeAuth(t *testing.T) {
	path := writeTokenFile(t, 0o600, "# tokens\n\nall-secret\na-secret a\nab-secret a\nab-secret b\n")
	tokens, err := loadTokens(path, map[string]bool{"a": true, "b": true})
	if err != nil {
		t.Fatal(err)
	}
	a := newServeTestWorker(t, "a", 100)
	b := newServeTestWorker(t, "b", 100)
	_, ts := newServeTest(t, tokens, nil, a, b)
	list := serveReq("r1", "thread/list", "")

	r := servePost(t, ts, "a", "", list)
	wantProblem(t, r, http.StatusUnauthorized, lane004.CodeUnauthorized)
	if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("WWW-Authenticate %q", r.header.Get("WWW-Authenticate"))
	}
	for _, tok := range []string{"wrong", "all-secre", "all-secretx", "a-secret a"} {
		wantProblem(t, servePost(t, ts, "a", tok, list), http.StatusUnauthorized, lane004.CodeUnauthorized)
	}
	// Basic, not Bearer.
	req, _ := http.NewRequest("GET", ts.URL+"/api/runtime/codex/workers/a", nil)
	req.Header.Set("Authorization", "Basic all-secret")
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("Basic: status %d", resp.StatusCode)
	}
	// A token for another worker: forbidden, whether the worker exists or not.
	wantProblem(t, servePost(t, ts, "b", "a-secret", list), http.StatusForbidden, lane004.CodeForbidden)
	wantProblem(t, serveDo(t, ts, "GET", "/api/runtime/codex/workers/b/stream", "a-secret", nil), http.StatusForbidden, lane004.CodeForbidden)
	wantProblem(t, serveDo(t, ts, "GET", "/api/runtime/codex/workers/zz", "a-secret", nil), http.StatusForbidden, lane004.CodeForbidden)
	wantProblem(t, serveDo(t, ts, "GET", "/api/runtime/codex/workers/zz", "all-secret", nil), http.StatusNotFound, lane004.CodeWorkerUnavailable)

	for _, c := range []struct{ worker, token string }{{"a", "a-secret"}, {"a", "all-secret"}, {"b", "all-secret"}, {"a", "ab-secret"}, {"b", "ab-secret"}} {
		r := servePost(t, ts, c.worker, c.token, serveReq("r-"+c.token, "thread/list", ""))
		if r.status != http.StatusOK {
			t.Errorf("%s with %s: status %d: %s", c.worker, c.token, r.status, r.body)
		}
	}
	// The list shows the workers the token may drive.
	r = serveDo(t, ts, "GET", "/api/runtime/codex/workers", "a-secret", nil)
	if ids := gjson.GetBytes(r.body, "workers.#.worker_id").String(); r.status != http.StatusOK || ids != `["a"]` {
		t.Errorf("list with a-secret: %d %s", r.status, ids)
	}
	r = serveDo(t, ts, "GET", "/api/runtime/codex/workers", "all-secret", nil)
	if ids := gjson.GetBytes(r.body, "workers.#.worker_id").String(); ids != `["a","b"]` {
		t.Errorf("list with all-secret: %s", ids)
	}
	wantProblem(t, serveDo(t, ts, "GET", "/api/runtime/codex/workers", "", nil), http.StatusUnauthorized, lane004.CodeUnauthorized)
	// Only the hashes are kept, compared in constant time (serveAPI.authenticate).
	for _, tok := range tokens.list {
		if bytes.Contains(tok.sum[:], []byte("secret")) {
			t.Error("a token kept in clear")
		}
	}
}

func TestServeTokenFile(t *testing.T) {
	ids := map[string]bool{"a": true}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o644, 0o660} {
		if _, err := loadTokens(writeTokenFile(t, mode, "tok\n"), ids); err == nil || !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("mode %#o: err %v, want a refusal", mode, err)
		}
	}
	if _, err := loadTokens(writeTokenFile(t, 0o400, "tok\n"), ids); err != nil {
		t.Errorf("mode 0400: %v", err)
	}
	for _, text := range []string{"", "# only a comment\n", "tok b\n", "tok a extra\n"} {
		if _, err := loadTokens(writeTokenFile(t, 0o600, text), ids); err == nil {
			t.Errorf("%q: no error", text)
		}
	}
}

func TestServeConfig(t *testing.T) {
	dir := t.TempDir()
	getenv := func(string) string { return "" }
	tokens := writeTokenFile(t, 0o600, "tok\n")
	open := writeTokenFile(t, 0o644, "tok\n")
	for _, c := range []struct {
		args []string
		bad  string // what the error names; "" for none
	}{
		{[]string{"--worker", "a=" + dir}, ""},
		{[]string{"--worker", "a=" + dir, "--listen", "localhost:0"}, ""},
		{[]string{"--worker", "a=" + dir, "--listen", "[::1]:0"}, ""},
		{[]string{"--worker", "a=" + dir, "--listen", "0.0.0.0:8787"}, "not a loopback"},
		{[]string{"--worker", "a=" + dir, "--listen", ":8787"}, "not a loopback"},
		{[]string{"--worker", "a=" + dir, "--listen", "192.0.2.1:8787"}, "not a loopback"},
		{[]string{"--worker", "a=" + dir, "--listen", "0.0.0.0:8787", "--token-file", tokens}, "in clear"},
		{[]string{"--worker", "a=" + dir, "--listen", "0.0.0.0:8787", "--token-file", tokens, "--insecure-http"}, ""},
		{[]string{"--worker", "a=" + dir, "--listen", "0.0.0.0:8787", "--token-file", open}, "chmod 600"},
		{[]string{"--worker", "a=" + dir, "--token-file", open}, "chmod 600"},
		{[]string{"--web=false"}, "no workers"},
		{[]string{"--worker", "a/b=" + dir}, "worker id"},
		{[]string{"--worker", strings.Repeat("x", 65) + "=" + dir}, "worker id"},
		{[]string{"--worker", "a=" + dir, "--worker", "a=" + dir}, "twice"},
		{[]string{"--worker", "a=" + filepath.Join(dir, "missing")}, "missing"},
		{[]string{"--worker", "a"}, "ID=DIR"},
		{[]string{"--worker", "a=" + dir, "--max-body", "0"}, "--max-body"},
	} {
		_, err := parseServe(c.args, getenv, io.Discard)
		switch {
		case c.bad == "" && err != nil:
			t.Errorf("%q: %v", c.args, err)
		case c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)):
			t.Errorf("%q: err %v, want one naming %q", c.args, err, c.bad)
		}
	}
	// --workers FILE, with each worker's own model.
	file := filepath.Join(dir, "workers.json")
	os.Mkdir(filepath.Join(dir, "sub"), 0o700)
	os.WriteFile(file, []byte(`[{"id":"x","dir":"sub","model":"sonnet","permission_mode":"acceptEdits"},{"id":"y","dir":"`+dir+`"}]`), 0o600)
	cfg, err := parseServe([]string{"--workers", file, "--model", "opus"}, getenv, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.workers) != 2 || cfg.workers[0].Dir != filepath.Join(dir, "sub") || cfg.workers[0].Model != "sonnet" ||
		cfg.workers[0].PermissionMode != "acceptEdits" || cfg.workers[1].Model != "" || cfg.Model != "opus" {
		t.Errorf("workers %+v, model %q", cfg.workers, cfg.Model)
	}
	os.WriteFile(file, []byte(`[{"id":"x","dir":"sub","modle":"sonnet"}]`), 0o600)
	if _, err := parseServe([]string{"--workers", file}, getenv, io.Discard); err == nil {
		t.Error("an unknown member of --workers: no error")
	}
}

func TestServeBodyLimit(t *testing.T) {
	a := newServeTestWorker(t, "a", 100)
	_, ts := newServeTest(t, nil, func(s *serveAPI) { s.maxBody = 64 }, a)
	big := serveReq("r1", "thread/list", `{"cursor":"`+strings.Repeat("c", 100)+`"}`)
	wantProblem(t, servePost(t, ts, "a", "", big), http.StatusRequestEntityTooLarge, lane004.CodeInvalidRequest)
	// No Content-Length (chunked): cut off at the limit.
	r := serveDo(t, ts, "POST", "/api/runtime/codex/workers/a/requests", "", io.MultiReader(strings.NewReader(big)))
	wantProblem(t, r, http.StatusRequestEntityTooLarge, lane004.CodeInvalidRequest)
	if a.fake.callsOf("r1") != 0 || a.log.Latest() != 0 {
		t.Error("an oversize request ran")
	}
	// At the limit it goes.
	ok := serveReq("r2", "thread/list", "")
	if len(ok) > 64 {
		t.Fatal("test body too long")
	}
	if r := servePost(t, ts, "a", "", ok); r.status != http.StatusOK {
		t.Errorf("status %d: %s", r.status, r.body)
	}
}

func TestServeRefusals(t *testing.T) {
	a := newServeTestWorker(t, "a", 100)
	_, ts := newServeTest(t, nil, nil, a)

	// Malformed JSON: the lane's refusal, with no request id and no seq.
	r := servePost(t, ts, "a", "", `{"request":`)
	wantProblem(t, r, http.StatusBadRequest, lane004.CodeInvalidRequest)
	if p := gjson.GetBytes(r.body, "payload"); p.Get("request_id").Type != gjson.Null || !strings.Contains(p.Get("message").Str, "malformed JSON") {
		t.Errorf("refusal %s", r.body)
	}
	wantProblem(t, servePost(t, ts, "a", "", ``), http.StatusBadRequest, lane004.CodeInvalidRequest)
	// A worker event posted back: no request.
	wantProblem(t, servePost(t, ts, "a", "", `{"event_type":"worker.event","seq":1}`), http.StatusBadRequest, lane004.CodeInvalidRequest)

	// A method off the allowlist: an error receipt, logged (seq 1).
	r = servePost(t, ts, "a", "", serveReq("r1", "fs/delete", ""))
	if r.status != http.StatusBadRequest || gjson.GetBytes(r.body, "event_type").Str != "worker.error" ||
		gjson.GetBytes(r.body, "payload.code").Str != lane004.CodeUnsupportedMethod || gjson.GetBytes(r.body, "seq").Int() != 1 ||
		gjson.GetBytes(r.body, "payload.request_id").Str != "r1" {
		t.Errorf("unsupported method: %d %s", r.status, r.body)
	}
	// A param the method needs, malformed: invalid_request with the id.
	r = servePost(t, ts, "a", "", serveReq("r2", "turn/start", `{"thread_id":"nope","input":[]}`))
	if r.status != http.StatusBadRequest || gjson.GetBytes(r.body, "payload.code").Str != lane004.CodeInvalidRequest ||
		gjson.GetBytes(r.body, "payload.request_id").Str != "r2" {
		t.Errorf("bad params: %d %s", r.status, r.body)
	}
	// Replay over HTTP is the lane's refusal: the stream takes a cursor.
	r = servePost(t, ts, "a", "", serveReq("r3", "ccbridge/events/replay", `{"after":0}`))
	if r.status != http.StatusBadRequest || !strings.Contains(gjson.GetBytes(r.body, "payload.message").Str, "stream?after") {
		t.Errorf("replay: %d %s", r.status, r.body)
	}

	// Unknown worker: 404, a seq-less worker.error.
	r = servePost(t, ts, "zz", "", serveReq("r1", "thread/list", ""))
	wantProblem(t, r, http.StatusNotFound, lane004.CodeWorkerUnavailable)
	if gjson.GetBytes(r.body, "worker_id").Str != "zz" {
		t.Errorf("404 %s", r.body)
	}
	wantProblem(t, serveDo(t, ts, "GET", "/api/runtime/codex/workers/zz/stream", "", nil), http.StatusNotFound, lane004.CodeWorkerUnavailable)

	// Wrong method: 405; any other path: 404.
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/api/runtime/codex/workers/a/requests", http.StatusMethodNotAllowed},
		{"PUT", "/api/runtime/codex/workers/a/requests", http.StatusMethodNotAllowed},
		{"POST", "/api/runtime/codex/workers/a/stream", http.StatusMethodNotAllowed},
		{"DELETE", "/api/runtime/codex/workers/a", http.StatusMethodNotAllowed},
		{"POST", "/api/runtime/codex/workers", http.StatusMethodNotAllowed},
		{"GET", "/", http.StatusNotFound},
		{"GET", "/api/runtime/codex/workers/a/other", http.StatusNotFound},
		{"GET", "/api/runtime/codex/workers/a/stream/x", http.StatusNotFound},
	} {
		if r := serveDo(t, ts, c.method, c.path, "", nil); r.status != c.status {
			t.Errorf("%s %s: status %d, want %d", c.method, c.path, r.status, c.status)
		}
	}
	// A cursor that is no seq.
	wantProblem(t, serveDo(t, ts, "GET", "/api/runtime/codex/workers/a/stream?after=-1", "", nil), http.StatusBadRequest, lane004.CodeInvalidRequest)
}

func TestServeAccepted(t *testing.T) {
	a := newServeTestWorker(t, "a", 100)
	a.fake.hold = make(chan struct{})
	a.fake.entered = make(chan string, 1)
	a.appendEvents(3, 0)
	_, quick := newServeTest(t, nil, func(s *serveAPI) { s.requestWait = 20 * time.Millisecond }, a)
	_, patient := newServeTest(t, nil, nil, a)

	start := serveReq("slow", "turn/start", `{"thread_id":"0b7e5a2c-1d7e-4c1a-9a57-3f0d2b7d9c11","input":[{"type":"text","text":"hi"}]}`)
	r := servePost(t, quick, "a", "", start)
	if r.status != http.StatusAccepted || string(r.body) != `{"request_id":"slow","accepted":true,"seq":3}` {
		t.Fatalf("status %d %s, want 202", r.status, r.body)
	}
	if id := <-a.fake.entered; id != "slow" {
		t.Fatalf("Do for %q", id)
	}
	st := openStream(t, patient, "a", "?after=3", "")
	close(a.fake.hold)
	e := st.next()
	if !e.hasID || e.id != 4 || e.event != "worker.response" || gjson.Get(e.data, "payload.request_id").Str != "slow" ||
		gjson.Get(e.data, "seq").Int() != 4 {
		t.Fatalf("after the 202: %+v", e)
	}
	// A retry gets the receipt, nothing run twice.
	r = servePost(t, patient, "a", "", start)
	if r.status != http.StatusOK || string(r.body) != e.data {
		t.Errorf("retry: %d %s, want %s", r.status, r.body, e.data)
	}
	if n := a.fake.callsOf("slow"); n != 1 {
		t.Errorf("Do ran %d times", n)
	}
}

func TestServeDuplicates(t *testing.T) {
	a := newServeTestWorker(t, "a", 1000)
	b := newServeTestWorker(t, "b", 1000)
	// b holds its first turn/start in Do until the others are on their way.
	b.fake.hold = make(chan struct{})
	b.fake.entered = make(chan string, 1)
	_, ts := newServeTest(t, nil, nil, a, b)
	list := serveReq("dup", "thread/list", "")
	first := servePost(t, ts, "a", "", list)
	if first.status != http.StatusOK {
		t.Fatalf("status %d: %s", first.status, first.body)
	}
	for i := range 200 {
		if r := servePost(t, ts, "a", "", list); r.status != http.StatusOK || !bytes.Equal(r.body, first.body) {
			t.Fatalf("retry %d: %d %s, want %s", i, r.status, r.body, first.body)
		}
	}
	if n := a.fake.callsOf("dup"); n != 1 {
		t.Errorf("Do ran %d times for 201 posts", n)
	}

	// 20 at once.
	start := serveReq("dup2", "turn/start", `{"thread_id":"0b7e5a2c-1d7e-4c1a-9a57-3f0d2b7d9c11","input":[{"type":"text","text":"hi"}]}`)
	bodies := make([][]byte, 20)
	statuses := make([]int, 20)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(serveCtx(t), "POST", ts.URL+"/api/runtime/codex/workers/b/requests", strings.NewReader(start))
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			statuses[i] = resp.StatusCode
			bodies[i], _ = io.ReadAll(resp.Body)
		})
	}
	<-b.fake.entered
	close(b.fake.hold)
	wg.Wait()
	for i := range 20 {
		if statuses[i] != http.StatusOK || !bytes.Equal(bodies[i], bodies[0]) {
			t.Errorf("post %d: %d %s, want %s", i, statuses[i], bodies[i], bodies[0])
		}
	}
	if n := b.fake.callsOf("dup2"); n != 1 {
		t.Errorf("Do ran %d times for 20 posts at once", n)
	}
}

func TestServeStreamCursor(t *testing.T) {
	a := newServeTestWorker(t, "a", 100)
	lines := a.appendEvents(5, 10)
	_, ts := newServeTest(t, nil, nil, a)

	// ?after=2: 3, 4, 5, then the live ones, each once, in order.
	st := openStream(t, ts, "a", "?after=2", "")
	st.expect(3, 5, lines)
	lines = append(lines, a.appendEvents(2, 10)...)
	st.expect(6, 7, lines)

	// Last-Event-ID wins over ?after= (an EventSource reconnecting keeps its URL).
	st2 := openStream(t, ts, "a", "?after=0", "5")
	st2.expect(6, 7, lines)

	// No cursor: live only. The cursor is taken before the headers come.
	live := openStream(t, ts, "a", "", "")
	lines = append(lines, a.appendEvents(1, 10)...)
	live.expect(8, 8, lines)
	st.expect(8, 8, lines)
	st2.expect(8, 8, lines)

	// A receipt is an event like the others, its type the event name.
	r := servePost(t, ts, "a", "", serveReq("r1", "thread/list", ""))
	e := live.next()
	if e.id != 9 || e.event != "worker.response" || e.data != string(r.body) {
		t.Errorf("receipt on the stream: %+v, want %s", e, r.body)
	}
}

func TestServeStreamStale(t *testing.T) {
	a := newServeTestWorker(t, "a", 5)
	lines := a.appendEvents(12, 0) // 8..12 kept
	_, ts := newServeTest(t, nil, nil, a)
	for _, c := range []struct{ query, lastID string }{{"?after=2", ""}, {"", "2"}, {"?after=99", ""}} {
		st := openStream(t, ts, "a", c.query, c.lastID)
		e := st.next()
		p := gjson.Get(e.data, "payload")
		if e.hasID || e.event != "worker.cursor_stale" || gjson.Get(e.data, "seq").Exists() ||
			p.Get("resume_after").Int() != 7 || p.Get("latest_seq").Int() != 12 {
			t.Fatalf("%v: first %+v, want worker.cursor_stale", c, e)
		}
		if c.query == "?after=99" && p.Get("after").Int() != 99 || c.query != "?after=99" && p.Get("after").Int() != 2 {
			t.Errorf("%v: after %d", c, p.Get("after").Int())
		}
		st.expect(8, 12, lines)
	}
}

func TestServeStreamReconnect(t *testing.T) {
	a := newServeTestWorker(t, "a", 100)
	lines := a.appendEvents(10, 10)
	_, ts := newServeTest(t, nil, nil, a)
	st := openStream(t, ts, "a", "?after=0", "")
	st.expect(1, 4, lines)
	st.resp.Body.Close() // gone mid-stream
	lines = append(lines, a.appendEvents(5, 10)...)
	again := openStream(t, ts, "a", "?after=0", "4")
	again.expect(5, 15, lines)
	lines = append(lines, a.appendEvents(1, 10)...)
	again.expect(16, 16, lines)
}

func TestServeStreamKeepAlive(t *testing.T) {
	a := newServeTestWorker(t, "a", 100)
	_, ts := newServeTest(t, nil, func(s *serveAPI) { s.keepAlive = 10 * time.Millisecond }, a)
	st := openStream(t, ts, "a", "", "")
	e, err := readSSE(st.r)
	if err != nil || e.comment != "keep-alive" || e.hasID {
		t.Fatalf("%+v %v, want a keep-alive comment", e, err)
	}
	lines := a.appendEvents(1, 0)
	st.expect(1, 1, lines)
}

func TestServeStreamShutdown(t *testing.T) {
	a := newServeTestWorker(t, "a", 100)
	s, ts := newServeTest(t, nil, nil, a)
	st := openStream(t, ts, "a", "", "")
	s.shutdown()
	if _, err := readSSE(st.r); !errors.Is(err, io.EOF) {
		t.Errorf("after shutdown: %v, want the stream's end", err)
	}
}

// TestServeStreamSlowReader: a reader that reads nothing has its stream
// ended at the write deadline, the worker never waits for it, and from its
// last id it gets the rest, each event once.
func TestServeStreamSlowReader(t *testing.T) {
	// 24 MB: more than the sockets hold for a reader that reads nothing
	// (its receive buffer grows only as it reads).
	const n, pad = 600, 40 << 10
	a := newServeTestWorker(t, "a", n)
	lines := a.appendEvents(n/2, pad)
	s := newServeAPI([]*serveWorker{a.serveWorker}, nil, nil)
	s.writeTimeout = 100 * time.Millisecond
	ts := httptest.NewUnstartedServer(s.handler())
	closed := make(chan struct{}, 1)
	var stalled net.Conn
	ts.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateClosed && c.RemoteAddr().String() == stalled.LocalAddr().String() {
			closed <- struct{}{}
		}
	}
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stalled = conn
	ts.Start()
	t.Cleanup(func() {
		s.shutdown()
		ts.Close()
	})
	fmt.Fprintf(conn, "GET /api/runtime/codex/workers/a/stream?after=0 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	// The worker goes on while the reader stalls.
	lines = append(lines, a.appendEvents(n-n/2, pad)...)
	select {
	case <-closed:
	case <-serveCtx(t).Done():
		t.Fatal("the stream of a reader that reads nothing was not ended")
	}

	// What reached the stalled reader: events 1..last, in order; the one
	// cut off mid-way does not count.
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	var last uint64
	readAll := func(body io.Reader) {
		r := bufio.NewReader(body)
		for last < n {
			e, err := readSSE(r)
			if err != nil {
				return
			}
			if !e.hasID || e.id != last+1 || e.data != string(lines[e.id-1]) {
				t.Fatalf("event %d (has id %v) after %d", e.id, e.hasID, last)
			}
			last = e.id
		}
	}
	readAll(resp.Body)
	if last >= n {
		t.Fatalf("all %d events reached a reader that read nothing", n)
	}
	t.Logf("the stalled reader got %d of %d events before its stream ended", last, n)
	// The rest, from its last id (resuming again if this reader, under
	// the race detector, falls behind the short deadline too).
	for resumes := 0; last < n; resumes++ {
		if resumes == 100 {
			t.Fatalf("no progress: at %d of %d", last, n)
		}
		req, _ := http.NewRequestWithContext(serveCtx(t), "GET", ts.URL+"/api/runtime/codex/workers/a/stream", nil)
		req.Header.Set("Last-Event-ID", strconv.FormatUint(last, 10))
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		readAll(resp.Body)
		resp.Body.Close()
	}
}
