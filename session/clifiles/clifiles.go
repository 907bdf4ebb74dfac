// Package clifiles knows where the Claude Code CLI keeps its files and how
// to read them: the configuration folder ($CLAUDE_CONFIG_DIR, else
// $HOME/.claude, as the child sees its environment), the project folder of
// a working directory (the CLI's own naming rule, hash of long names
// included), the session files in it (<session id>.jsonl), and line-by-line
// reading of those files with a cap on the line length.
//
// It does file I/O and nothing else: no goroutines, no clock, no protocol.
// What a session file means to a UI is the dialects' business
// (mapping/rpc, mapping/acp); this package only finds the files and hands
// over their lines.
//
// # Concurrency
//
// Every function is safe for concurrent use. The functions block on the
// file system, so an event loop that must not wait calls them from a
// background goroutine.
package clifiles

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/framing"
)

// MaxLine is the line cap for session files that Resumable uses and that
// callers of EachLine pass by default: longer lines (huge tool results) are
// skipped.
const MaxLine = 64 << 20

// Getenv reads the variable key as a child started with the environment
// entries env ("KEY=value", the child's Config.Env) will see it: the last
// entry for key wins, and without one, fallback(key) (nil means os.Getenv,
// the environment the child inherits).
func Getenv(env []string, fallback func(string) string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	if fallback == nil {
		return os.Getenv(key)
	}
	return fallback(key)
}

// ConfigDir returns the CLI's configuration folder as seen through getenv
// (see Getenv): $CLAUDE_CONFIG_DIR, else $HOME/.claude, where an empty HOME
// falls back to os.UserHomeDir.
func ConfigDir(getenv func(string) string) string {
	if d := getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return d
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir() // best effort: "" leaves a relative .claude
	}
	return filepath.Join(home, ".claude")
}

// maxProjectDirName is where the CLI cuts a long project folder name and
// appends a hash.
const maxProjectDirName = 200

// ProjectDirName returns the folder under <config dir>/projects where the
// CLI keeps the session files of the working directory cwd (an absolute
// path with symbolic links resolved, as the CLI sees its cwd): every
// character other than an ASCII letter or digit becomes "-" (one per
// UTF-16 code unit, as the CLI's JavaScript counts, so a character outside
// the Basic Multilingual Plane becomes "--"), and a name longer than 200
// is cut to 200 and followed by "-" and the base-36 absolute value of the
// Java-style 32-bit hash of cwd's UTF-16 code units. Checked against the
// real CLI 2.1.330 (docs/protocol/rpc.md, "Session files").
func ProjectDirName(cwd string) string {
	var b strings.Builder
	b.Grow(len(cwd))
	units := 0
	for i := 0; i < len(cwd); {
		r, size := utf8.DecodeRuneInString(cwd[i:])
		i += size
		switch {
		case r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'):
			b.WriteByte(byte(r))
			units++
		case r > 0xFFFF:
			b.WriteString("--")
			units += 2
		default:
			b.WriteByte('-')
			units++
		}
	}
	s := b.String()
	if units <= maxProjectDirName {
		return s
	}
	var h int32
	for _, u := range utf16.Encode([]rune(cwd)) {
		h = 31*h + int32(u)
	}
	abs := int64(h)
	if abs < 0 {
		abs = -abs
	}
	// s is ASCII, one byte per UTF-16 unit: the cut is at 200 units.
	return s[:maxProjectDirName] + "-" + strconv.FormatInt(abs, 36)
}

// ProjectDir is the folder where the CLI keeps the session files of cwd
// (see ProjectDirName), under the configuration folder configDir. It may
// not exist.
func ProjectDir(configDir, cwd string) string {
	return filepath.Join(configDir, "projects", ProjectDirName(cwd))
}

