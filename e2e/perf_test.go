package e2e

// The end-to-end performance harness (docs/performance.md). A fast fake CLI
// (this test binary, re-run as a helper) streams stream-json lines to the
// harness through each configuration in perfConfigs: nothing, a plain byte
// relay, ccbridge in drop-in mode. The harness measures throughput,
// per-message latency and the peak memory of the process in the middle.
//
//	CCBRIDGE_PERF=1 go test -run TestPerfHarness -v -count=1 ./e2e
//
// Knobs (environment): CCBRIDGE_PERF_NOASSERT=1 only reports;
// CCBRIDGE_PERF_RUNS (3), CCBRIDGE_PERF_MESSAGES (1000000),
// CCBRIDGE_PERF_SECONDS (5), CCBRIDGE_PERF_RATE (2000) and
// CCBRIDGE_PERF_BIG_BYTES (1073741824) change the workloads;
// CCBRIDGE_PERF_WORKLOADS=burst,burst64k,paced,big picks some of them.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// perfHelperEnv makes the test binary run as one of the harness's helper
// processes instead of the tests (see TestMain and runPerfHelper).
const perfHelperEnv = "CCBRIDGE_PERF_HELPER"

// The fake CLI's parameters, set by the harness in the environment, which
// every process in between passes on to it.
const (
	fakeModeEnv  = "CCBRIDGE_PERF_FAKE_MODE"  // burst, paced or big
	fakeNEnv     = "CCBRIDGE_PERF_FAKE_N"     // messages per turn (burst, paced)
	fakeRateEnv  = "CCBRIDGE_PERF_FAKE_RATE"  // messages per second (paced)
	fakeBatchEnv = "CCBRIDGE_PERF_FAKE_BATCH" // burst: bytes per write; 0 is one write per line
	fakeBigEnv   = "CCBRIDGE_PERF_FAKE_BIG"   // big: length of the line in bytes
)

// perfMarker precedes the send time (Unix ns, 19 digits) in the text of
// every message line. It is in the text, not in a field of its own, so that
// it survives a dialect that translates the frames.
var perfMarker = []byte("@@ts=")

const perfTSDigits = 19

// perfDropInArgs is what a drop-in host passes.
var perfDropInArgs = []string{"--output-format", "stream-json", "--input-format", "stream-json", "--verbose"}

// perfUserLine starts a turn in stream-json.
const perfUserLine = `{"type":"user","session_id":"","message":{"role":"user","content":[{"type":"text","text":"go"}]},"parent_tool_use_id":null}` + "\n"

// isStreamJSONResult reports a result line. The harness calls it on every
// line, so gjson (which allocates) only sees lines that may be one.
func isStreamJSONResult(line []byte) bool {
	return bytes.Contains(line, []byte(`"result"`)) && gjson.GetBytes(line, "type").Str == "result"
}

// perfEnv is what the configurations are built from.
type perfEnv struct {
	self     string // this test binary: the fake CLI and the relay
	ccbridge string // the ccbridge binary TestMain built
}

// perfConfig is one row of the harness: what sits between the harness (the
// UI) and the fake CLI.
type perfConfig struct {
	key  string // "direct", "relay", "ccbridge": the targets compare rows by key
	name string
	// command is the process the harness starts and talks to, and the
	// environment it adds to the fake's parameters (later entries win).
	command func(e *perfEnv) (path string, args, env []string)
	// start is written to the process's stdin to start one turn.
	start []byte
	// isEnd reports the line that ends the turn.
	isEnd func(line []byte) bool
	// skip names workloads this configuration is not measured on.
	skip []string
}

