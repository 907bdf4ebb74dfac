//go:build !unix

package session

import (
	"errors"
	"os"
	"syscall"
)

// errNoProcessGroups makes Start fail on systems without process groups; the
// package's guarantees (group signals, no surviving grandchildren) need them.
var errNoProcessGroups = errors.ErrUnsupported

func sysProcAttr() *syscall.SysProcAttr { return nil }

func signalGroup(int, syscall.Signal) error { return errors.ErrUnsupported }

func waitNoReap(int) error { return nil }

func exitStatus(ps *os.ProcessState) (int, syscall.Signal) { return ps.ExitCode(), 0 }

// GrowPipe does nothing: pipe sizes are fixed here.
func GrowPipe(*os.File, int) {}

// NoWaitWriter returns nil: only Linux writes without waiting to a file
// that blocks.
func NoWaitWriter(*os.File) func([]byte) (int, error) { return nil }
