package control

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

const (
	sid004 = "0c5e3f4e-9a1b-4c2d-8e7f-123456789abc"
	png004 = "iVBORw0KGgoAAAANSUhEUg=="

	req004TurnStart = `{"request":{"request_id":"req-turn-1","method":"turn/start","params":{"threadId":"` + sid004 + `",` +
		`"input":[{"type":"text","text":"Summarise the diff"},{"type":"image","url":"data:image/png;base64,` + png004 + `"}],` +
		`"model":"opus"},"request_version":"v1","sent_at":"2026-02-20T21:15:00.250Z","source":"atm"}}`
)

// line004 is a request line for method with request_id "r1" and params
// (raw JSON; "" leaves params out).
func line004(method, params string) string {
	s := `{"request":{"request_id":"r1","method":"` + method + `"`
	if params != "" {
		s += `,"params":` + params
	}
	return s + `}}`
}

var at004 = time.Date(2026, 2, 20, 21, 15, 1, 234567891, time.FixedZone("CET", 3600))

func TestDecode004Accepts(t *testing.T) {
	for _, c := range []struct {
		name, line string
		want       Request004
	}{
		{"turn/start in full", req004TurnStart, Request004{RequestID: "req-turn-1", Method: Method004TurnStart, Version: "v1",
			Source: "atm", SentAt: time.Date(2026, 2, 20, 21, 15, 0, 250e6, time.UTC),
			Params: `{"threadId":"` + sid004 + `","input":[{"type":"text","text":"Summarise the diff"},` +
				`{"type":"image","url":"data:image/png;base64,` + png004 + `"}],"model":"opus"}`,
			ThreadID: sid004, Model: "opus",
			Input: []Input004{{Kind: "text", Text: "Summarise the diff"}, {Kind: "image", MediaType: "image/png", Data: png004}}}},
		{"thread/start, no params", line004("thread/start", ""), Request004{RequestID: "r1", Method: Method004ThreadStart, Params: "{}"}},
		{"params null", line004("thread/start", "null"), Request004{RequestID: "r1", Method: Method004ThreadStart, Params: "{}"}},
		{"thread/start model", line004("thread/start", `{"model":"sonnet","cwd":"/x"}`),
			Request004{RequestID: "r1", Method: Method004ThreadStart, Params: `{"model":"sonnet","cwd":"/x"}`, Model: "sonnet"}},
		{"thread/resume snake", line004("thread/resume", `{"thread_id":"`+sid004+`"}`),
			Request004{RequestID: "r1", Method: Method004ThreadResume, Params: `{"thread_id":"` + sid004 + `"}`, ThreadID: sid004}},
		{"thread/resume upper case, lowered", line004("thread/resume", `{"threadId":"`+strings.ToUpper(sid004)+`"}`),
			Request004{RequestID: "r1", Method: Method004ThreadResume, Params: `{"threadId":"` + strings.ToUpper(sid004) + `"}`, ThreadID: sid004}},
		{"both spellings agree", line004("thread/resume", `{"threadId":"`+sid004+`","thread_id":"\u0030`+sid004[1:]+`"}`),
			Request004{RequestID: "r1", Method: Method004ThreadResume, Params: `{"threadId":"` + sid004 + `","thread_id":"\u0030` + sid004[1:] + `"}`, ThreadID: sid004}},
		{"one spelling null", line004("thread/resume", `{"threadId":null,"thread_id":"`+sid004+`"}`),
			Request004{RequestID: "r1", Method: Method004ThreadResume, Params: `{"threadId":null,"thread_id":"` + sid004 + `"}`, ThreadID: sid004}},
		{"turn/start image_url, jpeg upper case, empty model", line004("turn/start", `{"thread_id":"`+sid004+`","input":[{"type":"text","text":""},`+
			`{"type":"image","image_url":"DATA:Image/JPEG;BASE64,/9j/"}],"model":""}`),
			Request004{RequestID: "r1", Method: Method004TurnStart, ThreadID: sid004,
				Params: `{"thread_id":"` + sid004 + `","input":[{"type":"text","text":""},{"type":"image","image_url":"DATA:Image/JPEG;BASE64,/9j/"}],"model":""}`,
				Input:  []Input004{{Kind: "text"}, {Kind: "image", MediaType: "image/jpeg", Data: "/9j/"}}}},
		{"turn/start escaped text and url", line004("turn/start", `{"threadId":"`+sid004+`","input":[{"type":"text","text":"a\nb \u00e9"},`+
			`{"type":"image","url":"data:image/webp;base64,UklG\/w=="}]}`),
			Request004{RequestID: "r1", Method: Method004TurnStart, ThreadID: sid004,
				Params: `{"threadId":"` + sid004 + `","input":[{"type":"text","text":"a\nb \u00e9"},{"type":"image","url":"data:image/webp;base64,UklG\/w=="}]}`,
				Input:  []Input004{{Kind: "text", Text: "a\nb é"}, {Kind: "image", MediaType: "image/webp", Data: "UklG/w=="}}}},
		{"turn/interrupt", line004("turn/interrupt", `{"threadId":"`+sid004+`","turn_id":"turn-7"}`),
			Request004{RequestID: "r1", Method: Method004TurnInterrupt, Params: `{"threadId":"` + sid004 + `","turn_id":"turn-7"}`,
				ThreadID: sid004, TurnID: "turn-7"}},
		{"thread/list default", line004("thread/list", `{}`), Request004{RequestID: "r1", Method: Method004ThreadList, Params: "{}", Limit: 50}},
		{"thread/list limit cursor", line004("thread/list", `{"limit":1000,"cursor":"c-2"}`),
			Request004{RequestID: "r1", Method: Method004ThreadList, Params: `{"limit":1000,"cursor":"c-2"}`, Limit: 1000, Cursor: "c-2"}},
		{"thread/list limit null", line004("thread/list", `{"limit":null}`),
			Request004{RequestID: "r1", Method: Method004ThreadList, Params: `{"limit":null}`, Limit: 50}},
		{"thread/read", line004("thread/read", `{"threadId":"`+sid004+`","includeTurns":true}`),
			Request004{RequestID: "r1", Method: Method004ThreadRead, Params: `{"threadId":"` + sid004 + `","includeTurns":true}`, ThreadID: sid004, IncludeTurns: true}},
		{"thread/read snake", line004("thread/read", `{"thread_id":"`+sid004+`","include_turns":false}`),
			Request004{RequestID: "r1", Method: Method004ThreadRead, Params: `{"thread_id":"` + sid004 + `","include_turns":false}`, ThreadID: sid004}},
		{"replay", line004("ccbridge/events/replay", `{"after":18446744073709551615}`),
			Request004{RequestID: "r1", Method: Method004Replay, Params: `{"after":18446744073709551615}`, After: 1<<64 - 1}},
		{"replay 0", line004("ccbridge/events/replay", `{"after":0}`),
			Request004{RequestID: "r1", Method: Method004Replay, Params: `{"after":0}`}},
		{"approval", line004("ccbridge/approval/respond", `{"approvalId":"ap-1","decision":"acceptForSession","message":"ok","answers":{"q":["a"]}}`),
			Request004{RequestID: "r1", Method: Method004Approval, Params: `{"approvalId":"ap-1","decision":"acceptForSession","message":"ok","answers":{"q":["a"]}}`,
				ApprovalID: "ap-1", Decision: "acceptForSession", Message: "ok", Answers: `{"q":["a"]}`}},
		{"approval snake, answers null", line004("ccbridge/approval/respond", `{"approval_id":"ap-1","decision":"cancel","answers":null}`),
			Request004{RequestID: "r1", Method: Method004Approval, Params: `{"approval_id":"ap-1","decision":"cancel","answers":null}`,
				ApprovalID: "ap-1", Decision: "cancel"}},
		{"unknown keys ignored", `{"x":1,"request":{"request_id":"r1","method":"thread/list","future":[1],"params":{"limit":2,"other":{}}},"y":"z"}`,
			Request004{RequestID: "r1", Method: Method004ThreadList, Params: `{"limit":2,"other":{}}`, Limit: 2}},
		{"optional members null", `{"request":{"request_id":"r1","method":"thread/list","request_version":null,"sent_at":null,"source":null}}`,
			Request004{RequestID: "r1", Method: Method004ThreadList, Params: "{}", Limit: 50}},
		{"sent_at with offset, UTC kept", `{"request":{"request_id":"r1","method":"thread/start","sent_at":"2026-02-20T22:15:00+01:00"}}`,
			Request004{RequestID: "r1", Method: Method004ThreadStart, Params: "{}", SentAt: time.Date(2026, 2, 20, 21, 15, 0, 0, time.UTC)}},
		{"request_id escaped, 256 bytes", `{"request":{"request_id":"\u00e9` + strings.Repeat("x", 254) + `","method":"thread/start"}}`,
			Request004{RequestID: "é" + strings.Repeat("x", 254), Method: Method004ThreadStart, Params: "{}"}},
		{"request_id surrogate pair", `{"request":{"request_id":"\ud83d\ude00","method":"thread/start"}}`,
			Request004{RequestID: "😀", Method: Method004ThreadStart, Params: "{}"}},
		{"white space around", " \t" + line004("thread/start", "") + "\r\n", Request004{RequestID: "r1", Method: Method004ThreadStart, Params: "{}"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, p := Decode004([]byte(c.line))
			if p != nil {
				t.Fatalf("%s: %+v", c.line, p)
			}
			if !reflect.DeepEqual(r, c.want) {
				t.Fatalf("%s\n got  %+v\n want %+v", c.line, r, c.want)
			}
			if got := Classify([]byte(c.line)); got != Lane004 {
				t.Fatalf("Classify = %q", got)
			}
		})
	}
}

