package control

import (
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/mapping/lane000"
)

// capsTarget is a session that only knows its id.
type capsTarget struct{ sid string }

func (c capsTarget) ControlSessionID() string  { return c.sid }
func (c capsTarget) ControlState() WorkerState { return WorkerIdle }
func (capsTarget) ControlInject(_ []byte, _ bool, done func(lane000.Result, string)) {
	done(lane000.OK, "sent")
}
func (capsTarget) ControlInterrupt(done func(lane000.Result, string)) {
	done(lane000.OK, "no turn running")
}

// TestLaneCapabilitiesRequestID: the answer to a
// control.capabilities.request echoes its request_id (lane000.md), and
// says the session; without a request_id there is none.
func TestLaneCapabilitiesRequestID(t *testing.T) {
	store := NewMemoryStore(StoreConfig{TTL: time.Minute, MaxKeys: 10})
	defer store.Close()
	l := NewLane(LaneConfig{
		Store:  store,
		Policy: lane000.Policy{Team: "t", AgentID: "a", SoftLimit: 10, HardLimit: 20},
		Target: capsTarget{sid: "s1"},
		Submit: func(fn func()) bool { fn(); return true },
	})
	for _, tc := range []struct{ line, id string }{
		{`{"type":"control.capabilities.request","v":1,"request_id":"caps-7"}`, "caps-7"},
		{`{"type":"control.capabilities.request","v":1}`, ""},
	} {
		var got []byte
		l.Handle([]byte(tc.line), func(b []byte) { got = b })
		if gjson.GetBytes(got, "type").Str != "control.capabilities" || gjson.GetBytes(got, "session_id").Str != "s1" {
			t.Fatalf("%s: answered %s", tc.line, got)
		}
		if id := gjson.GetBytes(got, "request_id"); id.Str != tc.id || id.Exists() != (tc.id != "") {
			t.Errorf("%s: request_id %s, want %q: %s", tc.line, id.Raw, tc.id, got)
		}
	}
	// The greeting answers no request.
	if gjson.GetBytes(l.Capabilities(), "request_id").Exists() {
		t.Errorf("the greeting has a request_id: %s", l.Capabilities())
	}
}
