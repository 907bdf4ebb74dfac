package lanes

import "testing"

// Lines of each lane, as their codecs' tests have them.
const (
	baseStdin = `{"type":"control.stdin.request","v":1,"request_id":"req-1","session_id":"sess-1",` +
		`"agent_id":"codex:abc","thread_id":"th-1","team":"atm-dev","sender":"arch-ctm",` +
		`"sent_at":"2026-02-20T21:15:00Z","content":"line one\nline two","content_encoding":"utf-8",` +
		`"interrupt":false,"meta":{"ui_source":"tui","retry_count":2}}`
	baseInterrupt = `{"type":"control.interrupt.request","v":1,"request_id":"req-2","session_id":"sess-1",` +
		`"agent_id":"codex:abc","team":"atm-dev","sender":"arch-ctm","sent_at":"2026-02-20T21:16:12Z",` +
		`"signal":"interrupt","meta":{"ui_source":"tui","retry_count":0}}`
	reqPause = `{"schema":0,"type":"REQUEST","request_id":"req-pause-001","command":"pause",` +
		`"target":{"run_id":"loop-1703123456-12345","issue_id":"auth-123"},"timestamp":"2024-12-28T10:00:00Z","payload":{}}`
	reqEscalate = `{"schema":0,"type":"REQUEST","request_id":"req-escalate-001","command":"escalate",` +
		`"target":{"run_id":"loop-1703123456-12345","issue_id":"complex-refactor"},"timestamp":"2024-12-28T12:00:00Z",` +
		`"payload":{"model":"opus","reason":"Stuck on complex type inference"}}`
	sid004          = "0c5e3f4e-9a1b-4c2d-8e7f-123456789abc"
	png004          = "iVBORw0KGgoAAAANSUhEUg=="
	req004TurnStart = `{"request":{"request_id":"req-turn-1","method":"turn/start","params":{"threadId":"` + sid004 + `",` +
		`"input":[{"type":"text","text":"Summarise the diff"},{"type":"image","url":"data:image/png;base64,` + png004 + `"}],` +
		`"model":"opus"},"request_version":"v1","sent_at":"2026-02-20T21:15:00.250Z","source":"atm"}}`
)

func TestClassify(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{baseStdin, Lane000},
		{baseInterrupt, Lane000},
		{`{"type":"control.anything"}`, Lane000},
		{`{"schema":0,"type":"control.stdin.request"}`, Lane000}, // the type decides
		{`{"t\u0079pe":"control.x"}`, Lane000},
		{reqPause, Lane001},
		{`{"schema":1,"event":"STATE"}`, Lane001},
		{`{"schema":null}`, Lane001},
		{`{"type":"REQUEST"}`, Lane001},
		{`{"type":"ACK"}`, Lane001},
		{`{"type":"RESULT"}`, Lane001},
		{`{"type":"ERROR"}`, Lane001},
		{`  {"x":[1,{"schema":0}],"schema":"?"} `, Lane001},
		{req004TurnStart, Lane004},
		{`{"request":{}}`, Lane004},
		{`{"request":null}`, Lane004}, // any value
		{`{"event_type":"worker.response","seq":1}`, Lane004},
		{`{"type":null,"event_type":"worker.error"}`, Lane004},
		{`{"e\u0076ent_type":"w\u006frker.event"}`, Lane004},
		{`{"schema":0,"request":{}}`, Lane001},                     // schema before request
		{`{"type":"control.x","request":{}}`, Lane000},             // control. before request
		{`{"type":"ACK","request":{}}`, Lane004},                   // request before a lane-001 type
		{`{"type":"ACK","event_type":"worker.response"}`, Lane001}, // event_type only without a type
		{`{"type":"x","event_type":"worker.response"}`, ""},
		{`{"event_type":"workers"}`, ""},
		{`{"event_type":"Worker.x"}`, ""},
		{`{"event_type":7}`, ""},
		{`{"x":{"request":{}}}`, ""},
		{`{"type":"request"}`, ""},
		{`{"type":"controlx"}`, ""},
		{`{"type":7,"v":1}`, ""},
		{`{"x":{"schema":0,"type":"control.x"}}`, ""}, // top level only
		{`[{"schema":0}]`, ""},
		{`"schema"`, ""},
		{``, ""},
		{`{nope`, ""},
	} {
		if got := Classify([]byte(c.line)); got != c.want {
			t.Errorf("Classify(%s) = %q, want %q", c.line, got, c.want)
		}
	}
	for _, l := range []string{reqEscalate, req004TurnStart, `{"event_type":"worker.event","seq":9}`} {
		line := []byte(l)
		if n := testing.AllocsPerRun(100, func() { Classify(line) }); n != 0 {
			t.Fatalf("%s: %v allocations per Classify", l, n)
		}
	}
}
