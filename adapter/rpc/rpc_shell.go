package rpc

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/internal/payload"
	"github.com/ccbridge/ccbridge/mapping/rpc"
	"github.com/ccbridge/ccbridge/session"
)

// shell.exec: a command the user typed (bang mode), run in the session's
// working directory, with a timeout and bounded output. The command line
// is the single argument of `$SHELL -c` (or /bin/sh -c); it is never
// pasted into a larger string. With argv (an extension) the program runs
// without a shell.

const (
	// shellKeep is how much of each stream is kept at its head and, again,
	// at its tail; longer output keeps both ends and says how much was
	// left out.
	shellKeep = 32 << 10
	// shellKillGrace is the wait between SIGTERM and SIGKILL to the
	// command's process group, on timeout or cancel.
	shellKillGrace = 2 * time.Second
)

func (l *rpcLoop) shellExec(id string, p gjson.Result) {
	sp, err := rpc.ParseShellExec(p)
	if err != nil {
		l.respondErr(id, err)
		return
	}
	dir, err := l.resolveDir(sp.CWD)
	if err != nil {
		l.respondErr(id, err)
		return
	}
	if l.shells >= maxShells {
		l.respondErr(id, &rpc.Error{Code: rpc.CodeRuntimeBusy, Message: strconv.Itoa(maxShells) + " shell commands are running already"})
		return
	}
	argv := sp.Argv
	if argv == nil {
		argv = []string{userShell(l.getenv("SHELL")), "-c", sp.Command}
	}
	preview := rpc.CommandPreview(sp.Command)
	if sp.Command == "" {
		preview = rpc.CommandPreview(quoteArgv(sp.Argv))
	}
	l.shells++
	timeout := time.Duration(sp.TimeoutSeconds * float64(time.Second))
	l.log.Info("shell.exec", payload.With(l.log, "command", preview, "origin", "ui_bang", "cwd", dir, "timeout", timeout)...)
	spill := l.outputs.spiller()
	l.goRequest(id, rpc.MethodShellExec, func(ctx context.Context) func() {
		res, spilled, err := runShell(ctx, argv, dir, timeout, l.cfg.Child.Guardian, spill)
		return func() {
			l.shells--
			if !l.finish(id) {
				l.outputs.discard(spilled)
				return // request.cancel answered it
			}
			if err != nil {
				l.outputs.discard(spilled)
				l.respondErr(id, rpc.Internal("running the command: "+err.Error()))
				return
			}
			res.StdoutCacheID, res.StderrCacheID = l.outputs.add(spilled, l.loop.Now())
			res.CommandPreview = preview
			l.log.Info("shell.exec done", "exit_code", res.ExitCode, "signal", res.Signal, "duration_ms", res.DurationMs)
			l.respond(id, rpc.AppendShellExecResult(nil, id, res))
		}
	})
}

// userShell is $SHELL when it names an executable by absolute path, else
// /bin/sh.
func userShell(sh string) string {
	if filepath.IsAbs(sh) {
		if fi, err := os.Stat(sh); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return sh
		}
	}
	return "/bin/sh"
}

func quoteArgv(argv []string) string {
	s := ""
	for i, a := range argv {
		if i > 0 {
			s += " "
		}
		s += strconv.Quote(a)
	}
	return s
}