type refusal004 struct {
	name, line string
	code, msg  string
	hasID      bool   // request_id "r1" read
	method     string // Problem004.Method
}

func TestDecode004Refusals(t *testing.T) {
	const bad = Code004InvalidRequest
	tr := func(params string) string { return line004("turn/start", params) }
	th := `"threadId":"` + sid004 + `"`
	for _, c := range []refusal004{
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
		{"request_id missing", `{"request":{"method":"thread/start"}}`, bad, "request_id is required", false, Method004ThreadStart},
		{"request_id null", `{"request":{"request_id":null,"method":"thread/start"}}`, bad, "request_id is required", false, Method004ThreadStart},
		{"request_id number", `{"request":{"request_id":7,"method":"thread/start"}}`, bad, "request_id must be a string", false, Method004ThreadStart},
		{"request_id empty", `{"request":{"request_id":"","method":"thread/start"}}`, bad, "request_id must not be empty", false, Method004ThreadStart},
		{"request_id 257 bytes", `{"request":{"request_id":"` + strings.Repeat("x", 257) + `","method":"thread/start"}}`, bad,
			"request_id is 257 bytes, over the limit of 256", false, Method004ThreadStart},
		{"request_id invalid UTF-8", "{\"request\":{\"request_id\":\"r\xff\",\"method\":\"thread/start\"}}", bad,
			"request_id must be valid UTF-8", false, Method004ThreadStart},
		{"request_id lone surrogate", `{"request":{"request_id":"r\ud800","method":"thread/start"}}`, bad,
			"request_id must be valid UTF-8", false, Method004ThreadStart},
		{"request_id lone low surrogate", `{"request":{"request_id":"\udc00r","method":"thread/start"}}`, bad,
			"request_id must be valid UTF-8", false, Method004ThreadStart},
		{"request_id control", `{"request":{"request_id":"r\n1","method":"thread/start"}}`, bad,
			"request_id must not contain control characters", false, Method004ThreadStart},
		{"request_id C1 control", `{"request":{"request_id":"r\u00851","method":"thread/start"}}`, bad,
			"request_id must not contain control characters", false, Method004ThreadStart},
		{"request_id twice", `{"request":{"request_id":"r1","request_id":"r2","method":"thread/start"}}`, bad,
			"request_id appears more than once", false, Method004ThreadStart},
		// the rest of the line
		{"invalid UTF-8 elsewhere", "{\"request\":{\"request_id\":\"r1\",\"method\":\"thread/start\",\"source\":\"\xc3\"}}", bad,
			"the line is not valid UTF-8", true, Method004ThreadStart},
		{"method twice", `{"request":{"request_id":"r1","method":"thread/start","method":"thread/list"}}`, bad,
			"method appears more than once", true, Method004ThreadStart},
		{"params twice", `{"request":{"request_id":"r1","method":"thread/start","params":{},"params":{}}}`, bad,
			"params appears more than once", true, Method004ThreadStart},
		// request_version
		{"version v2", `{"request":{"request_id":"r1","method":"thread/start","request_version":"v2"}}`, bad,
			`request_version "v2" is not supported (v1)`, true, Method004ThreadStart},
		{"version 1", `{"request":{"request_id":"r1","method":"thread/start","request_version":1}}`, bad,
			`request_version 1 is not supported (v1)`, true, Method004ThreadStart},
		{"version escaped", `{"request":{"request_id":"r1","method":"thread/start","request_version":"\u0076\u0031"}}`, bad,
			`request_version "\u0076\u0031" is not supported (v1)`, true, Method004ThreadStart},
		// method
		{"method missing", `{"request":{"request_id":"r1"}}`, bad, "method is required", true, ""},
		{"method null", `{"request":{"request_id":"r1","method":null}}`, bad, "method is required", true, ""},
		{"method number", `{"request":{"request_id":"r1","method":1}}`, bad, "method must be a string", true, ""},
		{"method empty", `{"request":{"request_id":"r1","method":""}}`, bad, "method must not be empty", true, ""},
		{"method unknown", line004("thread/archive", ""), Code004UnsupportedMethod, `method "thread/archive" is not allowlisted`, true, "thread/archive"},
		{"method case", line004("Thread/Start", ""), Code004UnsupportedMethod, `method "Thread/Start" is not allowlisted`, true, "Thread/Start"},
		{"method unknown, bad id", `{"request":{"request_id":"","method":"x"}}`, bad, "request_id must not be empty", false, "x"},
		// sent_at, source
		{"sent_at number", `{"request":{"request_id":"r1","method":"thread/start","sent_at":1}}`, bad, "sent_at must be a string", true, Method004ThreadStart},
		{"sent_at bad", `{"request":{"request_id":"r1","method":"thread/start","sent_at":"yesterday"}}`, bad,
			`sent_at "yesterday" is not an RFC 3339 time`, true, Method004ThreadStart},
		{"sent_at no zone", `{"request":{"request_id":"r1","method":"thread/start","sent_at":"2026-02-20T21:15:00"}}`, bad,
			`sent_at "2026-02-20T21:15:00" is not an RFC 3339 time`, true, Method004ThreadStart},
		{"sent_at lower t", `{"request":{"request_id":"r1","method":"thread/start","sent_at":"2026-02-20t21:15:00Z"}}`, bad,
			`sent_at "2026-02-20t21:15:00Z" is not an RFC 3339 time`, true, Method004ThreadStart},
		{"source number", `{"request":{"request_id":"r1","method":"thread/start","source":2}}`, bad, "source must be a string", true, Method004ThreadStart},
		// params
		{"params array", line004("thread/start", `[]`), bad, "params must be an object", true, Method004ThreadStart},
		{"params string", line004("thread/list", `"{}"`), bad, "params must be an object", true, Method004ThreadList},
		// thread/start
		{"model empty", line004("thread/start", `{"model":""}`), bad, "model must not be empty", true, Method004ThreadStart},
		{"model number", line004("thread/start", `{"model":4}`), bad, "model must be a string", true, Method004ThreadStart},
		{"model twice", line004("thread/start", `{"model":"a","model":"b"}`), bad, "model appears more than once", true, Method004ThreadStart},
		// thread/resume
		{"thread_id missing", line004("thread/resume", `{}`), bad, "thread_id is required", true, Method004ThreadResume},
		{"thread_id no params", line004("thread/resume", ``), bad, "thread_id is required", true, Method004ThreadResume},
		{"thread_id null", line004("thread/resume", `{"thread_id":null}`), bad, "thread_id is required", true, Method004ThreadResume},
		{"thread_id number", line004("thread/resume", `{"thread_id":12}`), bad, "thread_id must be a string", true, Method004ThreadResume},
		{"thread_id not a UUID", line004("thread/resume", `{"threadId":"thr_123"}`), bad, "thread_id must be a session id (a UUID)", true, Method004ThreadResume},
		{"thread_id empty", line004("thread/resume", `{"threadId":""}`), bad, "thread_id must be a session id (a UUID)", true, Method004ThreadResume},
		{"thread_id no hyphens", line004("thread/resume", `{"threadId":"`+strings.ReplaceAll(sid004, "-", "")+`"}`), bad,
			"thread_id must be a session id (a UUID)", true, Method004ThreadResume},
		{"thread_id braces", line004("thread/resume", `{"threadId":"{`+sid004+`}"}`), bad,
			"thread_id must be a session id (a UUID)", true, Method004ThreadResume},
		{"thread_id not hex", line004("thread/resume", `{"threadId":"`+strings.Replace(sid004, "c", "g", 1)+`"}`), bad,
			"thread_id must be a session id (a UUID)", true, Method004ThreadResume},
		{"thread_id spellings differ", line004("thread/resume", `{"threadId":"`+sid004+`","thread_id":"`+strings.ToUpper(sid004)+`"}`), bad,
			"threadId and thread_id differ", true, Method004ThreadResume},
		{"threadId twice", line004("thread/resume", `{"threadId":"`+sid004+`","threadId":"`+sid004+`"}`), bad,
			"threadId appears more than once", true, Method004ThreadResume},
		{"thread_id twice", line004("thread/read", `{"thread_id":"`+sid004+`","thread_id":"`+sid004+`"}`), bad,
			"thread_id appears more than once", true, Method004ThreadRead},
		// turn/start
		{"turn/start no thread", tr(`{"input":[{"type":"text","text":"hi"}]}`), bad, "thread_id is required", true, Method004TurnStart},
		{"input missing", tr(`{` + th + `}`), bad, "input is required", true, Method004TurnStart},
		{"input null", tr(`{` + th + `,"input":null}`), bad, "input is required", true, Method004TurnStart},
		{"input object", tr(`{` + th + `,"input":{"type":"text","text":"hi"}}`), bad, "input must be an array", true, Method004TurnStart},
		{"input string", tr(`{` + th + `,"input":"hi"}`), bad, "input must be an array", true, Method004TurnStart},
		{"input empty", tr(`{` + th + `,"input":[ ]}`), bad, "input must not be empty", true, Method004TurnStart},
		{"input item not an object", tr(`{` + th + `,"input":[{"type":"text","text":"hi"},"hi"]}`), bad, "input[1] must be an object", true, Method004TurnStart},
		{"input type missing", tr(`{` + th + `,"input":[{"text":"hi"}]}`), bad, "input[0].type is required", true, Method004TurnStart},
		{"input type number", tr(`{` + th + `,"input":[{"type":1}]}`), bad, "input[0].type must be a string", true, Method004TurnStart},
		{"input type unknown", tr(`{` + th + `,"input":[{"type":"text","text":"a"},{"type":"text","text":"b"},{"type":"localImage","path":"/x.png"}]}`), bad,
			`input[2]: type "localImage" is not supported (text, image)`, true, Method004TurnStart},
		{"input type twice", tr(`{` + th + `,"input":[{"type":"image","type":"text","text":"a"}]}`), bad,
			"input[0].type appears more than once", true, Method004TurnStart},
		{"text missing", tr(`{` + th + `,"input":[{"type":"text"}]}`), bad, "input[0].text is required", true, Method004TurnStart},
		{"text number", tr(`{` + th + `,"input":[{"type":"text","text":5}]}`), bad, "input[0].text must be a string", true, Method004TurnStart},
		{"text twice", tr(`{` + th + `,"input":[{"type":"text","text":"a","text":"b"}]}`), bad, "input[0].text appears more than once", true, Method004TurnStart},
		{"all text empty", tr(`{` + th + `,"input":[{"type":"text","text":""},{"type":"text","text":""}]}`), bad,
			"input must hold some text or an image", true, Method004TurnStart},
		{"image url missing", tr(`{` + th + `,"input":[{"type":"image"}]}`), bad, "input[0].url is required", true, Method004TurnStart},
		{"image url number", tr(`{` + th + `,"input":[{"type":"image","url":1}]}`), bad, "input[0].url must be a string", true, Method004TurnStart},
		{"image image_url object", tr(`{` + th + `,"input":[{"type":"image","image_url":{"url":"data:image/png;base64,AAAA"}}]}`), bad,
			"input[0].image_url must be a string", true, Method004TurnStart},
		{"image urls differ", tr(`{` + th + `,"input":[{"type":"image","url":"data:image/png;base64,AAAA","image_url":"data:image/png;base64,BBBB"}]}`), bad,
			"input[0].url and input[0].image_url differ", true, Method004TurnStart},
		{"image https", tr(`{` + th + `,"input":[{"type":"image","url":"https://example.com/a.png"}]}`), bad,
			"input[0].url must be a data: URL of a PNG, JPEG, GIF or WebP image in base64 (data:image/png;base64,…)", true, Method004TurnStart},
		{"image svg", tr(`{` + th + `,"input":[{"type":"image","url":"data:image/svg+xml;base64,AAAA"}]}`), bad,
			"input[0].url must be a data: URL of a PNG, JPEG, GIF or WebP image in base64 (data:image/png;base64,…)", true, Method004TurnStart},
		{"image not base64", tr(`{` + th + `,"input":[{"type":"image","url":"data:image/png,AAAA"}]}`), bad,
			"input[0].url must be a data: URL of a PNG, JPEG, GIF or WebP image in base64 (data:image/png;base64,…)", true, Method004TurnStart},
		{"image empty data", tr(`{` + th + `,"input":[{"type":"image","url":"data:image/png;base64,"}]}`), bad,
			"input[0].url must be a data: URL of a PNG, JPEG, GIF or WebP image in base64 (data:image/png;base64,…)", true, Method004TurnStart},
		{"image bad padding", tr(`{` + th + `,"input":[{"type":"image","url":"data:image/png;base64,AAA"}]}`), bad,
			"input[0].url must be a data: URL of a PNG, JPEG, GIF or WebP image in base64 (data:image/png;base64,…)", true, Method004TurnStart},
		{"image bad alphabet", tr(`{` + th + `,"input":[{"type":"image","url":"data:image/png;base64,AA-_"}]}`), bad,
			"input[0].url must be a data: URL of a PNG, JPEG, GIF or WebP image in base64 (data:image/png;base64,…)", true, Method004TurnStart},
		{"image inner padding", tr(`{` + th + `,"input":[{"type":"image","url":"data:image/png;base64,A=AA"}]}`), bad,
			"input[0].url must be a data: URL of a PNG, JPEG, GIF or WebP image in base64 (data:image/png;base64,…)", true, Method004TurnStart},
		{"image_url bad", tr(`{` + th + `,"input":[{"type":"text","text":"x"},{"type":"image","image_url":"data:text/plain;base64,AAAA"}]}`), bad,
			"input[1].image_url must be a data: URL of a PNG, JPEG, GIF or WebP image in base64 (data:image/png;base64,…)", true, Method004TurnStart},
		{"turn/start model number", tr(`{` + th + `,"input":[{"type":"text","text":"a"}],"model":false}`), bad, "model must be a string", true, Method004TurnStart},
		// turn/interrupt
		{"turn_id missing", line004("turn/interrupt", `{`+th+`}`), bad, "turn_id is required", true, Method004TurnInterrupt},
		{"turn_id empty", line004("turn/interrupt", `{`+th+`,"turnId":""}`), bad, "turn_id must not be empty", true, Method004TurnInterrupt},
		{"turn_id number", line004("turn/interrupt", `{`+th+`,"turnId":3}`), bad, "turn_id must be a string", true, Method004TurnInterrupt},
		{"turn_id spellings differ", line004("turn/interrupt", `{`+th+`,"turnId":"a","turn_id":"b"}`), bad, "turnId and turn_id differ", true, Method004TurnInterrupt},
		{"turn/interrupt no thread", line004("turn/interrupt", `{"turnId":"a"}`), bad, "thread_id is required", true, Method004TurnInterrupt},
		// thread/list
		{"limit 0", line004("thread/list", `{"limit":0}`), bad, "limit must be between 1 and 1000", true, Method004ThreadList},
		{"limit 1001", line004("thread/list", `{"limit":1001}`), bad, "limit must be between 1 and 1000", true, Method004ThreadList},
		{"limit negative", line004("thread/list", `{"limit":-5}`), bad, "limit must be between 1 and 1000", true, Method004ThreadList},
		{"limit huge", line004("thread/list", `{"limit":99999999999999999999999}`), bad, "limit must be between 1 and 1000", true, Method004ThreadList},
		{"limit fraction", line004("thread/list", `{"limit":10.0}`), bad, "limit must be an integer", true, Method004ThreadList},
		{"limit exponent", line004("thread/list", `{"limit":1e2}`), bad, "limit must be an integer", true, Method004ThreadList},
		{"limit string", line004("thread/list", `{"limit":"10"}`), bad, "limit must be an integer", true, Method004ThreadList},
		{"cursor number", line004("thread/list", `{"cursor":1}`), bad, "cursor must be a string", true, Method004ThreadList},
		// thread/read
		{"thread/read no thread", line004("thread/read", `{"includeTurns":true}`), bad, "thread_id is required", true, Method004ThreadRead},
		{"includeTurns string", line004("thread/read", `{`+th+`,"includeTurns":"yes"}`), bad, "include_turns must be a boolean", true, Method004ThreadRead},
		{"includeTurns differ", line004("thread/read", `{`+th+`,"includeTurns":true,"include_turns":false}`), bad,
			"includeTurns and include_turns differ", true, Method004ThreadRead},
		// ccbridge/events/replay
		{"after missing", line004("ccbridge/events/replay", `{}`), bad, "after is required", true, Method004Replay},
		{"after null", line004("ccbridge/events/replay", `{"after":null}`), bad, "after is required", true, Method004Replay},
		{"after negative", line004("ccbridge/events/replay", `{"after":-1}`), bad, "after must not be negative", true, Method004Replay},
		{"after fraction", line004("ccbridge/events/replay", `{"after":1.5}`), bad, "after must be an integer", true, Method004Replay},
		{"after exponent", line004("ccbridge/events/replay", `{"after":1E3}`), bad, "after must be an integer", true, Method004Replay},
		{"after string", line004("ccbridge/events/replay", `{"after":"3"}`), bad, "after must be an integer", true, Method004Replay},
		{"after over uint64", line004("ccbridge/events/replay", `{"after":18446744073709551616}`), bad, "after is out of range", true, Method004Replay},
		{"after twice", line004("ccbridge/events/replay", `{"after":1,"after":2}`), bad, "after appears more than once", true, Method004Replay},
		// ccbridge/approval/respond
		{"approval_id missing", line004("ccbridge/approval/respond", `{"decision":"accept"}`), bad, "approval_id is required", true, Method004Approval},
		{"approval_id empty", line004("ccbridge/approval/respond", `{"approval_id":"","decision":"accept"}`), bad, "approval_id must not be empty", true, Method004Approval},
		{"approval_id number", line004("ccbridge/approval/respond", `{"approvalId":1,"decision":"accept"}`), bad, "approval_id must be a string", true, Method004Approval},
		{"approval_id differ", line004("ccbridge/approval/respond", `{"approvalId":"a","approval_id":"b","decision":"accept"}`), bad,
			"approvalId and approval_id differ", true, Method004Approval},
		{"decision missing", line004("ccbridge/approval/respond", `{"approvalId":"a"}`), bad, "decision is required", true, Method004Approval},
		{"decision number", line004("ccbridge/approval/respond", `{"approvalId":"a","decision":1}`), bad, "decision must be a string", true, Method004Approval},
		{"decision unknown", line004("ccbridge/approval/respond", `{"approvalId":"a","decision":"approve"}`), bad,
			`decision "approve" is not one of accept, acceptForSession, decline, cancel`, true, Method004Approval},
		{"message number", line004("ccbridge/approval/respond", `{"approvalId":"a","decision":"decline","message":1}`), bad,
			"message must be a string", true, Method004Approval},
		{"answers array", line004("ccbridge/approval/respond", `{"approvalId":"a","decision":"accept","answers":[]}`), bad,
			"answers must be an object", true, Method004Approval},
	} {
		t.Run(c.name, func(t *testing.T) { checkRefusal004(t, c) })
	}
}

