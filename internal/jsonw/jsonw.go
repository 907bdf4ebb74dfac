// Package jsonw appends JSON tokens to byte slices. It exists so that the
// mapping packages build their output lines without encoding/json and without
// depending on gjson's process-wide HTML-escaping switch: the bytes written
// here are the same whatever main sets.
//
// Every function appends to dst and returns the extended slice; none keeps a
// reference to its arguments. Safe for concurrent use. Obj (NewObj) builds
// one object member by member on top of them.
package jsonw

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

const hex = "0123456789abcdef"

// String appends s as a JSON string. Control characters are escaped, invalid
// UTF-8 becomes U+FFFD, and U+2028/U+2029 are escaped so the output is also
// a valid JavaScript literal. '<', '>' and '&' are written as they are.
func String(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// Raw appends raw, which must be one complete JSON value, or null when raw is
// empty. Line breaks are left out: in valid JSON they can only be white
// space between tokens (inside a string they must be escaped), and an
// NDJSON line must not hold one.
func Raw(dst []byte, raw string) []byte {
	if raw == "" {
		return append(dst, "null"...)
	}
	if strings.IndexByte(raw, '\n') < 0 && strings.IndexByte(raw, '\r') < 0 {
		return append(dst, raw...)
	}
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c != '\n' && c != '\r' {
			dst = append(dst, c)
		}
	}
	return dst
}

// Strings appends ss as a JSON array of strings.
func Strings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = String(dst, s)
	}
	return append(dst, ']')
}

// Bool appends true or false.
func Bool(dst []byte, v bool) []byte {
	if v {
		return append(dst, "true"...)
	}
	return append(dst, "false"...)
}

// Int appends v in decimal.
func Int(dst []byte, v int64) []byte {
	return strconv.AppendInt(dst, v, 10)
}

// Float appends v in the shortest decimal form that reads back as v. NaN and
// infinities, which JSON cannot carry, are written as 0.
func Float(dst []byte, v float64) []byte {
	if v != v || v > 1.7976931348623157e308 || v < -1.7976931348623157e308 {
		return append(dst, '0')
	}
	return strconv.AppendFloat(dst, v, 'f', -1, 64)
}

// Key appends `,"key":` (or `"key":` right after an opening brace). key must
// not need escaping; callers pass constants.
func Key(dst []byte, key string) []byte {
	if n := len(dst); n > 0 && dst[n-1] != '{' && dst[n-1] != '[' {
		dst = append(dst, ',')
	}
	dst = append(dst, '"')
	dst = append(dst, key...)
	return append(dst, '"', ':')
}
