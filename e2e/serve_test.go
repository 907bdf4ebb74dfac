package e2e

// ccbridge serve end to end (docs/protocol/worker.md, "ccbridge serve"):
// lane-004 workers over HTTP, each a --ui control session with the real
// CLI behind it and the fake model (scenario default) behind that: serve's
// own --fake-model default, or, where a test counts the model's requests,
// the test's fake model (fakeAPI) reached through the environment (serve
// without --fake-model leaves the CLI the environment it was given). Each
// test runs its own serve on 127.0.0.1:0 and reads the address from its
// log line "serving". Requests go through net/http; a stream is read as
// server-sent events whose data lines feed a ctlLane, so that the lane-004
// helpers (l4…, control_lane004_test.go) read them as they read stdio.
// Helpers of this file start with sv.

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"
)

// svPath is the API's root.
const svPath = "/api/runtime/codex/workers"

// svSlow is the fake model's answer to a SLOW prompt: 50 deltas, 100 ms
// apart.
var svSlow = strings.Repeat("counting ", 50)

// svOpts says how to start ccbridge serve.
type svOpts struct {
	workers  []string          // the worker ids, in order
	dirs     map[string]string // a worker's folder; a fresh one when not given
	home     string            // HOME; a fresh folder when ""
	external bool              // the test's fake model (fakeAPI) rather than --fake-model default
	token    string            // the bearer token the helpers send ("" none)
	args     []string
	env      []string
	// mayExit: serve exiting before it serves is an outcome the test
	// checks (s.base is "" then, s.code and s.stderr say why), not a
	// failure.
	mayExit bool
	// tls: HTTPS with the package's test certificate (serve_tls_test.go);
	// the helpers' clients trust its CA.
	tls bool
}

// svServer is one ccbridge serve under test.
type svServer struct {
	t      *testing.T
	cmd    *exec.Cmd
	base   string // http://ADDR/api/runtime/codex/workers (https:// with tls)
	caFile string // with tls: the CA's certificate
	home   string
	dirs   map[string]string
	token  string
	stderr *lockedBuffer
	exited chan struct{}
	code   int
	client *http.Client // requests: bounded
	sse    *http.Client // streams: unbounded
}

// svStart runs `ccbridge serve --listen 127.0.0.1:0` with the workers and
// waits for its url (its log line "serving"); at cleanup it is stopped
// with SIGTERM.
func svStart(t *testing.T, o svOpts) *svServer {
	t.Helper()
	cli := realCLI(t)
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	s := &svServer{t: t, home: o.home, dirs: map[string]string{}, token: o.token, stderr: &lockedBuffer{}, exited: make(chan struct{}),
		client: &http.Client{Timeout: 60 * time.Second, Transport: tr}, sse: &http.Client{Transport: tr}}
	if s.home == "" {
		s.home = t.TempDir()
	}
	args := []string{"serve", "--listen", "127.0.0.1:0"}
	for _, id := range o.workers {
		dir := o.dirs[id]
		if dir == "" {
			dir = t.TempDir()
		}
		s.dirs[id] = dir
		args = append(args, "--worker", id+"="+dir)
	}
	env := append(os.Environ(), "HOME="+s.home, "CCBRIDGE_CLAUDE="+cli, "CCBRIDGE_LOG_LEVEL=debug")
	if o.tls {
		pki, ca, cert, key := svTLS(t)
		s.caFile = ca
		tr.TLSClientConfig = svTLSClient(pki)
		args = append(args, "--tls-cert", cert, "--tls-key", key)
	}
	if o.external {
		env = append(env, fakeAPI(t).Env()...)
	} else {
		args = append(args, "--fake-model", "default")
	}
	s.cmd = exec.Command(ccbridgeBin, append(args, o.args...)...)
	s.cmd.Dir = t.TempDir()
	s.cmd.Env = append(env, o.env...)
	// stderr through a pipe of our own: Wait does not wait for whatever
	// else holds it.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stderr = w
	err = s.cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	read := make(chan struct{}) // closed at stderr's end
	go func() {
		defer close(read)
		defer r.Close()
		br := bufio.NewReaderSize(r, 1<<16)
		for {
			line, err := br.ReadBytes('\n')
			s.stderr.Write(line)
			if gjson.GetBytes(line, "msg").Str == "serving" {
				select {
				case addr <- cmp.Or(gjson.GetBytes(line, "url").Str, "http://"+gjson.GetBytes(line, "listen").Str+"/"):
				default:
				}
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		err := s.cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			s.code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				s.code = 128 + int(ws.Signal())
			}
		}
		close(s.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			s.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-s.exited:
			case <-time.After(30 * time.Second):
				s.cmd.Process.Kill()
				<-s.exited
				t.Errorf("ccbridge serve did not exit within 30 s of SIGTERM")
			}
		}
		tr.CloseIdleConnections()
		if t.Failed() {
			t.Logf("ccbridge serve stderr (tail):\n%s", tail(s.stderr.String(), 8000))
		}
	})
	select {
	case a := <-addr:
		s.base = strings.TrimSuffix(a, "/") + svPath
	case <-s.exited:
		if o.mayExit {
			// What it said before it exited, to its end (within a
			// while: a child may hold stderr open).
			select {
			case <-read:
			case <-time.After(5 * time.Second):
			}
			return s
		}
		t.Fatalf("ccbridge serve exited with %d before serving:\n%s", s.code, tail(s.stderr.String(), 4000))
	case <-time.After(60 * time.Second):
		t.Fatalf("ccbridge serve did not log its address within 60 s:\n%s", tail(s.stderr.String(), 4000))
	}
	return s
}

// stop signals serve and waits for its exit code.
func (s *svServer) stop(sig syscall.Signal) int {
	s.t.Helper()
	s.cmd.Process.Signal(sig)
	select {
	case <-s.exited:
		return s.code
	case <-time.After(60 * time.Second):
		s.t.Fatalf("ccbridge serve did not exit within 60 s of %v", sig)
		return -1
	}
}

// svDo sends one HTTP request; any goroutine.
func svDo(c *http.Client, method, url, token string, body io.Reader, hdr ...string) (int, http.Header, []byte, error) {
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		return 0, nil, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}

// do sends a request to base+path with token.
func (s *svServer) do(method, path, token string, body io.Reader, hdr ...string) (int, http.Header, []byte) {
	s.t.Helper()
	code, h, b, err := svDo(s.client, method, s.base+path, token, body, hdr...)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	return code, h, b
}