func checkRefusal004(t *testing.T, c refusal004) {
	t.Helper()
	r, p := Decode004([]byte(c.line))
	if p == nil {
		t.Fatalf("%s: accepted %+v", c.line, r)
	}
	if !reflect.DeepEqual(r, Request004{}) {
		t.Fatalf("both a request and a problem: %+v", r)
	}
	id := ""
	if c.hasID {
		id = "r1"
	}
	want := Problem004{RequestID: id, HasID: c.hasID, Method: c.method, Code: c.code, Message: c.msg}
	if *p != want {
		t.Fatalf("%s\n got  %+v\n want %+v", c.line, *p, want)
	}
	for _, out := range [][]byte{
		AppendProblem004(nil, "w", p, at004),
		AppendError004(nil, "w", 1, p.RequestID, p.Method, p.Code, p.Message, Retryable004(p.Code), "", at004),
	} {
		if !validLine(out) {
			t.Fatalf("wrote %q", out)
		}
	}
}

// TestDecode004NoReply: a worker.* line echoed back is not answered.
func TestDecode004NoReply(t *testing.T) {
	for _, line := range []string{
		`{"event_type":"worker.response","seq":3,"worker_id":"w","payload":{"request_id":"r1","method":"thread/start","ok":true,"response":{},"occurred_at":"2026-02-20T21:15:01.234Z"}}`,
		`{"event_type":"worker.error","worker_id":"w","payload":{"request_id":null,"method":null,"code":"invalid_request","message":"x","retryable":false,"occurred_at":"2026-02-20T21:15:01.234Z"}}`,
		`{"event_type":"worker.x"}`,
		`{"event_type":"w\u006frker.event"}`,
		`{"event_type":"worker.event","request":{"request_id":"r1","method":"thread/start"}}`, // the event_type decides
	} {
		_, p := Decode004([]byte(line))
		if p == nil || !p.NoReply || p.HasID || p.Code != Code004InvalidRequest || !strings.HasPrefix(p.Message, "the line is a worker event") {
			t.Errorf("%s: %+v", line, p)
		}
		if got := Classify([]byte(line)); got != Lane004 {
			t.Errorf("Classify(%s) = %q", line, got)
		}
	}
	// not worker.*: answered
	for _, line := range []string{`{"event_type":"workers","request":{}}`, `{"event_type":7}`, `{"event_type":"Worker.response"}`} {
		if _, p := Decode004([]byte(line)); p == nil || p.NoReply {
			t.Errorf("%s: %+v", line, p)
		}
	}
	// every line the lane writes is NoReply when read back
	for _, out := range [][]byte{
		AppendResponse004(nil, "w", 1, "r1", "thread/start", `{}`, at004),
		AppendError004(nil, "w", 2, "r1", "thread/start", Code004Timeout, "m", true, `{"a":1}`, at004),
		AppendEvent004(nil, "w", 3, "turn/started", `{}`, at004),
		AppendCursorStale004(nil, "w", 1, 5, 9, at004),
		AppendProblem004(nil, "w", &Problem004{Code: Code004InvalidRequest, Message: "m"}, at004),
	} {
		if _, p := Decode004(out); p == nil || !p.NoReply {
			t.Errorf("%s: %+v", out, p)
		}
		if got := Classify(out); got != Lane004 {
			t.Errorf("Classify(%s) = %q", out, got)
		}
	}
}

