//go:build unix && !linux

package session

import (
	"os"
	"syscall"
)

// setPdeathsig does nothing: only Linux has a parent-death signal.
func setPdeathsig(*syscall.SysProcAttr) {}

// waitNoReap does nothing here; the wait goroutine then signals the group
// just after reaping the child.
func waitNoReap(int) error { return nil }

// GrowPipe does nothing: pipe sizes are fixed here.
func GrowPipe(*os.File, int) {}

// NoWaitWriter returns nil: only Linux writes without waiting to a file
// that blocks.
func NoWaitWriter(*os.File) func([]byte) (int, error) { return nil }
