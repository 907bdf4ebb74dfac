// Package adapter is ccbridge's session core, written once for every UI
// dialect: the event loop, the child supervisor, the UI's writer, the
// clock and the dialect registry. It knows no UI protocol; each dialect
// is a package below it (adapter/ipc, adapter/rpc, adapter/acp,
// adapter/worker, adapter/stream) that registers itself from its own
// init, and main chooses the dialects a build contains by importing them.
//
// A session runs on a Loop: its goroutine (Run) owns every piece of
// state. The UI's reader and the children's readers only hand it lines
// over channels, background work (Loop.Go) hands back a function to run
// on it, and other goroutines (a control lane's connection) hand it work
// with Submit; so an interrupt, a cancel or an answer never waits behind
// ordinary work. A dialect is a Handler the loop calls, one call at a
// time; optional behaviour (RawHandler, for a pty child's bytes) is
// found by type assertion. Its CLI children are kept by a Supervisor:
// generation-tagged Procs, one live at a time, respawned with --resume.
// What the loop writes to a child never waits for it: what the child's
// pipe does not take is queued for a goroutine of the child's, and while
// too much waits the loop holds the UI's ordinary lines back
// (childinput.go).
//
// What every runner shares is a Host: the UI's output, written by a
// goroutine of its own with a bound (the CLI waits for a UI that reads
// slowly; signals and shutdown never do), the rule that gives output up
// when a UI reads none of it during a shutdown, Submit, the signals' rule
// (a second SIGINT within InterruptWindow shuts down) and the Clock. The
// Loop runs on one; drop-in's byte relay (adapter/stream), which does not
// hand every line to a loop, runs on one too.
//
// Adding a dialect: a package under adapter/ with a type that implements
// Dialect (usually by embedding Settings, which gives Configure), whose
// Run builds a Loop and a Supervisor and runs the loop with its Handler,
// and one line in its init:
//
//	func init() { adapter.Register("ipc", func() adapter.Dialect { return &IPC{} }) }
//
// plus a blank import in main's dialects.go. adapter/ipc is the shortest
// real one; docs/design.md walks through it.
package adapter