// post sends body to the worker's requests with token; every answer is
// JSON.
func (s *svServer) post(worker, token string, body []byte) (int, []byte) {
	s.t.Helper()
	code, h, b := s.do(http.MethodPost, "/"+worker+"/requests", token, bytes.NewReader(body))
	if ct := h.Get("Content-Type"); ct != "application/json" || !gjson.ValidBytes(b) {
		s.t.Errorf("POST to %s: HTTP %d with Content-Type %q: %.300s", worker, code, ct, b)
	}
	return code, b
}

// call posts a request with the server's token and checks the HTTP
// status; it returns the body (the receipt).
func (s *svServer) call(worker, id, method string, params any, want int) []byte {
	s.t.Helper()
	code, b := s.post(worker, s.token, []byte(l4Req(id, method, params)))
	if code != want {
		s.t.Fatalf("POST %s (%s) to %s: HTTP %d, want %d: %.800s", method, id, worker, code, want, b)
	}
	return b
}

// status is GET …/{worker}.
func (s *svServer) status(worker string) gjson.Result {
	s.t.Helper()
	code, _, b := s.do(http.MethodGet, "/"+worker, s.token, nil)
	if code != http.StatusOK || gjson.GetBytes(b, "worker_id").Str != worker {
		s.t.Fatalf("GET the status of %s: HTTP %d: %.500s", worker, code, b)
	}
	return gjson.ParseBytes(b)
}

// svStream is one GET …/stream: its data lines read as a lane's (so
// ctlLane.waitFrom and the l4 helpers apply), and the way to hang up.
type svStream struct {
	*l4Conn
	hangUp func()
}

// stream opens the worker's stream with a Last-Event-ID header (when
// lastID is not "") and query ("?after=N" or ""), and checks every event's
// framing as it comes: id = the line's seq (none for a line without one),
// event = its event_type, one data line of JSON from the worker.
func (s *svServer) stream(worker, lastID, query string) *svStream {
	t := s.t
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/"+worker+"/stream"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := s.sse.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("GET the stream of %s: %v", worker, err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		t.Fatalf("GET the stream of %s: HTTP %d, %q: %.300s", worker, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	name := "stream " + worker + " (Last-Event-ID " + strconv.Quote(lastID) + ", query " + strconv.Quote(query) + ")"
	ch := make(chan []byte, 1<<14)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		defer resp.Body.Close()
		br := bufio.NewReaderSize(resp.Body, 1<<20)
		var id, event string
		var data []byte
		hasID, hasData := false, false
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				return // a partial event at the end is no event
			}
			line = line[:len(line)-1]
			switch {
			case len(line) == 0:
				if !hasData {
					if hasID || event != "" {
						t.Errorf("%s: an event without data (id %q, event %q)", name, id, event)
					}
					continue
				}
				svCheckEvent(t, name, worker, id, hasID, event, data)
				select {
				case ch <- data:
				case <-ctx.Done():
					return
				}
				id, event, data, hasID, hasData = "", "", nil, false, false
			case line[0] == ':': // a comment: keep-alive
			default:
				field, value, ok := bytes.Cut(line, []byte(": "))
				switch {
				case !ok:
					t.Errorf("%s: a line that is no field: %q", name, line)
				case string(field) == "id" && !hasID:
					id, hasID = string(value), true
				case string(field) == "event" && event == "":
					event = string(value)
				case string(field) == "data" && !hasData:
					data, hasData = bytes.Clone(value), true
				default:
					t.Errorf("%s: an unexpected or repeated field: %q", name, line)
				}
			}
		}
	}()
	var once sync.Once
	hangUp := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(hangUp)
	lane := &ctlLane{t: t, name: name, lines: ch, write: func(string) error { return errors.New("a stream takes no requests") }}
	return &svStream{l4Conn: &l4Conn{ctlLane: lane, worker: worker}, hangUp: hangUp}
}

// svCheckEvent checks one server-sent event of worker's stream.
func svCheckEvent(t *testing.T, name, worker, id string, hasID bool, event string, data []byte) {
	if !gjson.ValidBytes(data) {
		t.Errorf("%s: data that is not JSON: %.300s", name, data)
		return
	}
	typ := gjson.GetBytes(data, "event_type").Str
	if event != typ {
		t.Errorf("%s: event %q for a line of event_type %q", name, event, typ)
	}
	if w := gjson.GetBytes(data, "worker_id").Str; w != worker {
		t.Errorf("%s: a line of worker %q: %.300s", name, w, data)
	}
	switch seq := gjson.GetBytes(data, "seq"); {
	case seq.Exists() && (!hasID || id != seq.Raw):
		t.Errorf("%s: id %q (given: %v) for seq %s", name, id, hasID, seq.Raw)
	case !seq.Exists() && hasID:
		t.Errorf("%s: id %q for a line without seq: %.300s", name, id, data)
	case !seq.Exists() && typ != "worker.cursor_stale":
		t.Errorf("%s: a line without seq that is not worker.cursor_stale: %.300s", name, data)
	}
}

// turn posts turn/start with text on thread and reads c to its
// turn/completed; it returns the turn's id and the worker lines from the
// receipt (which the stream has too, byte for byte) to turn/completed.
func (s *svServer) turn(c *svStream, worker, thread, text string) (string, [][]byte) {
	s.t.Helper()
	id := ctlID("turn")
	r := s.call(worker, id, "turn/start", l4Text(thread, text), http.StatusOK)
	turn := l4OK(s.t, "turn/start", r, "turn/start").Get("turn.id").Str
	if uuid.Validate(turn) != nil {
		s.t.Fatalf("turn/start's turn.id %q is not a UUID: %s", turn, r)
	}
	from := c.waitFrom(0, "turn/start's receipt on the stream", l4IsReceipt(id))
	if !bytes.Equal(c.got[from], r) {
		s.t.Errorf("the receipt on the stream differs from the HTTP body:\n%s\n%s", c.got[from], r)
	}
	to := c.waitFrom(from, "the turn/completed of "+turn, l4IsEvent("turn/completed", turn))
	return turn, c.workerLines(from, to)
}

// svRefused checks an answer that is a seq-less worker.error (no event of
// the log): the HTTP status, the code, request_id null, a message.
func svRefused(t *testing.T, what string, status int, body []byte, wantStatus int, worker, code string) {
	t.Helper()
	if status != wantStatus || get(body, "event_type").Str != "worker.error" || get(body, "seq").Exists() ||
		get(body, "payload.code").Str != code || get(body, "payload.request_id").Type != gjson.Null ||
		get(body, "payload.message").Str == "" || get(body, "worker_id").Str != worker {
		t.Errorf("%s: want HTTP %d with a seq-less worker.error %s of worker %q and request_id null, got HTTP %d: %.500s",
			what, wantStatus, code, worker, status, body)
	}
}

