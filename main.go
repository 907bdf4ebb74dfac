// Command ccbridge sits between a user interface and the Claude Code CLI,
// one CLI child process per session. Run it with the CLI's own arguments
// (drop-in mode), with --ui DIALECT (dialect mode), or as ccbridge serve
// (a web UI and lane-004 workers over HTTP); see the README.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/adapter/control"
	"github.com/ccbridge/ccbridge/adapter/stream"
	"github.com/ccbridge/ccbridge/fakemodel"
	"github.com/ccbridge/ccbridge/internal/cliflags"
	"github.com/ccbridge/ccbridge/internal/jsonw"
	"github.com/ccbridge/ccbridge/internal/version"
	"github.com/ccbridge/ccbridge/serve"
	"github.com/ccbridge/ccbridge/session"
)

func main() {
	// ccbridge re-run as the CLI's guardian (session.Guard) is that alone.
	if len(os.Args) > 1 && os.Args[1] == session.GuardianArg {
		os.Exit(session.RunGuardian(os.Args[2:]))
	}
	// ccbridge keeps little alive (about 1.5 MB while a turn streams),
	// but with Go's default GOGC=100 the heap grows to at least 4 MB of
	// mostly garbage before a collection: half the peak memory of an acp
	// session. At 50 a collection comes at half that; a GOGC in the
	// environment still wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
	// Only the real stdout carries protocol; anything a dependency prints
	// lands in the log instead.
	stdout := os.Stdout
	os.Stdout = os.Stderr
	os.Exit(run(os.Args[1:], os.Stdin, stdout, os.Stderr, os.Getenv))
}

// config is everything ccbridge takes from its flags and environment.
type config struct {
	ui string
	// The flags ccbridge serve takes too (--claude, --fake-model,
	// --model, --log-level, the timeouts and the grace periods).
	cliflags.Common
	cwd        string
	maxLine    int
	pipeSize   int // bytes; 0 keeps the system's pipe size
	demo       bool
	opts       session.Options
	dropInArgs []string
	maxCLILine int
	control    control.Config
	dialect    adapter.Dialect // the --ui dialect, its own flags parsed
	// login: run the CLI's interactive login instead of a session
	// (--login, what an ACP client's terminal auth method appends).
	login bool
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) > 0 && args[0] == "serve" {
		return runServe(args[1:], stderr, getenv)
	}
	if len(args) > 0 && args[0] == "version" {
		return runVersion(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "login" {
		return runLogin(getenv("CCBRIDGE_CLAUDE"), "", args[1:], stdin, stdout, stderr, getenv)
	}
	cfg, err := parseConfig(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "ccbridge: %v\n", err)
		return 2
	}
	if cfg.login {
		return runLogin(cfg.Claude, cfg.cwd, nil, stdin, stdout, stderr, getenv)
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	if f, ok := stdout.(*os.File); ok {
		session.GrowPipe(f, cfg.pipeSize)
	}

	needCLI := true
	if o, ok := cfg.dialect.(adapter.CLIOptional); ok {
		needCLI = o.RunsCLI(cfg.opts)
	}
	launch, stop, code, err := launcher(cfg.Claude, cfg.FakeModel, needCLI, session.Config{
		Grace:     cfg.Grace,
		TermGrace: cfg.TermGrace,
		PipeSize:  cmp.Or(cfg.pipeSize, -1),
	}, getenv, log)
	if err != nil {
		fmt.Fprintf(stderr, "ccbridge: %v\n", err)
		return code
	}
	defer stop()
	child := launch(cfg.cwd)

	if cfg.demo {
		child.Args, err = session.BuildArgs(stream.Args, cfg.opts)
		if err == nil {
			err = stream.Demo(context.Background(), child, stdout)
		}
		if err != nil {
			fmt.Fprintf(stderr, "ccbridge: demo: %v\n", err)
			return 1
		}
		return 0
	}
	err = cfg.dialect.Configure(adapter.DialectConfig{DropInArgs: cfg.dropInArgs, Settings: adapter.Settings{
		Child: child, Options: cfg.opts, MaxLine: cfg.maxLine, CLIMaxLine: cfg.maxCLILine,
		InterruptTimeout: cfg.InterruptTimeout, ControlTimeout: cfg.ControlTimeout, Control: cfg.control, Logger: log}})
	if err != nil {
		fmt.Fprintf(stderr, "ccbridge: %v\n", err)
		return 2
	}
	return runSession(cfg.dialect, stdin, stdout, stderr)
}

// launcher finds the CLI and, with fakeModel, starts the fake Messages
// API, for the dialects and for ccbridge serve alike. child returns base
// for a CLI whose working directory is dir ("" is ccbridge's), pointed at
// the fake when there is one; stop stops the fake. Without needCLI (a pty
// worker running another program) a CLI that cannot be found is no
// error. On failure code is the exit code.
func launcher(claude, fakeModel string, needCLI bool, base session.Config, getenv func(string) string, log *slog.Logger) (child func(dir string) session.Config, stop func(), code int, err error) {
	self, _ := os.Executable()
	path, err := session.FindCLI(claude, getenv, self)
	if err != nil && needCLI {
		return nil, nil, 127, err
	}
	base.Path = path
	base.Logger = log
	base.Guardian = self // nothing the CLI starts outlives ccbridge
	if fakeModel == "" {
		return func(dir string) session.Config {
			c := base
			c.Dir = dir
			return c
		}, func() {}, 0, nil
	}
	sc, err := fakemodel.Load(fakeModel)
	if err != nil {
		return nil, nil, 2, fmt.Errorf("--fake-model: %w", err)
	}
	// Nothing here reads the fake's request log: it keeps none.
	srv, err := fakemodel.StartWith(sc, log, fakemodel.Options{MaxLog: -1})
	if err != nil {
		return nil, nil, 1, fmt.Errorf("--fake-model: %w", err)
	}
	log.Info("fake model serving", "url", srv.URL(), "scenario", fakeModel)
	homes := newAgentHomes(srv, base.Path)
	child = func(dir string) session.Config {
		c := base
		c.Dir = dir
		// The CLI must reach the fake and nothing else.
		c.DropEnv = fakemodel.Redirects
		c.Env = append(slices.Clip(c.Env), srv.Env()...)
		c.LeadArgs = []string{"--settings", srv.Settings(fakemodel.SettingsFiles(os.Getenv, cmp.Or(dir, "."))...)}
		// A pty worker's program (the CLI's TUI, Codex, Gemini CLI)
		// reaches it too, each through a home of ccbridge's own.
		c.ProgramEnv = func(program string) []string {
			h := homes.of(program)
			if h == nil {
				return nil
			}
			env, err := h.trust(dir)
			if err != nil {
				log.Warn("--fake-model: preparing a home for "+h.name, "err", err)
				return nil
			}
			return env
		}
		return c
	}
	stop = func() {
		srv.Close()
		homes.remove()
	}
	return child, stop, 0, nil
}

// realPath is path with its symbolic links resolved, or path itself.
func realPath(path string) string {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		return p
	}
	return path
}

