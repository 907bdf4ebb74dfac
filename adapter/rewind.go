package adapter

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/framing"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/session/clifiles"
)

// Rewind: going back to an earlier prompt of the session, the
// conversation and (when asked) the files, written once for every
// dialect. The CLI 2.1.330 does the work: rewind_files restores the
// files its tools changed since a prompt (file checkpointing is on in
// every child, session.CheckpointEnv), rewind_conversation drops the
// prompt and everything after it, so that the next turn goes on from
// before it; the session file records the cut (mapping.RewindCut) and
// every history leaves the dropped turns out (clifiles.Lines).

// RewindRequest says how far back to go.
type RewindRequest struct {
	// Turns is how many turns to drop, counted back from the last one
	// (1: the last turn), when UserMessageID is "".
	Turns int
	// UserMessageID names the prompt to go back to (its uuid in the
	// session file, a turn's id): it and every turn after it are dropped.
	UserMessageID string
	// Files: restore the files the dropped turns changed, too.
	Files bool
	// DryRun changes nothing: the result says which turns would be
	// dropped and (with Files) which files restored.
	DryRun bool
	// KeepConversation restores the files only (with Files): the
	// conversation is left as it is.
	KeepConversation bool
	// Timeout bounds the wait for each of the CLI's answers; a CLI that
	// does not answer in time fails the rewind (RewindFailed), and the
	// next one may go. 0 means DefaultRewindTimeout.
	Timeout time.Duration
}

// DefaultRewindTimeout is RewindRequest.Timeout's default: restoring the
// files of a large change takes the CLI a moment, a hung CLI longer.
const DefaultRewindTimeout = 30 * time.Second

// RewindResult is what a rewind did, or (DryRun) would do.
type RewindResult struct {
	UserMessageID string // the first prompt dropped
	Prompt        string // its text, for a UI to offer again
	Turns         int    // turns dropped
	Kept          int    // turns left
	// Files are the files restored (DryRun: that would be), when the
	// request asked for files; Insertions and Deletions are the CLI's
	// counts of the lines that change back.
	Files                 []string
	Insertions, Deletions int
	DryRun                bool
}

// RewindError is a rewind refused or failed; Code is one of the Rewind*
// codes.
type RewindError struct {
	Code    string
	Message string
}

func (e *RewindError) Error() string { return "rewind: " + e.Message }

// The codes of a RewindError.
const (
	RewindBusy      = "busy"              // a turn (or another rewind) is running
	RewindInvalid   = "invalid_request"   // neither Turns nor UserMessageID, or Turns < 0
	RewindNoSession = "no_session"        // no CLI runs the session, or it has no file yet
	RewindNotFound  = "not_found"         // no such prompt, or fewer turns than asked
	RewindNoFiles   = "files_unavailable" // the CLI cannot restore the files (no checkpoint, checkpointing off)
	RewindFailed    = "failed"            // the CLI refused, or the child exited
	rewindIDPrefix  = "ccb-rw-"
	rewindCtlPrefix = `{"type":"control_response"`
)

// rewinding is the rewind in progress of a Supervisor.
type rewinding struct {
	req    RewindRequest
	p      *Proc
	res    RewindResult
	done   func(RewindResult, *RewindError)
	waitID string                  // the control request whose answer is awaited
	then   func(ev *mapping.Event) // what its answer does
	until  time.Time               // when waiting for it fails the rewind
	path   string                  // the session file
	size   int64                   // its size when its prompts were read
}

// rewindSettle bounds the wait for the CLI to record a rewind in its
// session file, which it does about 100 ms after its answer (CLI
// 2.1.330); rewindPoll is how often the file's new end is read meanwhile.
const (
	rewindSettle = 3 * time.Second
	rewindPoll   = 10 * time.Millisecond
)

// Rewinding reports whether a rewind is in progress.
func (s *Supervisor) Rewinding() bool { return s.rw != nil }

