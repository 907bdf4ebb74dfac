// Package lanes tells which control lane a line is for, from its shape
// alone (Classify), so that the control socket and `ccbridge --ui
// control` can hand each line to its lane's codec: mapping/lane000,
// mapping/lane001 or mapping/lane004. It sits apart from the three
// because it spans them (it reads the keys that set the lanes apart, no
// more), and so no lane package imports another.
//
// The package is pure: no I/O, no goroutines, no clock. Classify is safe
// for concurrent use and keeps no reference to the line.
package lanes

import (
	"strings"
	"unsafe"

	"github.com/ccbridge/ccbridge/internal/jscan"
)

// The lanes' names, as Classify returns them.
const (
	Lane000 = "000" // seed 000: control.* requests (mapping/lane000)
	Lane001 = "001" // seed 001: REQUEST, schema 0 and 1 (mapping/lane001)
	Lane004 = "004" // seed 004: {"request":{…}} (mapping/lane004)
)

// Classify says which lane a line belongs to by its shape, reading its
// top-level keys only. In this order:
//
//   - Lane000 when its "type" is a string starting with "control.";
//   - Lane001 when it has a "schema" (any value);
//   - Lane004 when it has a "request" (any value);
//   - Lane001 when its "type" is REQUEST, ACK, RESULT or ERROR;
//   - Lane004 when it has no "type" (or a null one) and its "event_type"
//     is a string starting with "worker." (one of lane 004's own lines,
//     echoed back: lane004.Decode marks it NoReply);
//   - "" otherwise (not an object, unreadable, or none of these shapes).
//
// It validates nothing and allocates nothing (but for a "type" or an
// "event_type" written with escapes). It lives here, beside the three
// codecs and not in one of them, because it judges between them.
func Classify(line []byte) string {
	var typ, event string
	schema, request := false, false
	s := unsafe.String(unsafe.SliceData(line), len(line))
	jscan.Walk(s, func(key, raw string) bool {
		switch key {
		case "type":
			if typ == "" {
				typ = raw
			}
		case "schema":
			schema = true
		case "request":
			request = true
		case "event_type":
			if event == "" {
				event = raw
			}
		}
		return true
	})
	t, isStr := jscan.Text(typ)
	switch {
	case isStr && strings.HasPrefix(t, "control."):
		return Lane000
	case schema:
		return Lane001
	case request:
		return Lane004
	case isStr && (t == "REQUEST" || t == "ACK" || t == "RESULT" || t == "ERROR"):
		return Lane001
	case typ == "" || typ == "null":
		if ev, ok := jscan.Text(event); ok && strings.HasPrefix(ev, "worker.") {
			return Lane004
		}
	}
	return ""
}
