package lane000

import (
	"strings"
	"testing"
	"time"
)

func TestDecodeStdin(t *testing.T) {
	r, p := Decode([]byte(baseStdin))
	if p != nil {
		t.Fatalf("problem: %+v", p)
	}
	want := Request{Kind: KindStdin, RequestID: "req-1", Team: "atm-dev", SessionID: "sess-1",
		AgentID: "codex:abc", Sender: "arch-ctm", ThreadID: "th-1", SentAt: t0,
		Content: []byte("line one\nline two"), RetryCount: 2}
	if !equalRequest(r, want) {
		t.Fatalf("got %+v\nwant %+v", r, want)
	}
}

func TestDecodeInterrupt(t *testing.T) {
	r, p := Decode([]byte("  " + baseInterrupt + "\r\n"))
	if p != nil {
		t.Fatalf("problem: %+v", p)
	}
	want := Request{Kind: KindInterrupt, RequestID: "req-2", Team: "atm-dev", SessionID: "sess-1",
		AgentID: "codex:abc", Sender: "arch-ctm", SentAt: t0.Add(72 * time.Second)}
	if !equalRequest(r, want) {
		t.Fatalf("got %+v\nwant %+v", r, want)
	}
}

func TestDecodeCapabilities(t *testing.T) {
	for line, id := range map[string]string{
		`{"type":"control.capabilities.request","v":1}`:                       "",
		`{"type":"control.capabilities.request","v":1,"request_id":"c-1"}`:    "c-1",
		`{"type":"control.capabilities.request","v":1,"request_id":null}`:     "",
		`{"type":"control.capabilities.request","v":1,"team":5,"content":{}}`: "", // not its fields
	} {
		r, p := Decode([]byte(line))
		if p != nil || r.Kind != KindCapabilities || r.RequestID != id {
			t.Errorf("%s: %+v %+v", line, r, p)
		}
	}
}

func TestDecodeContentRef(t *testing.T) {
	ref := set(t, set(t, baseRef, "expires_at", `"2026-02-20T22:15:00+01:00"`), "sha256", `"`+strings.ToUpper(sum64)+`"`)
	r, p := Decode([]byte(set(t, withRef(t, ref), "interrupt", "true")))
	if p != nil {
		t.Fatalf("problem: %+v", p)
	}
	want := ContentRef{Path: "/srv/in/req.txt", Size: 143201, SHA256: sum64, MIME: "text/plain; charset=utf-8",
		ExpiresAt: t0}
	if r.Content != nil || r.Ref == nil || *r.Ref != want || !r.Interrupt {
		t.Fatalf("got %+v ref %+v", r, r.Ref)
	}
	if r.Ref.ExpiresAt.Location() != time.UTC {
		t.Error("expires_at not in UTC")
	}
}

func TestDecodeValues(t *testing.T) {
	cases := []struct {
		name, path, raw string
		check           func(r Request) bool
	}{
		{"escapes decoded", "content", `"a\"b\\c\/d\u00e9\ud83d\ude00\t\u2028"`,
			func(r Request) bool { return string(r.Content) == "a\"b\\c/dé😀\t\u2028" }},
		{"lone surrogate is U+FFFD", "content", `"x\ud800y\udc00\ud800\u0041"`,
			func(r Request) bool { return string(r.Content) == "x\ufffdy\ufffd\ufffdA" }},
		{"empty content decodes (Check refuses it)", "content", `""`,
			func(r Request) bool { return r.Content != nil && len(r.Content) == 0 }},
		{"content_encoding any case", "content_encoding", `"UTF-8"`, func(Request) bool { return true }},
		{"content_encoding absent", "content_encoding", "", func(Request) bool { return true }},
		{"interrupt true", "interrupt", "true", func(r Request) bool { return r.Interrupt }},
		{"null optional is absent", "thread_id", "null", func(r Request) bool { return r.ThreadID == "" }},
		{"meta absent", "meta", "", func(r Request) bool { return r.RetryCount == 0 }},
		{"sent_at with offset in UTC", "sent_at", `"2026-02-20T22:15:00.5+01:00"`,
			func(r Request) bool {
				return r.SentAt.Equal(t0.Add(500*time.Millisecond)) && r.SentAt.Location() == time.UTC
			}},
		{"request_id of 256 bytes", "request_id", `"` + strings.Repeat("x", 256) + `"`,
			func(r Request) bool { return len(r.RequestID) == 256 }},
		{"unknown fields ignored", "extra", `{"type":"x","v":2}`, func(r Request) bool { return r.Kind == KindStdin }},
		{"escaped key read", "", "", nil},
	}
	for _, c := range cases {
		line := baseStdin
		if c.check == nil {
			line = strings.Replace(baseStdin, `"sender"`, `"s\u0065nder"`, 1)
			c.check = func(r Request) bool { return r.Sender == "arch-ctm" }
		} else {
			line = set(t, line, c.path, c.raw)
		}
		r, p := Decode([]byte(line))
		if p != nil {
			t.Errorf("%s: problem %+v", c.name, p)
			continue
		}
		if !c.check(r) {
			t.Errorf("%s: got %+v", c.name, r)
		}
	}
}

