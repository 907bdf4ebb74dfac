package adapter

import "strings"

// previewMax is how many bytes of a payload a log message shows.
const previewMax = 80

// preview is a short, printable prefix of a payload (a line from either
// side) for a log message: at most previewMax bytes, invalid UTF-8 (a
// character cut in two included) shown as "?". Only the prefix is copied,
// so it is cheap on a long line.
func preview[T string | []byte](line T) string {
	if len(line) > previewMax {
		line = line[:previewMax]
	}
	return strings.ToValidUTF8(string(line), "?")
}
