package acp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/framing"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/acp"
	"github.com/ccbridge/ccbridge/session"
	"github.com/ccbridge/ccbridge/session/clifiles"
)

// The CLI's session files: <claudeDir>/projects/<clifiles.ProjectDirName
// of the cwd>/<session id>.jsonl. Reading them is the only file I/O of the
// dialect, and it happens off the loop (Loop.Go): session/load's lookup
// and replay, session/resume's lookup and session/list. A replay hands its
// lines to the loop in bounded batches, which the loop translates in order
// between other work, so a session/cancel never waits behind a long
// history. What runs off the loop reads only what does not change once
// Run has begun (the configuration, claudeDir, a session's id and cwd).

// acpListPage is how many sessions one session/list answer holds.
const acpListPage = 100

// A replay batch holds at most replayBatchLines lines and, unless one line
// is longer, replayBatchBytes bytes.
const (
	replayBatchLines = 256
	replayBatchBytes = 256 << 10
)

// sessionFile returns the path of a session's file for cwd, or "" when
// there is none.
func (l *acpLoop) sessionFile(cwd, id string) string {
	return clifiles.SessionFile(l.claudeDir, cwd, id)
}

// findSession finds the file of session sid for cwd and checks that the
// CLI can resume it (it holds a user or assistant message: the CLI writes
// its file lazily, and --resume of one without answers "No conversation
// found"), or returns the client's error for method. It reads the file:
// call it off the loop.
func (l *acpLoop) findSession(method, cwd, sid string) (string, *acp.Error) {
	path := l.sessionFile(cwd, sid)
	if path == "" {
		return "", acp.NotFound(method + ": no session " + strconv.Quote(sid) + " for " + cwd + " in " + l.claudeDir + "/projects")
	}
	if !clifiles.Resumable(path) {
		return "", acp.NotFound(method + ": session " + strconv.Quote(sid) + " has no conversation to resume (" + path + " holds no user or assistant message)")
	}
	return path, nil
}

// replay sends the conversation of the session file at path as
// session/update notifications of translator tr: the file is read off the
// loop, a batch at a time (the next one is read while the loop translates
// this one), and translated on the loop in order. then runs on the loop
// after the last batch (complete), or when the replay stopped early: the
// session is gone, or ccbridge is shutting down (not complete).
func (l *acpLoop) replay(s *acpSession, tr *acp.Translator, path string, then func(complete bool)) {
	r := &sessionReader{path: path, maxLine: l.cfg.MaxLine, log: l.log.With("session", s.id)}
	var step func(ctx context.Context) func()
	step = func(ctx context.Context) func() {
		b := r.batch(ctx)
		return func() {
			defer l.emit()
			if b.err != nil || l.sessions[s.id] != s {
				r.close()
				tr.ReplayDone()
				then(false)
				return
			}
			if !b.last {
				l.loop.Go(step)
			}
			for _, line := range b.lines {
				l.out = tr.Replay(line, l.out)
			}
			if b.last {
				tr.ReplayDone()
				l.log.Info("session replayed", "session", s.id, "lines", r.lines)
				then(true)
			}
		}
	}
	l.loop.Go(step)
}

// sessionReader reads a session file for a replay, one batch at a time.
// It belongs to the goroutine reading a batch, then to the loop, in turn.
type sessionReader struct {
	path    string
	maxLine int
	log     *slog.Logger
	f       *os.File
	fr      *framing.Reader
	lines   int // lines read so far
	// rw: the entries rewinds dropped from the conversation, left out of
	// the replay as every history leaves them out (clifiles.Lines).
	rw *mapping.Rewinds
}

// replayBatch is what one read of a sessionReader gives: lines (in a
// buffer of their own), whether the file ended, or why the read stopped.
type replayBatch struct {
	lines [][]byte
	last  bool
	err   error
}

