package serve

// ccbridge serve: an HTTP server hosting several lane-004 workers, each a
// --ui control session core with its own CLI child, its own loop, its own
// state (docs/protocol/worker.md). This file is the command: its flags,
// its workers' lifecycle and its shutdown; serve_http.go is the HTTP API.

import (
	"bufio"
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/adapter/control"
	"github.com/ccbridge/ccbridge/adapter/worker"
	"github.com/ccbridge/ccbridge/internal/cliflags"
	"github.com/ccbridge/ccbridge/internal/version"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/session"
)

// Launcher is what main hands to ccbridge serve: it finds the CLI
// (claude: --claude, else $CCBRIDGE_CLAUDE or claude on PATH) and, when
// fakeModel is set, starts the fake Messages API once for every worker.
// child returns the session.Config of a CLI whose working directory is
// dir; stop ends what the launcher started. On failure code is the exit
// code ccbridge exits with.
type Launcher func(claude, fakeModel string, log *slog.Logger) (child func(dir string) session.Config, stop func(), code int, err error)

// WorkerSpec is one worker of ccbridge serve: --worker ID=DIR, or an
// entry of --workers FILE.
type WorkerSpec struct {
	ID  string `json:"id"`
	Dir string `json:"dir"`
	// Model and PermissionMode, when set, win over serve's --model and
	// --permission-mode.
	Model          string `json:"model,omitempty"`
	PermissionMode string `json:"permission_mode,omitempty"`
}

// serveConfig is what ccbridge serve takes from its flags.
type serveConfig struct {
	listen      string
	workers     []WorkerSpec
	workersFile string
	tokenFile   string
	tokens      *serveTokens // nil: no --token-file
	maxBody     int64
	requestWait time.Duration
	stateDir    string
	retain      int
	// bus: --bus, a stateless gateway to the workers on NATS JetStream
	// (serve_bus.go).
	bus control.BusConfig
	// The flags ccbridge takes too (--claude, --fake-model, --model,
	// --log-level, the timeouts and the grace periods).
	cliflags.Common
	extra []string

	// HTTPS: --tls-cert and --tls-key, loaded into tls (nil: plain
	// HTTP); --insecure-http: plain HTTP beyond loopback, for a
	// TLS-terminating reverse proxy in front.
	tlsCert, tlsKey string
	tls             *tls.Config
	insecureHTTP    bool

	// The web UI (serve_web.go).
	web         bool
	dirs        []string // --dir, absolute with links resolved
	webRetain   int
	webBytes    int64
	webSessions int
}

// The defaults of serve's flags.
const (
	serveDefaultListen  = "127.0.0.1:8787"
	serveDefaultMaxBody = 8 << 20
	serveDefaultWait    = 10 * time.Second
)

// Main runs `ccbridge serve` with args (those after "serve") until
// ctx is done (main cancels it on SIGINT and SIGTERM), and returns the
// exit code: 0 after a clean shutdown, 2 for a flag or configuration
// error, 1 when serving failed.
func Main(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer, launch Launcher) int {
	cfg, err := parseServe(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "ccbridge serve: %v\n", err)
		return 2
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	var child func(dir string) session.Config
	if !cfg.bus.On() || len(cfg.workers) > 0 {
		var stop func()
		var code int
		if child, stop, code, err = launch(cfg.Claude, cfg.FakeModel, log); err != nil {
			fmt.Fprintf(stderr, "ccbridge serve: %v\n", err)
			return code
		}
		defer stop()
	}
	var code int
	if cfg.bus.On() {
		code, err = serveGateway(ctx, cfg, child, log)
	} else {
		code, err = serveWorkers(ctx, cfg, child, log)
	}
	if err != nil {
		fmt.Fprintf(stderr, "ccbridge serve: %v\n", err)
	}
	return code
}

