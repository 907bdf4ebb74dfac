// Package e2e holds ccbridge's end-to-end tests and its performance
// harness; it has no code of its own. The tests build ccbridge once (in
// TestMain, with -race when the test binary has it) and run it in front of
// the real Claude Code CLI, which talks to the fake Messages API
// (fakemodel). See docs/testing.md and docs/performance.md.
package e2e
