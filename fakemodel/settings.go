package fakemodel

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/session/clifiles"
)

// backends are the CLI's (2.1.330) switches to a provider other than the
// Anthropic API, the ANTHROPIC_BASE_URL the fake serves. Settings turns
// each off whether or not a settings file names it.
var backends = []string{
	"CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY",
	"CLAUDE_CODE_USE_GATEWAY", "CLAUDE_CODE_USE_MANTLE",
	"CLAUDE_CODE_USE_ANTHROPIC_AWS", "CLAUDE_CODE_USE_ANTHROPIC_GOOGLE_CLOUD",
	"ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
	"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
}

// Settings returns the value of the CLI's --settings flag that keeps a CLI
// pointed at the fake when its settings files would send it elsewhere.
//
// The "env" key of the CLI's settings files (the user's settings.json, a
// project's .claude/settings.json and .claude/settings.local.json) sets
// variables inside the CLI, over the environment it was started with: a
// user whose settings.json holds CLAUDE_CODE_USE_BEDROCK=1 would have the
// CLI call Bedrock however clean its environment. Settings given with
// --settings take precedence over those files (not over an
// administrator's managed settings), so its "env" sets what Env sets, turns
// every provider switch off, and blanks every variable the files name that
// Redirects reports. files are the settings files to look into; a missing
// or unreadable file is skipped. Nothing in the result is secret.
func (s *Server) Settings(files ...string) string {
	env := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		gjson.GetBytes(b, "env").ForEach(func(k, _ gjson.Result) bool {
			if Redirects(k.String()) {
				env[k.String()] = ""
			}
			return true
		})
	}
	for _, name := range backends {
		env[name] = ""
	}
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	b, _ := json.Marshal(map[string]any{"env": env}) // strings only: cannot fail
	return string(b)
}

// SettingsFiles returns the settings files the CLI reads for a session in
// cwd, whose "env" Settings must override: the user's (in the CLI's
// configuration folder, found through getenv) and the project's two.
func SettingsFiles(getenv func(string) string, cwd string) []string {
	return []string{
		filepath.Join(clifiles.ConfigDir(getenv), "settings.json"),
		filepath.Join(cwd, ".claude", "settings.json"),
		filepath.Join(cwd, ".claude", "settings.local.json"),
	}
}

// TUIConfig returns a ~/.claude.json for the CLI's interactive TUI (a pty
// worker of --fake-model) that leaves out every dialog of a first start:
// onboarding done (at version, the CLI's own; "" leaves it out), the key
// Env hands it (APIKey) approved, and each of the trusted folders
// trusted and onboarded. Without it the TUI stops at a connectivity
// check to the real API, then asks whether to use the custom key (its
// default answer, No, leaves every prompt "Not logged in"), then whether
// to trust the folder.
func (s *Server) TUIConfig(version string, trusted ...string) []byte {
	projects := make(map[string]any, len(trusted))
	for _, d := range trusted {
		projects[d] = map[string]any{"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}
	}
	cfg := map[string]any{
		"hasCompletedOnboarding": true,
		"theme":                  "dark",
		"customApiKeyResponses":  map[string]any{"approved": []string{APIKey}, "rejected": []string{}},
		"projects":               projects,
	}
	if version != "" {
		cfg["lastOnboardingVersion"] = version
	}
	b, _ := json.Marshal(cfg) // strings, bools and maps of them: cannot fail
	return b
}
