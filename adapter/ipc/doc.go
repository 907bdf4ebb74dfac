// Package ipc is the ipc dialect (--ui ipc, docs/protocol/ipc.md): typed
// NDJSON messages with ipc_version 2 for a web UI, which never sees
// stream-json. It runs on the session core (package adapter): IPC is the
// Dialect, its loop's Handler translates with the pure codec of
// mapping/ipc, and one Supervisor keeps the CLI child. ccbridge serve's
// web sessions are IPC sessions too.
package ipc
