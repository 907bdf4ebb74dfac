//go:build linux

package guardian

import (
	"bytes"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

const (
	wNowait             = 0x01000000 // WNOWAIT
	prSetDumpable       = 4          // PR_SET_DUMPABLE
	prSetChildSubreaper = 36         // PR_SET_CHILD_SUBREAPER

	sysPidfdSendSignal = 424 // pidfd_send_signal, the same number on every architecture
	sysPidfdOpen       = 434 // pidfd_open

	// sweepLimit bounds the sweep: a process stuck in the kernel (an
	// uninterruptible sleep) may take longer to die of its SIGKILL; the
	// guardian then exits and leaves it to init.
	sweepLimit = 5 * time.Second
)

// guardedSignals are the signals the guardian survives. A signal to the
// process group reaches the command as well, which decides.
var guardedSignals = []os.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM,
	syscall.SIGPIPE, syscall.SIGUSR1, syscall.SIGUSR2}

// Run is the guardian process (session.Guard); args are what follows
// [Arg]: the command's path, "--", and its argv. It returns only when it
// could not start the command (2: bad arguments; 127: the command did
// not start, which it reported to the parent); otherwise it ends the
// process itself, the way the command ended.
func Run(args []string) int {
	if len(args) < 3 || args[1] != "--" || !isOpen(LifelineFD) || !isOpen(ReportFD) {
		os.Stderr.WriteString("ccbridge guardian: started without its arguments or descriptors\n")
		return 2
	}
	path, argv := args[0], args[2:]
	report := os.NewFile(ReportFD, "report")
	lifeline := os.NewFile(LifelineFD, "lifeline")
	// The command must not inherit them.
	syscall.CloseOnExec(LifelineFD)
	syscall.CloseOnExec(ReportFD)

	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		report.WriteString(strconv.Itoa(int(errno)) + " becoming a subreaper: " + errno.Error())
		return 127
	}
	sigs := make(chan os.Signal, 8)
	for _, s := range guardedSignals {
		if !signal.Ignored(s) {
			signal.Notify(sigs, s)
		}
	}
	go func() {
		for range sigs { // The command got its own copy from the group.
		}
	}()

	// The command dies with the guardian, even of a SIGKILL (then only
	// what it started may stay). The forking thread must live as long as
	// the guardian: it is locked only for the fork.
	runtime.LockOSThread()
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	runtime.UnlockOSThread()
	if err != nil {
		errno, _ := err.(syscall.Errno)
		report.WriteString(strconv.Itoa(int(errno)) + " " + err.Error())
		return 127
	}
	report.WriteString(OK) // Best effort: the parent may be gone already.
	report.Close()

	// One goroutine reaps every child: the command, and whatever below it
	// loses its parent. ECHILD means no child is left, and so nothing
	// below the guardian either: an orphan becomes its child at once.
	status := make(chan syscall.WaitStatus, 1)
	noChildren := make(chan struct{})
	go func() {
		defer close(noChildren)
		for {
			var ws syscall.WaitStatus
			wpid, err := syscall.Wait4(-1, &ws, 0, nil)
			switch {
			case err == syscall.EINTR:
			case err != nil:
				return
			case wpid == pid:
				status <- ws
			}
		}
	}()
	parentGone := make(chan struct{})
	go func() {
		var buf [64]byte
		for {
			if _, err := lifeline.Read(buf[:]); err != nil {
				close(parentGone)
				return
			}
		}
	}()

	var ws syscall.WaitStatus
	reaped := false
	select {
	case ws = <-status:
		reaped = true
	case <-parentGone:
	}
	sweep(noChildren)
	if !reaped {
		select {
		case ws = <-status:
		default:
			// The command has not died of its SIGKILL within sweepLimit.
			raise(syscall.SIGKILL)
		}
	}
	if ws.Signaled() {
		raise(ws.Signal())
	}
	// No deferred work and nothing to flush: leave at once (os.Exit in a
	// race-enabled build would first sleep for the race detector).
	syscall.Exit(ws.ExitStatus())
	return 0
}

// isOpen reports whether fd is an open descriptor.
func isOpen(fd int) bool {
	_, _, errno := syscall.RawSyscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFD, 0)
	return errno == 0
}

