package e2e

// Steering: text added to a running turn without ending it, in every
// dialect. The CLI 2.1.330 takes a user message written to its stdin
// during a tool loop into the running turn after the next tool result and
// hands it to the model as a system message; the fake model's STEER
// scenario answers, after its two Bash steps, with the text it was
// steered by, so the tests see the steer reach the model in the same
// turn, which then completes once.

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/fakemodel"
)

// steerCheckModel checks that the fake model got the steering text in
// the turn of the prompt holding tok: the final call of the STEER rule
// (step 2) holds it, in the CLI's mid-turn system message.
func steerCheckModel(t *testing.T, tok, steer string) {
	t.Helper()
	steerCheckModelIn(t, fakeAPI(t), tok, steer)
}

// steerCheckModelIn is steerCheckModel of the fake model api.
func steerCheckModelIn(t *testing.T, api *fakemodel.Server, tok, steer string) {
	t.Helper()
	r := modelRequestIn(t, api, tok)
	if r.Rule != "STEER" || r.Step != 2 {
		t.Errorf("the latest request for the prompt is rule %q step %d, want STEER step 2 (one turn)", r.Rule, r.Step)
	}
	if !seenByModelIn(t, api, tok, "The user sent a new message while you were working:\\n"+steer) {
		t.Errorf("the model's last request of the turn does not carry the steering text %q", steer)
	}
}

func l4Steer(t *testing.T, w *ctlWorker) {
	c := l4Stdio(w)
	text := func(s string) []any { return []any{map[string]any{"type": "text", "text": s}} }

	p := l4Fail(t, "turn/steer with no turn", c.call(ctlID("steer0"), "turn/steer",
		map[string]any{"threadId": w.sid, "expectedTurnId": uuid.NewString(), "input": text("x")}), "turn/steer", "conflict")
	if p.Get("details.current_turn_id").Type != gjson.Null {
		t.Errorf("conflict with no turn: %s", p.Raw)
	}
	tok := token("steer")
	from := len(c.got)
	turn := l4OK(t, "turn/start STEER", c.call(ctlID("turn"), "turn/start", l4Text(w.sid, "STEER "+tok)), "turn/start").Get("turn.id").Str
	c.waitFrom(from, "the first tool call", func(l []byte) bool {
		return l4IsEvent("item/started", turn)(l) && get(l, "payload.params.item.type").Str == "toolCall"
	})
	p = l4Fail(t, "turn/steer of another turn", c.call(ctlID("steer1"), "turn/steer",
		map[string]any{"threadId": w.sid, "expectedTurnId": uuid.NewString(), "input": text("x")}), "turn/steer", "conflict")
	if p.Get("details.current_turn_id").Str != turn {
		t.Errorf("conflict for another turn: %s", p.Raw)
	}
	steer := "mind " + token("steerw")
	resp := l4OK(t, "turn/steer", c.call(ctlID("steer2"), "turn/steer",
		map[string]any{"thread_id": w.sid, "expected_turn_id": turn, "input": text(steer)}), "turn/steer")
	sid := resp.Get("steerId").Str
	if resp.Get("turnId").Str != turn || uuid.Validate(sid) != nil {
		t.Errorf("turn/steer's response: %s", resp.Raw)
	}
	end := c.waitFrom(from, "turn/completed", l4IsEvent("turn/completed", ""))
	lines := c.workerLines(from, end)
	if got := get(c.got[end], "payload.params.turn"); got.Get("id").Str != turn || got.Get("status").Str != "completed" {
		t.Errorf("the first turn/completed: %s, want turn %s completed", got.Raw, turn)
	}
	steered, agent := false, ""
	for _, l := range lines {
		switch {
		case l4IsEvent("turn/steered", turn)(l):
			steered = get(l, "payload.params.steerId").Str == sid
		case l4IsEvent("turn/started", "")(l) && get(l, "payload.params.turn.id").Str != turn:
			t.Errorf("a second turn started: %s", l)
		case l4IsEvent("item/agentMessage/delta", turn)(l):
			agent += get(l, "payload.params.delta").Str
		}
	}
	if !steered {
		t.Errorf("no turn/steered naming steer %s before turn/completed", sid)
	}
	if !strings.Contains(agent, "Steered by: "+steer+". ") {
		t.Errorf("the turn's text %q does not say it was steered by %q", agent, steer)
	}
	steerCheckModel(t, tok, steer)
	p = l4Fail(t, "turn/steer of the ended turn", c.call(ctlID("steer3"), "turn/steer",
		map[string]any{"threadId": w.sid, "expectedTurnId": turn, "input": text("x")}), "turn/steer", "conflict")
	for _, l := range c.got[end+1:] {
		if l4IsEvent("turn/completed", "")(l) || l4IsEvent("turn/started", "")(l) {
			t.Errorf("a turn event after the steered turn: %s", l)
		}
	}
}

