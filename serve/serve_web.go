package serve

// ccbridge serve's web UI: the page at / (serve/webui) and its
// transport under /api/web (docs/protocol/web.md). Each web session is an
// ipc session core (IPC) with its own CLI child, run in process on a pipe
// as the workers are. Its output lines go into an event log of its own,
// which the page follows as server-sent events; the page's messages are
// written to the session's input as they are, one line each.

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/adapter/control"
	ipcdialect "github.com/ccbridge/ccbridge/adapter/ipc"
	"github.com/ccbridge/ccbridge/internal/jsonw"
	"github.com/ccbridge/ccbridge/internal/version"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/ipc"
	"github.com/ccbridge/ccbridge/serve/webui"
	"github.com/ccbridge/ccbridge/session"
	"github.com/ccbridge/ccbridge/session/clifiles"
)

// The web transport's defaults and bounds.
const (
	webDefaultRetain   = 100000
	webDefaultSessions = 32
	// webDefaultRetainBytes is --web-retain-bytes: the lines a web
	// session's stream keeps hold at most 32 MiB (a 10 MiB answer takes
	// about 30: its deltas, its whole text, and the turn's result).
	webDefaultRetainBytes = 32 << 20
	// webMaxFiles bounds the session files GET /api/web/sessions lists.
	webMaxFiles = 200
	// webTitleRunes bounds a listed session's title.
	webTitleRunes = 120
	// webBatch bounds the lines one write of a stream carries.
	webBatch = 512
	// webCookie is the cookie POST /api/web/auth sets.
	webCookie = "ccbridge_token"
)

// webHSTS is the Strict-Transport-Security of every HTTPS response: a
// browser that has once reached serve over HTTPS uses nothing else for a
// year (for a name: browsers keep none for an IP address).
const webHSTS = "max-age=31536000"

// webCSP is the Content-Security-Policy of every response: the page's own
// scripts and styles only, no inline code, no frames, no form posts, no
// connection but to serve itself.
const webCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"

// webConfig is what the web host takes from serve's flags.
type webConfig struct {
	dirs        []string // the folders a session may run in: absolute, links resolved
	retain      int
	retainBytes int64
	max         int
	// base is every session's Settings but for its Child and the session
	// flags of its mode.
	base      adapter.Settings
	child     func(dir string) session.Config
	grace     time.Duration
	termGrace time.Duration
	fakeModel bool
}

// webHost holds the web sessions. Its handlers run on net/http's
// goroutines; mu guards the session table, each session guards its own.
type webHost struct {
	cfg  webConfig
	log  *slog.Logger
	auth *serveAPI // the token check, shared with the workers' API

	mu       sync.Mutex
	sessions map[string]*webSession
	order    []*webSession
	closing  bool
	// cwds are the folders whose session files the list shows: every
	// --dir, and each folder below one that a session ran in.
	cwds []string

	// done is closed at shutdown: streams end.
	done     chan struct{}
	doneOnce sync.Once
}

// webSession is one conversation of the page: an ipc session on a pipe.
type webSession struct {
	id      string
	cwd     string
	mode    string
	created time.Time
	events  *control.EventLog

	// inMu serialises the page's messages: an echo and its line go in
	// together, in the order the messages were taken.
	inMu sync.Mutex
	in   *io.PipeWriter

	sid   atomic.Pointer[string] // the CLI session id, from session_init
	title atomic.Pointer[string] // the latest prompt, for the list
	took  int64                  // bytes of lines since the last releaseMemory (the UI writer's)

	// over is set once Run returned, before session_ended is logged: a
	// client that has read session_ended finds the session ended in the
	// list, its place free under --max-web-sessions. ended is closed once
	// session_ended is in the log: what a stream waits for, so that it
	// never ends before that line.
	over  atomic.Bool
	ended chan struct{}
	code  int
	err   error
}

