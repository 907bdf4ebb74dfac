//go:build unix

package session

import (
	"os"
	"syscall"
)

// errNoProcessGroups is nil: process groups are available.
var errNoProcessGroups error

// sysProcAttr puts the child in a process group of its own, plus the
// platform's parent-death signal where there is one (pdeathsig_*.go).
func sysProcAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	setPdeathsig(a)
	return a
}

// signalGroup sends sig to every process in the group led by pid.
func signalGroup(pid int, sig syscall.Signal) error {
	return syscall.Kill(-pid, sig)
}

// exitStatus reports the exit code (128+signal when killed by a signal) and
// the signal, if any.
func exitStatus(ps *os.ProcessState) (int, syscall.Signal) {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), ws.Signal()
	}
	return ps.ExitCode(), 0
}
