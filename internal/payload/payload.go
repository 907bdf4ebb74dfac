// Package payload keeps a user's payload out of the logs: a warning says
// what went wrong at every level and shows the payload (a line, a prompt,
// an answer, a file's contents) only at debug level, as the README
// promises. Safe for concurrent use.
package payload

import (
	"context"
	"log/slog"
	"strings"
)

// previewMax is how many bytes of a payload a log message shows.
const previewMax = 80

// Preview is a short, printable prefix of a payload (a line from either
// side) for a log message: at most previewMax bytes, invalid UTF-8 (a
// character cut in two included) shown as "?". Only the prefix is copied,
// so it is cheap on a long line.
func Preview[T string | []byte](line T) string {
	if len(line) > previewMax {
		line = line[:previewMax]
	}
	return strings.ToValidUTF8(string(line), "?")
}

// With is args plus the pair key, value when log is at debug level,
// and args alone otherwise. Whatever may hold a user's payload (a line's
// preview, a command, an answer's text: a prompt, a secret, a file's
// contents) reaches the log through it, so that a warning says what went
// wrong at every level and shows the payload only at debug level, as the
// README promises.
func With(log *slog.Logger, key string, value any, args ...any) []any {
	if !log.Enabled(context.Background(), slog.LevelDebug) {
		return args
	}
	return append(args, key, value)
}
