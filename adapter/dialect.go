package adapter

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"time"

	"github.com/ccbridge/ccbridge/adapter/control"
	"github.com/ccbridge/ccbridge/framing"
	"github.com/ccbridge/ccbridge/session"
)

// DefaultInterruptTimeout is Settings.InterruptTimeout's default.
const DefaultInterruptTimeout = 5 * time.Second

// Settings are what every dialect on the session core takes from main's
// common flags. Zero values mean defaults.
type Settings struct {
	// Child says how to start the CLI; each dialect builds the Args.
	Child session.Config
	// Options are the session flags and extra CLI arguments.
	Options session.Options
	// MaxLine caps a UI line held whole (--max-line). Default
	// framing.DefaultMaxLine.
	MaxLine int
	// CLIMaxLine caps a CLI line held whole (--max-cli-line); a longer one
	// is dropped and reported to the UI. 0 keeps each dialect's default.
	CLIMaxLine int
	// InterruptTimeout bounds the wait for the CLI to acknowledge an
	// interrupt (--interrupt-timeout); then the child is stopped and the
	// session resumed in a new one. Default 5 s.
	InterruptTimeout time.Duration
	// ControlTimeout bounds the wait for the CLI's answer to a control
	// request, and for the worker to take a control lane's input or
	// interrupt (--control-timeout). Default 5 s.
	ControlTimeout time.Duration
	// Control configures the control plane: --ui control, and --control
	// beside any dialect.
	Control control.Config
	// Clock is the session's time; nil means the real one.
	Clock  Clock
	Logger *slog.Logger
	// ControlHook, when set, is handed the session's control.Target and
	// its loop's Submit once Run has built them (tests; --control goes
	// through Control.Socket).
	ControlHook control.Hook
}

// Defaults fills in the zero values.
func (s *Settings) Defaults() {
	if s.MaxLine <= 0 {
		s.MaxLine = framing.DefaultMaxLine
	}
	if s.InterruptTimeout <= 0 {
		s.InterruptTimeout = DefaultInterruptTimeout
	}
	if s.ControlTimeout <= 0 {
		s.ControlTimeout = control.DefaultTimeout
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	if s.Child.Logger == nil {
		s.Child.Logger = s.Logger
	}
}

// DialectConfig is what main hands to a dialect: the common settings,
// and for the stream dialect in drop-in mode the CLI's own arguments.
type DialectConfig struct {
	Settings
	// DropInArgs, when set, are the CLI's own arguments, passed as they
	// are (drop-in mode; the stream dialect only).
	DropInArgs []string
}

// CoreArgs are the CLI arguments of the dialects on the session core,
// before the session options and the user's extra arguments: stream-json
// both ways with partial messages, permission prompts over stdio.
var CoreArgs = []string{
	"--output-format", "stream-json",
	"--input-format", "stream-json",
	"--verbose",
	"--include-partial-messages",
	"--permission-prompt-tool", "stdio",
}

// Runner serves one UI connection on in/out until it ends, and returns the
// exit code ccbridge should exit with.
type Runner interface {
	Run(ctx context.Context, in io.Reader, out io.Writer, signals <-chan os.Signal) (int, error)
}

// Dialect is one --ui dialect: its own flags, the common settings, and
// Run for one UI connection. A dialect on the session core builds a Loop,
// a Supervisor per session and its Handler in Run; one that embeds
// Settings has Configure from it.
type Dialect interface {
	Runner
	// Flags adds the dialect's own flags to fs; their values are the
	// dialect's (a Dialect is made fresh for each use).
	Flags(fs *flag.FlagSet)
	// Configure takes the common settings, before Run.
	Configure(c DialectConfig) error
}

// CLIOptional is implemented by a dialect that may run without the Claude
// Code CLI: RunsCLI reports whether it starts the CLI with these options
// (a pty worker running another program does not), so that a missing CLI
// is an error only where it is needed.
type CLIOptional interface {
	RunsCLI(opts session.Options) bool
}

// Configure takes the common settings: a dialect that embeds Settings
// needs no Configure of its own.
func (s *Settings) Configure(c DialectConfig) error {
	*s = c.Settings
	return nil
}

var dialects = map[string]func() Dialect{}

// Register makes a dialect available to --ui under name. A dialect calls
// it from an init function: that one line is its registration.
func Register(name string, fresh func() Dialect) {
	if _, dup := dialects[name]; dup {
		panic("adapter: dialect " + name + " registered twice")
	}
	dialects[name] = fresh
}

// NewDialect returns a fresh instance of the --ui dialect name.
func NewDialect(name string) (Dialect, bool) {
	fresh, ok := dialects[name]
	if !ok {
		return nil, false
	}
	return fresh(), true
}

// DialectNames lists the --ui dialects, sorted.
func DialectNames() []string {
	names := make([]string, 0, len(dialects))
	for n := range dialects {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// StartControl hands the session to its control lanes once its Run has
// built the target: the ControlHook, and --control's socket. stop closes
// them once the session is over.
func (s *Settings) StartControl(t control.Target, submit func(func()) bool) (stop func(), err error) {
	if s.ControlHook != nil {
		s.ControlHook(t, submit)
	}
	if s.Control.Socket == "" && !s.Control.Bus.On() {
		return func() {}, nil
	}
	cp, err := control.Open(s.Control, s.ControlTimeout, s.Logger, t, submit)
	if err != nil {
		return nil, err
	}
	if err := cp.Listen(); err != nil {
		cp.Close()
		return nil, err
	}
	if err := cp.ServeBus(nil); err != nil {
		cp.Close()
		return nil, fmt.Errorf("--bus: %w", err)
	}
	return func() {
		if err := cp.Close(); err != nil {
			s.Logger.Warn("closing the control lanes", "err", err)
		}
	}, nil
}

// Begin starts a session on the core: it hands t to the control lanes
// (StartControl, through l's Submit) and starts sup's first child with
// opts (resuming a session file when opts.Resumes). stop ends the control lanes once
// the session is over; on failure code is the exit code ccbridge exits
// with (2: the control lanes could not start; 1: the CLI could not).
func (s *Settings) Begin(t control.Target, l *Loop, sup *Supervisor, opts session.Options) (stop func(), code int, err error) {
	stop, err = s.StartControl(t, l.Submit)
	if err != nil {
		return nil, 2, err
	}
	if _, err := sup.Start(opts, opts.Resumes()); err != nil {
		stop()
		return nil, 1, err
	}
	return stop, 0, nil
}
