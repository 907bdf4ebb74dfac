//go:build !linux

package session

import "syscall"

// There is no guardian here: no subreaper (FreeBSD's procctl
// PROC_REAP_ACQUIRE would do, but is not used yet), so Guarded leaves
// commands alone and their process group is all that is signalled.
const guardianSupported = false

func dropPdeathsig(*syscall.SysProcAttr) {}

func selfExe() (string, bool) { return "", false }
