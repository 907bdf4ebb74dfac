package serve

// ccbridge serve's HTTP API: one lane-004 worker per {workerId}, driven
// through its lane (control.Lane004) and its event log. The handlers hold
// no protocol of their own: a request's body goes to the lane, its
// receipt comes back as the response body; the stream is the lane's
// Follow written as server-sent events.

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter/control"
	"github.com/ccbridge/ccbridge/adapter/worker"
	"github.com/ccbridge/ccbridge/framing"
	"github.com/ccbridge/ccbridge/internal/jsonw"
	"github.com/ccbridge/ccbridge/mapping/lane004"
)

// The API's paths.
const (
	serveWorkersPath = "/api/runtime/codex/workers"
	serveWorkerPath  = serveWorkersPath + "/{workerId}"
)

// The stream's timings.
const (
	serveKeepAlive    = 15 * time.Second
	serveWriteTimeout = 10 * time.Second
	// serveBodyTimeout bounds reading a request's body.
	serveBodyTimeout = time.Minute
)

// serveWorker is one worker as the API sees it.
type serveWorker struct {
	id string
	w  worker.Lane004
	// done is closed once the worker's session has ended; nil: never.
	done <-chan struct{}
}

// stopped reports whether the worker's session has ended.
func (wk *serveWorker) stopped() bool {
	select {
	case <-wk.done:
		return true
	default:
		return false
	}
}

// serveAPI is the HTTP API over a fixed set of workers. Its fields other
// than the workers and tokens may be changed before handler is called
// (tests shorten the timings).
type serveAPI struct {
	workers map[string]*serveWorker
	order   []string     // the workers' ids, as given
	tokens  *serveTokens // nil: no authentication (loopback only)
	log     *slog.Logger
	// web is the page and its sessions; nil: none (--web=false).
	web *webHost
	// gw: a gateway to the workers on the bus (serve --bus, serve_bus.go);
	// workers is then empty.
	gw *control.Gateway
	// tlsProxy is --insecure-http: a reverse proxy in front speaks HTTPS
	// to the browser, so the page's origin may be https:// though the
	// request came in plain.
	tlsProxy bool

	maxBody      int64
	requestWait  time.Duration
	keepAlive    time.Duration
	writeTimeout time.Duration

	// closing is closed at shutdown: streams end, waiting requests are
	// answered 202.
	closing   chan struct{}
	closeOnce sync.Once
	// bg counts the lane requests still running, whose HTTP answer may
	// already have gone (202).
	bg sync.WaitGroup
}

func newServeAPI(workers []*serveWorker, tokens *serveTokens, log *slog.Logger) *serveAPI {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &serveAPI{
		workers:      make(map[string]*serveWorker, len(workers)),
		tokens:       tokens,
		log:          log,
		maxBody:      serveDefaultMaxBody,
		requestWait:  serveDefaultWait,
		keepAlive:    serveKeepAlive,
		writeTimeout: serveWriteTimeout,
		closing:      make(chan struct{}),
	}
	for _, w := range workers {
		s.workers[w.id] = w
		s.order = append(s.order, w.id)
	}
	return s
}

// handler routes the API; every other path is 404, another method on
// these 405.
func (s *serveAPI) handler() http.Handler {
	if s.gw != nil {
		return s.busHandler()
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+serveWorkerPath+"/requests", s.request)
	mux.HandleFunc("GET "+serveWorkerPath+"/stream", s.stream)
	mux.HandleFunc("GET "+serveWorkerPath, s.status)
	mux.HandleFunc("GET "+serveWorkersPath, s.list)
	if s.web != nil {
		s.web.handle(mux)
	}
	return s.guard(mux)
}