func newWebHost(cfg webConfig, auth *serveAPI, log *slog.Logger) *webHost {
	return &webHost{cfg: cfg, auth: auth, log: log, sessions: map[string]*webSession{}, cwds: slices.Clone(cfg.dirs), done: make(chan struct{})}
}

// handle adds the page and /api/web to mux.
func (h *webHost) handle(mux *http.ServeMux) {
	assets, err := loadWebAssets(webui.Static, "static")
	if err != nil {
		panic(err) // the embedded tree is part of the binary
	}
	mux.Handle("GET /{$}", assets.handler("index.html"))
	mux.Handle("GET /{file}", assets.handler(""))
	mux.HandleFunc("GET /api/web/info", h.info)
	mux.HandleFunc("POST /api/web/auth", h.authCookie)
	mux.HandleFunc("GET /api/web/sessions", h.list)
	mux.HandleFunc("POST /api/web/sessions", h.create)
	mux.HandleFunc("GET /api/web/sessions/{id}/events", h.events)
	mux.HandleFunc("POST /api/web/sessions/{id}/messages", h.message)
	mux.HandleFunc("DELETE /api/web/sessions/{id}", h.end)
}

// webAsset is one file of the page, with its gzip form when that is
// smaller.
type webAsset struct {
	body, gz    []byte
	contentType string
	etag        string
}

// webAssets are the page's files by name, read once from the binary.
type webAssets map[string]*webAsset

// loadWebAssets reads the files of dir in fsys (one level: the page has no
// folders) and compresses each once.
func loadWebAssets(fsys fs.FS, dir string) (webAssets, error) {
	ents, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	a := webAssets{}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		body, err := fs.ReadFile(fsys, dir+"/"+e.Name())
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(body)
		f := &webAsset{body: body, etag: `"` + hex.EncodeToString(sum[:12]) + `"`,
			contentType: cmp.Or(mime.TypeByExtension(filepath.Ext(e.Name())), "application/octet-stream")}
		var gz bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		zw.Write(body)
		zw.Close()
		if gz.Len() < len(body) {
			f.gz = gz.Bytes()
		}
		a[e.Name()] = f
	}
	return a, nil
}

// handler serves the file name, or the one {file} names when name is "":
// gzip to a client that takes it, 304 for an ETag it has.
func (a webAssets) handler(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := a[cmp.Or(name, r.PathValue("file"))]
		if f == nil {
			webError(w, http.StatusNotFound, "not_found", "no such file")
			return
		}
		h := w.Header()
		h.Set("Content-Type", f.contentType)
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", f.etag)
		h.Add("Vary", "Accept-Encoding")
		if r.Header.Get("If-None-Match") == f.etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		body := f.body
		if f.gz != nil && acceptsGzip(r.Header.Get("Accept-Encoding")) {
			body = f.gz
			h.Set("Content-Encoding", "gzip")
		}
		h.Set("Content-Length", strconv.Itoa(len(body)))
		if r.Method != http.MethodHead {
			w.Write(body) // a peer gone is no error of ours
		}
	})
}