// TestDecodeProblems has one row per rule: the answer's type, error code
// and detail are all checked.
func TestDecodeProblems(t *testing.T) {
	long := strings.Repeat("x", 257)
	cases := []struct {
		name, line, ack, code, detail string
	}{
		// unreadable: control.error
		{"invalid UTF-8", "{\"type\":\"control.stdin.request\",\"content\":\"\xff\"}", TypeError, ErrInvalidUTF8, "the line is not valid UTF-8"},
		{"malformed JSON", `{"type":"control.stdin.request",`, TypeError, ErrInvalidJSON, "the line is not valid JSON"},
		{"trailing garbage", baseStdin + "x", TypeError, ErrInvalidJSON, "the line is not valid JSON"},
		{"form feed is not JSON white space", "\f" + baseStdin, TypeError, ErrInvalidJSON, "the line is not valid JSON"},
		{"NBSP is not JSON white space", baseStdin + "\u00a0", TypeError, ErrInvalidJSON, "the line is not valid JSON"},
		{"empty line", ``, TypeError, ErrInvalidJSON, "the line is not valid JSON"},
		{"array", `[1,2]`, TypeError, ErrNotObject, "the line is not a JSON object"},
		{"string", `"control.stdin.request"`, TypeError, ErrNotObject, "the line is not a JSON object"},
		{"type missing", set(t, baseStdin, "type", ""), TypeError, ErrMissingField, "type: missing"},
		{"type null", set(t, baseStdin, "type", "null"), TypeError, ErrMissingField, "type: missing"},
		{"type not a string", set(t, baseStdin, "type", "7"), TypeError, ErrWrongType, "type: must be a string"},
		{"unknown type", set(t, baseStdin, "type", `"control.stdin.ack"`), TypeError, ErrUnknownType, `type: unknown type "control.stdin.ack"`},
		{"unknown long type cut", set(t, baseStdin, "type", `"`+long+`"`), TypeError, ErrUnknownType, `type: unknown type "` + long[:64] + `"…`},
		// duplicates
		{"duplicate request_id", strings.Replace(baseStdin, `"team"`, `"request_id":"req-9","team"`, 1), TypeStdinAck, ErrDuplicateField, `"request_id": appears more than once`},
		{"duplicate type", strings.Replace(baseStdin, `"v":1`, `"v":1,"type":"control.interrupt.request"`, 1), TypeStdinAck, ErrDuplicateField, `"type": appears more than once`},
		{"duplicate via escaped key", strings.Replace(baseStdin, `"v":1`, `"v":1,"cont\u0065nt":"other"`, 1), TypeStdinAck, ErrDuplicateField, `"content": appears more than once`},
		{"duplicate null counts", strings.Replace(baseStdin, `"v":1`, `"v":1,"thread_id":null`, 1), TypeStdinAck, ErrDuplicateField, `"thread_id": appears more than once`},
		{"duplicate meta.retry_count", set(t, baseStdin, "meta", `{"retry_count":1,"retry_count":2}`), TypeStdinAck, ErrDuplicateField, `"meta.retry_count": appears more than once`},
		{"duplicate content_ref.sha256", withRef(t, strings.Replace(baseRef, `"mime"`, `"sha256":"`+sum64+`","mime"`, 1)), TypeStdinAck, ErrDuplicateField, `"content_ref.sha256": appears more than once`},
		// version
		{"v missing", set(t, baseStdin, "v", ""), TypeStdinAck, ErrMissingField, "v: missing"},
		{"v string", set(t, baseStdin, "v", `"1"`), TypeStdinAck, ErrWrongType, "v: must be a number"},
		{"v 2", set(t, baseInterrupt, "v", `2`), TypeInterruptAck, ErrUnsupported, `v: unsupported version "2"; this lane speaks v 1`},
		{"v 1.0", set(t, baseStdin, "v", `1.0`), TypeStdinAck, ErrUnsupported, `v: unsupported version "1.0"; this lane speaks v 1`},
		{"capabilities v 2", `{"type":"control.capabilities.request","v":2}`, TypeError, ErrUnsupported, `v: unsupported version "2"; this lane speaks v 1`},
		// request_id
		{"request_id missing", set(t, baseStdin, "request_id", ""), TypeStdinAck, ErrMissingField, "request_id: missing"},
		{"request_id number", set(t, baseStdin, "request_id", "12"), TypeStdinAck, ErrWrongType, "request_id: must be a string"},
		{"request_id empty", set(t, baseStdin, "request_id", `""`), TypeStdinAck, ErrInvalidValue, "request_id: must not be empty"},
		{"request_id 257 bytes", set(t, baseStdin, "request_id", `"`+long+`"`), TypeStdinAck, ErrInvalidValue, "request_id: 257 bytes, over the limit of 256"},
		{"capabilities request_id wrong", `{"type":"control.capabilities.request","v":1,"request_id":[]}`, TypeError, ErrWrongType, "request_id: must be a string"},
		// identity
		{"team missing", set(t, baseStdin, "team", ""), TypeStdinAck, ErrMissingField, "team: missing"},
		{"team object", set(t, baseInterrupt, "team", `{}`), TypeInterruptAck, ErrWrongType, "team: must be a string"},
		{"session_id missing", set(t, baseStdin, "session_id", ""), TypeStdinAck, ErrMissingField, "session_id: missing"},
		{"session_id empty", set(t, baseStdin, "session_id", `""`), TypeStdinAck, ErrInvalidValue, "session_id: must not be empty"},
		{"agent_id bool", set(t, baseStdin, "agent_id", `true`), TypeStdinAck, ErrWrongType, "agent_id: must be a string"},
		{"sender missing", set(t, baseInterrupt, "sender", ""), TypeInterruptAck, ErrMissingField, "sender: missing"},
		{"sent_at missing", set(t, baseStdin, "sent_at", ""), TypeStdinAck, ErrMissingField, "sent_at: missing"},
		{"sent_at number", set(t, baseStdin, "sent_at", "1771622100"), TypeStdinAck, ErrWrongType, "sent_at: must be a string"},
		{"sent_at not RFC 3339", set(t, baseStdin, "sent_at", `"2026-02-20 21:15:00"`), TypeStdinAck, ErrInvalidValue, `sent_at: "2026-02-20 21:15:00" is not an RFC 3339 time`},
		{"sent_at no zone", set(t, baseStdin, "sent_at", `"2026-02-20T21:15:00"`), TypeStdinAck, ErrInvalidValue, `sent_at: "2026-02-20T21:15:00" is not an RFC 3339 time`},
		{"sent_at one-digit hour", set(t, baseStdin, "sent_at", `"2026-02-20T1:15:00Z"`), TypeStdinAck, ErrInvalidValue, `sent_at: "2026-02-20T1:15:00Z" is not an RFC 3339 time`},
		{"sent_at comma fraction", set(t, baseStdin, "sent_at", `"2026-02-20T21:15:00,5Z"`), TypeStdinAck, ErrInvalidValue, `sent_at: "2026-02-20T21:15:00,5Z" is not an RFC 3339 time`},
		{"sent_at empty fraction", set(t, baseStdin, "sent_at", `"2026-02-20T21:15:00.Z"`), TypeStdinAck, ErrInvalidValue, `sent_at: "2026-02-20T21:15:00.Z" is not an RFC 3339 time`},
		{"sent_at bad offset", set(t, baseStdin, "sent_at", `"2026-02-20T21:15:00+0100"`), TypeStdinAck, ErrInvalidValue, `sent_at: "2026-02-20T21:15:00+0100" is not an RFC 3339 time`},
		{"sent_at hour 24", set(t, baseStdin, "sent_at", `"2026-02-20T24:00:00Z"`), TypeStdinAck, ErrInvalidValue, `sent_at: "2026-02-20T24:00:00Z" is not an RFC 3339 time`},
		{"sent_at empty", set(t, baseStdin, "sent_at", `""`), TypeStdinAck, ErrInvalidValue, "sent_at: must not be empty"},
		{"thread_id number", set(t, baseStdin, "thread_id", "1"), TypeStdinAck, ErrWrongType, "thread_id: must be a string"},
		{"meta array", set(t, baseStdin, "meta", "[]"), TypeStdinAck, ErrWrongType, "meta: must be an object"},
		{"meta.retry_count string", set(t, baseStdin, "meta.retry_count", `"1"`), TypeStdinAck, ErrWrongType, "meta.retry_count: must be an integer"},
		{"meta.retry_count fraction", set(t, baseStdin, "meta.retry_count", `1.5`), TypeStdinAck, ErrWrongType, "meta.retry_count: must be an integer"},
		{"meta.retry_count negative", set(t, baseStdin, "meta.retry_count", `-1`), TypeStdinAck, ErrInvalidValue, "meta.retry_count: must not be negative"},
		{"meta.retry_count huge", set(t, baseStdin, "meta.retry_count", `99999999999999999999`), TypeStdinAck, ErrInvalidValue, "meta.retry_count: out of range"},
		// stdin
		{"neither content nor ref", set(t, baseStdin, "content", ""), TypeStdinAck, ErrMissingField, "content: missing (give content or content_ref)"},
		{"both content and ref", set(t, baseStdin, "content_ref", baseRef), TypeStdinAck, ErrInvalidValue, "content, content_ref: give exactly one, not both"},
		{"content number", set(t, baseStdin, "content", "5"), TypeStdinAck, ErrWrongType, "content: must be a string"},
		{"content array", set(t, baseStdin, "content", `["a"]`), TypeStdinAck, ErrWrongType, "content: must be a string"},
		{"content_encoding base64", set(t, baseStdin, "content_encoding", `"base64"`), TypeStdinAck, ErrInvalidValue, `content_encoding: "base64" is not supported; only utf-8`},
		{"content_encoding number", set(t, baseStdin, "content_encoding", `8`), TypeStdinAck, ErrWrongType, "content_encoding: must be a string"},
		{"content_preview number", set(t, baseStdin, "content_preview", `8`), TypeStdinAck, ErrWrongType, "content_preview: must be a string"},
		{"interrupt string", set(t, baseStdin, "interrupt", `"true"`), TypeStdinAck, ErrWrongType, "interrupt: must be a boolean"},
		// content_ref
		{"ref not object", withRef(t, `"/srv/in/x"`), TypeStdinAck, ErrWrongType, "content_ref: must be an object"},
		{"ref path missing", withRef(t, set(t, baseRef, "path", "")), TypeStdinAck, ErrMissingField, "content_ref.path: missing"},
		{"ref path number", withRef(t, set(t, baseRef, "path", "1")), TypeStdinAck, ErrWrongType, "content_ref.path: must be a string"},
		{"ref path empty", withRef(t, set(t, baseRef, "path", `""`)), TypeStdinAck, ErrInvalidValue, "content_ref.path: must not be empty"},
		{"ref size missing", withRef(t, set(t, baseRef, "size_bytes", "")), TypeStdinAck, ErrMissingField, "content_ref.size_bytes: missing"},
		{"ref size string", withRef(t, set(t, baseRef, "size_bytes", `"12"`)), TypeStdinAck, ErrWrongType, "content_ref.size_bytes: must be an integer"},
		{"ref size exponent", withRef(t, set(t, baseRef, "size_bytes", `1e3`)), TypeStdinAck, ErrWrongType, "content_ref.size_bytes: must be an integer"},
		{"ref size negative", withRef(t, set(t, baseRef, "size_bytes", `-4`)), TypeStdinAck, ErrInvalidValue, "content_ref.size_bytes: must not be negative"},
		{"ref sha256 missing", withRef(t, set(t, baseRef, "sha256", "")), TypeStdinAck, ErrMissingField, "content_ref.sha256: missing"},
		{"ref sha256 short", withRef(t, set(t, baseRef, "sha256", `"e3b0c442"`)), TypeStdinAck, ErrInvalidValue, "content_ref.sha256: must be 64 hex digits"},
		{"ref sha256 not hex", withRef(t, set(t, baseRef, "sha256", `"`+strings.Repeat("g", 64)+`"`)), TypeStdinAck, ErrInvalidValue, "content_ref.sha256: must be 64 hex digits"},
		{"ref sha256 number", withRef(t, set(t, baseRef, "sha256", `1`)), TypeStdinAck, ErrWrongType, "content_ref.sha256: must be a string"},
		{"ref mime missing", withRef(t, set(t, baseRef, "mime", "")), TypeStdinAck, ErrMissingField, "content_ref.mime: missing"},
		{"ref mime object", withRef(t, set(t, baseRef, "mime", "{}")), TypeStdinAck, ErrWrongType, "content_ref.mime: must be a string"},
		{"ref expires_at number", withRef(t, set(t, baseRef, "expires_at", "1")), TypeStdinAck, ErrWrongType, "content_ref.expires_at: must be a string"},
		{"ref expires_at bad", withRef(t, set(t, baseRef, "expires_at", `"tomorrow"`)), TypeStdinAck, ErrInvalidValue, `content_ref.expires_at: "tomorrow" is not an RFC 3339 time`},
		// order: the first failing check is reported
		{"type before duplicates", strings.Replace(set(t, baseStdin, "type", `"x"`), `"v":1`, `"v":1,"team":"b"`, 1), TypeError, ErrUnknownType, `type: unknown type "x"`},
		{"duplicates before v", strings.Replace(set(t, baseStdin, "v", `2`), `"team"`, `"sender":"b","team"`, 1), TypeStdinAck, ErrDuplicateField, `"sender": appears more than once`},
		{"v before request_id", set(t, set(t, baseStdin, "v", `2`), "request_id", `5`), TypeStdinAck, ErrUnsupported, `v: unsupported version "2"; this lane speaks v 1`},
		{"request_id before team", set(t, set(t, baseStdin, "team", `5`), "request_id", `5`), TypeStdinAck, ErrWrongType, "request_id: must be a string"},
		{"sent_at before content", set(t, set(t, baseStdin, "content", `5`), "sent_at", `"now"`), TypeStdinAck, ErrInvalidValue, `sent_at: "now" is not an RFC 3339 time`},
		{"content before encoding", set(t, set(t, baseStdin, "content", `5`), "content_encoding", `"x"`), TypeStdinAck, ErrWrongType, "content: must be a string"},
		// interrupt
		{"signal missing", set(t, baseInterrupt, "signal", ""), TypeInterruptAck, ErrMissingField, "signal: missing"},
		{"signal other", set(t, baseInterrupt, "signal", `"kill"`), TypeInterruptAck, ErrInvalidValue, `signal: "kill" is not supported; only "interrupt"`},
		{"signal bool", set(t, baseInterrupt, "signal", `true`), TypeInterruptAck, ErrWrongType, "signal: must be a string"},
	}
	for _, c := range cases {
		r, p := Decode([]byte(c.line))
		if p == nil {
			t.Errorf("%s: no problem, got %+v", c.name, r)
			continue
		}
		if p.Ack != c.ack || p.Result != Rejected || p.Error != c.code || p.Detail != c.detail {
			t.Errorf("%s:\n got  %s %s %s %q\n want %s rejected %s %q", c.name, p.Ack, p.Result, p.Error, p.Detail, c.ack, c.code, c.detail)
		}
		if r.Kind != KindNone || r.RequestID != "" {
			t.Errorf("%s: a refused line returned a request %+v", c.name, r)
		}
	}
}

