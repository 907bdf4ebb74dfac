package jscan

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// The helpers below read raw JSON text (a value or a line as the caller
// holds it, already validated) without decoding it into Go values: the
// control lanes' decoders (mapping/lane000, lane001, lane004) are built
// on them.

// Text returns the text of raw, the raw text of a JSON value, when it is
// a string, and whether it is one. Without escapes the text is a
// substring of raw (no copy); with them it is decoded as AppendUnescaped
// decodes.
func Text(raw string) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	if strings.IndexByte(body, '\\') < 0 {
		return body, true
	}
	return string(AppendUnescaped(nil, body)), true
}

// AppendUnescaped appends the text of the body of a valid JSON string (the
// bytes between its quotes) to dst, decoding the escapes as gjson does: a
// lone or broken surrogate becomes U+FFFD.
func AppendUnescaped(dst []byte, body string) []byte {
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

// LoneSurrogate reports whether the body of a JSON string has a \u escape
// of a UTF-16 surrogate that is not half of a pair (decoded as U+FFFD, so
// the text could not be written back as it was sent).
func LoneSurrogate(body string) bool {
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' {
			continue
		}
		if i+1 >= len(body) {
			return false
		}
		if body[i+1] != 'u' {
			i++
			continue
		}
		r, ok := hex4(body, i+2)
		if !ok {
			return false
		}
		i += 5
		switch {
		case r >= 0xdc00 && r <= 0xdfff:
			return true
		case r >= 0xd800 && r <= 0xdbff:
			if i+2 >= len(body) || body[i+1] != '\\' || body[i+2] != 'u' {
				return true
			}
			lo, ok := hex4(body, i+3)
			if !ok || lo < 0xdc00 || lo > 0xdfff {
				return true
			}
			i += 6
		}
	}
	return false
}

// TrimSpace drops JSON white space (space, tab, CR, LF; not Unicode's)
// around b.
func TrimSpace(b []byte) []byte {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// Pick reads the members of the object obj named in names into raw
// (raw[i] the raw text of names[i]'s first occurrence, left as it is when
// absent) and returns the first name given twice, or "". It stops at
// that name.
func Pick(obj string, names []string, raw []string) (dup string) {
	Walk(obj, func(key, v string) bool {
		for i, n := range names {
			if key == n {
				if raw[i] != "" {
					dup = n
					return false
				}
				raw[i] = v
			}
		}
		return true
	})
	return dup
}

// IsNumber reports whether raw, the raw text of a valid JSON value, is a
// number.
func IsNumber(raw string) bool {
	return raw != "" && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9')
}
