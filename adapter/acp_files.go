package adapter

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/framing"
	"github.com/ccbridge/ccbridge/mapping/acp"
	"github.com/ccbridge/ccbridge/session/clifiles"
)

// The CLI's session files: <claudeDir>/projects/<clifiles.ProjectDirName
// of the cwd>/<session id>.jsonl. Reading them is the only file I/O of the
// dialect; it happens on the loop goroutine (session/load, list, resume),
// which keeps the order of the replayed updates and the answer simple.

// acpListPage is how many sessions one session/list answer holds.
const acpListPage = 100

// sessionFile returns the path of a session's file for cwd, or "" when
// there is none.
func (l *acpLoop) sessionFile(cwd, id string) string {
	return clifiles.SessionFile(l.claudeDir, cwd, id)
}

// replay sends the conversation of a session file as session/update
// notifications (session/load), flushing as it goes so that a long
// history is never held whole.
func (l *acpLoop) replay(s *acpSession, path string) {
	f, err := os.Open(path)
	if err != nil {
		l.log.Warn("reading the session file", "session", s.id, "err", err)
		return
	}
	defer f.Close()
	fr := framing.NewReader(f, l.cfg.MaxLine)
	n := 0
	for {
		line, err := fr.ReadLine()
		var long *framing.LineTooLongError
		if errors.As(err, &long) {
			l.log.Warn("a session file line over the limit was skipped", "session", s.id, "size", long.Size)
			continue
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				l.log.Warn("reading the session file", "session", s.id, "err", err)
			}
			break
		}
		l.out = s.tr.Replay(line, l.out)
		if n++; n%256 == 0 {
			if err := l.flush(); err != nil {
				break
			}
		}
	}
	s.tr.ReplayDone()
	l.log.Info("session replayed", "session", s.id, "lines", n)
}

// list serves session/list: the session files (of cwd, when given), the
// most recently changed first, acpListPage at a time. The cursor is the
// offset of the next page.
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
	// A folder that cannot be read lists nothing; the others still do.
	var files []clifiles.Session
	if cwd != "" {
		files, _ = clifiles.List(l.claudeDir, cwd)
	} else {
		files, _ = clifiles.ListAll(l.claudeDir)
	}
	var infos []acp.SessionInfo
	next := ""
	skipped := 0
	for i, f := range files {
		cwdOf, title, ok := readSessionInfo(f.Path)
		if !ok || cwdOf == "" || (cwd != "" && cwdOf != cwd && !sameDir(cwdOf, cwd)) {
			continue
		}
		if skipped < offset {
			skipped++
			continue
		}
		if len(infos) == acpListPage {
			if i < len(files) {
				next = strconv.Itoa(offset + len(infos))
			}
			break
		}
		infos = append(infos, acp.SessionInfo{
			ID:        f.ID,
			CWD:       cwdOf,
			Title:     title,
			UpdatedAt: f.ModTime.UTC().Format(time.RFC3339Nano),
		})
	}
	l.reply(id, acp.AppendListResult(nil, infos, next))
}

func sameDir(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// readSessionInfo reads the start and the end of a session file (64 KiB
// each) for its working directory and title. A file with no conversation
// yet (no user or assistant line) is left out.
func readSessionInfo(path string) (cwd, title string, ok bool) {
	head, tail, err := clifiles.ReadEnds(path, 64<<10)
	if err != nil {
		return "", "", false
	}
	if !strings.Contains(string(head), `"type":"user"`) && !strings.Contains(string(tail), `"type":"user"`) {
		return "", "", false
	}
	cwd, title = acp.SessionFileInfo(head, tail)
	return cwd, title, true
}
