// Package cliflags holds the flags and environment variables that
// ccbridge and ccbridge serve share: where the CLI is, the fake model,
// the CLI's model and permission mode, the log level, the timeouts and
// the shutdown's grace periods. Each is defined here once, with its
// default and its environment variable, so that the two commands cannot
// drift apart.
package cliflags

import (
	"flag"
	"fmt"
	"log/slog"
	"time"
)

// Common are the shared settings. Fill them from the environment with
// Env, add the flags with Add, and call Parsed once the flag set is
// parsed.
type Common struct {
	Claude    string // --claude, $CCBRIDGE_CLAUDE
	FakeModel string // --fake-model, $CCBRIDGE_FAKE_MODEL
	// Model and PermissionMode are the CLI's (--model,
	// --permission-mode).
	Model, PermissionMode string
	LogLevel              slog.Level // --log-level, $CCBRIDGE_LOG_LEVEL
	// InterruptTimeout and ControlTimeout (--interrupt-timeout,
	// --control-timeout): 0 keeps the session core's defaults
	// (adapter.Settings).
	InterruptTimeout time.Duration
	ControlTimeout   time.Duration
	// Grace and TermGrace are the shutdown's stages (--grace,
	// $CCBRIDGE_GRACE; --term-grace, $CCBRIDGE_TERM_GRACE); 0 keeps the
	// session's defaults.
	Grace, TermGrace time.Duration

	level string
}

// Env reads the environment variables; a malformed one is an error
// naming it.
func (c *Common) Env(getenv func(string) string) error {
	c.Claude, c.FakeModel = getenv("CCBRIDGE_CLAUDE"), getenv("CCBRIDGE_FAKE_MODEL")
	var err error
	if c.LogLevel, err = ParseLevel(getenv("CCBRIDGE_LOG_LEVEL")); err != nil {
		return fmt.Errorf("CCBRIDGE_LOG_LEVEL: %w", err)
	}
	if c.Grace, err = envDuration(getenv, "CCBRIDGE_GRACE"); err != nil {
		return err
	}
	if c.TermGrace, err = envDuration(getenv, "CCBRIDGE_TERM_GRACE"); err != nil {
		return err
	}
	return nil
}

// Add adds the flags to fs, with the environment's values as their
// defaults. clis names the CLIs they apply to in the help texts ("the
// CLI", "every worker's CLI"); model and permission mode say more for a
// command whose sessions may name their own.
func (c *Common) Add(fs *flag.FlagSet, clis, modelNote string) {
	fs.StringVar(&c.Claude, "claude", c.Claude, "path of the Claude Code CLI (default $CCBRIDGE_CLAUDE, else claude on PATH)")
	fs.StringVar(&c.FakeModel, "fake-model", c.FakeModel, "serve a fake Messages API to "+clis+`: "default" or a scenario file`)
	fs.StringVar(&c.Model, "model", "", "model for the CLI (--model)"+modelNote)
	fs.StringVar(&c.PermissionMode, "permission-mode", "", "permission mode for the CLI (--permission-mode)"+modelNote)
	fs.StringVar(&c.level, "log-level", c.LogLevel.String(), "log level on stderr: debug, info, warn, error (debug includes payload previews)")
	fs.DurationVar(&c.InterruptTimeout, "interrupt-timeout", 0, "wait this long for the CLI to acknowledge an interrupt, then restart it (default 5s)")
	fs.DurationVar(&c.ControlTimeout, "control-timeout", 0, "wait this long for the CLI's answer to a control request (model, mode, …), and for the worker to take a control lane's input or interrupt (default 5s)")
	fs.DurationVar(&c.Grace, "grace", c.Grace, "shutdown: wait after closing "+clis+"'s stdin before SIGTERM (default 10s)")
	fs.DurationVar(&c.TermGrace, "term-grace", c.TermGrace, "shutdown: wait after SIGTERM before SIGKILL (default 5s)")
}

// Parsed finishes what Add began, once fs is parsed: the log level.
func (c *Common) Parsed() error {
	var err error
	if c.LogLevel, err = ParseLevel(c.level); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	return nil
}

// ParseLevel reads a log level (debug, info, warn, error; "" is info).
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if s == "" {
		return slog.LevelInfo, nil
	}
	err := l.UnmarshalText([]byte(s))
	return l, err
}

func envDuration(getenv func(string) string, name string) (time.Duration, error) {
	s := getenv(name)
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s=%q: want a duration such as 10s", name, s)
	}
	return d, nil
}
