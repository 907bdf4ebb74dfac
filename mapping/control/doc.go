// Package control is the codec of control lane 000 (seed 000, the TUI
// control protocol): it decodes control.stdin.request,
// control.interrupt.request and control.capabilities.request lines,
// checks a decoded request against the worker's policy, and builds the
// lines ccbridge answers with (control.stdin.ack, control.interrupt.ack,
// control.error, control.capabilities). The rules are in
// docs/control/lane000.md. It also holds the codec of lane 001 (seed 001,
// interventions: REQUEST, ACK, RESULT on loop:control; STATE, ABORT,
// DONE on loop:current; docs/control/lane001.md), which no lane serves
// yet, and the control.worker.* lines of --ui control (worker.go).
//
// The package is pure: no I/O, no goroutines, no clock (callers pass now).
// Every function is safe for concurrent use; none keeps a reference to its
// arguments. Decode copies what it keeps, so the caller may reuse the line.
package control
