// Package version says which ccbridge this is: the release version a
// release build is stamped with, the commit it was built from, the Go
// that built it, and the Claude Code CLI version its tests ran against.
package version

import (
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
)

// TestedCLI is the Claude Code CLI version the tests ran against: the one
// scripts/install-tools.sh pins (a test checks that the two agree).
const TestedCLI = "2.1.330"

// version is set by release builds:
//
//	go build -ldflags "-X github.com/ccbridge/ccbridge/internal/version.version=v1.2.3"
var version string

// Info is what a build knows about itself.
type Info struct {
	// Version is the release version (stamped with -ldflags), else the
	// module version when ccbridge was built with go install …@version,
	// else "dev".
	Version string
	// Commit is the VCS revision the binary was built from ("" when the
	// build did not record one, as in go run and test binaries), with
	// "-dirty" when the work tree had changes.
	Commit string
	// Time is the commit's time in RFC 3339, "" when not recorded.
	Time string
	// Go is the Go version that built the binary.
	Go string
	// TestedCLI is the Claude Code CLI version the tests ran against.
	TestedCLI string
}

var get = sync.OnceValue(func() Info {
	bi, ok := debug.ReadBuildInfo()
	return fromBuild(version, bi, ok)
})

// Get returns this binary's Info.
func Get() Info { return get() }

// String returns this binary's version: the release version, or "dev"
// followed by the commit where one is known ("dev+3f2a1c9e0b1d").
func String() string {
	i := get()
	if i.Version == "dev" && i.Commit != "" {
		return "dev+" + i.Commit
	}
	return i.Version
}

// fromBuild derives the Info from the stamped version and the build info.
func fromBuild(stamped string, bi *debug.BuildInfo, ok bool) Info {
	i := Info{Version: stamped, Go: runtime.Version(), TestedCLI: TestedCLI}
	if !ok {
		if i.Version == "" {
			i.Version = "dev"
		}
		return i
	}
	if bi.GoVersion != "" {
		i.Go = bi.GoVersion
	}
	var modified, fromVCS bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			fromVCS = true
			i.Commit = s.Value
			if len(i.Commit) > 12 {
				i.Commit = i.Commit[:12]
			}
		case "vcs.time":
			i.Time = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && i.Commit != "" {
		i.Commit += "-dirty"
	}
	if i.Version == "" {
		i.Version = "dev"
		// A build in a checkout gets a module version from the VCS too: a
		// tag on its commit, else a pseudo-version (or +dirty) that
		// names no release. go install …@version records no VCS settings.
		if v := bi.Main.Version; v != "" && v != "(devel)" && !strings.Contains(v, "+dirty") && !(fromVCS && pseudo.MatchString(v)) {
			i.Version = v
		}
	}
	return i
}

// pseudo matches a Go pseudo-version (v0.0.0-20261128010903-f6157fbcfc4f,
// v1.2.4-0.20261128010903-f6157fbcfc4f, v1.3.0-rc.1.0.20261128…-…).
var pseudo = regexp.MustCompile(`[-.]\d{14}-[0-9a-f]{12}(\+incompatible)?$`)
