package adapter

import (
	"context"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"sort"
	"time"

	"github.com/ccbridge/ccbridge/session"
)

// Version is ccbridge's version, reported by the dialects' initialize
// answers and by --help. Release builds set it with
// -ldflags "-X github.com/ccbridge/ccbridge/adapter.Version=…"; otherwise
// it is the module version from the build info, or "dev".
var Version = ""

func init() {
	if Version != "" {
		return
	}
	Version = "dev"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		Version = bi.Main.Version
	}
}

// DialectConfig is what main hands to a dialect: how to start the CLI and
// the dialect-independent flags. Zero values mean defaults.
type DialectConfig struct {
	// Child says how to start the CLI; each dialect builds the Args.
	Child session.Config
	// Options are the session flags and extra CLI arguments.
	Options session.Options
	// MaxLine caps a line held whole (--max-line).
	MaxLine int
	// InterruptTimeout bounds the wait for the CLI to acknowledge an
	// interrupt (--interrupt-timeout).
	InterruptTimeout time.Duration
	// ForwardUnknown passes CLI messages of unknown types on, where the
	// dialect has a way to (--forward-unknown).
	ForwardUnknown bool
	// Diagnostics enables per-call usage reports, where the dialect has
	// them (--diagnostics).
	Diagnostics bool
	Logger      *slog.Logger
}

// Runner serves one UI connection on in/out until it ends, and returns the
// exit code ccbridge should exit with.
type Runner interface {
	Run(ctx context.Context, in io.Reader, out io.Writer, signals <-chan os.Signal) (int, error)
}

var dialects = map[string]func(DialectConfig) Runner{}

// registerDialect makes a dialect available to --ui. Each dialect calls it
// from an init function in its own file.
func registerDialect(name string, build func(DialectConfig) Runner) {
	if _, dup := dialects[name]; dup {
		panic("adapter: dialect " + name + " registered twice")
	}
	dialects[name] = build
}

// Dialect returns the builder of a --ui dialect other than "stream" (which
// is drop-in mode with ccbridge's own arguments).
func Dialect(name string) (func(DialectConfig) Runner, bool) {
	b, ok := dialects[name]
	return b, ok
}

// DialectNames lists the --ui dialects, "stream" included, sorted.
func DialectNames() []string {
	names := []string{"stream"}
	for n := range dialects {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func init() {
	registerDialect("ipc", func(c DialectConfig) Runner {
		return &IPC{Child: c.Child, Options: c.Options, MaxLine: c.MaxLine,
			InterruptTimeout: c.InterruptTimeout, ForwardUnknown: c.ForwardUnknown, Logger: c.Logger}
	})
}
