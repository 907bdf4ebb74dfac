package adapter

// The child supervisor: the CLI children of one session, written once for
// every dialect. Children are generation-tagged Procs; a child is
// replaced by retiring it (stopped in stages, or killed) and starting the
// next one when it has exited, and work that needs a child waits while
// one starts.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/session"
	"github.com/ccbridge/ccbridge/session/clifiles"
)

// Child is a running child process as the core sees it. *session.Child
// is one, over pipes or a pty. Its stdin is written by a goroutine of the
// child's own (childinput.go), and closing it (CloseStdin, Shutdown) or
// killing the child must end a write that waits. A child that also has
// WriteNow(p []byte) (int, error), a write that never waits (as
// session.Child has on Unix), takes lines straight from the loop while
// nothing is queued.
type Child interface {
	Pid() int
	Stdin() io.WriteCloser
	Stdout() io.Reader
	CloseStdin() error
	Shutdown(ctx context.Context) error
	Kill() error
	Done() <-chan struct{}
	Exit() session.Exit
}

// Transport is how the core talks to a child: the stream-json pipes every
// dialect uses (lines both ways), or a pty (bytes both ways).
type Transport int

const (
	// Lines: the child reads and writes NDJSON over pipes.
	Lines Transport = iota
	// Bytes: the child is an interactive program under a pty; its output
	// goes to the handler as it is read (RawHandler), and Write sends
	// bytes as they are.
	Bytes
)

// Proc is one child of a Supervisor.
type Proc struct {
	Gen   int
	child Child
	in    *childInput // the child's stdin: the loop never waits for it
	sup   *Supervisor // the supervisor that started it
	log   *slog.Logger
	tr    Transport
	// Opts are the options the child was started with.
	Opts    session.Options
	retired bool
}

func newProc(gen int, child Child, tr Transport, l *Loop, log *slog.Logger) *Proc {
	return &Proc{Gen: gen, child: child, tr: tr, log: log, in: newChildInput(child, log, &l.inFull, l.inWake)}
}

// Live reports whether p is its supervisor's live child.
func (p *Proc) Live() bool { return p != nil && p.sup != nil && !p.retired && p.sup.live == p }

// Supervisor is the child's supervisor for this Proc.
func (p *Proc) Supervisor() *Supervisor { return p.sup }

// Pid is the child's process id.
func (p *Proc) Pid() int { return p.child.Pid() }

// Write sends one line to the child (with Bytes, the bytes as they are),
// after every line written before it, and never waits for the child to
// read: what its stdin does not take now is queued (childinput.go). A
// failure means the child is going; its exit is reported when its reader
// sees it. Once its stdin is closed, or the child has gone, the line is
// dropped.
func (p *Proc) Write(line []byte) { p.in.write(line, p.tr == Lines) }

// AutoReply answers a control request of the CLI that needs no UI (see
// mapping.AppendAutoReply); it reports whether it did.
func (p *Proc) AutoReply(ev *mapping.Event) bool {
	reply, ok := mapping.AppendAutoReply(nil, ev)
	if ok {
		p.Write(reply)
	}
	return ok
}

// CloseStdin closes the child's stdin once every line written before is
// written, without waiting for that; lines written after it are dropped.
func (p *Proc) CloseStdin() { p.in.close() }

// Stop shuts the child down in stages, in the background; each stage is
// bounded by the child's own grace periods. Its first stage closes the
// child's stdin at once: what is still queued for a child that does not
// read is not waited for.
func (p *Proc) Stop() {
	p.in.stop()
	go p.child.Shutdown(context.Background())
}

// kill kills the child now.
func (p *Proc) kill() error {
	p.in.stop()
	return p.child.Kill()
}

// stopWithin shuts the child down in stages, in the background, and
// kills it if it is still there after d.
func (p *Proc) stopWithin(d time.Duration) {
	p.in.stop()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		if err := p.child.Shutdown(ctx); err != nil {
			p.log.Debug("stopping claude", "err", err)
		}
	}()
}

// SupervisorConfig is how a Supervisor starts its children.
type SupervisorConfig struct {
	// Child says how to start the CLI; Args are built from BaseArgs and
	// each child's options.
	Child    session.Config
	BaseArgs []string
	// Transport: Lines (the default) or Bytes.
	Transport Transport
	// Start starts a child; nil means session.Start. Tests give a fake.
	Start func(session.Config) (Child, error)
	// Started is called on the loop for every child started, before any
	// of its output: the dialect sends what a new child needs first.
	Started func(p *Proc)
	// Resumable tells whether the CLI can resume session sid, and if not,
	// why. nil means CheckResume: the session file of the child's working
	// directory holds a conversation.
	Resumable func(sid string) error
	// Getenv reads ccbridge's environment (HOME, CLAUDE_CONFIG_DIR) after
	// Child.Env; nil means os.Getenv.
	Getenv func(string) string
	Logger *slog.Logger
}

