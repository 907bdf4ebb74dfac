package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Defaults for the zero fields of [Config].
const (
	DefaultGrace      = 10 * time.Second
	DefaultTermGrace  = 5 * time.Second
	DefaultWaitDelay  = 2 * time.Second
	DefaultStderrKeep = 32 << 10
)

// DefaultPipeSize is the pipe buffer asked for behind the CLI's stdout,
// and by ccbridge for its own stdout when that is a pipe. Four times
// Linux's 64 KiB default gives most of what a larger buffer gains (the
// table in docs/design.md) while keeping each session's share of the
// user's pipe allowance (/proc/sys/fs/pipe-user-pages-soft) small.
const DefaultPipeSize = 256 << 10

// maxLogLine caps how much of one stderr line goes into a debug log record.
const maxLogLine = 2048

// Config describes the child to start. The zero value of every field except
// Path means "the default"; Path is required.
type Config struct {
	// Path is the CLI executable, normally from FindCLI. A name without a
	// path separator is looked up on this process's PATH by os/exec.
	Path string
	// Args are the arguments after the program name, normally from BuildArgs.
	Args []string
	// LeadArgs go before Args (ccbridge under --fake-model puts a
	// --settings there). The CLI takes the last of a repeated flag, so the
	// same flag in Args wins over one here.
	LeadArgs []string
	// Dir is the child's working directory; "" means ccbridge's own.
	Dir string
	// Env holds extra "KEY=value" entries appended to os.Environ(). When a
	// key appears more than once the last entry wins, so Env overrides the
	// inherited environment.
	Env []string
	// DropEnv, when set, leaves out of the child's environment every
	// variable of os.Environ() whose name it reports true for (ccbridge
	// under --fake-model drops what could lead the CLI to a real API).
	// Entries of Env are never dropped.
	DropEnv func(name string) bool
	// ProgramEnv, when set, gives what to add to Env when the child runs
	// under a pty worker: another program than the CLI (its path as
	// given), or "" for the CLI's own TUI. ccbridge under --fake-model
	// points Codex and Gemini CLI at the fake with it, and gives the TUI a
	// prepared HOME.
	ProgramEnv func(path string) []string

	// Grace is how long Shutdown waits for the child to exit after closing
	// its stdin before it sends SIGTERM to the process group.
	// 0 means DefaultGrace (10 s); a negative value means no wait.
	Grace time.Duration
	// TermGrace is how long Shutdown waits after SIGTERM before it sends
	// SIGKILL to the process group.
	// 0 means DefaultTermGrace (5 s); a negative value means no wait.
	TermGrace time.Duration
	// WaitDelay bounds how long, after the child has exited and its process
	// group has been killed, the stdout and stderr read ends may stay open
	// because some process outside the group still holds their write ends.
	// When it expires they are closed (see Child.Stdout).
	// 0 means DefaultWaitDelay (2 s); a negative value means no wait.
	WaitDelay time.Duration

	// StderrKeep is how many bytes of stderr are kept at the head and, again,
	// at the tail; the middle is replaced by an "… omitting N bytes …"
	// marker. 0 means DefaultStderrKeep (32 KiB each); negative keeps none.
	StderrKeep int

	// PipeSize is the pipe buffer asked for behind the CLI's stdout
	// (Linux's F_SETPIPE_SZ, best effort). 0 means DefaultPipeSize; a
	// negative value keeps the system's default.
	PipeSize int

	// Logger receives the child's stderr lines at Debug (each cut to 2 KiB)
	// and lifecycle events. nil discards everything.
	Logger *slog.Logger

	// PTY runs the child with a pseudo-terminal as its stdin and stdout,
	// for a CLI that must believe it talks to a terminal. Stderr stays a
	// pipe, drained as usual. The child leads a new session (Setsid) with
	// the pty as its controlling terminal; the session is also its process
	// group. The terminal's input starts in raw mode: no echo, no line
	// editing, no length limit on input lines and no signal characters.
	// Its output is processed as a terminal emulator's is: "\n" reaches
	// the reader as "\r\n" (a program that makes its terminal raw turns
	// that off itself). A pty has no half-close, so CloseStdin switches
	// the terminal to canonical mode and writes a newline (a blank line,
	// which the CLI ignores) and the end-of-file character.
	// Linux only; elsewhere Start fails with errors.ErrUnsupported.
	PTY bool
	// PTYRows and PTYCols set the pty's window size.
	// 0 means 24 rows and 80 columns.
	PTYRows, PTYCols uint16

	// Guardian, when set, is ccbridge's own executable (an absolute path):
	// on Linux the child is then started under a guardian (see [Guard]),
	// which makes sure that no process the CLI starts outlives it or
	// ccbridge, whichever way either ends (kill -9 included), even one
	// that left the process group with setsid, as the CLI's Bash tool
	// does. The guardian is the process Pid reports and the process group
	// leader, the CLI runs in its group, and a SIGKILL to the group
	// (Kill, the last stage of Shutdown) becomes Guard.Kill. The program
	// at Guardian must call RunGuardian when its first argument is
	// GuardianArg. Elsewhere than Linux it is ignored. "" starts the CLI
	// directly.
	Guardian string
}