func ipcSteer(t *testing.T, s *ipcSession) {
	b := s.b
	tok := token("steer")
	b.send(`{"type":"user_message","text":"STEER ` + tok + `"}`)
	ipcUntil(t, b, "the first tool call", func(l []byte) bool { return typeOf(l) == "tool_use" })
	steer := "mind " + token("steerw")
	b.send(`{"type":"steer","text":` + jsonStr(steer) + `}`)
	lines := ipcUntil(t, b, "the turn's end", func(l []byte) bool {
		return typeOf(l) == "turn_complete" || typeOf(l) == "turn_cancelled" || (typeOf(l) == "error" && !get(l, "recoverable").Bool())
	})
	end := lines[len(lines)-1]
	if typeOf(end) != "turn_complete" || !strings.Contains(get(end, "result").Str, "Steered by: "+steer+". ") {
		t.Fatalf("the turn ended with %s, want turn_complete saying it was steered by %q", end, steer)
	}
	taken := 0
	for _, l := range lines {
		if typeOf(l) == "steer_taken" {
			taken++
		}
		if typeOf(l) == "error" {
			t.Errorf("an error during the steered turn: %s", l)
		}
	}
	if taken != 1 {
		t.Errorf("%d steer_taken, want 1", taken)
	}
	steerCheckModelIn(t, b.api, tok, steer)
	// No turn runs now: a steer is refused, and the session goes on.
	b.send(`{"type":"steer","text":"late"}`)
	l := ipcUntil(t, b, "the refusal", func(l []byte) bool { return typeOf(l) == "error" })
	if e := l[len(l)-1]; get(e, "code").Str != "no_turn" || !get(e, "recoverable").Bool() {
		t.Errorf("a steer with no turn: %s", e)
	}
	b.send(`{"type":"user_message","text":"hello"}`)
	for _, l := range ipcUntil(t, b, "the next turn's end", func(l []byte) bool { return typeOf(l) == "turn_complete" }) {
		if typeOf(l) == "turn_complete" && get(l, "result").Str != "Hello from the mock model. " {
			t.Errorf("the turn after the steered one: %s", l)
		}
	}
}

func rpcSteer(t *testing.T, s *rpcSession) {
	c := s.c
	if init := c.initialize(""); !init.Get("server_capabilities.supports_run_steer").Bool() {
		t.Errorf("initialize does not claim run.steer: %s", init.Get("server_capabilities").Raw)
	}
	c.rpcError(c.call("run.steer", `{"run_id":"run-404","text":"x"}`), -32002)
	tok := token("steer")
	run := c.start("STEER " + tok)
	c.until("the first tool call", isEvent(run, "tool_call"))
	steer := "mind " + token("steerw")
	res := c.result(c.call("run.steer", `{"run_id":`+jsonStr(run)+`,"text":`+jsonStr(steer)+`}`))
	if !res.Get("ok").Bool() || res.Get("run_id").Str != run || uuid.Validate(res.Get("steer_id").Str) != nil {
		t.Errorf("run.steer's result: %s", res.Raw)
	}
	lines, status := c.finishRun(run)
	if status != "completed" {
		t.Fatalf("the steered run ended %s", status)
	}
	final := findLine(lines, isEvent(run, "final"))
	if !strings.Contains(get(final, "params.event.content").Str, "Steered by: "+steer+". ") {
		t.Errorf("the run's final event does not say it was steered by %q: %s", steer, final)
	}
	steerCheckModelIn(t, c.b.api, tok, steer)
	c.rpcError(c.call("run.steer", `{"run_id":`+jsonStr(run)+`,"text":"late"}`), -32002)
	c.rpcError(c.call("run.steer", `{"run_id":`+jsonStr(run)+`}`), -32602)
	if _, _, st := c.runText("hello"); st != "completed" {
		t.Errorf("the run after the steered one ended %s", st)
	}
}

// TestSteerACP (in TestACPOneSession, its steer phase r; init is the
// session's initialize response): the prompt STEER tok steered with
// the text steer.
func acpSteer(t *testing.T, init gjson.Result, r *acpRun, tok, steer string) {
	if !init.Get("result._meta.steering.supported").Bool() {
		t.Errorf("initialize does not advertise steering: %s", init.Raw)
	}
	const m = "_session/steering"
	for i, want := range []string{`{"outcome":"promptRequired","reason":"noRunningTurn"}`, `{"outcome":"injected"}`, `{"outcome":"promptRequired","reason":"noRunningTurn"}`} {
		if got := r.response(m, i).Get("result").Raw; got != want {
			t.Errorf("steer %d: %s, want the result %s", i, r.response(m, i).Raw, want)
		}
	}
	if got := r.stopReason(0); got != "end_turn" {
		t.Errorf("the steered prompt: stopReason %q", got)
	}
	if n := len(r.responses("session/prompt")); n != 2 {
		t.Errorf("%d session/prompt answers, want 2 (the steered prompt, then hello)", n)
	}
	// The steered prompt's text says what steered it, and its answer
	// comes after that text.
	answered := r.index(func(e gjson.Result) bool {
		return e.Get("method").Str == "session/prompt" && e.Get("event").Str == "response"
	})
	var said strings.Builder
	for _, e := range r.events[:max(answered, 0)] {
		if e.Get("update.sessionUpdate").Str == "agent_message_chunk" {
			said.WriteString(e.Get("update.content.text").Str)
		}
	}
	if !strings.Contains(said.String(), "Steered by: "+steer+". ") {
		t.Errorf("the steered prompt's message, before its answer, does not say it was steered by %q: %q", steer, said.String())
	}
	steerCheckModel(t, tok, steer)
}
