package lane001

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ccbridge/ccbridge/mapping/lanes"
)

// The seed's REQUEST examples (flows A to D), compacted, as a controller
// sends them (no topic).
const (
	reqPause = `{"schema":0,"type":"REQUEST","request_id":"req-pause-001","command":"pause",` +
		`"target":{"run_id":"loop-1703123456-12345","issue_id":"auth-123"},"timestamp":"2024-12-28T10:00:00Z","payload":{}}`
	reqResume = `{"schema":0,"type":"REQUEST","request_id":"req-resume-001","command":"resume",` +
		`"target":{"run_id":"loop-1703123456-12345","issue_id":"auth-123"},"timestamp":"2024-12-28T10:05:00Z","payload":{}}`
	reqCancel = `{"schema":0,"type":"REQUEST","request_id":"req-cancel-001","command":"cancel",` +
		`"target":{"run_id":"grind-1703123456-99999"},"timestamp":"2024-12-28T11:00:00Z","payload":{}}`
	reqEscalate = `{"schema":0,"type":"REQUEST","request_id":"req-escalate-001","command":"escalate",` +
		`"target":{"run_id":"loop-1703123456-12345","issue_id":"complex-refactor"},"timestamp":"2024-12-28T12:00:00Z",` +
		`"payload":{"model":"opus","reason":"Stuck on complex type inference"}}`
	reqRace = `{"schema":0,"type":"REQUEST","request_id":"req-race-001","command":"pause",` +
		`"target":{"run_id":"loop-completed-xyz"},"timestamp":"2024-12-28T13:00:00Z","payload":{}}`
)

// at is a time of the seed's examples, on 2024-12-28 UTC.
func at(h, m, s int) time.Time { return time.Date(2024, 12, 28, h, m, s, 0, time.UTC) }

func decodeOK(t *testing.T, line string) Request {
	t.Helper()
	r, p := Decode([]byte(line))
	if p != nil {
		t.Fatalf("%s: %+v", line, p)
	}
	return r
}

func TestDecodeSeed(t *testing.T) {
	for _, c := range []struct {
		line string
		want Request
	}{
		{reqPause, Request{RequestID: "req-pause-001", Command: CommandPause,
			Target: Target{"loop-1703123456-12345", "auth-123"}, Timestamp: at(10, 0, 0)}},
		{reqResume, Request{RequestID: "req-resume-001", Command: CommandResume,
			Target: Target{"loop-1703123456-12345", "auth-123"}, Timestamp: at(10, 5, 0)}},
		{reqCancel, Request{RequestID: "req-cancel-001", Command: CommandCancel,
			Target: Target{RunID: "grind-1703123456-99999"}, Timestamp: at(11, 0, 0)}},
		{reqEscalate, Request{RequestID: "req-escalate-001", Command: CommandEscalate,
			Target: Target{"loop-1703123456-12345", "complex-refactor"}, Timestamp: at(12, 0, 0),
			Model: "opus", Reason: "Stuck on complex type inference"}},
		{reqRace, Request{RequestID: "req-race-001", Command: CommandPause,
			Target: Target{RunID: "loop-completed-xyz"}, Timestamp: at(13, 0, 0)}},
	} {
		if got := decodeOK(t, c.line); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s\n got  %+v\n want %+v", c.line, got, c.want)
		}
	}
}

