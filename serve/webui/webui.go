// Package webui holds the browser page of `ccbridge serve` (docs/protocol/web.md):
// plain HTML, CSS and JavaScript modules with no build step, embedded in
// the binary. The server serves fs.Sub(Static, "static") at "/".
//
// The page talks to the web sessions over /api/web: server-sent events
// for the ipc lines (docs/protocol/ipc.md), POST for the inbound messages.
// It runs under a strict Content-Security-Policy (no inline script or
// style), and it builds the model's Markdown and every tool output as DOM
// nodes with textContent, never as HTML (static/md.js, tested by
// md_test.mjs through webui_test.go).
package webui

import "embed"

// Static is the page: index.html, app.css and the JavaScript modules,
// under "static/".
//
//go:embed static
var Static embed.FS