// runShell runs argv in dir, in its own process group, with stdin from
// /dev/null. A stream longer than the head and tail kept in memory is
// also written whole (up to shellCacheMax) to a file that spill makes:
// spilled holds those files, [0] stdout and [1] stderr (zero when a
// stream fit), and the caller keeps or removes them. When timeout passes or ctx ends, the group gets SIGTERM, then
// SIGKILL after shellKillGrace. The group is also killed once the command
// exits, so nothing it started outlives it. With guardian (ccbridge's own
// executable, see session.Guard) the command runs under a guardian, which
// also kills what left the group (setsid), and does so when ccbridge dies
// too; the SIGKILL is then the guardian's. An error means the command
// could not be started.
func runShell(ctx context.Context, argv []string, dir string, timeout time.Duration, guardian string, spill func() (*os.File, error)) (res rpc.ShellResult, spilled [2]spilledOutput, err error) {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// ccbridge owns the pipes: Wait then returns when the command exits,
	// not when the last process holding its output does, and the group
	// can be killed at that moment.
	outR, outW, err := os.Pipe()
	if err != nil {
		return rpc.ShellResult{}, spilled, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return rpc.ShellResult{}, spilled, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdout = outW
	cmd.Stderr = errW
	setProcessGroup(cmd)
	guard, err := session.Guarded(cmd, guardian)
	start := time.Now()
	if err == nil {
		err = guard.Started(cmd.Start())
	}
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return rpc.ShellResult{}, spilled, err
	}
	stdout, stderr := headTailBuf{spill: spill}, headTailBuf{spill: spill}
	var readers sync.WaitGroup
	for _, p := range [...]struct {
		r *os.File
		b *headTailBuf
	}{{outR, &stdout}, {errR, &stderr}} {
		readers.Add(1)
		go func() {
			defer readers.Done()
			io.Copy(p.b, p.r) // ends at EOF, or when the read end is closed below
		}()
	}
	pid := cmd.Process.Pid
	waited := make(chan struct{})
	var stopped sync.WaitGroup
	stopped.Add(1)
	go func() {
		defer stopped.Done()
		select {
		case <-waited:
			return
		case <-tctx.Done():
		}
		killGroup(pid, false)
		select {
		case <-waited:
		case <-time.After(shellKillGrace):
			if guard != nil {
				guard.Kill() // a SIGKILL would stop the guardian from sweeping
			} else {
				killGroup(pid, true)
			}
		}
	}()
	werr := cmd.Wait()
	close(waited)
	stopped.Wait()
	killGroup(pid, true) // whatever the command left running in its group
	guard.Kill()         // the guardian has swept; this releases its lifeline
	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(shellKillGrace):
		// A process outside the group still holds the output open.
		outR.Close()
		errR.Close()
		<-drained
	}
	outR.Close()
	errR.Close()
	spilled[0], spilled[1] = stdout.spilled("stdout"), stderr.spilled("stderr")
	res = rpc.ShellResult{
		ExitCode:   -1,
		DurationMs: time.Since(start).Milliseconds(),
		TimedOut:   errors.Is(tctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil,
		CWD:        dir,
	}
	res.Stdout, res.TruncStdout = stdout.text()
	res.Stderr, res.TruncStderr = stderr.text()
	if ps := cmd.ProcessState; ps != nil {
		res.ExitCode = ps.ExitCode()
		res.Signal = exitSignal(ps)
	}
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) {
		return res, spilled, werr
	}
	return res, spilled, nil
}

// headTailBuf keeps the first and last shellKeep bytes written to it.
// With spill, once the output no longer fits in head and tail, it is
// also written whole to a file spill makes, up to shellCacheMax bytes.
type headTailBuf struct {
	mu    sync.Mutex
	head  []byte
	tail  []byte // a ring once full
	pos   int
	total int64

	spill     func() (*os.File, error)
	file      *os.File
	kept      int64 // bytes in file
	spillFail bool
}

// keep writes p to the spill file, up to shellCacheMax in all.
func (b *headTailBuf) keep(p []byte) {
	if room := shellCacheMax - b.kept; int64(len(p)) > room {
		p = p[:room]
	}
	if len(p) == 0 {
		return
	}
	n, err := b.file.Write(p)
	b.kept += int64(n)
	if err != nil {
		b.spillFail = true
	}
}

// spilled closes the spill file and says what it holds.
func (b *headTailBuf) spilled(stream string) spilledOutput {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.file == nil {
		return spilledOutput{}
	}
	b.file.Close()
	return spilledOutput{path: b.file.Name(), stream: stream, kept: b.kept, complete: b.kept == b.total && !b.spillFail}
}

func (b *headTailBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	if b.spill != nil && b.file == nil && !b.spillFail && b.total+int64(n) > 2*shellKeep {
		// The output outgrows head and tail: until now they hold all of
		// it, in order (the tail has not wrapped yet).
		if f, err := b.spill(); err != nil {
			b.spillFail = true
		} else {
			b.file = f
			b.keep(b.head)
			b.keep(b.tail)
		}
	}
	if b.file != nil && !b.spillFail {
		b.keep(p)
	}
	b.total += int64(n)
	if room := shellKeep - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		if len(b.tail) < shellKeep {
			k := min(shellKeep-len(b.tail), len(p))
			b.tail = append(b.tail, p[:k]...)
			p = p[k:]
			continue
		}
		if len(p) >= shellKeep {
			copy(b.tail, p[len(p)-shellKeep:])
			b.pos = 0
			break
		}
		k := copy(b.tail[b.pos:], p)
		b.pos = (b.pos + k) % shellKeep
		p = p[k:]
	}
	return n, nil
}

// text returns the output: whole when it fit, else the head, a marker
// saying how many bytes were left out, and the tail, cut at character
// boundaries.
func (b *headTailBuf) text() (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	tail := append(append([]byte(nil), b.tail[b.pos:]...), b.tail[:b.pos]...)
	if b.total <= 2*shellKeep {
		return string(b.head) + string(tail), false
	}
	head := trimIncompleteEnd(b.head)
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	omitted := b.total - int64(len(head)) - int64(len(tail))
	return string(head) + "\n...[" + strconv.FormatInt(omitted, 10) + " bytes omitted]...\n" + string(tail), true
}

// trimIncompleteEnd drops a character cut off at the end of b.
func trimIncompleteEnd(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			return b
		}
	}
	return b
}
