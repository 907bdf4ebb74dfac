//go:build unix

package rpc

import (
	"os"
	"os/exec"
	"syscall"

	"github.com/ccbridge/ccbridge/session"
)

// setProcessGroup puts the command in a process group of its own, so that
// it and everything it starts can be signalled together.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup sends SIGTERM (or SIGKILL when hard) to the process group pid
// leads. A group that is gone already is not an error.
func killGroup(pid int, hard bool) {
	sig := syscall.SIGTERM
	if hard {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-pid, sig) // best effort: ESRCH means the group is gone
}

// exitSignal names the signal that ended the command, "" if none.
func exitSignal(ps *os.ProcessState) string {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return ""
	}
	if n := session.SignalName(ws.Signal()); n != "" {
		return n
	}
	return ws.Signal().String()
}
