package lane000

import (
	"math"
	"strings"
	"testing"
	"time"
)

var policy = Policy{
	Team: "atm-dev", AgentID: "codex:abc", Senders: []string{"ops", "arch-ctm"},
	MaxAge: DefaultMaxAge, ClockSkew: DefaultClockSkew,
	SoftLimit: 20, HardLimit: 40, RefsAllowed: true,
}

func decodeOK(t *testing.T, line string) Request {
	t.Helper()
	r, p := Decode([]byte(line))
	if p != nil {
		t.Fatalf("decode: %+v", p)
	}
	return r
}

func TestCheck(t *testing.T) {
	noRefs := policy
	noRefs.RefsAllowed = false
	noSenders := policy
	noSenders.Senders = nil
	content := func(s string) string { return set(t, baseStdin, "content", `"`+s+`"`) }
	hugeSkew := policy
	hugeSkew.MaxAge, hugeSkew.ClockSkew = math.MaxInt64, math.MaxInt64
	cases := []struct {
		name    string
		line    string
		p       Policy
		session string
		now     time.Time
		res     Result // "" for accepted
		code    string
		detail  string
		warn    string
	}{
		{"ok", baseStdin, policy, "sess-1", t0, "", "", "", ""},
		{"ok interrupt", baseInterrupt, policy, "sess-1", t0.Add(72 * time.Second), "", "", "", ""},
		{"ok content_ref", withRef(t, baseRef), policy, "sess-1", t0, "", "", "", ""},
		{"capabilities pass", `{"type":"control.capabilities.request","v":1}`, Policy{}, "", t0, "", "", "", ""},
		// 1. team, sender
		{"other team", set(t, baseStdin, "team", `"blue"`), policy, "sess-1", t0, Rejected, ErrUnauthorized, `team: "blue" is not this worker's team`, ""},
		{"unknown sender", set(t, baseStdin, "sender", `"eve"`), policy, "sess-1", t0, Rejected, ErrUnauthorized, `sender: "eve" is not allowed`, ""},
		{"no senders: deny", baseInterrupt, noSenders, "sess-1", t0, Rejected, ErrUnauthorized, `sender: "arch-ctm" is not allowed`, ""},
		{"team before session", set(t, set(t, baseStdin, "team", `"blue"`), "session_id", `"x"`), policy, "sess-1", t0, Rejected, ErrUnauthorized, `team: "blue" is not this worker's team`, ""},
		{"sender before session", set(t, set(t, baseStdin, "sender", `"eve"`), "session_id", `"x"`), policy, "sess-1", t0, Rejected, ErrUnauthorized, `sender: "eve" is not allowed`, ""},
		// 2. session, agent
		{"no session yet", baseStdin, policy, "", t0, NotLive, ErrNoSession, "session_id: the worker has no session yet", ""},
		{"other session", baseStdin, policy, "sess-2", t0, NotFound, ErrUnknownSession, `session_id: "sess-1" is not this worker's session`, ""},
		{"other agent", set(t, baseInterrupt, "agent_id", `"gemini:1"`), policy, "sess-1", t0, NotFound, ErrUnknownAgent, `agent_id: "gemini:1" is not this worker's agent`, ""},
		{"session before age", baseStdin, policy, "sess-2", t0.Add(time.Hour), NotFound, ErrUnknownSession, `session_id: "sess-1" is not this worker's session`, ""},
		// 3. replay age
		{"age at max", baseStdin, policy, "sess-1", t0.Add(DefaultMaxAge), "", "", "", ""},
		{"too old", baseStdin, policy, "sess-1", t0.Add(DefaultMaxAge + time.Millisecond), Rejected, ErrStale, "sent_at: 10m0.001s old, over the max age of 10m0s", ""},
		{"skew at max", baseStdin, policy, "sess-1", t0.Add(-DefaultClockSkew), "", "", "", ""},
		{"too far ahead", baseStdin, policy, "sess-1", t0.Add(-DefaultClockSkew - time.Second), Rejected, ErrFuture, "sent_at: 31s in the future, over the clock skew of 30s", ""},
		// Far from now: a time.Duration spans ±292 years; beyond, the
		// check must still refuse (year 2400 and 9999 were accepted).
		{"40 s ahead", baseStdin, policy, "sess-1", t0.Add(-40 * time.Second), Rejected, ErrFuture, "sent_at: 40s in the future, over the clock skew of 30s", ""},
		{"year 2300", sentAt(t, "2300-01-01T00:00:00Z"), policy, "sess-1", t0, Rejected, ErrFuture, "sent_at: 2400602h45m0s in the future, over the clock skew of 30s", ""},
		{"year 2318", sentAt(t, "2318-06-01T00:00:00Z"), policy, "sess-1", t0, Rejected, ErrFuture, "sent_at: 2562002h45m0s in the future, over the clock skew of 30s", ""},
		{"year 2400", sentAt(t, "2400-01-01T00:00:00Z"), policy, "sess-1", t0, Rejected, ErrFuture, "sent_at: more than 292 years in the future, over the clock skew of 30s", ""},
		{"year 9999", sentAt(t, "9999-12-31T23:59:59.999999999Z"), policy, "sess-1", t0, Rejected, ErrFuture, "sent_at: more than 292 years in the future, over the clock skew of 30s", ""},
		{"year 9999, a huge skew", sentAt(t, "9999-12-31T23:59:59Z"), hugeSkew, "sess-1", t0, Rejected, ErrFuture, "sent_at: more than 292 years in the future, over the clock skew of 2562047h47m16.854775807s", ""},
		{"year 1700", sentAt(t, "1700-01-01T00:00:00Z"), policy, "sess-1", t0, Rejected, ErrStale, "sent_at: more than 292 years old, over the max age of 10m0s", ""},
		{"year 0000", sentAt(t, "0000-01-01T00:00:00Z"), hugeSkew, "sess-1", t0, Rejected, ErrStale, "sent_at: more than 292 years old, over the max age of 2562047h47m16.854775807s", ""},
		{"age before limits", content(strings.Repeat("x", 50)), policy, "sess-1", t0.Add(time.Hour), Rejected, ErrStale, "sent_at: 1h0m0s old, over the max age of 10m0s", ""},
		// 4. limits
		{"refs refused", withRef(t, baseRef), noRefs, "sess-1", t0, Rejected, ErrRefsDisabled, "content_ref: refused, no --ref-root is configured", ""},
		{"empty content", content(""), policy, "sess-1", t0, Rejected, ErrEmptyContent, "content: empty", ""},
		{"at soft limit", content(strings.Repeat("x", 20)), policy, "sess-1", t0, "", "", "", ""},
		{"over soft limit warns", content(strings.Repeat("x", 21)), policy, "sess-1", t0, "", "", "", "content: 21 bytes, over the soft limit of 20"},
		{"at hard limit warns", content(strings.Repeat("x", 40)), policy, "sess-1", t0, "", "", "", "content: 40 bytes, over the soft limit of 20"},
		{"over hard limit", content(strings.Repeat("x", 41)), policy, "sess-1", t0, Rejected, ErrTooLarge, "content: 41 bytes, over the hard limit of 40; send it as a content_ref", ""},
		{"limit counts decoded bytes", content(strings.Repeat(`\n`, 40)), policy, "sess-1", t0, "", "", "", "content: 40 bytes, over the soft limit of 20"},
		{"no soft limit", content(strings.Repeat("x", 20)), Policy{Team: "atm-dev", AgentID: "codex:abc", Senders: []string{"arch-ctm"}, MaxAge: time.Hour, HardLimit: 100}, "sess-1", t0, "", "", "", ""},
	}
	for _, c := range cases {
		r := decodeOK(t, c.line)
		p, warn := Check(&r, c.p, c.session, c.now)
		if warn != c.warn {
			t.Errorf("%s: warn %q, want %q", c.name, warn, c.warn)
		}
		if c.res == "" {
			if p != nil {
				t.Errorf("%s: refused: %+v", c.name, p)
			}
			continue
		}
		if p == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if p.Result != c.res || p.Error != c.code || p.Detail != c.detail || p.Ack != r.Kind.AckType() {
			t.Errorf("%s:\n got  %s %s %s %q\n want %s %s %q", c.name, p.Ack, p.Result, p.Error, p.Detail, c.res, c.code, c.detail)
		}
		if p.RequestID != r.RequestID || p.Team != r.Team || p.SessionID != r.SessionID || p.AgentID != r.AgentID {
			t.Errorf("%s: correlation %+v", c.name, p)
		}
	}
}

func TestCheckNoKind(t *testing.T) {
	p, _ := Check(&Request{RequestID: "x"}, policy, "sess-1", t0)
	if p == nil || p.Ack != TypeError || p.Result != Rejected || p.Error != ErrUnknownRequest || p.RequestID != "x" {
		t.Fatalf("%+v", p)
	}
}

// sentAt is baseStdin with sent_at at.
func sentAt(t *testing.T, at string) string { return set(t, baseStdin, "sent_at", `"`+at+`"`) }