// sweep SIGKILLs every process below the guardian, again and again, until
// the reaper has seen the last child go (noChildren) or sweepLimit has
// passed. A process that forks while it is being killed leaves a child
// that the next round finds.
func sweep(noChildren <-chan struct{}) {
	if !hasChildren() {
		<-noChildren // at once: the reaper has seen ECHILD, or is about to
		return       // nothing below the guardian: no need to read /proc
	}
	self := os.Getpid()
	deadline := time.Now().Add(sweepLimit)
	pause := time.Millisecond
	for {
		if live, killed := killDescendants(self); live > 0 && killed == 0 {
			// Only processes it may not signal (a setuid program, say).
			os.Stderr.WriteString("ccbridge guardian: " + strconv.Itoa(live) + " processes may not be killed; leaving them\n")
			return
		}
		select {
		case <-noChildren:
			return
		case <-time.After(pause):
		}
		if time.Now().After(deadline) {
			os.Stderr.WriteString("ccbridge guardian: processes still running " + sweepLimit.String() + " after SIGKILL; leaving them\n")
			return
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// hasChildren reports whether the guardian has a child, running or not
// yet reaped (waitid with WNOHANG and WNOWAIT: nothing is reaped).
func hasChildren() bool {
	const pAll = 0
	var siginfo [128]byte
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pAll, 0, uintptr(unsafe.Pointer(&siginfo[0])),
			syscall.WEXITED|syscall.WNOHANG|wNowait, 0, 0)
		if errno != syscall.EINTR {
			return errno != syscall.ECHILD
		}
	}
}

// procInfo is what the sweep reads of /proc/PID/stat.
type procInfo struct {
	ppid  int
	start uint64 // start time since boot, in clock ticks: with the pid, an identity
	live  bool   // not a zombie
}

// killDescendants SIGKILLs every live process whose chain of parents
// reaches self, and returns how many it found and how many it could
// signal.
func killDescendants(self int) (live, killed int) {
	procs := scanProcs()
	below := map[int]bool{self: true}
	var isBelow func(pid, depth int) bool
	isBelow = func(pid, depth int) bool {
		if b, ok := below[pid]; ok {
			return b
		}
		p, ok := procs[pid]
		b := ok && depth < 4096 && p.ppid != 0 && isBelow(p.ppid, depth+1)
		below[pid] = b
		return b
	}
	for pid, p := range procs {
		if pid != self && p.live && isBelow(pid, 0) {
			live++
			if killProcess(pid, p.start) != syscall.EPERM {
				killed++
			}
		}
	}
	return live, killed
}

// scanProcs reads the stat of every process.
func scanProcs() map[int]procInfo {
	procs := map[int]procInfo{}
	d, err := os.Open("/proc")
	if err != nil {
		return procs
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if p, ok := readStat(pid); ok {
			procs[pid] = p
		}
	}
	return procs
}

// readStat parses /proc/PID/stat: "pid (comm) state ppid ..." where comm
// may hold spaces and parentheses, so the fields start after the last ')'.
func readStat(pid int) (procInfo, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procInfo{}, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 {
		return procInfo{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	start, err2 := strconv.ParseUint(string(f[19]), 10, 64) // field 22, starttime
	if err1 != nil || err2 != nil {
		return procInfo{}, false
	}
	state := f[0][0]
	return procInfo{ppid: ppid, start: start, live: state != 'Z' && state != 'X'}, true
}

// killProcess SIGKILLs pid if it is still the process that started at
// start, and returns the error of the signal (ESRCH when it is gone).
// Through a pidfd (Linux 5.3 and later) the check and the signal are
// about the same process even if pid is reused meanwhile; without one, a
// tiny window is left.
func killProcess(pid int, start uint64) error {
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno != 0 {
		if p, ok := readStat(pid); ok && p.start == start {
			return syscall.Kill(pid, syscall.SIGKILL)
		}
		return syscall.ESRCH
	}
	defer syscall.Close(int(fd))
	if p, ok := readStat(pid); !ok || p.start != start {
		return syscall.ESRCH
	}
	if _, _, errno := syscall.Syscall6(sysPidfdSendSignal, fd, uintptr(syscall.SIGKILL), 0, 0, 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// raise ends the guardian with sig, as the command ended. The default
// action is restored in the kernel first (the Go runtime's own handler
// would print a traceback and exit with status 2 for some signals), and
// no core is dumped: the command has dumped its own, if any.
func raise(sig syscall.Signal) {
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0)
	var act [8]uint64 // a struct sigaction of zeros: SIG_DFL, no flags, empty mask
	syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
	syscall.Kill(os.Getpid(), sig)
	// A signal whose default is not to terminate cannot have killed the
	// command; exit as a shell reports it.
	time.Sleep(100 * time.Millisecond)
	syscall.Exit(128 + int(sig))
}
