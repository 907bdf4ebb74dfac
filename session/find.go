package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrCLINotFound is wrapped by every error [FindCLI] returns. Use errors.Is.
var ErrCLINotFound = errors.New("no Claude Code CLI found")

// EnvCLI names the environment variable [FindCLI] consults when no explicit
// path is given.
const EnvCLI = "CCBRIDGE_CLAUDE"

// cliName is the executable name FindCLI looks for on PATH.
const cliName = "claude"

// FindCLI locates the Claude Code CLI. It tries, in order:
//
//  1. explicit (the --claude flag), if non-empty;
//  2. the CCBRIDGE_CLAUDE environment variable, if set;
//  3. "claude" in the directories of getenv("PATH").
//
// The first of explicit and CCBRIDGE_CLAUDE that is set is authoritative: if
// it is unusable FindCLI fails instead of falling back to PATH, so a typo is
// reported rather than silently replaced. A value without a path separator
// is looked up on PATH, as [exec.LookPath] does; relative PATH entries
// (including empty ones) are skipped, for the reason exec.ErrDot exists.
//
// A candidate must be a regular file with an execute bit set, and must not be
// the ccbridge executable self (compared after resolving symbolic links, and
// with os.SameFile to catch hard links); this matters when ccbridge itself is
// installed as "claude" earlier on PATH. On PATH such candidates are skipped
// and the search goes on. self may be empty to disable that check.
//
// The result is an absolute path (symbolic links are kept, not resolved). The
// error wraps [ErrCLINotFound] and names every place that was tried, e.g.
//
//	no Claude Code CLI found: --claude not given; CCBRIDGE_CLAUDE not set; "claude" not on PATH (searched /usr/local/bin, /usr/bin)
func FindCLI(explicit string, getenv func(string) string, self string) (string, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	f := finder{path: getenv("PATH")}
	f.self, f.selfInfo = resolveSelf(self)

	if explicit != "" {
		p, why := f.resolve(explicit)
		if why != "" {
			return "", fmt.Errorf("%w: --claude %q: %s", ErrCLINotFound, explicit, why)
		}
		return p, nil
	}
	if v := getenv(EnvCLI); v != "" {
		p, why := f.resolve(v)
		if why != "" {
			return "", fmt.Errorf("%w: --claude not given; %s=%q: %s", ErrCLINotFound, EnvCLI, v, why)
		}
		return p, nil
	}
	p, why := f.lookPath(cliName)
	if why != "" {
		return "", fmt.Errorf("%w: --claude not given; %s not set; %s", ErrCLINotFound, EnvCLI, why)
	}
	return p, nil
}

type finder struct {
	path     string
	self     string      // ccbridge's resolved absolute path, or ""
	selfInfo fs.FileInfo // its stat, or nil
}

func resolveSelf(self string) (string, fs.FileInfo) {
	if self == "" {
		return "", nil
	}
	abs, err := filepath.Abs(self)
	if err != nil {
		abs = self
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	fi, err := os.Stat(abs)
	if err != nil {
		fi = nil
	}
	return abs, fi
}

// resolve handles an explicit value: a path if it contains a separator, else
// a name to look up on PATH. why is empty on success.
func (f *finder) resolve(v string) (path, why string) {
	if !strings.ContainsRune(v, os.PathSeparator) && !strings.ContainsRune(v, '/') {
		return f.lookPath(v)
	}
	abs, err := filepath.Abs(v)
	if err != nil {
		return "", err.Error()
	}
	if why := f.check(abs); why != "" {
		return "", why
	}
	return abs, ""
}

// lookPath searches f.path for name, skipping candidates that fail check.
func (f *finder) lookPath(name string) (path, why string) {
	if f.path == "" {
		return "", fmt.Sprintf("%q not on PATH (PATH is empty)", name)
	}
	var searched, skipped []string
	for _, dir := range filepath.SplitList(f.path) {
		if dir == "" || !filepath.IsAbs(dir) {
			skipped = append(skipped, fmt.Sprintf("relative PATH entry %q", dir))
			continue
		}
		cand := filepath.Join(dir, name)
		searched = append(searched, dir)
		switch why := f.check(cand); why {
		case "":
			return cand, ""
		case whyMissing:
		default:
			skipped = append(skipped, cand+": "+why)
		}
	}
	msg := fmt.Sprintf("%q not on PATH (searched %s", name, strings.Join(searched, ", "))
	if len(searched) == 0 {
		msg = fmt.Sprintf("%q not on PATH (no absolute PATH entries", name)
	}
	if len(skipped) > 0 {
		msg += "; skipped " + strings.Join(skipped, ", ")
	}
	return "", msg + ")"
}

const whyMissing = "no such file"

// check reports why the absolute path p is not a usable CLI, or "".
func (f *finder) check(p string) string {
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return whyMissing
	case err != nil:
		return err.Error()
	case fi.IsDir():
		return "is a directory"
	case !fi.Mode().IsRegular():
		return "not a regular file"
	case fi.Mode().Perm()&0o111 == 0:
		return "not executable"
	}
	if f.self != "" {
		r, err := filepath.EvalSymlinks(p)
		if err == nil && r == f.self {
			return "is ccbridge itself"
		}
		if f.selfInfo != nil && os.SameFile(fi, f.selfInfo) {
			return "is ccbridge itself"
		}
	}
	return ""
}
