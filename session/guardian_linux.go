//go:build linux

package session

import (
	"os"
	"syscall"
)

const guardianSupported = true

// dropPdeathsig clears the parent-death signal Start asks for: the
// guardian must outlive its parent long enough to sweep.
func dropPdeathsig(a *syscall.SysProcAttr) {
	if a != nil {
		a.Pdeathsig = 0
	}
}

// selfExe is the program a guardian runs: this process's own executable,
// as the kernel knows it, when /proc is there (the sweep reads it too).
func selfExe() (string, bool) {
	const p = "/proc/self/exe"
	_, err := os.Stat(p)
	return p, err == nil
}