// parseServe reads serve's flags and checks them: the workers, the
// listen address against the token file, the token file itself.
func parseServe(args []string, getenv func(string) string, stderr io.Writer) (serveConfig, error) {
	var cfg serveConfig
	if err := cfg.Env(getenv); err != nil {
		return cfg, err
	}
	var err error
	fs := flag.NewFlagSet("ccbridge serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.listen, "listen", serveDefaultListen, "address to serve HTTP on; one that is not loopback needs --token-file, and --tls-cert or --insecure-http")
	fs.StringVar(&cfg.tlsCert, "tls-cert", "", "serve HTTPS only, with this certificate (PEM; the server's first, then its chain); needs --tls-key")
	fs.StringVar(&cfg.tlsKey, "tls-key", "", "the private key (PEM) of --tls-cert")
	fs.BoolVar(&cfg.insecureHTTP, "insecure-http", false, "serve plain HTTP beyond loopback: for a reverse proxy in front that speaks HTTPS to the clients")
	fs.Func("worker", "a worker: ID=DIR, its id ([A-Za-z0-9._-], 1 to 64) and the CLI's working directory (repeatable)", func(v string) error {
		id, dir, ok := strings.Cut(v, "=")
		if !ok {
			return errors.New("want ID=DIR")
		}
		cfg.workers = append(cfg.workers, WorkerSpec{ID: id, Dir: dir})
		return nil
	})
	fs.StringVar(&cfg.workersFile, "workers", "", `workers from a JSON file: [{"id":"a","dir":"/x","model":"sonnet","permission_mode":"acceptEdits"}, …]; a relative dir is taken from the file's folder`)
	fs.StringVar(&cfg.tokenFile, "token-file", "", "bearer tokens, one a line: TOKEN (every worker) or TOKEN ID[,ID…] (those workers); # comments. Mode 0600: no group or world access")
	fs.Int64Var(&cfg.maxBody, "max-body", serveDefaultMaxBody, "largest request body in bytes; larger ones get 413")
	fs.DurationVar(&cfg.requestWait, "request-wait", serveDefaultWait, "wait this long for a request's receipt, then answer 202 (the receipt comes on the stream)")
	fs.StringVar(&cfg.stateDir, "state-dir", "", "keep each worker's control state (seq, receipts, events) under DIR/workers/ID, across restarts")
	fs.IntVar(&cfg.retain, "retain-events", control.DefaultRetain, "how many of each worker's events are kept for replay")
	control.BusFlags(fs, &cfg.bus)
	cfg.Add(fs, "every session's CLI", ", unless the worker names its own")
	fs.BoolVar(&cfg.web, "web", true, "serve the web UI at / and its sessions under /api/web (docs/protocol/web.md)")
	fs.Func("dir", "a folder a web session may run in, with the folders below it (repeatable; default: the current folder)", func(v string) error {
		cfg.dirs = append(cfg.dirs, v)
		return nil
	})
	fs.IntVar(&cfg.webRetain, "web-retain", webDefaultRetain, "how many lines of each web session's stream are kept for replay")
	fs.Int64Var(&cfg.webBytes, "web-retain-bytes", webDefaultRetainBytes, "how many bytes of lines each web session's stream keeps for replay, at most (the newest line is kept whatever its size)")
	fs.IntVar(&cfg.webSessions, "max-web-sessions", webDefaultSessions, "web sessions open at once, at most")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			serveUsage(stderr, fs)
			return cfg, err
		}
		return cfg, fmt.Errorf("%w (see ccbridge serve --help)", err)
	}
	if err := cfg.Parsed(); err != nil {
		return cfg, err
	}
	cfg.extra = fs.Args()
	switch {
	case cfg.maxBody <= 0:
		return cfg, errors.New("--max-body must be positive")
	case cfg.requestWait <= 0:
		return cfg, errors.New("--request-wait must be positive")
	case cfg.retain <= 0:
		return cfg, errors.New("--retain-events must be positive")
	case cfg.webRetain <= 0:
		return cfg, errors.New("--web-retain must be positive")
	case cfg.webBytes <= 0:
		return cfg, errors.New("--web-retain-bytes must be positive")
	case cfg.webSessions <= 0:
		return cfg, errors.New("--max-web-sessions must be positive")
	}
	if cfg.Model != "" && !mapping.ValidModelName(cfg.Model) {
		return cfg, fmt.Errorf("--model %q: a model name is %s", cfg.Model, mapping.ModelNameRule)
	}
	if cfg.workersFile != "" {
		more, err := readWorkersFile(cfg.workersFile)
		if err != nil {
			return cfg, fmt.Errorf("--workers: %w", err)
		}
		cfg.workers = append(cfg.workers, more...)
	}
	if err := cfg.bus.Check(); err != nil {
		return cfg, err
	}
	if cfg.bus.On() {
		// A gateway: the workers are the bus's, the web UI is not served.
		for _, w := range cfg.workers {
			if !control.BusWorkerID(w.ID) {
				return cfg, fmt.Errorf("worker %q: %w", w.ID, control.ErrBusWorkerID)
			}
		}
		if len(cfg.workers) > 0 {
			if err := checkWorkers(cfg.workers); err != nil {
				return cfg, err
			}
		}
		switch {
		case len(cfg.dirs) > 0:
			return cfg, errors.New("--dir is for the web UI, which a --bus gateway does not serve")
		case cfg.stateDir != "":
			return cfg, errors.New("--state-dir: a --bus gateway keeps no state; the bus does")
		}
		cfg.web = false
	} else if len(cfg.workers) > 0 || !cfg.web {
		if err := checkWorkers(cfg.workers); err != nil {
			return cfg, err
		}
	}
	if cfg.web {
		if cfg.dirs, err = webDirs(cfg.dirs); err != nil {
			return cfg, err
		}
	} else if len(cfg.dirs) > 0 {
		return cfg, errors.New("--dir is for the web UI, which --web=false turns off")
	}
	switch {
	case (cfg.tlsCert == "") != (cfg.tlsKey == ""):
		return cfg, errors.New("--tls-cert and --tls-key go together: give both or neither")
	case cfg.tlsCert != "" && cfg.insecureHTTP:
		return cfg, errors.New("--insecure-http is plain HTTP for a proxy that does TLS in front; with --tls-cert serve speaks HTTPS itself: give one or the other")
	}
	if cfg.tokenFile != "" {
		var ids map[string]bool // nil: any worker id (a gateway's are the bus's)
		if !cfg.bus.On() {
			ids = make(map[string]bool, len(cfg.workers))
		}
		for _, w := range cfg.workers {
			ids[w.ID] = true
		}
		if cfg.tokens, err = loadTokens(cfg.tokenFile, ids); err != nil {
			return cfg, fmt.Errorf("--token-file: %w", err)
		}
	} else if !loopback(cfg.listen) {
		return cfg, fmt.Errorf("--listen %s is not a loopback address: give --token-file, or listen on 127.0.0.1", cfg.listen)
	}
	if cfg.tlsCert != "" {
		if cfg.tls, err = loadTLS(cfg.tlsCert, cfg.tlsKey); err != nil {
			return cfg, err
		}
	} else if !cfg.insecureHTTP && !loopback(cfg.listen) {
		return cfg, fmt.Errorf("--listen %s is not a loopback address: the tokens and the conversations would cross the network in clear. "+
			"Give --tls-cert and --tls-key, or --insecure-http when a reverse proxy in front speaks HTTPS to the clients", cfg.listen)
	}
	return cfg, nil
}

