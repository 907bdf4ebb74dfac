package mapping

// CLI lines over the line cap (--max-cli-line). The framing reader drops
// such a line without holding it and hands over its first bytes
// (LineTooLongError.Head). When those show that the line was a turn's
// result, the dialect ends the turn as that result would have, through a
// result line made up here from what the head still tells.

import (
	"fmt"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// SkippedType returns the top-level "type" of a line known only by its
// head, or "" when the head does not tell. Most CLI lines begin with
// their type; a result line writes it after its text ("result"), which is
// what makes it long, but begins with fields that only a result has.
func SkippedType(head []byte) string {
	if t := headField(head, "type"); t.Type == gjson.String {
		return t.Str
	}
	for _, k := range [...]string{"duration_api_ms", "total_cost_usd", "num_turns"} {
		if headField(head, k).Exists() {
			return "result"
		}
	}
	return ""
}

// headField returns the top-level field key of a line cut short, when its
// value ends inside the head; a value cut by the head's end does not
// count.
func headField(head []byte, key string) gjson.Result {
	v := gjson.GetBytes(head, key)
	if !v.Exists() || v.Index <= 0 || v.Index+len(v.Raw) >= len(head) {
		return gjson.Result{}
	}
	return v
}

// TooLongResult reports whether a CLI line dropped for its length (size
// bytes over the limit max; head is its first bytes) was a turn's
// result and, if so, returns a result line that stands in for it: the
// fields the head still holds (session, cost, usage, stop reason), an
// error text saying what was lost as its "errors" (the "result" text is
// what was lost: it is left out, and a dialect falls back to the text it
// streamed), and the outcome. keepOutcome keeps the outcome the head shows (subtype,
// is_error, terminal_reason, api_error_status: a completed turn stays
// completed), for a dialect whose answer does not carry the result text;
// otherwise the turn failed (error_during_execution, is_error), unless
// the head shows it was interrupted, which stays so.
func TooLongResult(head []byte, size, max int64, keepOutcome bool) (string, bool) {
	if SkippedType(head) != "result" {
		return "", false
	}
	msg := fmt.Sprintf("the CLI's result line of %d bytes is over the %d-byte limit (--max-cli-line); it was dropped", size, max)
	line := `{"type":"result","subtype":"error_during_execution","is_error":true}`
	keys := []string{"session_id", "total_cost_usd", "num_turns", "duration_api_ms", "usage", "modelUsage", "stop_reason"}
	if keepOutcome {
		keys = append(keys, "subtype", "is_error", "terminal_reason", "api_error_status")
	} else if tr := headField(head, "terminal_reason").Str; tr == "aborted_streaming" || tr == "aborted_tools" {
		keys = append(keys, "terminal_reason")
	}
	for _, k := range keys {
		if v := headField(head, k); v.Exists() {
			line, _ = sjson.SetRaw(line, k, v.Raw)
		}
	}
	if !gjson.Valid(line) { // the head was not JSON after all
		line = `{"type":"result","subtype":"error_during_execution","is_error":true}`
	}
	q := string(gjson.AppendJSONString(nil, msg))
	line, _ = sjson.SetRaw(line, "errors", "["+q+"]")
	return line, true
}
