package worker

import (
	"log/slog"
	"strings"
	"testing"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/adapter/control"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/lane000"
	"github.com/ccbridge/ccbridge/mapping/lane004"
)

// TestWorker004ItemsOutliveTheirLine: the CLI's lines reach lane 004's
// item events in buffers the reader reuses (LoopConfig.ReuseBlocks), so
// what items004 keeps from a line (a tool's name, until its result)
// must be its own copy. The line is overwritten after it was handled,
// as the next block overwrites it; the result's item still names the
// tool.
func TestWorker004ItemsOutliveTheirLine(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	plane, err := control.Open(control.Config{}, 0, quiet, okTarget{}, func(fn func()) bool { go fn(); return true })
	if err != nil {
		t.Fatal(err)
	}
	defer plane.Close()
	log := plane.Log004()
	w := &controlWorker{
		loop:    adapter.NewLoop(adapter.LoopConfig{Logger: quiet}),
		plane:   plane,
		prompts: []controlPrompt{{uuid: "turn-1"}},
	}
	w.w4.active = true

	line := []byte(`{"type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Write","input":{"file_path":"a.txt","content":"x"}}]},"session_id":"s","parent_tool_use_id":null}`)
	// As the loop hands it over: a view of the reader's buffer.
	ev := mapping.RouteString(unsafe.String(unsafe.SliceData(line), len(line)))
	w.items004(&ev)
	for i := range line {
		line[i] = 'z'
	}
	result := []byte(`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"done"}]},"session_id":"s","parent_tool_use_id":null}`)
	ev = mapping.Route(result)
	w.items004(&ev)

	lines, _, _ := log.After(0, 0, nil)
	var got []string
	for _, l := range lines {
		if gjson.GetBytes(l, "payload.method").Str == "item/completed" {
			got = append(got, gjson.GetBytes(l, "payload.params.item").Raw)
		}
	}
	if len(got) != 1 || gjson.Get(got[0], "tool").Str != "Write" || gjson.Get(got[0], "id").Str != "toolu_1" {
		t.Fatalf("item/completed events %s, want one for toolu_1 naming Write (events: %s)", got, lines)
	}
}

// okTarget is a worker that takes every input, and answers every lane-004
// request with an empty success.
type okTarget struct{}

func (okTarget) ControlSessionID() string          { return "" }
func (okTarget) ControlState() control.WorkerState { return control.WorkerIdle }
func (okTarget) ControlInject(_ []byte, _ bool, done func(lane000.Result, string)) {
	done(lane000.OK, control.DetailSent)
}
func (okTarget) ControlInterrupt(done func(lane000.Result, string)) {
	done(lane000.OK, control.DetailNoTurn)
}

func (okTarget) Do(req *lane004.Request, done func(control.Receipt004)) {
	go done(control.Receipt004{OK: true, Response: `{}`})
}

// TestWorker004Steers: a steer the CLI took (its replay, then a result
// naming it with its turn) ends with its turn, after turn/steered; a
// steer the turn's result does not name runs as a turn of its own
// (turn/started with its id, then its own turn/completed).
func TestWorker004Steers(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	plane, err := control.Open(control.Config{}, 0, quiet, okTarget{}, func(fn func()) bool { go fn(); return true })
	if err != nil {
		t.Fatal(err)
	}
	defer plane.Close()
	w := &controlWorker{
		loop:    adapter.NewLoop(adapter.LoopConfig{Logger: quiet}),
		plane:   plane,
		prompts: []controlPrompt{{uuid: "turn-1"}, {uuid: "steer-1", steers: "turn-1"}, {uuid: "steer-2", steers: "turn-1"}},
	}
	w.w4.active = true
	result := func(uuids string) {
		ev := mapping.RouteString(`{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s","user_message_uuids":[` + uuids + `]}`)
		w.endPrompts(&ev)
		w.promoteSteers()
	}
	w.steerTaken("steer-1")
	w.steerTaken("turn-1") // a prompt's replay: no steer
	result(`"turn-1","steer-1"`)
	if w.currentTurn() != "steer-2" || len(w.prompts) != 1 || w.prompts[0].steers != "" {
		t.Fatalf("after the turn's result: prompts %+v, want steer-2 running as a turn", w.prompts)
	}
	result(`"steer-2"`)
	lines, _, _ := plane.Log004().After(0, 0, nil)
	var got []string
	for _, l := range lines {
		p := gjson.GetBytes(l, "payload.params")
		got = append(got, gjson.GetBytes(l, "payload.method").Str+":"+p.Get("turn.id").Str+p.Get("steerId").Str)
	}
	want := "turn/steered:steer-1 turn/completed:turn-1 turn/started:steer-2 turn/completed:steer-2"
	if strings.Join(got, " ") != want {
		t.Errorf("events %q, want %q", strings.Join(got, " "), want)
	}
}