// guard checks what every request must pass, before its handler:
//   - without tokens, a Host that is not a loopback name is 403, so that a
//     site whose name was rebound to 127.0.0.1 reaches nothing;
//   - a request that changes something (not GET or HEAD) from a browser
//     must come from serve's own origin: an Origin equal to its own, or
//     none with Sec-Fetch-Site absent, same-origin or none;
//
// and sets the security headers of every response (the page's
// Content-Security-Policy among them; over HTTPS, Strict-Transport-Security).
func (s *serveAPI) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", webCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		if r.TLS != nil {
			h.Set("Strict-Transport-Security", webHSTS)
		}
		if s.tokens == nil && !loopbackHost(r.Host) {
			webError(w, http.StatusForbidden, "forbidden_host", "Host "+strconv.Quote(r.Host)+" is not a loopback name: without --token-file, ccbridge serve answers 127.0.0.1, [::1] and localhost only")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !sameOrigin(r, s.tlsProxy) {
			webError(w, http.StatusForbidden, "forbidden_origin", "a request that changes something must come from this server's own page (Origin "+strconv.Quote(r.Header.Get("Origin"))+")")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether a Host header names loopback: localhost,
// or a loopback IP address, with any port.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sameOrigin reports whether a request comes from serve's own origin, or
// from a client that is not a browser (no Origin, no Sec-Fetch-Site, or
// Sec-Fetch-Site none: typed by the user). Serve's origin is https://
// and its Host over TLS, http:// and its Host over plain HTTP; behind a
// TLS proxy (tlsProxy) https:// and the Host too, as the proxy passes
// it on.
func sameOrigin(r *http.Request, tlsProxy bool) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		site := r.Header.Get("Sec-Fetch-Site")
		return site == "" || site == "same-origin" || site == "none"
	}
	if r.TLS != nil {
		return strings.EqualFold(origin, "https://"+r.Host)
	}
	return strings.EqualFold(origin, "http://"+r.Host) || tlsProxy && strings.EqualFold(origin, "https://"+r.Host)
}

// secureOrigin reports whether the browser reached serve over HTTPS: the
// request came over TLS, or from a page of an https:// origin (behind a
// TLS proxy; guard has checked that origin is serve's own).
func secureOrigin(r *http.Request) bool {
	return r.TLS != nil || len(r.Header.Get("Origin")) > 8 && strings.EqualFold(r.Header.Get("Origin")[:8], "https://")
}

// shutdown ends the streams and answers the requests waiting for their
// receipts; the lane requests go on (wait).
func (s *serveAPI) shutdown() { s.closeOnce.Do(func() { close(s.closing) }) }

// wait waits for the lane requests still running.
func (s *serveAPI) wait() { s.bg.Wait() }

// problem writes a worker.error with no seq (no event of any log) with
// the HTTP status.
func (s *serveAPI) problem(w http.ResponseWriter, status int, workerID, code, message string) {
	body := lane004.AppendProblem(nil, workerID, &lane004.Problem{Code: code, Message: message}, time.Now())
	writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body) // a peer gone is no error of ours
}

// authenticate checks the bearer token: missing or unknown is 401. With
// no tokens every request passes (nil, true).
func (s *serveAPI) authenticate(w http.ResponseWriter, r *http.Request, workerID string) (*serveToken, bool) {
	if s.tokens == nil {
		return nil, true
	}
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	var msg string
	var match *serveToken
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		msg = "a bearer token is required (Authorization: Bearer TOKEN)"
	} else if match = s.tokens.match(token); match == nil {
		msg = "the bearer token is not valid"
	}
	if match == nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ccbridge"`)
		s.problem(w, http.StatusUnauthorized, workerID, lane004.CodeUnauthorized, msg)
		return nil, false
	}
	return match, true
}

// match returns the token's entry, nil for a token not in the file.
// Every token is compared, in constant time.
func (t *serveTokens) match(token string) *serveToken {
	sum := sha256.Sum256([]byte(token))
	var m *serveToken
	for i := range t.list {
		if subtle.ConstantTimeCompare(sum[:], t.list[i].sum[:]) == 1 {
			m = &t.list[i]
		}
	}
	return m
}

// worker authenticates the request and finds its worker: 401, then 403
// for a token not allowed for that id (known or not), then 404.
func (s *serveAPI) worker(w http.ResponseWriter, r *http.Request) *serveWorker {
	id := r.PathValue("workerId")
	tok, ok := s.authenticate(w, r, id)
	if !ok {
		return nil
	}
	if tok != nil && !tok.allows(id) {
		s.problem(w, http.StatusForbidden, id, lane004.CodeForbidden, "this token may not drive worker "+strconv.Quote(id))
		return nil
	}
	wk := s.workers[id]
	if wk == nil {
		s.problem(w, http.StatusNotFound, id, lane004.CodeWorkerUnavailable, "no worker "+strconv.Quote(id))
		return nil
	}
	return wk
}

