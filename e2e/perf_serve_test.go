package e2e

// The performance of ccbridge serve (docs/performance.md, "ccbridge
// serve"): the real CLI against ccbridge's own fake model, measured over
// serve's HTTP API (docs/protocol/worker.md):
//
//  1. receipts: requests per second and the latency of a request's receipt
//     (POST …/requests, keep-alive connections), for fresh thread/list
//     requests and for duplicates of one completed request id, from one
//     client and from 8 at once;
//  2. the stream: a worker's event log filled with turns, then every
//     event read from ?after=0 by 1 and by 20 subscribers at once (the
//     SSE path, log → HTTP, on retained events);
//  3. memory: the resident set of the serve process with 1 worker and
//     with 5, idle, and so the cost of a worker; the CLIs' for context.
//
// It reports and fails nothing unless a run errors.
//
//	CCBRIDGE_PERF=1 go test -run TestPerfServe -v -count=1 -timeout 10m ./e2e
//
// Knobs (environment): CCBRIDGE_PERF_SERVE_N (2000 requests a case),
// CCBRIDGE_PERF_SERVE_TURNS (400 turns to fill the log; about 13
// events each, under the 10,000 a log keeps),
// CCBRIDGE_PERF_SERVE_SSE_RUNS (5 runs of each stream case).

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

const (
	perfServeClients     = 8  // the concurrent HTTP clients of part 1
	perfServeSubscribers = 20 // the concurrent stream readers of part 2
	perfServeWarmup      = 25 // fresh requests per client before part 1's cases, not counted
	// perfServeSettle is waited after every worker is idle and its CLI has
	// answered initialize, before memory is read.
	perfServeSettle = 2 * time.Second
	perfServeAPI    = "/api/runtime/codex/workers"
)

// perfServeProc is one `ccbridge serve` process.
type perfServeProc struct {
	cmd    *exec.Cmd
	stderr *lockedBuffer
	base   string // http://127.0.0.1:PORT
	exited chan struct{}
	err    error // cmd.Wait's, once exited is closed
}

// startPerfServe starts `ccbridge serve --fake-model default` with one
// worker per id, each in a fresh folder, HOME a fresh folder, on a port
// the kernel picks, and waits until it serves.
func startPerfServe(t *testing.T, cli string, ids []string) *perfServeProc {
	t.Helper()
	args := []string{"serve", "--fake-model", "default", "--listen", "127.0.0.1:0", "--log-level", "info"}
	for _, id := range ids {
		args = append(args, "--worker", id+"="+t.TempDir())
	}
	s := &perfServeProc{stderr: &lockedBuffer{}, exited: make(chan struct{})}
	s.cmd = exec.Command(ccbridgeBin, args...)
	s.cmd.Dir = t.TempDir()
	s.cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "CCBRIDGE_CLAUDE="+cli)
	s.cmd.Stderr = s.stderr
	s.cmd.SysProcAttr = withPdeathsig(&syscall.SysProcAttr{Setpgid: true})
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() { s.stop(t) })
	for deadline := time.Now().Add(60 * time.Second); s.base == ""; time.Sleep(10 * time.Millisecond) {
		for _, l := range strings.Split(s.stderr.String(), "\n") {
			if gjson.Get(l, "msg").Str == "serving" {
				s.base = "http://" + gjson.Get(l, "listen").Str
			}
		}
		select {
		case <-s.exited:
			t.Fatalf("ccbridge serve exited before serving: %v\n%s", s.err, tail(s.stderr.String(), 4000))
		default:
		}
		if s.base == "" && time.Now().After(deadline) {
			t.Fatalf("ccbridge serve did not serve within 60 s:\n%s", tail(s.stderr.String(), 4000))
		}
	}
	return s
}

