package lane000

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
	"unicode/utf8"
)

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

var acked = time.Date(2026, 2, 20, 22, 15, 0, 123456789, time.FixedZone("CET", 3600))

func TestAppendAckGolden(t *testing.T) {
	r := decodeOK(t, baseStdin)
	got := string(AppendAck([]byte("prefix:"), &r, OK, "accepted", false, acked))
	want := `prefix:{"type":"control.stdin.ack","v":1,"request_id":"req-1","team":"atm-dev","session_id":"sess-1",` +
		`"agent_id":"codex:abc","acked_at":"2026-02-20T21:15:00.123Z","result":"ok","duplicate":false,"detail":"accepted"}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestAppendAck(t *testing.T) {
	r := decodeOK(t, baseInterrupt)
	r.RequestID = "id \"q\" \\ \n\u2028"
	r.Team = "<t>&"
	keys, m := fieldsOf(t, AppendAck(nil, &r, OK, "", true, acked))
	if want := []string{"type", "v", "request_id", "team", "session_id", "agent_id", "acked_at", "result", "duplicate"}; !reflect.DeepEqual(keys, want) {
		t.Fatalf("keys %q, want %q (no detail when empty)", keys, want)
	}
	want := map[string]any{"type": "control.interrupt.ack", "v": 1.0, "request_id": r.RequestID, "team": "<t>&",
		"session_id": "sess-1", "agent_id": "codex:abc", "acked_at": "2026-02-20T21:15:00.123Z", "result": "ok", "duplicate": true}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("got  %v\nwant %v", m, want)
	}
	at, err := time.Parse(time.RFC3339, m["acked_at"].(string))
	if err != nil || !at.Equal(acked.Truncate(time.Millisecond)) {
		t.Fatalf("acked_at %v %v", at, err)
	}
	// detail is escaped; invalid UTF-8 in it becomes U+FFFD
	_, m = fieldsOf(t, AppendAck(nil, &r, NotLive, "no \"worker\"\n\xff", false, acked))
	if m["detail"] != "no \"worker\"\n\ufffd" || m["result"] != "not_live" || m["duplicate"] != false {
		t.Fatalf("%v", m)
	}
}

func TestAppendProblem(t *testing.T) {
	// a decode problem answered with the request's ack type
	_, p := Decode([]byte(set(t, baseStdin, "content_encoding", `"latin1"`)))
	keys, m := fieldsOf(t, AppendProblem(nil, p, acked))
	if wantKeys := []string{"type", "v", "request_id", "team", "session_id", "agent_id", "acked_at", "result", "duplicate", "detail", "error"}; !reflect.DeepEqual(keys, wantKeys) {
		t.Fatalf("keys %q", keys)
	}
	want := map[string]any{"type": "control.stdin.ack", "v": 1.0, "request_id": "req-1", "team": "atm-dev",
		"session_id": "sess-1", "agent_id": "codex:abc", "acked_at": "2026-02-20T21:15:00.123Z", "result": "rejected",
		"duplicate": false, "detail": `content_encoding: "latin1" is not supported; only utf-8`, "error": "invalid_value"}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("got  %v\nwant %v", m, want)
	}
	// an unreadable line: control.error, no duplicate, empty correlation
	_, p = Decode([]byte("{nope"))
	keys, m = fieldsOf(t, AppendProblem(nil, p, acked))
	if wantKeys := []string{"type", "v", "request_id", "team", "session_id", "agent_id", "acked_at", "result", "detail", "error"}; !reflect.DeepEqual(keys, wantKeys) {
		t.Fatalf("keys %q", keys)
	}
	want = map[string]any{"type": "control.error", "v": 1.0, "request_id": "", "team": "", "session_id": "",
		"agent_id": "", "acked_at": "2026-02-20T21:15:00.123Z", "result": "rejected",
		"detail": "the line is not valid JSON", "error": "invalid_json"}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("got  %v\nwant %v", m, want)
	}
	// a Check problem
	r := decodeOK(t, baseStdin)
	p, _ = Check(&r, policy, "sess-9", t0)
	_, m = fieldsOf(t, AppendProblem(nil, p, acked))
	if m["type"] != "control.stdin.ack" || m["result"] != "not_found" || m["error"] != "unknown_session" || m["request_id"] != "req-1" {
		t.Fatalf("%v", m)
	}
	// an Ack that is no ack type becomes control.error
	_, m = fieldsOf(t, AppendProblem(nil, &Problem{Ack: "x\"y", Result: InternalError}, acked))
	if m["type"] != "control.error" || m["result"] != "internal_error" || m["detail"] != nil || m["error"] != nil {
		t.Fatalf("%v", m)
	}
}

func TestAppendCapabilities(t *testing.T) {
	c := Capabilities{SoftLimit: DefaultSoftLimit, HardLimit: DefaultHardLimit, RefMax: 64 << 20,
		RefsAllowed: true, Durable: true, DedupeTTL: 10 * time.Minute,
		Team: "atm-dev", AgentID: "codex:abc", SessionID: "sess-1"}
	got := string(AppendCapabilities(nil, c, acked))
	want := `{"type":"control.capabilities","v":1,"lanes":["000"],"types":["control.stdin.request",` +
		`"control.interrupt.request","control.capabilities.request"],"soft_limit_bytes":65536,` +
		`"hard_limit_bytes":1048576,"content_ref":true,"ref_max_bytes":67108864,"max_request_id_bytes":256,` +
		`"dedupe_durable":true,"dedupe_ttl_ms":600000,"team":"atm-dev","agent_id":"codex:abc",` +
		`"session_id":"sess-1","sent_at":"2026-02-20T21:15:00.123Z"}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	c = Capabilities{Lanes: []string{"000", "001"}, Types: []string{}, RequestID: "c\"1", Team: "\x00"}
	keys, m := fieldsOf(t, AppendCapabilities(nil, c, acked))
	if keys[2] != "request_id" || m["request_id"] != "c\"1" || m["team"] != "\x00" ||
		!reflect.DeepEqual(m["lanes"], []any{"000", "001"}) || !reflect.DeepEqual(m["types"], []any{}) ||
		m["content_ref"] != false || m["dedupe_durable"] != false {
		t.Fatalf("%v", m)
	}
}

func TestAppendAckAllocs(t *testing.T) {
	r := decodeOK(t, baseStdin)
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() {
		buf = AppendAck(buf[:0], &r, OK, "queued", true, acked)
	}); n != 0 {
		t.Fatalf("%v allocations per AppendAck", n)
	}
}

// TestDecodeAllocs: Decode allocates only the copies it keeps (request_id,
// team, session_id, agent_id, sender for an interrupt request).
func TestDecodeAllocs(t *testing.T) {
	line := []byte(baseInterrupt)
	if n := testing.AllocsPerRun(100, func() { Decode(line) }); n > 5 {
		t.Fatalf("%v allocations per Decode, want 5", n)
	}
}