// runLogin runs the CLI's own interactive login, `claude auth login`
// (with args), on ccbridge's terminal, and exits with its exit code: zero
// when the user logged in. It is `ccbridge login [args]`, and a dialect's
// --login (the ACP terminal auth method's args), which finds the CLI as
// the session would (--claude, $CCBRIDGE_CLAUDE, claude on PATH) and runs
// it in --cwd. No fake model is started: the login is the real one.
// While the CLI runs, a SIGINT does not stop ccbridge: the terminal's ^C
// reaches the CLI too, which decides.
func runLogin(claude, dir string, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	self, _ := os.Executable()
	path, err := session.FindCLI(claude, getenv, self)
	if err != nil {
		fmt.Fprintf(stderr, "ccbridge: login: %v\n", err)
		return 127
	}
	cmd := exec.Command(path, append([]string{"auth", "login"}, args...)...)
	cmd.Dir = dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		if code := ee.ExitCode(); code >= 0 {
			return code
		}
		return 1 // killed by a signal
	case err != nil:
		fmt.Fprintf(stderr, "ccbridge: login: %v\n", err)
		return 1
	}
	return 0
}

// loginArg is the flag of a dialect that runs the CLI's login instead of
// a session: what the acp dialect's terminal auth method appends to
// ccbridge's command (mapping/acp.AuthTerminalArgs).
const loginArg = "--login"

// cutTrailingLogin takes a --login the client appended after a "--" off
// args: the client adds its args at the end of the configured command,
// whose extra CLI arguments may end it, and the CLI has no --login of its
// own (claude --help, 2.1.330).
func cutTrailingLogin(args []string) ([]string, bool) {
	if n := len(args); n > 1 && args[n-1] == loginArg && slices.Contains(args[:n-1], "--") {
		return args[:n-1], true
	}
	return args, false
}

