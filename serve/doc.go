// Package serve is `ccbridge serve` (docs/protocol/worker.md,
// docs/protocol/web.md): an HTTP server, standard library only, that
// hosts several sessions in one process, each its own session core with
// its own CLI child: seed 004's lane-004 workers (POST .../requests, GET
// .../stream as server-sent events with replay) and the web UI embedded
// in the binary (package webui), whose sessions speak the ipc dialect
// over SSE and POST. It owns its flags (Main parses them); the flags it
// shares with ccbridge come from internal/cliflags.
package serve