// perfConfigs are the rows. To add a dialect, add an entry: for example
//
//	{key: "ipc", name: "(d) ccbridge --ui ipc",
//		command: func(e *perfEnv) (string, []string, []string) {
//			return e.ccbridge, []string{"--ui", "ipc"}, []string{"CCBRIDGE_CLAUDE=" + e.self}
//		},
//		start: []byte(<the ipc message that sends a prompt> + "\n"),
//		isEnd: <reports the ipc message that ends a turn>},
//
// The fake CLI starts a turn on any stream-json "user" line, answers every
// control_request with success, and puts perfMarker in the text of every
// message, so latency is measured the same way through any dialect that
// keeps the text.
func perfConfigs() []perfConfig {
	return []perfConfig{
		{
			key:  "direct",
			name: "(a) nothing: fake CLI direct",
			command: func(e *perfEnv) (string, []string, []string) {
				return e.self, perfDropInArgs, nil
			},
			start: []byte(perfUserLine),
			isEnd: isStreamJSONResult,
		},
		{
			key:  "relay",
			name: "(b) plain byte relay (io.Copy)",
			command: func(e *perfEnv) (string, []string, []string) {
				return e.self, perfDropInArgs, []string{perfHelperEnv + "=relay", "CCBRIDGE_CLAUDE=" + e.self}
			},
			start: []byte(perfUserLine),
			isEnd: isStreamJSONResult,
		},
		{
			key:  "ccbridge",
			name: "(c) ccbridge drop-in",
			command: func(e *perfEnv) (string, []string, []string) {
				return e.ccbridge, perfDropInArgs, []string{"CCBRIDGE_CLAUDE=" + e.self}
			},
			start: []byte(perfUserLine),
			isEnd: isStreamJSONResult,
		},
		{
			key:  "ipc",
			name: "(d) ccbridge --ui ipc",
			command: func(e *perfEnv) (string, []string, []string) {
				return e.ccbridge, []string{"--ui", "ipc"}, []string{"CCBRIDGE_CLAUDE=" + e.self}
			},
			start: []byte(`{"type":"user_message","text":"go"}` + "\n"),
			isEnd: func(line []byte) bool {
				return bytes.Contains(line, []byte(`"turn_complete"`)) && gjson.GetBytes(line, "type").Str == "turn_complete"
			},
			// The ipc dialect holds each line whole to translate it, so a
			// 1 GiB line is over --max-line by design: not measured.
			skip: []string{"big"},
		},
	}
}

// perfWorkload is one kind of turn the fake CLI plays.
type perfWorkload struct {
	key  string
	name string
	env  []string // the fake's parameters
	// latency: record arrival − send for every message after the first
	// perfWarmup ones.
	latency bool
	want    int64 // message lines the turn must deliver (0: not checked)
	timeout time.Duration
}

const perfWarmup = 100

// perfRun is what one run of one workload through one configuration gave.
type perfRun struct {
	msgs    int64         // message lines received
	bytes   int64         // bytes of message lines received after the first
	span    time.Duration // arrival of the first message line to arrival of the end line
	total   time.Duration // start written to end line arrived
	longest int64         // longest line received, without its '\n'
	lat     []int64       // sorted latencies, ns
	cpu     time.Duration // CPU time of the started process from the first message to the end line
	maxrss  int64         // rusage ru_maxrss of the started process after it exited, KiB
	hwm     int64         // VmHWM of the started process when the turn ended, KiB
}

func (r perfRun) msgRate() float64 {
	if r.span <= 0 || r.msgs < 2 {
		return 0
	}
	return float64(r.msgs-1) / r.span.Seconds()
}

func (r perfRun) mbRate() float64 {
	if r.span <= 0 {
		return 0
	}
	return float64(r.bytes) / 1e6 / r.span.Seconds()
}

func (r perfRun) pct(p float64) time.Duration {
	return time.Duration(percentile(r.lat, p))
}

