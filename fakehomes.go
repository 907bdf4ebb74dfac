package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ccbridge/ccbridge/fakemodel"
)

// agentHome is a home that ccbridge under --fake-model makes for the
// program a pty worker runs (the CLI's own TUI, Codex, Gemini CLI), so
// that it reaches the fake model and starts with no dialog open: a
// temporary folder named ccbridge-<name>-<pid>-…, made for the first such
// program and removed when ccbridge stops (killed with SIGKILL, ccbridge
// leaves it behind). The user's own configuration is never read or
// written. docs/fake-model.md.
type agentHome struct {
	name string
	// files are the home's files (paths relative to it), written anew each
	// time a folder is trusted; env is what the program is given.
	files func(trusted []string) map[string][]byte
	env   func(dir string) []string

	mu      sync.Mutex
	dir     string // "" until the first program
	trusted []string
}

// agentHomes are the homes of the programs --fake-model prepares.
type agentHomes struct{ tui, codex, gemini *agentHome }

// newAgentHomes returns the homes of the fake srv; cli is the CLI, asked
// once for its version for the TUI's.
func newAgentHomes(srv *fakemodel.Server, cli string) *agentHomes {
	version := sync.OnceValue(func() string { return cliVersion(cli) })
	return &agentHomes{
		// The TUI's HOME: its .claude.json (fakemodel.Server.TUIConfig)
		// with onboarding done, the fake's key approved and each working
		// directory trusted; CLAUDE_CONFIG_DIR points into it too, with
		// the same file, so that a CLAUDE_CONFIG_DIR of the user's does
		// not lead the TUI back to the user's configuration.
		tui: &agentHome{name: "tui",
			files: func(trusted []string) map[string][]byte {
				cfg := srv.TUIConfig(version(), trusted...)
				return map[string][]byte{".claude.json": cfg, filepath.Join(".claude", ".claude.json"): cfg}
			},
			env: func(dir string) []string {
				return []string{"HOME=" + dir, "CLAUDE_CONFIG_DIR=" + filepath.Join(dir, ".claude")}
			},
		},
		// Codex's CODEX_HOME: its config.toml points it at the fake's
		// Responses API and trusts each working directory (its TUI asks
		// to trust a git repository's folder otherwise).
		codex: &agentHome{name: "codex",
			files: func(trusted []string) map[string][]byte {
				return map[string][]byte{"config.toml": srv.CodexConfig(trusted...)}
			},
			env: func(dir string) []string { return []string{"CODEX_HOME=" + dir} },
		},
		// Gemini CLI's GEMINI_CLI_HOME: its .gemini/settings.json chooses
		// the API key's login and leaves out every dialog of a first
		// start; GeminiEnv points it at the fake and trusts its folder.
		gemini: &agentHome{name: "gemini",
			files: func([]string) map[string][]byte {
				return map[string][]byte{filepath.Join(".gemini", "settings.json"): srv.GeminiSettings()}
			},
			env: srv.GeminiEnv,
		},
	}
}

// of is the home of program ("": the CLI's own TUI; else chosen by its
// base name), nil for a program with none.
func (hs *agentHomes) of(program string) *agentHome {
	if program == "" {
		return hs.tui
	}
	switch filepath.Base(program) {
	case "codex":
		return hs.codex
	case "gemini":
		return hs.gemini
	}
	return nil
}

func (hs *agentHomes) remove() {
	for _, h := range []*agentHome{hs.tui, hs.codex, hs.gemini} {
		h.remove()
	}
}

// trust makes the home when there is none, adds dir ("" is ccbridge's
// own) and the real path it names to the trusted folders, writes the
// home's files, and returns the program's environment.
func (h *agentHome) trust(dir string) ([]string, error) {
	abs, err := filepath.Abs(cmp.Or(dir, "."))
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dir == "" {
		if h.dir, err = os.MkdirTemp("", fmt.Sprintf("ccbridge-%s-%d-", h.name, os.Getpid())); err != nil {
			return nil, err
		}
	}
	for _, d := range []string{abs, realPath(abs)} {
		if !slices.Contains(h.trusted, d) {
			h.trusted = append(h.trusted, d)
		}
	}
	for name, b := range h.files(h.trusted) {
		f := filepath.Join(h.dir, name)
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			return nil, err
		}
		// Replaced at once: a program starting meanwhile reads the old
		// file or the new one, never half of one.
		if err := os.WriteFile(f+".new", b, 0o600); err != nil {
			return nil, err
		}
		if err := os.Rename(f+".new", f); err != nil {
			return nil, err
		}
	}
	return h.env(h.dir), nil
}

// remove removes the home, if there is one.
func (h *agentHome) remove() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dir != "" {
		os.RemoveAll(h.dir) // Best effort.
	}
}

// cliVersion is the version the CLI at path prints first ("2.1.330"), or
// "" when it prints none within 5 s.
func cliVersion(path string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return ""
	}
	v, _, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	return v
}
