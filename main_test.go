package main

import (
	"bytes"
	"errors"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ccbridge/ccbridge/adapter/rpc"
	"github.com/ccbridge/ccbridge/internal/version"
	"github.com/ccbridge/ccbridge/session"
	"github.com/tidwall/gjson"
)

// TestMain lets the test binary be a guardian, as ccbridge is, should a
// test start a CLI through run.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == session.GuardianArg {
		os.Exit(session.RunGuardian(os.Args[2:]))
	}
	os.Exit(m.Run())
}

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestParseConfigDropIn(t *testing.T) {
	args := []string{"--output-format", "stream-json", "--model", "m", "--resume=x"}
	cfg, err := parseConfig(args, env("CCBRIDGE_CLAUDE", "/c", "CCBRIDGE_MAX_LINE", "1024",
		"CCBRIDGE_GRACE", "3s", "CCBRIDGE_LOG_LEVEL", "debug"), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ui != "" || !slices.Equal(cfg.dropInArgs, args) {
		t.Errorf("drop-in args changed: %q", cfg.dropInArgs)
	}
	if cfg.Claude != "/c" || cfg.maxLine != 1024 || cfg.Grace != 3*time.Second || cfg.LogLevel.String() != "DEBUG" {
		t.Errorf("environment not applied: %+v", cfg)
	}
}

// The pipe size: 256 KiB unless CCBRIDGE_PIPE_SIZE or --pipe-size says
// otherwise; 0 keeps the system's.
func TestParseConfigPipeSize(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  func(string) string
		want int
	}{
		{[]string{"--verbose"}, env(), session.DefaultPipeSize},
		{[]string{"--verbose"}, env("CCBRIDGE_PIPE_SIZE", "0"), 0},
		{[]string{"--verbose"}, env("CCBRIDGE_PIPE_SIZE", "1048576"), 1 << 20},
		{[]string{"--ui", "stream"}, env(), session.DefaultPipeSize},
		{[]string{"--ui", "stream", "--pipe-size", "0"}, env("CCBRIDGE_PIPE_SIZE", "1048576"), 0},
	} {
		cfg, err := parseConfig(c.args, c.env, &bytes.Buffer{})
		if err != nil || cfg.pipeSize != c.want {
			t.Errorf("parseConfig(%q): pipe size %d, %v; want %d", c.args, cfg.pipeSize, err, c.want)
		}
	}
}

func TestParseConfigDialect(t *testing.T) {
	cfg, err := parseConfig([]string{"--ui", "stream", "--model", "opus", "--resume", "abc",
		"--fork-session", "--grace=1s", "--", "--add-dir", "/tmp"}, env(), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ui != "stream" || cfg.opts.Model != "opus" || cfg.opts.Resume != "abc" || !cfg.opts.ForkSession ||
		cfg.Grace != time.Second || !slices.Equal(cfg.opts.Extra, []string{"--add-dir", "/tmp"}) {
		t.Errorf("flags not parsed: %+v", cfg)
	}
}

func TestParseConfigErrors(t *testing.T) {
	cases := []struct {
		args []string
		env  func(string) string
		want string
	}{
		{nil, env(), "no arguments"},
		{[]string{"--ui", "stream", "--bogus"}, env(), "bogus"},
		{[]string{"--output-format", "x"}, env("CCBRIDGE_MAX_LINE", "lots"), "CCBRIDGE_MAX_LINE"},
		{[]string{"--output-format", "x"}, env("CCBRIDGE_GRACE", "soon"), "CCBRIDGE_GRACE"},
		{[]string{"--output-format", "x"}, env("CCBRIDGE_PIPE_SIZE", "-1"), "CCBRIDGE_PIPE_SIZE"},
		{[]string{"--output-format", "x"}, env("CCBRIDGE_LOG_LEVEL", "loud"), "CCBRIDGE_LOG_LEVEL"},
		{[]string{"--ui", "stream", "--log-level", "loud"}, env(), "--log-level"},
	}
	for _, c := range cases {
		_, err := parseConfig(c.args, c.env, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("parseConfig(%q): %v, want an error about %q", c.args, err, c.want)
		}
	}
}

func TestParseConfigHelp(t *testing.T) {
	var out bytes.Buffer
	if _, err := parseConfig([]string{"--help"}, env(), &out); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help: %v", err)
	}
	if !strings.Contains(out.String(), "Drop-in mode") {
		t.Errorf("help text: %s", out.String())
	}
	out.Reset()
	if _, err := parseConfig([]string{"--ui", "stream", "--help"}, env(), &out); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--ui stream --help: %v", err)
	}
	if !strings.Contains(out.String(), "-permission-mode") {
		t.Errorf("dialect help lacks the flags: %s", out.String())
	}
}

func TestDialectMode(t *testing.T) {
	for args, want := range map[string]bool{
		"--ui stream":                   true,
		"--ui=ipc":                      true,
		"--demo":                        true,
		"--output-format stream-json":   false,
		"--model m -- --ui":             false,
		"--append-system-prompt x --ui": true,
	} {
		if got := dialectMode(strings.Fields(args)); got != want {
			t.Errorf("dialectMode(%s) = %v, want %v", args, got, want)
		}
	}
}

