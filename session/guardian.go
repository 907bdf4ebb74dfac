package session

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/ccbridge/ccbridge/session/guardian"
)

// GuardianArg, as the first argument of ccbridge's own executable, makes
// that process a guardian instead of a bridge (see [RunGuardian]). No CLI
// argument looks like it.
const GuardianArg = guardian.Arg

// RunGuardian is the guardian process (see [Guard]); args are what
// follows [GuardianArg]: the command's path, "--", and its argv. It
// returns only when it could not start the command (2: bad arguments;
// 127: the command did not start, which it reported to the parent);
// otherwise it ends the process itself, the way the command ended.
//
// A program that imports this package need not call it: such a program
// started with GuardianArg becomes the guardian before its packages are
// initialized (package session/guardian), which keeps the guardian's
// memory small.
func RunGuardian(args []string) int { return guardian.Run(args) }

// Guard is the parent's side of a guardian: a process (ccbridge's own
// executable, re-run with [GuardianArg]) that starts a command with the
// standard input, output and error it was given and makes sure nothing
// the command starts outlives it or ccbridge.
//
// On Linux the guardian is the command's subreaper
// (PR_SET_CHILD_SUBREAPER): a process below the command whose parent
// ends, including one that left the process group or the session with
// setsid, becomes the guardian's child instead of init's. The guardian
// holds the read end of a pipe (the lifeline) whose only write end is the
// Guard's. When the command exits, or when the lifeline reads end of file
// (Guard.Kill, or ccbridge gone by any path, kill -9 included), the
// guardian SIGKILLs every process below it, again until none is left,
// reaps them and exits the way the command did: with its exit code, or
// killed by the same signal. Killing the command by hand (the lifeline
// closed) reports SIGKILL, as a SIGKILL to the process group did.
//
// The guardian runs in the command's process group: a signal to the
// group reaches the command directly, once, as before; the guardian takes
// SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1 and SIGUSR2 without
// dying (a signal ignored when it started stays ignored, for the command
// too). A SIGKILL to the group would kill the guardian before it could
// sweep, so the parent must call Kill instead: that is what [Child] does.
//
// Elsewhere than Linux there is no guardian: [Guarded] returns a nil
// *Guard, whose methods do what the command alone would.
type Guard struct {
	cmd      *exec.Cmd
	lifeline *os.File   // write end; closing it makes the guardian sweep
	report   *os.File   // read end of the guardian's start report
	theirs   []*os.File // the guardian's ends, closed once it started
	once     sync.Once
}

// Guarded rewrites cmd, not yet started, to run under a guardian: exe
// (ccbridge's own executable, an absolute path) becomes the program, and
// cmd's program and arguments become the guardian's. On Linux the program
// run is /proc/self/exe, the very file the parent runs (so a binary
// replaced or removed since ccbridge started is no matter); exe is its
// argv[0]. cmd keeps its
// directory, environment, standard files and SysProcAttr, except that the
// parent-death signal is dropped: the guardian learns of the parent's
// death from the lifeline, and a SIGKILL would stop it from sweeping.
// cmd.ExtraFiles must be empty.
//
// After cmd.Start, call Started with Start's error. Guarded returns nil
// and leaves cmd alone where there is no guardian (not Linux), or when
// exe is "".
func Guarded(cmd *exec.Cmd, exe string) (*Guard, error) {
	if exe == "" || !guardianSupported {
		return nil, nil
	}
	self, ok := selfExe()
	if !ok {
		return nil, nil // no /proc: nothing to sweep with
	}
	if len(cmd.ExtraFiles) > 0 {
		return nil, errors.New("session: a guarded command cannot have ExtraFiles")
	}
	lr, lw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	rr, rw, err := os.Pipe()
	if err != nil {
		lr.Close()
		lw.Close()
		return nil, err
	}
	g := &Guard{cmd: cmd, lifeline: lw, report: rr, theirs: []*os.File{lr, rw}}
	// The guardian finds them as fds 3 and 4.
	cmd.ExtraFiles = []*os.File{lr, rw}
	args := append([]string{exe, GuardianArg, cmd.Path, "--"}, cmd.Args...)
	cmd.Path, cmd.Args = self, args
	dropPdeathsig(cmd.SysProcAttr)
	return g, nil
}

// Started takes cmd.Start's error and returns the command's: when the
// guardian started, Started waits for its report, and if the command
// could not be started (no such file, not executable, …) it reaps the
// guardian and returns an error like the one exec.Cmd.Start gives. A nil
// Guard returns err.
func (g *Guard) Started(err error) error {
	if g == nil {
		return err
	}
	for _, f := range g.theirs {
		f.Close() // Best effort; the guardian has its own copies.
	}
	if err != nil {
		g.Kill()
		g.report.Close()
		return err
	}
	rep, rerr := io.ReadAll(io.LimitReader(g.report, 4096))
	g.report.Close()
	if rerr == nil && string(rep) == guardianOK {
		return nil
	}
	// The guardian exits at once; reap it so that no zombie is left.
	g.Kill()
	g.cmd.Wait() // Its error is the report's.
	path := g.cmd.Args[2]
	errno, msg, _ := strings.Cut(string(rep), " ")
	if n, err := strconv.Atoi(errno); err == nil && n > 0 {
		return &fs.PathError{Op: "fork/exec", Path: path, Err: syscall.Errno(n)}
	}
	if msg == "" {
		msg = "the guardian exited before starting the command"
	}
	return fmt.Errorf("starting %s: %s", path, strings.TrimSpace(msg))
}

// Kill closes the lifeline: the guardian SIGKILLs the command and
// everything below it, reaps them and dies of SIGKILL itself. It returns
// at once; wait for the process as usual. Idempotent; a nil Guard does
// nothing.
func (g *Guard) Kill() {
	if g == nil {
		return
	}
	g.once.Do(func() { g.lifeline.Close() })
}

const guardianOK = guardian.OK
