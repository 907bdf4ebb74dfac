//go:build linux

package session

import (
	"os"
	"syscall"
	"unsafe"
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