// acceptsGzip reports whether an Accept-Encoding takes gzip (and does not
// refuse it with q=0).
func acceptsGzip(ae string) bool {
	for _, part := range strings.Split(ae, ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			q := strings.ReplaceAll(params, " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}

// webError writes {"error":{"code","message"}} with status.
func webError(w http.ResponseWriter, status int, code, message string) {
	e := jsonw.NewObj(nil).Str("code", code).Str("message", message).String()
	writeJSON(w, status, jsonw.NewObj(nil).Raw("error", e).End())
}

// authorized checks the token of an /api/web request: a bearer token or
// the cookie, one that may drive every worker. With no --token-file
// every request passes (the listener is loopback, the Host checked).
func (h *webHost) authorized(w http.ResponseWriter, r *http.Request) bool {
	t := h.auth.tokens
	if t == nil {
		return true
	}
	token := ""
	if scheme, v, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		token = strings.TrimSpace(v)
	} else if c, err := r.Cookie(webCookie); err == nil {
		token = cookieToken(c.Value)
	}
	if token == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ccbridge"`)
		webError(w, http.StatusUnauthorized, "unauthorized", "a token is required (Authorization: Bearer TOKEN, or POST /api/web/auth)")
		return false
	}
	if m := t.match(token); m == nil || m.ids != nil {
		webError(w, http.StatusForbidden, "forbidden", "the token is not valid for the web UI (it needs a token for every worker)")
		return false
	}
	return true
}

// authCookie is POST /api/web/auth: {"token"} sets the cookie that
// EventSource sends; Secure when the page was reached over HTTPS.
func (h *webHost) authCookie(w http.ResponseWriter, r *http.Request) {
	body, ok := webBody(w, r, 4<<10)
	if !ok {
		return
	}
	token := gjson.GetBytes(body, "token").Str
	if h.auth.tokens == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if m := h.auth.tokens.match(token); token == "" || m == nil || m.ids != nil {
		webError(w, http.StatusForbidden, "forbidden", "the token is not valid for the web UI (it needs a token for every worker)")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: webCookie, Value: url.QueryEscape(token), Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: secureOrigin(r)})
	w.WriteHeader(http.StatusNoContent)
}

// cookieToken is the token a cookie value carries. A cookie value may not
// hold every byte a token may (no ';', '"', '\', space, nor any byte
// that is not ASCII: net/http drops them), so the cookie carries the token
// URL-encoded (url.QueryEscape, which leaves a token of letters, digits
// and "-._~" as it is); a value that does not decode is no token.
func cookieToken(v string) string {
	t, err := url.QueryUnescape(v)
	if err != nil {
		return ""
	}
	return t
}

// webBody reads a request body of at most max bytes: 413 beyond.
func webBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, bool) {
	body, tooBig, err := readBody(w, r, max)
	switch {
	case tooBig:
		webError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("the body is over %d bytes (--max-body)", max))
		return nil, false
	case err != nil:
		webError(w, http.StatusBadRequest, "invalid_request", "reading the body: "+err.Error())
		return nil, false
	}
	return body, true
}

func (h *webHost) info(w http.ResponseWriter, r *http.Request) {
	if !h.authorized(w, r) {
		return
	}
	writeJSON(w, http.StatusOK, jsonw.NewObj(nil).Str("version", version.String()).Strings("dirs", h.cfg.dirs).
		Bool("auth", h.auth.tokens != nil).Bool("fake_model", h.cfg.fakeModel).End())
}

// webSessionJSON is a session as the list shows it.
type webSessionJSON struct {
	ID        string    `json:"id"`
	Cwd       string    `json:"cwd"`
	Mode      string    `json:"mode"`
	SessionID string    `json:"session_id"`
	Created   time.Time `json:"created"`
	Ended     bool      `json:"ended"`
	Title     string    `json:"title"`
}

func (s *webSession) json() webSessionJSON {
	j := webSessionJSON{ID: s.id, Cwd: s.cwd, Mode: s.mode, Created: s.created, Ended: s.over.Load()}
	if p := s.sid.Load(); p != nil {
		j.SessionID = *p
	}
	if p := s.title.Load(); p != nil {
		j.Title = *p
	}
	return j
}

func (s *webSession) isEnded() bool {
	select {
	case <-s.ended:
		return true
	default:
		return false
	}
}

// webFileJSON is a session file as the list shows it.
type webFileJSON struct {
	SessionID string    `json:"session_id"`
	Cwd       string    `json:"cwd"`
	Title     string    `json:"title"`
	CLITitle  bool      `json:"cli_title"` // the title is the CLI's own (/rename, generate_session_title), not the latest prompt
	Created   string    `json:"created"`
	Modified  time.Time `json:"modified"`
}

