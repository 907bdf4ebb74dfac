package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// The CLI's own login commands, as Claude Code 2.1.330 has them
// (`claude auth --help`): `auth login` (interactive: it prints a sign-in
// address and waits for the code), `auth logout` (removes the stored
// login, and asks Anthropic to revoke it), `auth status --json` (exit 0
// when logged in, 1 when not). The stream-json control protocol has no
// logout (the CLI answers a "logout" control request
// "Unsupported control request subtype").

// AuthStatus is what `claude auth status --json` says.
type AuthStatus struct {
	LoggedIn bool
	// Method is its authMethod: "none", "api_key" (ANTHROPIC_API_KEY or
	// an apiKeyHelper), "claude.ai" (a stored subscription login), …
	Method string
	// Stored: the login is one the CLI keeps on disk (its
	// storedClaudeAiLogin, or a method other than none and api_key),
	// which logout removes. A key from the environment is not.
	Stored bool
}

// LogoutResult is what Logout did.
type LogoutResult struct {
	Before, After AuthStatus
	// Cleared: a stored login was there before and is gone after.
	Cleared bool
	// Output is the CLI's own words (stdout and stderr of auth logout,
	// trimmed).
	Output string
}

// authTimeout bounds each of the CLI's auth commands. auth logout asks
// Anthropic to revoke the login: offline that fails within a few seconds
// (2.7 s measured with no network, `time claude auth logout` under a
// scratch HOME holding a made-up .credentials.json), and the local
// login is removed all the same.
const authTimeout = 30 * time.Second

// authCommand runs the CLI of cfg (its Path, environment and Dir; not
// its LeadArgs) with args and returns its output and exit code.
func authCommand(ctx context.Context, cfg Config, args ...string) (stdout, stderr []byte, code int, err error) {
	ctx, cancel := context.WithTimeout(ctx, authTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, cfg.Path, args...)
	cmd.Dir = cfg.Dir
	cmd.Env = append(inherit(os.Environ(), cfg.DropEnv), cfg.Env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ctx.Err() == nil {
		return o.Bytes(), e.Bytes(), ee.ExitCode(), nil
	}
	if err != nil {
		return o.Bytes(), e.Bytes(), -1, fmt.Errorf("running %s %s: %w", cfg.Path, strings.Join(args, " "), err)
	}
	return o.Bytes(), e.Bytes(), 0, nil
}

// Status runs `claude auth status --json`.
func Status(ctx context.Context, cfg Config) (AuthStatus, error) {
	out, errOut, _, err := authCommand(ctx, cfg, "auth", "status", "--json")
	if err != nil {
		return AuthStatus{}, err
	}
	return ParseAuthStatus(out, errOut)
}

// ParseAuthStatus reads the JSON `claude auth status --json` printed.
func ParseAuthStatus(out, errOut []byte) (AuthStatus, error) {
	if !gjson.ValidBytes(out) || !gjson.GetBytes(out, "loggedIn").IsBool() {
		return AuthStatus{}, fmt.Errorf("claude auth status printed no status: %q", firstBytes(append(out, errOut...), 200))
	}
	s := AuthStatus{
		LoggedIn: gjson.GetBytes(out, "loggedIn").Bool(),
		Method:   gjson.GetBytes(out, "authMethod").Str,
	}
	s.Stored = gjson.GetBytes(out, "storedClaudeAiLogin").Bool() ||
		s.LoggedIn && s.Method != "" && s.Method != "none" && s.Method != "api_key"
	return s, nil
}

// Logout runs the CLI's logout (`claude auth logout`) between two
// `claude auth status --json`, so that Cleared says truthfully whether a
// stored login was removed (the CLI says "Successfully logged out" even
// when there was none). Call it off any loop: it runs three processes.
func Logout(ctx context.Context, cfg Config) (LogoutResult, error) {
	var r LogoutResult
	var err error
	if r.Before, err = Status(ctx, cfg); err != nil {
		return r, err
	}
	out, errOut, code, err := authCommand(ctx, cfg, "auth", "logout")
	r.Output = strings.TrimSpace(string(out) + string(errOut))
	if err != nil {
		return r, err
	}
	if code != 0 {
		return r, fmt.Errorf("claude auth logout exited with %d: %s", code, firstBytes([]byte(r.Output), 200))
	}
	if r.After, err = Status(ctx, cfg); err != nil {
		return r, err
	}
	r.Cleared = r.Before.Stored && !r.After.Stored
	return r, nil
}

func firstBytes(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	return strings.ToValidUTF8(string(b), "")
}
