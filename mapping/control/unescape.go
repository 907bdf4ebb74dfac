package control

import (
	"unicode/utf16"
	"unicode/utf8"
)

// appendUnescaped appends the text of the body of a valid JSON string (the
// bytes between its quotes) to dst, decoding the escapes as gjson does: a
// lone or broken surrogate becomes U+FFFD.
func appendUnescaped(dst []byte, body string) []byte {
	for i := 0; i < len(body); {
		j := i
		for j < len(body) && body[j] != '\\' {
			j++
		}
		dst = append(dst, body[i:j]...)
		if j >= len(body) {
			break
		}
		// body[j] == '\\'; the input is valid JSON, so an escape follows.
		if j+1 >= len(body) {
			break
		}
		c := body[j+1]
		i = j + 2
		switch c {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(body, i)
			if !ok {
				return append(dst, body[j:]...) // not valid JSON: keep the rest as it is
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2 := rune(utf8.RuneError)
				if i+6 <= len(body) && body[i] == '\\' && body[i+1] == 'u' {
					if lo, ok := hex4(body, i+2); ok {
						if d := utf16.DecodeRune(r, lo); d != utf8.RuneError {
							i += 6
							r2 = d
						}
					}
				}
				r = r2
			}
			dst = utf8.AppendRune(dst, r)
		default: // '"', '\\', '/'
			dst = append(dst, c)
		}
	}
	return dst
}

func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
