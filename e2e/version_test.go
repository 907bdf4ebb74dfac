package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestVersionDevelopmentBuild: a development build (the harness's go
// build in this checkout) says it is "dev" and names the commit it was
// built from, and its dialects report the same version.
func TestVersionDevelopmentBuild(t *testing.T) {
	t.Parallel()
	head, err := exec.Command("git", "-C", repoRoot, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): the build records no commit", err)
	}
	out, err := exec.Command(ccbridgeBin, "version", "--json").Output()
	if err != nil {
		t.Fatalf("ccbridge version --json: %v", err)
	}
	v := gjson.ParseBytes(out)
	if got := v.Get("version").String(); got != "dev" {
		t.Errorf("version %q, want dev", got)
	}
	commit := v.Get("commit").String()
	if fi, err := os.Stat(filepath.Join(repoRoot, ".git")); commit == "" && err == nil && !fi.IsDir() {
		// cmd/go finds a repository by its .git directory: in a linked
		// worktree (or a submodule) .git is a file and the build records
		// no VCS information.
		t.Skip("a git worktree: go build records no commit here")
	}
	if want := strings.TrimSpace(string(head))[:12]; strings.TrimSuffix(commit, "-dirty") != want {
		t.Errorf("commit %q, want %s (git rev-parse HEAD)", commit, want)
	}
	if v.Get("testedCLI").String() == "" || !strings.HasPrefix(v.Get("go").String(), "go") {
		t.Errorf("ccbridge version --json: %s", out)
	}

	text, err := exec.Command(ccbridgeBin, "version").Output()
	if err != nil {
		t.Fatalf("ccbridge version: %v", err)
	}
	if first, _, _ := strings.Cut(string(text), "\n"); first != "ccbridge dev" || !strings.Contains(string(text), "commit: "+commit) {
		t.Errorf("ccbridge version:\n%s", text)
	}
	help, _ := exec.Command(ccbridgeBin, "--ui", "ipc", "--help").CombinedOutput()
	if !strings.Contains(string(help), "ccbridge dev+"+commit+":") {
		t.Errorf("--help does not name version dev+%s:\n%s", commit, help)
	}
}
