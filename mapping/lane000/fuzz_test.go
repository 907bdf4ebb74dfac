package lane000

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
	"unicode/utf8"
)

// validLine reports whether b is one UTF-8 JSON value with no line break.
func validLine(b []byte) bool {
	return utf8.Valid(b) && json.Valid(b) && !bytes.ContainsAny(b, "\r\n")
}

// encode builds a request line from r with encoding/json, a writer
// independent of the one under test.
func encode(t *testing.T, r *Request) []byte {
	m := map[string]any{"v": 1, "request_id": r.RequestID}
	switch r.Kind {
	case KindStdin:
		m["type"] = TypeStdinRequest
		if r.Ref != nil {
			ref := map[string]any{"path": r.Ref.Path, "size_bytes": r.Ref.Size, "sha256": r.Ref.SHA256, "mime": r.Ref.MIME}
			if !r.Ref.ExpiresAt.IsZero() {
				ref["expires_at"] = r.Ref.ExpiresAt.Format(time.RFC3339Nano)
			}
			m["content_ref"] = ref
		} else {
			m["content"] = string(r.Content)
		}
		m["interrupt"] = r.Interrupt
	case KindInterrupt:
		m["type"] = TypeInterruptRequest
		m["signal"] = "interrupt"
	case KindCapabilities:
		m["type"] = TypeCapabilitiesRequest
		if r.RequestID == "" {
			delete(m, "request_id")
		}
	}
	if r.Kind != KindCapabilities {
		m["team"], m["session_id"], m["agent_id"], m["sender"] = r.Team, r.SessionID, r.AgentID, r.Sender
		m["sent_at"] = r.SentAt.Format(time.RFC3339Nano)
		m["meta"] = map[string]any{"retry_count": r.RetryCount}
		if r.ThreadID != "" {
			m["thread_id"] = r.ThreadID
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		baseStdin, baseInterrupt, withRef(f, set(f, baseRef, "expires_at", `"2026-02-20T22:15:00Z"`)),
		`{"type":"control.capabilities.request","v":1,"request_id":"c"}`,
		set(f, baseStdin, "content", `"\ud83d\ude00 \ud800\u0041 \" \\ \/"`),
		`{"type":"control.stdin.request","type":"x","v":1}`,
		"{\"type\":\"\xff\"}", `[]`, `{"v":2}`,
	} {
		f.Add([]byte(s))
	}
	now := time.Date(2026, 2, 20, 21, 15, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, line []byte) {
		r, p := Decode(line)
		if p != nil {
			if r.Kind != KindNone {
				t.Fatalf("both a request and a problem: %+v %+v", r, p)
			}
			if p.Result != Rejected || p.Detail == "" || p.Error == "" ||
				(p.Ack != TypeStdinAck && p.Ack != TypeInterruptAck && p.Ack != TypeError) {
				t.Fatalf("problem %+v", p)
			}
			if len(p.RequestID) > MaxRequestID {
				t.Fatalf("echoed request_id of %d bytes", len(p.RequestID))
			}
			if out := AppendProblem(nil, p, now); !validLine(out) {
				t.Fatalf("AppendProblem wrote %q", out)
			}
			return
		}
		if r.Kind == KindNone {
			t.Fatal("no request and no problem")
		}
		if out := AppendAck(nil, &r, OK, "detail", true, now); !validLine(out) {
			t.Fatalf("AppendAck wrote %q", out)
		}
		if r.Kind != KindCapabilities {
			if r.RequestID == "" || len(r.RequestID) > MaxRequestID || r.Team == "" || r.Sender == "" {
				t.Fatalf("accepted %+v", r)
			}
			if (r.Kind == KindStdin) == (r.Content == nil && r.Ref == nil) || (r.Content != nil && r.Ref != nil) {
				t.Fatalf("content %q ref %v", r.Content, r.Ref)
			}
			pr, _ := Check(&r, policy, "sess-1", now)
			if pr != nil {
				if out := AppendProblem(nil, pr, now); !validLine(out) {
					t.Fatalf("AppendProblem wrote %q", out)
				}
			}
		}
		// the content decodes as encoding/json decodes it
		if r.Content != nil {
			var m map[string]json.RawMessage
			var want string
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("accepted a line encoding/json refuses: %v", err)
			}
			if err := json.Unmarshal(m["content"], &want); err != nil || want != string(r.Content) {
				t.Fatalf("content %q, encoding/json %q (%v)", r.Content, want, err)
			}
		}
		// re-encoded, the request decodes to itself
		again, p2 := Decode(encode(t, &r))
		if p2 != nil {
			t.Fatalf("re-encoded %s: %+v", encode(t, &r), p2)
		}
		if !equalRequest(again, r) {
			t.Fatalf("round trip\n got  %+v\n want %+v", again, r)
		}
	})
}