// Supervisor keeps the CLI children of one session: at most one live
// child, any number of retired ones still stopping, and what waits for
// the next child. It lives on its loop's goroutine.
type Supervisor struct {
	loop *Loop
	cfg  SupervisorConfig
	log  *slog.Logger

	live     *Proc
	retiring int // retired children not yet exited

	// next is started once every retired child has exited; waiting runs
	// then (with the start's error, if any).
	next    *session.Options
	resumed bool
	waiting []func(error)

	// SessionID is the session's id as far as it is known: from the
	// options a child was started with, then from the CLI (Persisted).
	SessionID string
	// Opts are the options of the live (or last) child. A dialect may
	// change them (a model switch) for the next child ResumeOpts builds.
	Opts session.Options
	// persisted: the CLI has written the session's file.
	persisted bool
	// cwd and configDir: see Dirs.
	cwd, configDir string

	// interruptAt: an interrupt was written to the live child, which must
	// end its turn by then, or onTimeout runs (Interrupting).
	interruptAt time.Time
	onTimeout   func()

	// rw: the rewind in progress (rewind.go); rwSeq numbers its requests.
	rw    *rewinding
	rwSeq int
}

// NewSupervisor makes a supervisor of children served by loop l.
func (l *Loop) NewSupervisor(cfg SupervisorConfig) *Supervisor {
	if cfg.Start == nil {
		cfg.Start = func(c session.Config) (Child, error) { return session.Start(c) }
	}
	if cfg.Logger == nil {
		cfg.Logger = l.log
	}
	if cfg.Child.Logger == nil {
		cfg.Child.Logger = cfg.Logger
	}
	s := &Supervisor{loop: l, cfg: cfg, log: cfg.Logger}
	s.cwd, s.configDir = s.dirs()
	if s.cfg.Resumable == nil {
		s.cfg.Resumable = s.CheckResume
	}
	l.sups[s] = struct{}{}
	return s
}

// Close forgets the supervisor once its children are gone (a closed ACP
// session): retire its live child first.
func (s *Supervisor) Close() {
	s.dropPending()
	delete(s.loop.sups, s)
}

// Live is the live child, or nil.
func (s *Supervisor) Live() *Proc { return s.live }

// Busy reports whether a child runs or is coming: live, or retired ones
// stopping before a respawn.
func (s *Supervisor) Busy() bool { return s.live != nil || s.next != nil }

// Respawning reports whether a respawn waits for a retired child to exit.
func (s *Supervisor) Respawning() bool { return s.next != nil }

// Persisted notes that the CLI has a file for the session: its
// system/init came. sid, when not empty, is the session's id.
func (s *Supervisor) Persisted(sid string) {
	s.persisted = true
	if sid != "" && sid != s.SessionID {
		s.SessionID = string([]byte(sid))
	}
}

// Check builds the arguments of a child with opts, without starting one.
func (s *Supervisor) Check(opts session.Options) error {
	_, err := session.BuildArgs(s.cfg.BaseArgs, opts)
	return err
}

// Start starts a child with opts, as the live one. resumed says whether
// it continues a session that has a file. The caller retires the live
// child first, if there is one. Once the session is ending (the UI's
// input is over, or a shutdown began) no child starts: the error is
// ErrShuttingDown.
func (s *Supervisor) Start(opts session.Options, resumed bool) (*Proc, error) {
	if s.loop.Ending() {
		// Nothing would close its stdin or stop it: the UI's input is
		// over, or the shutdown already stopped every child.
		return nil, ErrShuttingDown
	}
	args, err := session.BuildArgs(s.cfg.BaseArgs, opts)
	if err != nil {
		return nil, err
	}
	cfg := s.cfg.Child
	cfg.Args = args
	child, err := s.cfg.Start(cfg)
	if err != nil {
		return nil, fmt.Errorf("starting the CLI: %w", err)
	}
	l := s.loop
	l.gen++
	p := newProc(l.gen, child, s.cfg.Transport, l, s.log)
	p.sup, p.Opts = s, opts
	l.procs[p.Gen] = p
	s.live = p
	s.Opts = opts
	s.persisted = resumed
	if sid := opts.ID(); sid != "" {
		s.SessionID = sid
	}
	s.log.Info("claude started", "pid", child.Pid(), "gen", p.Gen, "resume", opts.Resume,
		"continue", opts.Continue, "fork", opts.ForkSession, "session_id", opts.SessionID)
	if p.tr == Bytes {
		go readRaw(p.Gen, child, l.cliCh, l.host.stop)
	} else {
		go readChild(p.Gen, child, l.cfg.CLIMaxLine, l.blocks, s.log, l.cliCh, l.host.stop)
	}
	if s.cfg.Started != nil {
		s.cfg.Started(p)
	}
	return p, nil
}