// svFailed checks an error receipt (with a seq) and its HTTP status.
func svFailed(t *testing.T, what string, status int, body []byte, wantStatus int, method, code string) gjson.Result {
	t.Helper()
	if status != wantStatus {
		t.Errorf("%s: HTTP %d, want %d: %.500s", what, status, wantStatus, body)
	}
	return l4Fail(t, what, body, method, code)
}

// cliPID is the pid of the worker's CLI: among the processes serve's
// guardians started (or serve itself, without one), one that runs another
// program than ccbridge in the worker's folder, the first started; none
// of not.
func (s *svServer) cliPID(worker string, not ...int) int {
	s.t.Helper()
	dir := mustReal(s.t, s.dirs[worker])
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var found []int
		for _, g := range children(s.cmd.Process.Pid) {
			cands := []int{g}
			if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", g)); exe == ccbridgeBin {
				cands = children(g)
			}
			for _, c := range cands {
				exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", c))
				cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", c))
				if exe != "" && exe != ccbridgeBin && cwd == dir && running(c) && !slices.Contains(not, c) {
					found = append(found, c)
				}
			}
		}
		if len(found) > 0 {
			return slices.MinFunc(found, func(a, b int) int { return int(startTime(a)) - int(startTime(b)) })
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no CLI of worker %s (in %s) below ccbridge serve within 20 s", worker, dir)
		}
	}
}

// svDescendants is every process below pid.
func svDescendants(pid int) []int {
	var out []int
	for _, c := range children(pid) {
		out = append(append(out, c), svDescendants(c)...)
	}
	return out
}

// svSeqs is the seqs of lines, for messages.
func svSeqs(lines [][]byte) []uint64 {
	var out []uint64
	for _, l := range lines {
		out = append(out, l4Seq(l))
	}
	return out
}

// TestServeMethods: every method over HTTP, on one worker, with the
// stream opened first: thread/start (200, a new thread in the worker's
// folder, its receipt and thread/started on the stream), turn/start (the
// receipt's turn id; on the stream the same receipt, turn/started, deltas
// that join to the model's answer, turn/completed), thread/list,
// thread/read with and without includeTurns, thread/start again and
// thread/resume of the first thread (its next turn runs in it and
// thread/read has both turns), turn/interrupt during the SLOW answer
// (turn/completed interrupted); the status and list endpoints; every line
// of the stream in the seed's shape, seqs one apart. It is
// TestServeOneWorker's first scenario: it checks the worker as it starts.
func svMethods(t *testing.T, s *svServer) {
	cwd := mustReal(t, s.dirs[l4Worker])
	st := s.status(l4Worker)
	sid := st.Get("status.thread_id").Str
	if uuid.Validate(sid) != nil || st.Get("latest_seq").Uint() != 0 || st.Get("status.turn_id").Type != gjson.Null {
		t.Errorf("the status at the start: %s", st.Raw)
	}
	code, _, all := s.do(http.MethodGet, "", "", nil)
	if ws := gjson.GetBytes(all, "workers").Array(); code != http.StatusOK || len(ws) != 1 || ws[0].Get("worker_id").Str != l4Worker {
		t.Errorf("GET the workers: HTTP %d: %s", code, all)
	}
	c := s.stream(l4Worker, "", "")

	// thread/start: a new thread, announced on the stream.
	id := ctlID("start")
	r := s.call(l4Worker, id, "thread/start", map[string]any{}, http.StatusOK)
	th := l4OK(t, "thread/start", r, "thread/start").Get("thread")
	a := th.Get("id").Str
	if uuid.Validate(a) != nil || a == sid {
		t.Fatalf("thread/start's thread.id %q is not a new UUID (the worker's was %s): %s", a, sid, r)
	}
	if th.Get("cwd").Str != cwd || th.Get("preview").Str != "" || th.Get("modelProvider").Str != "anthropic" {
		t.Errorf("thread/start's thread: %s (the worker's folder %s)", th.Raw, cwd)
	}
	ri := c.waitFrom(0, "thread/start's receipt on the stream", l4IsReceipt(id))
	if !bytes.Equal(c.got[ri], r) {
		t.Errorf("thread/start's receipt on the stream differs from the HTTP body:\n%s\n%s", c.got[ri], r)
	}
	started := c.got[c.waitFrom(ri, "thread/started", l4IsEvent("thread/started", ""))]
	if get(started, "payload.params.thread.id").Str != a || l4Seq(started) <= l4Seq(r) {
		t.Errorf("thread/started (the receipt's seq %d): %s", l4Seq(r), started)
	}

	// turn/start on it.
	textA := "hello " + token("HELLO")
	turnA, lines := s.turn(c, l4Worker, a, textA)
	l4CheckTurn(t, "turn/start", lines, a, turnA, l4Mock, "completed")

	list := l4OK(t, "thread/list", s.call(l4Worker, ctlID("list"), "thread/list", nil, http.StatusOK), "thread/list")
	if e := l4Listed(t, list, a); e.Get("preview").Str != textA || e.Get("cwd").Str != cwd {
		t.Errorf("thread/list's entry for %s: %s", a, e.Raw)
	}
	read := l4OK(t, "thread/read", s.call(l4Worker, ctlID("read"), "thread/read", map[string]any{"threadId": a, "includeTurns": true}, http.StatusOK), "thread/read")
	users, agents := l4Turns(read)
	if read.Get("thread.id").Str != a || !slices.Equal(users, []string{textA}) || !slices.Equal(agents, []string{l4Mock}) ||
		read.Get("thread.turns.0.id").Str != turnA {
		t.Errorf("thread/read with turns (turn %s): users %q, agents %q: %.1500s", turnA, users, agents, read.Raw)
	}
	read = l4OK(t, "thread/read", s.call(l4Worker, ctlID("read"), "thread/read", map[string]any{"thread_id": a}, http.StatusOK), "thread/read")
	if read.Get("thread.turns").Exists() || read.Get("thread.id").Str != a {
		t.Errorf("thread/read without includeTurns: %s", read.Raw)
	}

	// Another thread, then back to the first.
	b := l4OK(t, "thread/start", s.call(l4Worker, ctlID("start"), "thread/start", nil, http.StatusOK), "thread/start").Get("thread.id").Str
	if b == a || uuid.Validate(b) != nil {
		t.Fatalf("the second thread/start gave %q (the first %s)", b, a)
	}
	res := l4OK(t, "thread/resume", s.call(l4Worker, ctlID("resume"), "thread/resume", map[string]any{"threadId": a}, http.StatusOK), "thread/resume")
	if res.Get("thread.id").Str != a {
		t.Errorf("thread/resume's thread: %s", res.Raw)
	}
	textD := "again " + token("AGAIN")
	turnD, lines := s.turn(c, l4Worker, a, textD)
	l4CheckTurn(t, "the resumed thread's turn", lines, a, turnD, l4Mock, "completed")
	read = l4OK(t, "thread/read", s.call(l4Worker, ctlID("read"), "thread/read", map[string]any{"threadId": a, "include_turns": true}, http.StatusOK), "thread/read")
	if users, agents := l4Turns(read); !slices.Equal(users, []string{textA, textD}) || !slices.Equal(agents, []string{l4Mock, l4Mock}) {
		t.Errorf("thread/read of the resumed thread: users %q, agents %q", users, agents)
	}

	// turn/interrupt of the slow answer.
	id = ctlID("slow")
	r = s.call(l4Worker, id, "turn/start", l4Text(a, "SLOW "+token("slow")), http.StatusOK)
	slow := l4OK(t, "turn/start SLOW", r, "turn/start").Get("turn.id").Str
	from := c.waitFrom(0, "the SLOW receipt on the stream", l4IsReceipt(id))
	c.waitFrom(from, "a delta of the slow turn", l4IsEvent("item/agentMessage/delta", slow))
	start := time.Now()
	ir := s.call(l4Worker, ctlID("int"), "turn/interrupt", map[string]any{"threadId": a, "turnId": slow}, http.StatusOK)
	done := l4Interrupted(t, c.l4Conn, from, a, slow, ir, start)

	st = s.status(l4Worker)
	if st.Get("status.thread_id").Str != a || st.Get("status.turn_id").Type != gjson.Null || st.Get("latest_seq").Uint() < l4Seq(c.got[done]) {
		t.Errorf("the status after the turns (the stream's last seq %d): %s", l4Seq(c.got[done]), st.Raw)
	}
	l4Consecutive(t, "the whole stream", c.got)
	if l4Seq(c.got[0]) != 1 {
		t.Errorf("the stream opened at seq 0 began at seq %d", l4Seq(c.got[0]))
	}
	c.checkShapes()
}

