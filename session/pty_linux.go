//go:build linux

package session

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"github.com/creack/pty"
)

// startPTY starts the child with a pty as stdin and stdout and a pipe as
// stderr, as pty.StartWithAttrs does, but with the terminal put in raw mode
// before the child can read from it.
func (c *Child) startPTY() (err error) {
	master, tty, err := pty.Open()
	if err != nil {
		return fmt.Errorf("opening a pty: %w", err)
	}
	defer tty.Close() // Best effort; the child has its own copy.
	m, err := pollable(master)
	if err != nil {
		return fmt.Errorf("preparing the pty: %w", err)
	}
	defer func() {
		if err != nil {
			m.Close() // Best effort.
		}
	}()
	if err := makeRaw(tty); err != nil {
		return fmt.Errorf("setting the pty to raw mode: %w", err)
	}
	ws := pty.Winsize{Rows: c.cfg.PTYRows, Cols: c.cfg.PTYCols}
	if err := termIoctl(tty, syscall.TIOCSWINSZ, unsafe.Pointer(&ws)); err != nil {
		return fmt.Errorf("setting the pty size: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			errR.Close() // Best effort.
		}
	}()

	c.cmd.Stdin, c.cmd.Stdout, c.cmd.Stderr = tty, tty, errW
	// A new session, with the pty (the child's fd 0) as controlling
	// terminal. Setpgid must not be set too: a session leader cannot change
	// its group, and it already leads a group with its own pid.
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	setPdeathsig(c.cmd.SysProcAttr)

	if c.guard, err = Guarded(c.cmd, c.cfg.Guardian); err != nil {
		return err
	}
	runtime.LockOSThread() // Pdeathsig is tied to the forking thread; see Start.
	err = c.guard.Started(c.cmd.Start())
	runtime.UnlockOSThread()
	errW.Close() // Best effort.
	if err != nil {
		return err
	}
	c.stdin, c.stdout, c.stderr = m, m, errR
	c.ttyName = tty.Name()
	return nil
}

// pollable returns a non-blocking duplicate of the pty master and closes the
// original. pty.Open's ioctls go through Fd, which switches the file to
// blocking mode; a blocking *os.File cannot have a Read interrupted by Close,
// which WaitDelay relies on (creack/pty README).
func pollable(master *os.File) (*os.File, error) {
	defer master.Close() // Best effort; the duplicate keeps the pty open.
	fd, _, errno := syscall.Syscall(syscall.SYS_FCNTL, master.Fd(), syscall.F_DUPFD_CLOEXEC, 0)
	if errno != 0 {
		return nil, errno
	}
	if err := syscall.SetNonblock(int(fd), true); err != nil {
		syscall.Close(int(fd)) // Best effort.
		return nil, err
	}
	return os.NewFile(fd, master.Name()), nil
}

// makeRaw is cfmakeraw(3) on the terminal t, but for its output, which
// the terminal still processes ("\n" reaches the screen as "\r\n"), as
// the terminal of an emulator starts: a program that draws with bare line
// feeds and leaves the output flags alone, as Node's raw mode does (Gemini
// CLI), relies on it. A program that makes the terminal raw itself (Codex)
// turns it off.
func makeRaw(t *os.File) error {
	var tio syscall.Termios
	if err := termIoctl(t, syscall.TCGETS, unsafe.Pointer(&tio)); err != nil {
		return err
	}
	tio.Iflag &^= syscall.IGNBRK | syscall.BRKINT | syscall.PARMRK | syscall.ISTRIP |
		syscall.INLCR | syscall.IGNCR | syscall.ICRNL | syscall.IXON
	tio.Oflag |= syscall.OPOST | syscall.ONLCR
	tio.Lflag &^= syscall.ECHO | syscall.ECHONL | syscall.ICANON | syscall.ISIG | syscall.IEXTEN
	tio.Cflag &^= syscall.CSIZE | syscall.PARENB
	tio.Cflag |= syscall.CS8
	tio.Cc[syscall.VMIN] = 1
	tio.Cc[syscall.VTIME] = 0
	return termIoctl(t, syscall.TCSETS, unsafe.Pointer(&tio))
}

// ptyEOF tells the child that input has ended: it switches the terminal to
// canonical mode, in which the end-of-file character at the start of a line
// makes the reader's read return 0, and writes a newline and that character.
//
// The newline is needed because a read that was already blocked in raw mode
// keeps its raw-mode minimum of one byte: it would consume the end-of-file
// as zero bytes and go on waiting. The newline ends that read with a blank
// line, which the CLI ignores (checked with CLI 2.1.330; a line that is not
// JSON would be an error), and the next read sees the end-of-file.
func (c *Child) ptyEOF() error {
	t, err := os.OpenFile(c.ttyName, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return fmt.Errorf("session: opening %s to end input: %w", c.ttyName, err)
	}
	defer t.Close() // Best effort.
	var tio syscall.Termios
	if err := termIoctl(t, syscall.TCGETS, unsafe.Pointer(&tio)); err != nil {
		return fmt.Errorf("session: ending pty input: %w", err)
	}
	tio.Lflag |= syscall.ICANON
	if err := termIoctl(t, syscall.TCSETS, unsafe.Pointer(&tio)); err != nil {
		return fmt.Errorf("session: ending pty input: %w", err)
	}
	eof := tio.Cc[syscall.VEOF]
	if eof == 0 {
		eof = 4 // ^D
	}
	// Without waiting: a program that reads nothing (stopped, say) has a
	// full terminal, and the staged shutdown must go on to its signals.
	if n, err := writeNow(c.stdinConn, []byte{'\n', eof}); err != nil || n < 2 {
		return fmt.Errorf("session: ending pty input: %d of 2 bytes written: %w", n, cmp.Or(err, errTerminalFull))
	}
	return nil
}

// errTerminalFull: the terminal's input holds all it can.
var errTerminalFull = errors.New("the terminal's input is full")

// termIoctl runs a terminal ioctl on f without switching f to blocking mode.
func termIoctl(f *os.File, req uintptr, arg unsafe.Pointer) error {
	sc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	if err := sc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, req, uintptr(arg))
	}); err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}
