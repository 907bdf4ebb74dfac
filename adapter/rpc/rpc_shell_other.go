//go:build !unix

package rpc

import (
	"os"
	"os/exec"
)

// Without process groups the command alone is signalled.
func setProcessGroup(cmd *exec.Cmd) {}

func killGroup(pid int, hard bool) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill() // best effort: the process may be gone
	}
}

func exitSignal(ps *os.ProcessState) string { return "" }