// TestServeErrors: each error code from a real situation over HTTP, with
// its status: with --token-file, unauthorized 401 (no token, a wrong one,
// another scheme; on a request, a stream, the list), forbidden 403 (a
// token for another worker, on a known and an unknown id: 403 before
// 404), an unknown worker 404 (worker_unavailable, no seq), 405 for a
// wrong HTTP method; invalid_request 400 (no thread_id; malformed JSON,
// with no seq and request_id null; a bad ?after=), unsupported_method
// 400, conflict 409 (turn/start on another thread), 413 past --max-body
// (with and without a Content-Length; the request did not run, so its id
// is free), and worker_unavailable 503 once the worker's CLI is killed and
// cannot start again (--claude is a link the test removes); the other
// worker is untouched.
func TestServeErrors(t *testing.T) {
	t.Parallel()
	link := filepath.Join(t.TempDir(), "claude")
	if err := os.Symlink(realCLI(t), link); err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("# e2e\nsv-all\n\nsv-b b\nsv-main "+l4Worker+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := svStart(t, svOpts{workers: []string{l4Worker, "b"}, token: "sv-all",
		args: []string{"--token-file", tokens, "--max-body", "4096", "--claude", link}})
	sid := s.status(l4Worker).Get("status.thread_id").Str
	list := l4Req(ctlID("list"), "thread/list", nil)

	// unauthorized, 401.
	for _, tc := range []struct{ what, token string }{{"no token", ""}, {"a wrong token", "sv-nope"}, {"a prefix of a token", "sv-al"}} {
		code, h, b := s.do(http.MethodPost, "/"+l4Worker+"/requests", tc.token, strings.NewReader(list))
		svRefused(t, "POST with "+tc.what, code, b, http.StatusUnauthorized, l4Worker, "unauthorized")
		if !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("POST with %s: WWW-Authenticate %q", tc.what, h.Get("WWW-Authenticate"))
		}
		l4Shape(t, "POST with "+tc.what, b)
	}
	code, _, b := s.do(http.MethodPost, "/"+l4Worker+"/requests", "", strings.NewReader(list), "Authorization", "Basic c3YtYWxsOg==")
	svRefused(t, "POST with basic authentication", code, b, http.StatusUnauthorized, l4Worker, "unauthorized")
	code, _, b = s.do(http.MethodGet, "/"+l4Worker+"/stream", "sv-nope", nil)
	svRefused(t, "GET the stream with a wrong token", code, b, http.StatusUnauthorized, l4Worker, "unauthorized")
	code, _, b = s.do(http.MethodGet, "", "", nil)
	svRefused(t, "GET the workers with no token", code, b, http.StatusUnauthorized, "", "unauthorized")

	// forbidden, 403: before 404, so that a token cannot probe ids.
	code, _, b = s.do(http.MethodPost, "/"+l4Worker+"/requests", "sv-b", strings.NewReader(list))
	svRefused(t, "POST with b's token", code, b, http.StatusForbidden, l4Worker, "forbidden")
	l4Shape(t, "POST with b's token", b)
	code, _, b = s.do(http.MethodGet, "/b", "sv-main", nil)
	svRefused(t, "GET b's status with the other worker's token", code, b, http.StatusForbidden, "b", "forbidden")
	code, _, b = s.do(http.MethodGet, "/nobody/stream", "sv-b", nil)
	svRefused(t, "GET an unknown worker's stream with b's token", code, b, http.StatusForbidden, "nobody", "forbidden")
	code, _, b = s.do(http.MethodGet, "", "sv-b", nil)
	if ws := gjson.GetBytes(b, "workers").Array(); code != http.StatusOK || len(ws) != 1 || ws[0].Get("worker_id").Str != "b" {
		t.Errorf("GET the workers with b's token: HTTP %d: %s", code, b)
	}
	code, _, b = s.do(http.MethodGet, "", "sv-all", nil)
	if ws := gjson.GetBytes(b, "workers").Array(); code != http.StatusOK || len(ws) != 2 {
		t.Errorf("GET the workers: HTTP %d: %s", code, b)
	}

	// An unknown worker 404, a wrong method 405, another path 404.
	code, b = s.post("nobody", "sv-all", []byte(list))
	svRefused(t, "POST to an unknown worker", code, b, http.StatusNotFound, "nobody", "worker_unavailable")
	if code, _, b := s.do(http.MethodGet, "/"+l4Worker+"/requests", "sv-all", nil); code != http.StatusMethodNotAllowed {
		t.Errorf("GET …/requests: HTTP %d, want 405: %.300s", code, b)
	}
	if code, _, b := s.do(http.MethodGet, "/"+l4Worker+"/other", "sv-all", nil); code != http.StatusNotFound {
		t.Errorf("GET …/other: HTTP %d, want 404: %.300s", code, b)
	}

	// invalid_request and unsupported_method, 400; conflict, 409.
	bad := token("BAD")
	code, b = s.post(l4Worker, "sv-main", []byte(l4Req(ctlID("nothread"), "turn/start", map[string]any{"input": []any{map[string]any{"type": "text", "text": bad}}})))
	p := svFailed(t, "turn/start without thread_id", code, b, http.StatusBadRequest, "turn/start", "invalid_request")
	if !strings.Contains(p.Get("message").Str, "thread_id") {
		t.Errorf("invalid_request's message does not name thread_id: %s", p.Raw)
	}
	l4Shape(t, "turn/start without thread_id", b)
	code, b = s.post(l4Worker, "sv-all", []byte(`{"request":{"request_id":"`+ctlID("malformed")+`","method":"thread/list"}} trailing`))
	svRefused(t, "malformed JSON", code, b, http.StatusBadRequest, l4Worker, "invalid_request")
	if get(b, "payload.method").Type != gjson.Null || !strings.HasPrefix(get(b, "payload.message").Str, "malformed JSON") {
		t.Errorf("malformed JSON: %s", b)
	}
	l4Shape(t, "malformed JSON", b)
	code, _, b = s.do(http.MethodGet, "/"+l4Worker+"/stream?after=x", "sv-all", nil)
	svRefused(t, "GET the stream with ?after=x", code, b, http.StatusBadRequest, l4Worker, "invalid_request")
	code, b = s.post(l4Worker, "sv-all", []byte(l4Req(ctlID("fork"), "thread/fork", map[string]any{"threadId": sid})))
	if p := svFailed(t, "thread/fork", code, b, http.StatusBadRequest, "thread/fork", "unsupported_method"); !strings.Contains(p.Get("message").Str, "thread/fork") {
		t.Errorf("unsupported_method's message: %s", p.Raw)
	}
	l4Shape(t, "thread/fork", b)
	code, b = s.post(l4Worker, "sv-all", []byte(l4Req(ctlID("other"), "turn/start", l4Text(uuid.NewString(), bad))))
	p = svFailed(t, "turn/start on another thread", code, b, http.StatusConflict, "turn/start", "conflict")
	if p.Get("details.current_thread_id").Str != sid || p.Get("details.current_turn_id").Type != gjson.Null {
		t.Errorf("conflict's details for another thread: %s", p.Raw)
	}
	l4Shape(t, "turn/start on another thread", b)

	// 413 past --max-body 4096: with a Content-Length, and chunked.
	bigID := ctlID("big")
	big := []byte(l4Req(bigID, "turn/start", l4Text(sid, bad+" "+strings.Repeat("x", 5000))))
	code, b = s.post(l4Worker, "sv-all", big)
	svRefused(t, "a body of 5 kB", code, b, http.StatusRequestEntityTooLarge, l4Worker, "invalid_request")
	code, _, b = s.do(http.MethodPost, "/"+l4Worker+"/requests", "sv-all", io.MultiReader(bytes.NewReader(big)))
	svRefused(t, "a chunked body of 5 kB", code, b, http.StatusRequestEntityTooLarge, l4Worker, "invalid_request")
	// Nothing ran: the id is free.
	l4OK(t, "thread/list with the id of the body refused", s.call(l4Worker, bigID, "thread/list", nil, http.StatusOK), "thread/list")

	// worker_unavailable, 503: the CLI killed, and it cannot start again.
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(s.cliPID(l4Worker), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); s.status(l4Worker).Get("status.state").Str != "exited"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the worker is not exited 20 s after its CLI was killed: %s", s.status(l4Worker).Raw)
		}
	}
	code, b = s.post(l4Worker, "sv-all", []byte(l4Req(ctlID("nocli"), "turn/start", l4Text(sid, "never "+bad))))
	p = svFailed(t, "turn/start with no CLI", code, b, http.StatusServiceUnavailable, "turn/start", "worker_unavailable")
	if !strings.Contains(p.Get("message").Str, "could not start") || p.Get("retryable").Type != gjson.True {
		t.Errorf("worker_unavailable: %s", p.Raw)
	}
	l4Shape(t, "turn/start with no CLI", b)
	if st := s.status("b"); st.Get("status.state").Str != "idle" {
		t.Errorf("the other worker's status: %s", st.Raw)
	}
}

