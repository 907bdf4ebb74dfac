package lane001

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ccbridge/ccbridge/mapping/lanes"
)

// encode builds a REQUEST line from r with encoding/json, a writer
// independent of the ones under test.
func encode(t *testing.T, r *Request) []byte {
	target := map[string]any{"run_id": r.Target.RunID}
	if r.Target.IssueID != "" {
		target["issue_id"] = r.Target.IssueID
	}
	payload := map[string]any{}
	if r.Command == CommandEscalate {
		payload["model"] = r.Model
		if r.Reason != "" {
			payload["reason"] = r.Reason
		}
	}
	b, err := json.Marshal(map[string]any{"schema": 0, "type": "REQUEST", "request_id": r.RequestID,
		"command": r.Command, "target": target, "timestamp": r.Timestamp.Format(time.RFC3339Nano), "payload": payload})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jsonStr returns the string at the path of exact keys in m, as
// encoding/json reads it (a map, so key case matters, unlike its structs).
func jsonStr(m map[string]any, path ...string) string {
	for _, k := range path[:len(path)-1] {
		m, _ = m[k].(map[string]any)
	}
	s, _ := m[path[len(path)-1]].(string)
	return s
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		reqPause, reqCancel, reqEscalate,
		`{"schema":0,"type":"REQUEST","request_id":"r\ud800\u0041\"","command":"resume","target":{"run_id":"\u2028"},` +
			`"timestamp":"2024-12-28T10:00:00.5+00:00","payload":{"x":1}}`,
		`{"schema":0,"schema":0}`, `{"schema":1,"event":"STATE"}`, "{\"request_id\":\"\xff\"}", `[]`,
	} {
		f.Add([]byte(s))
	}
	now := time.Date(2024, 12, 28, 10, 0, 1, 0, time.UTC)
	f.Fuzz(func(t *testing.T, line []byte) {
		r, p := Decode(line)
		if p != nil {
			if r != (Request{}) {
				t.Fatalf("both a request and a problem: %+v %+v", r, p)
			}
			if p.Code != CodeBadRequest || p.Message == "" || len(p.RequestID) > MaxRequestID {
				t.Fatalf("problem %+v", p)
			}
			if out := AppendProblem(nil, p, now); !validLine(out) {
				t.Fatalf("AppendProblem wrote %q", out)
			}
			return
		}
		switch {
		case r.RequestID == "" || len(r.RequestID) > MaxRequestID || r.Target.RunID == "":
			t.Fatalf("accepted %+v", r)
		case (r.Command == CommandEscalate) != (r.Model != ""):
			t.Fatalf("command %q model %q", r.Command, r.Model)
		case r.Timestamp.Location() != time.UTC:
			t.Fatalf("timestamp %v", r.Timestamp)
		case lanes.Classify(line) != lanes.Lane001:
			t.Fatalf("accepted a line Classify puts in lane %q", lanes.Classify(line))
		}
		stack := Stack{ID: r.Target.RunID, Mode: r.Command, Model: r.Model, State: StatePaused, EscalationReason: r.Reason}
		for _, out := range [][]byte{
			AppendAck(nil, &r, now),
			AppendResult(nil, &r, Result{Status: StatusFailure, Code: CodeInvalidState, Message: r.Reason,
				PreviousModel: r.Target.IssueID, NewModel: r.Model}, now),
			AppendState(nil, r.RequestID, r.Timestamp, stack),
			AppendAbort(nil, r.Target.RunID, ReasonUserCancelled, []Stack{stack}),
			AppendDone(nil, r.Target.IssueID, r.Timestamp, r.Reason, nil),
		} {
			if !validLine(out) {
				t.Fatalf("wrote %q", out)
			}
		}
		// the strings are what encoding/json reads
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("accepted a line encoding/json refuses: %v", err)
		}
		if jsonStr(m, "request_id") != r.RequestID || jsonStr(m, "target", "run_id") != r.Target.RunID ||
			jsonStr(m, "target", "issue_id") != r.Target.IssueID || (r.Command == CommandEscalate &&
			(jsonStr(m, "payload", "model") != r.Model || jsonStr(m, "payload", "reason") != r.Reason)) {
			t.Fatalf("decoded %+v, encoding/json %v", r, m)
		}
		// re-encoded, the request decodes to itself
		again, p2 := Decode(encode(t, &r))
		if p2 != nil {
			t.Fatalf("re-encoded %s: %+v", encode(t, &r), p2)
		}
		if again != r {
			t.Fatalf("round trip\n got  %+v\n want %+v", again, r)
		}
	})
}
