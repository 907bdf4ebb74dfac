// Package clifiles knows where the Claude Code CLI keeps its files and how
// to read them: the configuration folder ($CLAUDE_CONFIG_DIR, else
// $HOME/.claude, as the child sees its environment), the project folder of
// a working directory (the CLI's own naming rule, hash of long names
// included), the session files in it (<session id>.jsonl, the id a UUID),
// line-by-line reading of those files with a cap on the line length, and
// the one listing of sessions every dialect shows: the files that hold a
// conversation, newest first, each summarized from its head and tail.
//
// It does file I/O and nothing else: no goroutines, no clock, no protocol.
// What a list shows of a file is mapping.SessionSummary, which reads the
// lines this package hands it; what a session file means to a UI beyond
// that is the dialects' business (mapping/rpc, mapping/acp).
//
// # Concurrency
//
// Every function is safe for concurrent use. The functions block on the
// file system, so an event loop that must not wait calls them from a
// background goroutine.
package clifiles

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/framing"
	"github.com/ccbridge/ccbridge/mapping"
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

// ErrInvalidID is Find's error for an id that is not a session id.
var ErrInvalidID = errors.New("not a session id (a UUID)")

// ErrNotRegular is Find's error for a session file's name that is
// something else than a regular file (a folder, say).
var ErrNotRegular = errors.New("not a regular file")

// Find is the one way to find session id's file for cwd. The id must be
// the CLI's session id form (mapping.ValidSessionID: a UUID, so no path
// can be made of it), else the answer is "" and ErrInvalidID. The file is
// the first regular file <id>.jsonl of ProjectDirs, returned with a nil
// error. Without one, the error wraps ErrNotRegular (with the path of the
// first such name that is something else) or fs.ErrNotExist (with the
// path in the first folder, where the CLI would write it).
func Find(configDir, cwd, id string) (string, error) {
	if !mapping.ValidSessionID(id) {
		return "", ErrInvalidID
	}
	odd := ""
	dirs := ProjectDirs(configDir, cwd)
	for _, dir := range dirs {
		p := filepath.Join(dir, id+".jsonl")
		fi, err := os.Stat(p)
		switch {
		case err != nil:
		case fi.Mode().IsRegular():
			return p, nil
		case odd == "":
			odd = p
		}
	}
	if odd != "" {
		return odd, fmt.Errorf("%s: %w", odd, ErrNotRegular)
	}
	p := filepath.Join(dirs[0], id+".jsonl")
	return p, &fs.PathError{Op: "find", Path: p, Err: fs.ErrNotExist}
}

// SessionFile returns the path of session id's regular file for cwd (see
// Find), or "" when there is none or id is no session id.
func SessionFile(configDir, cwd, id string) string {
	p, err := Find(configDir, cwd, id)
	if err != nil {
		return ""
	}
	return p
}

// Session is one session file.
type Session struct {
	ID      string    // the session id: the file name without ".jsonl"
	Path    string    // the file's path
	ModTime time.Time // when the file last changed
	Size    int64     // its size when listed
}

// List returns the session files (regular files named <session id>.jsonl,
// the id a UUID; other files are not the CLI's sessions) of cwd's project
// folders (ProjectDirs), the most recently changed first. A folder
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
		if !ok || !e.Type().IsRegular() || !mapping.ValidSessionID(id) {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		files = append(files, Session{ID: id, Path: filepath.Join(dir, e.Name()), ModTime: fi.ModTime(), Size: fi.Size()})
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

// EndBytes is how much of each end of a session file Read reads.
const EndBytes = 64 << 10

// Info is a session file as a list shows it.
type Info struct {
	Session
	// The summary of the file's head and tail (of all of it, when it is
	// at most 2*EndBytes long). Its Messages counts those lines alone:
	// what it tells is Conversation; Summarize counts the whole file.
	mapping.SessionSummary
}

// ends is a buffer for the two ends of a file.
var ends = sync.Pool{New: func() any { return new([2*EndBytes + 1]byte) }}

// Read summarizes the session file f from its first and last EndBytes
// (the whole file when it is at most twice that long), never more,
// whatever the file's size: the CLI writes the first prompt and the
// working directory at the top, and appends the latest prompt and the
// titles again at the end. A line cut by either bound is skipped. The
// error is the one of opening the file (removed meanwhile).
//
// What Read returns depends on the file's bytes alone, so it is cached,
// keyed by the file's path and checked against its size and modification
// time: a file whose size and time are those it had at the last Read is
// not opened again (one stat, no read), so listing the same folders again
// (a UI's list after every turn) reads only the files that changed.
func Read(f Session) (Info, error) {
	in := Info{Session: f}
	fi, err := os.Stat(f.Path)
	if err != nil {
		return in, err
	}
	if sum, ok := summaries.get(f.Path, fi.Size(), fi.ModTime()); ok {
		in.SessionSummary = sum
		return in, nil
	}
	fh, err := os.Open(f.Path)
	if err != nil {
		return in, err
	}
	defer fh.Close()
	if fi, err = fh.Stat(); err != nil {
		return in, err
	}
	buf := ends.Get().(*[2*EndBytes + 1]byte)
	defer ends.Put(buf)
	readEnds(fh, fi.Size(), buf[:], in.SessionSummary.Line)
	summaries.put(f.Path, fi.Size(), fi.ModTime(), in.SessionSummary)
	return in, nil
}

// summaryCacheSize bounds the summaries Read keeps.
const summaryCacheSize = 4096

// summaries is Read's cache.
var summaries = summaryCache{m: map[string]cachedSummary{}}

// summaryCache maps a file's path to the summary Read made of it, with
// the size and modification time the file had then. It holds at most
// summaryCacheSize entries: when full, a quarter of them, chosen at
// random, make room.
type summaryCache struct {
	mu sync.Mutex
	m  map[string]cachedSummary
}

type cachedSummary struct {
	size int64
	mod  time.Time
	sum  mapping.SessionSummary
}

// get returns path's summary when it was made of a file of that size and
// modification time (a zero time is never cached: nothing says what the
// file was).
func (c *summaryCache) get(path string, size int64, mod time.Time) (mapping.SessionSummary, bool) {
	if mod.IsZero() {
		return mapping.SessionSummary{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[path]
	if !ok || e.size != size || !e.mod.Equal(mod) {
		return mapping.SessionSummary{}, false
	}
	return e.sum, true
}

func (c *summaryCache) put(path string, size int64, mod time.Time, sum mapping.SessionSummary) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[path]; !ok && len(c.m) >= summaryCacheSize {
		n := summaryCacheSize / 4
		for k := range c.m { // map order: at random
			delete(c.m, k)
			if n--; n == 0 {
				break
			}
		}
	}
	c.m[path] = cachedSummary{size, mod, sum}
}

// readEnds calls fn with the whole lines of the first and the last
// EndBytes of r, a file of size bytes (all of its lines when it is at
// most 2*EndBytes long), in order, reading nothing else; buf holds
// 2*EndBytes+1 bytes.
func readEnds(r io.ReaderAt, size int64, buf []byte, fn func([]byte)) {
	if size <= 2*EndBytes {
		n, _ := r.ReadAt(buf[:size], 0) // short: the file shrank, or is unreadable past n
		splitLines(buf[:n], true, true, fn)
		return
	}
	head := buf[:EndBytes]
	n, _ := r.ReadAt(head, 0)
	splitLines(head[:n], true, false, fn)
	// One byte more before the tail: a newline there means the tail
	// starts with a whole line.
	tail := buf[EndBytes:]
	n, _ = r.ReadAt(tail, size-EndBytes-1)
	splitLines(tail[:n], false, true, fn)
}

// splitLines calls fn with each non-blank line of b, without its "\n" or
// "\r\n". Unless atStart, b's first line (up to its first newline) is cut
// and skipped; unless atEnd, so is the text after its last newline.
func splitLines(b []byte, atStart, atEnd bool, fn func([]byte)) {
	if !atStart {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return
		}
		b = b[i+1:]
	}
	if !atEnd {
		b = b[:bytes.LastIndexByte(b, '\n')+1]
	}
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			fn(line)
		}
	}
}