// TestDecodeAccepts: what Decode lets pass beyond the seed's lines.
func TestDecodeAccepts(t *testing.T) {
	for _, c := range []struct {
		name, line string
		check      func(r Request) bool
	}{
		{"pretty-printed, white space around", " \t\r\n{ \"schema\" : 0 ,\n\"type\":\"REQUEST\",\"request_id\":\"r\",\"command\":\"cancel\"," +
			"\"target\":{\"run_id\":\"x\"},\"timestamp\":\"2024-12-28T11:00:00Z\",\"payload\":{}}\r\n",
			func(r Request) bool { return r.RequestID == "r" && r.Target.RunID == "x" }},
		{"topic and other fields ignored", set(t, set(t, reqPause, "topic", `"loop:control"`), "extra", `[1,{"a":2}]`),
			func(r Request) bool { return r.Command == CommandPause }},
		{"unknown members of target and payload ignored", set(t, set(t, reqCancel, "target.x", `1`), "payload.model", `7`),
			func(r Request) bool { return r.Model == "" }},
		{"issue_id null or empty is absent", set(t, reqPause, "target.issue_id", `null`),
			func(r Request) bool { return r.Target.IssueID == "" }},
		{"issue_id empty", set(t, reqPause, "target.issue_id", `""`),
			func(r Request) bool { return r.Target.IssueID == "" }},
		{"escalate without reason", set(t, reqEscalate, "payload.reason", ""),
			func(r Request) bool { return r.Model == "opus" && r.Reason == "" }},
		{"escalate reason null", set(t, reqEscalate, "payload.reason", "null"),
			func(r Request) bool { return r.Reason == "" }},
		{"escalate full model name", set(t, reqEscalate, "payload.model", `"claude-opus-4-1"`),
			func(r Request) bool { return r.Model == "claude-opus-4-1" }},
		{"escapes decoded", set(t, set(t, reqPause, "request_id", `"r\u00e9\"1\ud83d\ude00"`), "target.run_id", `"a\/b"`),
			func(r Request) bool { return r.RequestID == "ré\"1😀" && r.Target.RunID == "a/b" }},
		{"escaped key", strings.Replace(reqPause, `"request_id"`, `"request\u005fid"`, 1),
			func(r Request) bool { return r.RequestID == "req-pause-001" }},
		{"request_id of 256 bytes", set(t, reqPause, "request_id", `"`+strings.Repeat("é", 128)+`"`),
			func(r Request) bool { return len(r.RequestID) == 256 }},
		{"fraction of a second", set(t, reqPause, "timestamp", `"2024-12-28T10:00:00.123456789Z"`),
			func(r Request) bool { return r.Timestamp.Equal(at(10, 0, 0).Add(123456789)) }},
		{"+00:00 is UTC", set(t, reqPause, "timestamp", `"2024-12-28T10:00:00+00:00"`),
			func(r Request) bool { return r.Timestamp.Equal(at(10, 0, 0)) && r.Timestamp.Location() == time.UTC }},
		{"fields other than the lane's may repeat", `{"x":1,"x":2,` + reqCancel[1:],
			func(r Request) bool { return r.Command == CommandCancel }},
	} {
		r, p := Decode([]byte(c.line))
		if p != nil {
			t.Errorf("%s: %s: %+v", c.name, c.line, p)
		} else if !c.check(r) {
			t.Errorf("%s: %+v", c.name, r)
		}
	}
}