// stop ends the process as a signal does (SIGTERM: its workers' CLIs are
// stopped), then its process group if it has not exited within 30 s.
func (s *perfServeProc) stop(t *testing.T) {
	select {
	case <-s.exited:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		if s.err != nil {
			t.Errorf("ccbridge serve ended with %v after SIGTERM:\n%s", s.err, tail(s.stderr.String(), 4000))
		}
	case <-time.After(30 * time.Second):
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
		t.Errorf("ccbridge serve did not exit within 30 s of SIGTERM:\n%s", tail(s.stderr.String(), 4000))
	}
}

// ready waits until every worker is idle with its CLI started (its model
// is known once the CLI has answered initialize) and returns each
// worker's thread id.
func (s *perfServeProc) ready(t *testing.T, c *http.Client, ids []string) map[string]string {
	t.Helper()
	var last []byte
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		status, body, err := perfServeGet(c, s.base+perfServeAPI)
		if err != nil || status != http.StatusOK {
			t.Fatalf("GET %s: %d %v %.300s", perfServeAPI, status, err, body)
		}
		last = body
		threads := map[string]string{}
		for _, w := range gjson.GetBytes(body, "workers").Array() {
			st := w.Get("status")
			if st.Get("state").Str == "idle" && st.Get("model").Str != "" && st.Get("thread_id").Str != "" {
				threads[w.Get("worker_id").Str] = st.Get("thread_id").Str
			}
		}
		if len(threads) == len(ids) {
			return threads
		}
	}
	t.Fatalf("the workers were not all idle with a CLI within 90 s: %.2000s\n%s", last, tail(s.stderr.String(), 4000))
	return nil
}

func perfServeGet(c *http.Client, url string) (int, []byte, error) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

func perfServePost(c *http.Client, url string, body []byte) (int, []byte, error) {
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// newPerfServeClient is a keep-alive client that keeps a connection for
// every concurrent client, without a proxy.
func newPerfServeClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns:        64,
		MaxIdleConnsPerHost: 64,
		DisableCompression:  true,
		IdleConnTimeout:     time.Minute,
	}}
}

// perfLoadCase is a measured case of requests, as a table shows it.
type perfLoadCase struct {
	name    string
	clients int
	load    perfServeLoad
}

// perfLoadTable prints cases as a Markdown table through p: rate,
// median, p99 and max latency.
func perfLoadTable(p func(format string, a ...any), cases []perfLoadCase) {
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	p("| case | clients | requests/s | median µs | p99 µs | max µs |")
	p("|---|---:|---:|---:|---:|---:|")
	for _, c := range cases {
		p("| %s | %d | %.0f | %.0f | %.0f | %.0f |", c.name, c.clients, c.load.rate(),
			us(percentile(c.load.lat, 0.5)), us(percentile(c.load.lat, 0.99)), us(c.load.lat[len(c.load.lat)-1]))
	}
}

// perfServeLoad is one case of part 1: n requests from some clients.
type perfServeLoad struct {
	n    int
	wall time.Duration
	lat  []int64 // sorted, ns: request written → receipt read
}

func (l perfServeLoad) rate() float64 { return float64(l.n) / l.wall.Seconds() }