// percentile is the p-quantile (0 < p ≤ 1) of sorted values, or 0.
func percentile(sorted []int64, p float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// runValues is f of every run, in order.
func runValues[R any](runs []R, f func(R) float64) []float64 {
	var v []float64
	for _, r := range runs {
		v = append(v, f(r))
	}
	return v
}

// median is the median of v (sorted in place), or 0.
func median(v []float64) float64 {
	slices.Sort(v)
	if len(v) == 0 {
		return 0
	}
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// formatValues formats every value of v, comma-separated.
func formatValues(format string, v []float64) string {
	var s []string
	for _, x := range v {
		s = append(s, fmt.Sprintf(format, x))
	}
	return strings.Join(s, ", ")
}

// pipePerfProcess prepares cmd to be started by a harness: in a process
// group of its own that dies with the harness, its stderr kept in stderr,
// pipes to its stdin and from its stdout.
func pipePerfProcess(cmd *exec.Cmd, stderr *lockedBuffer) (io.WriteCloser, io.ReadCloser, error) {
	cmd.SysProcAttr = withPdeathsig(&syscall.SysProcAttr{Setpgid: true})
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	return stdin, stdout, nil
}

// perfTarget is one target of a performance report.
type perfTarget struct {
	what  string
	ok    bool
	got   string
	needs string // the workload it is measured on, where the report has several
}

// finishPerfReport adds a row for each target to the report in b, writes
// the report to stdout (with -v) or the test log, and fails the test with
// the missed targets (what, as "acp performance") unless noAssert.
func finishPerfReport(t *testing.T, b *strings.Builder, targets []perfTarget, what string, noAssert bool) {
	t.Helper()
	var missed []string
	for _, tg := range targets {
		met := "yes"
		if !tg.ok {
			met = "**no**"
			missed = append(missed, tg.what+": "+tg.got)
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", tg.what, tg.got, met)
	}
	if testing.Verbose() {
		fmt.Print(b.String())
	} else {
		t.Log(b.String())
	}
	if len(missed) > 0 && !noAssert {
		t.Errorf("%s targets missed (CCBRIDGE_PERF_NOASSERT=1 only reports):\n  %s", what, strings.Join(missed, "\n  "))
	}
}

func envIntDefault(name string, def int64) int64 {
	if v, err := strconv.ParseInt(os.Getenv(name), 10, 64); err == nil && v > 0 {
		return v
	}
	return def
}

// perfOnly skips a performance test (what) unless CCBRIDGE_PERF=1, under
// -race (it measures ccbridge's speed and memory, and its fakes are this
// test binary), and off Linux (its figures come from /proc).
func perfOnly(t *testing.T, what string) {
	t.Helper()
	switch {
	case os.Getenv("CCBRIDGE_PERF") != "1":
		t.Skip("set CCBRIDGE_PERF=1 to run " + what + " (docs/performance.md)")
	case raceEnabled() || ccbridgeRace:
		t.Skip(what + " measures speed and memory: run it without -race")
	case runtime.GOOS != "linux":
		t.Skip(what + " reads its figures from Linux's /proc")
	}
}

func TestPerfHarness(t *testing.T) {
	perfOnly(t, "the performance harness")
	noAssert := os.Getenv("CCBRIDGE_PERF_NOASSERT") == "1"
	runs := int(envIntDefault("CCBRIDGE_PERF_RUNS", 3))
	nBurst := envIntDefault("CCBRIDGE_PERF_MESSAGES", 1000000)
	seconds := envIntDefault("CCBRIDGE_PERF_SECONDS", 5)
	rate := envIntDefault("CCBRIDGE_PERF_RATE", 2000)
	bigBytes := envIntDefault("CCBRIDGE_PERF_BIG_BYTES", 1<<30)

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := &perfEnv{self: self, ccbridge: ccbridgeBin}

	workloads := []perfWorkload{
		{key: "burst", name: fmt.Sprintf("burst: %d messages, one write per line", nBurst),
			env: []string{fakeModeEnv + "=burst", fakeNEnv + "=" + strconv.FormatInt(nBurst, 10), fakeBatchEnv + "=0"}, want: nBurst, timeout: 60 * time.Second},
		{key: "burst64k", name: fmt.Sprintf("burst: %d messages, 64 KiB writes", nBurst),
			env: []string{fakeModeEnv + "=burst", fakeNEnv + "=" + strconv.FormatInt(nBurst, 10), fakeBatchEnv + "=65536"}, want: nBurst, timeout: 60 * time.Second},
		{key: "paced", name: fmt.Sprintf("paced: %d msg/s for %d s", rate, seconds),
			env:     []string{fakeModeEnv + "=paced", fakeNEnv + "=" + strconv.FormatInt(rate*seconds, 10), fakeRateEnv + "=" + strconv.FormatInt(rate, 10)},
			latency: true, want: rate * seconds, timeout: time.Duration(seconds)*time.Second + 60*time.Second},
		{key: "big", name: fmt.Sprintf("one line of %d bytes", bigBytes),
			env: []string{fakeModeEnv + "=big", fakeBigEnv + "=" + strconv.FormatInt(bigBytes, 10)}, want: 1, timeout: 120 * time.Second},
	}
	if only := os.Getenv("CCBRIDGE_PERF_WORKLOADS"); only != "" {
		keep := strings.Split(only, ",")
		workloads = slices.DeleteFunc(workloads, func(w perfWorkload) bool { return !slices.Contains(keep, w.key) })
	}
	configs := perfConfigs()
	// CCBRIDGE_PERF_BUILDS=name=path,… adds a drop-in row for each other
	// ccbridge binary (an older build, say), interleaved with the rest;
	// CCBRIDGE_PERF_CONFIGS=direct,relay,… keeps only those rows.
	for _, kv := range strings.Split(os.Getenv("CCBRIDGE_PERF_BUILDS"), ",") {
		name, path, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		configs = append(configs, perfConfig{key: "ccbridge@" + name, name: "(c) ccbridge drop-in, " + name,
			command: func(e *perfEnv) (string, []string, []string) {
				return path, perfDropInArgs, []string{"CCBRIDGE_CLAUDE=" + e.self}
			},
			start: []byte(perfUserLine), isEnd: isStreamJSONResult})
	}
	if only := os.Getenv("CCBRIDGE_PERF_CONFIGS"); only != "" {
		keep := strings.Split(only, ",")
		configs = slices.DeleteFunc(configs, func(c perfConfig) bool {
			return !slices.Contains(keep, c.key) && !strings.HasPrefix(c.key, "ccbridge@")
		})
	}
	wname := map[string]string{}
	for _, w := range workloads {
		wname[w.key] = w.name
	}

	// results[config][workload] holds one perfRun per repetition. The
	// repetitions are interleaved so that noise from other load on the
	// machine spreads over every configuration.
	results := map[string]map[string][]perfRun{}
	for _, c := range configs {
		results[c.key] = map[string][]perfRun{}
	}
	loadBefore := loadAvg()
	start := time.Now()
	for rep := range runs {
		for _, c := range configs {
			for _, w := range workloads {
				if slices.Contains(c.skip, w.key) {
					continue
				}
				r, err := runPerf(e, c, w)
				if err != nil {
					t.Fatalf("%s, %s, run %d: %v", c.name, w.name, rep+1, err)
				}
				if w.want > 0 && r.msgs != w.want {
					t.Fatalf("%s, %s: %d messages arrived, want %d", c.name, w.name, r.msgs, w.want)
				}
				if w.key == "big" && r.longest != bigBytes {
					t.Fatalf("%s: the big line arrived with %d bytes, want %d", c.name, r.longest, bigBytes)
				}
				results[c.key][w.key] = append(results[c.key][w.key], r)
			}
		}
	}
	elapsed := time.Since(start)

	// med is the median over the runs of f.
	med := func(cfg, wl string, f func(perfRun) float64) float64 {
		return median(runValues(results[cfg][wl], f))
	}
	all := func(cfg, wl string, f func(perfRun) float64, format string) string {
		return formatValues(format, runValues(results[cfg][wl], f))
	}
	msgRate := func(r perfRun) float64 { return r.msgRate() }
	mbRate := func(r perfRun) float64 { return r.mbRate() }
	us := func(p float64) func(perfRun) float64 {
		return func(r perfRun) float64 { return float64(r.pct(p)) / 1e3 }
	}
	cpuPerMsg := func(r perfRun) float64 {
		if r.msgs < 2 {
			return 0
		}
		return float64(r.cpu) / float64(r.msgs-1)
	}
	maxUS := func(r perfRun) float64 {
		if len(r.lat) == 0 {
			return 0
		}
		return float64(r.lat[len(r.lat)-1]) / 1e3
	}
	achieved := func(r perfRun) float64 { return r.msgRate() }
	maxrssMB := func(r perfRun) float64 { return float64(r.maxrss) * 1024 / 1e6 }
	hwmMB := func(r perfRun) float64 { return float64(r.hwm) * 1024 / 1e6 }
	secs := func(r perfRun) float64 { return r.total.Seconds() }

	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	p("")
	p("ccbridge performance harness: %d runs of each measurement, median shown; %s in all", runs, elapsed.Round(time.Second))
	p("load average before: %s; after: %s (nproc %d)", loadBefore, loadAvg(), runtime.NumCPU())
	p("")
	p("Throughput, from the arrival of the first message to the arrival of the result; MB = 10^6 bytes.")
	p("CPU ns/msg is the CPU time of the started process (all its threads, /proc/PID/task/*/schedstat) over that span,")
	p("per message; for (a) it is the fake CLI's own.")
	p("")
	p("| configuration | workload | msg/s | MB/s | CPU ns/msg |")
	p("|---|---|---:|---:|---:|")
	for _, wl := range []string{"burst", "burst64k"} {
		for _, c := range configs {
			p("| %s | %s | %.0f | %.1f | %.0f |", c.name, wname[wl],
				med(c.key, wl, msgRate), med(c.key, wl, mbRate), med(c.key, wl, cpuPerMsg))
		}
	}
	p("")
	p("Latency, arrival − send (%s; first %d messages of each run left out):", wname["paced"], perfWarmup)
	p("")
	p("| configuration | achieved msg/s | median µs | p99 µs | max µs | added median µs | added p99 µs |")
	p("|---|---:|---:|---:|---:|---:|---:|")
	baseMed, baseP99 := med("direct", "paced", us(0.5)), med("direct", "paced", us(0.99))
	for _, c := range configs {
		m, p99 := med(c.key, "paced", us(0.5)), med(c.key, "paced", us(0.99))
		added := func(v, base float64) string {
			if c.key == "direct" {
				return "—"
			}
			return fmt.Sprintf("%.1f", v-base)
		}
		p("| %s | %.0f | %.1f | %.1f | %.1f | %s | %s |", c.name, med(c.key, "paced", achieved),
			m, p99, med(c.key, "paced", maxUS), added(m, baseMed), added(p99, baseP99))
	}
	p("")
	p("Peak memory of the started process (for (a) the fake CLI itself), MB = 10^6 bytes. VmHWM is the process's")
	p("own peak RSS, from /proc/PID/status when the turn ended; the targets use it. ru_maxrss (from wait4 after")
	p("exit, as asked) is shown for reference but overstates: Linux makes it the largest of the process, its reaped")
	p("children (the fake CLI) and the RSS of the process that spawned it at the moment of the exec (vfork).")
	p("The harness itself peaked at %.1f MB (VmHWM).", float64(vmHWM(os.Getpid()))*1024/1e6)
	p("")
	p("| configuration | burst VmHWM MB | paced VmHWM MB | 1 GiB line VmHWM MB | 1 GiB line s | ru_maxrss MB burst / paced / 1 GiB |")
	p("|---|---:|---:|---:|---:|---|")
	for _, c := range configs {
		p("| %s | %.1f | %.1f | %.1f | %.2f | %.1f / %.1f / %.1f |", c.name,
			med(c.key, "burst", hwmMB), med(c.key, "paced", hwmMB), med(c.key, "big", hwmMB), med(c.key, "big", secs),
			med(c.key, "burst", maxrssMB), med(c.key, "paced", maxrssMB), med(c.key, "big", maxrssMB))
	}
	p("")
	p("Every run (in order):")
	p("")
	p("| configuration | burst msg/s | burst 64 KiB msg/s | paced p99 µs | 1 GiB line s | 1 GiB line VmHWM MB |")
	p("|---|---|---|---|---|---|")
	for _, c := range configs {
		p("| %s | %s | %s | %s | %s | %s |", c.name,
			all(c.key, "burst", msgRate, "%.0f"), all(c.key, "burst64k", msgRate, "%.0f"),
			all(c.key, "paced", us(0.99), "%.1f"), all(c.key, "big", secs, "%.2f"), all(c.key, "big", hwmMB, "%.1f"))
	}

	// The targets.
	type target = perfTarget
	ratio := med("ccbridge", "burst", msgRate) / med("relay", "burst", msgRate)
	ratio64 := med("ccbridge", "burst64k", msgRate) / med("relay", "burst64k", msgRate)
	addedP99 := med("ccbridge", "paced", us(0.99)) - baseP99
	rssStream := max(med("ccbridge", "burst", hwmMB), med("ccbridge", "paced", hwmMB))
	rssBig := med("ccbridge", "big", hwmMB)
	targets := []target{
		{"throughput ≥ 85% of the relay's (one write per line)", ratio >= 0.85, fmt.Sprintf("%.1f%%", 100*ratio), "burst"},
		{"throughput ≥ 85% of the relay's (64 KiB writes)", ratio64 >= 0.85, fmt.Sprintf("%.1f%%", 100*ratio64), "burst64k"},
		{fmt.Sprintf("added p99 latency < 50 µs at %d msg/s", rate), addedP99 < 50, fmt.Sprintf("%.1f µs", addedP99), "paced"},
		{"peak RSS < 15 MB while streaming (VmHWM, burst and paced)", rssStream < 15, fmt.Sprintf("%.1f MB", rssStream), "paced"},
		{fmt.Sprintf("peak RSS < 64 MB for a %d-byte line (VmHWM)", bigBytes), rssBig < 64, fmt.Sprintf("%.1f MB", rssBig), "big"},
	}
	ipcRatio := med("ipc", "burst", msgRate) / med("ccbridge", "burst", msgRate)
	ipcRatio64 := med("ipc", "burst64k", msgRate) / med("ccbridge", "burst64k", msgRate)
	ipcAddedP99 := med("ipc", "paced", us(0.99)) - baseP99
	ipcRSS := max(med("ipc", "burst", hwmMB), med("ipc", "paced", hwmMB))
	targets = append(targets,
		target{"ipc: throughput ≥ 50% of drop-in's (one write per line)", ipcRatio >= 0.5, fmt.Sprintf("%.1f%%", 100*ipcRatio), "burst"},
		target{"ipc: throughput ≥ 50% of drop-in's (64 KiB writes)", ipcRatio64 >= 0.5, fmt.Sprintf("%.1f%%", 100*ipcRatio64), "burst64k"},
		target{fmt.Sprintf("ipc: added p99 latency < 100 µs at %d msg/s", rate), ipcAddedP99 < 100, fmt.Sprintf("%.1f µs", ipcAddedP99), "paced"},
		target{"ipc: peak RSS < 20 MB while streaming (VmHWM, burst and paced)", ipcRSS < 20, fmt.Sprintf("%.1f MB", ipcRSS), "paced"},
	)
	targets = slices.DeleteFunc(targets, func(tg target) bool { return wname[tg.needs] == "" })
	p("")
	p("Targets (ccbridge drop-in, and the ipc dialect):")
	p("")
	p("| target | measured | met |")
	p("|---|---:|---|")
	finishPerfReport(t, &b, targets, "performance", noAssert)
}

// runPerf starts c's process, plays one turn of w through it and measures.
func runPerf(e *perfEnv, c perfConfig, w perfWorkload) (perfRun, error) {
	var res perfRun
	path, args, extra := c.command(e)
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), perfHelperEnv+"=fakecli")
	cmd.Env = append(cmd.Env, w.env...)
	cmd.Env = append(cmd.Env, extra...)
	var stderr lockedBuffer
	stdin, stdout, err := pipePerfProcess(cmd, &stderr)
	if err != nil {
		return res, err
	}
	if err := cmd.Start(); err != nil {
		return res, err
	}
	pid := cmd.Process.Pid
	timedOut := false
	watchdog := time.AfterFunc(w.timeout, func() {
		timedOut = true
		syscall.Kill(-pid, syscall.SIGKILL)
	})
	defer watchdog.Stop()
	fail := func(err error) (perfRun, error) {
		syscall.Kill(-pid, syscall.SIGKILL)
		cmd.Wait()
		if timedOut {
			err = fmt.Errorf("%w (timed out after %v)", err, w.timeout)
		}
		return res, fmt.Errorf("%w; stderr: %s", err, tail(stderr.String(), 2000))
	}
	if w.latency {
		res.lat = make([]int64, 0, 1<<16)
	}

	br := bufio.NewReaderSize(stdout, 1<<20)
	began := time.Now()
	if _, err := stdin.Write(c.start); err != nil {
		return fail(fmt.Errorf("starting the turn: %w", err))
	}
	var (
		partial int64 // bytes of a line longer than the buffer, so far
		first   time.Time
		end     time.Time
		cpu0    time.Duration
	)
	for end.IsZero() {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if partial == 0 && bytes.Contains(chunk, perfMarker) {
				res.msgs++
				if first.IsZero() {
					first = time.Now()
					cpu0 = taskCPU(pid)
				}
			}
			partial += int64(len(chunk))
			if !first.IsZero() {
				res.bytes += int64(len(chunk))
			}
			continue
		}
		if len(chunk) > 0 {
			now := time.Now()
			n := int64(len(chunk))
			body := bytes.TrimSuffix(chunk, []byte("\n"))
			res.longest = max(res.longest, partial+int64(len(body)))
			switch {
			case partial > 0:
				// The end of a long line, counted at its start.
				if !first.IsZero() {
					res.bytes += n
				}
			case c.isEnd(body):
				end = now
			default:
				i := bytes.Index(body, perfMarker)
				if i < 0 {
					break
				}
				res.msgs++
				if first.IsZero() {
					first = now
					cpu0 = taskCPU(pid)
				} else {
					res.bytes += n
				}
				if w.latency && res.msgs > perfWarmup {
					j := i + len(perfMarker)
					if ts, ok := parseTS(body[j:]); ok {
						res.lat = append(res.lat, now.UnixNano()-ts)
					}
				}
			}
			partial = 0
		}
		if err != nil && end.IsZero() {
			return fail(fmt.Errorf("output ended before the end of the turn (%d messages): %v", res.msgs, err))
		}
	}
	res.total = end.Sub(began)
	if !first.IsZero() {
		res.span = end.Sub(first)
	}
	res.cpu = taskCPU(pid) - cpu0
	if res.hwm = vmHWM(pid); res.hwm == 0 {
		return fail(errors.New("cannot read VmHWM from /proc"))
	}

	// End the session as a host does: close stdin, read to EOF, reap.
	stdin.Close()
	if _, err := io.Copy(io.Discard, br); err != nil {
		return fail(fmt.Errorf("draining: %w", err))
	}
	if err := cmd.Wait(); err != nil {
		return res, fmt.Errorf("exit: %v; stderr: %s", err, tail(stderr.String(), 2000))
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.maxrss = ru.Maxrss
	}
	slices.Sort(res.lat)
	return res, nil
}