// ProjectDirs returns the folders that may hold cwd's session files: the
// one named after cwd as given, then the one named after cwd with symbolic
// links resolved, without repeats. The folders may not exist.
func ProjectDirs(configDir, cwd string) []string {
	dirs := []string{ProjectDir(configDir, cwd)}
	if real, err := filepath.EvalSymlinks(cwd); err == nil {
		if d := ProjectDir(configDir, real); d != dirs[0] {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// SessionFile returns the path of session id's file for cwd (in one of
// ProjectDirs), or "" when there is no such regular file. An id holding a
// "/" or "\", and the ids "." and "..", are refused with "".
func SessionFile(configDir, cwd, id string) string {
	if strings.ContainsAny(id, `/\`) || id == "." || id == ".." {
		return ""
	}
	for _, dir := range ProjectDirs(configDir, cwd) {
		p := filepath.Join(dir, id+".jsonl")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// Session is one session file.
type Session struct {
	ID      string    // the file name without ".jsonl"
	Path    string    // the file's path
	ModTime time.Time // when the file last changed
}

// List returns the session files (regular files named *.jsonl) of cwd's
// project folders (ProjectDirs), the most recently changed first. A folder
// that does not exist adds nothing; the error reports folders that exist
// but cannot be read, and the files of the others are still returned.
func List(configDir, cwd string) ([]Session, error) {
	return listDirs(ProjectDirs(configDir, cwd))
}

// ListAll returns the session files of every project folder under
// configDir, the most recently changed first. A missing projects folder is
// an empty list; the error reports folders that cannot be read, and the
// files of the others are still returned.
func ListAll(configDir string) ([]Session, error) {
	root := filepath.Join(configDir, "projects")
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var dirs []string
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			dirs = append(dirs, dir) // else not a project folder, or removed meanwhile
		}
	}
	return listDirs(dirs, err)
}

// listDirs lists the session files of dirs, the most recently changed
// first; the error joins errs and the folders that exist but cannot be
// read.
func listDirs(dirs []string, errs ...error) ([]Session, error) {
	var files []Session
	for _, dir := range dirs {
		var err error
		files, err = appendSessions(files, dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	sortNewestFirst(files)
	return files, errors.Join(errs...)
}

// appendSessions appends the session files of dir, in name order.
func appendSessions(files []Session, dir string) ([]Session, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return files, err
	}
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".jsonl")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		files = append(files, Session{ID: id, Path: filepath.Join(dir, e.Name()), ModTime: fi.ModTime()})
	}
	return files, nil
}

// sortNewestFirst sorts by modification time, newest first; files changed
// at the same time keep their order.
func sortNewestFirst(files []Session) {
	slices.SortStableFunc(files, func(a, b Session) int { return b.ModTime.Compare(a.ModTime) })
}

// EachLine calls fn with the lines of the file at path, in order, until fn
// returns false or the file ends. Blank lines are skipped, and so are
// lines longer than maxLine bytes (maxLine <= 0 means MaxLine). The slice
// fn gets is valid only until fn returns. The error is the one of opening
// or reading the file; the end of the file is not an error.
func EachLine(path string, maxLine int, fn func(line []byte) bool) error {
	if maxLine <= 0 {
		maxLine = MaxLine
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fr := framing.NewReader(f, maxLine)
	for {
		line, err := fr.ReadLine()
		switch {
		case errors.Is(err, framing.ErrLineTooLong):
			continue
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return err
		}
		if !fn(line) {
			return nil
		}
	}
}

// Resumable reports whether the session file at path holds a conversation
// the CLI can resume (--resume): a user or assistant entry. It reads only
// until the first one, which is near the top. A file that is missing or
// cannot be read is not resumable.
func Resumable(path string) bool {
	found := false
	_ = EachLine(path, MaxLine, func(line []byte) bool { // an unreadable file: found stays false
		t := gjson.GetBytes(line, "type").Str
		found = t == "user" || t == "assistant"
		return !found
	})
	return found
}

// ReadEnds reads the first n bytes (n > 0) of the file at path and, when
// the file is longer than n, its last n bytes too (tail is nil otherwise);
// the two overlap when the file is shorter than 2n. The error is the one
// of opening the file; a read that fails later leaves head or tail short.
func ReadEnds(path string, n int) (head, tail []byte, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	head = make([]byte, n)
	m, _ := io.ReadFull(f, head) // short: the file is shorter, or unreadable past m
	head = head[:m]
	if fi, err := f.Stat(); err == nil && fi.Size() > int64(n) {
		tail = make([]byte, n)
		m, _ := f.ReadAt(tail, fi.Size()-int64(n)) // short: see above
		tail = tail[:m]
	}
	return head, tail, nil
}