// TestServeOneWorker: TestServeMethods, TestServeDedupe and
// TestServeReconnect, each a subtest named for the test it was alone, one
// after the other in one serve and one worker (see inOneSession): the
// worker's first CLI start once where they took three. The model is the
// test's own (TestServeDedupe counts its requests; its scenario is the
// default one --fake-model gives). TestServeMethods comes first: it checks
// the worker's status and stream as they start (seq 0, then 1), and ends
// on its own thread, which the others take from the status. A stream
// opened without a cursor is live only (docs/protocol/worker.md), and
// TestServeDedupe counts the turn/started lines on its stream after the
// seq the status gave at its start too; TestServeReconnect compares three
// streams opened at one moment, and reads the events of its own turn.
func TestServeOneWorker(t *testing.T) {
	t.Parallel()
	api := fakeAPI(t)
	open := func(t *testing.T) *svServer { return svStart(t, svOpts{workers: []string{l4Worker}, external: true}) }
	bind := func(s *svServer, t *testing.T) {
		s.t = t
		useFakeAPI(t, api)
	}
	inOneSession(t, open, bind,
		scenario[*svServer]{"TestServeMethods", svMethods},
		scenario[*svServer]{"TestServeDedupe", svDedupe},
		scenario[*svServer]{"TestServeReconnect", svReconnect},
	)
}