// loadTLS reads --tls-cert and --tls-key once, at start (a renewed
// certificate takes a restart): HTTPS with TLS 1.2 at least.
func loadTLS(certFile, keyFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert %s, --tls-key %s: %w", certFile, keyFile, err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}, nil
}

func serveUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, `ccbridge %s serve: an HTTP server with a web UI for Claude Code sessions
(docs/protocol/web.md), each an ipc session with its own Claude Code CLI, and
lane-004 workers (docs/protocol/worker.md), each a --ui control session with its own CLI.

  ccbridge serve [--dir DIR …] [--worker ID=DIR …] [flags] [-- extra CLI arguments]
  ccbridge serve --bus URL[,URL…] [--worker ID=DIR …] [flags]
                                a gateway to the workers on NATS JetStream, running
                                its own --worker entries there (docs/protocol/bus.md)

The web UI: open http://127.0.0.1:8787/ (the page, and /api/web/… for its sessions);
with --tls-cert and --tls-key serve answers HTTPS only (https://…).

Worker endpoints (with --token-file: Authorization: Bearer TOKEN):
  POST /api/runtime/codex/workers/{workerId}/requests   a request; its receipt (or 202 after --request-wait)
  GET  /api/runtime/codex/workers/{workerId}/stream     the worker's events (server-sent events;
                                                        Last-Event-ID, or ?after=N, else live)
  GET  /api/runtime/codex/workers/{workerId}            the worker's status and seqs
  GET  /api/runtime/codex/workers                       every worker's

Flags:
`, version.String())
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// readWorkersFile reads --workers FILE; a relative dir is taken from the
// file's folder.
func readWorkersFile(path string) ([]WorkerSpec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.DisallowUnknownFields()
	var ws []WorkerSpec
	if err := d.Decode(&ws); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if d.More() {
		return nil, fmt.Errorf("%s: more than one JSON value", path)
	}
	for i := range ws {
		if ws[i].Dir != "" && !filepath.IsAbs(ws[i].Dir) {
			ws[i].Dir = filepath.Join(filepath.Dir(path), ws[i].Dir)
		}
	}
	return ws, nil
}