// runServe is `ccbridge serve` (serve.Main), until SIGINT, SIGTERM
// or SIGHUP.
func runServe(args []string, stderr io.Writer, getenv func(string) string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	return serve.Main(ctx, args, getenv, stderr, func(claude, fakeModel string, log *slog.Logger) (func(string) session.Config, func(), int, error) {
		return launcher(claude, fakeModel, true, session.Config{}, getenv, log)
	})
}

// runVersion is ccbridge version: which ccbridge this is, in words or,
// with --json, as one JSON object.
func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ccbridge version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print one JSON object: version, commit, time, go, testedCLI")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: ccbridge version [--json]\n\nPrints ccbridge's version, the commit it was built from, the Go that built\nit and the Claude Code CLI version its tests ran against.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "ccbridge version: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	i := version.Get()
	if *asJSON {
		o := jsonw.NewObj(nil).Str("version", i.Version).Str("commit", i.Commit).Str("time", i.Time).
			Str("go", i.Go).Str("testedCLI", i.TestedCLI)
		stdout.Write(append(o.End(), '\n'))
		return 0
	}
	commit := cmp.Or(i.Commit, "unknown")
	if i.Time != "" {
		commit += " (" + i.Time + ")"
	}
	fmt.Fprintf(stdout, "ccbridge %s\ncommit: %s\ngo: %s\ntested with Claude Code %s\n", i.Version, commit, i.Go, i.TestedCLI)
	return 0
}

// runSession runs a session with the process's signals, and turns its outcome
// into an exit code.
func runSession(r adapter.Runner, stdin io.Reader, stdout, stderr io.Writer) int {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(signals)
	// A UI that closes its end of stdout would otherwise kill ccbridge
	// with SIGPIPE (Go's default for fd 1 and 2), leaving no staged
	// shutdown. Caught, the write fails with EPIPE instead, which the
	// session takes as "the UI is gone". The signals themselves are of no
	// use (a write to a child's pipe raises them too): the channel is
	// never read, and signal.Notify drops what does not fit. Not
	// signal.Ignore: an ignored SIGPIPE would be inherited by the CLI and
	// its tools.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	code, err := r.Run(context.Background(), stdin, stdout, signals)
	if err != nil {
		fmt.Fprintf(stderr, "ccbridge: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// parseConfig reads the environment, then the flags. Without --ui (and
// without --demo) every argument belongs to the CLI: that is drop-in mode,
// configured through CCBRIDGE_* variables only.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var cfg config
	var err error
	if cfg.maxLine, err = envInt(getenv, "CCBRIDGE_MAX_LINE"); err != nil {
		return cfg, err
	}
	if err := cfg.Env(getenv); err != nil {
		return cfg, err
	}
	cfg.pipeSize = session.DefaultPipeSize
	if getenv("CCBRIDGE_PIPE_SIZE") != "" {
		if cfg.pipeSize, err = envInt(getenv, "CCBRIDGE_PIPE_SIZE"); err != nil {
			return cfg, err
		}
	}

	if len(args) == 0 {
		usage(stderr, nil)
		return cfg, errors.New("no arguments: give the CLI's arguments (drop-in mode) or --ui DIALECT")
	}
	if !dialectMode(args) {
		if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			usage(stderr, nil)
			return cfg, flag.ErrHelp
		}
		cfg.dropInArgs = args
		cfg.dialect, _ = adapter.NewDialect("stream")
		return cfg, nil
	}

	args, cfg.login = cutTrailingLogin(args)
	fs := flag.NewFlagSet("ccbridge", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&cfg.login, "login", cfg.login, "run the Claude Code CLI's interactive login (claude auth login) in this terminal instead of a session")
	fs.StringVar(&cfg.ui, "ui", "", "UI dialect: "+strings.Join(adapter.DialectNames(), ", "))
	if name := uiName(args); name != "" {
		d, ok := adapter.NewDialect(name)
		if !ok {
			return cfg, fmt.Errorf("--ui %q: no such dialect (available: %s)", name, strings.Join(adapter.DialectNames(), ", "))
		}
		cfg.dialect = d
		d.Flags(fs)
	}
	cfg.Add(fs, "the CLI", "")
	control.Flags(fs, &cfg.control)
	fs.IntVar(&cfg.maxCLILine, "max-cli-line", 0, "largest CLI line held whole, in bytes (default: each dialect's, see its doc)")
	fs.BoolVar(&cfg.demo, "demo", false, "run the offline demo: one turn with a permission request, answered")
	fs.StringVar(&cfg.cwd, "cwd", "", "working directory of the CLI (default: ccbridge's)")
	fs.IntVar(&cfg.maxLine, "max-line", cfg.maxLine, "largest UI line held whole, in bytes (default 256 MiB)")
	fs.IntVar(&cfg.pipeSize, "pipe-size", cfg.pipeSize, "Linux: pipe buffer asked for behind the CLI's stdout and ccbridge's own, in bytes; 0 keeps the system's")
	fs.StringVar(&cfg.opts.Resume, "resume", "", "resume this session id")
	fs.BoolVar(&cfg.opts.Continue, "continue", false, "continue the most recent session in the working directory")
	fs.BoolVar(&cfg.opts.ForkSession, "fork-session", false, "with --resume or --continue: fork into a new session")
	fs.StringVar(&cfg.opts.SessionID, "session-id", "", "session id (a UUID) for a new or forked session")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stderr, fs)
			return cfg, err
		}
		return cfg, fmt.Errorf("%w (see ccbridge --ui stream --help)", err)
	}
	if err := cfg.Parsed(); err != nil {
		return cfg, err
	}
	cfg.opts.Model, cfg.opts.PermissionMode = cfg.Model, cfg.PermissionMode
	cfg.opts.Extra = fs.Args()
	if cfg.ui == "" && !cfg.demo {
		return cfg, errors.New("--ui needs a dialect, for example --ui stream")
	}
	if cfg.demo && cfg.FakeModel == "" {
		cfg.FakeModel = "default"
	}
	return cfg, nil
}