// guardianKillWait bounds the wait for a guardian told to kill (Kill,
// Shutdown's last stage) before its process group gets SIGKILL: a
// guardian that does not sweep (stopped, say) must not keep the child
// alive. The guardian gives up its own sweep after 5 s.
const guardianKillWait = 10 * time.Second

// ErrNoPath is returned by Start when Config.Path is empty.
var ErrNoPath = errors.New("session: Config.Path is empty")

// ErrWouldBlock is returned by a NoWaitWriter's function when the file
// cannot take a byte without waiting.
var ErrWouldBlock = errors.New("session: the write would block")

// orDefault applies the rule of Config's numbers: 0 means def, and a
// negative value means none (0).
func orDefault[T ~int | ~int64](v *T, def T) {
	switch {
	case *v == 0:
		*v = def
	case *v < 0:
		*v = 0
	}
}

func (cfg Config) withDefaults() (Config, error) {
	if cfg.Path == "" {
		return cfg, ErrNoPath
	}
	if errNoProcessGroups != nil {
		return cfg, fmt.Errorf("session: ccbridge does not start the Claude Code CLI on %s: its guarantees need process groups (README, \"Platforms\"): %w", runtime.GOOS, errNoProcessGroups)
	}
	orDefault(&cfg.Grace, DefaultGrace)
	orDefault(&cfg.TermGrace, DefaultTermGrace)
	orDefault(&cfg.WaitDelay, DefaultWaitDelay)
	orDefault(&cfg.StderrKeep, DefaultStderrKeep)
	orDefault(&cfg.PipeSize, DefaultPipeSize) // 0 then keeps the system's
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.PTYRows == 0 {
		cfg.PTYRows = 24
	}
	if cfg.PTYCols == 0 {
		cfg.PTYCols = 80
	}
	return cfg, nil
}

// Exit describes how the child ended. It is final once Child.Done is closed.
type Exit struct {
	// Code is the exit status, or 128+signal when the child was killed by a
	// signal (as shells report it: SIGKILL gives 137, SIGTERM 143). It is -1
	// when unknown (Err is set, or the child is still running).
	Code int
	// Signal is the signal that killed the child, or 0.
	Signal syscall.Signal
	// Stderr is the head and tail of everything the child wrote to stderr.
	Stderr string
	// Err is an error from waiting for the child, not a non-zero exit.
	Err error
}

// String reads well in a log: "claude exited with code 1: <stderr tail>".
// Only the last line or so of stderr (at most 512 bytes) is included; the
// full head and tail are in Stderr.
func (e Exit) String() string {
	var s string
	switch {
	case e.Err != nil:
		s = "claude: " + e.Err.Error()
	case e.Signal != 0:
		s = fmt.Sprintf("claude killed by %s (code %d)", signalName(e.Signal), e.Code)
	default:
		s = fmt.Sprintf("claude exited with code %d", e.Code)
	}
	if t := lastWords(e.Stderr, 512); t != "" {
		s += ": " + t
	}
	return s
}

