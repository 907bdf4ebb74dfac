//go:build unix

package session

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindCLI(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mk := func(rel string, mode os.FileMode) string {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dir := func(rel string) string {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	self := mk("ccbridge/bin/ccbridge", 0o755)
	good := mk("good/claude", 0o755)
	other := mk("other/claude", 0o755)
	noexec := mk("noexec/claude", 0o644)
	empty := dir("empty")
	isDir := dir("isdir/claude")
	selfLinkDir := dir("selflink")
	if err := os.Symlink(self, filepath.Join(selfLinkDir, "claude")); err != nil {
		t.Fatal(err)
	}
	selfHardDir := dir("selfhard")
	if err := os.Link(self, filepath.Join(selfHardDir, "claude")); err != nil {
		t.Fatal(err)
	}
	goodLinkDir := dir("goodlink")
	goodLink := filepath.Join(goodLinkDir, "claude")
	if err := os.Symlink(good, goodLink); err != nil {
		t.Fatal(err)
	}
	// self reached through a symlinked directory must still count as self.
	selfViaLink := filepath.Join(root, "selfdirlink")
	if err := os.Symlink(filepath.Dir(self), selfViaLink); err != nil {
		t.Fatal(err)
	}
	path := func(dirs ...string) string { return strings.Join(dirs, string(os.PathListSeparator)) }

	for _, tc := range []struct {
		name     string
		explicit string
		env      map[string]string
		self     string
		want     string   // "" means an error is wanted
		errHas   []string // substrings of the error
	}{
		{name: "explicit", explicit: other, env: map[string]string{"CCBRIDGE_CLAUDE": good, "PATH": filepath.Dir(good)}, want: other},
		{name: "explicit bare name looked up on PATH", explicit: "claude", env: map[string]string{"PATH": filepath.Dir(other)}, want: other},
		{name: "explicit missing is not replaced", explicit: filepath.Join(empty, "claude"), env: map[string]string{"CCBRIDGE_CLAUDE": good},
			errHas: []string{`--claude "` + filepath.Join(empty, "claude") + `": no such file`}},
		{name: "explicit not executable", explicit: noexec, errHas: []string{"not executable"}},
		{name: "explicit directory", explicit: isDir, errHas: []string{"is a directory"}},
		{name: "explicit is self", explicit: self, self: self, errHas: []string{"is ccbridge itself"}},
		{name: "env", env: map[string]string{"CCBRIDGE_CLAUDE": good, "PATH": filepath.Dir(other)}, want: good},
		{name: "env missing", env: map[string]string{"CCBRIDGE_CLAUDE": filepath.Join(empty, "x"), "PATH": filepath.Dir(other)},
			errHas: []string{"--claude not given", `CCBRIDGE_CLAUDE="` + filepath.Join(empty, "x") + `": no such file`}},
		{name: "PATH first match", env: map[string]string{"PATH": path(empty, filepath.Dir(good), filepath.Dir(other))}, want: good},
		{name: "PATH skips non-executable and directories", env: map[string]string{"PATH": path(filepath.Dir(noexec), filepath.Dir(isDir), filepath.Dir(other))}, want: other},
		{name: "PATH skips self", self: self, env: map[string]string{"PATH": path(filepath.Dir(self)+"/../bin", filepath.Dir(good))}, want: good},
		{name: "PATH skips symlink to self", self: self, env: map[string]string{"PATH": path(selfLinkDir, filepath.Dir(good))}, want: good},
		{name: "PATH skips hard link to self", self: self, env: map[string]string{"PATH": path(selfHardDir, filepath.Dir(good))}, want: good},
		{name: "self given through a symlinked dir", self: filepath.Join(selfViaLink, "ccbridge"), env: map[string]string{"PATH": path(selfLinkDir, filepath.Dir(good))}, want: good},
		{name: "symlink to the real CLI is kept", self: self, env: map[string]string{"PATH": goodLinkDir}, want: goodLink},
		{name: "PATH skips relative entries", env: map[string]string{"PATH": path("", ".", "good", filepath.Dir(other))}, want: other},
		{name: "nothing anywhere", env: map[string]string{"PATH": path(empty, filepath.Dir(noexec), selfLinkDir)}, self: self,
			errHas: []string{"no Claude Code CLI found: --claude not given; CCBRIDGE_CLAUDE not set; \"claude\" not on PATH (searched " + empty,
				noexec + ": not executable", filepath.Join(selfLinkDir, "claude") + ": is ccbridge itself"}},
		{name: "empty PATH", env: map[string]string{}, errHas: []string{"--claude not given; CCBRIDGE_CLAUDE not set; \"claude\" not on PATH (PATH is empty)"}},
		{name: "only relative PATH", env: map[string]string{"PATH": "bin"}, errHas: []string{`no absolute PATH entries; skipped relative PATH entry "bin"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string { return tc.env[k] }
			got, err := FindCLI(tc.explicit, getenv, tc.self)
			if tc.want != "" {
				if err != nil || got != tc.want {
					t.Fatalf("FindCLI = %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("FindCLI = %q, want an error", got)
			}
			if !errors.Is(err, ErrCLINotFound) {
				t.Errorf("error %v does not wrap ErrCLINotFound", err)
			}
			for _, s := range tc.errHas {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q\ndoes not contain %q", err, s)
				}
			}
		})
	}
}

// A relative explicit path comes back absolute, so a later Config.Dir does
// not change its meaning.
func TestFindCLIRelativeExplicit(t *testing.T) {
	// Not parallel: it changes the working directory.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "claude"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	got, err := FindCLI("./claude", func(string) string { return "" }, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "claude"); got != want {
		t.Errorf("FindCLI = %q, want %q", got, want)
	}
}
