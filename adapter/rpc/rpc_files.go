package rpc

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/mapping/rpc"
	"github.com/ccbridge/ccbridge/session/clifiles"
)

// Reading the CLI's files: session files for session.list and
// session.history, SKILL.md files for skills.list. All of it runs in the
// background (goRequest), never on the loop, and stops when the request is
// cancelled or the UI's input ends.

// sessionFile is a session's file (where the CLI would write it, when it
// has none); sid must be a valid session id.
func (l *rpcLoop) sessionFile(sid string) string {
	p, _ := clifiles.Find(l.home, l.cwd, sid)
	return p
}

func (l *rpcLoop) sessionList(id string, p gjson.Result) {
	limit, err := rpc.ParseSessionList(p)
	if err != nil {
		l.respondErr(id, err)
		return
	}
	home, cwd := l.home, l.cwd
	runs := make(map[string]string, len(l.sessionRuns))
	for k, v := range l.sessionRuns {
		runs[k] = v
	}
	l.goRequest(id, rpc.MethodSessionList, func(ctx context.Context) func() {
		sessions, e := listSessions(ctx, home, cwd, limit, runs)
		return func() {
			if !l.finish(id) {
				return
			}
			if e != nil {
				l.respondErr(id, e)
				return
			}
			l.respond(id, rpc.AppendSessionListResult(nil, id, sessions))
		}
	})
}

// listSessions lists the newest limit sessions of cwd that hold a
// conversation, each file read whole for its message count. A missing
// folder is an empty list; one that cannot be read is -32006.
func listSessions(ctx context.Context, configDir, cwd string, limit int, runs map[string]string) ([]rpc.SessionInfo, *rpc.Error) {
	all, err := clifiles.List(configDir, cwd)
	if err != nil {
		return nil, &rpc.Error{Code: rpc.CodeSessionListFailed, Message: "reading the session folder: " + err.Error()}
	}
	files, _, err := clifiles.Conversations(ctx, all, 0, limit, nil)
	if err != nil {
		return nil, stopped(ctx)
	}
	sessions := make([]rpc.SessionInfo, 0, len(files))
	for _, f := range files {
		s, err := clifiles.Summarize(ctx, f.Path)
		if ctx.Err() != nil {
			return nil, stopped(ctx)
		} else if err != nil {
			continue // removed or unreadable meanwhile: not listed
		}
		sessions = append(sessions, rpc.SessionInfo{
			SessionID:       f.ID,
			UpdatedAt:       f.ModTime.UTC().Format(time.RFC3339Nano),
			CreatedAt:       s.CreatedAt,
			RunID:           runs[f.ID],
			MessageCount:    s.Messages,
			LastUserMessage: s.LastUserMessage(),
			Title:           s.Title(),
		})
	}
	return sessions, nil
}

func (l *rpcLoop) sessionHistory(id string, p gjson.Result) {
	hp, err := rpc.ParseSessionHistory(p)
	if err != nil {
		l.respondErr(id, err)
		return
	}
	path := l.sessionFile(hp.SessionID)
	l.goRequest(id, rpc.MethodSessionHistory, func(ctx context.Context) func() {
		lines, runs, truncated, e := readHistory(ctx, path, hp)
		return func() {
			if !l.finish(id) {
				return
			}
			if e != nil {
				l.respondErr(id, e)
				return
			}
			l.out.UI = append(l.out.UI, lines...)
			l.respond(id, rpc.AppendSessionHistoryResult(nil, id, runs, len(lines), truncated))
		}
	})
}

// readHistory replays a session file: -32004 when it does not exist,
// -32005 when it cannot be read or holds no JSON at all.
func readHistory(ctx context.Context, path string, hp rpc.SessionHistoryParams) ([][]byte, int, bool, *rpc.Error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, 0, false, &rpc.Error{Code: rpc.CodeSessionNotFound, Message: "no session " + hp.SessionID + " (" + path + ")"}
	case err != nil:
		return nil, 0, false, &rpc.Error{Code: rpc.CodeSessionLoadFailed, Message: err.Error()}
	case !fi.Mode().IsRegular():
		return nil, 0, false, &rpc.Error{Code: rpc.CodeSessionLoadFailed, Message: path + " is not a regular file"}
	}
	h := rpc.History{SessionID: hp.SessionID, MaxRuns: hp.MaxRuns}
	if err := clifiles.Lines(ctx, path, h.Line); ctx.Err() != nil {
		return nil, 0, false, stopped(ctx)
	} else if err != nil {
		return nil, 0, false, &rpc.Error{Code: rpc.CodeSessionLoadFailed, Message: "reading " + path + ": " + err.Error()}
	}
	if h.Valid() == 0 && fi.Size() > 0 {
		return nil, 0, false, &rpc.Error{Code: rpc.CodeSessionLoadFailed, Message: path + " is not a session file (no JSON line in it)"}
	}
	lines, runs, truncated := h.Result(hp.MaxEvents)
	return lines, runs, truncated, nil
}

// stopped is the error of file work cut short: by request.cancel (whose
// answer went out already), or by the end of the session.
func stopped(ctx context.Context) *rpc.Error {
	return rpc.Internal("stopped: " + context.Cause(ctx).Error())
}

// maxSkillFile caps how much of a SKILL.md is read.
const maxSkillFile = 1 << 20

// scanSkills lists the SKILL.md files of the repository and the user, and
// merges them with what the CLI knows (cli: the "skills" of its
// reload_skills answer).
func scanSkills(cli gjson.Result, repoDir, userDir string) ([]rpc.Skill, []rpc.SkillError, bool) {
	var disk []rpc.Skill
	var errs []rpc.SkillError
	for _, d := range [...]struct{ dir, scope string }{{repoDir, "repo"}, {userDir, "user"}} {
		entries, err := os.ReadDir(d.dir)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, rpc.SkillError{Path: d.dir, Message: err.Error()})
			}
			continue
		}
		for _, e := range entries {
			dir := filepath.Join(d.dir, e.Name())
			path := filepath.Join(dir, "SKILL.md")
			fi, err := os.Stat(path)
			if err != nil {
				continue // not a skill folder
			}
			data, err := readAtMost(path, maxSkillFile)
			if err != nil {
				errs = append(errs, rpc.SkillError{Path: path, Message: err.Error()})
				continue
			}
			name, desc, ok := rpc.ParseSkillFile(data)
			if !ok {
				errs = append(errs, rpc.SkillError{Path: path, Message: "no front matter (--- name: … description: … ---)"})
				continue
			}
			if name == "" {
				name = e.Name()
			}
			disk = append(disk, rpc.Skill{ID: d.scope + ":" + name, Name: name, Description: desc,
				Path: path, Dir: dir, Scope: d.scope, MtimeMs: fi.ModTime().UnixMilli()})
		}
	}
	skills, truncated := rpc.MergeSkills(cli, disk)
	if errs == nil {
		errs = []rpc.SkillError{}
	}
	return skills, errs, truncated
}

func readAtMost(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}
