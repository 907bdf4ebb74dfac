package serve

import (
	"bufio"
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ccbridge/ccbridge/adapter/control"
)

// benchWebLine is an ipc line of the size a streamed text delta has.
const benchWebLine = `{"type":"assistant_text","ipc_version":2,"msg_id":"msg_01perf","seq":3,"text":"lorem ipsum lorem ipsum lorem ipsum ","is_partial":true,"status":"streaming","parent_tool_use_id":null,"block_index":1}`

// BenchmarkWebLog is a web session's work for each line its ipc core
// writes: cut from the UI writer's output, numbered and kept in its log.
func BenchmarkWebLog(b *testing.B) {
	events, err := control.OpenEventLog(control.EventLogConfig{Retain: 1 << 16, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	out := &webOut{s: &webSession{events: events}}
	block := []byte(strings.Repeat(benchWebLine+"\n", 200))
	b.SetBytes(int64(len(block)))
	b.ReportAllocs()
	for b.Loop() {
		out.Write(block)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*200), "ns/line")
}

// BenchmarkWebStream is the whole way out: lines written by the session
// into its log, read by GET …/events and sent as server-sent events to a
// client over loopback HTTP, which reads them.
func BenchmarkWebStream(b *testing.B) {
	quiet := slog.New(slog.DiscardHandler)
	events, err := control.OpenEventLog(control.EventLogConfig{Retain: 1 << 20, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	s := &webSession{id: "bench", events: events, ended: make(chan struct{})}
	api := newServeAPI(nil, nil, quiet)
	api.web = newWebHost(webConfig{dirs: []string{b.TempDir()}, max: 1}, api, quiet)
	api.web.sessions[s.id] = s
	ts := httptest.NewServer(api.handler())
	defer ts.Close()
	defer api.web.stopStreams()

	resp, err := http.Get(ts.URL + "/api/web/sessions/bench/events")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReaderSize(resp.Body, 1<<16)
	out := &webOut{s: s}
	block := []byte(strings.Repeat(benchWebLine+"\n", 200))
	b.SetBytes(int64(len(block)))
	b.ReportAllocs()
	for b.Loop() {
		out.Write(block)
		for got := 0; got < 200; {
			line, err := r.ReadSlice('\n')
			if err != nil {
				b.Fatal(err)
			}
			if bytes.HasPrefix(line, []byte("data: ")) {
				got++
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*200), "ns/line")
}