// runPerfServeLoad posts n requests (body(i), i from 0) to url from
// clients goroutines at once, each one request at a time, and checks each
// answer with check.
func runPerfServeLoad(c *http.Client, url string, clients, n int, body func(i int) []byte, check func(i, status int, data []byte) error) (perfServeLoad, error) {
	lats := make([][]int64, clients)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	start := time.Now()
	for k := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := k; i < n; i += clients {
				b := body(i)
				t0 := time.Now()
				status, data, err := perfServePost(c, url, b)
				lats[k] = append(lats[k], int64(time.Since(t0)))
				if err == nil {
					err = check(i, status, data)
				}
				if err != nil {
					errs[k] = fmt.Errorf("request %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	l := perfServeLoad{n: n, wall: time.Since(start)}
	for _, v := range lats {
		l.lat = append(l.lat, v...)
	}
	slices.Sort(l.lat)
	return l, errors.Join(errs...)
}

// perfServeRead reads the stream at url until the event whose id is
// last, checking that the ids run 1, 2, … last; it returns the bytes
// read.
func perfServeRead(ctx context.Context, c *http.Client, url string, last uint64) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	r := bufio.NewReaderSize(resp.Body, 1<<20)
	var n int64
	var want uint64 = 1
	for {
		line, err := r.ReadSlice('\n')
		n += int64(len(line))
		if rest, ok := bytes.CutPrefix(line, []byte("id: ")); ok {
			id, perr := strconv.ParseUint(string(bytes.TrimSpace(rest)), 10, 64)
			if perr != nil || id != want {
				return n, fmt.Errorf("event id %q where %d was due", bytes.TrimSpace(rest), want)
			}
			if id == last {
				return n, nil
			}
			want++
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return n, fmt.Errorf("the stream ended after event %d of %d: %w", want-1, last, err)
		}
	}
}

// perfServeTurns follows the stream at url and sends the id and status
// of every turn/completed on the returned channel, until ctx is done.
func perfServeTurns(ctx context.Context, c *http.Client, url string) (<-chan [2]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	done := make(chan [2]string, 16)
	go func() {
		defer resp.Body.Close()
		defer close(done)
		r := bufio.NewReaderSize(resp.Body, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok && gjson.GetBytes(data, "payload.method").Str == "turn/completed" {
				turn := gjson.GetBytes(data, "payload.params.turn")
				select {
				case done <- [2]string{turn.Get("id").Str, turn.Get("status").Str}:
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return done, nil
}

// perfServeTurn runs one turn on the worker at wurl and waits for its
// turn/completed on turns.
func perfServeTurn(c *http.Client, wurl, thread, text string, turns <-chan [2]string) error {
	body := `{"request":{"request_id":` + jsonStr(token("turn")) + `,"method":"turn/start","params":{"thread_id":` + jsonStr(thread) +
		`,"input":[{"type":"text","text":` + jsonStr(text) + `}]}}}`
	status, data, err := perfServePost(c, wurl+"/requests", []byte(body))
	if err != nil {
		return err
	}
	id := gjson.GetBytes(data, "payload.response.turn.id").Str
	if status != http.StatusOK || id == "" {
		return fmt.Errorf("turn/start: %d %.500s", status, data)
	}
	timeout := time.After(90 * time.Second)
	for {
		select {
		case done, ok := <-turns:
			if !ok {
				return errors.New("the stream ended during the turn")
			}
			if done[0] != id {
				continue
			}
			if done[1] != "completed" {
				return fmt.Errorf("turn %s ended %s", id, done[1])
			}
			return nil
		case <-timeout:
			return fmt.Errorf("turn %s did not complete within 90 s", id)
		}
	}
}

// perfServeMem is the memory of a serve process and its process tree, KiB.
type perfServeMem struct {
	rss, hwm          int64 // the serve process's VmRSS and VmHWM
	guardRSS, nGuard  int64 // the guardians (ccbridge __ccbridge_guardian__)
	cliRSS, cliPSS    int64 // everything below them: the CLIs and what they started
	nCLI              int64
	guardPSS, rootPSS int64
}

// smapsPss is the proportional set size of process pid, KiB
// (/proc/PID/smaps_rollup), or 0.
func smapsPss(pid int) int64 { return procKB(pid, "smaps_rollup", "Pss:") }

// readPerfServeMem reads the memory of process root and of its
// descendants.
func readPerfServeMem(root int) perfServeMem {
	m := perfServeMem{rss: vmRSS(root), hwm: vmHWM(root), rootPSS: smapsPss(root)}
	var walk func(pid int, underGuard bool)
	walk = func(pid int, underGuard bool) {
		for _, c := range children(pid) {
			cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", c))
			if !underGuard && bytes.Contains(cmd, []byte("\x00__ccbridge_guardian__\x00")) {
				m.guardRSS += vmRSS(c)
				m.guardPSS += smapsPss(c)
				m.nGuard++
				walk(c, true)
				continue
			}
			m.cliRSS += vmRSS(c)
			m.cliPSS += smapsPss(c)
			m.nCLI++
			walk(c, underGuard)
		}
	}
	walk(root, false)
	return m
}

// perfServeIdleMem starts serve with n workers, waits until they are
// idle, and reads its memory.
func perfServeIdleMem(t *testing.T, cli string, n int) perfServeMem {
	t.Helper()
	var ids []string
	for i := range n {
		ids = append(ids, "w"+strconv.Itoa(i+1))
	}
	s := startPerfServe(t, cli, ids)
	s.ready(t, newPerfServeClient(), ids)
	time.Sleep(perfServeSettle)
	m := readPerfServeMem(s.cmd.Process.Pid)
	s.stop(t)
	return m
}

func TestPerfServe(t *testing.T) {
	perfOnly(t, "the measure of ccbridge serve")
	cli := realCLI(t)
	n := int(envIntDefault("CCBRIDGE_PERF_SERVE_N", 2000))
	turns := int(envIntDefault("CCBRIDGE_PERF_SERVE_TURNS", 400))
	sseRuns := int(envIntDefault("CCBRIDGE_PERF_SERVE_SSE_RUNS", 5))
	started := time.Now()
	loadBefore := loadAvg()

	// 3. Memory, idle, with 1 worker, then with 5.
	mem1 := perfServeIdleMem(t, cli, 1)
	mem5 := perfServeIdleMem(t, cli, 5)

	// 1 and 2 on a serve of 5 workers: w1 takes the requests, w2's log
	// is filled and streamed.
	ids := []string{"w1", "w2", "w3", "w4", "w5"}
	s := startPerfServe(t, cli, ids)
	c := newPerfServeClient()
	threads := s.ready(t, c, ids)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	// 1. Receipts. One turn first, so that thread/list has a thread to list.
	// Its stream is closed before the cases: no subscriber reads w1's
	// receipts while they are measured.
	w1 := s.base + perfServeAPI + "/w1"
	fctx, fcancel := context.WithCancel(ctx)
	follow, err := perfServeTurns(fctx, c, w1+"/stream")
	if err != nil {
		t.Fatal(err)
	}
	if err := perfServeTurn(c, w1, threads["w1"], "perf serve list", follow); err != nil {
		t.Fatalf("w1: %v", err)
	}
	fcancel()
	listBody := func(id string) []byte {
		return []byte(`{"request":{"request_id":"` + id + `","method":"thread/list"}}`)
	}
	fresh := func(tag string) (func(int) []byte, func(int, int, []byte) error) {
		return func(i int) []byte { return listBody(tag + strconv.Itoa(i)) },
			func(i, status int, data []byte) error {
				if status != http.StatusOK || gjson.GetBytes(data, "event_type").Str != "worker.response" ||
					gjson.GetBytes(data, "payload.request_id").Str != tag+strconv.Itoa(i) {
					return fmt.Errorf("%d %.300s", status, data)
				}
				return nil
			}
	}
	body, check := fresh("warm-")
	if _, err := runPerfServeLoad(c, w1+"/requests", perfServeClients, perfServeClients*perfServeWarmup, body, check); err != nil {
		t.Fatalf("warm-up: %v", err)
	}
	status, dup, err := perfServePost(c, w1+"/requests", listBody("dup"))
	if err != nil || status != http.StatusOK {
		t.Fatalf("thread/list: %d %v %.300s", status, err, dup)
	}
	listed := len(gjson.GetBytes(dup, "payload.response.data").Array())
	dupCheck := func(i, status int, data []byte) error {
		if status != http.StatusOK || !bytes.Equal(data, dup) {
			return fmt.Errorf("%d %.300s, not the first receipt", status, data)
		}
		return nil
	}
	var loads []perfLoadCase
	for _, lc := range []struct {
		name    string
		clients int
		dup     bool
	}{
		{"fresh thread/list (a new request_id each)", 1, false},
		{"fresh thread/list (a new request_id each)", perfServeClients, false},
		{"duplicate of one completed thread/list", 1, true},
		{"duplicate of one completed thread/list", perfServeClients, true},
	} {
		body, check := fresh(fmt.Sprintf("c%d-%d-", len(loads), lc.clients))
		if lc.dup {
			body, check = func(int) []byte { return listBody("dup") }, dupCheck
		}
		l, err := runPerfServeLoad(c, w1+"/requests", lc.clients, n, body, check)
		if err != nil {
			t.Fatalf("%s, %d clients: %v", lc.name, lc.clients, err)
		}
		loads = append(loads, perfLoadCase{lc.name, lc.clients, l})
	}

	// 2. The stream: fill w2's log with turns, then read it all from
	// ?after=0.
	w2 := s.base + perfServeAPI + "/w2"
	fctx, fcancel = context.WithCancel(ctx)
	follow2, err := perfServeTurns(fctx, c, w2+"/stream?after=0")
	if err != nil {
		t.Fatal(err)
	}
	fillStart := time.Now()
	for i := 1; i <= turns; i++ {
		if err := perfServeTurn(c, w2, threads["w2"], fmt.Sprintf("perf serve turn %d", i), follow2); err != nil {
			t.Fatalf("w2, turn %d: %v", i, err)
		}
	}
	fillTime := time.Since(fillStart)
	fcancel()
	status, st, err := perfServeGet(c, w2)
	if err != nil || status != http.StatusOK {
		t.Fatalf("GET w2: %d %v", status, err)
	}
	last, oldest := uint64(gjson.GetBytes(st, "latest_seq").Uint()), gjson.GetBytes(st, "oldest_seq").Uint()
	if oldest != 1 {
		t.Fatalf("w2's log keeps events from seq %d, not 1: more turns than --retain-events keeps", oldest)
	}
	sse := newPerfServeClient()
	var streamBytes int64
	// walls[k] are the wall times of the runs with subs[k] subscribers.
	subs := []int{1, perfServeSubscribers}
	walls := make([][]time.Duration, len(subs))
	var slowest []time.Duration // 20 subscribers: the slowest one's time, each run
	// One read first, not counted.
	if _, err := perfServeRead(ctx, sse, w2+"/stream?after=0", last); err != nil {
		t.Fatalf("warm-up read: %v", err)
	}
	for range sseRuns {
		for k, nsub := range subs {
			errs := make([]error, nsub)
			took := make([]time.Duration, nsub)
			got := make([]int64, nsub)
			var wg sync.WaitGroup
			go1 := make(chan struct{})
			for j := range nsub {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-go1
					t0 := time.Now()
					got[j], errs[j] = perfServeRead(ctx, sse, w2+"/stream?after=0", last)
					took[j] = time.Since(t0)
				}()
			}
			t0 := time.Now()
			close(go1)
			wg.Wait()
			walls[k] = append(walls[k], time.Since(t0))
			if err := errors.Join(errs...); err != nil {
				t.Fatalf("%d subscribers: %v", nsub, err)
			}
			streamBytes = got[0]
			if nsub > 1 {
				slowest = append(slowest, slices.Max(took))
			}
		}
	}
	memAfter := readPerfServeMem(s.cmd.Process.Pid)
	cancel()
	s.stop(t)

	// The report.
	mb := func(kib int64) float64 { return float64(kib) * 1024 / 1e6 }
	var r strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&r, format+"\n", a...) }
	p("")
	p("ccbridge serve: the real CLI (%s) against --fake-model default; MB = 10^6 bytes", filepath.Base(cli))
	p("started %s UTC, %s in all; load average before: %s; after: %s (nproc %d)",
		started.UTC().Format("15:04:05"), time.Since(started).Round(time.Second), loadBefore, loadAvg(), runtime.NumCPU())
	p("")
	p("Receipts: POST …/workers/w1/requests of a 5-worker serve, keep-alive connections (one per client),")
	p("%d requests a case (each client one at a time), after %d fresh ones not counted; thread/list lists %d thread(s).", n, perfServeClients*perfServeWarmup, listed)
	p("Latency: request written → receipt read, at the client.")
	p("")
	perfLoadTable(p, loads)
	p("")
	p("Stream: the SSE path (event log → HTTP) on retained events. w2's log filled by %d turns of the fake model's", turns)
	p("fallback answer (%s, %.1f turns/s): %d events, %.2f MB of SSE a subscriber; then GET …/w2/stream?after=0", fillTime.Round(100*time.Millisecond), float64(turns)/fillTime.Seconds(), last, float64(streamBytes)/1e6)
	p("read to the last event, by 1 subscriber, then by %d at once; events/s = events delivered (all subscribers) / wall time.", perfServeSubscribers)
	p("%d runs each, after one read not counted; median shown, every run in brackets.", sseRuns)
	p("")
	p("| subscribers | events delivered | wall ms | events/s | MB/s |")
	p("|---:|---:|---:|---:|---:|")
	for k, nsub := range subs {
		ms := runValues(walls[k], func(d time.Duration) float64 { return float64(d) / 1e6 })
		rates := runValues(walls[k], func(d time.Duration) float64 { return float64(nsub) * float64(last) / d.Seconds() })
		mbs := runValues(walls[k], func(d time.Duration) float64 { return float64(nsub) * float64(streamBytes) / 1e6 / d.Seconds() })
		p("| %d | %d | %.1f (%s) | %.0f (%s) | %.1f |", nsub, int64(nsub)*int64(last),
			median(slices.Clone(ms)), formatValues("%.1f", ms), median(slices.Clone(rates)), formatValues("%.0f", rates), median(mbs))
	}
	slow := runValues(slowest, func(d time.Duration) float64 { return float64(d) / 1e6 })
	p("The slowest of the %d subscribers took %s ms (each run).", perfServeSubscribers, formatValues("%.1f", slow))
	p("")
	p("Memory: serve idle (every worker idle, its CLI's initialize answered, then %s); VmRSS and VmHWM of the", perfServeSettle)
	p("ccbridge serve process; the guardians and the CLIs (each CLI's whole tree) summed, VmRSS and Pss.")
	p("")
	p("| serve with | ccbridge VmRSS MB | ccbridge VmHWM MB | guardians: VmRSS MB (Pss), count | CLI processes: VmRSS MB (Pss), count |")
	p("|---|---:|---:|---:|---:|")
	row := func(what string, m perfServeMem) {
		p("| %s | %.1f | %.1f | %.1f (%.1f), %d | %.1f (%.1f), %d |", what, mb(m.rss), mb(m.hwm),
			mb(m.guardRSS), mb(m.guardPSS), m.nGuard, mb(m.cliRSS), mb(m.cliPSS), m.nCLI)
	}
	row("1 worker", mem1)
	row("5 workers", mem5)
	row("5 workers, after the receipts and the stream", memAfter)
	p("")
	p("Per worker, ccbridge's own: (VmRSS 5 − VmRSS 1) / 4 = %.2f MB; (VmHWM 5 − VmHWM 1) / 4 = %.2f MB.",
		mb(mem5.rss-mem1.rss)/4, mb(mem5.hwm-mem1.hwm)/4)
	p("Per worker, the CLI's: (VmRSS 5 − VmRSS 1) / 4 = %.1f MB (Pss %.1f MB); a guardian's: %.1f MB (Pss %.1f MB).",
		mb(mem5.cliRSS-mem1.cliRSS)/4, mb(mem5.cliPSS-mem1.cliPSS)/4, mb(mem5.guardRSS-mem1.guardRSS)/4, mb(mem5.guardPSS-mem1.guardPSS)/4)
	t.Log(r.String())
}