// checkWorkers checks the ids (valid, unique) and makes each dir an
// absolute path to a folder.
func checkWorkers(ws []WorkerSpec) error {
	if len(ws) == 0 {
		return errors.New("no workers: give --worker ID=DIR (repeatable) or --workers FILE")
	}
	seen := make(map[string]bool, len(ws))
	for i := range ws {
		w := &ws[i]
		if !validWorkerID(w.ID) {
			return fmt.Errorf("worker id %q: want 1 to 64 of A-Z a-z 0-9 . _ -", w.ID)
		}
		if seen[w.ID] {
			return fmt.Errorf("worker id %q given twice", w.ID)
		}
		seen[w.ID] = true
		if w.Dir == "" {
			return fmt.Errorf("worker %s: no dir", w.ID)
		}
		if w.Model != "" && !mapping.ValidModelName(w.Model) {
			return fmt.Errorf("worker %s: model %q: a model name is %s", w.ID, w.Model, mapping.ModelNameRule)
		}
		dir, err := filepath.Abs(w.Dir)
		if err != nil {
			return fmt.Errorf("worker %s: %w", w.ID, err)
		}
		fi, err := os.Stat(dir)
		if err != nil {
			return fmt.Errorf("worker %s: %w", w.ID, err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("worker %s: %s is not a folder", w.ID, dir)
		}
		w.Dir = dir
	}
	return nil
}

// webDirs resolves --dir (default: the current folder): each an
// existing folder, absolute, with its symbolic links resolved, as the CLI
// names its working directory.
func webDirs(dirs []string) ([]string, error) {
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			return nil, fmt.Errorf("--dir %s: %w", d, err)
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("--dir %s: not a folder", d)
		}
		if !slices.Contains(out, abs) {
			out = append(out, abs)
		}
	}
	return out, nil
}

// validWorkerID reports whether id is [A-Za-z0-9._-]{1,64}.
func validWorkerID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// loopback reports whether addr (host:port) listens on loopback only: an
// IP address that is loopback, or "localhost". An empty host is every
// interface.
func loopback(addr string) bool {
	_, _, err := net.SplitHostPort(addr)
	return err == nil && loopbackHost(addr)
}

