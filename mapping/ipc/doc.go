// Package ipc is the "ipc" UI dialect: typed NDJSON messages for a web UI,
// each outbound one carrying "ipc_version": 2. The message set and every
// mapping rule are documented in docs/protocol/ipc.md.
//
// A Translator holds one UI session's small state (the session id, the last
// system_metadata, per-message seq counters, the open can_use_tool requests
// and the control requests it built, the previous cost total). FromCLI
// turns a routed mapping.Event into zero or more ipc lines; FromUI turns an
// ipc line into a Command (the stdin line to write, or a respawn request)
// or an *Error whose AppendIPC is the error message for the UI.
//
// What the adapter keeps itself: deadlines on the control requests FromUI
// builds (Command.RequestID; Outstanding tells whether the CLI answered),
// the dedupe of retried UI requests, turn state, and the child process.
// When the child dies or is replaced it calls CancelPending, then
// ResetProcess.
//
// The package does no I/O and starts no goroutines. A Translator is not
// safe for concurrent use: one goroutine, the session's event loop, owns it.
package ipc
