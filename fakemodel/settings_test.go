package fakemodel

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"
)

func TestSettingsOverridesSettingsFiles(t *testing.T) {
	dir := t.TempDir()
	user := filepath.Join(dir, "settings.json")
	os.WriteFile(user, []byte(`{"env":{"CLAUDE_CODE_USE_VERTEX":"1","AWS_PROFILE":"work","EDITOR":"vi","ANTHROPIC_BASE_URL":"https://example.invalid"}}`), 0o600)
	broken := filepath.Join(dir, "broken.json")
	os.WriteFile(broken, []byte(`{"env":`), 0o600)
	srv, err := StartWith(mustDefault(t), nil, Options{MaxLog: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	got := srv.Settings(user, broken, filepath.Join(dir, "missing.json"))
	env := gjson.Get(got, "env")
	for name, want := range map[string]string{
		"CLAUDE_CODE_USE_VERTEX":  "", // named by the file
		"AWS_PROFILE":             "", // named by the file, a provider's
		"CLAUDE_CODE_USE_BEDROCK": "", // a switch, named or not
		"HTTPS_PROXY":             "",
		"ANTHROPIC_BASE_URL":      srv.URL(),
		"ANTHROPIC_API_KEY":       APIKey,
	} {
		if v := env.Get(gjson.Escape(name)); !v.Exists() || v.Str != want {
			t.Errorf("env %s = %s, want %q", name, v.Raw, want)
		}
	}
	if env.Get("EDITOR").Exists() {
		t.Errorf("a variable that sends nothing elsewhere was overridden: %s", got)
	}
}

func mustDefault(t *testing.T) *Scenario {
	t.Helper()
	sc, err := Load("default")
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestTUIConfig(t *testing.T) {
	var s Server
	b := s.TUIConfig("2.1.330", "/w", "/real/w")
	for path, want := range map[string]any{
		"hasCompletedOnboarding":                         true,
		"lastOnboardingVersion":                          "2.1.330",
		"customApiKeyResponses.approved.0":               APIKey,
		`projects./w.hasTrustDialogAccepted`:             true,
		`projects./real/w.hasCompletedProjectOnboarding`: true,
	} {
		got := gjson.GetBytes(b, path)
		if got.Value() != want {
			t.Errorf("%s: %v, want %v in %s", path, got.Value(), want, b)
		}
	}
	if gjson.GetBytes(s.TUIConfig(""), "lastOnboardingVersion").Exists() {
		t.Error("a version with none known")
	}
}