// list is GET /api/web/sessions: the open sessions and the session files
// of every --dir, newest first.
func (h *webHost) list(w http.ResponseWriter, r *http.Request) {
	if !h.authorized(w, r) {
		return
	}
	h.mu.Lock()
	open := make([]webSessionJSON, 0, len(h.order))
	for _, s := range h.order {
		open = append(open, s.json())
	}
	h.mu.Unlock()
	files := h.files(r.Context())
	b, err := json.Marshal(struct {
		Open  []webSessionJSON `json:"open"`
		Files []webFileJSON    `json:"files"`
	}{open, files})
	if err != nil {
		webError(w, http.StatusInternalServerError, "internal_error", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, b)
}

// files lists the CLI's session files that hold a conversation, newest
// first, at most webMaxFiles: those of every --dir and of the folders
// below them that sessions ran in.
func (h *webHost) files(ctx context.Context) []webFileJSON {
	type found struct {
		f   clifiles.Session
		cwd string
	}
	var all []found
	h.mu.Lock()
	cwds := slices.Clone(h.cwds)
	h.mu.Unlock()
	for _, dir := range cwds {
		fs, _ := clifiles.List(h.configDir(dir), dir)
		for _, f := range fs {
			all = append(all, found{f, dir})
		}
	}
	slices.SortStableFunc(all, func(a, b found) int { return b.f.ModTime.Compare(a.f.ModTime) })
	out := []webFileJSON{}
	for _, a := range all {
		if len(out) == webMaxFiles || ctx.Err() != nil {
			break
		}
		f, err := clifiles.Read(a.f)
		if err != nil || !f.Conversation() {
			continue
		}
		title := f.Title() // the CLI's own, else the latest prompt
		if title == "" {
			title = f.LastPrompt
		}
		out = append(out, webFileJSON{SessionID: f.ID, Cwd: a.cwd, Title: clip(title, webTitleRunes), CLITitle: f.Title() != "", Created: f.CreatedAt, Modified: f.ModTime.UTC()})
	}
	return out
}

// configDir is the CLI's configuration folder for a child in dir.
func (h *webHost) configDir(dir string) string {
	env := h.cfg.child(dir).Env
	return clifiles.ConfigDir(func(k string) string { return clifiles.Getenv(env, os.Getenv, k) })
}

// clip cuts s to at most n runes, on one line.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// allowedDir resolves dir and reports whether it is one of --dir or below
// one; it returns the resolved path.
func (h *webHost) allowedDir(dir string) (string, bool) {
	if dir == "" {
		return h.cfg.dirs[0], true
	}
	if !filepath.IsAbs(dir) {
		return "", false
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(dir))
	if err != nil {
		return "", false
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", false
	}
	for _, d := range h.cfg.dirs {
		if rel, err := filepath.Rel(d, real); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return real, true
		}
	}
	return "", false
}

// webStart is the body of POST /api/web/sessions.
type webStart struct {
	Mode           string `json:"mode"`
	Cwd            string `json:"cwd"`
	SessionID      string `json:"session_id"`
	Model          string `json:"model"`
	PermissionMode string `json:"permission_mode"`
}