func TestDecodeRefusals(t *testing.T) {
	pauseTarget := Target{"loop-1703123456-12345", "auth-123"}
	for _, c := range []struct {
		name, line, msg string
		id, cmd         string // correlation echoed
		target          Target // echoed
		noReply         bool
	}{
		{"not UTF-8", "{\"schema\":0,\"request_id\":\"\xff\"}", "the line is not valid UTF-8", "", "", Target{}, false},
		{"not JSON", `{"schema":0,`, "the line is not valid JSON", "", "", Target{}, false},
		{"empty", ``, "the line is not valid JSON", "", "", Target{}, false},
		{"trailing garbage", reqPause + `x`, "the line is not valid JSON", "", "", Target{}, false},
		{"form feed around", "\f" + reqPause, "the line is not valid JSON", "", "", Target{}, false},
		{"not an object", `[` + reqPause + `]`, "the line is not a JSON object", "", "", Target{}, false},
		{"a string", `"REQUEST"`, "the line is not a JSON object", "", "", Target{}, false},

		{"request_id twice", strings.Replace(reqPause, `"command"`, `"request_id":"other","command"`, 1),
			`"request_id": appears more than once`, "req-pause-001", "pause", pauseTarget, false},
		{"escaped duplicate", strings.Replace(reqPause, `"command"`, `"comm\u0061nd":"cancel","command"`, 1),
			`"command": appears more than once`, "req-pause-001", "cancel", pauseTarget, false},
		{"null duplicate", `{"schema":null,` + reqPause[1:], `"schema": appears more than once`, "req-pause-001", "pause", pauseTarget, false},
		{"target.run_id twice", set(t, reqPause, "target", `{"run_id":"a","run_id":"b"}`),
			`"target.run_id": appears more than once`, "req-pause-001", "pause", Target{RunID: "a"}, false},
		{"target.issue_id twice", set(t, reqPause, "target", `{"run_id":"a","issue_id":"b","issue_id":null}`),
			`"target.issue_id": appears more than once`, "req-pause-001", "pause", Target{"a", "b"}, false},
		{"payload.model twice", set(t, reqEscalate, "payload", `{"model":"opus","model":"haiku"}`),
			`"payload.model": appears more than once`, "req-escalate-001", "escalate", Target{"loop-1703123456-12345", "complex-refactor"}, false},
		{"payload.reason twice", set(t, reqEscalate, "payload", `{"model":"opus","reason":"a","reason":"b"}`),
			`"payload.reason": appears more than once`, "req-escalate-001", "escalate", Target{"loop-1703123456-12345", "complex-refactor"}, false},

		{"schema missing", set(t, reqPause, "schema", ""), "schema: missing", "req-pause-001", "pause", pauseTarget, false},
		{"schema null", set(t, reqPause, "schema", "null"), "schema: missing", "req-pause-001", "pause", pauseTarget, false},
		{"schema a string", set(t, reqPause, "schema", `"0"`), "schema: must be a number", "req-pause-001", "pause", pauseTarget, false},
		{"schema 1", set(t, reqPause, "schema", `1`), `schema: unsupported schema "1"; a REQUEST has schema 0`, "req-pause-001", "pause", pauseTarget, false},
		{"schema 0.0", set(t, reqPause, "schema", `0.0`), `schema: unsupported schema "0.0"; a REQUEST has schema 0`, "req-pause-001", "pause", pauseTarget, false},
		{"schema -0", set(t, reqPause, "schema", `-0`), `schema: unsupported schema "-0"; a REQUEST has schema 0`, "req-pause-001", "pause", pauseTarget, false},

		{"type missing", set(t, reqPause, "type", ""), "type: missing", "req-pause-001", "pause", pauseTarget, false},
		{"type a number", set(t, reqPause, "type", `1`), "type: must be a string", "req-pause-001", "pause", pauseTarget, false},
		{"type empty", set(t, reqPause, "type", `""`), "type: must not be empty", "req-pause-001", "pause", pauseTarget, false},
		{"type lower-case", set(t, reqPause, "type", `"request"`), `type: "request" is not a request; only "REQUEST" is read`, "req-pause-001", "pause", pauseTarget, false},
		{"an ACK is not answered", set(t, reqPause, "type", `"ACK"`), `type: "ACK" is not a request; only "REQUEST" is read`, "req-pause-001", "pause", pauseTarget, true},
		{"a RESULT is not answered", set(t, reqPause, "type", `"RESULT"`), `type: "RESULT" is not a request; only "REQUEST" is read`, "req-pause-001", "pause", pauseTarget, true},
		{"an ERROR is not answered", `{"schema":0,"topic":"loop:control","type":"ERROR","command":"","target":{"run_id":""}}`,
			`type: "ERROR" is not a request; only "REQUEST" is read`, "", "", Target{}, true},
		{"a STATE is not answered", `{"schema":1,"topic":"loop:current","event":"STATE","run_id":"r","stack":[]}`,
			`schema: unsupported schema "1"; a REQUEST has schema 0`, "", "", Target{}, true},
		{"an ABORT is not answered", `{"schema":1,"event":"ABORT","reason":"USER_CANCELLED","run_id":"r","stack":[]}`,
			`schema: unsupported schema "1"; a REQUEST has schema 0`, "", "", Target{}, true},
		{"an unknown event is answered", `{"schema":1,"event":"LOG"}`,
			`schema: unsupported schema "1"; a REQUEST has schema 0`, "", "", Target{}, false},

		{"request_id missing", set(t, reqPause, "request_id", ""), "request_id: missing", "", "pause", pauseTarget, false},
		{"request_id a number", set(t, reqPause, "request_id", `42`), "request_id: must be a string", "", "pause", pauseTarget, false},
		{"request_id empty", set(t, reqPause, "request_id", `""`), "request_id: must not be empty", "", "pause", pauseTarget, false},
		{"request_id 257 bytes", set(t, reqPause, "request_id", `"`+strings.Repeat("a", 257)+`"`),
			"request_id: 257 bytes, over the limit of 256", "", "pause", pauseTarget, false},

		{"command missing", set(t, reqPause, "command", ""), "command: missing", "req-pause-001", "", pauseTarget, false},
		{"command a list", set(t, reqPause, "command", `["pause"]`), "command: must be a string", "req-pause-001", "", pauseTarget, false},
		{"command unknown", set(t, reqPause, "command", `"stop"`), `command: unknown command "stop"; one of pause, resume, cancel, escalate`,
			"req-pause-001", "stop", pauseTarget, false},
		{"command upper-case", set(t, reqPause, "command", `"PAUSE"`), `command: unknown command "PAUSE"; one of pause, resume, cancel, escalate`,
			"req-pause-001", "PAUSE", pauseTarget, false},

		{"target missing", set(t, reqPause, "target", ""), "target: missing", "req-pause-001", "pause", Target{}, false},
		{"target a string", set(t, reqPause, "target", `"loop-1"`), "target: must be an object", "req-pause-001", "pause", Target{}, false},
		{"run_id missing", set(t, reqPause, "target.run_id", ""), "target.run_id: missing", "req-pause-001", "pause", Target{IssueID: "auth-123"}, false},
		{"run_id null", set(t, reqPause, "target.run_id", "null"), "target.run_id: missing", "req-pause-001", "pause", Target{IssueID: "auth-123"}, false},
		{"run_id a number", set(t, reqPause, "target.run_id", "12345"), "target.run_id: must be a string", "req-pause-001", "pause", Target{IssueID: "auth-123"}, false},
		{"run_id empty", set(t, reqPause, "target.run_id", `""`), "target.run_id: must not be empty", "req-pause-001", "pause", Target{IssueID: "auth-123"}, false},
		{"issue_id a number", set(t, reqPause, "target.issue_id", `123`), "target.issue_id: must be a string",
			"req-pause-001", "pause", Target{RunID: "loop-1703123456-12345"}, false},

		{"timestamp missing", set(t, reqPause, "timestamp", ""), "timestamp: missing", "req-pause-001", "pause", pauseTarget, false},
		{"timestamp a number", set(t, reqPause, "timestamp", `1735380000`), "timestamp: must be a string", "req-pause-001", "pause", pauseTarget, false},
		{"timestamp no zone", set(t, reqPause, "timestamp", `"2024-12-28T10:00:00"`),
			`timestamp: "2024-12-28T10:00:00" is not an RFC 3339 time`, "req-pause-001", "pause", pauseTarget, false},
		{"timestamp a date", set(t, reqPause, "timestamp", `"2024-12-28"`),
			`timestamp: "2024-12-28" is not an RFC 3339 time`, "req-pause-001", "pause", pauseTarget, false},
		{"timestamp lower-case z", set(t, reqPause, "timestamp", `"2024-12-28T10:00:00z"`),
			`timestamp: "2024-12-28T10:00:00z" is not an RFC 3339 time`, "req-pause-001", "pause", pauseTarget, false},
		{"timestamp one-digit hour", set(t, reqPause, "timestamp", `"2024-12-28T1:00:00Z"`),
			`timestamp: "2024-12-28T1:00:00Z" is not an RFC 3339 time`, "req-pause-001", "pause", pauseTarget, false},
		{"timestamp month 13", set(t, reqPause, "timestamp", `"2024-13-28T10:00:00Z"`),
			`timestamp: "2024-13-28T10:00:00Z" is not an RFC 3339 time`, "req-pause-001", "pause", pauseTarget, false},
		{"timestamp not UTC", set(t, reqPause, "timestamp", `"2024-12-28T11:00:00+01:00"`),
			`timestamp: "2024-12-28T11:00:00+01:00" is not in UTC (end it in Z)`, "req-pause-001", "pause", pauseTarget, false},

		{"payload missing", set(t, reqPause, "payload", ""), "payload: missing (an empty object {} for pause)", "req-pause-001", "pause", pauseTarget, false},
		{"payload null", set(t, reqCancel, "payload", "null"), "payload: missing (an empty object {} for cancel)",
			"req-cancel-001", "cancel", Target{RunID: "grind-1703123456-99999"}, false},
		{"payload a list", set(t, reqPause, "payload", `[]`), "payload: must be an object", "req-pause-001", "pause", pauseTarget, false},
		{"escalate without model", set(t, reqEscalate, "payload.model", ""), "payload.model: missing",
			"req-escalate-001", "escalate", Target{"loop-1703123456-12345", "complex-refactor"}, false},
		{"escalate empty payload", set(t, reqEscalate, "payload", "{}"), "payload.model: missing",
			"req-escalate-001", "escalate", Target{"loop-1703123456-12345", "complex-refactor"}, false},
		{"escalate model empty", set(t, reqEscalate, "payload.model", `""`), "payload.model: must not be empty",
			"req-escalate-001", "escalate", Target{"loop-1703123456-12345", "complex-refactor"}, false},
		{"escalate model an object", set(t, reqEscalate, "payload.model", `{"name":"opus"}`), "payload.model: must be a string",
			"req-escalate-001", "escalate", Target{"loop-1703123456-12345", "complex-refactor"}, false},
		{"escalate reason a number", set(t, reqEscalate, "payload.reason", `1`), "payload.reason: must be a string",
			"req-escalate-001", "escalate", Target{"loop-1703123456-12345", "complex-refactor"}, false},

		{"first fault wins", `{"schema":2,"type":"ACK","command":"x"}`, `schema: unsupported schema "2"; a REQUEST has schema 0`, "", "x", Target{}, true},
	} {
		r, p := Decode([]byte(c.line))
		if p == nil {
			t.Errorf("%s: accepted %+v", c.name, r)
			continue
		}
		if !reflect.DeepEqual(r, Request{}) {
			t.Errorf("%s: a request beside the problem: %+v", c.name, r)
		}
		want := Problem{Code: CodeBadRequest, Message: c.msg, RequestID: c.id, Command: c.cmd, Target: c.target, NoReply: c.noReply}
		if !reflect.DeepEqual(*p, want) {
			t.Errorf("%s: %s\n got  %+v\n want %+v", c.name, c.line, *p, want)
		}
	}
}

