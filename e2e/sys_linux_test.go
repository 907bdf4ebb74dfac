package e2e

// What the tests need of Linux's system calls; sys_other_test.go stands
// in elsewhere, so that the package builds (and go vet runs) for darwin.

import (
	"fmt"
	"syscall"
	"time"
	"unsafe"
)

// nanosleep sleeps d with nanosleep(2), not time.Sleep, whose wake-ups
// come in steps of about a millisecond.
func nanosleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	syscall.Nanosleep(&ts, nil)
}

// ctlRlimit is struct rlimit64 of prlimit(2).
type ctlRlimit struct{ Cur, Max uint64 }

// ctlSetFileSizeLimit sets the soft RLIMIT_FSIZE of process pid to n
// bytes (prlimit(2)), keeping the hard limit.
func ctlSetFileSizeLimit(pid int, n uint64) error {
	var old ctlRlimit
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_FSIZE, 0, uintptr(unsafe.Pointer(&old)), 0, 0); e != 0 {
		return fmt.Errorf("prlimit %d: %w", pid, e)
	}
	lim := ctlRlimit{Cur: min(n, old.Max), Max: old.Max}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_FSIZE, uintptr(unsafe.Pointer(&lim)), 0, 0, 0); e != 0 {
		return fmt.Errorf("prlimit %d: %w", pid, e)
	}
	return nil
}

// withPdeathsig has the kernel kill the process when the test dies.
func withPdeathsig(a *syscall.SysProcAttr) *syscall.SysProcAttr {
	a.Pdeathsig = syscall.SIGKILL
	return a
}
