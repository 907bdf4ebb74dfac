// Package session owns the Claude Code CLI child process: finding the
// executable ([FindCLI]), building and validating its command line
// ([BuildArgs]), spawning it ([Start]) and taking it down again
// ([Child.Shutdown], [Child.Kill]). It knows nothing about the stream-json
// protocol; it moves bytes.
//
// # Process model
//
// The child runs in its own process group (Setpgid), so a ^C typed at the
// terminal does not reach it and every escalation signal reaches the whole
// group, grandchildren included. On Linux it also gets Pdeathsig: SIGKILL, so
// it dies if ccbridge dies without cleaning up.
//
// The child's stdin and stdout are [os.Pipe] pairs owned by the [Child], so
// os/exec starts no copying goroutines. Stderr is drained continuously by one
// goroutine into a bounded head-and-tail buffer ([Child.StderrTail],
// [Exit.Stderr]) and logged line by line at debug level; a chatty child can
// therefore never block on a full stderr pipe.
//
// Exactly one goroutine per child calls Wait. When the child has exited it
// sends SIGKILL to the child's process group, so no grandchild survives the
// CLI and stdout reaches EOF. If a process outside the group still holds
// stdout or stderr open [Config.WaitDelay] later, the read ends are closed.
//
// A process that leaves the group (setsid, as the CLI's Bash tool does)
// escapes both the group kill and Pdeathsig. With [Config.Guardian]
// (Linux) the CLI runs under a guardian, ccbridge's own executable re-run
// as the CLI's subreaper ([Guard], [RunGuardian]): when the CLI exits, or
// ccbridge's end of a pipe closes (Kill, or ccbridge gone, kill -9
// included), it SIGKILLs everything below it, escapees included.
//
// With [Config.PTY] (Linux only) stdin and stdout are a pseudo-terminal
// instead, raw for input and translating "\n" to "\r\n" on output as a
// terminal emulator's does, the child leads a session of its own, and the
// terminal's EIO at the end is reported as io.EOF; stderr stays a pipe.
//
// # Respawning
//
// A Child is one process. To respawn after a crash, call [Start] again with
// arguments from BuildArgs(base, opts.ResumeFrom(sessionID)).
//
// # Concurrency
//
// All [Child] methods are safe to call from any goroutine, and
// [Child.CloseStdin], [Child.Shutdown] and [Child.Kill] are safe to call more
// than once and concurrently. The reader returned by [Child.Stdout] must be
// owned by one goroutine at a time; writes to [Child.Stdin] should be
// serialised by the caller (framing.Writer does that).
package session