// serveTokens are --token-file's tokens, kept as their SHA-256 so that
// every comparison is of 32 bytes, in constant time.
type serveTokens struct {
	list []serveToken
}

// serveToken is one token: the workers it may drive, nil for every one.
type serveToken struct {
	sum [sha256.Size]byte
	ids map[string]bool
}

// allows reports whether the token may drive worker id.
func (t *serveToken) allows(id string) bool { return t.ids == nil || t.ids[id] }

// loadTokens reads a token file: lines TOKEN or TOKEN ID[,ID…], blank
// lines and # comments skipped. The file must give no access to group or
// world, and every id must be a worker's. A token on several lines may
// drive the workers of all of them.
func loadTokens(path string, workers map[string]bool) (*serveTokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s has mode %#o: it must give group and world no access (chmod 600 %s)", path, fi.Mode().Perm(), path)
	}
	t := &serveTokens{}
	index := map[[sha256.Size]byte]int{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) > 2 {
			return nil, fmt.Errorf("%s:%d: want TOKEN or TOKEN ID[,ID…]", path, n)
		}
		var ids map[string]bool
		if len(fields) == 2 {
			ids = map[string]bool{}
			for _, id := range strings.Split(fields[1], ",") {
				if workers == nil && !control.BusWorkerID(id) || workers != nil && !workers[id] {
					return nil, fmt.Errorf("%s:%d: no worker %q", path, n, id)
				}
				ids[id] = true
			}
		}
		sum := sha256.Sum256([]byte(fields[0]))
		i, seen := index[sum]
		switch {
		case !seen:
			index[sum] = len(t.list)
			t.list = append(t.list, serveToken{sum: sum, ids: ids})
		case t.list[i].ids == nil:
		case ids == nil:
			t.list[i].ids = nil
		default:
			for id := range ids {
				t.list[i].ids[id] = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(t.list) == 0 {
		return nil, fmt.Errorf("%s holds no token", path)
	}
	return t, nil
}

// hostedWorker is one worker's session: the control dialect running on
// an in-process pipe.
type hostedWorker struct {
	spec  WorkerSpec
	stdin *io.PipeWriter // the session's UI input: closing it ends the session
	done  chan struct{}  // closed once Run returned
	code  int
	err   error
}

// serveWorkers starts the workers, serves the HTTP API until ctx is done,
// then shuts down: no new connections, the streams ended, each worker's
// input closed (its CLI finishes and exits), and waits for all.
func serveWorkers(ctx context.Context, cfg serveConfig, child func(dir string) session.Config, log *slog.Logger) (int, error) {
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return 1, fmt.Errorf("--listen: %w", err)
	}
	defer ln.Close()

	base := baseSettings(cfg, log)
	hosted, api, err := startWorkers(cfg, base, child, log)
	if err != nil {
		return 2, err
	}
	stopAll := func() { stopWorkers(hosted) }

	srv := newServeAPI(api, cfg.tokens, log)
	srv.tlsProxy = cfg.insecureHTTP
	srv.maxBody = cfg.maxBody
	srv.requestWait = cfg.requestWait
	if cfg.web {
		web := base
		web.Control = control.Config{}
		web.Options.Extra = slices.Clone(cfg.extra)
		srv.web = newWebHost(webConfig{
			dirs: cfg.dirs, retain: cfg.webRetain, retainBytes: cfg.webBytes, max: cfg.webSessions, base: web, child: child,
			grace: cfg.Grace, termGrace: cfg.TermGrace, fakeModel: cfg.FakeModel != "",
		}, srv, log)
	}
	hs, served := httpServe(ln, srv.handler(), cfg.tls, log,
		"workers", len(api), "web", cfg.web, "auth", cfg.tokens != nil, "tls", cfg.tls != nil)
	code, serveErr := awaitServe(ctx, served, log)
	srv.shutdown()
	if srv.web != nil {
		srv.web.stopStreams()
	}
	stopHTTP(hs, cfg.requestWait+5*time.Second, log)
	stopAll()
	if srv.web != nil {
		srv.web.shutdown()
	}
	srv.wait()
	for _, h := range hosted {
		if h.err != nil {
			log.Warn("worker ended with an error", "worker", h.spec.ID, "code", h.code, "err", h.err)
		}
	}
	return code, serveErr
}

