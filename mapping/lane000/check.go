package lane000

import (
	"math"
	"slices"
	"strconv"
	"time"
)

// Check applies identity, authorization, replay age and inline limits to a
// decoded request, in this order (the first that fails is reported):
//
//  1. team not Policy.Team, then sender not in Policy.Senders → Rejected
//     (unauthorized): nothing about the worker is judged for a stranger;
//  2. sessionID "" (the worker has none yet) → NotLive (no_session);
//     session_id not sessionID → NotFound (unknown_session); agent_id not
//     Policy.AgentID → NotFound (unknown_agent);
//  3. sent_at older than now - MaxAge (stale) or later than now + ClockSkew
//     (future) → Rejected;
//  4. stdin only: a content_ref when !RefsAllowed → Rejected
//     (content_ref_refused); empty content → Rejected (empty_content);
//     content over HardLimit → Rejected (too_large, the detail names
//     content_ref); content over SoftLimit → no problem, warn set.
//
// A control.capabilities.request carries no identity: Check passes it.
func Check(r *Request, p Policy, sessionID string, now time.Time) (prob *Problem, warn string) {
	fail := func(res Result, code, detail string) *Problem {
		return &Problem{Ack: r.Kind.AckType(), Result: res, Error: code, Detail: detail,
			RequestID: r.RequestID, Team: r.Team, SessionID: r.SessionID, AgentID: r.AgentID}
	}
	switch r.Kind {
	case KindCapabilities:
		return nil, ""
	case KindStdin, KindInterrupt:
	default:
		return fail(Rejected, ErrUnknownRequest, "not a control request"), ""
	}
	switch {
	case r.Team != p.Team:
		return fail(Rejected, ErrUnauthorized, "team: "+quote(r.Team, 64)+" is not this worker's team"), ""
	case !slices.Contains(p.Senders, r.Sender):
		return fail(Rejected, ErrUnauthorized, "sender: "+quote(r.Sender, 64)+" is not allowed"), ""
	case sessionID == "":
		return fail(NotLive, ErrNoSession, "session_id: the worker has no session yet"), ""
	case r.SessionID != sessionID:
		return fail(NotFound, ErrUnknownSession, "session_id: "+quote(r.SessionID, 64)+" is not this worker's session"), ""
	case r.AgentID != p.AgentID:
		return fail(NotFound, ErrUnknownAgent, "agent_id: "+quote(r.AgentID, 64)+" is not this worker's agent"), ""
	}
	// Times are compared, not their difference: a time.Duration spans
	// ±292 years and Sub saturates beyond, so a sent_at of year 9999 would
	// seem only 292 years ahead, and its negation overflow.
	if now.After(r.SentAt.Add(p.MaxAge)) {
		return fail(Rejected, ErrStale, "sent_at: "+span(r.SentAt, now)+" old, over the max age of "+p.MaxAge.String()), ""
	}
	if r.SentAt.After(now.Add(p.ClockSkew)) {
		return fail(Rejected, ErrFuture, "sent_at: "+span(now, r.SentAt)+" in the future, over the clock skew of "+p.ClockSkew.String()), ""
	}
	if r.Kind != KindStdin {
		return nil, ""
	}
	if r.Ref != nil {
		if !p.RefsAllowed {
			return fail(Rejected, ErrRefsDisabled, "content_ref: refused, no --ref-root is configured"), ""
		}
		return nil, ""
	}
	n := len(r.Content)
	switch {
	case n == 0:
		return fail(Rejected, ErrEmptyContent, "content: empty"), ""
	case n > p.HardLimit:
		return fail(Rejected, ErrTooLarge, "content: "+strconv.Itoa(n)+" bytes, over the hard limit of "+
			strconv.Itoa(p.HardLimit)+"; send it as a content_ref"), ""
	case p.SoftLimit > 0 && n > p.SoftLimit:
		return nil, "content: " + strconv.Itoa(n) + " bytes, over the soft limit of " + strconv.Itoa(p.SoftLimit)
	}
	return nil, ""
}

// span is b - a (b after a) to the millisecond, for a detail; beyond what a
// time.Duration holds it says so rather than a saturated figure.
func span(a, b time.Time) string {
	d := b.Sub(a)
	if d == math.MaxInt64 || d == math.MinInt64 {
		return "more than " + strconv.Itoa(int(time.Duration(math.MaxInt64).Hours()/(24*365))) + " years"
	}
	return d.Truncate(time.Millisecond).String()
}
