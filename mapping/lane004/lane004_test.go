package lane004

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ccbridge/ccbridge/mapping/lanes"
)

const (
	sid = "0c5e3f4e-9a1b-4c2d-8e7f-123456789abc"
	png = "iVBORw0KGgoAAAANSUhEUg=="

	reqTurnStart = `{"request":{"request_id":"req-turn-1","method":"turn/start","params":{"threadId":"` + sid + `",` +
		`"input":[{"type":"text","text":"Summarise the diff"},{"type":"image","url":"data:image/png;base64,` + png + `"}],` +
		`"model":"opus"},"request_version":"v1","sent_at":"2026-02-20T21:15:00.250Z","source":"atm"}}`
)

// reqLine is a request line for method with request_id "r1" and params
// (raw JSON; "" leaves params out).
func reqLine(method, params string) string {
	s := `{"request":{"request_id":"r1","method":"` + method + `"`
	if params != "" {
		s += `,"params":` + params
	}
	return s + `}}`
}

var occurredAt = time.Date(2026, 2, 20, 21, 15, 1, 234567891, time.FixedZone("CET", 3600))

func TestDecodeAccepts(t *testing.T) {
	for _, c := range []struct {
		name, line string
		want       Request
	}{
		{"turn/start in full", reqTurnStart, Request{RequestID: "req-turn-1", Method: MethodTurnStart, Version: "v1",
			Source: "atm", SentAt: time.Date(2026, 2, 20, 21, 15, 0, 250e6, time.UTC),
			Params: `{"threadId":"` + sid + `","input":[{"type":"text","text":"Summarise the diff"},` +
				`{"type":"image","url":"data:image/png;base64,` + png + `"}],"model":"opus"}`,
			ThreadID: sid, Model: "opus",
			Input: []Input{{Kind: "text", Text: "Summarise the diff"}, {Kind: "image", MediaType: "image/png", Data: png}}}},
		{"thread/start, no params", reqLine("thread/start", ""), Request{RequestID: "r1", Method: MethodThreadStart, Params: "{}"}},
		{"params null", reqLine("thread/start", "null"), Request{RequestID: "r1", Method: MethodThreadStart, Params: "{}"}},
		{"thread/start model", reqLine("thread/start", `{"model":"sonnet","cwd":"/x"}`),
			Request{RequestID: "r1", Method: MethodThreadStart, Params: `{"model":"sonnet","cwd":"/x"}`, Model: "sonnet"}},
		{"thread/resume snake", reqLine("thread/resume", `{"thread_id":"`+sid+`"}`),
			Request{RequestID: "r1", Method: MethodThreadResume, Params: `{"thread_id":"` + sid + `"}`, ThreadID: sid}},
		{"thread/resume upper case, lowered", reqLine("thread/resume", `{"threadId":"`+strings.ToUpper(sid)+`"}`),
			Request{RequestID: "r1", Method: MethodThreadResume, Params: `{"threadId":"` + strings.ToUpper(sid) + `"}`, ThreadID: sid}},
		{"both spellings agree", reqLine("thread/resume", `{"threadId":"`+sid+`","thread_id":"\u0030`+sid[1:]+`"}`),
			Request{RequestID: "r1", Method: MethodThreadResume, Params: `{"threadId":"` + sid + `","thread_id":"\u0030` + sid[1:] + `"}`, ThreadID: sid}},
		{"one spelling null", reqLine("thread/resume", `{"threadId":null,"thread_id":"`+sid+`"}`),
			Request{RequestID: "r1", Method: MethodThreadResume, Params: `{"threadId":null,"thread_id":"` + sid + `"}`, ThreadID: sid}},
		{"turn/start image_url, jpeg upper case, empty model", reqLine("turn/start", `{"thread_id":"`+sid+`","input":[{"type":"text","text":""},`+
			`{"type":"image","image_url":"DATA:Image/JPEG;BASE64,/9j/"}],"model":""}`),
			Request{RequestID: "r1", Method: MethodTurnStart, ThreadID: sid,
				Params: `{"thread_id":"` + sid + `","input":[{"type":"text","text":""},{"type":"image","image_url":"DATA:Image/JPEG;BASE64,/9j/"}],"model":""}`,
				Input:  []Input{{Kind: "text"}, {Kind: "image", MediaType: "image/jpeg", Data: "/9j/"}}}},
		{"turn/start escaped text and url", reqLine("turn/start", `{"threadId":"`+sid+`","input":[{"type":"text","text":"a\nb \u00e9"},`+
			`{"type":"image","url":"data:image/webp;base64,UklG\/w=="}]}`),
			Request{RequestID: "r1", Method: MethodTurnStart, ThreadID: sid,
				Params: `{"threadId":"` + sid + `","input":[{"type":"text","text":"a\nb \u00e9"},{"type":"image","url":"data:image/webp;base64,UklG\/w=="}]}`,
				Input:  []Input{{Kind: "text", Text: "a\nb é"}, {Kind: "image", MediaType: "image/webp", Data: "UklG/w=="}}}},
		{"turn/interrupt", reqLine("turn/interrupt", `{"threadId":"`+sid+`","turn_id":"turn-7"}`),
			Request{RequestID: "r1", Method: MethodTurnInterrupt, Params: `{"threadId":"` + sid + `","turn_id":"turn-7"}`,
				ThreadID: sid, TurnID: "turn-7"}},
		{"turn/steer", reqLine("turn/steer", `{"threadId":"`+sid+`","expectedTurnId":"turn-7","input":[{"type":"text","text":"also the docs"}],"model":"x"}`),
			Request{RequestID: "r1", Method: MethodTurnSteer, Params: `{"threadId":"` + sid + `","expectedTurnId":"turn-7","input":[{"type":"text","text":"also the docs"}],"model":"x"}`,
				ThreadID: sid, TurnID: "turn-7", Input: []Input{{Kind: "text", Text: "also the docs"}}}},
		{"turn/steer snake", reqLine("turn/steer", `{"thread_id":"`+sid+`","expected_turn_id":"t","input":[{"type":"text","text":"a"}]}`),
			Request{RequestID: "r1", Method: MethodTurnSteer, Params: `{"thread_id":"` + sid + `","expected_turn_id":"t","input":[{"type":"text","text":"a"}]}`,
				ThreadID: sid, TurnID: "t", Input: []Input{{Kind: "text", Text: "a"}}}},
		{"thread/list default", reqLine("thread/list", `{}`), Request{RequestID: "r1", Method: MethodThreadList, Params: "{}", Limit: 50}},
		{"thread/list limit cursor", reqLine("thread/list", `{"limit":1000,"cursor":"c-2"}`),
			Request{RequestID: "r1", Method: MethodThreadList, Params: `{"limit":1000,"cursor":"c-2"}`, Limit: 1000, Cursor: "c-2"}},
		{"thread/list limit null", reqLine("thread/list", `{"limit":null}`),
			Request{RequestID: "r1", Method: MethodThreadList, Params: `{"limit":null}`, Limit: 50}},
		{"thread/read", reqLine("thread/read", `{"threadId":"`+sid+`","includeTurns":true}`),
			Request{RequestID: "r1", Method: MethodThreadRead, Params: `{"threadId":"` + sid + `","includeTurns":true}`, ThreadID: sid, IncludeTurns: true}},
		{"thread/read snake", reqLine("thread/read", `{"thread_id":"`+sid+`","include_turns":false}`),
			Request{RequestID: "r1", Method: MethodThreadRead, Params: `{"thread_id":"` + sid + `","include_turns":false}`, ThreadID: sid}},
		{"thread/rollback", reqLine("thread/rollback", `{"threadId":"`+sid+`","numTurns":2,"revertFiles":true}`),
			Request{RequestID: "r1", Method: MethodThreadRollback, Params: `{"threadId":"` + sid + `","numTurns":2,"revertFiles":true}`, ThreadID: sid, NumTurns: 2, RevertFiles: true}},
		{"thread/rollback snake dry", reqLine("thread/rollback", `{"thread_id":"`+sid+`","num_turns":1,"dry_run":true,"revert_files":false}`),
			Request{RequestID: "r1", Method: MethodThreadRollback, Params: `{"thread_id":"` + sid + `","num_turns":1,"dry_run":true,"revert_files":false}`, ThreadID: sid, NumTurns: 1, DryRun: true}},
		{"replay", reqLine("ccbridge/events/replay", `{"after":18446744073709551615}`),
			Request{RequestID: "r1", Method: MethodReplay, Params: `{"after":18446744073709551615}`, After: 1<<64 - 1}},
		{"replay 0", reqLine("ccbridge/events/replay", `{"after":0}`),
			Request{RequestID: "r1", Method: MethodReplay, Params: `{"after":0}`}},
		{"approval", reqLine("ccbridge/approval/respond", `{"approvalId":"ap-1","decision":"acceptForSession","message":"ok","answers":{"q":["a"]}}`),
			Request{RequestID: "r1", Method: MethodApproval, Params: `{"approvalId":"ap-1","decision":"acceptForSession","message":"ok","answers":{"q":["a"]}}`,
				ApprovalID: "ap-1", Decision: "acceptForSession", Message: "ok", Answers: `{"q":["a"]}`}},
		{"approval snake, answers null", reqLine("ccbridge/approval/respond", `{"approval_id":"ap-1","decision":"cancel","answers":null}`),
			Request{RequestID: "r1", Method: MethodApproval, Params: `{"approval_id":"ap-1","decision":"cancel","answers":null}`,
				ApprovalID: "ap-1", Decision: "cancel"}},
		{"unknown keys ignored", `{"x":1,"request":{"request_id":"r1","method":"thread/list","future":[1],"params":{"limit":2,"other":{}}},"y":"z"}`,
			Request{RequestID: "r1", Method: MethodThreadList, Params: `{"limit":2,"other":{}}`, Limit: 2}},
		{"optional members null", `{"request":{"request_id":"r1","method":"thread/list","request_version":null,"sent_at":null,"source":null}}`,
			Request{RequestID: "r1", Method: MethodThreadList, Params: "{}", Limit: 50}},
		{"sent_at with offset, UTC kept", `{"request":{"request_id":"r1","method":"thread/start","sent_at":"2026-02-20T22:15:00+01:00"}}`,
			Request{RequestID: "r1", Method: MethodThreadStart, Params: "{}", SentAt: time.Date(2026, 2, 20, 21, 15, 0, 0, time.UTC)}},
		{"request_id escaped, 256 bytes", `{"request":{"request_id":"\u00e9` + strings.Repeat("x", 254) + `","method":"thread/start"}}`,
			Request{RequestID: "é" + strings.Repeat("x", 254), Method: MethodThreadStart, Params: "{}"}},
		{"request_id surrogate pair", `{"request":{"request_id":"\ud83d\ude00","method":"thread/start"}}`,
			Request{RequestID: "😀", Method: MethodThreadStart, Params: "{}"}},
		{"white space around", " \t" + reqLine("thread/start", "") + "\r\n", Request{RequestID: "r1", Method: MethodThreadStart, Params: "{}"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, p := Decode([]byte(c.line))
			if p != nil {
				t.Fatalf("%s: %+v", c.line, p)
			}
			if !reflect.DeepEqual(r, c.want) {
				t.Fatalf("%s\n got  %+v\n want %+v", c.line, r, c.want)
			}
			if got := lanes.Classify([]byte(c.line)); got != lanes.Lane004 {
				t.Fatalf("Classify = %q", got)
			}
		})
	}
}