// TestServeDedupe: one turn/start POSTed 1,000 times one after the other,
// then another 50 times by each of 20 clients at once (each its own
// connections): every answer 200 and byte-identical, the receipt once on
// the stream, one turn/started, and the model (the test's own, so that
// its requests can be counted) got exactly one request for the prompt.
func svDedupe(t *testing.T, s *svServer) {
	st := s.status(l4Worker)
	sid, seq0 := st.Get("status.thread_id").Str, st.Get("latest_seq").Uint()
	c := s.stream(l4Worker, "", "")
	url := s.base + "/" + l4Worker + "/requests"

	// once checks one turn's receipts: all body, once on the stream, one
	// turn/started, one prompt.
	once := func(what, id, tok string, bodies [][]byte) {
		t.Helper()
		r0 := bodies[0]
		for i, b := range bodies {
			if !bytes.Equal(b, r0) {
				t.Fatalf("%s: answer %d differs from the first:\n%s\n%s", what, i, b, r0)
			}
		}
		turn := l4OK(t, what, r0, "turn/start").Get("turn.id").Str
		ri := c.waitFrom(0, what+": the receipt on the stream", l4IsReceipt(id))
		end := c.waitFrom(ri, what+": turn/completed", l4IsEvent("turn/completed", turn))
		if !bytes.Equal(c.got[ri], r0) {
			t.Errorf("%s: the receipt on the stream:\n%s\nthe answers:\n%s", what, c.got[ri], r0)
		}
		if k := count(c.got[:end+1], l4IsReceipt(id)); k != 1 {
			t.Errorf("%s: the receipt came %d times on the stream", what, k)
		}
		if k := count(c.got[:end+1], l4IsEvent("turn/started", turn)); k != 1 {
			t.Errorf("%s: %d turn/started", what, k)
		}
		if st := get(c.got[end], "payload.params.turn.status").Str; st != "completed" {
			t.Errorf("%s: the turn ended %s", what, st)
		}
		ctlPromptCount(t, tok, 1)
	}

	tok := token("ONCE")
	id := ctlID("dup")
	body := []byte(l4Req(id, "turn/start", l4Text(sid, "once "+tok)))
	start := time.Now()
	var bodies [][]byte
	for i := range 1000 {
		code, b := s.post(l4Worker, "", body)
		if code != http.StatusOK {
			t.Fatalf("POST %d: HTTP %d: %s", i, code, b)
		}
		bodies = append(bodies, b)
	}
	t.Logf("1,000 sequential POSTs of one request: %v", time.Since(start))
	once("1,000 sequential", id, tok, bodies)

	tok2 := token("CONC")
	id2 := ctlID("conc")
	body2 := []byte(l4Req(id2, "turn/start", l4Text(sid, "concurrent "+tok2)))
	type result struct {
		bodies [][]byte
		err    error
	}
	results := make(chan result, 20)
	ready := make(chan struct{})
	for range 20 {
		tr := &http.Transport{}
		client := &http.Client{Timeout: 60 * time.Second, Transport: tr}
		go func() {
			var r result
			defer func() { results <- r }()
			defer tr.CloseIdleConnections()
			<-ready
			for range 50 {
				code, _, b, err := svDo(client, http.MethodPost, url, "", bytes.NewReader(body2))
				if err == nil && code != http.StatusOK {
					err = fmt.Errorf("HTTP %d: %.300s", code, b)
				}
				if err != nil {
					r.err = err
					return
				}
				r.bodies = append(r.bodies, b)
			}
		}()
	}
	start = time.Now()
	close(ready)
	bodies = nil
	for range 20 {
		r := <-results
		if r.err != nil {
			t.Errorf("a concurrent client: %v", r.err)
		}
		bodies = append(bodies, r.bodies...)
	}
	t.Logf("20 clients × 50 POSTs of one request: %v", time.Since(start))
	if len(bodies) != 1000 {
		t.Fatalf("%d answers for 20 × 50 POSTs", len(bodies))
	}
	once("20 × 50 concurrent", id2, tok2, bodies)
	if k := count(c.got, func(l []byte) bool { return l4Seq(l) > seq0 && l4IsEvent("turn/started", "")(l) }); k != 2 {
		t.Errorf("%d turn/started on the stream for two requests", k)
	}
	c.checkShapes()
}

// TestServeReconnect: two clients of the stream hang up during the SLOW
// turn, after 3 and 5 deltas, and come back while it goes on, one with
// Last-Event-ID, the other with ?after=, each the last id it read: what
// each read before and after is exactly what a client that stayed read up
// to the turn's end (interrupted meanwhile), byte for byte, in order, none
// twice.
func svReconnect(t *testing.T, s *svServer) {
	sid := s.status(l4Worker).Get("status.thread_id").Str
	obs := s.stream(l4Worker, "", "")
	s1 := s.stream(l4Worker, "", "")
	s2 := s.stream(l4Worker, "", "")
	r := s.call(l4Worker, ctlID("slow"), "turn/start", l4Text(sid, "SLOW "+token("slow")), http.StatusOK)
	turn := l4OK(t, "turn/start SLOW", r, "turn/start").Get("turn.id").Str

	// readDeltas reads c to its n-th delta of the turn, hangs up and
	// returns the last id it read.
	readDeltas := func(c *svStream, n int) uint64 {
		seen := 0
		c.waitFrom(0, fmt.Sprintf("%d deltas", n), func(l []byte) bool {
			if l4IsEvent("item/agentMessage/delta", turn)(l) {
				seen++
			}
			return seen == n
		})
		c.hangUp()
		return l4Seq(c.got[len(c.got)-1])
	}
	last1 := readDeltas(s1, 3)
	last2 := readDeltas(s2, 5)
	// The turn goes on without them.
	obs.waitFrom(0, "three more events", func(l []byte) bool { return l4Seq(l) >= max(last1, last2)+3 })

	back1 := s.stream(l4Worker, strconv.FormatUint(last1, 10), "")
	back2 := s.stream(l4Worker, "", "?after="+strconv.FormatUint(last2, 10))
	for _, c := range []*svStream{back1, back2} {
		c.waitFrom(0, "the first event after the reconnection", func([]byte) bool { return true })
	}
	l4OK(t, "turn/interrupt", s.call(l4Worker, ctlID("int"), "turn/interrupt", map[string]any{"threadId": sid, "turnId": turn}, http.StatusOK), "turn/interrupt")
	end := obs.waitFrom(0, "the turn's end", l4IsEvent("turn/completed", turn))
	want := obs.got[:end+1]
	// Interrupted, unless the whole answer (5 s) went out before the
	// interrupt reached the CLI: the replay is the point here.
	if st := get(want[len(want)-1], "payload.params.turn.status").Str; st != "interrupted" && st != "completed" {
		t.Errorf("the turn ended: %s", want[len(want)-1])
	}
	for _, tc := range []struct {
		what         string
		before, back *svStream
		last         uint64
	}{{"Last-Event-ID", s1, back1, last1}, {"?after=", s2, back2, last2}} {
		e := tc.back.waitFrom(0, tc.what+": the turn's end", l4IsEvent("turn/completed", turn))
		after := tc.back.got[:e+1]
		if len(after) == 0 || l4Seq(after[0]) != tc.last+1 {
			t.Errorf("%s %d: the first line after the reconnection has seq %d", tc.what, tc.last, l4Seq(after[0]))
		}
		got := append(slices.Clone(tc.before.got), after...)
		if len(got) != len(want) {
			t.Errorf("%s %d: %d lines before and after, %d without a break:\nbefore %v\nafter %v\nwant %v",
				tc.what, tc.last, len(got), len(want), svSeqs(tc.before.got), svSeqs(after), svSeqs(want))
			continue
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Errorf("%s %d: line %d:\n%s\nwant\n%s", tc.what, tc.last, i, got[i], want[i])
				break
			}
		}
		tc.back.checkShapes()
	}
	l4Consecutive(t, "the stream that stayed", want)
	obs.checkShapes()
}

