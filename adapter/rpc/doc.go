// Package rpc is the rpc dialect (--ui rpc, docs/protocol/rpc.md): seed
// 002's JSON-RPC 2.0 over NDJSON (initialize, run.*, agent.event,
// ui.confirm/prompt/pick, session.*, shell.exec) on one CLI child. It
// runs on the session core (package adapter) and translates with the
// pure codec of mapping/rpc; shell commands and session files are read
// off the loop (Loop.Go), so an answer or a cancel never waits behind
// them.
package rpc
