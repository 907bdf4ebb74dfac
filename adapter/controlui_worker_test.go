package adapter

import (
	"log/slog"
	"testing"
	"time"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter/control"
	"github.com/ccbridge/ccbridge/mapping"
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
	log, err := control.OpenEventLog(control.EventLogConfig{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	lane := control.NewLane004(control.Lane004Config{
		WorkerID: "w",
		Store:    control.NewMemoryStore(control.StoreConfig{TTL: time.Hour, MaxKeys: 10}),
		Log:      log,
		Target:   okTarget{},
		Submit:   func(fn func()) bool { go fn(); return true },
		Logger:   quiet,
	})
	w := &controlWorker{
		loop:    NewLoop(LoopConfig{Logger: quiet}),
		plane:   &controlPlane{log004: log, lane004: lane},
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

// okTarget answers every lane-004 request with an empty success.
type okTarget struct{}

func (okTarget) Do(req *lane004.Request, done func(control.Receipt004)) {
	go done(control.Receipt004{OK: true, Response: `{}`})
}