// TestFlows writes the answers of the seed's flows A to D and compares them
// byte for byte with the seed's examples, compacted, with "topic" added
// right after "schema".
func TestFlows(t *testing.T) {
	pause, resume := decodeOK(t, reqPause), decodeOK(t, reqResume)
	cancel, esc, race := decodeOK(t, reqCancel), decodeOK(t, reqEscalate), decodeOK(t, reqRace)
	escStack := Stack{ID: "loop-1703123456-12345", Mode: "issue", Iter: 5, Max: 10, Model: "opus",
		EscalationReason: esc.Reason}
	for _, c := range []struct {
		name string
		got  []byte
		want string
	}{
		{"A2 ACK", AppendAck(nil, &pause, at(10, 0, 1)),
			`{"schema":0,"topic":"loop:control","type":"ACK","request_id":"req-pause-001","command":"pause","target":{"run_id":"loop-1703123456-12345","issue_id":"auth-123"},"timestamp":"2024-12-28T10:00:01Z","payload":{}}`},
		{"A3 RESULT", AppendResult(nil, &pause, Result{Status: StatusSuccess, Message: "Loop paused at iteration 4"}, at(10, 0, 2)),
			`{"schema":0,"topic":"loop:control","type":"RESULT","request_id":"req-pause-001","command":"pause","target":{"run_id":"loop-1703123456-12345","issue_id":"auth-123"},"timestamp":"2024-12-28T10:00:02Z","payload":{"status":"success","message":"Loop paused at iteration 4"}}`},
		{"A5 ACK", AppendAck(nil, &resume, at(10, 5, 1)),
			`{"schema":0,"topic":"loop:control","type":"ACK","request_id":"req-resume-001","command":"resume","target":{"run_id":"loop-1703123456-12345","issue_id":"auth-123"},"timestamp":"2024-12-28T10:05:01Z","payload":{}}`},
		{"A5 RESULT", AppendResult(nil, &resume, Result{Status: StatusSuccess, Message: "Loop resumed at iteration 4"}, at(10, 5, 2)),
			`{"schema":0,"topic":"loop:control","type":"RESULT","request_id":"req-resume-001","command":"resume","target":{"run_id":"loop-1703123456-12345","issue_id":"auth-123"},"timestamp":"2024-12-28T10:05:02Z","payload":{"status":"success","message":"Loop resumed at iteration 4"}}`},
		{"B2 ACK", AppendAck(nil, &cancel, at(11, 0, 1)),
			`{"schema":0,"topic":"loop:control","type":"ACK","request_id":"req-cancel-001","command":"cancel","target":{"run_id":"grind-1703123456-99999"},"timestamp":"2024-12-28T11:00:01Z","payload":{}}`},
		{"B3 RESULT", AppendResult(nil, &cancel, Result{Status: StatusSuccess}, at(11, 0, 2)),
			`{"schema":0,"topic":"loop:control","type":"RESULT","request_id":"req-cancel-001","command":"cancel","target":{"run_id":"grind-1703123456-99999"},"timestamp":"2024-12-28T11:00:02Z","payload":{"status":"success"}}`},
		{"B4 ABORT", AppendAbort(nil, cancel.Target.RunID, ReasonUserCancelled, nil),
			`{"schema":1,"topic":"loop:current","event":"ABORT","reason":"USER_CANCELLED","run_id":"grind-1703123456-99999","stack":[]}`},
		{"C2 ACK", AppendAck(nil, &esc, at(12, 0, 1)),
			`{"schema":0,"topic":"loop:control","type":"ACK","request_id":"req-escalate-001","command":"escalate","target":{"run_id":"loop-1703123456-12345","issue_id":"complex-refactor"},"timestamp":"2024-12-28T12:00:01Z","payload":{}}`},
		{"C3 RESULT", AppendResult(nil, &esc, Result{Status: StatusSuccess, PreviousModel: "haiku", NewModel: esc.Model}, at(12, 0, 2)),
			`{"schema":0,"topic":"loop:control","type":"RESULT","request_id":"req-escalate-001","command":"escalate","target":{"run_id":"loop-1703123456-12345","issue_id":"complex-refactor"},"timestamp":"2024-12-28T12:00:02Z","payload":{"status":"success","previous_model":"haiku","new_model":"opus"}}`},
		{"C4 STATE", AppendState(nil, esc.Target.RunID, at(12, 0, 2), escStack),
			`{"schema":1,"topic":"loop:current","event":"STATE","run_id":"loop-1703123456-12345","updated_at":"2024-12-28T12:00:02Z","stack":[{"id":"loop-1703123456-12345","mode":"issue","iter":5,"max":10,"model":"opus","escalation_reason":"Stuck on complex type inference"}]}`},
		{"D2 RESULT", AppendResult(nil, &race, Result{Status: StatusFailure, Code: CodeNotFound, Message: "Run loop-completed-xyz is not active"}, at(13, 0, 1)),
			`{"schema":0,"topic":"loop:control","type":"RESULT","request_id":"req-race-001","command":"pause","target":{"run_id":"loop-completed-xyz"},"timestamp":"2024-12-28T13:00:01Z","payload":{"status":"failure","code":"not_found","message":"Run loop-completed-xyz is not active"}}`},
	} {
		if string(c.got) != c.want {
			t.Errorf("%s\n got  %s\n want %s", c.name, c.got, c.want)
		}
		if !validLine(c.got) {
			t.Errorf("%s: not one valid line", c.name)
		}
	}
}

