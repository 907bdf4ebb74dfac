// Package lane004 is the codec of control lane 004 (seed 004, the worker
// lane): request lines in,
//
//	{"request":{"request_id":…,"method":…,"params":{…}?,"request_version":"v1"?,"sent_at":…?,"source":…?}}
//
// (Decode: the envelope, the allowlist of Method* constants, each method's
// params), and worker.response, worker.error, worker.event and
// worker.cursor_stale lines out (AppendResponse, AppendError, AppendEvent,
// AppendCursorStale, AppendProblem; the Code* constants). Methods are
// Codex app-server's thread/turn methods plus two ccbridge extensions;
// params take Codex's camelCase and the seed's snake_case spellings of the
// same member. It also gathers a session file's turns for thread/read
// (Turns) and adds an AskUserQuestion's answers to its input
// (WithAnswers). The rules are in docs/protocol/worker.md; adapter/control
// serves the lane.
//
// The package is pure: no I/O, no goroutines, no clock (callers pass the
// time, and the session file's lines). Every function is safe for
// concurrent use; none keeps a reference to its arguments. Decode copies
// what it keeps, so the caller may reuse the line.
package lane004