// taskCPU is the CPU time used so far by the threads of process pid, from
// /proc/PID/task/*/schedstat (nanoseconds, unlike the ticks of /proc/PID/stat).
func taskCPU(pid int) time.Duration {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var sum time.Duration
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if fields := strings.Fields(string(data)); len(fields) > 0 {
			n, _ := strconv.ParseInt(fields[0], 10, 64)
			sum += time.Duration(n)
		}
	}
	return sum
}

// loadAvg is the first three fields of /proc/loadavg.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	return strings.Join(f[:min(3, len(f))], " ")
}

// vmHWM is the peak resident set size of process pid so far, in KiB, or 0.
func vmHWM(pid int) int64 { return procKB(pid, "status", "VmHWM:") }

// procKB reads the "key  N kB" line of /proc/PID/file: N, or 0.
func procKB(pid int, file, key string) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, key); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// runPerfHelper runs the test binary as one of the harness's helpers and
// exits: "fakecli" is the fast fake CLI, "relay" the plain byte relay.
func runPerfHelper(mode string) {
	var code int
	switch mode {
	case "fakecli":
		code = perfFakeCLI()
	case "relay":
		code = perfRelay()
	default:
		fmt.Fprintf(os.Stderr, "%s: unknown helper %q\n", perfHelperEnv, mode)
		code = 2
	}
	os.Exit(code)
}

