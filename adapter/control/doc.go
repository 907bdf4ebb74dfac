// Package control is the control plane the control lanes share, beneath
// the session core and beside every dialect: the idempotency store (in
// memory, or durable in a bbolt file under --state-dir), lane 004's
// receipts, per-worker sequence numbers and event log with replay, the
// audit trail, content_ref reading, the unix socket (--control), and the
// receivers of lanes 000, 001 and 004, which decode with the pure codecs
// of mapping/lane000, lane001 and lane004. A Plane bundles them for one
// session; Config and Flags are the lanes' settings, with their defaults
// in one place.
//
// A lane drives a session through a Target, whose methods run on the
// session's goroutine (the Submit the dialect hands its Hook); the
// receivers themselves are safe for concurrent use, so that any number of
// connections share one session. docs/control/ has each lane's rules.
package control