// TestDecode004Duplicates: a member the lane reads given twice is refused
// (not first-wins), at every level; other members may repeat.
func TestDecode004Duplicates(t *testing.T) {
	for _, line := range []string{
		`{"request":{"request_id":"r1","method":"thread/list","source":"a","source":"b"}}`,
		`{"request":{"request_id":"r1","method":"thread/list","sent_at":"2026-02-20T21:15:00Z","sent_at":"2026-02-20T21:15:00Z"}}`,
		`{"request":{"request_id":"r1","method":"thread/list","request_version":"v1","request_version":"v1"}}`,
		line004("thread/list", `{"limit":5,"limit":5}`),
		line004("thread/list", `{"cursor":"a","cursor":"b"}`),
		line004("ccbridge/approval/respond", `{"approvalId":"a","decision":"accept","decision":"decline"}`),
	} {
		if _, p := Decode004([]byte(line)); p == nil || !strings.HasSuffix(p.Message, " appears more than once") || !p.HasID {
			t.Errorf("%s: %+v", line, p)
		}
	}
	for _, line := range []string{
		`{"request":{"request_id":"r1","method":"thread/list","x":1,"x":2},"y":1,"y":2,"event_type":"a","event_type":"worker.x"}`,
		line004("thread/list", `{"model":"a","model":"b","other":1,"other":2}`), // not thread/list's
	} {
		if _, p := Decode004([]byte(line)); p != nil {
			t.Errorf("%s: %+v", line, p)
		}
	}
}