// receiptStatus is the HTTP status of a receipt: 200 for a
// worker.response, by code for a worker.error.
func receiptStatus(receipt []byte) int {
	if gjson.GetBytes(receipt, "event_type").Str == "worker.response" {
		return http.StatusOK
	}
	switch gjson.GetBytes(receipt, "payload.code").Str {
	case lane004.CodeInvalidRequest, lane004.CodeUnsupportedMethod:
		return http.StatusBadRequest
	case lane004.CodeUnauthorized:
		return http.StatusUnauthorized
	case lane004.CodeForbidden:
		return http.StatusForbidden
	case lane004.CodeConflict:
		return http.StatusConflict
	case lane004.CodeWorkerUnavailable:
		return http.StatusServiceUnavailable
	case lane004.CodeTimeout:
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// request is POST …/requests: the body is one request envelope, the
// answer its receipt, or 202 when the receipt takes longer than
// requestWait (it then comes on the stream after the 202's seq, and a
// retry of the request returns it once made).
func (s *serveAPI) request(w http.ResponseWriter, r *http.Request) {
	wk := s.worker(w, r)
	if wk == nil {
		return
	}
	body, tooBig, err := readBody(w, r, s.maxBody)
	switch {
	case tooBig:
		s.tooLarge(w, wk.id)
		return
	case err != nil:
		s.problem(w, http.StatusBadRequest, wk.id, lane004.CodeInvalidRequest, "reading the request body: "+err.Error())
		return
	}
	if wk.stopped() {
		s.problem(w, http.StatusServiceUnavailable, wk.id, lane004.CodeWorkerUnavailable, "the worker's session has ended")
		return
	}
	accepted := wk.w.Log.Latest()
	answer := make(chan []byte, 1)
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		receipt, _, _ := wk.w.Lane.Request(body, nil)
		answer <- receipt
	}()
	wait := time.NewTimer(s.requestWait)
	defer wait.Stop()
	select {
	case receipt := <-answer:
		if receipt == nil {
			s.problem(w, http.StatusBadRequest, wk.id, lane004.CodeInvalidRequest, "the body is a worker event, not a request")
			return
		}
		writeJSON(w, receiptStatus(receipt), receipt)
	case <-wait.C:
		s.accepted(w, body, accepted)
	case <-s.closing:
		s.accepted(w, body, accepted)
	case <-r.Context().Done():
		// The client is gone; the request goes on, its receipt on the
		// stream and for a retry.
	}
}

// readBody reads a request's body: at most max bytes (tooBig: more),
// within serveBodyTimeout.
func readBody(w http.ResponseWriter, r *http.Request, max int64) (body []byte, tooBig bool, err error) {
	if r.ContentLength > max {
		return nil, true, nil
	}
	http.NewResponseController(w).SetReadDeadline(time.Now().Add(serveBodyTimeout))
	body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	var over *http.MaxBytesError
	if errors.As(err, &over) {
		return nil, true, nil
	}
	return body, false, err
}

// accepted answers 202: the request is being carried out; its receipt
// comes on the stream after seq.
func (s *serveAPI) accepted(w http.ResponseWriter, body []byte, seq uint64) {
	req, prob := lane004.Decode(body)
	id := req.RequestID
	if prob != nil {
		id = prob.RequestID
	}
	writeJSON(w, http.StatusAccepted, jsonw.NewObj(nil).StrOrNull("request_id", id).Bool("accepted", true).Int("seq", int64(seq)).End())
}

func (s *serveAPI) tooLarge(w http.ResponseWriter, workerID string) {
	s.problem(w, http.StatusRequestEntityTooLarge, workerID, lane004.CodeInvalidRequest,
		"the request body is over the "+strconv.FormatInt(s.maxBody, 10)+"-byte limit (--max-body)")
}

// statusObj appends the worker's status object.
func (wk *serveWorker) statusObj(dst []byte) []byte {
	var st []byte
	ok := false
	if wk.w.Status != nil && !wk.stopped() {
		st, ok = wk.w.Status()
	}
	if !ok {
		st = []byte(`{"state":"stopped"}`)
	}
	return jsonw.NewObj(dst).Str("worker_id", wk.id).Int("latest_seq", int64(wk.w.Log.Latest())).
		Int("oldest_seq", int64(wk.w.Log.Oldest())).Raw("status", string(st)).End()
}

// status is GET …/{workerId}.
func (s *serveAPI) status(w http.ResponseWriter, r *http.Request) {
	wk := s.worker(w, r)
	if wk == nil {
		return
	}
	writeJSON(w, http.StatusOK, wk.statusObj(nil))
}

// list is GET …/workers: the workers the token may drive.
func (s *serveAPI) list(w http.ResponseWriter, r *http.Request) {
	tok, ok := s.authenticate(w, r, "")
	if !ok {
		return
	}
	b := []byte(`{"workers":[`)
	n := 0
	for _, id := range s.order {
		if tok != nil && !tok.allows(id) {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		b = s.workers[id].statusObj(b)
		n++
	}
	writeJSON(w, http.StatusOK, append(b, "]}"...))
}

// streamCursor is a stream request's cursor: Last-Event-ID, else
// ?after=N; given is false with neither. A bad one's error names it.
func streamCursor(r *http.Request) (n uint64, given bool, err error) {
	name, v := "Last-Event-ID", r.Header.Get("Last-Event-ID")
	if v == "" {
		name, v = "after", r.URL.Query().Get("after")
	}
	if v == "" {
		return 0, false, nil
	}
	if n, err = strconv.ParseUint(strings.TrimSpace(v), 10, 64); err != nil {
		return 0, true, errors.New(name + " " + strconv.Quote(v) + " is not a seq (an integer >= 0)")
	}
	return n, true, nil
}

// startStream answers 200 with an event stream and sends the headers; nil
// when the peer is already gone. Every write is bounded by timeout.
func startStream(w http.ResponseWriter, timeout time.Duration) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	out := &sseWriter{w: w, rc: http.NewResponseController(w), timeout: timeout}
	if out.flush() != nil {
		return nil
	}
	return out
}

// sseLine is one line of the stream: an event of the log (seq), or a
// worker.cursor_stale line (seq 0).
type sseLine struct {
	seq  uint64
	line []byte
}

// stream is GET …/stream: the worker's events after the cursor, as
// server-sent events, as they come (relay).
func (s *serveAPI) stream(w http.ResponseWriter, r *http.Request) {
	wk := s.worker(w, r)
	if wk == nil {
		return
	}
	// Without a cursor: from now on (live only).
	cursor, given, err := streamCursor(r)
	if err != nil {
		s.problem(w, http.StatusBadRequest, wk.id, lane004.CodeInvalidRequest, err.Error())
		return
	}
	if !given {
		cursor = wk.w.Log.Latest()
	}
	out := startStream(w, s.writeTimeout)
	if out == nil {
		return
	}
	defer out.deadline() // the response's end is bounded too

	s.relay(r.Context(), out, wk.id, func(ctx context.Context, add func(uint64, []byte) bool, flush func() bool) error {
		wk.w.Lane.Follow(cursor, add, flush, nil, ctx.Done())
		return nil // the worker's log was closed: its session ended
	})
}

// relay runs follow on a goroutine of its own, which hands over its
// batches (add, then flush, which waits for the write); this goroutine
// writes them to out, each write bounded, with keep-alives between, so
// that a reader that cannot keep up has its stream ended (it resumes from
// its Last-Event-ID) and nobody waits for it but itself. It returns when
// the follower ends (ended, with its error), the request ends, the stream
// breaks or serve closes; follow's ctx is cancelled then.
func (s *serveAPI) relay(parent context.Context, out *sseWriter, id string,
	follow func(ctx context.Context, add func(seq uint64, line []byte) bool, flush func() bool) error) (ended bool, err error) {
	ctx, cancel := context.WithCancel(parent)
	batches := make(chan []sseLine)
	acks := make(chan bool, 1)
	followed := make(chan error, 1)
	go func() {
		var batch []sseLine
		followed <- follow(ctx, func(seq uint64, line []byte) bool {
			batch = append(batch, sseLine{seq, line})
			return true
		}, func() bool {
			select {
			case batches <- batch:
			case <-ctx.Done():
				return false
			}
			var ok bool
			select {
			case ok = <-acks:
			case <-ctx.Done():
				return false
			}
			clear(batch)
			batch = batch[:0]
			return ok
		})
	}()
	defer func() {
		cancel()
		if !ended {
			<-followed
		}
	}()
	keep := time.NewTimer(s.keepAlive)
	defer keep.Stop()
	for {
		select {
		case b := <-batches:
			err := out.lines(b)
			acks <- err == nil
			if err != nil {
				s.streamEnded(id, err)
				return false, nil
			}
			keep.Reset(s.keepAlive)
		case <-keep.C:
			if err := out.comment("keep-alive"); err != nil {
				s.streamEnded(id, err)
				return false, nil
			}
			keep.Reset(s.keepAlive)
		case err := <-followed:
			return true, err
		case <-parent.Done():
			return false, nil
		case <-s.closing:
			return false, nil
		}
	}
}

func (s *serveAPI) streamEnded(id string, err error) {
	if !errors.Is(err, context.Canceled) {
		s.log.Info("stream ended: the reader did not keep up or is gone; it resumes from its Last-Event-ID", "worker", id, "err", err)
	}
}

// sseWriter writes server-sent events, each write under a deadline.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	buf     []byte
}

