package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The outputs of `claude auth status --json` (CLI 2.1.330, scratch HOME):
// no login, ANTHROPIC_API_KEY set, a stored subscription login.
const (
	statusNone   = `{"loggedIn":false,"authMethod":"none","apiProvider":"firstParty"}`
	statusAPIKey = `{"loggedIn":true,"authMethod":"api_key","apiProvider":"firstParty","apiKeySource":"ANTHROPIC_API_KEY"}`
	statusStored = `{"loggedIn":true,"authMethod":"claude.ai","apiProvider":"firstParty","subscriptionType":"pro","storedClaudeAiLogin":true}`
)

func TestParseAuthStatus(t *testing.T) {
	for _, c := range []struct {
		out            string
		logged, stored bool
	}{{statusNone, false, false}, {statusAPIKey, true, false}, {statusStored, true, true}} {
		s, err := ParseAuthStatus([]byte(c.out), nil)
		if err != nil || s.LoggedIn != c.logged || s.Stored != c.stored {
			t.Errorf("%s: %+v %v", c.out, s, err)
		}
	}
	if _, err := ParseAuthStatus([]byte("error: boom"), nil); err == nil {
		t.Error("output that is not a status was accepted")
	}
}

// fakeAuthCLI writes a shell script that plays the CLI's auth commands:
// status prints the file state's status, logout empties it.
func fakeAuthCLI(t *testing.T, status string) Config {
	t.Helper()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.WriteFile(state, []byte(status), 0o600); err != nil {
		t.Fatal(err)
	}
	script := `#!/bin/sh
case "$1 $2" in
"auth status") if [ -s "$STATE" ]; then cat "$STATE"; else echo '` + statusNone + `'; exit 1; fi ;;
"auth logout") : > "$STATE"; echo "Successfully logged out from your Anthropic account." ;;
*) echo "unexpected: $*" >&2; exit 2 ;;
esac
`
	path := filepath.Join(dir, "claude")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return Config{Path: path, Env: []string{"STATE=" + state}, Dir: dir}
}

func TestLogout(t *testing.T) {
	t.Parallel()
	r, err := Logout(context.Background(), fakeAuthCLI(t, statusStored))
	if err != nil || !r.Cleared || !r.Before.Stored || r.After.LoggedIn || !strings.Contains(r.Output, "logged out") {
		t.Errorf("stored login: %+v %v", r, err)
	}
	// Nothing stored: the CLI still says it logged out; Cleared is false.
	r, err = Logout(context.Background(), fakeAuthCLI(t, ""))
	if err != nil || r.Cleared || r.Before.LoggedIn {
		t.Errorf("no login: %+v %v", r, err)
	}
	if _, err := Logout(context.Background(), Config{Path: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Error("a missing CLI gave no error")
	}
}