// lastWords returns the end of stderr text, at most max bytes, starting at a
// line boundary when one is near.
func lastWords(s string, max int) string {
	s = strings.TrimSpace(s)
	if len(s) <= max {
		return s
	}
	s = s[len(s)-max:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
		s = s[i+1:]
	}
	return "…" + strings.TrimSpace(s)
}

// signalName names sig for a message: SignalName, else its number and
// description ("signal 10 (user defined signal 1)").
func signalName(sig syscall.Signal) string {
	if n := SignalName(sig); n != "" {
		return n
	}
	return fmt.Sprintf("signal %d (%v)", int(sig), sig)
}

// SignalName returns the conventional name ("SIGTERM") of the signals a
// CLI child is usually stopped or killed by: SIGKILL, SIGTERM, SIGINT,
// SIGHUP, SIGQUIT, SIGABRT, SIGSEGV and SIGPIPE. For any other signal it
// returns "", and the caller picks its own wording.
func SignalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	case syscall.SIGABRT:
		return "SIGABRT"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGPIPE:
		return "SIGPIPE"
	}
	return ""
}

// Child is a running CLI process. Create it with Start. Its methods are safe
// for concurrent use; CloseStdin, Shutdown and Kill may be called any number
// of times from any goroutine.
type Child struct {
	cfg Config
	log *slog.Logger
	cmd *exec.Cmd
	pid int

	stdin  *os.File // write end of the child's stdin (pty mode: the master)
	stdout *os.File // read end of the child's stdout (pty mode: the master)
	stderr *os.File // read end of the child's stderr
	// stdinConn is stdin's raw connection, for WriteNow (Unix).
	stdinConn syscall.RawConn

	stdinOnce   sync.Once
	stdinErr    error
	stdinClosed atomic.Bool // no more writes (stdin closed, or a pty's end of file sent)

	ttyName string // pty mode: the terminal's path, for CloseStdin

	guard     *Guard      // nil without a guardian
	guardKill *time.Timer // the group's SIGKILL if the guardian has not swept in time

	stdoutEOF     chan struct{} // closed when a Stdout read hits EOF
	stdoutEOFOnce sync.Once
	stdoutClosed  atomic.Bool // we closed stdout ourselves

	stderrMu   sync.Mutex
	saver      headTail
	stderrDone chan struct{} // closed when the drain goroutine returns

	mu      sync.Mutex
	exited  bool    // reaped; no more signals to the group
	sigErrs []error // signalling errors during Shutdown

	exitedCh     chan struct{} // closed when Wait has returned
	done         chan struct{} // closed when exit is final
	exit         Exit          // written before done is closed
	shutdownOnce sync.Once
}