// TestServeStaleCursor: with --retain-events 10 a turn makes more events
// than are kept; a stream from seq 1 (Last-Event-ID, and ?after=) begins
// with worker.cursor_stale (no id) whose resume_after is the oldest seq
// kept - 1, then the 10 events kept, the same lines the live stream had.
func TestServeStaleCursor(t *testing.T) {
	t.Parallel()
	s := svStart(t, svOpts{workers: []string{l4Worker}, args: []string{"--retain-events", "10"}})
	sid := s.status(l4Worker).Get("status.thread_id").Str
	live := s.stream(l4Worker, "", "")
	_, lines := s.turn(live, l4Worker, sid, "hello "+token("stale"))
	st := s.status(l4Worker)
	latest, oldest := st.Get("latest_seq").Uint(), st.Get("oldest_seq").Uint()
	if latest != l4Seq(lines[len(lines)-1]) || latest <= 12 || latest-oldest+1 != 10 {
		t.Fatalf("after a turn of %d events (the last %d), with 10 kept: %s", len(lines), l4Seq(lines[len(lines)-1]), st.Raw)
	}
	bySeq := map[uint64][]byte{}
	for _, l := range live.got {
		bySeq[l4Seq(l)] = l
	}
	for _, tc := range []struct{ what, lastID, query string }{{"Last-Event-ID 1", "1", ""}, {"?after=1", "", "?after=1"}} {
		c := s.stream(l4Worker, tc.lastID, tc.query)
		end := c.waitFrom(0, tc.what+": the latest event", func(l []byte) bool { return l4Seq(l) == latest })
		got := c.got[:end+1]
		stale := got[0]
		if get(stale, "event_type").Str != "worker.cursor_stale" || get(stale, "seq").Exists() || get(stale, "payload.after").Uint() != 1 ||
			get(stale, "payload.resume_after").Uint() != oldest-1 || get(stale, "payload.latest_seq").Uint() != latest {
			t.Fatalf("%s: want worker.cursor_stale (after 1, resume_after %d, latest_seq %d) first, got %s", tc.what, oldest-1, latest, stale)
		}
		if k := count(got, func(l []byte) bool { return get(l, "event_type").Str == "worker.cursor_stale" }); k != 1 {
			t.Errorf("%s: %d cursor_stale lines", tc.what, k)
		}
		if rest := got[1:]; len(rest) != 10 || l4Seq(rest[0]) != oldest {
			t.Errorf("%s: seqs %v after the stale line, want %d..%d", tc.what, svSeqs(rest), oldest, latest)
		}
		l4Consecutive(t, tc.what, got)
		for _, l := range got[1:] {
			if w, ok := bySeq[l4Seq(l)]; ok && !bytes.Equal(l, w) {
				t.Errorf("%s: seq %d differs from the live stream's:\n%s\n%s", tc.what, l4Seq(l), l, w)
			}
		}
		c.checkShapes()
		c.hangUp()
	}
	live.checkShapes()
}

// TestServeRestart: with --state-dir, serve stopped (SIGTERM, exit 0)
// after a turn and started again on the same state, HOME and folder: its
// status has the same latest_seq; a retry of the old request_id gets the
// old receipt byte for byte (200, before and after a new receipt) and
// runs nothing (the model, the test's own, got the prompt once; the retry
// is no event of the stream); the next receipt's seq is the last + 1; the
// thread resumed, the next turn carries its history.
func TestServeRestart(t *testing.T) {
	t.Parallel()
	o := svOpts{workers: []string{l4Worker}, dirs: map[string]string{l4Worker: t.TempDir()}, home: t.TempDir(), external: true,
		args: []string{"--state-dir", t.TempDir()}}
	s1 := svStart(t, o)
	sid := s1.status(l4Worker).Get("status.thread_id").Str
	c1 := s1.stream(l4Worker, "", "")
	tok1 := token("DUR")
	id1 := ctlID("dur")
	body1 := []byte(l4Req(id1, "turn/start", l4Text(sid, "first "+tok1)))
	code, r1 := s1.post(l4Worker, "", body1)
	if code != http.StatusOK {
		t.Fatalf("turn/start: HTTP %d: %s", code, r1)
	}
	turn1 := l4OK(t, "turn/start", r1, "turn/start").Get("turn.id").Str
	c1.waitFrom(0, "the turn's end", l4IsEvent("turn/completed", turn1))
	var last uint64
	for _, l := range c1.got {
		last = max(last, l4Seq(l))
	}
	if st := s1.status(l4Worker); st.Get("latest_seq").Uint() != last {
		t.Errorf("the status's latest_seq, the stream's last seq %d: %s", last, st.Raw)
	}
	c1.checkShapes()
	if code := s1.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("ccbridge serve exited with %d after SIGTERM", code)
	}

	s2 := svStart(t, o)
	if st := s2.status(l4Worker); st.Get("latest_seq").Uint() != last {
		t.Errorf("after the restart the status's latest_seq is not the last seq %d: %s", last, st.Raw)
	}
	c2 := s2.stream(l4Worker, "", "")
	retry := func(when string) {
		t.Helper()
		code, again := s2.post(l4Worker, "", body1)
		if code != http.StatusOK || !bytes.Equal(again, r1) {
			t.Errorf("the old request retried %s: HTTP %d\n%s\nwant\n%s", when, code, again, r1)
		}
	}
	retry("after the restart")
	r := s2.call(l4Worker, ctlID("resume"), "thread/resume", map[string]any{"threadId": sid}, http.StatusOK)
	if th := l4OK(t, "thread/resume after the restart", r, "thread/resume").Get("thread.id").Str; th != sid {
		t.Errorf("thread/resume's thread %s, want %s", th, sid)
	}
	if l4Seq(r) != last+1 {
		t.Errorf("the first receipt after the restart has seq %d, want %d", l4Seq(r), last+1)
	}
	tok2 := token("DUR2")
	turn2, lines := s2.turn(c2, l4Worker, sid, "second "+tok2)
	l4CheckTurn(t, "the turn after the restart", lines, sid, turn2, l4Mock, "completed")
	retry("after a new turn")
	if k := count(c2.got, l4IsEvent("turn/started", "")); k != 1 {
		t.Errorf("%d turns started after the restart, want 1", k)
	}
	if k := count(c2.got, l4IsReceipt(id1)); k != 0 {
		t.Errorf("the retried receipt came %d times on the new stream", k)
	}
	ctlPromptCount(t, tok1, 1)
	ctlPromptCount(t, tok2, 1)
	if !seenByModel(t, tok2, tok1) {
		t.Errorf("the thread resumed after the restart lacks its history")
	}
	l4Consecutive(t, "the stream after the restart", c2.got)
	c2.checkShapes()
}

