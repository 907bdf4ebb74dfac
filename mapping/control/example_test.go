package control_test

import (
	"fmt"
	"time"

	"github.com/ccbridge/ccbridge/mapping/control"
)

func Example() {
	now := time.Date(2026, 2, 20, 21, 15, 1, 0, time.UTC)
	policy := control.Policy{Team: "atm-dev", AgentID: "codex:abc", Senders: []string{"arch-ctm"},
		MaxAge: control.DefaultMaxAge, ClockSkew: control.DefaultClockSkew,
		SoftLimit: control.DefaultSoftLimit, HardLimit: control.DefaultHardLimit}
	for _, line := range []string{
		`{"type":"control.stdin.request","v":1,"request_id":"r1","team":"atm-dev","session_id":"s1",` +
			`"agent_id":"codex:abc","sender":"arch-ctm","sent_at":"2026-02-20T21:15:00Z","content":"hello"}`,
		`{"type":"control.stdin.request","v":1,"request_id":"r2","team":"atm-dev","session_id":"s1",` +
			`"agent_id":"codex:abc","sender":"eve","sent_at":"2026-02-20T21:15:00Z","content":"hello"}`,
		`{"type":"control.interrupt.request","v":2}`,
	} {
		r, prob := control.Decode([]byte(line))
		if prob == nil {
			prob, _ = control.Check(&r, policy, "s1", now)
		}
		if prob != nil {
			fmt.Println(string(control.AppendProblem(nil, prob, now)))
			continue
		}
		// … dedupe, then hand r.Content to the worker …
		fmt.Println(string(control.AppendAck(nil, &r, control.OK, "", false, now)))
	}
	// Output:
	// {"type":"control.stdin.ack","v":1,"request_id":"r1","team":"atm-dev","session_id":"s1","agent_id":"codex:abc","acked_at":"2026-02-20T21:15:01.000Z","result":"ok","duplicate":false}
	// {"type":"control.stdin.ack","v":1,"request_id":"r2","team":"atm-dev","session_id":"s1","agent_id":"codex:abc","acked_at":"2026-02-20T21:15:01.000Z","result":"rejected","duplicate":false,"detail":"sender: \"eve\" is not allowed","error":"unauthorized"}
	// {"type":"control.interrupt.ack","v":1,"request_id":"","team":"","session_id":"","agent_id":"","acked_at":"2026-02-20T21:15:01.000Z","result":"rejected","duplicate":false,"detail":"v: unsupported version \"2\"; this lane speaks v 1","error":"unsupported_version"}
}
