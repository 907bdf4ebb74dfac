package serve

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
	"weak"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/adapter/control"
	"github.com/ccbridge/ccbridge/internal/adaptertest"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/serve/webui"
	"github.com/ccbridge/ccbridge/session"
	"github.com/ccbridge/ccbridge/session/clifiles"
)

// webTest is a serve API with web sessions on the fake CLI "session"
// (prompts saved to the session files, under home).
type webTest struct {
	api  *serveAPI
	ts   *httptest.Server
	home string
	dir  string // the one --dir
	log  string // the fake CLI's log: argv and stdin
}

func newWebTest(t *testing.T, tokens *serveTokens, configure func(*webConfig)) *webTest {
	t.Helper()
	wt := &webTest{home: t.TempDir(), log: filepath.Join(t.TempDir(), "fake.log")}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	wt.dir = dir
	quiet := slog.New(slog.DiscardHandler)
	cfg := webConfig{
		dirs: []string{dir}, retain: 1000, max: 4,
		base: adapter.Settings{Logger: quiet},
		child: func(d string) session.Config {
			c := adaptertest.Config(t, "session", nil, "HOME="+wt.home, "FAKE_SAVE=1", "FAKE_LOG="+wt.log)
			c.Dir = d
			return c
		},
	}
	if configure != nil {
		configure(&cfg)
	}
	wt.api = newServeAPI(nil, tokens, quiet)
	wt.api.web = newWebHost(cfg, wt.api, quiet)
	wt.ts = httptest.NewServer(wt.api.handler())
	t.Cleanup(func() {
		wt.api.shutdown()
		wt.api.web.shutdown()
		wt.ts.Close()
	})
	return wt
}