// TestServeWorkers: two workers in one serve, each in the SLOW answer; the
// CLI of a (found below serve by its folder) killed with SIGKILL: a's turn
// ends failed on a's stream, b's turn completes with the whole answer on
// b's stream, which has nothing of a's; the status of both answers
// throughout; then a's next turn works, on a new CLI that resumed a's
// thread. Then serve killed with SIGKILL: every process below it is gone
// within 5 s (the guardians sweep).
func TestServeWorkers(t *testing.T) {
	t.Parallel()
	s := svStart(t, svOpts{workers: []string{"a", "b"}})
	ta := s.status("a").Get("status.thread_id").Str
	tb := s.status("b").Get("status.thread_id").Str
	if ta == tb || uuid.Validate(ta) != nil || uuid.Validate(tb) != nil {
		t.Fatalf("the workers' threads: %q and %q", ta, tb)
	}
	ca := s.stream("a", "", "")
	cb := s.stream("b", "", "")

	// The status of both, polled from now to the end of a's next turn.
	var polls, failed atomic.Int64
	stopPoll, pollDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(pollDone)
		for {
			for _, w := range []string{"a", "b"} {
				code, _, b, err := svDo(s.client, http.MethodGet, s.base+"/"+w, "", nil)
				if err != nil || code != http.StatusOK || gjson.GetBytes(b, "worker_id").Str != w || !gjson.GetBytes(b, "status.state").Exists() {
					t.Errorf("GET the status of %s: HTTP %d, %v: %.300s", w, code, err, b)
					failed.Add(1)
				}
				polls.Add(1)
			}
			select {
			case <-stopPoll:
				return
			case <-time.After(50 * time.Millisecond): // the polling's pace, not a synchronisation
			}
		}
	}()
	endPoll := sync.OnceFunc(func() { close(stopPoll); <-pollDone })
	t.Cleanup(endPoll)

	ida, idb := ctlID("slowa"), ctlID("slowb")
	turnA := l4OK(t, "a's turn/start", s.call("a", ida, "turn/start", l4Text(ta, "SLOW "+token("a")), http.StatusOK), "turn/start").Get("turn.id").Str
	turnB := l4OK(t, "b's turn/start", s.call("b", idb, "turn/start", l4Text(tb, "SLOW "+token("b")), http.StatusOK), "turn/start").Get("turn.id").Str
	ca.waitFrom(0, "a delta of a's turn", l4IsEvent("item/agentMessage/delta", turnA))
	cb.waitFrom(0, "a delta of b's turn", l4IsEvent("item/agentMessage/delta", turnB))
	pidA, pidB := s.cliPID("a"), s.cliPID("b")
	if pidA == pidB {
		t.Fatalf("one CLI (%d) for both workers", pidA)
	}
	if err := syscall.Kill(pidA, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}

	ra := ca.waitFrom(0, "a's receipt", l4IsReceipt(ida))
	ea := ca.waitFrom(ra, "a's turn/completed", l4IsEvent("turn/completed", turnA))
	l4CheckTurn(t, "a's turn, its CLI killed", ca.workerLines(ra, ea), ta, turnA, "", "failed")
	if msg := get(ca.got[ea], "payload.params.turn.error.message").Str; msg == "" {
		t.Errorf("a's failed turn has no error message: %s", ca.got[ea])
	}
	rb := cb.waitFrom(0, "b's receipt", l4IsReceipt(idb))
	eb := cb.waitFrom(rb, "b's turn/completed", l4IsEvent("turn/completed", turnB))
	l4CheckTurn(t, "b's turn", cb.workerLines(rb, eb), tb, turnB, svSlow, "completed")
	if !running(pidB) {
		t.Errorf("b's CLI %d is gone", pidB)
	}

	turnA2, lines := s.turn(ca, "a", ta, "back "+token("BACK"))
	l4CheckTurn(t, "a's next turn", lines, ta, turnA2, l4Mock, "completed")
	pidA2 := s.cliPID("a", pidA)
	if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pidA2)); !bytes.Contains(cmdline, []byte("\x00--resume\x00"+ta+"\x00")) &&
		!bytes.Contains(cmdline, []byte("\x00--resume="+ta+"\x00")) {
		t.Errorf("a's new CLI %d does not resume %s: %q", pidA2, ta, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
	}
	endPoll()
	if polls.Load() < 4 || failed.Load() != 0 {
		t.Errorf("%d status requests, %d of them failed", polls.Load(), failed.Load())
	}
	if st := s.status("b"); st.Get("status.thread_id").Str != tb || st.Get("status.state").Str != "idle" {
		t.Errorf("b's status: %s", st.Raw)
	}
	for _, c := range []*svStream{ca, cb} {
		l4Consecutive(t, c.name, c.got)
	}
	if k := count(cb.got, func(l []byte) bool { return bytes.Contains(l, []byte(ta)) || bytes.Contains(l, []byte(turnA)) }); k != 0 {
		t.Errorf("b's stream has %d lines of a's thread", k)
	}

	// serve killed: nothing it started stays.
	procs := svDescendants(s.cmd.Process.Pid)
	if !slices.Contains(procs, pidA2) || !slices.Contains(procs, pidB) {
		t.Fatalf("the processes below serve %v lack the CLIs %d and %d", procs, pidA2, pidB)
	}
	s.stop(syscall.SIGKILL)
	for _, pid := range procs {
		waitNotRunning(t, pid, "a process below ccbridge serve after its SIGKILL")
	}
}