// baseSettings are the settings every worker (and the web UI's
// sessions) start from.
func baseSettings(cfg serveConfig, log *slog.Logger) adapter.Settings {
	return adapter.Settings{
		Options:          session.Options{Model: cfg.Model, PermissionMode: cfg.PermissionMode, Extra: cfg.extra},
		InterruptTimeout: cfg.InterruptTimeout,
		ControlTimeout:   cfg.ControlTimeout,
		Control:          control.Config{RetainEvents: cfg.retain, Worker004: true, Bus: cfg.bus},
		Logger:           log,
	}
}

// startWorkers starts cfg's workers, each with its own CLI in its
// folder (and on the bus with --bus), and waits until each serves lane
// 004; on an error the ones started are stopped.
func startWorkers(cfg serveConfig, base adapter.Settings, child func(dir string) session.Config, log *slog.Logger) ([]*hostedWorker, []*serveWorker, error) {
	var hosted []*hostedWorker
	var api []*serveWorker
	for _, spec := range cfg.workers {
		s := base
		s.Child = child(spec.Dir)
		if cfg.Grace != 0 {
			s.Child.Grace = cfg.Grace
		}
		if cfg.TermGrace != 0 {
			s.Child.TermGrace = cfg.TermGrace
		}
		s.Options.Model = cmp.Or(spec.Model, cfg.Model)
		s.Options.PermissionMode = cmp.Or(spec.PermissionMode, cfg.PermissionMode)
		s.Options.Extra = slices.Clone(cfg.extra)
		s.Control.WorkerID = spec.ID
		if cfg.stateDir != "" {
			s.Control.StateDir = filepath.Join(cfg.stateDir, "workers", spec.ID)
		}
		h, w, err := startWorker(s, spec, log.With("worker", spec.ID))
		if err != nil {
			stopWorkers(hosted)
			return nil, nil, fmt.Errorf("worker %s: %w", spec.ID, err)
		}
		hosted = append(hosted, h)
		api = append(api, w)
	}
	return hosted, api, nil
}

// stopWorkers closes each worker's input (its CLI finishes and exits)
// and waits for all.
func stopWorkers(hosted []*hostedWorker) {
	for _, h := range hosted {
		h.stdin.Close()
	}
	for _, h := range hosted {
		<-h.done
	}
}

// startWorker runs one worker's control session on an in-process pipe
// and waits until its lane 004 is open (ControlUI.Hook), or its Run
// has ended.
func startWorker(s adapter.Settings, spec WorkerSpec, log *slog.Logger) (*hostedWorker, *serveWorker, error) {
	s.Logger = log
	s.Child.Logger = log
	hooked := make(chan worker.Lane004, 1)
	pr, pw := io.Pipe()
	h := &hostedWorker{spec: spec, stdin: pw, done: make(chan struct{})}
	ui := &worker.ControlUI{Settings: s, Hook: func(w worker.Lane004) { hooked <- w }}
	go func() {
		defer close(h.done)
		h.code, h.err = ui.Run(context.Background(), pr, io.Discard, nil)
		pr.Close()
		log.Info("worker session ended", "code", h.code, "err", h.err)
	}()
	select {
	case w := <-hooked:
		log.Info("worker started", "dir", spec.Dir, "model", s.Options.Model, "permission_mode", s.Options.PermissionMode)
		return h, &serveWorker{id: spec.ID, w: w, done: h.done}, nil
	case <-h.done:
		if h.err == nil {
			h.err = fmt.Errorf("the session ended at once (exit code %d)", h.code)
		}
		return nil, nil, h.err
	}
}
