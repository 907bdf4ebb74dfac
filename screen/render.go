package screen

import (
	"unicode/utf8"

	uv "github.com/charmbracelet/ultraviolet"
)

// appendCell appends the text of one cell.
//
// A wide character occupies its first cell; the cells it covers are zero
// cells (width 0, no content) and contribute nothing. A cell of width 0
// with content is a grapheme cluster that occupies no column (a combining
// mark or variation selector after an escape sequence, a C1 control that
// arrived UTF-8 encoded): the cursor did not move past it, the next
// character overwrites it, and it is left out too. Control characters and
// invalid UTF-8 inside a cell, which the library should never produce, are
// replaced.
func appendCell(dst []byte, c *uv.Cell) []byte {
	if c == nil {
		return append(dst, ' ')
	}
	if c.Width <= 0 {
		return dst
	}
	s := c.Content
	if len(s) == 1 && s[0] >= 0x20 && s[0] < 0x7f {
		return append(dst, s[0])
	}
	if s == "" {
		for range c.Width {
			dst = append(dst, ' ')
		}
		return dst
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			dst = append(dst, replacement...)
		case r < 0x20 || (r >= 0x7f && r < 0xa0):
			dst = append(dst, replacement...)
		default:
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return dst
}

// trimRight drops trailing spaces.
func trimRight(b []byte) []byte {
	for len(b) > 0 && b[len(b)-1] == ' ' {
		b = b[:len(b)-1]
	}
	return b
}