// perfRelay is what a minimal hand-rolled bridge does: start the CLI named
// by CCBRIDGE_CLAUDE with our arguments and io.Copy both ways.
func perfRelay() int {
	cmd := exec.Command(os.Getenv("CCBRIDGE_CLAUDE"), os.Args[1:]...)
	cmd.Env = append(os.Environ(), perfHelperEnv+"=fakecli")
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = withPdeathsig(&syscall.SysProcAttr{})
	in, err := cmd.StdinPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		return 1
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		return 1
	}
	go func() {
		io.Copy(in, os.Stdin)
		in.Close()
	}()
	io.Copy(os.Stdout, out)
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		return 1
	}
	return 0
}

// The fake CLI's frames. Every message line has perfMarker and a 19-digit
// send time at the start of its text, patched in place before each write.
const (
	perfSessionID = "5c3bb572-859f-4ecf-9616-2b9d21f1b011"
	perfFill      = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor. "

	perfDeltaHead = `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`
	perfDeltaTail = `"}},"session_id":"` + perfSessionID + `","parent_tool_use_id":null,"uuid":"6ee59b9f-a072-407b-9bd6-a8195be95338","api_message_id":"msg_01perf"}`

	perfAssistantHead = `{"type":"assistant","message":{"id":"msg_01perf","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"`
	perfAssistantTail = `"}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":900,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}},"parent_tool_use_id":null,"session_id":"` + perfSessionID + `","uuid":"600b3289-d028-4ac9-9bdf-22534796e959"}`

	perfInit   = `{"type":"system","subtype":"init","cwd":"/tmp","session_id":"` + perfSessionID + `","tools":["Bash","Read","Write"],"mcp_servers":[],"model":"claude-sonnet-4-5","permissionMode":"default","slash_commands":[],"apiKeySource":"none","output_style":"default","uuid":"1d1e7a1c-65c4-4d57-9d6e-1f0c1e0a9c11"}` + "\n"
	perfResult = `{"type":"result","subtype":"success","is_error":false,"duration_ms":1200,"duration_api_ms":1100,"num_turns":1,"result":"done","stop_reason":"end_turn","session_id":"` + perfSessionID + `","total_cost_usd":0.0123,"usage":{"input_tokens":12,"output_tokens":900,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"modelUsage":{},"permission_denials":[],"uuid":"0f6a7a52-3f0e-4d37-bd0b-7b1f8a2b9e10"}` + "\n"

	perfDeltaSize      = 300     // bytes without the '\n': a delta with a short text
	perfAssistantSize  = 4 << 10 // bytes without the '\n'
	perfAssistantEvery = 50      // every 50th message is a 4 KiB assistant frame
)

