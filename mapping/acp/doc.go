// Package acp is the Agent Client Protocol (v1) side of ccbridge's acp
// dialect: it turns routed CLI lines (mapping.Event) into session/update
// notifications, builds the agent's answers and requests (initialize,
// session setup results, session/request_permission, elicitation/create),
// maps the client's answers back to the CLI's stdin, and reads the CLI's
// session files for session/load and session/list. See
// docs/protocol/acp.md for the wire contract.
//
// # What it owns
//
//   - Translator: one ACP session's view of the CLI's output. It tracks the
//     tool calls of the session (kind, title, locations, raw input, diffs),
//     which API messages were streamed (so the complete assistant frames
//     that follow do not repeat them), the context usage, and the session's
//     mode and model with the options the client may choose from.
//   - Pending: one can_use_tool request forwarded to the client, with the
//     mapping of the client's chosen option (or elicitation answer) back to
//     an allow or deny line for the CLI.
//   - TurnOutcome: the stop reason (or JSON-RPC error) a result line ends a
//     prompt turn with.
//   - PromptBlocks, MCPConfig, the initialize result and the session-file
//     helpers (SessionTitle, Translator.Replay); finding, listing and
//     summarizing the files is session/clifiles' job.
//
// Lines are read with gjson and written with append-style builders; raw
// subtrees (tool inputs, tool results, permission suggestions) are copied
// as bytes. Nothing here decodes a hot-path line with encoding/json.
//
// # Concurrency
//
// The package is pure: no I/O, no goroutines, no clock. A Translator and a
// Pending are not safe for concurrent use; one goroutine (the adapter's
// event loop) owns them. Every function without a receiver is safe for
// concurrent use.
package acp