// Retire takes the live child out of service and stops it: in stages
// (bounded by within, when not zero), or at once with kill. Its output
// from now on is dropped and its exit is not reported to the handler.
func (s *Supervisor) Retire(why string, within time.Duration, kill bool) *Proc {
	p := s.live
	if p == nil {
		return nil
	}
	s.live = nil
	s.Interrupted()
	if s.rw != nil && s.rw.p == p {
		s.rewindFail(RewindFailed, "the CLI was stopped during the rewind ("+why+")")
	}
	p.retired = true
	s.retiring++
	s.log.Info("stopping claude", "gen", p.Gen, "reason", why)
	switch {
	case kill:
		if err := p.kill(); err != nil {
			s.log.Debug("killing claude", "err", err)
		}
	case within > 0:
		p.stopWithin(within)
	default:
		p.Stop()
	}
	return p
}

// Respawn starts a child with opts once every retired child has exited
// (at once when none is stopping). Work waiting for a child runs then.
func (s *Supervisor) Respawn(opts session.Options, resumed bool) {
	if s.retiring == 0 {
		s.startWaiting(opts, resumed)
		return
	}
	s.next, s.resumed = &opts, resumed
}

// Interrupting arms the interrupt deadline of the live child: an
// interrupt was written to it, and if the dialect does not call
// Interrupted within d (the turn ended, or the CLI acknowledged it),
// onTimeout runs on the loop. onTimeout reports the turn as the dialect
// does and replaces the child (Replace, or Retire with kill): the
// session goes on in a new one with --resume. An armed deadline stays;
// the deadline ends with the child (retired or exited).
func (s *Supervisor) Interrupting(d time.Duration, onTimeout func()) {
	if s.live == nil || !s.interruptAt.IsZero() {
		return
	}
	s.interruptAt, s.onTimeout = s.loop.Now().Add(d), onTimeout
}

// Interrupted disarms the interrupt deadline.
func (s *Supervisor) Interrupted() { s.interruptAt, s.onTimeout = time.Time{}, nil }

// expire fails a rewind whose answer is late (rewind.go) and runs the
// interrupt deadline's onTimeout once it has passed.
func (s *Supervisor) expire(now time.Time) {
	s.rewindExpire(now)
	if s.interruptAt.IsZero() || now.Before(s.interruptAt) {
		return
	}
	fn := s.onTimeout
	s.Interrupted()
	s.log.Warn("the CLI did not end the interrupted turn in time; replacing it")
	fn()
}

// Replace retires the live child (see Retire) and starts one with opts
// once it has exited; then runs with the start's error (nil: the new
// child is live). Once the session is ending nothing is started, and
// then is not called.
func (s *Supervisor) Replace(why string, within time.Duration, kill bool, opts session.Options, resumed bool, then func(error)) {
	s.Retire(why, within, kill)
	if s.loop.Ending() {
		return
	}
	s.Wait(then)
	s.Respawn(opts, resumed)
}

// WhenLive runs fn once a child runs: at once, after the respawn under
// way, or after starting one now with ResumeOpts. fn gets the error when
// no child could be started.
func (s *Supervisor) WhenLive(fn func(error)) {
	switch {
	case s.live != nil:
		fn(nil)
	case s.next != nil:
		s.waiting = append(s.waiting, fn)
	case s.loop.Ending():
		fn(ErrShuttingDown)
	default:
		opts, resumed := s.ResumeOpts()
		_, err := s.Start(opts, resumed)
		fn(err)
	}
}

// Wait adds fn to the work that runs when the next child starts.
func (s *Supervisor) Wait(fn func(error)) { s.waiting = append(s.waiting, fn) }

var ErrShuttingDown = errors.New("ccbridge is shutting down")

// ResumeOpts are the options of a new child for the same conversation:
// --resume when the CLI has saved the session and can resume it (resumed
// true), else the options the live (or last) child was started with, so
// that a new session or a fork the CLI had not saved yet starts again as
// it did.
//
// A session resumed or continued whose file holds no conversation (a
// CLI killed before it wrote one: it writes lazily) cannot be resumed,
// and --resume would fail at once with "No conversation found": it
// starts afresh under the same id.
func (s *Supervisor) ResumeOpts() (opts session.Options, resumed bool) {
	opts, sid := s.Opts, s.SessionID
	switch {
	case sid == "" || !s.persisted:
		return opts, false
	case s.resumable(sid):
		return opts.ResumeFrom(sid), true
	case opts.ForkSession || opts.Resume == "" && !opts.Continue:
		return opts, false
	case len(sid) == 36 && uuid.Validate(sid) == nil:
		s.log.Warn("the CLI saved nothing of the session; starting it afresh under the same id", "session_id", sid)
		opts.Resume, opts.Continue, opts.ForkSession, opts.SessionID = "", false, false, sid
	}
	return opts, false
}

