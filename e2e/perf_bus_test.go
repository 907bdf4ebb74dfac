package e2e

// The receipts of lane 004 through the bus (docs/protocol/bus.md,
// "Performance"): POST …/requests through a `ccbridge serve --bus`
// gateway to a `ccbridge --ui control --bus` worker, one NATS server in
// this process (JetStream, file storage, one replica), against the same
// requests to a worker of `ccbridge serve --worker` (its receipts in
// memory), in one run. It reports and fails nothing unless a run errors.
//
//	CCBRIDGE_PERF=1 go test -run TestPerfBus -v -count=1 -timeout 10m ./e2e
//
// Knob: CCBRIDGE_PERF_BUS_N (500 requests a case).

import (
	"bytes"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/tidwall/gjson"
)

func TestPerfBus(t *testing.T) {
	perfOnly(t, "the measure of lane 004 through the bus")
	n := int(envIntDefault("CCBRIDGE_PERF_BUS_N", 500))
	loadBefore := loadAvg()
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(20 * time.Second) {
		t.Fatal("the NATS server did not start")
	}
	t.Cleanup(ns.Shutdown)

	busStartWorker(t, "perf", ns.ClientURL(), "--bus-replicas", "1")
	gw := svStart(t, svOpts{external: true, args: []string{"--bus", ns.ClientURL()}})
	local := svStart(t, svOpts{workers: []string{"perf"}, external: true})

	c := newPerfServeClient()
	body := func(id string) []byte {
		return []byte(`{"request":{"request_id":"` + id + `","method":"thread/list"}}`)
	}
	type row struct {
		name    string
		clients int
		load    perfServeLoad
	}
	var rows []row
	for _, target := range []struct {
		name string
		s    *svServer
	}{{"serve --worker (memory)", local}, {"serve --bus → worker --bus", gw}} {
		url := target.s.base + "/perf/requests"
		fresh := func(tag string) (func(int) []byte, func(int, int, []byte) error) {
			return func(i int) []byte { return body(tag + strconv.Itoa(i)) },
				func(i, status int, data []byte) error {
					if status != http.StatusOK || gjson.GetBytes(data, "payload.request_id").Str != tag+strconv.Itoa(i) {
						return fmt.Errorf("%d %.300s", status, data)
					}
					return nil
				}
		}
		b, check := fresh(token("warm"))
		if _, err := runPerfServeLoad(c, url, perfServeClients, perfServeClients*perfServeWarmup, b, check); err != nil {
			t.Fatalf("%s: warm-up: %v", target.name, err)
		}
		dupID := token("dup")
		status, dup, err := perfServePost(c, url, body(dupID))
		if err != nil || status != http.StatusOK {
			t.Fatalf("%s: %d %v %.300s", target.name, status, err, dup)
		}
		for _, lc := range []struct {
			what    string
			clients int
			dup     bool
		}{{"fresh thread/list", 1, false}, {"fresh thread/list", 8, false}, {"a duplicate", 1, true}, {"a duplicate", 8, true}} {
			b, check := fresh(token("f"))
			if lc.dup {
				b = func(int) []byte { return body(dupID) }
				check = func(_ int, status int, data []byte) error {
					if status != http.StatusOK || !bytes.Equal(data, dup) {
						return fmt.Errorf("%d %.300s, not the first receipt", status, data)
					}
					return nil
				}
			}
			l, err := runPerfServeLoad(c, url, lc.clients, n, b, check)
			if err != nil {
				t.Fatalf("%s, %s: %v", target.name, lc.what, err)
			}
			rows = append(rows, row{target.name + ": " + lc.what, lc.clients, l})
		}
	}
	p := func(format string, a ...any) { fmt.Printf(format+"\n", a...) }
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	p("lane 004 receipts through the bus: %d requests a case, after %d not counted; load average before %s, after %s (nproc %d)",
		n, perfServeClients*perfServeWarmup, loadBefore, loadAvg(), runtime.NumCPU())
	p("")
	p("| case | clients | requests/s | median µs | p99 µs | max µs |")
	p("|---|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		p("| %s | %d | %.0f | %.0f | %.0f | %.0f |", r.name, r.clients, r.load.rate(),
			us(percentile(r.load.lat, 0.5)), us(percentile(r.load.lat, 0.99)), us(r.load.lat[len(r.load.lat)-1]))
	}
}