// Rewind goes back as req says, between turns only: the dialect refuses
// a rewind during a turn itself (RewindBusy), as only it knows its turns.
// done runs on the loop, exactly once, with the result or the error. The
// session file is read off the loop; the CLI's answers to the control
// requests are taken by the core and never reach the handler.
func (s *Supervisor) Rewind(req RewindRequest, done func(RewindResult, *RewindError)) {
	fail := func(code, msg string) { done(RewindResult{}, &RewindError{Code: code, Message: msg}) }
	switch {
	case s.rw != nil:
		fail(RewindBusy, "a rewind is already running")
		return
	case req.UserMessageID == "" && req.Turns < 1:
		fail(RewindInvalid, "say how many turns to drop (1 or more) or which user message to go back to")
		return
	case s.live == nil || s.live.tr != Lines:
		fail(RewindNoSession, "no CLI runs this session: nothing to rewind")
		return
	}
	cwd, configDir := s.Dirs()
	path, err := clifiles.Find(configDir, cwd, s.SessionID)
	if err != nil {
		fail(RewindNoSession, "the session has no file yet: nothing to rewind")
		return
	}
	rw := &rewinding{req: req, p: s.live, done: done, res: RewindResult{DryRun: req.DryRun}, path: path}
	s.rw = rw
	s.loop.Go(func(ctx context.Context) func() {
		var prompts mapping.Prompts
		var size int64
		if fi, err := os.Stat(path); err == nil {
			size = fi.Size()
		}
		err := clifiles.Lines(ctx, path, prompts.Line)
		return func() {
			if s.rw != rw {
				return // the child exited meanwhile
			}
			if err != nil {
				s.rewindFail(RewindFailed, "reading the session file: "+err.Error())
				return
			}
			rw.size = size
			s.rewindFrom(prompts.List())
		}
	})
}

// RewindPoints hands done the prompts a rewind can go back to, oldest
// first, read from the session file off the loop; done runs on the loop.
func (s *Supervisor) RewindPoints(done func([]mapping.Prompt, *RewindError)) {
	cwd, configDir := s.Dirs()
	path, err := clifiles.Find(configDir, cwd, s.SessionID)
	if err != nil {
		done(nil, &RewindError{Code: RewindNoSession, Message: "the session has no file yet: nothing to rewind to"})
		return
	}
	s.loop.Go(func(ctx context.Context) func() {
		var prompts mapping.Prompts
		err := clifiles.Lines(ctx, path, prompts.Line)
		return func() {
			if err != nil {
				done(nil, &RewindError{Code: RewindFailed, Message: "reading the session file: " + err.Error()})
				return
			}
			done(prompts.List(), nil)
		}
	})
}

// rewindFrom picks the prompt to go back to among the conversation's
// prompts and sends the first request.
func (s *Supervisor) rewindFrom(prompts []mapping.Prompt) {
	rw := s.rw
	at := -1
	if id := rw.req.UserMessageID; id != "" {
		for i, p := range prompts {
			if p.UUID == id {
				at = i
			}
		}
		if at < 0 {
			s.rewindFail(RewindNotFound, "no user message "+strconv.Quote(id)+" in the session's conversation")
			return
		}
	} else {
		at = len(prompts) - rw.req.Turns
		if at < 0 {
			s.rewindFail(RewindNotFound, fmt.Sprintf("the session's conversation has %d turn(s), fewer than the %d to drop", len(prompts), rw.req.Turns))
			return
		}
	}
	rw.res.UserMessageID, rw.res.Prompt = prompts[at].UUID, prompts[at].Text
	rw.res.Turns, rw.res.Kept = len(prompts)-at, at
	if rw.req.Files {
		s.rewindAsk(mapping.AppendRewindFiles(nil, s.rewindID("files-dry"), rw.res.UserMessageID, true), s.filesChecked)
		return
	}
	s.rewindConversation()
}

// filesChecked takes the dry run's answer: the files that change back.
func (s *Supervisor) filesChecked(ev *mapping.Event) {
	rw := s.rw
	r := ev.Get("response.response")
	if ev.IsError || !r.Get("canRewind").Bool() {
		s.rewindFail(RewindNoFiles, "the files cannot be restored: "+cliError(ev))
		return
	}
	rw.res.Files = []string{}
	for _, f := range r.Get("filesChanged").Array() {
		rw.res.Files = append(rw.res.Files, strings.Clone(f.Str)) // the line's buffer is reused
	}
	rw.res.Insertions, rw.res.Deletions = int(r.Get("insertions").Int()), int(r.Get("deletions").Int())
	if rw.req.DryRun {
		s.rewindDone()
		return
	}
	s.rewindAsk(mapping.AppendRewindFiles(nil, s.rewindID("files"), rw.res.UserMessageID, false), func(ev *mapping.Event) {
		if ev.IsError || !ev.Get("response.response.canRewind").Bool() {
			s.rewindFail(RewindNoFiles, "restoring the files failed: "+cliError(ev))
			return
		}
		s.rewindConversation()
	})
}

