// Package acp is the acp dialect (--ui acp, docs/protocol/acp.md): ccbridge
// as an Agent Client Protocol v1 agent, for the editors that speak it.
// One connection holds any number of ACP sessions, each with its own
// Supervisor and CLI child, all on one session-core Loop; the protocol is
// the pure codec of mapping/acp. A control lane addresses each session by
// its id (control.Sessions).
package acp
