//go:build !linux

package e2e

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// nanosleep is time.Sleep here.
func nanosleep(d time.Duration) { time.Sleep(d) }

// ctlSetFileSizeLimit needs prlimit(2), which only Linux has.
func ctlSetFileSizeLimit(pid int, n uint64) error {
	return fmt.Errorf("prlimit %d: %w", pid, errors.ErrUnsupported)
}

// withPdeathsig does nothing: only Linux has a parent-death signal.
func withPdeathsig(a *syscall.SysProcAttr) *syscall.SysProcAttr { return a }