type refusal struct {
	name, line string
	code, msg  string
	hasID      bool   // request_id "r1" read
	method     string // Problem.Method
}

func TestDecodeRefusals(t *testing.T) {
	const bad = CodeInvalidRequest
	tr := func(params string) string { return reqLine("turn/start", params) }
	th := `"threadId":"` + sid + `"`
	for _, c := range []refusal{
		// the line
		{"empty", ``, bad, "malformed JSON: the line is empty", false, ""},
		{"not JSON", `{"request":`, bad, "malformed JSON: the line is not valid JSON", false, ""},
		{"trailing garbage", `{"request":{}} x`, bad, "malformed JSON: the line is not valid JSON", false, ""},
		{"an array", `[{"request":{}}]`, bad, "malformed JSON: the line is not a JSON object", false, ""},
		{"a string", `"request"`, bad, "malformed JSON: the line is not a JSON object", false, ""},
		{"no request", `{"req":{}}`, bad, "the request envelope is missing", false, ""},
		{"request null", `{"request":null}`, bad, "the request envelope is missing", false, ""},
		{"request a string", `{"request":"thread/start"}`, bad, "request must be an object", false, ""},
		{"request twice", `{"request":{"request_id":"r1","method":"thread/start"},"request":{}}`, bad, "request appears more than once", false, ""},
		// request_id
		{"request_id missing", `{"request":{"method":"thread/start"}}`, bad, "request_id is required", false, MethodThreadStart},
		{"request_id null", `{"request":{"request_id":null,"method":"thread/start"}}`, bad, "request_id is required", false, MethodThreadStart},
		{"request_id number", `{"request":{"request_id":7,"method":"thread/start"}}`, bad, "request_id must be a string", false, MethodThreadStart},
		{"request_id empty", `{"request":{"request_id":"","method":"thread/start"}}`, bad, "request_id must not be empty", false, MethodThreadStart},
		{"request_id 257 bytes", `{"request":{"request_id":"` + strings.Repeat("x", 257) + `","method":"thread/start"}}`, bad,
			"request_id is 257 bytes, over the limit of 256", false, MethodThreadStart},
		{"request_id invalid UTF-8", "{\"request\":{\"request_id\":\"r\xff\",\"method\":\"thread/start\"}}", bad,
			"request_id must be valid UTF-8", false, MethodThreadStart},
		{"request_id lone surrogate", `{"request":{"request_id":"r\ud800","method":"thread/start"}}`, bad,
			"request_id must be valid UTF-8", false, MethodThreadStart},
		{"request_id lone low surrogate", `{"request":{"request_id":"\udc00r","method":"thread/start"}}`, bad,
			"request_id must be valid UTF-8", false, MethodThreadStart},
		{"request_id control", `{"request":{"request_id":"r\n1","method":"thread/start"}}`, bad,
			"request_id must not contain control characters", false, MethodThreadStart},
		{"request_id C1 control", `{"request":{"request_id":"r\u00851","method":"thread/start"}}`, bad,
			"request_id must not contain control characters", false, MethodThreadStart},
		{"request_id twice", `{"request":{"request_id":"r1","request_id":"r2","method":"thread/start"}}`, bad,
			"request_id appears more than once", false, MethodThreadStart},
		// the rest of the line
		{"invalid UTF-8 elsewhere", "{\"request\":{\"request_id\":\"r1\",\"method\":\"thread/start\",\"source\":\"\xc3\"}}", bad,
			"the line is not valid UTF-8", true, MethodThreadStart},
		{"method twice", `{"request":{"request_id":"r1","method":"thread/start","method":"thread/list"}}`, bad,
			"method appears more than once", true, MethodThreadStart},
		{"params twice", `{"request":{"request_id":"r1","method":"thread/start","params":{},"params":{}}}`, bad,
			"params appears more than once", true, MethodThreadStart},
		// request_version
		{"version v2", `{"request":{"request_id":"r1","method":"thread/start","request_version":"v2"}}`, bad,
			`request_version "v2" is not supported (v1)`, true, MethodThreadStart},
		{"version 1", `{"request":{"request_id":"r1","method":"thread/start","request_version":1}}`, bad,
			`request_version 1 is not supported (v1)`, true, MethodThreadStart},
		{"version escaped", `{"request":{"request_id":"r1","method":"thread/start","request_version":"\u0076\u0031"}}`, bad,
			`request_version "\u0076\u0031" is not supported (v1)`, true, MethodThreadStart},
		// method
		{"method missing", `{"request":{"request_id":"r1"}}`, bad, "method is required", true, ""},
		{"method null", `{"request":{"request_id":"r1","method":null}}`, bad, "method is required", true, ""},
		{"method number", `{"request":{"request_id":"r1","method":1}}`, bad, "method must be a string", true, ""},
		{"method empty", `{"request":{"request_id":"r1","method":""}}`, bad, "method must not be empty", true, ""},
		{"method unknown", reqLine("thread/archive", ""), CodeUnsupportedMethod, `method "thread/archive" is not allowlisted`, true, "thread/archive"},
		{"method case", reqLine("Thread/Start", ""), CodeUnsupportedMethod, `method "Thread/Start" is not allowlisted`, true, "Thread/Start"},
		{"method unknown, bad id", `{"request":{"request_id":"","method":"x"}}`, bad, "request_id must not be empty", false, "x"},
		// sent_at, source
		{"sent_at number", `{"request":{"request_id":"r1","method":"thread/start","sent_at":1}}`, bad, "sent_at must be a string", true, MethodThreadStart},
		{"sent_at bad", `{"request":{"request_id":"r1","method":"thread/start","sent_at":"yesterday"}}`, bad,
			`sent_at "yesterday" is not an RFC 3339 time`, true, MethodThreadStart},
		{"sent_at no zone", `{"request":{"request_id":"r1","method":"thread/start","sent_at":"2026-02-20T21:15:00"}}`, bad,
			`sent_at "2026-02-20T21:15:00" is not an RFC 3339 time`, true, MethodThreadStart},
		{"sent_at lower t", `{"request":{"request_id":"r1","method":"thread/start","sent_at":"2026-02-20t21:15:00Z"}}`, bad,
			`sent_at "2026-02-20t21:15:00Z" is not an RFC 3339 time`, true, MethodThreadStart},
		{"source number", `{"request":{"request_id":"r1","method":"thread/start","source":2}}`, bad, "source must be a string", true, MethodThreadStart},
		// params
		{"params array", reqLine("thread/start", `[]`), bad, "params must be an object", true, MethodThreadStart},
		{"params string", reqLine("thread/list", `"{}"`), bad, "params must be an object", true, MethodThreadList},
		// thread/start
		{"model empty", reqLine("thread/start", `{"model":""}`), bad, "model must not be empty", true, MethodThreadStart},
		{"model number", reqLine("thread/start", `{"model":4}`), bad, "model must be a string", true, MethodThreadStart},
		{"model twice", reqLine("thread/start", `{"model":"a","model":"b"}`), bad, "model appears more than once", true, MethodThreadStart},
		// thread/resume
		{"thread_id missing", reqLine("thread/resume", `{}`), bad, "thread_id is required", true, MethodThreadResume},
		{"thread_id no params", reqLine("thread/resume", ``), bad, "thread_id is required", true, MethodThreadResume},
		{"thread_id null", reqLine("thread/resume", `{"thread_id":null}`), bad, "thread_id is required", true, MethodThreadResume},
		{"thread_id number", reqLine("thread/resume", `{"thread_id":12}`), bad, "thread_id must be a string", true, MethodThreadResume},
		{"thread_id not a UUID", reqLine("thread/resume", `{"threadId":"thr_123"}`), bad, "thread_id must be a session id (a UUID)", true, MethodThreadResume},
		{"thread_id empty", reqLine("thread/resume", `{"threadId":""}`), bad, "thread_id must be a session id (a UUID)", true, MethodThreadResume},
		{"thread_id no hyphens", reqLine("thread/resume", `{"threadId":"`+strings.ReplaceAll(sid, "-", "")+`"}`), bad,
			"thread_id must be a session id (a UUID)", true, MethodThreadResume},
		{"thread_id braces", reqLine("thread/resume", `{"threadId":"{`+sid+`}"}`), bad,
			"thread_id must be a session id (a UUID)", true, MethodThreadResume},
		{"thread_id not hex", reqLine("thread/resume", `{"threadId":"`+strings.Replace(sid, "c", "g", 1)+`"}`), bad,
			"thread_id must be a session id (a UUID)", true, MethodThreadResume},
		{"thread_id spellings differ", reqLine("thread/resume", `{"threadId":"`+sid+`","thread_id":"`+strings.ToUpper(sid)+`"}`), bad,
			"threadId and thread_id differ", true, MethodThreadResume},
		{"threadId twice", reqLine("thread/resume", `{"threadId":"`+sid+`","threadId":"`+sid+`"}`), bad,
			"threadId appears more than once", true, MethodThreadResume},
		{"thread_id twice", reqLine("thread/read", `{"thread_id":"`+sid+`","thread_id":"`+sid+`"}`), bad,
			"thread_id appears more than once", true, MethodThreadRead},
		// turn/start
		{"turn/start no thread", tr(`{"input":[{"type":"text","text":"hi"}]}`), bad, "thread_id is required", true, MethodTurnStart},
		{"input missing", tr(`{` + th + `}`), bad, "input is required", true, MethodTurnStart},
		{"input null", tr(`{` + th + `,"input":null}`), bad, "input is required", true, MethodTurnStart},
		{"input object", tr(`{` + th + `,"input":{"type":"text","text":"hi"}}`), bad, "input must be an array", true, MethodTurnStart},
		{"input string", tr(`{` + th + `,"input":"hi"}`), bad, "input must be an array", true, MethodTurnStart},
		{"input empty", tr(`{` + th + `,"input":[ ]}`), bad, "input must not be empty", true, MethodTurnStart},
		{"input item not an object", tr(`{` + th + `,"input":[{"type":"text","text":"hi"},"hi"]}`), bad, "input[1] must be an object", true, MethodTurnStart},
		{"input type missing", tr(`{` + th + `,"input":[{"text":"hi"}]}`), bad, "input[0].type is required", true, MethodTurnStart},
		{"input type number", tr(`{` + th + `,"input":[{"type":1}]}`), bad, "input[0].type must be a string", true, MethodTurnStart},
		{"input type unknown", tr(`{` + th + `,"input":[{"type":"text","text":"a"},{"type":"text","text":"b"},{"type":"localImage","path":"/x.png"}]}`), bad,
			`input[2]: type "localImage" is not supported (text, image)`, true, MethodTurnStart},
		{"input type twice", tr(`{` + th + `,"input":[{"type":"image","type":"text","text":"a"}]}`), bad,
			"input[0].type appears more than once", true, MethodTurnStart},
		{"text missing", tr(`{` + th + `,"input":[{"type":"text"}]}`), bad, "input[0].text is required", true, MethodTurnStart},
		{"text number", tr(`{` + th + `,"input":[{"type":"text","text":5}]}`), bad, "input[0].text must be a string", true, MethodTurnStart},
		{"text twice", tr(`{` + th + `,"input":[{"type":"text","text":"a","text":"b"}]}`), bad, "input[0].text appears more than once", true, MethodTurnStart},
		{"all text empty", tr(`{` + th + `,"input":[{"type":"text","text":""},{"type":"text","text":""}]}`), bad,
			"input must hold some text or an image", true, MethodTurnStart},
		{"image url missing", tr(`{` + th + `,"input":[{"type":"image"}]}`), bad, "input[0].url is required", true, MethodTurnStart},
		{"image url number", tr(`{` + th + `,"input":[{"type":"image","url":1}]}`), bad, "input[0].url must be a string", true, MethodTurnStart},
		{"image image_url object", tr(`{` + th + `,"input":[{"type":"image","image_url":{"url":"data:image/png;base64,AAAA"}}]}`), bad,
			"input[0].image_url must be a string", true, MethodTurnStart},
		{"image urls differ", tr(`{` + th + `,"input":[{"type":"image","url":"data:image/png;base64,AAAA","image_url":"data:image/png;base64,BBBB"}]}`), bad,
			"input[0].url and input[0].image_url differ", true, MethodTurnStart},
		{"image https", tr(`{` + th + `,"input":[{"type":"image","url":"https://example.com/a.png"}]}`), bad,
			"input[0].url must be a data: URL of a PNG, JPEG, GIF or WebP image in base64 (data:image/png;base64,…)", true, MethodTurnStart},
		{"image svg", tr(`{` + th + `,"input":[{"type":"image","url":"data:image/svg+xml;base64,AAAA"}]}`), bad,
			"input[0].url must be a data: URL of a PNG, JPEG, GIF or WebP image in base64 (data:image/png;base64,…)", true, MethodTurnStart},
		{"image not base64", tr(`{` + th + `,"input":[{"type":"image","url":"data:image/png,AAAA"}]}`), bad,
			"input[0].url must be a data: URL of a PNG, JPEG, GIF or WebP image in base64 (data:image/png;base64,…)", true, MethodTurnStart},
		{"image empty data", tr(`{` + th + `,"input":[{"type":"image","url":"data:image/png;base64,"}]}`), bad,
			"input[0].url must be a data: URL of a PNG, JPEG, GIF or WebP image in base64 (data:image/png;base64,…)", true, MethodTurnStart},
		{"image bad padding", tr(`{` + th + `,"input":[{"type":"image","url":"data:image/png;base64,AAA"}]}`), bad,
			"input[0].url must be a data: URL of a PNG, JPEG, GIF or WebP image in base64 (data:image/png;base64,…)", true, MethodTurnStart},
		{"image bad alphabet", tr(`{` + th + `,"input":[{"type":"image","url":"data:image/png;base64,AA-_"}]}`), bad,
			"input[0].url must be a data: URL of a PNG, JPEG, GIF or WebP image in base64 (data:image/png;base64,…)", true, MethodTurnStart},
		{"image inner padding", tr(`{` + th + `,"input":[{"type":"image","url":"data:image/png;base64,A=AA"}]}`), bad,
			"input[0].url must be a data: URL of a PNG, JPEG, GIF or WebP image in base64 (data:image/png;base64,…)", true, MethodTurnStart},
		{"image_url bad", tr(`{` + th + `,"input":[{"type":"text","text":"x"},{"type":"image","image_url":"data:text/plain;base64,AAAA"}]}`), bad,
			"input[1].image_url must be a data: URL of a PNG, JPEG, GIF or WebP image in base64 (data:image/png;base64,…)", true, MethodTurnStart},
		{"turn/start model number", tr(`{` + th + `,"input":[{"type":"text","text":"a"}],"model":false}`), bad, "model must be a string", true, MethodTurnStart},
		// turn/steer
		{"steer expectedTurnId missing", reqLine("turn/steer", `{`+th+`,"input":[{"type":"text","text":"a"}]}`), bad, "expected_turn_id is required", true, MethodTurnSteer},
		{"steer expectedTurnId spellings differ", reqLine("turn/steer", `{`+th+`,"expectedTurnId":"a","expected_turn_id":"b","input":[{"type":"text","text":"a"}]}`), bad, "expectedTurnId and expected_turn_id differ", true, MethodTurnSteer},
		{"steer input missing", reqLine("turn/steer", `{`+th+`,"expectedTurnId":"a"}`), bad, "input is required", true, MethodTurnSteer},
		{"steer input empty text", reqLine("turn/steer", `{`+th+`,"expectedTurnId":"a","input":[{"type":"text","text":""}]}`), bad, "input must hold some text or an image", true, MethodTurnSteer},
		{"steer no thread", reqLine("turn/steer", `{"expectedTurnId":"a","input":[{"type":"text","text":"a"}]}`), bad, "thread_id is required", true, MethodTurnSteer},
		// turn/interrupt
		{"turn_id missing", reqLine("turn/interrupt", `{`+th+`}`), bad, "turn_id is required", true, MethodTurnInterrupt},
		{"turn_id empty", reqLine("turn/interrupt", `{`+th+`,"turnId":""}`), bad, "turn_id must not be empty", true, MethodTurnInterrupt},
		{"turn_id number", reqLine("turn/interrupt", `{`+th+`,"turnId":3}`), bad, "turn_id must be a string", true, MethodTurnInterrupt},
		{"turn_id spellings differ", reqLine("turn/interrupt", `{`+th+`,"turnId":"a","turn_id":"b"}`), bad, "turnId and turn_id differ", true, MethodTurnInterrupt},
		{"turn/interrupt no thread", reqLine("turn/interrupt", `{"turnId":"a"}`), bad, "thread_id is required", true, MethodTurnInterrupt},
		// thread/list
		{"limit 0", reqLine("thread/list", `{"limit":0}`), bad, "limit must be between 1 and 1000", true, MethodThreadList},
		{"limit 1001", reqLine("thread/list", `{"limit":1001}`), bad, "limit must be between 1 and 1000", true, MethodThreadList},
		{"limit negative", reqLine("thread/list", `{"limit":-5}`), bad, "limit must be between 1 and 1000", true, MethodThreadList},
		{"limit huge", reqLine("thread/list", `{"limit":99999999999999999999999}`), bad, "limit must be between 1 and 1000", true, MethodThreadList},
		{"limit fraction", reqLine("thread/list", `{"limit":10.0}`), bad, "limit must be an integer", true, MethodThreadList},
		{"limit exponent", reqLine("thread/list", `{"limit":1e2}`), bad, "limit must be an integer", true, MethodThreadList},
		{"limit string", reqLine("thread/list", `{"limit":"10"}`), bad, "limit must be an integer", true, MethodThreadList},
		{"cursor number", reqLine("thread/list", `{"cursor":1}`), bad, "cursor must be a string", true, MethodThreadList},
		// thread/read
		{"thread/read no thread", reqLine("thread/read", `{"includeTurns":true}`), bad, "thread_id is required", true, MethodThreadRead},
		{"includeTurns string", reqLine("thread/read", `{`+th+`,"includeTurns":"yes"}`), bad, "include_turns must be a boolean", true, MethodThreadRead},
		{"includeTurns differ", reqLine("thread/read", `{`+th+`,"includeTurns":true,"include_turns":false}`), bad,
			"includeTurns and include_turns differ", true, MethodThreadRead},
		// thread/rollback
		{"rollback no turns", reqLine("thread/rollback", `{`+th+`}`), bad, "num_turns is required", true, MethodThreadRollback},
		{"rollback zero", reqLine("thread/rollback", `{`+th+`,"numTurns":0}`), bad, "num_turns must be 1 or more", true, MethodThreadRollback},
		{"rollback negative", reqLine("thread/rollback", `{`+th+`,"numTurns":-2}`), bad, "num_turns must be 1 or more", true, MethodThreadRollback},
		{"rollback huge", reqLine("thread/rollback", `{`+th+`,"numTurns":99999999999}`), bad, "num_turns must be 1 or more", true, MethodThreadRollback},
		{"rollback fraction", reqLine("thread/rollback", `{`+th+`,"numTurns":1.5}`), bad, "num_turns must be an integer", true, MethodThreadRollback},
		{"rollback files string", reqLine("thread/rollback", `{`+th+`,"numTurns":1,"revertFiles":"yes"}`), bad, "revert_files must be a boolean", true, MethodThreadRollback},
		{"rollback dry differ", reqLine("thread/rollback", `{`+th+`,"numTurns":1,"dryRun":true,"dry_run":false}`), bad, "dryRun and dry_run differ", true, MethodThreadRollback},
		{"rollback no thread", reqLine("thread/rollback", `{"numTurns":1}`), bad, "thread_id is required", true, MethodThreadRollback},
		// ccbridge/events/replay
		{"after missing", reqLine("ccbridge/events/replay", `{}`), bad, "after is required", true, MethodReplay},
		{"after null", reqLine("ccbridge/events/replay", `{"after":null}`), bad, "after is required", true, MethodReplay},
		{"after negative", reqLine("ccbridge/events/replay", `{"after":-1}`), bad, "after must not be negative", true, MethodReplay},
		{"after fraction", reqLine("ccbridge/events/replay", `{"after":1.5}`), bad, "after must be an integer", true, MethodReplay},
		{"after exponent", reqLine("ccbridge/events/replay", `{"after":1E3}`), bad, "after must be an integer", true, MethodReplay},
		{"after string", reqLine("ccbridge/events/replay", `{"after":"3"}`), bad, "after must be an integer", true, MethodReplay},
		{"after over uint64", reqLine("ccbridge/events/replay", `{"after":18446744073709551616}`), bad, "after is out of range", true, MethodReplay},
		{"after twice", reqLine("ccbridge/events/replay", `{"after":1,"after":2}`), bad, "after appears more than once", true, MethodReplay},
		// ccbridge/approval/respond
		{"approval_id missing", reqLine("ccbridge/approval/respond", `{"decision":"accept"}`), bad, "approval_id is required", true, MethodApproval},
		{"approval_id empty", reqLine("ccbridge/approval/respond", `{"approval_id":"","decision":"accept"}`), bad, "approval_id must not be empty", true, MethodApproval},
		{"approval_id number", reqLine("ccbridge/approval/respond", `{"approvalId":1,"decision":"accept"}`), bad, "approval_id must be a string", true, MethodApproval},
		{"approval_id differ", reqLine("ccbridge/approval/respond", `{"approvalId":"a","approval_id":"b","decision":"accept"}`), bad,
			"approvalId and approval_id differ", true, MethodApproval},
		{"decision missing", reqLine("ccbridge/approval/respond", `{"approvalId":"a"}`), bad, "decision is required", true, MethodApproval},
		{"decision number", reqLine("ccbridge/approval/respond", `{"approvalId":"a","decision":1}`), bad, "decision must be a string", true, MethodApproval},
		{"decision unknown", reqLine("ccbridge/approval/respond", `{"approvalId":"a","decision":"approve"}`), bad,
			`decision "approve" is not one of accept, acceptForSession, decline, cancel`, true, MethodApproval},
		{"message number", reqLine("ccbridge/approval/respond", `{"approvalId":"a","decision":"decline","message":1}`), bad,
			"message must be a string", true, MethodApproval},
		{"answers array", reqLine("ccbridge/approval/respond", `{"approvalId":"a","decision":"accept","answers":[]}`), bad,
			"answers must be an object", true, MethodApproval},
	} {
		t.Run(c.name, func(t *testing.T) { checkRefusal(t, c) })
	}
}