func TestAppendState(t *testing.T) {
	// ccbridge's STATE: "state" between model and escalation_reason, no max
	s := Stack{ID: "sess-1", Mode: "session", Iter: 3, Model: "claude-haiku-4-5", State: StatePaused}
	got := string(AppendState([]byte("p:"), "sess-1", time.Date(2024, 12, 28, 13, 0, 0, 120_999_999, time.FixedZone("CET", 3600)), s))
	want := `p:{"schema":1,"topic":"loop:current","event":"STATE","run_id":"sess-1","updated_at":"2024-12-28T12:00:00.12Z",` +
		`"stack":[{"id":"sess-1","mode":"session","iter":3,"model":"claude-haiku-4-5","state":"paused"}]}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	s.State, s.Max, s.EscalationReason = StateRunning, 10, "stuck \"here\"\n"
	keys, m := fieldsOf(t, AppendState(nil, "sess-1", at(12, 0, 0), s))
	if !reflect.DeepEqual(keys, []string{"schema", "topic", "event", "run_id", "updated_at", "stack"}) {
		t.Fatalf("keys %q", keys)
	}
	entry := m["stack"].([]any)[0].(map[string]any)
	if entry["max"] != 10.0 || entry["state"] != "running" || entry["escalation_reason"] != "stuck \"here\"\n" {
		t.Fatalf("%v", entry)
	}
}

func TestAppendAbortDone(t *testing.T) {
	stack := []Stack{{ID: "s", Mode: "session", Iter: 2, Model: "m", State: StateIdle}, {ID: "t", Model: "n"}}
	got := string(AppendAbort(nil, "s", ReasonUserCancelled, stack))
	want := `{"schema":1,"topic":"loop:current","event":"ABORT","reason":"USER_CANCELLED","run_id":"s",` +
		`"stack":[{"id":"s","mode":"session","iter":2,"model":"m","state":"idle"},{"id":"t","mode":"","iter":0,"model":"n"}]}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	got = string(AppendDone(nil, "s", at(14, 0, 0), ReasonCompleted, nil))
	want = `{"schema":1,"topic":"loop:current","event":"DONE","reason":"COMPLETED","run_id":"s","updated_at":"2024-12-28T14:00:00Z","stack":[]}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	got = string(AppendDone(nil, "s\u2028", at(14, 0, 0), ReasonFailed, []Stack{}))
	if !strings.Contains(got, `"reason":"FAILED","run_id":"s\u2028"`) || !strings.HasSuffix(got, `"stack":[]}`) || !validLine([]byte(got)) {
		t.Fatalf("%s", got)
	}
}

func TestAppendProblem(t *testing.T) {
	// with a request_id: a RESULT, correlated as far as read
	_, p := Decode([]byte(set(t, reqPause, "command", `"stop"`)))
	got := string(AppendProblem(nil, p, at(10, 0, 1)))
	want := `{"schema":0,"topic":"loop:control","type":"RESULT","request_id":"req-pause-001","command":"stop",` +
		`"target":{"run_id":"loop-1703123456-12345","issue_id":"auth-123"},"timestamp":"2024-12-28T10:00:01Z",` +
		`"payload":{"status":"failure","code":"bad_request","message":"command: unknown command \"stop\"; one of pause, resume, cancel, escalate"}}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	// without one: an ERROR line, the same without request_id
	_, p = Decode([]byte(set(t, reqCancel, "request_id", "")))
	got = string(AppendProblem(nil, p, at(11, 0, 1)))
	want = `{"schema":0,"topic":"loop:control","type":"ERROR","command":"cancel","target":{"run_id":"grind-1703123456-99999"},` +
		`"timestamp":"2024-12-28T11:00:01Z","payload":{"status":"failure","code":"bad_request","message":"request_id: missing"}}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	_, p = Decode([]byte(`{nope`))
	got = string(AppendProblem(nil, p, at(11, 0, 1)))
	want = `{"schema":0,"topic":"loop:control","type":"ERROR","command":"","target":{"run_id":""},` +
		`"timestamp":"2024-12-28T11:00:01Z","payload":{"status":"failure","code":"bad_request","message":"the line is not valid JSON"}}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	// an ERROR line read back is not answered
	if _, p := Decode([]byte(got)); p == nil || !p.NoReply || lanes.Classify([]byte(got)) != lanes.Lane001 {
		t.Fatalf("%+v", p)
	}
}

