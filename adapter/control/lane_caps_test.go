package control

import (
	"testing"
	"time"

	"github.com/tidwall/gjson"

	mctl "github.com/ccbridge/ccbridge/mapping/control"
)

// capsTarget is a session that only has an id.
type capsTarget struct{}

func (capsTarget) ControlSessionID() string { return "sess-1" }
func (capsTarget) ControlInject(_ []byte, _ bool, done func(mctl.Result, string)) {
	done(mctl.OK, "sent")
}
func (capsTarget) ControlInterrupt(done func(mctl.Result, string)) { done(mctl.OK, "no turn running") }

// TestLaneCapabilitiesRequestID: a control.capabilities.request is
// answered with the capabilities, which echo its request_id when it had
// one (docs/control/lane000.md) and have none otherwise.
func TestLaneCapabilitiesRequestID(t *testing.T) {
	store := NewMemoryStore(StoreConfig{})
	defer store.Close()
	lane := NewLane(LaneConfig{
		Store:  store,
		Policy: mctl.Policy{Team: "t", AgentID: "a", Senders: []string{"s"}},
		Target: capsTarget{},
		Submit: func(fn func()) bool { fn(); return true },
		Now:    func() time.Time { return time.Date(2026, 2, 20, 21, 15, 0, 0, time.UTC) },
	})
	for _, c := range []struct{ line, id string }{
		{`{"type":"control.capabilities.request","v":1,"request_id":"caps-1"}`, "caps-1"},
		{`{"type":"control.capabilities.request","v":1}`, ""},
	} {
		var got [][]byte
		lane.Handle([]byte(c.line), func(b []byte) { got = append(got, b) })
		if len(got) != 1 {
			t.Fatalf("%s: %d answers, want 1", c.line, len(got))
		}
		l := got[0]
		if gjson.GetBytes(l, "type").Str != mctl.TypeCapabilities || gjson.GetBytes(l, "session_id").Str != "sess-1" {
			t.Errorf("%s: answered %s", c.line, l)
		}
		if id := gjson.GetBytes(l, "request_id"); id.Str != c.id || id.Exists() != (c.id != "") {
			t.Errorf("%s: request_id %s in %s, want %q", c.line, id.Raw, l, c.id)
		}
	}
}
