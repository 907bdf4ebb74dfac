// Package lane001 is the codec of control lane 001 (seed 001, the
// intervention lane): it decodes the REQUEST lines a controller sends on
// "loop:control" (Decode: pause, resume, cancel, escalate) and builds the
// lines ccbridge answers with there (AppendAck, AppendResult,
// AppendProblem: ACK, RESULT, ERROR) and the events it writes on
// "loop:current" (AppendState, AppendAbort, AppendDone: STATE, ABORT,
// DONE, each with its Stack). The rules are in docs/control/lane001.md;
// adapter/control serves the lane.
//
// The package is pure: no I/O, no goroutines, no clock (callers pass now).
// Every function is safe for concurrent use; none keeps a reference to its
// arguments. Decode copies what it keeps, so the caller may reuse the line.
package lane001
