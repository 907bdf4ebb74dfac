package fakemodel

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// heapAfterGC is the live heap after a full collection.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestRequestLogRetainsNoBody: the CLI sends the whole conversation with
// every call; the log keeps a short copy of the prompt, never the body it
// came from. Each request here carries 256 KiB of earlier conversation
// and a short prompt; with the log holding a piece of each body, 120
// requests kept 30 MiB alive.
func TestRequestLogRetainsNoBody(t *testing.T) {
	srv := startScenario(t, `{"rules": [], "fallback": {"steps": [{"blocks": [{"type": "text", "text": "x"}]}]}}`)
	history := msg("user", []any{text(strings.Repeat("earlier conversation ", 256<<10/21))})
	send := func(i int) {
		resp := post(t, srv, "/v1/messages", body(false, history, msg("assistant", []any{text("ok")}), prompt(fmt.Sprint("p", i))))
		resp.Body.Close()
	}
	for i := range keepBodies {
		send(i) // the bodies the log keeps by default
	}
	before := heapAfterGC()
	const n = 120
	for i := range n {
		send(keepBodies + i)
	}
	after := heapAfterGC()
	grew := int64(after) - int64(before)
	t.Logf("live heap grew %d KiB over %d requests of %d KiB", grew>>10, n, len(body(false, history))>>10)
	if grew > 4<<20 {
		t.Errorf("the live heap grew by %d KiB over %d requests: the log keeps request bytes", grew>>10, n)
	}
	log := srv.Requests()
	if got := log[len(log)-1].Prompt; got != fmt.Sprint("p", keepBodies+n-1) {
		t.Errorf("last prompt %q", got)
	}
}

func TestOptionsLimitTheLog(t *testing.T) {
	sc, err := Parse([]byte(`{"rules": [], "fallback": {"steps": [{"blocks": [{"type": "text", "text": "x"}]}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		opts           Options
		entries, bodys int
	}{
		{Options{}, 20, keepBodies},
		{Options{MaxLog: 3}, 3, 3},
		{Options{MaxLog: 5, KeepBodies: 2}, 5, 2},
		{Options{KeepBodies: -1}, 20, 0},
		{Options{MaxLog: -1}, 0, 0},
	} {
		srv, err := StartWith(sc, nil, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			resp := post(t, srv, "/v1/messages", body(false, prompt(fmt.Sprint("p", i))))
			resp.Body.Close()
		}
		log := srv.Requests()
		bodies := 0
		for _, r := range log {
			if r.Body != nil {
				bodies++
			}
		}
		if len(log) != tc.entries || bodies != tc.bodys || srv.Count() != 20 {
			t.Errorf("%+v: %d entries, %d bodies, count %d; want %d, %d, 20", tc.opts, len(log), bodies, srv.Count(), tc.entries, tc.bodys)
		}
		if len(log) > 0 && log[len(log)-1].Prompt != "p19" {
			t.Errorf("%+v: last entry %+v", tc.opts, log[len(log)-1])
		}
		srv.Close()
	}
}
