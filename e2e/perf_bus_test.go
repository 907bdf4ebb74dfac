package e2e

// Lane 004 through the bus (docs/protocol/bus.md, "Performance"), in one
// run, side by side: POST …/requests to a worker of `ccbridge serve
// --worker` (its receipts in memory, then in bbolt under --state-dir),
// and through a `ccbridge serve --bus` gateway to a `ccbridge --ui
// control --bus` worker on one NATS server (JetStream, file storage, one
// replica) and on a three-node cluster (every stream and bucket with
// three replicas; the worker on node 1, the gateway on node 2). Then the
// worker's events fanned out: 1 and 20 subscribers reading its stream
// from the start at once. It reports and fails nothing unless a run
// errors.
//
//	CCBRIDGE_PERF=1 go test -run TestPerfBus -v -count=1 -timeout 20m ./e2e
//
// Knob: CCBRIDGE_PERF_BUS_N (500 requests a case).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/tidwall/gjson"
)

func TestPerfBus(t *testing.T) {
	perfOnly(t, "the measure of lane 004 through the bus")
	n := int(envIntDefault("CCBRIDGE_PERF_BUS_N", 500))
	loadBefore := loadAvg()
	started := time.Now()
	oneNode := func(t *testing.T) string {
		ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
		if err != nil {
			t.Fatal(err)
		}
		go ns.Start()
		if !ns.ReadyForConnections(20 * time.Second) {
			t.Fatal("the NATS server did not start")
		}
		t.Cleanup(ns.Shutdown)
		return ns.ClientURL()
	}
	targets := []struct {
		name  string
		start func(t *testing.T) *svServer
	}{
		{"serve --worker (memory)", func(t *testing.T) *svServer {
			return svStart(t, svOpts{workers: []string{"perf"}, external: true})
		}},
		{"serve --worker --state-dir (bbolt)", func(t *testing.T) *svServer {
			return svStart(t, svOpts{workers: []string{"perf"}, external: true, args: []string{"--state-dir", t.TempDir()}})
		}},
		{"serve --bus → worker --bus, 1 node", func(t *testing.T) *svServer {
			url := oneNode(t)
			busStartWorker(t, "perf", url, "--bus-replicas", "1")
			return svStart(t, svOpts{external: true, args: []string{"--bus", url}})
		}},
		{"serve --bus → worker --bus, 3 nodes (R3)", func(t *testing.T) *svServer {
			cl := busStartCluster(t, 3)
			busStartWorker(t, "perf", cl.url(1), "--bus-replicas", "3")
			return svStart(t, svOpts{external: true, args: []string{"--bus", cl.url(2), "--bus-replicas", "3"}})
		}},
	}

	c := newPerfServeClient()
	sse := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32, DisableCompression: true}}
	body := func(id string) []byte {
		return []byte(`{"request":{"request_id":"` + id + `","method":"thread/list"}}`)
	}
	type fan struct {
		name        string
		subscribers int
		events      uint64
		wall        time.Duration
	}
	var rows []perfLoadCase
	var fans []fan
	for _, target := range targets {
		t.Run(target.name, func(t *testing.T) {
			s := target.start(t)
			url := s.base + "/perf/requests"
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
				t.Fatalf("warm-up: %v", err)
			}
			dupID := token("dup")
			status, dup, err := perfServePost(c, url, body(dupID))
			if err != nil || status != http.StatusOK {
				t.Fatalf("%d %v %.300s", status, err, dup)
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
					t.Fatalf("%s: %v", lc.what, err)
				}
				rows = append(rows, perfLoadCase{target.name + ": " + lc.what, lc.clients, l})
			}
			// The fan-out: every event from the first, read by 1, then
			// by 20 subscribers at once.
			last := s.status("perf").Get("latest_seq").Uint()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			for _, nsub := range []int{1, perfServeSubscribers} {
				errs := make([]error, nsub)
				var wg sync.WaitGroup
				t0 := time.Now()
				for j := range nsub {
					wg.Add(1)
					go func() {
						defer wg.Done()
						_, errs[j] = perfServeRead(ctx, sse, s.base+"/perf/stream?after=0", last)
					}()
				}
				wg.Wait()
				if err := errors.Join(errs...); err != nil {
					t.Fatalf("%d subscribers: %v", nsub, err)
				}
				fans = append(fans, fan{target.name, nsub, last, time.Since(t0)})
			}
		})
	}
	p := func(format string, a ...any) { fmt.Printf(format+"\n", a...) }
	p("lane 004 receipts through the bus: %d requests a case, after %d not counted; started %s UTC, %s in all; load average before %s, after %s (nproc %d)",
		n, perfServeClients*perfServeWarmup, started.UTC().Format("15:04:05"), time.Since(started).Round(time.Second), loadBefore, loadAvg(), runtime.NumCPU())
	p("")
	perfLoadTable(p, rows)
	p("")
	p("| stream from the start | subscribers | events each | wall ms | events/s, all subscribers |")
	p("|---|---:|---:|---:|---:|")
	for _, f := range fans {
		p("| %s | %d | %d | %.0f | %.0f |", f.name, f.subscribers, f.events, float64(f.wall.Microseconds())/1e3, float64(f.events)*float64(f.subscribers)/f.wall.Seconds())
	}
}
