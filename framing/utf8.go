package framing

import (
	"bytes"
	"unicode/utf8"
)

// replacement is U+FFFD, what a byte that is not UTF-8 becomes.
var replacement = []byte("\uFFFD")

// ValidUTF8 returns p when it is valid UTF-8 (the common case: one scan,
// no copy), else a copy with each run of invalid bytes replaced by U+FFFD.
// Whole JSON lines stay JSON: a byte that is not UTF-8 can only sit inside
// a string, and the ASCII bytes around it are kept.
func ValidUTF8(p []byte) []byte {
	if utf8.Valid(p) {
		return p
	}
	return bytes.ToValidUTF8(p, replacement)
}