// deadline bounds the next write; a writer that has none (not over a
// connection of net/http's own) goes without.
func (o *sseWriter) deadline() {
	o.rc.SetWriteDeadline(time.Now().Add(o.timeout))
}

func (o *sseWriter) flush() error {
	o.deadline()
	return o.rc.Flush()
}

// lines writes a batch and flushes it:
//
//	id: <seq>
//	event: <event_type>
//	data: <line>
//
// with no id for a worker.cursor_stale line (seq 0).
func (o *sseWriter) lines(batch []sseLine) error {
	for _, l := range batch {
		b := o.buf[:0]
		if l.seq > 0 {
			b = append(b, "id: "...)
			b = strconv.AppendUint(b, l.seq, 10)
			b = append(b, '\n')
		}
		if ev := gjson.GetBytes(l.line, "event_type").Str; ev != "" && !strings.ContainsAny(ev, "\r\n") {
			b = append(b, "event: "...)
			b = append(b, ev...)
			b = append(b, '\n')
		}
		b = append(b, "data: "...)
		o.buf = b
		o.deadline()
		if _, err := o.w.Write(b); err != nil {
			return err
		}
		if _, err := o.w.Write(sseData(l.line)); err != nil {
			return err
		}
		if _, err := o.w.Write([]byte("\n\n")); err != nil {
			return err
		}
	}
	return o.flush()
}