func checkRefusal(t *testing.T, c refusal) {
	t.Helper()
	r, p := Decode([]byte(c.line))
	if p == nil {
		t.Fatalf("%s: accepted %+v", c.line, r)
	}
	if !reflect.DeepEqual(r, Request{}) {
		t.Fatalf("both a request and a problem: %+v", r)
	}
	id := ""
	if c.hasID {
		id = "r1"
	}
	want := Problem{RequestID: id, HasID: c.hasID, Method: c.method, Code: c.code, Message: c.msg}
	if *p != want {
		t.Fatalf("%s\n got  %+v\n want %+v", c.line, *p, want)
	}
	for _, out := range [][]byte{
		AppendProblem(nil, "w", p, occurredAt),
		AppendError(nil, "w", 1, p.RequestID, p.Method, p.Code, p.Message, Retryable(p.Code), "", occurredAt),
	} {
		if !validLine(out) {
			t.Fatalf("wrote %q", out)
		}
	}
}

// TestDecodeNoReply: a worker.* line echoed back is not answered.
func TestDecodeNoReply(t *testing.T) {
	for _, line := range []string{
		`{"event_type":"worker.response","seq":3,"worker_id":"w","payload":{"request_id":"r1","method":"thread/start","ok":true,"response":{},"occurred_at":"2026-02-20T21:15:01.234Z"}}`,
		`{"event_type":"worker.error","worker_id":"w","payload":{"request_id":null,"method":null,"code":"invalid_request","message":"x","retryable":false,"occurred_at":"2026-02-20T21:15:01.234Z"}}`,
		`{"event_type":"worker.x"}`,
		`{"event_type":"w\u006frker.event"}`,
		`{"event_type":"worker.event","request":{"request_id":"r1","method":"thread/start"}}`, // the event_type decides
	} {
		_, p := Decode([]byte(line))
		if p == nil || !p.NoReply || p.HasID || p.Code != CodeInvalidRequest || !strings.HasPrefix(p.Message, "the line is a worker event") {
			t.Errorf("%s: %+v", line, p)
		}
		if got := lanes.Classify([]byte(line)); got != lanes.Lane004 {
			t.Errorf("lanes.Classify(%s) = %q", line, got)
		}
	}
	// not worker.*: answered
	for _, line := range []string{`{"event_type":"workers","request":{}}`, `{"event_type":7}`, `{"event_type":"Worker.response"}`} {
		if _, p := Decode([]byte(line)); p == nil || p.NoReply {
			t.Errorf("%s: %+v", line, p)
		}
	}
	// every line the lane writes is NoReply when read back
	for _, out := range [][]byte{
		AppendResponse(nil, "w", 1, "r1", "thread/start", `{}`, occurredAt),
		AppendError(nil, "w", 2, "r1", "thread/start", CodeTimeout, "m", true, `{"a":1}`, occurredAt),
		AppendEvent(nil, "w", 3, "turn/started", `{}`, occurredAt),
		AppendCursorStale(nil, "w", 1, 5, 9, occurredAt),
		AppendProblem(nil, "w", &Problem{Code: CodeInvalidRequest, Message: "m"}, occurredAt),
	} {
		if _, p := Decode(out); p == nil || !p.NoReply {
			t.Errorf("%s: %+v", out, p)
		}
		if got := lanes.Classify(out); got != lanes.Lane004 {
			t.Errorf("lanes.Classify(%s) = %q", out, got)
		}
	}
}

