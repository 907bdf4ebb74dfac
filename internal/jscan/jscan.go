// Package jscan walks the members of a JSON object. It finds the end
// of a string with strings.IndexByte rather than a byte-by-byte loop, so
// the long strings CLI frames carry (streamed text, tool results) cost
// little to step over. The input must be valid JSON (callers validate
// once at the boundary); on invalid input it stops early but never
// panics. Beside the walkers, a few readers of raw JSON text (Text,
// AppendUnescaped, LoneSurrogate, TrimSpace, Pick, IsNumber) take a
// value's raw text as the walkers hand it over, without decoding it.
package jscan

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// ForEach calls fn with every member of the object obj, in order, until fn
// returns false. key is the member's name, unescaped; value is its value as
// a gjson.Result whose Raw aliases obj.
func ForEach(obj string, fn func(key string, value gjson.Result) bool) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return
	}
	members(obj, i+1, fn)
}

// Get returns the value of the first member of the object obj named key,
// as gjson.Get(obj, key) does for a key without path syntax, or the zero
// Result. Only the matching value is made into a Result; the members
// before it are stepped over.
func Get(obj, key string) gjson.Result {
	var r gjson.Result
	walk(obj, func(k string, raw string) bool {
		if k == key {
			r = result(raw)
			return false
		}
		return true
	})
	return r
}

// Elements calls fn with every element of the array arr, in order, until
// fn returns false. Each value's Raw aliases arr.
func Elements(arr string, fn func(value gjson.Result) bool) {
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return
	}
	if i = skipSpace(arr, i+1); i < len(arr) && arr[i] == ']' {
		return
	}
	for {
		i = skipSpace(arr, i)
		end := skipValue(arr, i)
		if end < 0 || !fn(result(arr[i:end])) {
			return
		}
		if i = skipSpace(arr, end); i >= len(arr) || arr[i] != ',' {
			return
		}
		i++
	}
}

// Walk calls fn with every member of the object obj, in order, until fn
// returns false: key is the member's name, unescaped, and raw is its value's
// JSON text, a substring of obj. Unlike ForEach it decodes no value, so a
// caller that copies a long string out of obj pays for one copy only.
func Walk(obj string, fn func(key, raw string) bool) { walk(obj, fn) }

// walk is ForEach handing over each value's raw bytes.
func walk(obj string, fn func(key, raw string) bool) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return
	}
	rawMembers(obj, i+1, fn)
}

// Rest calls fn with the members of an object that follow obj[i:], where
// obj[i] is the ',' after a member, until the object ends or fn returns
// false. It reports whether it reached the object's closing brace, with
// nothing but white space after it.
func Rest(obj string, i int, fn func(key string, value gjson.Result) bool) bool {
	if i >= len(obj) || obj[i] != ',' {
		i = skipSpace(obj, i)
		return i < len(obj) && obj[i] == '}' && skipSpace(obj, i+1) == len(obj)
	}
	end := members(obj, i+1, fn)
	return end >= 0 && skipSpace(obj, end) == len(obj)
}

// SkipString returns the index just past the JSON string that starts at
// s[i] (a '"'), or -1.
func SkipString(s string, i int) int { return skipString(s, i) }

// members walks members from obj[i:], just after a '{' or ','. It returns
// the index just past the object's '}', or -1 when fn stopped it or the
// input is not valid.
func members(obj string, i int, fn func(key string, value gjson.Result) bool) int {
	return rawMembers(obj, i, func(key, raw string) bool { return fn(key, result(raw)) })
}

// rawMembers is members handing over each value's raw bytes.
func rawMembers(obj string, i int, fn func(key, raw string) bool) int {
	first := true
	for {
		i = skipSpace(obj, i)
		if first && i < len(obj) && obj[i] == '}' {
			return i + 1
		}
		first = false
		if i >= len(obj) || obj[i] != '"' {
			return -1
		}
		end := skipString(obj, i)
		if end < 0 {
			return -1
		}
		key := unquote(obj[i:end])
		i = skipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return -1
		}
		i = skipSpace(obj, i+1)
		vend := skipValue(obj, i)
		if vend < 0 {
			return -1
		}
		if !fn(key, obj[i:vend]) {
			return -1
		}
		i = skipSpace(obj, vend)
		switch {
		case i < len(obj) && obj[i] == '}':
			return i + 1
		case i >= len(obj) || obj[i] != ',':
			return -1
		}
		i++
	}
}