func TestRunReportsMissingCLI(t *testing.T) {
	var stderr bytes.Buffer
	code := run([]string{"--output-format", "stream-json"}, strings.NewReader(""), &bytes.Buffer{}, &stderr,
		env("CCBRIDGE_CLAUDE", "/nonexistent/claude", "PATH", "/nonexistent"))
	if code != 127 || !strings.Contains(stderr.String(), "/nonexistent/claude") {
		t.Errorf("code %d, stderr %q", code, stderr.String())
	}
}

func TestRunRejectsInvalidSessionFlags(t *testing.T) {
	var stderr bytes.Buffer
	code := run([]string{"--ui", "stream", "--claude", "/bin/true", "--resume", "a", "--continue"},
		strings.NewReader(""), &bytes.Buffer{}, &stderr, env())
	if code != 2 || !strings.Contains(stderr.String(), "continue") {
		t.Errorf("code %d, stderr %q", code, stderr.String())
	}
}

func TestParseConfigUnknownDialect(t *testing.T) {
	_, err := parseConfig([]string{"--ui", "bogus"}, env(), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "ipc") {
		t.Errorf("--ui bogus: %v, want an error listing the dialects", err)
	}
}

// TestParseConfigDialectFlags: a dialect's own flags are taken with its
// --ui, listed apart by --help, and refused with another dialect.
func TestParseConfigDialectFlags(t *testing.T) {
	cfg, err := parseConfig([]string{"--ui", "rpc", "--diagnostics", "--dedupe-window", "1m"}, env(), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := cfg.dialect.(*rpc.RPC); !ok || !r.Diagnostics || r.DedupeWindow != time.Minute {
		t.Errorf("the rpc dialect's flags were not taken: %#v", cfg.dialect)
	}
	if _, err := parseConfig([]string{"--ui", "ipc", "--diagnostics"}, env(), &bytes.Buffer{}); err == nil {
		t.Error("--diagnostics, an rpc flag, was taken with --ui ipc")
	}
	// The last --ui is the dialect, as the flag package has it.
	if cfg, err := parseConfig([]string{"--ui", "ipc", "--ui=rpc", "--diagnostics"}, env(), &bytes.Buffer{}); err != nil || cfg.ui != "rpc" {
		t.Errorf("--ui ipc --ui=rpc --diagnostics: %q, %v", cfg.ui, err)
	}
	var out bytes.Buffer
	if _, err := parseConfig([]string{"--ui=rpc", "--help"}, env(), &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	help := out.String()
	common, own, _ := strings.Cut(help, "Flags of the rpc dialect:")
	if !strings.Contains(own, "-diagnostics") || strings.Contains(common, "-diagnostics") || !strings.Contains(common, "-max-cli-line") {
		t.Errorf("--ui rpc --help does not list the rpc flags apart:\n%s", help)
	}
}

func TestRunVersion(t *testing.T) {
	var out, errb strings.Builder
	if code := run([]string{"version"}, strings.NewReader(""), &out, &errb, func(string) string { return "" }); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	i := version.Get()
	want := "ccbridge " + i.Version + "\n"
	if !strings.HasPrefix(out.String(), want) || !strings.Contains(out.String(), "tested with Claude Code "+version.TestedCLI+"\n") {
		t.Errorf("ccbridge version printed %q", out.String())
	}

	out.Reset()
	if code := run([]string{"version", "--json"}, strings.NewReader(""), &out, &errb, func(string) string { return "" }); code != 0 {
		t.Fatalf("--json: exit %d", code)
	}
	v := gjson.Parse(out.String())
	if !gjson.Valid(out.String()) || v.Get("version").String() != i.Version || v.Get("testedCLI").String() != version.TestedCLI || v.Get("go").String() != i.Go {
		t.Errorf("ccbridge version --json printed %q", out.String())
	}

	for _, args := range [][]string{{"version", "extra"}, {"version", "--bogus"}} {
		out.Reset()
		errb.Reset()
		if code := run(args, strings.NewReader(""), &out, &errb, func(string) string { return "" }); code != 2 || out.Len() != 0 || errb.Len() == 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2, nothing on stdout, a reason on stderr", args, code, out.String(), errb.String())
		}
	}
}

// TestLogin: --login (also when an ACP client appended it after "--"),
// and ccbridge login, run `claude auth login` on ccbridge's terminal
// instead of a session, and exit with the CLI's exit code.
func TestLogin(t *testing.T) {
	for _, c := range []struct {
		args  []string
		login bool
		extra []string
	}{
		{[]string{"--ui", "acp", "--login"}, true, nil},
		{[]string{"--ui", "acp", "--", "--add-dir", "/x", "--login"}, true, []string{"--add-dir", "/x"}},
		{[]string{"--ui", "acp", "--", "--login", "--add-dir"}, false, []string{"--login", "--add-dir"}},
		{[]string{"--ui", "acp"}, false, nil},
	} {
		cfg, err := parseConfig(c.args, env(), &bytes.Buffer{})
		if err != nil || cfg.login != c.login || !slices.Equal(cfg.opts.Extra, c.extra) {
			t.Errorf("%q: login %v, extra %q, %v", c.args, cfg.login, cfg.opts.Extra, err)
		}
	}
	dir := t.TempDir()
	cli := filepath.Join(dir, "claude")
	// The fake CLI prints its argv and working directory, and exits 3.
	os.WriteFile(cli, []byte("#!/bin/sh\necho \"argv: $*\"\necho \"cwd: $(pwd)\"\nexit 3\n"), 0o755)
	var stdout, stderr bytes.Buffer
	code := run([]string{"--ui", "acp", "--claude", cli, "--cwd", dir, "--fake-model", "default", "--", "--login"},
		strings.NewReader(""), &stdout, &stderr, env())
	if code != 3 || !strings.Contains(stdout.String(), "argv: auth login\n") || !strings.Contains(stdout.String(), "cwd: "+dir) {
		t.Errorf("--login: code %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	code = run([]string{"login", "--console"}, strings.NewReader(""), &stdout, &stderr, env("CCBRIDGE_CLAUDE", cli))
	if code != 3 || !strings.Contains(stdout.String(), "argv: auth login --console\n") {
		t.Errorf("ccbridge login: code %d, stdout %q", code, stdout.String())
	}
	if code := run([]string{"login"}, strings.NewReader(""), &stdout, &stderr,
		env("CCBRIDGE_CLAUDE", "/nonexistent/claude", "PATH", "/nonexistent")); code != 127 {
		t.Errorf("login without a CLI: code %d", code)
	}
}

// TestFakeModelProgramEnv: under --fake-model a pty worker's program gets
// the home of its kind by its base name: Codex a CODEX_HOME whose config
// trusts the folder, Gemini CLI a GEMINI_CLI_HOME with its settings and
// the fake's address, the CLI's own TUI ("") a HOME whose .claude.json
// trusts the folder; any other program nothing. stop removes them all.
func TestFakeModelProgramEnv(t *testing.T) {
	child, stop, code, err := launcher("", "default", false, session.Config{}, env(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("launcher: %d %v", code, err)
	}
	dir := t.TempDir()
	c := child(dir)
	if got := c.ProgramEnv("/usr/bin/bash"); got != nil {
		t.Errorf("bash: %q, want nothing", got)
	}
	var codexHome, geminiHome string
	for _, kv := range c.ProgramEnv("/opt/agents/codex") {
		codexHome, _ = strings.CutPrefix(kv, "CODEX_HOME=")
	}
	gem := c.ProgramEnv("gemini")
	for _, kv := range gem {
		if h, ok := strings.CutPrefix(kv, "GEMINI_CLI_HOME="); ok {
			geminiHome = h
		}
	}
	if b, err := os.ReadFile(filepath.Join(codexHome, "config.toml")); codexHome == "" || err != nil || !strings.Contains(string(b), dir) {
		t.Errorf("codex: home %q (%v), config:\n%s", codexHome, err, b)
	}
	b, err := os.ReadFile(filepath.Join(geminiHome, ".gemini", "settings.json"))
	if geminiHome == "" || err != nil || gjson.GetBytes(b, "security.auth.selectedType").Str != "gemini-api-key" ||
		!slices.ContainsFunc(gem, func(kv string) bool { return strings.HasPrefix(kv, "GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:") }) {
		t.Errorf("gemini: %q, settings (%v):\n%s", gem, err, b)
	}
	var tuiHome string
	tui := c.ProgramEnv("")
	for _, kv := range tui {
		if h, ok := strings.CutPrefix(kv, "HOME="); ok {
			tuiHome = h
		}
	}
	for _, f := range []string{".claude.json", ".claude/.claude.json"} {
		b, err := os.ReadFile(filepath.Join(tuiHome, f))
		if tuiHome == "" || err != nil || !gjson.GetBytes(b, "projects").Get(gjson.Escape(dir)+".hasTrustDialogAccepted").Bool() ||
			!slices.Contains(tui, "CLAUDE_CONFIG_DIR="+filepath.Join(tuiHome, ".claude")) {
			t.Errorf("the TUI: %q, %s (%v):\n%s", tui, f, err, b)
		}
	}
	if again := c.ProgramEnv("gemini"); !slices.Equal(again, gem) {
		t.Errorf("a second Gemini CLI: %q, want the same home %q", again, gem)
	}
	if !c.DropEnv("GEMINI_API_KEY") || !c.DropEnv("GOOGLE_GEMINI_BASE_URL") {
		t.Errorf("Gemini CLI's address and key are not dropped from the environment")
	}
	stop()
	for _, h := range []string{codexHome, geminiHome, tuiHome} {
		if _, err := os.Stat(h); h == "" || !errors.Is(err, os.ErrNotExist) {
			t.Errorf("home %q after stop: %v", h, err)
		}
	}
}
