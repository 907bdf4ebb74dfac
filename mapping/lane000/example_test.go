package lane000_test

import (
	"fmt"
	"time"

	"github.com/ccbridge/ccbridge/mapping/lane000"
)

func Example() {
	now := time.Date(2026, 2, 20, 21, 15, 1, 0, time.UTC)
	policy := lane000.Policy{Team: "atm-dev", AgentID: "codex:abc", Senders: []string{"arch-ctm"},
		MaxAge: lane000.DefaultMaxAge, ClockSkew: lane000.DefaultClockSkew,
		SoftLimit: lane000.DefaultSoftLimit, HardLimit: lane000.DefaultHardLimit}
	for _, line := range []string{
		`{"type":"control.stdin.request","v":1,"request_id":"r1","team":"atm-dev","session_id":"s1",` +
			`"agent_id":"codex:abc","sender":"arch-ctm","sent_at":"2026-02-20T21:15:00Z","content":"hello"}`,
		`{"type":"control.stdin.request","v":1,"request_id":"r2","team":"atm-dev","session_id":"s1",` +
			`"agent_id":"codex:abc","sender":"eve","sent_at":"2026-02-20T21:15:00Z","content":"hello"}`,
		`{"type":"control.interrupt.request","v":2}`,
	} {
		r, prob := lane000.Decode([]byte(line))
		if prob == nil {
			prob, _ = lane000.Check(&r, policy, "s1", now)
		}
		if prob != nil {
			fmt.Println(string(lane000.AppendProblem(nil, prob, now)))
			continue
		}
		// … dedupe, then hand r.Content to the worker …
		fmt.Println(string(lane000.AppendAck(nil, &r, lane000.OK, "", false, now)))
	}
	// Output:
	// {"type":"control.stdin.ack","v":1,"request_id":"r1","team":"atm-dev","session_id":"s1","agent_id":"codex:abc","acked_at":"2026-02-20T21:15:01.000Z","result":"ok","duplicate":false}
	// {"type":"control.stdin.ack","v":1,"request_id":"r2","team":"atm-dev","session_id":"s1","agent_id":"codex:abc","acked_at":"2026-02-20T21:15:01.000Z","result":"rejected","duplicate":false,"detail":"sender: \"eve\" is not allowed","error":"unauthorized"}
	// {"type":"control.interrupt.ack","v":1,"request_id":"","team":"","session_id":"","agent_id":"","acked_at":"2026-02-20T21:15:01.000Z","result":"rejected","duplicate":false,"detail":"v: unsupported version \"2\"; this lane speaks v 1","error":"unsupported_version"}
}