// create is POST /api/web/sessions: a new web session.
func (h *webHost) create(w http.ResponseWriter, r *http.Request) {
	if !h.authorized(w, r) {
		return
	}
	body, ok := webBody(w, r, 64<<10)
	if !ok {
		return
	}
	var req webStart
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(&req); err != nil {
		webError(w, http.StatusBadRequest, "invalid_request", "the body is not a session request: "+err.Error())
		return
	}
	cwd, ok := h.allowedDir(req.Cwd)
	if !ok {
		webError(w, http.StatusForbidden, "dir_not_allowed", fmt.Sprintf("%q is not a folder this server lets sessions run in (--dir)", req.Cwd))
		return
	}
	if req.Model != "" && !mapping.ValidModelName(req.Model) {
		// The rule of model_change: the name goes to the CLI's argv.
		webError(w, http.StatusBadRequest, "invalid_value", "model must be "+mapping.ModelNameRule)
		return
	}
	opts := h.cfg.base.Options
	opts.Extra = slices.Clone(opts.Extra)
	opts.Model = cmp.Or(req.Model, opts.Model)
	opts.PermissionMode = cmp.Or(req.PermissionMode, opts.PermissionMode)
	if req.PermissionMode == "bypassPermissions" {
		webError(w, http.StatusBadRequest, "invalid_value", "permission_mode bypassPermissions is refused by the web UI: the CLI's prompts keep a session's file access to what its user allows")
		return
	}
	configDir := h.configDir(cwd)
	history := "" // the session file whose conversation the page is shown first
	needFile := func() bool {
		if !mapping.ValidSessionID(req.SessionID) {
			webError(w, http.StatusBadRequest, "invalid_request", "session_id must be a session id (a UUID)")
			return false
		}
		history = clifiles.SessionFile(configDir, cwd, req.SessionID)
		if history == "" || !clifiles.Resumable(history) {
			webError(w, http.StatusNotFound, "session_not_found", "no conversation "+req.SessionID+" in "+cwd)
			return false
		}
		return true
	}
	switch req.Mode {
	case "new", "":
		req.Mode = "new"
		opts.SessionID = uuid.NewString()
	case "resume":
		if !needFile() {
			return
		}
		opts.Resume = req.SessionID
	case "fork":
		if !needFile() {
			return
		}
		opts.Resume, opts.ForkSession, opts.SessionID = req.SessionID, true, uuid.NewString()
	case "continue":
		// The CLI continues the newest session of the folder.
		fs, _ := clifiles.List(configDir, cwd)
		if i := slices.IndexFunc(fs, func(f clifiles.Session) bool { return clifiles.Resumable(f.Path) }); i >= 0 {
			history = fs[i].Path
		} else {
			webError(w, http.StatusNotFound, "session_not_found", "no conversation to continue in "+cwd)
			return
		}
		opts.Continue = true
	default:
		webError(w, http.StatusBadRequest, "invalid_request", "mode must be new, resume, continue or fork")
		return
	}
	if err := opts.Validate(); err != nil {
		webError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	s, status, code, msg := h.start(req.Mode, cwd, opts, history)
	if s == nil {
		webError(w, status, code, msg)
		return
	}
	b, _ := json.Marshal(s.json())
	writeJSON(w, http.StatusCreated, b)
}

// start runs a session's ipc core on a pipe, after the conversation of
// the session file history (if any) has been put into its log. On failure
// it returns the HTTP status and the error's code and message.
func (h *webHost) start(mode, cwd string, opts session.Options, history string) (*webSession, int, string, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closing {
		return nil, http.StatusServiceUnavailable, "shutting_down", "the server is shutting down"
	}
	live := 0
	for _, s := range h.order {
		if !s.over.Load() {
			live++
		}
	}
	if live >= h.cfg.max {
		return nil, http.StatusTooManyRequests, "too_many_sessions", fmt.Sprintf("%d sessions are open (--max-web-sessions); end one first", live)
	}
	h.prune()
	events, err := control.OpenEventLog(control.EventLogConfig{Retain: h.cfg.retain, RetainBytes: h.cfg.retainBytes, Logger: h.log})
	if err != nil {
		return nil, http.StatusInternalServerError, "internal_error", err.Error()
	}
	id := strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	log := h.log.With("web_session", id)
	set := h.cfg.base
	set.Options = opts
	set.Child = h.cfg.child(cwd)
	if h.cfg.grace != 0 {
		set.Child.Grace = h.cfg.grace
	}
	if h.cfg.termGrace != 0 {
		set.Child.TermGrace = h.cfg.termGrace
	}
	set.Logger, set.Child.Logger = log, log
	pr, pw := io.Pipe()
	s := &webSession{id: id, cwd: cwd, mode: mode, created: time.Now().UTC().Truncate(time.Second), events: events, in: pw, ended: make(chan struct{})}
	if opts.SessionID != "" && !opts.Continue {
		s.sid.Store(&opts.SessionID)
	} else if opts.Resume != "" {
		s.sid.Store(&opts.Resume)
	}
	h.sessions[id] = s
	h.order = append(h.order, s)
	if !slices.Contains(h.cwds, cwd) {
		h.cwds = append(h.cwds, cwd)
	}
	go func() {
		if history != "" {
			if n, err := webHistory(context.Background(), history, events); err != nil {
				log.Warn("reading the session's history", "file", history, "lines", n, "err", err)
			}
		}
		d := &ipcdialect.IPC{Settings: set, EchoInput: true}
		out := &webOut{s: s}
		s.code, s.err = d.Run(context.Background(), pr, out, nil)
		pr.Close()
		out.flush()
		s.over.Store(true)
		s.appendEnded()
		events.Close()
		close(s.ended)
		h.mu.Lock()
		h.prune() // at most --max-web-sessions ended ones, from now on
		h.mu.Unlock()
		// The session's child, loop and buffers are garbage now, and may
		// have been large.
		releaseMemory()
		log.Info("web session ended", "code", s.code, "err", s.err)
	}()
	log.Info("web session started", "mode", mode, "cwd", cwd, "model", opts.Model, "permission_mode", opts.PermissionMode)
	return s, 0, "", ""
}

// prune forgets the oldest ended sessions, their logs with them, so that
// at most --max-web-sessions ended ones are kept. It runs whenever a
// session ends (and before one starts). The caller holds mu.
func (h *webHost) prune() {
	ended := 0
	for _, s := range h.order {
		if s.over.Load() {
			ended++
		}
	}
	h.order = slices.DeleteFunc(h.order, func(s *webSession) bool {
		if ended <= h.cfg.max || !s.over.Load() {
			return false
		}
		ended--
		delete(h.sessions, s.id)
		return true
	})
}

// appendEnded logs the session_ended line.
func (s *webSession) appendEnded() {
	o := jsonw.NewObj(nil).Str("type", "session_ended").Int("ipc_version", 2).Int("exit_code", int64(s.code))
	if s.err != nil {
		o.Str("error", s.err.Error())
	}
	b := o.End()
	s.events.Append(func(uint64) []byte { return b })
}

// line logs one line of the session's output, noting the session id. A
// turn that brought webReleaseAfter bytes of lines or more gives the
// memory they passed through back before its end is logged.
func (s *webSession) line(b []byte) {
	s.took += int64(len(b))
	switch gjson.GetBytes(b, "type").Str {
	case "session_init":
		if sid := gjson.GetBytes(b, "session_id").Str; sid != "" {
			s.sid.Store(&sid)
		}
	case "turn_complete", "turn_cancelled":
		if s.took >= webReleaseAfter {
			s.took = 0
			releaseMemory()
		}
	}
	s.events.Append(func(uint64) []byte { return b })
}

// webReleaseAfter is how many bytes of lines a turn brings before its end
// gives memory back (releaseMemory).
const webReleaseAfter = 8 << 20

// releasing lets one releaseMemory run at a time.
var releasing sync.Mutex

// releaseMemory collects the garbage now and gives the memory it frees
// back to the system, at once rather than when the runtime would (an idle
// server may run no collection for minutes): after a turn of large lines,
// and when a session ends. A line of the CLI is held whole and copied on
// its way to the stream, so one 10 MiB answer leaves several times that
// in the heap, most of it garbage once the turn ends. A release already
// under way stands for another.
func releaseMemory() {
	if !releasing.TryLock() {
		return
	}
	defer releasing.Unlock()
	debug.FreeOSMemory()
}

// webOut cuts the session's output into lines for its log. The session's
// UI writer is its only caller. Each line is copied once, into memory of
// its own size, straight from what the writer hands over (which it
// reuses); only a line cut between two writes waits in buf, which is let
// go once it is used.
type webOut struct {
	s   *webSession
	buf []byte // the start of a line whose end has not come yet
}

func (o *webOut) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			o.buf = append(o.buf, p...)
			break
		}
		var line []byte
		if len(o.buf) > 0 {
			line = make([]byte, len(o.buf)+i)
			copy(line[copy(line, o.buf):], p[:i])
			o.buf = nil
		} else if i > 0 {
			line = bytes.Clone(p[:i])
		}
		if len(line) > 0 {
			o.s.line(line)
		}
		p = p[i+1:]
	}
	return n, nil
}

