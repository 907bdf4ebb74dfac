package control

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ccbridge/ccbridge/mapping"
)

func FuzzDecode004(f *testing.F) {
	th := `"threadId":"` + sid004 + `"`
	for _, s := range []string{
		req004TurnStart,
		line004("thread/start", `{"model":"opus"}`),
		line004("thread/resume", `{"thread_id":"`+strings.ToUpper(sid004)+`"}`),
		line004("turn/interrupt", `{`+th+`,"turn_id":"t-1"}`),
		line004("thread/list", `{"limit":20,"cursor":"c"}`),
		line004("thread/read", `{`+th+`,"include_turns":true}`),
		line004("ccbridge/events/replay", `{"after":42}`),
		line004("ccbridge/approval/respond", `{"approvalId":"a","decision":"accept","answers":{"q":"a"}}`),
		// broken
		``, `{`, `[]`, `{"request":null}`, `{"request":[]}`, `{"event_type":"worker.response"}`,
		`{"request":{"request_id":"r\ud800","method":"thread/start"}}`,
		"{\"request\":{\"request_id\":\"r\xff\",\"method\":\"x\"}}",
		"{\"request\":{\"request_id\":\"r1\",\"method\":\"thread/start\",\"source\":\"\xff\"}}",
		`{"request":{"request_id":"r1","request_id":"r2","method":"thread/start"}}`,
		line004("turn/start", `{`+th+`,"input":[{"type":"image","url":"data:image/png;base64,AA=A"},{"type":"localImage"}]}`),
		line004("turn/start", `{`+th+`,"input":[{"type":"image","image_url":"data:image\/gif;base64,R0lG"}]}`),
		line004("thread/list", `{"limit":1e3}`),
		line004("ccbridge/events/replay", `{"after":-0}`),
		line004("thread/archive", `{}`),
		`{"request":{"request_id":"r1","method":"thread/start","request_version":"v2","sent_at":"2026-02-30T00:00:00Z"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r, p := Decode004(line)
		if p != nil {
			switch {
			case r.RequestID != "" || r.Method != "" || r.Params != "" || r.Input != nil:
				t.Fatalf("both a request and a problem: %+v %+v", r, p)
			case p.Message == "" || (p.Code != Code004InvalidRequest && p.Code != Code004UnsupportedMethod):
				t.Fatalf("problem %+v", p)
			case p.HasID && (p.RequestID == "" || len(p.RequestID) > MaxRequestID || !utf8.ValidString(p.RequestID)):
				t.Fatalf("problem request_id %q", p.RequestID)
			case !p.HasID && p.RequestID != "":
				t.Fatalf("problem %+v", p)
			case len(p.Method) > MaxRequestID:
				t.Fatalf("problem method %d bytes", len(p.Method))
			}
			for _, out := range [][]byte{
				AppendProblem004(nil, "w", p, at004),
				AppendError004(nil, "w", 1, p.RequestID, p.Method, p.Code, p.Message, Retryable004(p.Code), "", at004),
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
		case method004(r.Method) == "":
			t.Fatalf("accepted method %q", r.Method)
		case r.Params == "" || r.Params[0] != '{' || !json.Valid([]byte(r.Params)):
			t.Fatalf("params %q", r.Params)
		case Classify(line) != Lane004:
			t.Fatalf("accepted a line Classify puts in lane %q", Classify(line))
		case r.Answers != "" && !json.Valid([]byte(r.Answers)):
			t.Fatalf("answers %q", r.Answers)
		}
		switch r.Method {
		case Method004ThreadResume, Method004TurnStart, Method004TurnInterrupt, Method004ThreadRead:
			if !mapping.ValidSessionID(r.ThreadID) || strings.ToLower(r.ThreadID) != r.ThreadID {
				t.Fatalf("thread_id %q", r.ThreadID)
			}
		case Method004ThreadList:
			if r.Limit < 1 || r.Limit > 1000 {
				t.Fatalf("limit %d", r.Limit)
			}
		}
		if r.Method == Method004TurnStart {
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
			AppendResponse004(nil, r.Source, 1, r.RequestID, r.Method, r.Params, r.SentAt),
			AppendError004(nil, r.Source, 2, r.RequestID, r.Method, Code004Conflict, r.Message, false, r.Params, r.SentAt),
			AppendEvent004(nil, r.Source, 3, r.Method, r.Params, r.SentAt),
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