// Start spawns the CLI described by cfg. The child runs in its own process
// group (Setpgid) and, on Linux, gets Pdeathsig: SIGKILL so that it dies with
// ccbridge. With cfg.Guardian the child is the guardian, which gets no
// Pdeathsig (it learns of ccbridge's death from its lifeline) and gives
// the CLI Pdeathsig of its own.
//
// Pdeathsig is delivered when the OS thread that forked the child ends, not
// when the whole process does, and the Go runtime ends a thread only when a
// goroutine exits while locked to it (runtime.LockOSThread). Start pins the
// calling goroutine to its thread for the fork and unpins it afterwards, so
// the fork comes from one known thread that is left unlocked and lives as
// long as ccbridge. Do not call Start from a goroutine that holds
// LockOSThread and may exit without unlocking: the runtime would retire that
// thread and the kernel would kill the child.
//
// The caller must eventually call Shutdown or Kill, or let the child exit by
// itself; either way Done is closed once the child has been reaped.
func Start(cfg Config) (*Child, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(cfg.Path, append(slices.Clip(cfg.LeadArgs), cfg.Args...)...)
	cmd.Dir = cfg.Dir
	cmd.Env = childEnv(os.Environ(), cfg.Env, cfg.DropEnv)
	cmd.SysProcAttr = sysProcAttr()

	c := &Child{
		cfg:        cfg,
		log:        cfg.Logger,
		cmd:        cmd,
		saver:      headTail{n: cfg.StderrKeep},
		stdoutEOF:  make(chan struct{}),
		stderrDone: make(chan struct{}),
		exitedCh:   make(chan struct{}),
		done:       make(chan struct{}),
	}
	start := c.startPipes
	if cfg.PTY {
		start = c.startPTY
	}
	if err := start(); err != nil {
		return nil, fmt.Errorf("session: starting %s: %w", cfg.Path, err)
	}
	c.pid = cmd.Process.Pid
	c.log = c.log.With("pid", c.pid)
	c.stdinConn, _ = c.stdin.SyscallConn() // nil: WriteNow fails, Write works
	c.log.Debug("claude started", "path", cfg.Path, "dir", cfg.Dir)

	go c.drainStderr()
	go c.wait()
	return c, nil
}

// inherit is env without the entries whose name drop reports true for.
// CheckpointEnv is the CLI's switch for file checkpointing in a
// stream-json session (what the Agent SDK's enableFileCheckpointing sets):
// with it the CLI snapshots every file a tool edits before each prompt,
// and answers the rewind_files control request. Without it the CLI
// 2.1.330 answers rewind_files with "File rewinding is not enabled.".
const CheckpointEnv = "CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING"

// childEnv is a child's environment: the inherited one less what drop
// names, then extra; and CheckpointEnv=1 when neither sets CheckpointEnv,
// so that every CLI ccbridge starts keeps file checkpoints (rewind). A
// value given (0 included) is left as it is.
func childEnv(environ, extra []string, drop func(string) bool) []string {
	env := append(slices.Clip(inherit(environ, drop)), extra...)
	for _, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); name == CheckpointEnv {
			return env
		}
	}
	return append(env, CheckpointEnv+"=1")
}

func inherit(env []string, drop func(string) bool) []string {
	if drop == nil {
		return env
	}
	kept := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !drop(name) {
			kept = append(kept, kv)
		}
	}
	return kept
}

// startPipes creates the three pipes, starts the process and closes the
// child's ends in the parent.
func (c *Child) startPipes() (err error) {
	var files []*os.File // every end, for cleanup on failure
	defer func() {
		if err != nil {
			for _, f := range files {
				f.Close() // Best effort.
			}
		}
	}()
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return err
	}
	outR, outW, err := pipe()
	if err != nil {
		return err
	}
	GrowPipe(outR, c.cfg.PipeSize)
	errR, errW, err := pipe()
	if err != nil {
		return err
	}
	// *os.File values are handed to the child directly: os/exec starts no
	// copying goroutines and Wait does not wait for any.
	c.cmd.Stdin, c.cmd.Stdout, c.cmd.Stderr = inR, outW, errW

	if c.guard, err = Guarded(c.cmd, c.cfg.Guardian); err != nil {
		return err
	}
	runtime.LockOSThread() // Pdeathsig is tied to the forking thread; see Start.
	err = c.guard.Started(c.cmd.Start())
	runtime.UnlockOSThread()

	// The child has its own copies now (or never will).
	inR.Close()  // Best effort.
	outW.Close() // Best effort.
	errW.Close() // Best effort.
	if err != nil {
		return err
	}
	c.stdin, c.stdout, c.stderr = inW, outR, errR
	return nil
}

// Pid returns the child's process id, which is also its process group id.
// With a guardian (Config.Guardian) it is the guardian's; the CLI is its
// child, in the same group.
func (c *Child) Pid() int { return c.pid }

// Stdin returns the child's standard input. Closing it is the same as
// CloseStdin. Writes fail once the child has exited or stdin was closed.
func (c *Child) Stdin() io.WriteCloser { return stdinWriter{c} }

