package version

import (
	"os"
	"regexp"
	"runtime/debug"
	"testing"
)

func TestFromBuild(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: rev},
			{Key: "vcs.time", Value: "2026-11-28T01:00:00Z"},
			{Key: "vcs.modified", Value: modified},
		}
	}
	const rev = "3f2a1c9e0b1d4e5f60718293a4b5c6d7e8f90a1b"
	for _, tc := range []struct {
		name     string
		stamped  string
		bi       *debug.BuildInfo
		ok       bool
		version  string
		commit   string
		asString string
	}{
		{"no build info", "", nil, false, "dev", "", "dev"},
		{"release build", "v1.2.3", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, "false")}, true, "v1.2.3", "3f2a1c9e0b1d", "v1.2.3"},
		{"development build", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, "false")}, true, "dev", "3f2a1c9e0b1d", "dev+3f2a1c9e0b1d"},
		{"dirty tree", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, "true")}, true, "dev", "3f2a1c9e0b1d-dirty", "dev+3f2a1c9e0b1d-dirty"},
		{"go install @version", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, true, "v1.4.0", "", "v1.4.0"},
		{"go install @commit", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261128010903-f6157fbcfc4f"}}, true, "v0.0.0-20261128010903-f6157fbcfc4f", "", "v0.0.0-20261128010903-f6157fbcfc4f"},
		// Go 1.24+ stamps a build in a clean checkout with the tag of its
		// commit, else a pseudo-version: only the tag is a release.
		{"checkout at a tag", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.5.0"}, Settings: vcs(rev, "false")}, true, "v1.5.0", "3f2a1c9e0b1d", "v1.5.0"},
		{"checkout past a tag", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.5.1-0.20261128010903-3f2a1c9e0b1d"}, Settings: vcs(rev, "false")}, true, "dev", "3f2a1c9e0b1d", "dev+3f2a1c9e0b1d"},
		{"clean checkout, no tag", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261128010903-3f2a1c9e0b1d"}, Settings: vcs(rev, "false")}, true, "dev", "3f2a1c9e0b1d", "dev+3f2a1c9e0b1d"},
		// Go 1.24+ stamps a pseudo-version with +dirty from a modified
		// checkout: not a release.
		{"pseudo-version of a dirty tree", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261128010000-3f2a1c9e0b1d+dirty"}, Settings: vcs(rev, "true")}, true, "dev", "3f2a1c9e0b1d-dirty", "dev+3f2a1c9e0b1d-dirty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := fromBuild(tc.stamped, tc.bi, tc.ok)
			if i.Version != tc.version || i.Commit != tc.commit {
				t.Errorf("version %q commit %q, want %q %q", i.Version, i.Commit, tc.version, tc.commit)
			}
			if i.TestedCLI != TestedCLI || i.Go == "" {
				t.Errorf("tested CLI %q, Go %q", i.TestedCLI, i.Go)
			}
			saved := get
			get = func() Info { return i }
			defer func() { get = saved }()
			if s := String(); s != tc.asString {
				t.Errorf("String() = %q, want %q", s, tc.asString)
			}
		})
	}
}

// TestTestedCLIIsPinned: the CLI version ccbridge says it was tested with
// is the one the test tools install.
func TestTestedCLIIsPinned(t *testing.T) {
	b, err := os.ReadFile("../../scripts/install-tools.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^CLI_VERSION=(\S+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("scripts/install-tools.sh sets no CLI_VERSION")
	}
	if string(m[1]) != TestedCLI {
		t.Errorf("scripts/install-tools.sh pins CLI %s, TestedCLI is %s", m[1], TestedCLI)
	}
}