// result makes a gjson.Result of one raw value, as gjson.Parse would.
func result(raw string) gjson.Result {
	switch raw[0] {
	case '"':
		return gjson.Result{Type: gjson.String, Raw: raw, Str: unquote(raw)}
	case '{', '[':
		return gjson.Result{Type: gjson.JSON, Raw: raw}
	case 't':
		return gjson.Result{Type: gjson.True, Raw: raw}
	case 'f':
		return gjson.Result{Type: gjson.False, Raw: raw}
	case 'n':
		return gjson.Result{Type: gjson.Null, Raw: raw}
	}
	n, _ := strconv.ParseFloat(raw, 64)
	return gjson.Result{Type: gjson.Number, Raw: raw, Num: n}
}

// unquote returns the text of a raw JSON string; without escapes it is a
// substring, with them gjson decodes it.
func unquote(raw string) string {
	body := raw[1 : len(raw)-1]
	if strings.IndexByte(body, '\\') < 0 {
		return body
	}
	return gjson.Parse(raw).Str
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// shortString is how many bytes of a string skipString looks at one by
// one before it searches for the closing quote with IndexByte.
const shortString = 24

// skipString returns the index just past the string that starts at s[i]
// (a '"'), or -1.
func skipString(s string, i int) int {
	if i >= len(s) || s[i] != '"' {
		return -1
	}
	i++
	// Keys, ids and other short strings end within a few bytes, where a
	// plain loop costs less than a call to IndexByte.
	for lim := min(len(s), i+shortString); i < lim; i++ {
		switch s[i] {
		case '"':
			return i + 1
		case '\\':
			i++ // the escaped byte
		}
	}
	if i >= len(s) {
		return -1
	}
	for {
		j := strings.IndexByte(s[i:], '"')
		if j < 0 {
			return -1
		}
		i += j
		// The quote ends the string unless an odd number of
		// backslashes precedes it.
		n := 0
		for k := i - 1; k >= 0 && s[k] == '\\'; k-- {
			n++
		}
		i++
		if n%2 == 0 {
			return i
		}
	}
}

// skipValue returns the index just past the value that starts at s[i], or
// -1.
func skipValue(s string, i int) int {
	if i >= len(s) {
		return -1
	}
	switch s[i] {
	case '"':
		return skipString(s, i)
	case '{', '[':
		depth := 0
		for i < len(s) {
			switch s[i] {
			case '"':
				if i = skipString(s, i); i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	}
	// A number or a literal: up to the next delimiter.
	j := i
loop:
	for j < len(s) {
		switch s[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			break loop
		}
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// DuplicateKey returns the first member name that appears twice in one
// object of the JSON value v, at any depth, and whether there is one. The
// name comes as a path from v: the names of the objects above it and the
// indexes of the arrays, joined with ".". Names are compared unescaped,
// as a parser reads them ("a" and "\u0061" are one name; a byte that is
// not UTF-8 reads as U+FFFD, as encoding/json and a UTF-8 decoder read
// it). JSON readers
// differ in which of two members they keep (gjson the first, JSON.parse
// the last), so a value read here and passed on may mean another thing
// there unless it has none. v must be valid JSON.
func DuplicateKey(v string) (string, bool) {
	return duplicateKey(v, "")
}

// validName replaces each byte of name that is not part of a UTF-8
// sequence with U+FFFD, one for each byte, as encoding/json unquotes.
func validName(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); {
		r, n := utf8.DecodeRuneInString(name[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(name[i : i+n])
		}
		i += n
	}
	return b.String()
}

// smallObject is how many members an object may have before
// duplicateKey looks names up in a map rather than a slice.
const smallObject = 16

func duplicateKey(v, path string) (string, bool) {
	i := skipSpace(v, 0)
	if i >= len(v) {
		return "", false
	}
	var dup string
	found := false
	// below looks into a member or element: only objects and arrays can
	// hold a member.
	below := func(name, raw string) bool {
		if raw[0] != '{' && raw[0] != '[' {
			return true
		}
		if path != "" {
			name = path + "." + name
		}
		dup, found = duplicateKey(raw, name)
		return !found
	}
	switch v[i] {
	case '{':
		var names []string
		var set map[string]bool
		walk(v, func(key, raw string) bool {
			if !utf8.ValidString(key) {
				key = validName(key)
			}
			switch {
			case set != nil:
				found = set[key]
				set[key] = true
			case len(names) < smallObject:
				found = slices.Contains(names, key)
				names = append(names, key)
			default:
				set = make(map[string]bool, 2*smallObject)
				for _, n := range names {
					set[n] = true
				}
				found = set[key]
				set[key] = true
			}
			if found {
				dup = key
				if path != "" {
					dup = path + "." + key
				}
				return false
			}
			return below(key, raw)
		})
	case '[':
		n := 0
		Elements(v, func(e gjson.Result) bool {
			ok := below(strconv.Itoa(n), e.Raw)
			n++
			return ok
		})
	}
	return dup, found
}
