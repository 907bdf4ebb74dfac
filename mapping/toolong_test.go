package mapping

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/ccbridge/ccbridge/framing"
)

// TestSkippedType: the kind of a dropped line is told from its head, for
// every CLI line of the transcripts made long (a result's text, an
// assistant's text) and cut to framing.MaxHead bytes, as the real CLI
// orders its keys: most lines begin with "type", a result ends with it.
func TestSkippedType(t *testing.T) {
	f, err := os.Open("../testdata/transcripts/bash_allow.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	long := strings.Repeat("0123456789", 3000)
	seen := map[string]int{}
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "<< ")
		if !ok || !gjson.Valid(line) {
			continue
		}
		typ := gjson.Get(line, "type").Str
		switch typ {
		case "result":
			line, _ = sjson.Set(line, "result", long)
		case "assistant":
			line, _ = sjson.Set(line, "message.content.0.text", long)
		}
		if len(line) <= framing.MaxHead {
			continue // not long enough to be cut; the whole line tells
		}
		if got := SkippedType([]byte(line[:framing.MaxHead])); got != typ {
			t.Errorf("type %q told as %q: %.120s", typ, got, line)
		}
		seen[typ]++
	}
	if seen["result"] == 0 || seen["assistant"] == 0 {
		t.Fatalf("no long result or assistant line was made: %v", seen)
	}
	for _, h := range []string{``, `{`, `{"type":"res`, `not json`, `{"result":"` + long[:100]} {
		if got := SkippedType([]byte(h)); got != "" {
			t.Errorf("head %q told as %q", h, got)
		}
	}
}

// TestTooLongResult: the line made up for a dropped result routes as a
// result of the same session, with the outcome asked for and the error.
func TestTooLongResult(t *testing.T) {
	head := `{"duration_api_ms":38,"stop_reason":"max_tokens","session_id":"s-1","total_cost_usd":0.5,"usage":{"input_tokens":3},` +
		`"terminal_reason":"completed","is_error":false,"num_turns":2,"subtype":"success","result":"` + strings.Repeat("x", 200)
	e := &framing.LineTooLongError{Size: 300000, Max: 65536, Head: []byte(head)}
	for _, keep := range []bool{false, true} {
		line, ok := TooLongResult(e.Head, e.Size, e.Max, keep)
		if !ok || !gjson.Valid(line) {
			t.Fatalf("keep %v: %q, %v", keep, line, ok)
		}
		ev := RouteString(line)
		if ev.Kind != KindResult || ev.SessionID != "s-1" || ev.Get("total_cost_usd").Num != 0.5 ||
			ev.Get("stop_reason").Str != "max_tokens" || ev.Get("result").Exists() ||
			!strings.Contains(ev.Get("errors.0").Str, "result line of 300000 bytes is over the 65536-byte limit (--max-cli-line)") {
			t.Errorf("keep %v: %s", keep, line)
		}
		want := ResultError
		if keep {
			want = ResultSuccess
		}
		if ev.Result != want {
			t.Errorf("keep %v: result class %v, want %v", keep, ev.Result, want)
		}
	}
	// An interrupted turn stays interrupted.
	e.Head = []byte(`{"duration_api_ms":1,"terminal_reason":"aborted_streaming","is_error":false,"subtype":"success","result":"xx`)
	if line, _ := TooLongResult(e.Head, e.Size, e.Max, false); RouteString(line).Result != ResultInterrupted {
		t.Errorf("interrupted: %s", line)
	}
	// Not a result.
	e.Head = []byte(`{"type":"assistant","message":{"content":"xx`)
	if _, ok := TooLongResult(e.Head, e.Size, e.Max, false); ok {
		t.Error("an assistant line was taken for a result")
	}
}
