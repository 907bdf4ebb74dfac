// Package rpc is the rpc dialect of ccbridge (docs/protocol/rpc.md):
// JSON-RPC 2.0 over NDJSON, the UI protocol of seed 002 (initialize,
// run.start, agent.event, run.status, run.cancel, ui.confirm/pick/prompt
// requests and the rest), spoken on top of one Claude Code CLI child.
//
// The Translator holds one connection's state: runs and their per-run
// event sequence, the CLI turns in flight (a FIFO: each prompt gets
// exactly one result), the runtime → UI requests waiting for answers,
// and the model calls being measured for run.context and run.diagnostics.
// FromCLI turns routed CLI events (mapping.Route) into agent.event,
// run.status, run.context, run.diagnostics and ui.*.request lines;
// FromUI turns the UI's responses into control_response lines for the
// CLI. The Parse* functions check each method's params and return the
// seed's error codes; the Append*Result functions build the responses.
// History reads the lines of a CLI session file for session.history
// (finding, listing and opening the files is session/clifiles' job, and
// what a list shows of a file is mapping.SessionSummary).
//
// The package is pure: no I/O, no goroutines, no clock (callers pass the
// time in Unix milliseconds). Raw JSON subtrees (tool inputs, structured
// tool results, usage) are copied as bytes, never decoded and re-encoded;
// routing fields are read with gjson.
package rpc
