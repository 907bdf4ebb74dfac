//go:build linux

package rpc

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// shell.exec under a guardian: a process the command started that left
// its process group and session (setsid) is gone when the command has
// returned; without the guardian, the group kill misses it.
func TestRunShellGuardianSweepsSetsid(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := `setsid sh -c 'echo $$ > escapee.pid; exec sleep 30' </dev/null >/dev/null 2>&1 &
while [ ! -s escapee.pid ]; do sleep 0.01; done; echo started`
	res, _, err := runShell(context.Background(), []string{"/bin/sh", "-c", cmd}, dir, 10*time.Second, exe, nil)
	if err != nil || res.ExitCode != 0 || res.Stdout != "started\n" {
		t.Fatalf("runShell: %+v %v", res, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "escapee.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if !running(pid) {
		return
	}
	t.Errorf("the setsid process %d outlived the command", pid)
}

// running reports whether pid exists and is not a zombie.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}
