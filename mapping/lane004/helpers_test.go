package lane004

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// validLine reports whether b is one UTF-8 JSON value with no line break.
func validLine(b []byte) bool {
	return utf8.Valid(b) && json.Valid(b) && !bytes.ContainsAny(b, "\r\n")
}

// fieldsOf parses one output line, checking it is one valid UTF-8 JSON
// object with no newline, and returns its keys in order and its values.
func fieldsOf(t *testing.T, line []byte) ([]string, map[string]any) {
	t.Helper()
	if !utf8.Valid(line) || bytes.ContainsAny(line, "\r\n") {
		t.Fatalf("not one UTF-8 line: %q", line)
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.Token() // {
	var keys []string
	for dec.More() {
		k, _ := dec.Token()
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys, m
}