type stdinWriter struct{ c *Child }

func (w stdinWriter) Write(p []byte) (int, error) {
	if w.c.stdinClosed.Load() {
		return 0, fmt.Errorf("session: writing to claude stdin: %w", os.ErrClosed)
	}
	return w.c.stdin.Write(p)
}
func (w stdinWriter) Close() error { return w.c.CloseStdin() }

// CloseStdin closes the child's standard input, which tells the CLI that no
// more input will come. It is idempotent: later calls return the first
// call's result. A Write blocked on a full pipe is released with an error.
// In PTY mode it sends end-of-file through the terminal instead (see
// Config.PTY) and makes later writes fail.
func (c *Child) CloseStdin() error {
	c.stdinOnce.Do(func() {
		if c.cfg.PTY {
			c.stdinClosed.Store(true)
			c.stdinErr = c.ptyEOF()
			return
		}
		c.stdinClosed.Store(true)
		c.stdinErr = c.stdin.Close()
	})
	return c.stdinErr
}

// stdinGone is CloseStdin for a child that has exited: nothing is sent.
func (c *Child) stdinGone() {
	c.stdinOnce.Do(func() {
		c.stdinClosed.Store(true)
		if !c.cfg.PTY {
			c.stdinErr = c.stdin.Close()
		}
	})
}

// Stdout returns the child's standard output. One goroutine should own it.
//
// The reader reports io.EOF once the child and everything else holding the
// pipe have closed it. Because the child's process group is killed when the
// child exits, that normally follows the exit at once. If a process that
// left the group still holds the pipe open Config.WaitDelay after the exit,
// or the caller has not read to EOF by then, the read end is closed and the
// reader reports io.EOF as well; anything still unread is lost. In PTY mode
// the terminal's EIO is reported as io.EOF too.
func (c *Child) Stdout() io.Reader { return stdoutReader{c} }

type stdoutReader struct{ c *Child }

func (r stdoutReader) Read(p []byte) (int, error) {
	n, err := r.c.stdout.Read(p)
	if err != nil {
		switch {
		case errors.Is(err, os.ErrClosed) && r.c.stdoutClosed.Load():
			err = io.EOF // closed by us after WaitDelay
		case r.c.cfg.PTY && errors.Is(err, syscall.EIO):
			err = io.EOF // Linux: every holder of the terminal closed it
		}
		if err == io.EOF {
			r.c.stdoutEOFOnce.Do(func() { close(r.c.stdoutEOF) })
		}
	}
	return n, err
}

// Done is closed when the child has exited and Exit is final (its stderr has
// been read to EOF, or for at most WaitDelay).
func (c *Child) Done() <-chan struct{} { return c.done }

// Exit reports how the child ended. Before Done is closed it returns
// Exit{Code: -1}.
func (c *Child) Exit() Exit {
	select {
	case <-c.done:
		return c.exit
	default:
		return Exit{Code: -1}
	}
}

// StderrTail returns the stderr text kept so far (head, omission marker,
// tail). It may be called at any time.
func (c *Child) StderrTail() string {
	c.stderrMu.Lock()
	defer c.stderrMu.Unlock()
	return c.saver.String()
}

// Kill sends SIGKILL to the child's process group now. It returns nil if the
// child has already exited.
func (c *Child) Kill() error { return c.signal(syscall.SIGKILL) }

// signal sends sig to the child's process group unless the child has already
// been reaped (after which its pid, and so the group id, may be reused).
// "No such process" counts as success.
func (c *Child) signal(sig syscall.Signal) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.exited {
		return nil
	}
	return c.signalLocked(sig)
}

func (c *Child) signalLocked(sig syscall.Signal) error {
	if sig == syscall.SIGKILL && c.guard != nil {
		// A SIGKILL would end the guardian before it swept; it kills
		// everything itself. The group's SIGKILL follows only if it does
		// not.
		c.guard.Kill()
		if c.guardKill == nil {
			c.guardKill = time.AfterFunc(guardianKillWait, c.guardianStuck)
		}
		return nil
	}
	return c.signalGroupLocked(sig)
}