// TestDecodeDuplicates: a member the lane reads given twice is refused
// (not first-wins), at every level; other members may repeat.
func TestDecodeDuplicates(t *testing.T) {
	for _, line := range []string{
		`{"request":{"request_id":"r1","method":"thread/list","source":"a","source":"b"}}`,
		`{"request":{"request_id":"r1","method":"thread/list","sent_at":"2026-02-20T21:15:00Z","sent_at":"2026-02-20T21:15:00Z"}}`,
		`{"request":{"request_id":"r1","method":"thread/list","request_version":"v1","request_version":"v1"}}`,
		reqLine("thread/list", `{"limit":5,"limit":5}`),
		reqLine("thread/list", `{"cursor":"a","cursor":"b"}`),
		reqLine("ccbridge/approval/respond", `{"approvalId":"a","decision":"accept","decision":"decline"}`),
	} {
		if _, p := Decode([]byte(line)); p == nil || !strings.HasSuffix(p.Message, " appears more than once") || !p.HasID {
			t.Errorf("%s: %+v", line, p)
		}
	}
	for _, line := range []string{
		`{"request":{"request_id":"r1","method":"thread/list","x":1,"x":2},"y":1,"y":2,"event_type":"a","event_type":"worker.x"}`,
		reqLine("thread/list", `{"model":"a","model":"b","other":1,"other":2}`), // not thread/list's
	} {
		if _, p := Decode([]byte(line)); p != nil {
			t.Errorf("%s: %+v", line, p)
		}
	}
}