// flush logs a last line that had no newline.
func (o *webOut) flush() {
	if len(bytes.TrimSpace(o.buf)) > 0 {
		o.s.line(o.buf)
	}
	o.buf = nil
}

// session finds {id}: 404 when there is none.
func (h *webHost) session(w http.ResponseWriter, r *http.Request) *webSession {
	if !h.authorized(w, r) {
		return nil
	}
	h.mu.Lock()
	s := h.sessions[r.PathValue("id")]
	h.mu.Unlock()
	if s == nil {
		webError(w, http.StatusNotFound, "not_found", "no web session "+strconv.Quote(r.PathValue("id")))
	}
	return s
}

// message is POST …/messages: one ipc inbound message for the session.
func (h *webHost) message(w http.ResponseWriter, r *http.Request) {
	s := h.session(w, r)
	if s == nil {
		return
	}
	body, ok := webBody(w, r, h.auth.maxBody)
	if !ok {
		return
	}
	var line bytes.Buffer
	if err := json.Compact(&line, body); err != nil || !gjson.ParseBytes(body).IsObject() {
		webError(w, http.StatusBadRequest, "invalid_json", "the body must be one JSON object (an ipc message, docs/protocol/ipc.md)")
		return
	}
	msg := line.Bytes()
	// The session's own check (a member twice would be read as one
	// message here and echoed as another to the page), answered at once.
	if _, e := ipc.CheckLine(msg); e != nil {
		webError(w, http.StatusBadRequest, string(e.Code), e.Message)
		return
	}
	typ := gjson.GetBytes(msg, "type").Str
	if typ == "permission_mode" && gjson.GetBytes(msg, "mode").Str == "bypassPermissions" {
		webError(w, http.StatusBadRequest, "invalid_value", "permission_mode bypassPermissions is refused by the web UI: the CLI's prompts keep a session's file access to what its user allows")
		return
	}
	if typ == "user_message" {
		if t := gjson.GetBytes(msg, "text").Str; t != "" {
			t = clip(t, webTitleRunes)
			s.title.Store(&t)
		}
	}
	s.inMu.Lock()
	defer s.inMu.Unlock()
	ended := s.over.Load()
	if !ended {
		_, err := s.in.Write(append(msg, '\n'))
		ended = err != nil
	}
	if ended && typ == "query" {
		// A question about a session that has ended (the page asks some
		// on its own, at a turn's end, which may meet the session's end)
		// has that for its answer: nothing to ask, no query_result.
		writeJSON(w, http.StatusOK, jsonw.NewObj(nil).Bool("ended", true).End())
		return
	}
	if ended {
		webError(w, http.StatusConflict, "session_ended", "the session has ended")
		return
	}
	writeJSON(w, http.StatusAccepted, jsonw.NewObj(nil).Int("seq", int64(s.events.Latest())).End())
}