// guardianStuck kills the group of a guardian that did not exit
// guardianKillWait after it was told to kill.
func (c *Child) guardianStuck() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.exited {
		c.log.Warn("claude's guardian did not sweep in time; sending SIGKILL to the group", "wait", guardianKillWait)
		c.signalGroupLocked(syscall.SIGKILL) // Best effort.
	}
}

func (c *Child) signalGroupLocked(sig syscall.Signal) error {
	err := signalGroup(c.pid, sig)
	if err == nil || errors.Is(err, syscall.ESRCH) || errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return fmt.Errorf("session: sending %s to process group %d: %w", signalName(sig), c.pid, err)
}

// Shutdown stops the child in stages: close stdin; wait up to Grace for it to
// exit; send SIGTERM to the process group; wait up to TermGrace; send SIGKILL
// to the group; wait for Done. The stages run once, in a goroutine of their
// own, however many times and from however many goroutines Shutdown is
// called; every call returns when Done is closed.
//
// If ctx ends first, Shutdown skips the remaining stages: it sends SIGKILL to
// the group at once, waits for Done and returns ctx.Err() (wrapped). It
// returns nil once the child is gone, whatever its exit status (see Exit),
// unless a signal could not be sent.
func (c *Child) Shutdown(ctx context.Context) error {
	c.shutdownOnce.Do(func() { go c.escalate() })
	select {
	case <-c.done:
		return c.shutdownErr()
	default:
	}
	select {
	case <-c.done:
		return c.shutdownErr()
	case <-ctx.Done():
	}
	c.log.Warn("claude shutdown cut short; sending SIGKILL", "cause", context.Cause(ctx))
	kerr := c.Kill()
	<-c.done
	return errors.Join(fmt.Errorf("session: shutdown cut short: %w", ctx.Err()), kerr, c.shutdownErr())
}

func (c *Child) shutdownErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return errors.Join(c.sigErrs...)
}

// escalate runs the shutdown stages. It returns as soon as the child has
// exited.
func (c *Child) escalate() {
	if err := c.CloseStdin(); err != nil {
		c.log.Debug("closing claude stdin", "err", err)
	}
	if c.waitExit(c.cfg.Grace) {
		return
	}
	c.log.Info("claude still running after stdin was closed; sending SIGTERM", "grace", c.cfg.Grace)
	c.escalateSignal(syscall.SIGTERM)
	if c.waitExit(c.cfg.TermGrace) {
		return
	}
	c.log.Warn("claude still running after SIGTERM; sending SIGKILL", "grace", c.cfg.TermGrace)
	c.escalateSignal(syscall.SIGKILL)
}

func (c *Child) escalateSignal(sig syscall.Signal) {
	if err := c.signal(sig); err != nil {
		c.log.Error("signalling claude", "err", err)
		c.mu.Lock()
		c.sigErrs = append(c.sigErrs, err)
		c.mu.Unlock()
	}
}

// waitExit waits up to d for the child to be reaped and reports whether it
// was.
func (c *Child) waitExit(d time.Duration) bool {
	select {
	case <-c.exitedCh:
		return true
	default:
	}
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.exitedCh:
		return true
	case <-t.C:
		return false
	}
}