func TestRetryable(t *testing.T) {
	for code, want := range map[string]bool{
		CodeUnauthorized: false, CodeForbidden: false, CodeInvalidRequest: false, CodeUnsupportedMethod: false,
		CodeConflict: false, CodeWorkerUnavailable: true, CodeTimeout: true, CodeInternalError: true, "": false,
	} {
		if Retryable(code) != want {
			t.Errorf("Retryable(%q) != %v", code, want)
		}
	}
}

func TestAppendGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		got  []byte
		want string
		keys []string
	}{
		{"response", AppendResponse(nil, "w-1", 7, "req-1", "thread/start", `{"thread":{"id":"`+sid+`"}}`, occurredAt),
			`{"event_type":"worker.response","seq":7,"worker_id":"w-1","payload":{"request_id":"req-1","method":"thread/start",` +
				`"ok":true,"response":{"thread":{"id":"` + sid + `"}},"occurred_at":"2026-02-20T20:15:01.234Z"}}`,
			[]string{"request_id", "method", "ok", "response", "occurred_at"}},
		{"response multi-line raw", AppendResponse(nil, "w-1", 8, "req-2", "thread/list", "{\n  \"data\": []\r\n}", occurredAt),
			`{"event_type":"worker.response","seq":8,"worker_id":"w-1","payload":{"request_id":"req-2","method":"thread/list",` +
				`"ok":true,"response":{  "data": []},"occurred_at":"2026-02-20T20:15:01.234Z"}}`,
			[]string{"request_id", "method", "ok", "response", "occurred_at"}},
		{"response empty", AppendResponse(nil, "w-1", 9, "req-3", "turn/interrupt", "", occurredAt),
			`{"event_type":"worker.response","seq":9,"worker_id":"w-1","payload":{"request_id":"req-3","method":"turn/interrupt",` +
				`"ok":true,"response":null,"occurred_at":"2026-02-20T20:15:01.234Z"}}`,
			[]string{"request_id", "method", "ok", "response", "occurred_at"}},
		{"error with details", AppendError(nil, "w-1", 10, "req-4", "turn/start", CodeConflict, "a turn is running", false,
			`{"turn_id":"t-1"}`, occurredAt),
			`{"event_type":"worker.error","seq":10,"worker_id":"w-1","payload":{"request_id":"req-4","method":"turn/start",` +
				`"code":"conflict","message":"a turn is running","retryable":false,"details":{"turn_id":"t-1"},` +
				`"occurred_at":"2026-02-20T20:15:01.234Z"}}`,
			[]string{"request_id", "method", "code", "message", "retryable", "details", "occurred_at"}},
		{"error without details", AppendError(nil, "w-1", 11, "req-5", "thread/read", CodeTimeout, "no answer in 30s", true, "", occurredAt),
			`{"event_type":"worker.error","seq":11,"worker_id":"w-1","payload":{"request_id":"req-5","method":"thread/read",` +
				`"code":"timeout","message":"no answer in 30s","retryable":true,"occurred_at":"2026-02-20T20:15:01.234Z"}}`,
			[]string{"request_id", "method", "code", "message", "retryable", "occurred_at"}},
		{"event", AppendEvent(nil, "w-1", 12, "item/agentMessage/delta", `{"delta":"Hi"}`, occurredAt),
			`{"event_type":"worker.event","seq":12,"worker_id":"w-1","payload":{"method":"item/agentMessage/delta",` +
				`"params":{"delta":"Hi"},"occurred_at":"2026-02-20T20:15:01.234Z"}}`,
			[]string{"method", "params", "occurred_at"}},
		{"event no params", AppendEvent(nil, "w-1", 13, "turn/completed", "", occurredAt),
			`{"event_type":"worker.event","seq":13,"worker_id":"w-1","payload":{"method":"turn/completed",` +
				`"params":{},"occurred_at":"2026-02-20T20:15:01.234Z"}}`,
			[]string{"method", "params", "occurred_at"}},
		{"cursor stale", AppendCursorStale(nil, "w-1", 3, 100, 18446744073709551615, occurredAt),
			`{"event_type":"worker.cursor_stale","worker_id":"w-1","payload":{"after":3,"resume_after":100,` +
				`"latest_seq":18446744073709551615,"occurred_at":"2026-02-20T20:15:01.234Z"}}`,
			[]string{"after", "resume_after", "latest_seq", "occurred_at"}},
		{"problem without id", AppendProblem(nil, "w-1", &Problem{Code: CodeInvalidRequest,
			Message: "malformed JSON: the line is not valid JSON"}, occurredAt),
			`{"event_type":"worker.error","worker_id":"w-1","payload":{"request_id":null,"method":null,"code":"invalid_request",` +
				`"message":"malformed JSON: the line is not valid JSON","retryable":false,"occurred_at":"2026-02-20T20:15:01.234Z"}}`,
			[]string{"request_id", "method", "code", "message", "retryable", "occurred_at"}},
		{"problem without id, with method", AppendProblem(nil, "w-1", &Problem{Method: "thread/start", Code: CodeInvalidRequest,
			Message: "request_id is required"}, occurredAt),
			`{"event_type":"worker.error","worker_id":"w-1","payload":{"request_id":null,"method":"thread/start","code":"invalid_request",` +
				`"message":"request_id is required","retryable":false,"occurred_at":"2026-02-20T20:15:01.234Z"}}`,
			[]string{"request_id", "method", "code", "message", "retryable", "occurred_at"}},
		{"problem with id", AppendProblem(nil, "w-1", &Problem{RequestID: "req-6", HasID: true, Method: "thread/archive",
			Code: CodeUnsupportedMethod, Message: `method "thread/archive" is not allowlisted`}, occurredAt),
			`{"event_type":"worker.error","worker_id":"w-1","payload":{"request_id":"req-6","method":"thread/archive","code":"unsupported_method",` +
				`"message":"method \"thread/archive\" is not allowlisted","retryable":false,"occurred_at":"2026-02-20T20:15:01.234Z"}}`,
			[]string{"request_id", "method", "code", "message", "retryable", "occurred_at"}},
		{"problem with an empty id, retryable", AppendProblem(nil, "w-1", &Problem{RequestID: "", HasID: true,
			Code: CodeWorkerUnavailable, Message: "no lane 004"}, occurredAt),
			`{"event_type":"worker.error","worker_id":"w-1","payload":{"request_id":"","method":null,"code":"worker_unavailable",` +
				`"message":"no lane 004","retryable":true,"occurred_at":"2026-02-20T20:15:01.234Z"}}`,
			[]string{"request_id", "method", "code", "message", "retryable", "occurred_at"}},
		{"problem empty code", AppendProblem(nil, "w-1", &Problem{Message: "m"}, occurredAt),
			`{"event_type":"worker.error","worker_id":"w-1","payload":{"request_id":null,"method":null,"code":"invalid_request",` +
				`"message":"m","retryable":false,"occurred_at":"2026-02-20T20:15:01.234Z"}}`,
			[]string{"request_id", "method", "code", "message", "retryable", "occurred_at"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if string(c.got) != c.want {
				t.Fatalf("got  %s\nwant %s", c.got, c.want)
			}
			if !json.Valid(c.got) {
				t.Fatalf("not valid JSON: %s", c.got)
			}
			keys, m := fieldsOf(t, c.got)
			wantTop := []string{"event_type", "seq", "worker_id", "payload"}
			if strings.Contains(c.name, "problem") || strings.Contains(c.name, "cursor") {
				wantTop = []string{"event_type", "worker_id", "payload"}
			}
			if !reflect.DeepEqual(keys, wantTop) {
				t.Fatalf("keys %q", keys)
			}
			if _, ok := m["payload"].(map[string]any); !ok {
				t.Fatalf("payload %v", m["payload"])
			}
			pk := payloadKeys(t, c.got)
			if !reflect.DeepEqual(pk, c.keys) {
				t.Fatalf("payload keys %q, want %q", pk, c.keys)
			}
		})
	}
}

