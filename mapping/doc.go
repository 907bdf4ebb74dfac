// Package mapping is the CLI side of ccbridge's protocol layer: it routes
// the lines the Claude Code CLI writes to stdout (stream-json) into
// normalized Events, and builds every line the host writes to the CLI's
// stdin. Each UI dialect lives in a sub-package (ipc, rpc, acp)
// and is built from Events and these builders.
//
// # Routing
//
// Route is two-tier. Tier 1 dispatches on the top-level "type", then on
// "subtype" (system, result) or "request.subtype" (control_request). Tier 2
// dispatches a stream_event on its inner event's "type" and, for
// content_block_delta, the delta's "type". Every type and subtype of the
// protocol reference (protocol README §c) has its own Kind; anything else is
// one of the Unknown kinds, never an error, with the line kept in
// Event.Line. Only the routing fields are read, with gjson; raw subtrees
// (tool inputs, tool results, file contents, patches) are exposed as
// gjson.Result whose Raw is the CLI's bytes, never decoded and re-encoded.
// See docs/protocol/ipc.md for the routing table.
//
// The caller validates each line once at the boundary (gjson.ValidBytes);
// Route assumes that but never panics on any input.
//
// # Stdin
//
// The Append* builders write the user envelope, control requests
// (initialize without systemPrompt, interrupt, set_permission_mode,
// set_model, stop_task), control responses (allow/deny for can_use_tool,
// generic success and error) and cancels. Request ids are passed in.
// AppendAutoReply answers the CLI requests no dialect handles, as the SDK
// does. CheckImage is the check every dialect applies to an image before
// it goes into a user message.
//
// # Session files
//
// SideEntry, UserText, PromptText and SessionSummary read the lines of the
// CLI's session files (session/clifiles finds the files and hands over
// their lines): SessionSummary is what every dialect's session list shows
// of a file, and its Conversation the one rule for which files a list
// shows.
//
// # Concurrency
//
// The package is pure: no I/O, no goroutines, no clock, no package state
// that changes. Every function is safe for concurrent use. An Event is
// immutable and owns a copy of its line, so it may cross goroutines.
package mapping