// perfFrame is a message line with its timestamp's offset.
type perfFrame struct {
	buf []byte // the line and its '\n'
	ts  int    // offset of the timestamp digits
}

func newPerfFrame(head, tail string, size int) perfFrame {
	text := string(perfMarker) + strings.Repeat("0", perfTSDigits) + " "
	fill := size - len(head) - len(tail) - len(text)
	if fill < 0 {
		panic(fmt.Sprintf("perf frame of %d bytes cannot hold its %d fixed bytes", size, size-fill))
	}
	line := head + text + perfFiller(fill) + tail + "\n"
	return perfFrame{buf: []byte(line), ts: len(head) + len(perfMarker)}
}

func perfFiller(n int) string {
	return strings.Repeat(perfFill, n/len(perfFill)+1)[:n]
}

// stamp writes the current time into the frame.
func (f perfFrame) stamp() {
	putTS(f.buf[f.ts:f.ts+perfTSDigits], time.Now().UnixNano())
}

// parseTS reads the timestamp at the start of b, without allocating.
func parseTS(b []byte) (int64, bool) {
	if len(b) < perfTSDigits {
		return 0, false
	}
	var v int64
	for _, c := range b[:perfTSDigits] {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

func putTS(b []byte, v int64) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
}

func perfFakeCLI() int {
	mode := os.Getenv(fakeModeEnv)
	n := envIntDefault(fakeNEnv, 1000)
	rate := envIntDefault(fakeRateEnv, 2000)
	batch := int(envIntDefault(fakeBatchEnv, 0))
	big := envIntDefault(fakeBigEnv, 1<<30)

	delta := newPerfFrame(perfDeltaHead, perfDeltaTail, perfDeltaSize)
	assistant := newPerfFrame(perfAssistantHead, perfAssistantTail, perfAssistantSize)
	frame := func(i int64) perfFrame {
		if i%perfAssistantEvery == perfAssistantEvery-1 {
			return assistant
		}
		return delta
	}

	out := io.Writer(os.Stdout)
	var bw *bufio.Writer
	if mode == "burst" && batch > 0 {
		bw = bufio.NewWriterSize(os.Stdout, batch)
		out = bw
	}
	write := func(b []byte) {
		if _, err := out.Write(b); err != nil {
			os.Exit(3) // the reader is gone
		}
	}
	flush := func() {
		if bw != nil && bw.Flush() != nil {
			os.Exit(3)
		}
	}

	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	inited := false
	for {
		line, err := in.ReadBytes('\n')
		switch gjson.GetBytes(line, "type").Str {
		case "control_request":
			id := gjson.GetBytes(line, "request_id").Raw
			write([]byte(`{"type":"control_response","response":{"subtype":"success","request_id":` + id + `,"response":{}}}` + "\n"))
			flush()
		case "user":
			if !inited {
				write([]byte(perfInit))
				inited = true
			}
			switch mode {
			case "burst":
				for i := range n {
					f := frame(i)
					f.stamp()
					write(f.buf)
				}
			case "paced":
				start := time.Now()
				for i := range n {
					due := start.Add(time.Duration(i) * time.Second / time.Duration(rate))
					for {
						d := time.Until(due)
						if d <= 0 {
							break
						}
						// A nanosleep, not time.Sleep, whose wake-ups
						// come in steps of about a millisecond.
						nanosleep(d)
					}
					f := frame(i)
					f.stamp()
					write(f.buf)
				}
			case "big":
				perfBigLine(write, big)
			default:
				fmt.Fprintf(os.Stderr, "fake CLI: unknown %s %q\n", fakeModeEnv, mode)
				return 2
			}
			write([]byte(perfResult))
			flush()
		}
		if err != nil {
			flush()
			return 0
		}
	}
}

// perfBigLine writes one assistant line of size bytes (without its '\n')
// in 1 MiB writes, never holding it.
func perfBigLine(write func([]byte), size int64) {
	text := string(perfMarker) + strings.Repeat("0", perfTSDigits) + " "
	head := []byte(perfAssistantHead + text)
	putTS(head[len(perfAssistantHead)+len(perfMarker):], time.Now().UnixNano())
	fill := size - int64(len(head)) - int64(len(perfAssistantTail))
	if fill < 0 {
		fill = 0
	}
	write(head)
	chunk := []byte(perfFiller(1 << 20))
	for fill > 0 {
		k := min(fill, int64(len(chunk)))
		write(chunk[:k])
		fill -= k
	}
	write([]byte(perfAssistantTail + "\n"))
}