// TestDecodeProblemCorrelates: a refused line's answer carries what could be
// read of request_id, team, session_id and agent_id.
func TestDecodeProblemCorrelates(t *testing.T) {
	_, p := Decode([]byte(set(t, baseStdin, "v", "3")))
	if p == nil || p.RequestID != "req-1" || p.Team != "atm-dev" || p.SessionID != "sess-1" || p.AgentID != "codex:abc" {
		t.Fatalf("%+v", p)
	}
	_, p = Decode([]byte(`{"type":"nope","request_id":"r\u00e9","team":"t","session_id":1}`))
	if p == nil || p.Ack != TypeError || p.RequestID != "ré" || p.Team != "t" || p.SessionID != "" || p.AgentID != "" {
		t.Fatalf("%+v", p)
	}
	// an invalid request_id is not echoed
	_, p = Decode([]byte(set(t, baseStdin, "request_id", `"`+strings.Repeat("y", 300)+`"`)))
	if p == nil || p.RequestID != "" || p.Team != "atm-dev" {
		t.Fatalf("%+v", p)
	}
}

// TestDecodeCopies: nothing in a Request aliases the line.
func TestDecodeCopies(t *testing.T) {
	for _, line := range []string{baseStdin, withRef(t, baseRef)} {
		b := []byte(line)
		r, p := Decode(b)
		if p != nil {
			t.Fatal(p)
		}
		before := r
		var ref ContentRef
		if r.Ref != nil {
			ref = *r.Ref
			ref.Path, ref.MIME, ref.SHA256 = strings.Clone(ref.Path), strings.Clone(ref.MIME), strings.Clone(ref.SHA256)
		}
		before.RequestID, before.Team, before.SessionID = strings.Clone(r.RequestID), strings.Clone(r.Team), strings.Clone(r.SessionID)
		before.AgentID, before.Sender, before.ThreadID = strings.Clone(r.AgentID), strings.Clone(r.Sender), strings.Clone(r.ThreadID)
		before.Content = append([]byte(nil), r.Content...)
		for i := range b {
			b[i] = 'Z'
		}
		if !equalRequest(r, before) || (r.Ref != nil && *r.Ref != ref) {
			t.Fatalf("request changed with the line: %+v", r)
		}
	}
}

func equalRequest(a, b Request) bool {
	if (a.Ref == nil) != (b.Ref == nil) || (a.Ref != nil && *a.Ref != *b.Ref) {
		return false
	}
	if (a.Content == nil) != (b.Content == nil) || string(a.Content) != string(b.Content) {
		return false
	}
	a.Ref, b.Ref, a.Content, b.Content = nil, nil, nil, nil
	return a.Kind == b.Kind && a.RequestID == b.RequestID && a.Team == b.Team && a.SessionID == b.SessionID &&
		a.AgentID == b.AgentID && a.Sender == b.Sender && a.ThreadID == b.ThreadID && a.SentAt.Equal(b.SentAt) &&
		a.Interrupt == b.Interrupt && a.RetryCount == b.RetryCount
}