// batch reads the next lines of the file. A file that cannot be opened or
// read ends the replay where it is (it is logged); a line over maxLine is
// skipped and logged; ctx cancelled stops the read with its error.
func (r *sessionReader) batch(ctx context.Context) replayBatch {
	if r.fr == nil {
		rw, err := clifiles.ReadRewinds(ctx, r.path)
		if err != nil {
			r.log.Warn("reading the session file", "err", err)
			return replayBatch{last: true}
		}
		r.rw = rw
		f, err := os.Open(r.path)
		if err != nil {
			r.log.Warn("reading the session file", "err", err)
			return replayBatch{last: true}
		}
		r.f, r.fr = f, framing.NewReader(f, r.maxLine)
	}
	var buf []byte
	var ends []int
	b := replayBatch{}
	for len(ends) < replayBatchLines && len(buf) < replayBatchBytes {
		if err := ctx.Err(); err != nil {
			r.close()
			return replayBatch{err: err}
		}
		line, err := r.fr.ReadLine()
		var long *framing.LineTooLongError
		if errors.As(err, &long) {
			r.log.Warn("a session file line over the limit was skipped", "size", long.Size)
			continue
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				r.log.Warn("reading the session file", "err", err)
			}
			r.close()
			b.last = true
			break
		}
		if r.rw.Dropped(line) {
			continue
		}
		buf = append(buf, line...)
		ends = append(ends, len(buf))
	}
	r.lines += len(ends)
	b.lines = make([][]byte, len(ends))
	from := 0
	for i, end := range ends {
		b.lines[i] = buf[from:end:end]
		from = end
	}
	return b
}

// close closes the file; the reader reads nothing more.
func (r *sessionReader) close() {
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
}

// list serves session/list: the session files (of cwd, when given), the
// most recently changed first, acpListPage at a time. The cursor is the
// offset of the next page. The files are read off the loop; the answer is
// sent from the loop.
func (l *acpLoop) list(id string, params gjson.Result) {
	var cwd string
	if c := params.Get("cwd"); c.Exists() && c.Type != gjson.Null {
		if c.Type != gjson.String || !filepath.IsAbs(c.Str) {
			l.fail(id, acp.InvalidParams("session/list: cwd must be an absolute path"))
			return
		}
		cwd = filepath.Clean(c.Str)
	}
	offset := 0
	if c := params.Get("cursor"); c.Exists() && c.Type != gjson.Null {
		n, err := strconv.Atoi(c.Str)
		if c.Type != gjson.String || err != nil || n < 0 {
			l.fail(id, acp.InvalidParams("session/list: cursor is not one ccbridge gave"))
			return
		}
		offset = n
	}
	l.background(id, acp.MethodSessionList, func(ctx context.Context) ([]byte, *acp.Error) {
		return acpListResult(ctx, l.claudeDir, cwd, offset), nil
	})
}

// logout serves logout: the CLI's own logout (session.Logout: `claude
// auth logout` between two `claude auth status --json`), off the loop.
// The answer says in _meta whether a stored login was removed; a key in
// the environment (ANTHROPIC_API_KEY) is not one. Sessions running keep
// the credentials their CLI read at its start.
func (l *acpLoop) logout(id string) {
	cfg := l.cfg.Child
	cfg.Dir = ""
	log := l.log
	l.background(id, acp.MethodLogout, func(ctx context.Context) ([]byte, *acp.Error) {
		r, err := session.Logout(ctx, cfg)
		if err != nil {
			return nil, acp.Internal("logout: " + err.Error())
		}
		log.Info("logout", "cleared", r.Cleared, "before", r.Before.Method, "after", r.After.Method)
		return acp.AppendLogoutResult(nil, r.Cleared), nil
	})
}

// acpListResult builds the session/list result: the sessions of cwd (all
// when cwd is "") that hold a conversation and name their cwd (the one
// asked for, when given), from the offset-th on. A folder that cannot be
// read lists nothing; the others still do.
func acpListResult(ctx context.Context, claudeDir, cwd string, offset int) []byte {
	var files []clifiles.Session
	if cwd != "" {
		files, _ = clifiles.List(claudeDir, cwd)
	} else {
		files, _ = clifiles.ListAll(claudeDir)
	}
	// Two directories can share a folder name: the file's own cwd decides.
	ofCwd := func(in *clifiles.Info) bool {
		return in.CWD != "" && (cwd == "" || in.CWD == cwd || sameDir(in.CWD, cwd))
	}
	page, more, _ := clifiles.Conversations(ctx, files, offset, acpListPage, ofCwd)
	infos := make([]acp.SessionInfo, 0, len(page))
	for _, f := range page {
		infos = append(infos, acp.SessionInfo{
			ID:        f.ID,
			CWD:       f.CWD,
			Title:     acp.SessionTitle(&f.SessionSummary),
			UpdatedAt: f.ModTime.UTC().Format(time.RFC3339Nano),
		})
	}
	next := ""
	if more {
		next = strconv.Itoa(offset + len(infos))
	}
	return acp.AppendListResult(nil, infos, next)
}

func sameDir(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}
