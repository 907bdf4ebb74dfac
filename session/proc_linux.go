//go:build linux

package session

import (
	"errors"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// setPdeathsig makes the kernel SIGKILL the child when the thread that forked
// it ends (see Start for why that thread lives as long as ccbridge).
func setPdeathsig(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

const (
	pPID    = 1          // P_PID
	wNowait = 0x01000000 // WNOWAIT
)

// waitNoReap blocks until pid has exited, leaving it a zombie for cmd.Wait to
// reap (waitid with WNOWAIT, as os.Process does internally).
func waitNoReap(pid int) error {
	var siginfo [128]byte
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&siginfo[0])), syscall.WEXITED|wNowait, 0, 0)
		if errno != syscall.EINTR {
			if errno != 0 {
				return errno
			}
			return nil
		}
	}
}

// fSetPipeSize is F_SETPIPE_SZ.
const fSetPipeSize = 1031

// GrowPipe asks the kernel for a pipe buffer of size bytes behind f (one end
// of a pipe); size <= 0 does nothing. A larger buffer lets the CLI write
// ahead while ccbridge works, and lets one read take more of it. Failure
// (a smaller /proc/sys/fs/pipe-max-size, a user over
// /proc/sys/fs/pipe-user-pages-soft, f not a pipe) leaves the buffer as it
// was, which works.
func GrowPipe(f *os.File, size int) {
	if size <= 0 {
		return
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		syscall.Syscall(syscall.SYS_FCNTL, fd, fSetPipeSize, uintptr(size)) // Best effort.
	})
}

// NoWaitWriter returns a function that writes p to f without ever
// waiting (pwritev2 with RWF_NOWAIT): it returns how many bytes it wrote,
// which may be fewer than len(p) (as many as a pipe had room for), or an
// error and nothing written: ErrWouldBlock when f cannot take a byte now,
// errors.ErrUnsupported when f cannot be written to this way at all (a
// terminal, a regular file, a kernel before 4.14 or without it for
// pipes), so that the caller stops trying, or the error a write would
// have (EPIPE: the reader is gone). It leaves f's own flags alone: f
// stays a blocking file for every other write. The function allocates
// nothing and is for one caller at a time. NoWaitWriter returns nil when
// f has no descriptor.
func NoWaitWriter(f *os.File) func(p []byte) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	var (
		iov   unix.Iovec
		r     uintptr
		errno syscall.Errno
	)
	write := func(fd uintptr) bool {
		// An offset of -1 (both halves all ones): the file's own
		// position, as write(2) uses; a pipe has none.
		r, _, errno = syscall.Syscall6(unix.SYS_PWRITEV2, fd, uintptr(unsafe.Pointer(&iov)), 1,
			^uintptr(0), ^uintptr(0), unix.RWF_NOWAIT)
		return true
	}
	return func(p []byte) (int, error) {
		if len(p) == 0 {
			return 0, nil
		}
		iov.Base = &p[0]
		iov.SetLen(len(p))
		err := rc.Write(write)
		iov.Base = nil // p is the caller's again
		switch {
		case err != nil:
			return 0, err
		case errno == 0:
			return int(r), nil
		case errno == syscall.EAGAIN:
			return 0, ErrWouldBlock
		case errno == syscall.EOPNOTSUPP || errno == syscall.ENOSYS || errno == syscall.EINVAL:
			return 0, errors.ErrUnsupported
		}
		return 0, errno
	}
}