// do sends a request with the page's headers (same Origin), and more.
func (wt *webTest) do(t *testing.T, method, path, body string, hdr ...string) serveResp {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(serveCtx(t), method, wt.ts.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if method != "GET" {
		req.Header.Set("Origin", wt.ts.URL)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return serveRoundTrip(t, wt.ts, req)
}

// wantWebError checks a web error body.
func wantWebError(t *testing.T, r serveResp, status int, code string) {
	t.Helper()
	if r.status != status || gjson.GetBytes(r.body, "error.code").Str != code {
		t.Fatalf("status %d %s, want %d with code %q", r.status, r.body, status, code)
	}
}

// start opens a session: its id.
func (wt *webTest) start(t *testing.T, body string) string {
	t.Helper()
	r := wt.do(t, "POST", "/api/web/sessions", body)
	if r.status != http.StatusCreated {
		t.Fatalf("start %s: %d %s", body, r.status, r.body)
	}
	return gjson.GetBytes(r.body, "id").Str
}

// post sends one ipc message to session id: 202.
func (wt *webTest) post(t *testing.T, id, msg string) {
	t.Helper()
	if r := wt.do(t, "POST", "/api/web/sessions/"+id+"/messages", msg); r.status != http.StatusAccepted {
		t.Fatalf("post %s: %d %s", msg, r.status, r.body)
	}
}

func (wt *webTest) stream(t *testing.T, id, query string, hdr ...string) *sseStream {
	t.Helper()
	req, err := http.NewRequestWithContext(serveCtx(t), "GET", wt.ts.URL+"/api/web/sessions/"+id+"/events"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := wt.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("events: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return &sseStream{t: t, resp: resp, r: bufio.NewReader(resp.Body)}
}

// until reads events up to the first of type typ and returns them all.
func (s *sseStream) until(typ string) []sseEvent {
	s.t.Helper()
	var got []sseEvent
	for {
		e := s.next()
		got = append(got, e)
		if gjson.Get(e.data, "type").Str == typ {
			return got
		}
	}
}

func types(es []sseEvent) string {
	var b []string
	for _, e := range es {
		b = append(b, gjson.Get(e.data, "type").Str)
	}
	return strings.Join(b, " ")
}

// TestWebSession: a session's lines come numbered from 1 with no gap, the
// prompt echoed before its turn; a reconnection with Last-Event-ID or
// ?after= gets exactly what follows; DELETE ends the session, its stream
// ends after session_ended, and a message to it is 409.
func TestWebSession(t *testing.T) {
	wt := newWebTest(t, nil, nil)
	id := wt.start(t, `{"mode":"new"}`)
	s := wt.stream(t, id, "")
	wt.post(t, id, `{"type":"user_message","text":"first"}`)
	got := s.until("turn_complete")
	if tp := types(got); !strings.HasPrefix(tp, "session_init user_message ") || !strings.HasSuffix(tp, " cost_update turn_complete") {
		t.Fatalf("lines: %s", tp)
	}
	for i, e := range got {
		if !e.hasID || e.id != uint64(i+1) {
			t.Fatalf("line %d has id %d (%v)", i, e.id, e.hasID)
		}
		if gjson.Get(e.data, "ipc_version").Int() != 2 {
			t.Errorf("line %d: %s", e.id, e.data)
		}
	}
	if echo := got[1].data; !gjson.Get(echo, "echo").Bool() || gjson.Get(echo, "text").Str != "first" {
		t.Errorf("echo %s", echo)
	}
	last := got[len(got)-1].id

	// A second turn; two reconnections pick up after it.
	wt.post(t, id, `{"type":"user_message","text":"second"}`)
	second := s.until("turn_complete")
	for _, q := range []struct{ query, hdr string }{{"", strconv.FormatUint(last, 10)}, {"?after=" + strconv.FormatUint(last, 10), ""}} {
		var r *sseStream
		if q.hdr != "" {
			r = wt.stream(t, id, "", "Last-Event-ID", q.hdr)
		} else {
			r = wt.stream(t, id, q.query)
		}
		again := r.until("turn_complete")
		if len(again) != len(second) {
			t.Fatalf("resumed after %d: %s, want %s", last, types(again), types(second))
		}
		for i := range again {
			if again[i].id != second[i].id || again[i].data != second[i].data {
				t.Fatalf("resumed line %d: %d %s, want %d %s", i, again[i].id, again[i].data, second[i].id, second[i].data)
			}
		}
	}
	// The whole stream again, from the start.
	all := wt.stream(t, id, "").until("turn_complete")
	if all[0].id != 1 || gjson.Get(all[1].data, "text").Str != "first" {
		t.Fatalf("from the start: %s", types(all))
	}

	if r := wt.do(t, "DELETE", "/api/web/sessions/"+id, ""); r.status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	end := s.until("session_ended")
	if code := gjson.Get(end[len(end)-1].data, "exit_code"); code.Int() != 0 || !code.Exists() {
		t.Errorf("session_ended %s", end[len(end)-1].data)
	}
	if _, err := readSSE(s.r); err != io.EOF {
		t.Errorf("after session_ended: %v, want the stream's end", err)
	}
	wantWebError(t, wt.do(t, "POST", "/api/web/sessions/"+id+"/messages", `{"type":"interrupt"}`), http.StatusConflict, "session_ended")
	// A question (the page asks some on its own) is answered that the
	// session has ended, not refused.
	if r := wt.do(t, "POST", "/api/web/sessions/"+id+"/messages", `{"type":"query","id":"q1","query":"context_usage"}`); r.status != http.StatusOK || !gjson.GetBytes(r.body, "ended").Bool() {
		t.Errorf("a query after the end: %d %s, want 200 {\"ended\":true}", r.status, r.body)
	}
	list := wt.do(t, "GET", "/api/web/sessions", "")
	if !gjson.GetBytes(list.body, `open.#(id=="`+id+`").ended`).Bool() || gjson.GetBytes(list.body, `open.#(id=="`+id+`").title`).Str != "second" {
		t.Errorf("list %s", list.body)
	}
}

// TestWebMessages: what the transport refuses itself, and what it leaves
// to the session (which answers on the stream).
func TestWebMessages(t *testing.T) {
	wt := newWebTest(t, nil, func(c *webConfig) { c.base.Options.Extra = nil })
	wt.api.maxBody = 1 << 10
	id := wt.start(t, `{}`)
	path := "/api/web/sessions/" + id + "/messages"
	wantWebError(t, wt.do(t, "POST", path, `not json`), http.StatusBadRequest, "invalid_json")
	wantWebError(t, wt.do(t, "POST", path, `[1]`), http.StatusBadRequest, "invalid_json")
	wantWebError(t, wt.do(t, "POST", path, `{"type":"user_message"} {}`), http.StatusBadRequest, "invalid_json")
	wantWebError(t, wt.do(t, "POST", path, `{"type":"user_message","text":"x","type":"control_request_forward"}`), http.StatusBadRequest, "duplicate_key")
	wantWebError(t, wt.do(t, "POST", path, `{"type":"tool_approval","request_id":"R","decision":"allow","updatedInput":{"a":1,"a":2}}`), http.StatusBadRequest, "duplicate_key")
	wantWebError(t, wt.do(t, "POST", path, `{"type":"user_message","text":"`+strings.Repeat("x", 2<<10)+`"}`), http.StatusRequestEntityTooLarge, "too_large")
	wantWebError(t, wt.do(t, "POST", path, `{"type":"permission_mode","mode":"bypassPermissions"}`), http.StatusBadRequest, "invalid_value")
	wantWebError(t, wt.do(t, "POST", "/api/web/sessions/nope/messages", `{}`), http.StatusNotFound, "not_found")

	s := wt.stream(t, id, "")
	// A message the session refuses is not echoed: its error comes on
	// the stream. A pretty-printed body is sent as one line.
	wt.post(t, id, `{"type":"user_message","attachments":[{"kind":"image","media_type":"image/png","content":"bm90IGEgcG5n"}]}`)
	wt.post(t, id, `{"type":"tool_approval","request_id":"R9","decision":"allow"}`)
	wt.post(t, id, "{\n  \"type\": \"user_message\",\n  \"text\": \"two\\nlines\"\n}")
	got := s.until("turn_complete")
	if tp := types(got); tp != "session_init error error user_message system_metadata cost_update turn_complete" {
		t.Fatalf("lines: %s", tp)
	}
	if c := gjson.Get(got[1].data, "code").Str; c != "attachment_refused" {
		t.Errorf("first error %s", got[1].data)
	}
	if c := gjson.Get(got[2].data, "code").Str; c != "unknown_request" {
		t.Errorf("second error %s", got[2].data)
	}
	if gjson.Get(got[3].data, "text").Str != "two\nlines" {
		t.Errorf("echo %s", got[3].data)
	}
	b, _ := os.ReadFile(wt.log)
	if !strings.Contains(string(b), `"text":"two\nlines"`) {
		t.Errorf("the CLI did not get the prompt:\n%s", b)
	}
}

// TestWebSessionModes: resume, fork and continue of a session file, each
// refused when there is no such conversation; folders outside --dir,
// also through a symbolic link, refused; the session list.
func TestWebSessionModes(t *testing.T) {
	wt := newWebTest(t, nil, nil)
	sub := filepath.Join(wt.dir, "sub")
	os.Mkdir(sub, 0o755)
	outside := t.TempDir()
	os.Symlink(outside, filepath.Join(wt.dir, "escape"))

	wantWebError(t, wt.do(t, "POST", "/api/web/sessions", `{"mode":"new","cwd":`+strconv.Quote(outside)+`}`), http.StatusForbidden, "dir_not_allowed")
	wantWebError(t, wt.do(t, "POST", "/api/web/sessions", `{"mode":"new","cwd":`+strconv.Quote(filepath.Join(wt.dir, "escape"))+`}`), http.StatusForbidden, "dir_not_allowed")
	wantWebError(t, wt.do(t, "POST", "/api/web/sessions", `{"mode":"new","cwd":`+strconv.Quote(wt.dir+"/../"+filepath.Base(outside))+`}`), http.StatusForbidden, "dir_not_allowed")
	wantWebError(t, wt.do(t, "POST", "/api/web/sessions", `{"mode":"new","cwd":"relative"}`), http.StatusForbidden, "dir_not_allowed")
	wantWebError(t, wt.do(t, "POST", "/api/web/sessions", `{"mode":"resume","session_id":"00000000-0000-4000-8000-000000000000"}`), http.StatusNotFound, "session_not_found")
	wantWebError(t, wt.do(t, "POST", "/api/web/sessions", `{"mode":"continue"}`), http.StatusNotFound, "session_not_found")
	wantWebError(t, wt.do(t, "POST", "/api/web/sessions", `{"mode":"resume","session_id":"../x"}`), http.StatusBadRequest, "invalid_request")
	wantWebError(t, wt.do(t, "POST", "/api/web/sessions", `{"mode":"later"}`), http.StatusBadRequest, "invalid_request")
	wantWebError(t, wt.do(t, "POST", "/api/web/sessions", `{"mode":"new","extra":1}`), http.StatusBadRequest, "invalid_request")
	wantWebError(t, wt.do(t, "POST", "/api/web/sessions", `{"mode":"new","permission_mode":"bypassPermissions"}`), http.StatusBadRequest, "invalid_value")

	// A session in a folder below --dir, with one prompt saved.
	id := wt.start(t, `{"mode":"new","cwd":`+strconv.Quote(sub)+`,"model":"m1"}`)
	s := wt.stream(t, id, "")
	sid := gjson.Get(s.next().data, "session_id").Str
	wt.post(t, id, `{"type":"user_message","text":"remember me"}`)
	s.until("turn_complete")
	list := wt.do(t, "GET", "/api/web/sessions", "")
	if f := gjson.GetBytes(list.body, "files.0"); f.Get("session_id").Str != sid || f.Get("cwd").Str != sub || f.Get("title").Str != "remember me" {
		t.Fatalf("files: %s", list.body)
	}

	for _, c := range []struct{ body, want string }{
		{`{"mode":"resume","cwd":` + strconv.Quote(sub) + `,"session_id":"` + sid + `"}`, "--resume=" + sid + "\n"},
		{`{"mode":"fork","cwd":` + strconv.Quote(sub) + `,"session_id":"` + sid + `"}`, "--resume=" + sid + " --fork-session --session-id="},
		{`{"mode":"continue","cwd":` + strconv.Quote(sub) + `}`, "--continue\n"},
	} {
		before, _ := os.ReadFile(wt.log)
		id := wt.start(t, c.body)
		wt.stream(t, id, "") // the CLI has started once the stream has a line…
		deadline := time.Now().Add(10 * time.Second)
		for {
			b, _ := os.ReadFile(wt.log)
			if strings.Contains(string(b[len(before):]), c.want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no CLI started with %q:\n%s", c.body, c.want, b[len(before):])
			}
			time.Sleep(20 * time.Millisecond)
		}
		wt.do(t, "DELETE", "/api/web/sessions/"+id, "")
	}
	if b, _ := os.ReadFile(wt.log); !strings.Contains(string(b), "--model=m1") {
		t.Errorf("the model was not passed:\n%s", b)
	}
}

// TestWebLimits: --max-web-sessions, and a stream whose start is no
// longer kept.
func TestWebLimits(t *testing.T) {
	wt := newWebTest(t, nil, func(c *webConfig) { c.max, c.retain = 1, 3 })
	id := wt.start(t, `{}`)
	wantWebError(t, wt.do(t, "POST", "/api/web/sessions", `{}`), http.StatusTooManyRequests, "too_many_sessions")
	s := wt.stream(t, id, "")
	wt.post(t, id, `{"type":"user_message","text":"a"}`)
	done := s.until("turn_complete")
	last := done[len(done)-1].id
	r := wt.stream(t, id, "")
	stale := r.next()
	if stale.hasID || gjson.Get(stale.data, "type").Str != "stream_stale" || gjson.Get(stale.data, "resume_after").Uint() != last-3 {
		t.Fatalf("first line %+v, want stream_stale resuming after %d", stale, last-3)
	}
	for seq := last - 2; seq <= last; seq++ {
		if e := r.next(); e.id != seq {
			t.Fatalf("line %d, want %d", e.id, seq)
		}
	}
	// Once it has ended, another may start; the ended one is kept (one
	// ended session, --max-web-sessions 1) until another has ended.
	wt.do(t, "DELETE", "/api/web/sessions/"+id, "")
	s.until("session_ended")
	second := wt.start(t, `{}`)
	wt.stream(t, id, "").until("session_ended")
	wt.do(t, "DELETE", "/api/web/sessions/"+second, "")
	wt.stream(t, second, "").until("session_ended")
	third := wt.start(t, `{}`)
	if r := wt.do(t, "GET", "/api/web/sessions/"+id+"/events", ""); r.status != http.StatusNotFound {
		t.Errorf("the oldest ended session is still kept: %d", r.status)
	}
	list := wt.do(t, "GET", "/api/web/sessions", "")
	if ids := gjson.GetBytes(list.body, "open.#.id").String(); ids != `["`+second+`","`+third+`"]` {
		t.Errorf("sessions kept: %s, want %s and %s", ids, second, third)
	}
}

// TestWebGuard: the Host, the Origin and the headers of every response.
func TestWebGuard(t *testing.T) {
	wt := newWebTest(t, nil, nil)
	page := wt.do(t, "GET", "/", "")
	if page.status != http.StatusOK || !strings.HasPrefix(page.header.Get("Content-Type"), "text/html") {
		t.Fatalf("/: %d %s", page.status, page.header)
	}
	for _, r := range []serveResp{page, wt.do(t, "GET", "/api/web/info", ""), wt.do(t, "GET", "/api/web/sessions/x/events", "")} {
		if r.header.Get("Content-Security-Policy") != webCSP || r.header.Get("X-Content-Type-Options") != "nosniff" || r.header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("headers %v", r.header)
		}
	}
	if !strings.Contains(webCSP, "script-src 'self';") || strings.Contains(webCSP, "unsafe") {
		t.Errorf("CSP %q", webCSP)
	}
	// A name rebound to 127.0.0.1 reaches nothing, the page included.
	wantWebError(t, wt.do(t, "GET", "/", "", "Host", "evil.example:80"), http.StatusForbidden, "forbidden_host")
	wantWebError(t, wt.do(t, "GET", "/api/web/sessions", "", "Host", "127.0.0.1.evil.example"), http.StatusForbidden, "forbidden_host")
	for _, h := range []string{"localhost:1", "[::1]:8", "127.0.0.2"} {
		if r := wt.do(t, "GET", "/api/web/info", "", "Host", h); r.status != http.StatusOK {
			t.Errorf("Host %s: %d", h, r.status)
		}
	}
	// A mutating request from another origin, or a cross-site one with no
	// Origin, is refused before anything happens.
	wantWebError(t, wt.do(t, "POST", "/api/web/sessions", `{}`, "Origin", "http://evil.example"), http.StatusForbidden, "forbidden_origin")
	wantWebError(t, wt.do(t, "POST", "/api/web/sessions", `{}`, "Origin", "null"), http.StatusForbidden, "forbidden_origin")
	req, _ := http.NewRequest("POST", wt.ts.URL+"/api/web/sessions", strings.NewReader(`{}`))
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if resp, err := wt.ts.Client().Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site without Origin: %v %v", resp, err)
	}
	req, _ = http.NewRequest("DELETE", wt.ts.URL+"/api/web/sessions/x", nil)
	req.Header.Set("Origin", "http://localhost:1")
	if resp, err := wt.ts.Client().Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("DELETE from another origin: %v %v", resp, err)
	}
	if r := wt.do(t, "GET", "/api/web/sessions", ""); gjson.GetBytes(r.body, "open.#").Int() != 0 {
		t.Errorf("a refused request started a session: %s", r.body)
	}
	// A client that is not a browser sends no Origin.
	req, _ = http.NewRequest("POST", wt.ts.URL+"/api/web/sessions", strings.NewReader(`{}`))
	if resp, err := wt.ts.Client().Do(req); err != nil || resp.StatusCode != http.StatusCreated {
		t.Errorf("no Origin: %v %v", resp, err)
	}
}

// TestWebAuth: with --token-file, a token for every worker, as a bearer
// token or the cookie; none is 401, another 403.
func TestWebAuth(t *testing.T) {
	tokens, err := loadTokens(writeTokenFile(t, 0o600, "all\nsome w1\n"), map[string]bool{"w1": true})
	if err != nil {
		t.Fatal(err)
	}
	wt := newWebTest(t, tokens, nil)
	wantWebError(t, wt.do(t, "GET", "/api/web/info", ""), http.StatusUnauthorized, "unauthorized")
	wantWebError(t, wt.do(t, "GET", "/api/web/info", "", "Authorization", "Bearer wrong"), http.StatusForbidden, "forbidden")
	wantWebError(t, wt.do(t, "GET", "/api/web/info", "", "Authorization", "Bearer some"), http.StatusForbidden, "forbidden")
	if r := wt.do(t, "GET", "/api/web/info", "", "Authorization", "Bearer all"); r.status != http.StatusOK || !gjson.GetBytes(r.body, "auth").Bool() {
		t.Errorf("bearer: %d %s", r.status, r.body)
	}
	// With a token, any Host may be used.
	if r := wt.do(t, "GET", "/", "", "Host", "box.example:8787"); r.status != http.StatusOK {
		t.Errorf("page on a token server: %d", r.status)
	}
	wantWebError(t, wt.do(t, "POST", "/api/web/auth", `{"token":"some"}`), http.StatusForbidden, "forbidden")
	r := wt.do(t, "POST", "/api/web/auth", `{"token":"all"}`)
	c := r.header.Get("Set-Cookie")
	if r.status != http.StatusNoContent || !strings.Contains(c, webCookie+"=all") || !strings.Contains(c, "HttpOnly") || !strings.Contains(c, "SameSite=Strict") {
		t.Fatalf("auth: %d %q", r.status, c)
	}
	if r := wt.do(t, "POST", "/api/web/sessions", `{}`, "Cookie", webCookie+"=all"); r.status != http.StatusCreated {
		t.Fatalf("start with the cookie: %d %s", r.status, r.body)
	} else {
		wt.stream(t, gjson.GetBytes(r.body, "id").Str, "", "Cookie", webCookie+"=all").next()
	}
	wantWebError(t, wt.do(t, "GET", "/api/web/sessions", "", "Cookie", webCookie+"=some"), http.StatusForbidden, "forbidden")
}

// TestWebConfig: serve's web flags.
func TestWebConfig(t *testing.T) {
	dir := t.TempDir()
	getenv := func(string) string { return "" }
	cfg, err := parseServe([]string{"--dir", dir, "--dir", dir}, getenv, io.Discard)
	real, _ := filepath.EvalSymlinks(dir)
	if err != nil || len(cfg.dirs) != 1 || cfg.dirs[0] != real || !cfg.web || len(cfg.workers) != 0 {
		t.Fatalf("%+v %v", cfg, err)
	}
	cfg, err = parseServe(nil, getenv, io.Discard)
	wd, _ := os.Getwd()
	wd, _ = filepath.EvalSymlinks(wd)
	if err != nil || len(cfg.dirs) != 1 || cfg.dirs[0] != wd {
		t.Fatalf("default --dir: %+v %v", cfg.dirs, err)
	}
	for _, c := range []struct {
		args []string
		bad  string
	}{
		{[]string{"--web=false"}, "no workers"},
		{[]string{"--web=false", "--worker", "a=" + dir, "--dir", dir}, "--dir"},
		{[]string{"--dir", filepath.Join(dir, "missing")}, "missing"},
		{[]string{"--web-retain", "0"}, "--web-retain"},
		{[]string{"--web-retain-bytes", "0"}, "--web-retain-bytes"},
		{[]string{"--max-web-sessions", "0"}, "--max-web-sessions"},
		{[]string{"--model", "x y"}, "--model"},
		{[]string{"--model", strings.Repeat("m", 257)}, "--model"},
		{[]string{"--worker", "a=" + dir + "", "--workers", writeWorkers(t, `[{"id":"b","dir":"`+dir+`","model":"a\nb"}]`)}, "worker b: model"},
	} {
		if _, err := parseServe(c.args, getenv, io.Discard); err == nil || !strings.Contains(err.Error(), c.bad) {
			t.Errorf("%q: err %v, want one naming %q", c.args, err, c.bad)
		}
	}
}

// TestWebHistory: a session file's conversation, as the page is shown it
// before a resumed session's live lines: the prompts as echoes, the
// answers and tools as the ipc translator gives them, all marked history.
func TestWebHistory(t *testing.T) {
	events, err := control.OpenEventLog(control.EventLogConfig{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	n, err := webHistory(serveCtx(t), filepath.Join("..", "testdata", "rpc", "session_sample.jsonl"), events)
	if err != nil || n == 0 || uint64(n) != events.Latest() {
		t.Fatalf("%d lines, latest %d: %v", n, events.Latest(), err)
	}
	lines, _, _ := events.After(0, 0, nil)
	var prompts []string
	kinds := map[string]int{}
	for _, l := range lines {
		if !gjson.ValidBytes(l) || !gjson.GetBytes(l, "history").Bool() || gjson.GetBytes(l, "ipc_version").Int() != 2 {
			t.Fatalf("line %s", l)
		}
		typ := gjson.GetBytes(l, "type").Str
		kinds[typ]++
		if typ == "user_message" {
			prompts = append(prompts, gjson.GetBytes(l, "text").Str)
		}
	}
	// The file's prompts (a slash command as typed), its tool calls with
	// their results, its thinking and answers; nothing of the turns' ends
	// (the file has no results), no session_init.
	if strings.Join(prompts, "|") != "hello|please WRITEFILE|ASKUSER now|READMISSING now|SUBAGENT now|SLOW now|/compact|APIERR400 now" {
		t.Errorf("prompts %q", prompts)
	}
	if kinds["tool_use"] != 4 || kinds["tool_result"] != 4 || kinds["thinking_text"] != 1 || kinds["assistant_text"] == 0 {
		t.Errorf("kinds %v", kinds)
	}
	for _, k := range []string{"turn_complete", "turn_cancelled", "session_init", "cost_update"} {
		if kinds[k] != 0 {
			t.Errorf("%d %s lines", kinds[k], k)
		}
	}
}

// TestWebAssets: every file of the page, gzipped for a client that takes
// it and as it is for one that does not, with its type; its ETag gives
// 304; another name is 404; a worker path's other methods stay 405.
func TestWebAssets(t *testing.T) {
	wt := newWebTest(t, nil, nil)
	ents, err := webui.Static.ReadDir("static")
	if err != nil || len(ents) == 0 {
		t.Fatal(ents, err)
	}
	for _, e := range ents {
		want, _ := webui.Static.ReadFile("static/" + e.Name())
		path := "/" + e.Name()
		if e.Name() == "index.html" {
			path = "/"
		}
		plain := wt.do(t, "GET", path, "", "Accept-Encoding", "identity")
		if plain.status != http.StatusOK || string(plain.body) != string(want) || plain.header.Get("Content-Encoding") != "" {
			t.Fatalf("%s: %d %q", path, plain.status, plain.header.Get("Content-Encoding"))
		}
		ct := plain.header.Get("Content-Type")
		switch filepath.Ext(e.Name()) {
		case ".js":
			if !strings.HasPrefix(ct, "text/javascript") {
				t.Errorf("%s: Content-Type %q", path, ct)
			}
		case ".css":
			if !strings.HasPrefix(ct, "text/css") {
				t.Errorf("%s: Content-Type %q", path, ct)
			}
		}
		req, _ := http.NewRequest("GET", wt.ts.URL+path, nil)
		req.Header.Set("Accept-Encoding", "gzip, br")
		tr := &http.Transport{DisableCompression: true}
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(zr)
			if err != nil || string(got) != string(want) {
				t.Errorf("%s gzipped: %v", path, err)
			}
		} else if len(want) > 1000 {
			t.Errorf("%s (%d bytes) not gzipped", path, len(want))
		}
		resp.Body.Close()
		if r := wt.do(t, "GET", path, "", "If-None-Match", plain.header.Get("ETag")); r.status != http.StatusNotModified {
			t.Errorf("%s with its ETag: %d", path, r.status)
		}
	}
	wantWebError(t, wt.do(t, "GET", "/nothing.js", ""), http.StatusNotFound, "not_found")
	if r := wt.do(t, "GET", "/api/runtime/codex/workers/a/requests", ""); r.status != http.StatusMethodNotAllowed {
		t.Errorf("GET of a worker's requests: %d", r.status)
	}
	for _, c := range []struct {
		ae   string
		want bool
	}{{"gzip", true}, {"deflate, gzip;q=0.5", true}, {"gzip;q=0", false}, {"br", false}, {"", false}} {
		if acceptsGzip(c.ae) != c.want {
			t.Errorf("acceptsGzip(%q) = %v", c.ae, !c.want)
		}
	}
}

// TestWebOff: with --web=false serve has no page and no /api/web; the
// guard still stands.
func TestWebOff(t *testing.T) {
	api := newServeAPI(nil, nil, slog.New(slog.DiscardHandler))
	ts := httptest.NewServer(api.handler())
	defer ts.Close()
	for _, path := range []string{"/", "/app.js", "/api/web/info", "/api/web/sessions"} {
		if r := serveDo(t, ts, "GET", path, "", nil); r.status != http.StatusNotFound {
			t.Errorf("GET %s with the web UI off: %d", path, r.status)
		}
	}
	req, _ := http.NewRequest("POST", ts.URL+"/api/web/sessions", strings.NewReader(`{}`))
	req.Header.Set("Origin", "http://evil.example")
	if r := serveRoundTrip(t, ts, req); r.status != http.StatusForbidden {
		t.Errorf("a POST from another origin: %d", r.status)
	}
}

// TestSSEData: what a stream's data field carries is UTF-8 with no control
// character; a control character within a string becomes its escape, one
// outside a space; a clean line is the same slice.
func TestSSEData(t *testing.T) {
	clean := []byte(`{"type":"assistant_text","text":"é \\r\\n \" ok"}`)
	if got := sseData(clean); &got[0] != &clean[0] {
		t.Errorf("a clean line was copied")
	}
	for _, c := range []struct{ in, want string }{
		{"{\"text\":\"a\r\rid: 999999\rdata: {}\r\rb\"}", `{"text":"a\r\rid: 999999\rdata: {}\r\rb"}`},
		{"{\"text\":\"a\nb\tc\x01\"}", `{"text":"a\nb\tc\u0001"}`},
		{"{\"a\":1,\r\n\"b\":\"x\\\"\ry\"}", `{"a":1,  "b":"x\"\ry"}`},
		{"{\"text\":\"\xff\xfe ok\"}", "{\"text\":\"\uFFFD ok\"}"},
		{"{\"text\":\"\xffx\ry\"}", "{\"text\":\"\uFFFDx\\ry\"}"},
	} {
		got := sseData([]byte(c.in))
		if string(got) != c.want {
			t.Errorf("%q: %q, want %q", c.in, got, c.want)
		}
		if !gjson.ValidBytes(got) {
			t.Errorf("%q: %q is not JSON", c.in, got)
		}
	}
}

// writeSessionFile writes a session file of id for cwd under home's
// configuration folder, its lines as given.
func writeSessionFile(t *testing.T, home, cwd, id string, lines ...string) string {
	t.Helper()
	dir := clifiles.ProjectDir(filepath.Join(home, ".claude"), cwd)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, id+".jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// uncleanEntries are a prompt and an answer of a session file whose text
// holds raw carriage returns that spell server-sent event fields, and a
// byte that is not UTF-8.
func uncleanEntries(sid string) []string {
	return []string{
		`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"hello"}]},"uuid":"u1","sessionId":"` + sid + `"}`,
		`{"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"before` + "\r\rid: 999999\rdata: {}\r\r" + `after ` + "\xff" + `"}]},"uuid":"a1","sessionId":"` + sid + `"}`,
	}
}

// TestWebHistoryUnclean: a session file's raw control characters and
// bytes that are not UTF-8 reach the history as escapes and U+FFFD: every
// line is JSON, UTF-8, with no CR or LF, and the text is the file's.
func TestWebHistoryUnclean(t *testing.T) {
	sid := "00000000-0000-4000-8000-000000000001"
	path := writeSessionFile(t, t.TempDir(), "/p", sid, uncleanEntries(sid)...)
	events, err := control.OpenEventLog(control.EventLogConfig{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := webHistory(serveCtx(t), path, events); err != nil {
		t.Fatal(err)
	}
	lines, _, _ := events.After(0, 0, nil)
	text := ""
	for _, l := range lines {
		if !gjson.ValidBytes(l) || !utf8.Valid(l) || bytes.ContainsAny(l, "\r\n") {
			t.Errorf("line %q", l)
		}
		if gjson.GetBytes(l, "type").Str == "assistant_text" {
			text = gjson.GetBytes(l, "text").Str
		}
	}
	if want := "before\r\rid: 999999\rdata: {}\r\rafter \uFFFD"; text != want {
		t.Errorf("text %q, want %q", text, want)
	}
}

// TestWebStreamUnclean: the stream of a session resumed from such a file
// carries each of its lines as one data field: ids 1, 2, … with no other,
// and the answer's text whole.
func TestWebStreamUnclean(t *testing.T) {
	wt := newWebTest(t, nil, nil)
	sid := "00000000-0000-4000-8000-000000000002"
	writeSessionFile(t, wt.home, wt.dir, sid, uncleanEntries(sid)...)
	id := wt.start(t, `{"mode":"resume","session_id":"`+sid+`"}`)
	req, err := http.NewRequestWithContext(serveCtx(t), "GET", wt.ts.URL+"/api/web/sessions/"+id+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := wt.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// Read as a browser does: CR, LF and CRLF each end a line.
	br := bufio.NewReader(resp.Body)
	var raw []byte
	for !bytes.Contains(raw, []byte(`"session_init"`)) {
		b, err := br.ReadByte()
		if err != nil {
			t.Fatalf("the stream ended: %v\n%q", err, raw)
		}
		raw = append(raw, b)
	}
	if bytes.IndexByte(raw, '\r') >= 0 || !utf8.Valid(raw) {
		t.Errorf("the stream holds a CR or bytes that are not UTF-8:\n%q", raw)
	}
	var ids []string
	text := ""
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, "id: "); ok {
			ids = append(ids, v)
		}
		if v, ok := strings.CutPrefix(l, "data: "); ok && gjson.Get(v, "type").Str == "assistant_text" {
			text = gjson.Get(v, "text").Str
		}
	}
	if strings.Join(ids, ",") != "1,2,3" {
		t.Errorf("ids %q, want 1,2,3 (two lines of history and session_init)", ids)
	}
	if !strings.HasPrefix(text, "before\r\rid: 999999") || !strings.HasSuffix(text, "after \uFFFD") {
		t.Errorf("text %q", text)
	}
}

// writeWorkers writes a --workers file.
func writeWorkers(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "workers.json")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestWebModelName: a session's model is refused by the rule of
// model_change (mapping.ValidModelName) before any CLI starts; a good one
// reaches the CLI.
func TestWebModelName(t *testing.T) {
	wt := newWebTest(t, nil, nil)
	for _, m := range []string{"x\ny z", strings.Repeat("m", 300), "a b", "é", "m;rm"} {
		r := wt.do(t, "POST", "/api/web/sessions", `{"mode":"new","model":`+strconv.Quote(m)+`}`)
		wantWebError(t, r, http.StatusBadRequest, "invalid_value")
		if msg := gjson.GetBytes(r.body, "error.message").Str; !strings.Contains(msg, mapping.ModelNameRule) {
			t.Errorf("%q: message %q", m, msg)
		}
	}
	if r := wt.do(t, "GET", "/api/web/sessions", ""); gjson.GetBytes(r.body, "open.#").Int() != 0 {
		t.Errorf("a refused model started a session: %s", r.body)
	}
	if b, _ := os.ReadFile(wt.log); len(b) != 0 {
		t.Errorf("a CLI started:\n%s", b)
	}
	id := wt.start(t, `{"mode":"new","model":"claude-sonnet-4-5@20250929"}`)
	wt.stream(t, id, "").next()
	deadline := time.Now().Add(10 * time.Second)
	for b, _ := os.ReadFile(wt.log); !strings.Contains(string(b), "--model=claude-sonnet-4-5@20250929"); b, _ = os.ReadFile(wt.log) {
		if time.Now().After(deadline) {
			t.Fatalf("the model did not reach the CLI:\n%s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWebAuthCookieAnyToken: a token with bytes a cookie value cannot hold
// as they are (';', '"', '\', ',', '%', '+', not ASCII) signs in: the
// cookie carries it encoded, and a request with that cookie, as the
// client got it, is let in; a cookie that does not decode is no token.
func TestWebAuthCookieAnyToken(t *testing.T) {
	const odd = `a;b"c\dé%2B+,x`
	tokens, err := loadTokens(writeTokenFile(t, 0o600, odd+"\nplain\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	wt := newWebTest(t, tokens, nil)
	for _, tok := range []string{odd, "plain"} {
		r := wt.do(t, "POST", "/api/web/auth", `{"token":`+strconv.Quote(tok)+`}`)
		resp := http.Response{Header: r.header}
		cs := resp.Cookies()
		if r.status != http.StatusNoContent || len(cs) != 1 || cs[0].Name != webCookie {
			t.Fatalf("auth %q: %d %v", tok, r.status, r.header)
		}
		if tok == "plain" && cs[0].Value != "plain" {
			t.Errorf("a plain token's cookie is %q", cs[0].Value)
		}
		cookie := cs[0].Name + "=" + cs[0].Value
		if r := wt.do(t, "GET", "/api/web/sessions", "", "Cookie", cookie); r.status != http.StatusOK {
			t.Errorf("%q: with its cookie %q: %d %s", tok, cookie, r.status, r.body)
		}
		if r := wt.do(t, "GET", "/api/web/info", "", "Authorization", "Bearer "+tok); r.status != http.StatusOK {
			t.Errorf("%q as a bearer token: %d %s", tok, r.status, r.body)
		}
	}
	wantWebError(t, wt.do(t, "GET", "/api/web/info", "", "Cookie", webCookie+"=%zz"), http.StatusUnauthorized, "unauthorized")
	wantWebError(t, wt.do(t, "GET", "/api/web/info", "", "Cookie", webCookie+"=a"), http.StatusForbidden, "forbidden")
}

// TestWebEndedPruned: ended sessions are kept with their streams up to
// --max-web-sessions, whenever they end: with 2, four ended ones leave
// the newest two, and the older two are forgotten (404).
func TestWebEndedPruned(t *testing.T) {
	wt := newWebTest(t, nil, func(c *webConfig) { c.max = 2 })
	var ids []string
	for range 2 {
		round := []string{wt.start(t, `{}`), wt.start(t, `{}`)}
		for _, id := range round {
			wt.do(t, "DELETE", "/api/web/sessions/"+id, "")
			wt.stream(t, id, "").until("session_ended")
		}
		ids = append(ids, round...)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		list := wt.do(t, "GET", "/api/web/sessions", "")
		got := gjson.GetBytes(list.body, "open.#.id").String()
		if got == `["`+ids[2]+`","`+ids[3]+`"]` {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sessions kept: %s, want the last two of %v", got, ids)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, id := range ids[:2] {
		if r := wt.do(t, "GET", "/api/web/sessions/"+id+"/events", ""); r.status != http.StatusNotFound {
			t.Errorf("ended session %s still kept: %d", id, r.status)
		}
	}
}

// TestWebStreamBytes: a session's stream keeps at most --web-retain-bytes
// of lines (the newest whatever its size); a replay from the start says
// where they begin (stream_stale); once the ended session is forgotten,
// nothing keeps its lines alive.
func TestWebStreamBytes(t *testing.T) {
	const budget = 1 << 20
	wt := newWebTest(t, nil, func(c *webConfig) { c.retainBytes, c.max = budget, 1 })
	id := wt.start(t, `{}`)
	s := wt.stream(t, id, "")
	for range 8 { // 600 KiB of lines each
		wt.post(t, id, `{"type":"user_message","text":"BIG"}`)
		s.until("turn_complete")
	}
	wt.api.web.mu.Lock()
	events := wt.api.web.sessions[id].events
	wt.api.web.mu.Unlock()
	lines, _, _ := events.After(0, 0, nil)
	held := 0
	var kept []weak.Pointer[byte]
	for _, l := range lines {
		held += len(l)
		kept = append(kept, weak.Make(&l[0]))
	}
	if held > budget || held < budget/2 {
		t.Errorf("the stream keeps %d bytes of lines, budget %d", held, budget)
	}
	r := wt.stream(t, id, "")
	stale := r.next()
	if gjson.Get(stale.data, "type").Str != "stream_stale" || stale.hasID {
		t.Fatalf("a replay from the start begins with %+v, want stream_stale", stale)
	}
	if e := r.next(); e.id != gjson.Get(stale.data, "resume_after").Uint()+1 || e.id != events.Oldest() {
		t.Errorf("after stream_stale %s: line %d, oldest kept %d", stale.data, e.id, events.Oldest())
	}
	lines, events = nil, nil

	// Ended, then forgotten (--max-web-sessions 1: another one ends).
	wt.do(t, "DELETE", "/api/web/sessions/"+id, "")
	s.until("session_ended")
	other := wt.start(t, `{}`)
	wt.do(t, "DELETE", "/api/web/sessions/"+other, "")
	wt.stream(t, other, "").until("session_ended")
	for deadline := time.Now().Add(10 * time.Second); wt.do(t, "GET", "/api/web/sessions/"+id+"/events", "").status != http.StatusNotFound; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("session %s is not forgotten", id)
		}
	}
	s.resp.Body.Close()
	r.resp.Body.Close()
	// The session's goroutines let go of its lines as they end: collect
	// until none is alive, for two seconds at most.
	alive := 0
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		runtime.GC()
		alive = 0
		for _, p := range kept {
			if p.Value() != nil {
				alive++
			}
		}
		if alive == 0 || time.Now().After(deadline) {
			break
		}
	}
	if alive > 0 {
		t.Errorf("%d of the %d lines of a forgotten session are still alive", alive, len(kept))
	}
}

// TestWebOut: the session's output cut into lines, each copied from the
// writes, a line cut between two writes joined; blank lines skipped; a
// last line without a newline logged at the end.
func TestWebOut(t *testing.T) {
	events, err := control.OpenEventLog(control.EventLogConfig{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	o := &webOut{s: &webSession{events: events}}
	buf := []byte("{\"a\":1}\n{\"b\":")
	o.Write(buf)
	copy(buf, "XXXXXXXXXXXXXX") // the writer reuses its buffer
	o.Write([]byte("2}\n\n{\"c\":3}\n{\"d\""))
	o.Write([]byte(":4}"))
	o.flush()
	lines, _, _ := events.After(0, 0, nil)
	var got []string
	for _, l := range lines {
		got = append(got, string(l))
	}
	if strings.Join(got, " ") != `{"a":1} {"b":2} {"c":3} {"d":4}` {
		t.Errorf("lines %q", got)
	}
}
