// Package webui is the page ccbridge serve shows at / (docs/protocol/web.md):
// HTML, CSS and JavaScript modules, embedded in the binary and served as
// they are. There is no build step and nothing is fetched from elsewhere.
package webui

import "embed"

// Static is the page's files, under "static".
//
//go:embed static
var Static embed.FS