// payloadKeys returns the keys of line's payload in the order written.
func payloadKeys(t *testing.T, line []byte) []string {
	t.Helper()
	var top struct{ Payload json.RawMessage }
	if err := json.Unmarshal(line, &top); err != nil {
		t.Fatal(err)
	}
	keys, _ := fieldsOf(t, top.Payload)
	return keys
}

// TestAppendInvalidUTF8: whatever the strings hold, and invalid UTF-8
// in a raw part, the output is one valid UTF-8 JSON line.
func TestAppendInvalidUTF8(t *testing.T) {
	bad := "a\xffb\xc3\"\\\n\u2028\x00"
	for _, out := range [][]byte{
		AppendResponse(nil, bad, 1, bad, bad, "{\"k\":\"v\xfe\"}", occurredAt),
		AppendError(nil, bad, 2, bad, bad, bad, bad, false, "{\"k\":\"\xed\xa0\x80\"}", occurredAt),
		AppendEvent(nil, bad, 3, bad, "{\"k\":\"\xc0\xaf\"}", occurredAt),
		AppendCursorStale(nil, bad, 1, 2, 3, occurredAt),
		AppendProblem(nil, bad, &Problem{RequestID: bad, HasID: true, Method: bad, Code: bad, Message: bad}, occurredAt),
	} {
		if !utf8.Valid(out) || !validLine(out) {
			t.Fatalf("wrote %q", out)
		}
		var m struct {
			WorkerID string `json:"worker_id"`
		}
		if err := json.Unmarshal(out, &m); err != nil || m.WorkerID != "a\ufffdb\ufffd\"\\\n\u2028\x00" {
			t.Fatalf("%s: worker_id %q, %v", out, m.WorkerID, err)
		}
	}
	got := string(AppendProblem(nil, "w", &Problem{RequestID: "r\xff", HasID: true, Message: "m\x01"}, occurredAt))
	want := `{"event_type":"worker.error","worker_id":"w","payload":{"request_id":"r\ufffd","method":null,"code":"invalid_request",` +
		`"message":"m\u0001","retryable":false,"occurred_at":"2026-02-20T20:15:01.234Z"}}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestAppendAllocs(t *testing.T) {
	buf := make([]byte, 0, 1024)
	p := &Problem{RequestID: "r1", HasID: true, Method: MethodTurnStart, Code: CodeInvalidRequest, Message: "input is required"}
	for name, fn := range map[string]func(){
		"response": func() { buf = AppendResponse(buf[:0], "w", 1, "r1", MethodThreadStart, `{"thread":{}}`, occurredAt) },
		"error": func() {
			buf = AppendError(buf[:0], "w", 2, "r1", MethodTurnStart, CodeTimeout, "m", true, `{"a":1}`, occurredAt)
		},
		"event":   func() { buf = AppendEvent(buf[:0], "w", 3, "turn/started", `{"turn":{}}`, occurredAt) },
		"stale":   func() { buf = AppendCursorStale(buf[:0], "w", 1, 2, 3, occurredAt) },
		"problem": func() { buf = AppendProblem(buf[:0], "w", p, occurredAt) },
	} {
		if n := testing.AllocsPerRun(100, fn); n != 0 {
			t.Errorf("%s: %v allocations", name, n)
		}
	}
}

// TestDecodeAllocs: Decode allocates the copies it keeps and no
// more: for turn/start the request_id, thread_id, params, the input slice,
// one string per text item, the image data and the model.
func TestDecodeAllocs(t *testing.T) {
	for line, want := range map[string]float64{
		reqTurnStart: 8, // and the source
		reqLine("thread/resume", `{"threadId":"`+sid+`"}`): 3,
		reqLine("thread/list", ""):                         1,
	} {
		b := []byte(line)
		if n := testing.AllocsPerRun(100, func() { Decode(b) }); n != want {
			t.Errorf("%s: %v allocations, want %v", line, n, want)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	line := []byte(reqTurnStart)
	b.ReportAllocs()
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if _, p := Decode(line); p != nil {
			b.Fatal(p)
		}
	}
}