func TestRetryable004(t *testing.T) {
	for code, want := range map[string]bool{
		Code004Unauthorized: false, Code004Forbidden: false, Code004InvalidRequest: false, Code004UnsupportedMethod: false,
		Code004Conflict: false, Code004WorkerUnavailable: true, Code004Timeout: true, Code004InternalError: true, "": false,
	} {
		if Retryable004(code) != want {
			t.Errorf("Retryable004(%q) != %v", code, want)
		}
	}
}

func TestAppend004Golden(t *testing.T) {
	for _, c := range []struct {
		name string
		got  []byte
		want string
		keys []string
	}{
		{"response", AppendResponse004(nil, "w-1", 7, "req-1", "thread/start", `{"thread":{"id":"`+sid004+`"}}`, at004),
			`{"event_type":"worker.response","seq":7,"worker_id":"w-1","payload":{"request_id":"req-1","method":"thread/start",` +
				`"ok":true,"response":{"thread":{"id":"` + sid004 + `"}},"occurred_at":"2026-02-20T20:15:01.234Z"}}`,
			[]string{"request_id", "method", "ok", "response", "occurred_at"}},
		{"response multi-line raw", AppendResponse004(nil, "w-1", 8, "req-2", "thread/list", "{\n  \"data\": []\r\n}", at004),
			`{"event_type":"worker.response","seq":8,"worker_id":"w-1","payload":{"request_id":"req-2","method":"thread/list",` +
				`"ok":true,"response":{  "data": []},"occurred_at":"2026-02-20T20:15:01.234Z"}}`,
			[]string{"request_id", "method", "ok", "response", "occurred_at"}},
		{"response empty", AppendResponse004(nil, "w-1", 9, "req-3", "turn/interrupt", "", at004),
			`{"event_type":"worker.response","seq":9,"worker_id":"w-1","payload":{"request_id":"req-3","method":"turn/interrupt",` +
				`"ok":true,"response":null,"occurred_at":"2026-02-20T20:15:01.234Z"}}`,
			[]string{"request_id", "method", "ok", "response", "occurred_at"}},
		{"error with details", AppendError004(nil, "w-1", 10, "req-4", "turn/start", Code004Conflict, "a turn is running", false,
			`{"turn_id":"t-1"}`, at004),
			`{"event_type":"worker.error","seq":10,"worker_id":"w-1","payload":{"request_id":"req-4","method":"turn/start",` +
				`"code":"conflict","message":"a turn is running","retryable":false,"details":{"turn_id":"t-1"},` +
				`"occurred_at":"2026-02-20T20:15:01.234Z"}}`,
			[]string{"request_id", "method", "code", "message", "retryable", "details", "occurred_at"}},
		{"error without details", AppendError004(nil, "w-1", 11, "req-5", "thread/read", Code004Timeout, "no answer in 30s", true, "", at004),
			`{"event_type":"worker.error","seq":11,"worker_id":"w-1","payload":{"request_id":"req-5","method":"thread/read",` +
				`"code":"timeout","message":"no answer in 30s","retryable":true,"occurred_at":"2026-02-20T20:15:01.234Z"}}`,
			[]string{"request_id", "method", "code", "message", "retryable", "occurred_at"}},
		{"event", AppendEvent004(nil, "w-1", 12, "item/agentMessage/delta", `{"delta":"Hi"}`, at004),
			`{"event_type":"worker.event","seq":12,"worker_id":"w-1","payload":{"method":"item/agentMessage/delta",` +
				`"params":{"delta":"Hi"},"occurred_at":"2026-02-20T20:15:01.234Z"}}`,
			[]string{"method", "params", "occurred_at"}},
		{"event no params", AppendEvent004(nil, "w-1", 13, "turn/completed", "", at004),
			`{"event_type":"worker.event","seq":13,"worker_id":"w-1","payload":{"method":"turn/completed",` +
				`"params":{},"occurred_at":"2026-02-20T20:15:01.234Z"}}`,
			[]string{"method", "params", "occurred_at"}},
		{"cursor stale", AppendCursorStale004(nil, "w-1", 3, 100, 18446744073709551615, at004),
			`{"event_type":"worker.cursor_stale","worker_id":"w-1","payload":{"after":3,"resume_after":100,` +
				`"latest_seq":18446744073709551615,"occurred_at":"2026-02-20T20:15:01.234Z"}}`,
			[]string{"after", "resume_after", "latest_seq", "occurred_at"}},
		{"problem without id", AppendProblem004(nil, "w-1", &Problem004{Code: Code004InvalidRequest,
			Message: "malformed JSON: the line is not valid JSON"}, at004),
			`{"event_type":"worker.error","worker_id":"w-1","payload":{"request_id":null,"method":null,"code":"invalid_request",` +
				`"message":"malformed JSON: the line is not valid JSON","retryable":false,"occurred_at":"2026-02-20T20:15:01.234Z"}}`,
			[]string{"request_id", "method", "code", "message", "retryable", "occurred_at"}},
		{"problem without id, with method", AppendProblem004(nil, "w-1", &Problem004{Method: "thread/start", Code: Code004InvalidRequest,
			Message: "request_id is required"}, at004),
			`{"event_type":"worker.error","worker_id":"w-1","payload":{"request_id":null,"method":"thread/start","code":"invalid_request",` +
				`"message":"request_id is required","retryable":false,"occurred_at":"2026-02-20T20:15:01.234Z"}}`,
			[]string{"request_id", "method", "code", "message", "retryable", "occurred_at"}},
		{"problem with id", AppendProblem004(nil, "w-1", &Problem004{RequestID: "req-6", HasID: true, Method: "thread/archive",
			Code: Code004UnsupportedMethod, Message: `method "thread/archive" is not allowlisted`}, at004),
			`{"event_type":"worker.error","worker_id":"w-1","payload":{"request_id":"req-6","method":"thread/archive","code":"unsupported_method",` +
				`"message":"method \"thread/archive\" is not allowlisted","retryable":false,"occurred_at":"2026-02-20T20:15:01.234Z"}}`,
			[]string{"request_id", "method", "code", "message", "retryable", "occurred_at"}},
		{"problem with an empty id, retryable", AppendProblem004(nil, "w-1", &Problem004{RequestID: "", HasID: true,
			Code: Code004WorkerUnavailable, Message: "no lane 004"}, at004),
			`{"event_type":"worker.error","worker_id":"w-1","payload":{"request_id":"","method":null,"code":"worker_unavailable",` +
				`"message":"no lane 004","retryable":true,"occurred_at":"2026-02-20T20:15:01.234Z"}}`,
			[]string{"request_id", "method", "code", "message", "retryable", "occurred_at"}},
		{"problem empty code", AppendProblem004(nil, "w-1", &Problem004{Message: "m"}, at004),
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

// TestAppend004InvalidUTF8: whatever the strings hold, and invalid UTF-8
// in a raw part, the output is one valid UTF-8 JSON line.
func TestAppend004InvalidUTF8(t *testing.T) {
	bad := "a\xffb\xc3\"\\\n\u2028\x00"
	for _, out := range [][]byte{
		AppendResponse004(nil, bad, 1, bad, bad, "{\"k\":\"v\xfe\"}", at004),
		AppendError004(nil, bad, 2, bad, bad, bad, bad, false, "{\"k\":\"\xed\xa0\x80\"}", at004),
		AppendEvent004(nil, bad, 3, bad, "{\"k\":\"\xc0\xaf\"}", at004),
		AppendCursorStale004(nil, bad, 1, 2, 3, at004),
		AppendProblem004(nil, bad, &Problem004{RequestID: bad, HasID: true, Method: bad, Code: bad, Message: bad}, at004),
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
	got := string(AppendProblem004(nil, "w", &Problem004{RequestID: "r\xff", HasID: true, Message: "m\x01"}, at004))
	want := `{"event_type":"worker.error","worker_id":"w","payload":{"request_id":"r\ufffd","method":null,"code":"invalid_request",` +
		`"message":"m\u0001","retryable":false,"occurred_at":"2026-02-20T20:15:01.234Z"}}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestAppend004Allocs(t *testing.T) {
	buf := make([]byte, 0, 1024)
	p := &Problem004{RequestID: "r1", HasID: true, Method: Method004TurnStart, Code: Code004InvalidRequest, Message: "input is required"}
	for name, fn := range map[string]func(){
		"response": func() { buf = AppendResponse004(buf[:0], "w", 1, "r1", Method004ThreadStart, `{"thread":{}}`, at004) },
		"error": func() {
			buf = AppendError004(buf[:0], "w", 2, "r1", Method004TurnStart, Code004Timeout, "m", true, `{"a":1}`, at004)
		},
		"event":   func() { buf = AppendEvent004(buf[:0], "w", 3, "turn/started", `{"turn":{}}`, at004) },
		"stale":   func() { buf = AppendCursorStale004(buf[:0], "w", 1, 2, 3, at004) },
		"problem": func() { buf = AppendProblem004(buf[:0], "w", p, at004) },
	} {
		if n := testing.AllocsPerRun(100, fn); n != 0 {
			t.Errorf("%s: %v allocations", name, n)
		}
	}
}

// TestDecode004Allocs: Decode004 allocates the copies it keeps and no
// more: for turn/start the request_id, thread_id, params, the input slice,
// one string per text item, the image data and the model.
func TestDecode004Allocs(t *testing.T) {
	for line, want := range map[string]float64{
		req004TurnStart: 8, // and the source
		line004("thread/resume", `{"threadId":"`+sid004+`"}`): 3,
		line004("thread/list", ""):                            1,
	} {
		b := []byte(line)
		if n := testing.AllocsPerRun(100, func() { Decode004(b) }); n != want {
			t.Errorf("%s: %v allocations, want %v", line, n, want)
		}
	}
}

func BenchmarkDecode004(b *testing.B) {
	line := []byte(req004TurnStart)
	b.ReportAllocs()
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if _, p := Decode004(line); p != nil {
			b.Fatal(p)
		}
	}
}
