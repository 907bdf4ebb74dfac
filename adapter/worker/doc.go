// Package worker is the control dialect (--ui control,
// docs/protocol/control.md): a worker session that a TUI, a team daemon
// or a phone's relay drives through the control lanes on stdio (seed
// 000's stdin and interrupt requests, seed 001's pause, resume, cancel
// and escalate, seed 004's thread and turn requests with receipts and
// replay), with the worker's progress as control.worker.* lines. With
// --pty the worker is an interactive program under a pseudo-terminal
// (the CLI's TUI, or any command) read through package screen. ccbridge
// serve hosts these workers (ControlUI.Hook hands it lane 004).
package worker
