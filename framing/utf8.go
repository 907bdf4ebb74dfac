package framing

import (
	"bytes"
	"io"
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

// UTF8Writer passes a line written in pieces to W with every byte that is
// not UTF-8 replaced by U+FFFD, as ValidUTF8 does for a whole line: a
// sequence cut between two pieces is held back until the next piece
// completes it. End writes what is still held (as U+FFFD, since the line
// ended inside a sequence) and readies the writer for the next line.
type UTF8Writer struct {
	W    io.Writer
	held [utf8.UTFMax]byte
	n    int
	buf  []byte // reused for pieces that need holding or mending
}

// Write writes p's complete sequences and holds an incomplete one at its
// end. It reports len(p) written on success.
func (u *UTF8Writer) Write(p []byte) (int, error) {
	in := p
	if u.n > 0 {
		u.buf = append(append(u.buf[:0], u.held[:u.n]...), p...)
		in, u.n = u.buf, 0
	}
	// An incomplete sequence can only be the last 1 to 3 bytes.
	cut := len(in)
	for i := len(in) - 1; i >= 0 && i >= len(in)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(in[i]) {
			if !utf8.FullRune(in[i:]) {
				cut = i
			}
			break
		}
	}
	u.n = copy(u.held[:], in[cut:])
	if _, err := u.W.Write(ValidUTF8(in[:cut])); err != nil {
		return 0, err
	}
	return len(p), nil
}

// End writes what is held, mended, and forgets it.
func (u *UTF8Writer) End() error {
	if u.n == 0 {
		return nil
	}
	held := ValidUTF8(u.held[:u.n])
	u.n = 0
	_, err := u.W.Write(held)
	return err
}