func TestAppendEscapes(t *testing.T) {
	r := Request{RequestID: "id \"q\" \\ \n\u2028", Command: CommandEscalate,
		Target: Target{RunID: "<r>&", IssueID: "i\xff"}}
	keys, m := fieldsOf(t, AppendResult(nil, &r, Result{Status: StatusFailure, Code: CodeInvalidState, Message: "\x00"}, at(0, 0, 0)))
	if !reflect.DeepEqual(keys, []string{"schema", "topic", "type", "request_id", "command", "target", "timestamp", "payload"}) {
		t.Fatalf("keys %q", keys)
	}
	if m["request_id"] != r.RequestID || !reflect.DeepEqual(m["target"], map[string]any{"run_id": "<r>&", "issue_id": "i\ufffd"}) ||
		!reflect.DeepEqual(m["payload"], map[string]any{"status": "failure", "code": "invalid_state", "message": "\x00"}) {
		t.Fatalf("%v", m)
	}
}

func TestAppendAllocs(t *testing.T) {
	r := decodeOK(t, reqEscalate)
	buf := make([]byte, 0, 1024)
	res := Result{Status: StatusSuccess, PreviousModel: "haiku", NewModel: "opus"}
	s := Stack{ID: "x", Mode: "issue", Iter: 5, Max: 10, Model: "opus", State: StateRunning, EscalationReason: "y"}
	for name, fn := range map[string]func(){
		"ack":    func() { buf = AppendAck(buf[:0], &r, at(12, 0, 1)) },
		"result": func() { buf = AppendResult(buf[:0], &r, res, at(12, 0, 1)) },
		"state":  func() { buf = AppendState(buf[:0], "x", at(12, 0, 1), s) },
		"abort":  func() { buf = AppendAbort(buf[:0], "x", ReasonUserCancelled, nil) },
		"done":   func() { buf = AppendDone(buf[:0], "x", at(12, 0, 1), ReasonCompleted, nil) },
	} {
		if n := testing.AllocsPerRun(100, fn); n != 0 {
			t.Errorf("%s: %v allocations", name, n)
		}
	}
}

// TestDecodeAllocs: Decode allocates only the copies it keeps
// (request_id, run_id, issue_id; model and reason for escalate; the
// command is a constant).
func TestDecodeAllocs(t *testing.T) {
	for line, want := range map[string]float64{reqPause: 3, reqCancel: 2, reqEscalate: 5} {
		b := []byte(line)
		if n := testing.AllocsPerRun(100, func() { Decode(b) }); n != want {
			t.Errorf("%s: %v allocations, want %v", line, n, want)
		}
	}
}
