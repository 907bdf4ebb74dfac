package cliflags

import (
	"flag"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestEnvThenFlags: the environment gives the defaults, the flags win.
func TestEnvThenFlags(t *testing.T) {
	var c Common
	if err := c.Env(env(map[string]string{"CCBRIDGE_CLAUDE": "/c", "CCBRIDGE_FAKE_MODEL": "default", "CCBRIDGE_LOG_LEVEL": "warn", "CCBRIDGE_GRACE": "3s"})); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.Add(fs, "the CLI", "")
	if err := fs.Parse([]string{"--term-grace", "2s", "--model", "opus", "--interrupt-timeout", "1s"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Parsed(); err != nil {
		t.Fatal(err)
	}
	if c.Claude != "/c" || c.FakeModel != "default" || c.LogLevel != slog.LevelWarn || c.Grace != 3*time.Second ||
		c.TermGrace != 2*time.Second || c.Model != "opus" || c.InterruptTimeout != time.Second || c.ControlTimeout != 0 {
		t.Errorf("got %+v", c)
	}
	if err := fs.Parse([]string{"--log-level", "loud"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Parsed(); err == nil || !strings.Contains(err.Error(), "--log-level") {
		t.Errorf("--log-level loud: %v, want an error naming the flag", err)
	}
}

// TestEnvErrors: a malformed variable is an error naming it.
func TestEnvErrors(t *testing.T) {
	for k, v := range map[string]string{"CCBRIDGE_LOG_LEVEL": "loud", "CCBRIDGE_GRACE": "soon", "CCBRIDGE_TERM_GRACE": "-1s"} {
		var c Common
		if err := c.Env(env(map[string]string{k: v})); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v, want an error naming it", k, v, err)
		}
	}
}