// Conversations reads the files in order (Read) and returns those that
// hold a conversation (mapping.SessionSummary.Conversation) and that keep
// accepts (nil keeps all): from the offset-th of them on, at most limit
// (limit <= 0: no limit). more tells whether one more follows the page,
// which takes reading it. A file that cannot be read (removed meanwhile)
// is left out. When ctx ends, it stops with ctx's error.
//
// With the files of List or ListAll, this is every dialect's session
// list: newest first, conversations only.
func Conversations(ctx context.Context, files []Session, offset, limit int, keep func(*Info) bool) (page []Info, more bool, err error) {
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		in, rerr := Read(f)
		if rerr != nil || !in.Conversation() || keep != nil && !keep(&in) {
			continue
		}
		if offset > 0 {
			offset--
			continue
		}
		if limit > 0 && len(page) == limit {
			return page, true, nil
		}
		page = append(page, in)
	}
	return page, false, nil
}

// Summarize reads the whole session file at path (lines over MaxLine
// skipped) into a summary, where Read reads its ends only: for what only
// the whole file tells (how many messages it holds). When ctx ends, it
// stops with ctx's error.
func Summarize(ctx context.Context, path string) (mapping.SessionSummary, error) {
	var s mapping.SessionSummary
	err := EachLine(path, MaxLine, func(line []byte) bool {
		s.Line(line)
		return ctx.Err() == nil
	})
	return s, cmp.Or(err, ctx.Err())
}

// Lines calls fn with every line of the session file at path that is
// part of its conversation, skipping lines over MaxLine, until ctx ends
// (then it returns ctx's error). The line is fn's only until it returns.
// The entries a rewind dropped (mapping.Rewinds) are left out, and so
// are the rewind markers: a file holding a marker is read twice, so that
// a history shows the conversation as the CLI goes on with it.
func Lines(ctx context.Context, path string, fn func(line []byte)) error {
	rw, err := ReadRewinds(ctx, path)
	if err != nil {
		return err
	}
	err = EachLine(path, MaxLine, func(line []byte) bool {
		if !rw.Dropped(line) {
			fn(line)
		}
		return ctx.Err() == nil
	})
	return cmp.Or(err, ctx.Err())
}

// ReadRewinds reads the session file at path for its rewinds: what
// Lines leaves out. A reader that goes through the file in its own way
// (acp's replay) skips the lines it reports Dropped.
// A file without a marker is read once, for the marker, and no line
// of it parsed.
func ReadRewinds(ctx context.Context, path string) (*mapping.Rewinds, error) {
	var rw mapping.Rewinds
	marked := false
	err := EachLine(path, MaxLine, func(line []byte) bool {
		_, marked = mapping.RewindCut(line)
		return !marked && ctx.Err() == nil
	})
	if !marked || err != nil {
		return &rw, cmp.Or(err, ctx.Err())
	}
	err = EachLine(path, MaxLine, func(line []byte) bool {
		rw.Line(line)
		return ctx.Err() == nil
	})
	return &rw, cmp.Or(err, ctx.Err())
}