// end is DELETE /api/web/sessions/{id}: the session's input is closed.
func (h *webHost) end(w http.ResponseWriter, r *http.Request) {
	s := h.session(w, r)
	if s == nil {
		return
	}
	s.inMu.Lock()
	s.in.Close()
	s.inMu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// events is GET …/events: the session's lines after the cursor, then the
// live ones, as server-sent events. Each write is bounded (a reader that
// does not keep up has its stream ended and resumes from its
// Last-Event-ID); the stream ends with the session.
func (h *webHost) events(w http.ResponseWriter, r *http.Request) {
	s := h.session(w, r)
	if s == nil {
		return
	}
	// Without a cursor: every line kept, from the first.
	cursor, _, err := streamCursor(r)
	if err != nil {
		webError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	out := startStream(w, h.auth.writeTimeout)
	if out == nil {
		return
	}
	defer out.deadline()

	keep := time.NewTimer(h.auth.keepAlive)
	defer keep.Stop()
	var lines [][]byte
	batch := make([]sseLine, 0, webBatch)
	for {
		changed := s.events.Changed()
		var stale bool
		var after uint64
		lines, stale, after = s.events.After(cursor, webBatch, lines[:0])
		batch = batch[:0]
		if stale {
			stale := jsonw.NewObj(nil).Str("type", "stream_stale").Int("ipc_version", 2).Int("resume_after", int64(after)).End()
			batch = append(batch, sseLine{0, stale})
		}
		for i, l := range lines {
			batch = append(batch, sseLine{after + 1 + uint64(i), l})
		}
		cursor = after + uint64(len(lines))
		clear(lines)
		if len(batch) > 0 {
			if err := out.lines(batch); err != nil {
				h.auth.streamEnded("web:"+s.id, err)
				return
			}
			keep.Reset(h.auth.keepAlive)
			if len(lines) == webBatch {
				continue
			}
		}
		if len(lines) == 0 && s.isEnded() && cursor >= s.events.Latest() {
			return
		}
		select {
		case <-changed:
		case <-keep.C:
			if err := out.comment("keep-alive"); err != nil {
				h.auth.streamEnded("web:"+s.id, err)
				return
			}
			keep.Reset(h.auth.keepAlive)
		case <-s.ended:
		case <-r.Context().Done():
			return
		case <-h.done:
			return
		}
	}
}

// stopStreams ends the streams.
func (h *webHost) stopStreams() { h.doneOnce.Do(func() { close(h.done) }) }

// shutdown ends the streams and every session's input, and waits for the
// sessions to end (their CLIs finish and exit).
func (h *webHost) shutdown() {
	h.stopStreams()
	h.mu.Lock()
	h.closing = true
	all := slices.Clone(h.order)
	h.mu.Unlock()
	for _, s := range all {
		s.inMu.Lock()
		s.in.Close()
		s.inMu.Unlock()
	}
	for _, s := range all {
		<-s.ended
	}
}

// webHistory puts the conversation of the session file at path into a
// session's log before its CLI starts, so that a resumed, continued or
// forked session shows what came before: each prompt as a user_message
// echo, each assistant entry and tool result through the ipc translator,
// as the live session would have shown them, every line with
// "history": true. Subagents' entries, meta entries and compaction
// summaries are left out. Each line of the file is cleaned as every line
// of a stream is (sseData) before it is read. It returns how many lines
// it added.
func webHistory(ctx context.Context, path string, events *control.EventLog) (int, error) {
	tr := ipc.New(ipc.Options{})
	var out [][]byte
	n := 0
	add := func(l []byte) {
		events.Append(func(uint64) []byte { return l })
		n++
	}
	err := clifiles.Lines(ctx, path, func(line []byte) {
		// The file is read leniently: a string may hold a raw control
		// character or bytes that are not UTF-8, which the lines made of
		// it would carry on. Cleaned first, it is the JSON the CLI writes.
		line = sseData(line)
		e := gjson.ParseBytes(line)
		typ := e.Get("type").Str
		if typ != "user" && typ != "assistant" || mapping.SideEntry(e) {
			return
		}
		if text, ok := mapping.PromptText(e.Get("message.content")); ok && typ == "user" {
			add(jsonw.NewObj(nil).Str("type", "user_message").Int("ipc_version", 2).Bool("echo", true).Bool("history", true).Str("text", text).End())
			return
		}
		out = tr.FromCLI(mapping.Route(line), out[:0])
		for _, l := range out {
			l, _ = sjson.SetBytes(l, "history", true)
			add(l)
		}
	})
	return n, err
}