// resumable reports whether the CLI can resume session sid: its file
// holds a conversation.
func (s *Supervisor) resumable(sid string) bool {
	return s.cfg.Resumable(sid) == nil
}

// ErrNoSession: the CLI has no file for the session in the working
// directory. ErrNotResumable: it has one, with no conversation in it
// (the CLI would answer --resume with "No conversation found").
var (
	ErrNoSession    = errors.New("no such session")
	ErrNotResumable = errors.New("the session has no conversation to resume")
)

// CheckResume tells whether the CLI can resume session sid in the
// child's working directory: nil, or an error that wraps ErrNoSession or
// ErrNotResumable and names the file. It reads the session file up to
// its first message, which the CLI writes near the top.
func (s *Supervisor) CheckResume(sid string) error {
	cwd, configDir := s.Dirs()
	path := clifiles.SessionFile(configDir, cwd, sid)
	switch {
	case path == "":
		return fmt.Errorf("%w: no session %s for %s in %s", ErrNoSession, sid, cwd, filepath.Join(configDir, "projects"))
	case !clifiles.Resumable(path):
		return fmt.Errorf("%w: %s has no user or assistant message", ErrNotResumable, path)
	}
	return nil
}

// Dirs are the child's working directory (absolute, links resolved) and
// the CLI's configuration folder, as the child will see them.
func (s *Supervisor) Dirs() (cwd, configDir string) { return s.cwd, s.configDir }

func (s *Supervisor) dirs() (cwd, configDir string) {
	cwd = s.cfg.Child.Dir
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	if abs, err := filepath.Abs(cwd); err == nil {
		cwd = abs
	}
	if real, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = real
	}
	getenv := func(k string) string { return clifiles.Getenv(s.cfg.Child.Env, s.cfg.Getenv, k) }
	return cwd, clifiles.ConfigDir(getenv)
}

// startWaiting starts a child and runs the work waiting for one.
func (s *Supervisor) startWaiting(opts session.Options, resumed bool) {
	_, err := s.Start(opts, resumed)
	if err != nil {
		s.log.Error("starting claude", "err", err)
	}
	w := s.waiting
	s.waiting = nil
	for _, fn := range w {
		fn(err)
	}
}

// dropPending forgets a respawn that has not started and fails the work
// waiting for it: the session is ending.
func (s *Supervisor) dropPending() {
	s.next = nil
	w := s.waiting
	s.waiting = nil
	for _, fn := range w {
		fn(ErrShuttingDown)
	}
}

// exited handles the exit of child p.
func (s *Supervisor) exited(p *Proc, exit session.Exit) {
	if p.retired {
		s.retiring--
		s.log.Info("claude stopped", "gen", p.Gen, "code", exit.Code)
		if s.retiring == 0 && s.next != nil {
			next := *s.next
			s.next = nil
			s.startWaiting(next, s.resumed)
		}
		return
	}
	s.live = nil
	s.Interrupted()
	if s.rw != nil && s.rw.p == p {
		s.rewindFail(RewindFailed, "the CLI exited during the rewind")
	}
	s.log.Info("claude exited", "gen", p.Gen, "code", exit.Code, "signal", exit.Signal)
	s.loop.h.ChildExited(p, exit)
}

// readChild reads a child's output and hands it to a loop on out in blocks
// of whole lines (see readBlocks); its last message is the child's exit.
// It returns early when stop is closed.
func readChild(gen int, c Child, maxLine int, pool blockPool, log *slog.Logger, out chan<- cliBlock, stop <-chan struct{}) {
	send := sender(out, stop)
	if !readBlocks(gen, c.Stdout(), maxLine, pool, log, send) {
		return
	}
	<-c.Done()
	exit := c.Exit()
	send(cliBlock{gen: gen, exit: &exit})
}

// sender hands blocks to a loop on out; it reports false once the loop
// is gone (stop closed).
func sender(out chan<- cliBlock, stop <-chan struct{}) func(cliBlock) bool {
	return func(m cliBlock) bool {
		select {
		case out <- m:
			return true
		case <-stop:
			return false
		}
	}
}

// readRaw reads a pty child's output and hands it to a loop as it comes;
// its last message is the child's exit.
func readRaw(gen int, c Child, out chan<- cliBlock, stop <-chan struct{}) {
	send := sender(out, stop)
	buf := make([]byte, 32<<10)
	r := c.Stdout()
	for {
		n, err := r.Read(buf)
		if n > 0 && !send(cliBlock{gen: gen, lines: string(buf[:n]), raw: true}) {
			return
		}
		if err != nil {
			break
		}
	}
	<-c.Done()
	exit := c.Exit()
	send(cliBlock{gen: gen, exit: &exit})
}
