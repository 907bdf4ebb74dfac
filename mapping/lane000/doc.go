// Package lane000 is the codec of control lane 000 (seed 000, the TUI
// control protocol): it decodes control.stdin.request,
// control.interrupt.request and control.capabilities.request lines
// (Decode), checks a decoded request against the worker's policy (Check),
// and builds the lines ccbridge answers with (AppendAck, AppendProblem,
// AppendCapabilities: control.stdin.ack, control.interrupt.ack,
// control.error, control.capabilities). The rules are in
// docs/control/lane000.md. It also builds the control.worker.* lines
// `ccbridge --ui control` writes beside the acks (Worker, in worker.go
// and worker_pty.go).
//
// Lanes 001 and 004 have packages of their own (mapping/lane001,
// mapping/lane004); which lane a line is for is mapping/lanes.Classify.
//
// The package is pure: no I/O, no goroutines, no clock (callers pass now).
// Every function is safe for concurrent use; none keeps a reference to its
// arguments. Decode copies what it keeps, so the caller may reuse the line.
package lane000