// rewindConversation drops the turns.
func (s *Supervisor) rewindConversation() {
	if s.rw.req.DryRun || s.rw.req.KeepConversation {
		s.rewindDone()
		return
	}
	s.rewindAsk(mapping.AppendRewindConversation(nil, s.rewindID("conversation"), s.rw.res.UserMessageID), func(ev *mapping.Event) {
		if ev.IsError || !ev.Get("response.response.rewound").Bool() {
			code := RewindFailed
			if ev.Get("response.response.reason").Str == "target_not_found" {
				code = RewindNotFound
			}
			s.rewindFail(code, "the CLI did not rewind the conversation: "+cliError(ev))
			return
		}
		s.rewindRecorded()
	})
}

// rewindRecorded ends the rewind once the session file holds its marker,
// so that a history read after the answer no longer lists the dropped
// turns; after rewindSettle it ends anyway (and says so in the log).
func (s *Supervisor) rewindRecorded() {
	rw := s.rw
	s.loop.Go(func(ctx context.Context) func() {
		found := waitMarker(ctx, rw.path, rw.size, rw.res.UserMessageID)
		return func() {
			if s.rw != rw {
				return
			}
			if !found {
				s.log.Warn("the CLI has not recorded the rewind in its session file yet", "path", rw.path, "waited", rewindSettle)
			}
			s.rewindDone()
		}
	})
}

// waitMarker reads the session file at path from offset on until it
// holds the rewind marker of prompt cut, for at most rewindSettle.
func waitMarker(ctx context.Context, path string, offset int64, cut string) bool {
	deadline := time.Now().Add(rewindSettle)
	for {
		if markerAfter(path, offset, cut) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(rewindPoll):
		}
	}
}

// markerAfter reports whether the file at path holds, from offset on,
// the rewind marker of prompt cut.
func markerAfter(path string, offset int64, cut string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return false
	}
	fr := framing.NewReader(f, clifiles.MaxLine)
	for {
		line, err := fr.ReadLine()
		if errors.Is(err, framing.ErrLineTooLong) {
			continue
		}
		if err != nil {
			return false
		}
		if c, ok := mapping.RewindCut(line); ok && c == cut {
			return true
		}
	}
}

// cliError is the reason a CLI answer gives.
func cliError(ev *mapping.Event) string {
	if e := ev.Get("response.error"); e.Type == gjson.String {
		return e.Str
	}
	if e := ev.Get("response.response.error"); e.Type == gjson.String {
		return e.Str
	}
	return "no reason given"
}

// rewindID names a control request of the rewind.
func (s *Supervisor) rewindID(step string) string {
	s.rwSeq++
	return rewindIDPrefix + strconv.Itoa(s.rwSeq) + "-" + step
}

// rewindAsk writes a control request to the child and waits for its
// answer.
func (s *Supervisor) rewindAsk(line []byte, then func(ev *mapping.Event)) {
	s.rw.waitID = gjson.GetBytes(line, "request_id").Str
	s.rw.then = then
	s.rw.until = s.loop.Now().Add(cmp.Or(s.rw.req.Timeout, DefaultRewindTimeout))
	s.rw.p.Write(line)
}

// rewindDeadline is when the rewind's wait for an answer fails; zero
// when none is awaited.
func (s *Supervisor) rewindDeadline() time.Time {
	if s.rw == nil || s.rw.waitID == "" {
		return time.Time{}
	}
	return s.rw.until
}

// rewindExpire fails a rewind whose answer has not come in time.
func (s *Supervisor) rewindExpire(now time.Time) {
	if d := s.rewindDeadline(); d.IsZero() || now.Before(d) {
		return
	}
	id, wait := s.rw.waitID, cmp.Or(s.rw.req.Timeout, DefaultRewindTimeout)
	s.log.Warn("the CLI did not answer a rewind request in time", "request_id", id, "waited", wait)
	s.rewindFail(RewindFailed, "the CLI did not answer the rewind's request "+id+" within "+wait.String())
}

// rewindLine takes the answer to the rewind's request: true when line
// was it (the handler never sees it).
func (s *Supervisor) rewindLine(p *Proc, line string) bool {
	rw := s.rw
	if rw == nil || rw.p != p || rw.waitID == "" || !strings.HasPrefix(line, rewindCtlPrefix) || !strings.Contains(line, rw.waitID) {
		return false
	}
	ev := mapping.RouteString(line)
	if ev.Kind != mapping.KindControlResponse || ev.RequestID != rw.waitID {
		return false
	}
	then := rw.then
	rw.waitID, rw.then = "", nil
	then(&ev)
	return true
}

func (s *Supervisor) rewindDone() {
	rw := s.rw
	s.rw = nil
	rw.done(rw.res, nil)
}

func (s *Supervisor) rewindFail(code, msg string) {
	rw := s.rw
	s.rw = nil
	rw.done(RewindResult{}, &RewindError{Code: code, Message: msg})
}
