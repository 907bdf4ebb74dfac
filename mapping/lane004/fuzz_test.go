package lane004

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/lanes"
)

func FuzzDecode(f *testing.F) {
	th := `"threadId":"` + sid + `"`
	for _, s := range []string{
		reqTurnStart,
		reqLine("thread/start", `{"model":"opus"}`),
		reqLine("thread/resume", `{"thread_id":"`+strings.ToUpper(sid)+`"}`),
		reqLine("turn/interrupt", `{`+th+`,"turn_id":"t-1"}`),
		reqLine("thread/list", `{"limit":20,"cursor":"c"}`),
		reqLine("thread/read", `{`+th+`,"include_turns":true}`),
		reqLine("ccbridge/events/replay", `{"after":42}`),
		reqLine("ccbridge/approval/respond", `{"approvalId":"a","decision":"accept","answers":{"q":"a"}}`),
		// broken
		``, `{`, `[]`, `{"request":null}`, `{"request":[]}`, `{"event_type":"worker.response"}`,
		`{"request":{"request_id":"r\ud800","method":"thread/start"}}`,
		"{\"request\":{\"request_id\":\"r\xff\",\"method\":\"x\"}}",
		"{\"request\":{\"request_id\":\"r1\",\"method\":\"thread/start\",\"source\":\"\xff\"}}",
		`{"request":{"request_id":"r1","request_id":"r2","method":"thread/start"}}`,
		reqLine("turn/start", `{`+th+`,"input":[{"type":"image","url":"data:image/png;base64,AA=A"},{"type":"localImage"}]}`),
		reqLine("turn/start", `{`+th+`,"input":[{"type":"image","image_url":"data:image\/gif;base64,R0lG"}]}`),
		reqLine("thread/list", `{"limit":1e3}`),
		reqLine("ccbridge/events/replay", `{"after":-0}`),
		reqLine("thread/archive", `{}`),
		`{"request":{"request_id":"r1","method":"thread/start","request_version":"v2","sent_at":"2026-02-30T00:00:00Z"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r, p := Decode(line)
		if p != nil {
			switch {
			case r.RequestID != "" || r.Method != "" || r.Params != "" || r.Input != nil:
				t.Fatalf("both a request and a problem: %+v %+v", r, p)
			case p.Message == "" || (p.Code != CodeInvalidRequest && p.Code != CodeUnsupportedMethod):
				t.Fatalf("problem %+v", p)
			case p.HasID && (p.RequestID == "" || len(p.RequestID) > MaxRequestID || !utf8.ValidString(p.RequestID)):
				t.Fatalf("problem request_id %q", p.RequestID)
			case !p.HasID && p.RequestID != "":
				t.Fatalf("problem %+v", p)
			case len(p.Method) > MaxRequestID:
				t.Fatalf("problem method %d bytes", len(p.Method))
			}
			for _, out := range [][]byte{
				AppendProblem(nil, "w", p, occurredAt),
				AppendError(nil, "w", 1, p.RequestID, p.Method, p.Code, p.Message, Retryable(p.Code), "", occurredAt),
			} {
				if !json.Valid(out) || !utf8.Valid(out) || !validLine(out) {
					t.Fatalf("wrote %q", out)
				}
			}
			return
		}
		switch {
		case r.RequestID == "" || len(r.RequestID) > MaxRequestID || !utf8.ValidString(r.RequestID):
			t.Fatalf("accepted request_id %q", r.RequestID)
		case knownMethod(r.Method) == "":
			t.Fatalf("accepted method %q", r.Method)
		case r.Params == "" || r.Params[0] != '{' || !json.Valid([]byte(r.Params)):
			t.Fatalf("params %q", r.Params)
		case lanes.Classify(line) != lanes.Lane004:
			t.Fatalf("accepted a line Classify puts in lane %q", lanes.Classify(line))
		case r.Answers != "" && !json.Valid([]byte(r.Answers)):
			t.Fatalf("answers %q", r.Answers)
		}
		switch r.Method {
		case MethodThreadResume, MethodTurnStart, MethodTurnInterrupt, MethodThreadRead:
			if !mapping.ValidSessionID(r.ThreadID) || strings.ToLower(r.ThreadID) != r.ThreadID {
				t.Fatalf("thread_id %q", r.ThreadID)
			}
		case MethodThreadList:
			if r.Limit < 1 || r.Limit > 1000 {
				t.Fatalf("limit %d", r.Limit)
			}
		}
		if r.Method == MethodTurnStart {
			some := false
			for _, in := range r.Input {
				switch in.Kind {
				case "text":
					some = some || in.Text != ""
				case "image":
					some = true
					if !isBase64(in.Data) || in.MediaType == "" {
						t.Fatalf("image %+v", in)
					}
				default:
					t.Fatalf("input %+v", in)
				}
			}
			if !some {
				t.Fatalf("input %+v", r.Input)
			}
		}
		// the receipts for it are valid lines
		for _, out := range [][]byte{
			AppendResponse(nil, r.Source, 1, r.RequestID, r.Method, r.Params, r.SentAt),
			AppendError(nil, r.Source, 2, r.RequestID, r.Method, CodeConflict, r.Message, false, r.Params, r.SentAt),
			AppendEvent(nil, r.Source, 3, r.Method, r.Params, r.SentAt),
		} {
			if !validLine(out) {
				t.Fatalf("wrote %q", out)
			}
		}
		// the request_id is what encoding/json reads
		var m struct {
			Request struct {
				RequestID string `json:"request_id"`
			} `json:"request"`
		}
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("accepted a line encoding/json refuses: %v", err)
		}
		if m.Request.RequestID != r.RequestID {
			t.Fatalf("request_id %q, encoding/json %q", r.RequestID, m.Request.RequestID)
		}
	})
}