// wait is the one goroutine that calls cmd.Wait. It kills what is left of the
// process group, bounds the wait for the pipes by WaitDelay, records Exit and
// closes done.
func (c *Child) wait() {
	// On Linux, wait for the exit without reaping: while the child is a
	// zombie its pid, and so its process group id, cannot be reused, so the
	// SIGKILL below cannot hit an unrelated group. Elsewhere the group is
	// signalled just after reaping, which leaves a tiny window.
	var werr error
	reaped := false
	if err := waitNoReap(c.pid); err != nil {
		// Never signal a group whose leader may still run: reap first.
		c.log.Debug("waiting for claude without reaping", "err", err)
		werr, reaped = c.cmd.Wait(), true
	}
	c.mu.Lock()
	// No grandchild may outlive the CLI; this also lets stdout reach EOF.
	// (A guardian has swept already; its lifeline is of no more use.)
	if err := c.signalGroupLocked(syscall.SIGKILL); err != nil {
		c.log.Warn("killing claude's process group after exit", "err", err)
	}
	c.guard.Kill()
	if c.guardKill != nil {
		c.guardKill.Stop()
	}
	c.exited = true
	c.mu.Unlock()

	if !reaped {
		werr = c.cmd.Wait()
	}
	close(c.exitedCh)

	// The stdin write end is of no more use; release a blocked writer.
	c.stdinGone()

	ex := exitFrom(c.cmd.ProcessState, werr)

	deadline := time.NewTimer(c.cfg.WaitDelay)
	defer deadline.Stop()
	expired := false
	select {
	case <-c.stderrDone:
	case <-deadline.C:
		expired = true
		c.log.Warn("claude stderr still open after exit; closing it", "wait_delay", c.cfg.WaitDelay)
		c.stderr.Close() // Interrupts the drain's Read.
		<-c.stderrDone
	}
	ex.Stderr = c.StderrTail()
	c.exit = ex
	c.log.Debug("claude exited", "code", ex.Code, "signal", int(ex.Signal), "err", ex.Err)
	close(c.done)

	if !expired {
		select {
		case <-c.stdoutEOF:
		case <-deadline.C:
			c.log.Warn("claude stdout not at EOF after exit; closing it", "wait_delay", c.cfg.WaitDelay)
		}
	}
	c.stdoutClosed.Store(true)
	c.stdout.Close() // Best effort; a pending Read returns io.EOF.
}

// exitFrom turns Wait's results into an Exit (without Stderr).
func exitFrom(ps *os.ProcessState, werr error) Exit {
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) {
		return Exit{Code: -1, Err: werr}
	}
	if ps == nil {
		return Exit{Code: -1, Err: errors.New("no process state")}
	}
	code, sig := exitStatus(ps)
	return Exit{Code: code, Signal: sig}
}

// drainStderr reads stderr to EOF into the head-and-tail saver and logs it
// line by line at Debug.
func (c *Child) drainStderr() {
	defer close(c.stderrDone)
	defer c.stderr.Close() // Best effort.
	ll := lineLogger{log: c.log, debug: c.log.Enabled(context.Background(), slog.LevelDebug)}
	buf := make([]byte, 32<<10)
	for {
		n, err := c.stderr.Read(buf)
		if n > 0 {
			c.stderrMu.Lock()
			c.saver.Write(buf[:n])
			c.stderrMu.Unlock()
			ll.write(buf[:n])
		}
		if err != nil {
			ll.flush()
			if err != io.EOF && !errors.Is(err, os.ErrClosed) {
				c.log.Debug("reading claude stderr", "err", err)
			}
			return
		}
	}
}

// lineLogger splits stderr into lines and logs each at Debug, cut to
// maxLogLine bytes.
type lineLogger struct {
	log   *slog.Logger
	debug bool
	buf   []byte
	size  int // full length of the current line
}

func (l *lineLogger) write(p []byte) {
	if !l.debug {
		return
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		seg := p
		if i >= 0 {
			seg = p[:i]
		}
		l.size += len(seg)
		if room := maxLogLine - len(l.buf); room > 0 {
			l.buf = append(l.buf, seg[:min(room, len(seg))]...)
		}
		if i < 0 {
			return
		}
		l.flush()
		p = p[i+1:]
	}
}

func (l *lineLogger) flush() {
	if !l.debug || (l.size == 0 && len(l.buf) == 0) {
		return
	}
	line := strings.TrimSuffix(string(l.buf), "\r")
	if l.size > len(l.buf) {
		l.log.Debug("claude stderr", "line", line+"…", "bytes", l.size)
	} else {
		l.log.Debug("claude stderr", "line", line)
	}
	l.buf = l.buf[:0]
	l.size = 0
}