// uiName returns the value of the last --ui before any "--", or "": the
// one the flag package keeps.
func uiName(args []string) string {
	ui := ""
	for i, a := range args {
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case !strings.HasPrefix(a, "-") || name != "ui":
		case hasValue:
			ui = value
		case i+1 < len(args):
			ui = args[i+1]
		}
	}
	return ui
}

// dialectMode reports whether ccbridge's own flags are in use: --ui or
// --demo before any "--".
func dialectMode(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && (name == "ui" || name == "demo") {
			return true
		}
	}
	return false
}

func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, `ccbridge %s: a bridge between a UI and one Claude Code CLI child.

Drop-in mode (every argument goes to the CLI, unchanged):
  ccbridge --output-format stream-json --input-format stream-json --verbose [more CLI flags]
  configured through CCBRIDGE_CLAUDE, CCBRIDGE_FAKE_MODEL, CCBRIDGE_MAX_LINE,
  CCBRIDGE_LOG_LEVEL, CCBRIDGE_GRACE, CCBRIDGE_TERM_GRACE and CCBRIDGE_PIPE_SIZE.

Dialect mode:
  ccbridge --ui DIALECT [flags] [-- extra CLI arguments]
  ccbridge --demo [flags]

Serve mode (a web UI and lane-004 workers over HTTP; ccbridge serve --help for its flags):
  ccbridge serve [--dir DIR] [--worker ID=DIR] [flags]

`, version.String())
	if fs == nil {
		fmt.Fprintln(w, "Run ccbridge --ui DIALECT --help for the flags (dialects: "+strings.Join(adapter.DialectNames(), ", ")+").")
		return
	}
	// The dialect's own flags are listed apart from the common ones.
	own := flag.NewFlagSet("", flag.ContinueOnError)
	name := fs.Lookup("ui").Value.String()
	if d, ok := adapter.NewDialect(name); ok {
		d.Flags(own)
	}
	common := flag.NewFlagSet("", flag.ContinueOnError)
	fs.VisitAll(func(f *flag.Flag) {
		if own.Lookup(f.Name) == nil {
			common.Var(f.Value, f.Name, f.Usage)
			common.Lookup(f.Name).DefValue = f.DefValue
		}
	})
	common.SetOutput(w)
	fmt.Fprintln(w, "Flags of every dialect:")
	common.PrintDefaults()
	if hasFlags(own) {
		fmt.Fprintf(w, "\nFlags of the %s dialect:\n", name)
		own.SetOutput(w)
		own.PrintDefaults()
	}
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

func envInt(getenv func(string) string, name string) (int, error) {
	s := getenv(name)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q: want a number of bytes", name, s)
	}
	return n, nil
}