// sseData returns line as one data field of a stream may carry it, and
// as JSON.parse reads it: UTF-8 only (a byte that is not becomes U+FFFD)
// and no control character, whose CR or LF would end the field and let
// the rest of the line be read as fields of its own (an id: among them).
// Within a JSON string a control character becomes its escape (\r, \n,
// \t, \u00XX), outside one a space. Every line of every stream passes
// here: the CLI's own lines never hold one, but a session file read by a
// lenient parser (a resumed session's history) may. A clean line, nearly
// every one, is returned as it is after one scan.
func sseData(line []byte) []byte {
	if clean(line) {
		return line
	}
	line = framing.ValidUTF8(line)
	out := make([]byte, 0, len(line)+16)
	in := false // within a string
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c >= 0x20:
			out = append(out, c)
			if c == '"' {
				in = !in
			} else if in && c == '\\' && i+1 < len(line) && line[i+1] >= 0x20 {
				out = append(out, line[i+1])
				i++
			}
		case !in:
			out = append(out, ' ')
		case c == '\n':
			out = append(out, `\n`...)
		case c == '\r':
			out = append(out, `\r`...)
		case c == '\t':
			out = append(out, `\t`...)
		default:
			out = append(out, `\u00`...)
			out = append(out, hexDigits[c>>4], hexDigits[c&0xf])
		}
	}
	return out
}

const hexDigits = "0123456789abcdef"

// clean reports whether line is UTF-8 with no control character.
func clean(line []byte) bool {
	for _, c := range line {
		if c < 0x20 {
			return false
		}
	}
	return utf8.Valid(line)
}

// comment writes ": text" and flushes it.
func (o *sseWriter) comment(text string) error {
	o.deadline()
	if _, err := io.WriteString(o.w, ": "+text+"\n\n"); err != nil {
		return err
	}
	return o.flush()
}

// httpServe serves h on ln, over TLS when tlsCfg is set, and logs where
// (with attrs); served gets the serving's end.
func httpServe(ln net.Listener, h http.Handler, tlsCfg *tls.Config, log *slog.Logger, attrs ...any) (hs *http.Server, served <-chan error) {
	hs = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	end := make(chan error, 1)
	scheme := "http"
	if tlsCfg != nil {
		// HTTPS only: net/http answers a plain HTTP request on this port
		// with a 400 of its own, which no handler of ours sees.
		scheme = "https"
		hs.TLSConfig = tlsCfg
		go func() { end <- hs.ServeTLS(ln, "", "") }()
	} else {
		go func() { end <- hs.Serve(ln) }()
	}
	log.Info("serving", append([]any{"listen", ln.Addr().String(), "url", scheme + "://" + ln.Addr().String() + "/"}, attrs...)...)
	return hs, end
}

// awaitServe waits for ctx's end (code 0) or the serving's (code 1 and
// its error).
func awaitServe(ctx context.Context, served <-chan error, log *slog.Logger) (int, error) {
	select {
	case <-ctx.Done():
		log.Info("shutting down")
		return 0, nil
	case err := <-served:
		log.Error("serving ended", "err", err)
		return 1, err
	}
}

// stopHTTP shuts hs down, waiting up to wait for the requests in hand,
// then closes the connections left.
func stopHTTP(hs *http.Server, wait time.Duration, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := hs.Shutdown(ctx); err != nil {
		log.Warn("HTTP shutdown: closing the connections left", "err", err)
		hs.Close()
	}
}
