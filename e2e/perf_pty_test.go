package e2e

// The cost of a pty worker (docs/performance.md, "pty workers"): `ccbridge
// --ui control --pty` with the real Claude Code TUI under it (120×40,
// --stable-after 1s, the harness's fake model; started by ptyStart of
// pty_test.go), measured from outside:
//
//  1. idle CPU: the CPU time of the ccbridge process (and, for context,
//     of the TUI) over perfPTYIdle once the worker is idle and ccbridge
//     has written nothing (so the screen has not changed) for
//     perfPTYQuiet, from /proc/PID/stat (utime+stime, clock ticks) and
//     /proc/PID/task/*/schedstat (ns); with the lines ccbridge wrote
//     during the window (none is due while the screen does not change);
//  2. the ack latency of control.stdin.request: the request written to
//     ccbridge's stdin → its control.stdin.ack read, for perfPTYPrompts
//     prompts, each after the worker is idle with the previous answer
//     drawn;
//  3. memory: VmRSS and VmHWM of the ccbridge process (not the TUI),
//     idle after start and after the prompts.
//
// It reports and fails nothing unless a run errors. With
// CCBRIDGE_PERF_PTY_AGENT=codex the worker is Codex's TUI instead, under
// ccbridge's --fake-model (codexStart of pty_codex_test.go); with
// CCBRIDGE_PERF_PTY_AGENT=gemini, Gemini CLI's (geminiStart of
// pty_gemini_test.go).
//
//	CCBRIDGE_PERF=1 go test -run TestPerfPTY -v -count=1 -timeout 10m ./e2e
//	CCBRIDGE_PERF=1 CCBRIDGE_PERF_PTY_AGENT=codex go test -run TestPerfPTY -v -count=1 -timeout 10m ./e2e
//	CCBRIDGE_PERF=1 CCBRIDGE_PERF_PTY_AGENT=gemini go test -run TestPerfPTY -v -count=1 -timeout 10m ./e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	perfPTYIdle = 20 * time.Second // the idle CPU window
	// perfPTYQuiet: no line from ccbridge for this long before the window.
	// Some 8 s after its first idle, the TUI changes its screen once on
	// its own (the "◐ medium · /effort" and "← for agents" hints go): a
	// shorter wait has the window catch that change.
	perfPTYQuiet   = 12 * time.Second
	perfPTYPrompts = 10
	// perfPTYTick is the length of a clock tick of /proc/PID/stat: USER_HZ,
	// 100 on Linux (getconf CLK_TCK; Go has no sysconf without cgo).
	perfPTYTick = 10 * time.Millisecond
)

// statCPU is utime+stime of process pid (fields 14 and 15 of
// /proc/PID/stat: every thread's, those that ended included) and
// cutime+cstime (16 and 17: the children it has waited for), in clock
// ticks; -1 when they cannot be read.
func statCPU(pid int) (own, children int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1, -1
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 15 {
		return -1, -1
	}
	var v [4]int64
	for i := range v {
		if v[i], err = strconv.ParseInt(f[11+i], 10, 64); err != nil {
			return -1, -1
		}
	}
	return v[0] + v[1], v[2] + v[3]
}

// perfPTYCPU is the CPU time of one process so far, both ways.
type perfPTYCPU struct {
	ticks    int64                    // utime+stime, clock ticks
	children int64                    // cutime+cstime, clock ticks
	sched    map[string]time.Duration // each live thread's time on a CPU (schedstat), by thread id
}

func readPerfPTYCPU(pid int) perfPTYCPU {
	c := perfPTYCPU{sched: map[string]time.Duration{}}
	c.ticks, c.children = statCPU(pid)
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if fields := strings.Fields(string(data)); err == nil && len(fields) > 0 {
			n, _ := strconv.ParseInt(fields[0], 10, 64)
			c.sched[filepath.Base(filepath.Dir(f))] = time.Duration(n)
		}
	}
	return c
}

// schedDelta is the time on a CPU between a and b of the threads live at
// b (a thread born since counts whole); the threads that ended between
// them take their time with them (gone counts them).
func schedDelta(a, b perfPTYCPU) (d time.Duration, gone, born int) {
	for tid, v := range b.sched {
		if u, ok := a.sched[tid]; ok {
			d += v - u
		} else {
			d += v
			born++
		}
	}
	for tid := range a.sched {
		if _, ok := b.sched[tid]; !ok {
			gone++
		}
	}
	return d, gone, born
}

// drainNow takes into the lane every line ccbridge has written so far,
// without waiting.
func (p *ptyCtl) drainNow() {
	p.t.Helper()
	for {
		select {
		case l, ok := <-p.stdio.lines:
			if !ok {
				p.t.Fatalf("ccbridge's output ended; the last lines:\n%s", lastLines(p.stdio.got, 8))
			}
			p.stdio.got = append(p.stdio.got, l)
		default:
			return
		}
	}
}

// quietFor waits until ccbridge has written nothing for d (at most
// ptyWait in all) and returns how long that took.
func (p *ptyCtl) quietFor(d time.Duration) time.Duration {
	p.t.Helper()
	start := time.Now()
	deadline := start.Add(ptyWait)
	for {
		timer := time.NewTimer(d)
		select {
		case l, ok := <-p.stdio.lines:
			timer.Stop()
			if !ok {
				p.t.Fatalf("ccbridge's output ended; the last lines:\n%s", lastLines(p.stdio.got, 8))
			}
			p.stdio.got = append(p.stdio.got, l)
			if time.Now().After(deadline) {
				p.t.Fatalf("ccbridge did not stay quiet for %v within %v; the last lines:\n%s", d, ptyWait, lastLines(p.stdio.got, 6))
			}
		case <-timer.C:
			p.feed()
			return time.Since(start)
		}
	}
}

func TestPerfPTY(t *testing.T) {
	perfOnly(t, "the pty worker measure")
	started := time.Now()
	loadBefore := loadAvg()

	// CCBRIDGE_PERF_PTY_AGENT=codex measures Codex's TUI instead, under
	// --fake-model (codexStart of pty_codex_test.go); "the TUI" is then
	// Codex's native program, below its Node launcher. With gemini,
	// Gemini CLI's (geminiStart of pty_gemini_test.go); "the TUI" is the
	// Node process its launcher starts again with a larger heap.
	var p *ptyCtl
	var cli string
	answered := func(tok string) bool { return p.answered(tok) }
	agent := os.Getenv("CCBRIDGE_PERF_PTY_AGENT")
	switch agent {
	case "codex":
		cli = realAgent(t, "codex", "CCBRIDGE_TEST_CODEX")
		p = codexStart(t, nil)
		p.waitState(0, "idle")
		answered = p.codexAnswered
	case "gemini":
		cli = realAgent(t, "gemini", "CCBRIDGE_TEST_GEMINI")
		p = geminiStart(t)
		p.waitState(0, "idle")
		answered = p.geminiAnswered
	default:
		cli = realCLI(t)
		p = ptyStart(t)
		p.ready()
	}
	pid := p.b.cmd.Process.Pid
	tui := p.cliPID()
	execed(t, tui)
	for kids := children(tui); agent == "codex" && len(kids) == 1; kids = children(tui) {
		tui = kids[0] // the launcher's one child: Codex itself
	}
	if agent == "gemini" {
		p.waitFor("Gemini CLI's launcher's one child", func() bool { return len(children(tui)) == 1 })
		tui = children(tui)[0]
	}
	sc := p.screenNow()
	cols, rows := get(sc, "cols").Int(), get(sc, "rows").Int()
	if cols != 120 || rows != 40 {
		t.Errorf("the screen is %d×%d, want 120×40", cols, rows)
	}

	p.feed()
	bottomIdle := slices.Clone(p.rows[max(0, len(p.rows)-6):])

	// 1. Idle CPU, once nothing has come from ccbridge for perfPTYQuiet.
	settled := p.quietFor(perfPTYQuiet)
	if st := p.state(); st != "idle" {
		t.Fatalf("quiet, but the worker is %s", st)
	}
	bottom := slices.Clone(p.rows[max(0, len(p.rows)-6):])
	memStart := [2]int64{vmRSS(pid), vmHWM(pid)}
	tuiRSSStart := vmRSS(tui)
	from := len(p.stdio.got)
	b0, c0, w0 := readPerfPTYCPU(pid), readPerfPTYCPU(tui), time.Now()
	time.Sleep(perfPTYIdle)
	b1, c1, w1 := readPerfPTYCPU(pid), readPerfPTYCPU(tui), time.Now()
	p.drainNow()
	during := map[string]int{}
	for _, l := range p.stdio.got[from:] {
		during[typeOf(l)]++
	}
	wall := w1.Sub(w0)
	var window []string // what ccbridge wrote during the window
	for _, l := range p.stdio.got[from:] {
		at, _ := time.Parse(time.RFC3339Nano, get(l, "at").Str)
		what := typeOf(l)
		switch what {
		case "control.worker.state":
			what += " " + get(l, "state").Str
		case "control.worker.screen":
			for _, r := range get(l, "lines").Array() {
				what += fmt.Sprintf(" [row %d: %q]", r.Get("n").Int(), r.Get("text").Str)
			}
		}
		window = append(window, fmt.Sprintf("+%.3f s %s", at.Sub(w0).Seconds(), what))
	}
	if b0.ticks < 0 || b1.ticks < 0 || c0.ticks < 0 || c1.ticks < 0 {
		t.Fatalf("cannot read /proc/PID/stat of ccbridge (%d) or the TUI (%d)", pid, tui)
	}

	// 2. Ack latency, perfPTYPrompts prompts, each after idle.
	var lat []time.Duration
	var details []string
	for i := range perfPTYPrompts {
		tok := token("perf" + strconv.Itoa(i))
		m := p.stdinReq(ctlID("perf"), "hello "+tok)
		line := m.String()
		at := p.mark()
		t0 := time.Now()
		p.stdio.send(line)
		ans := p.stdio.nextAnswer()
		lat = append(lat, time.Since(t0))
		details = append(details, ctlAck(t, ans, m, "ok", false))
		if agent == "gemini" {
			p.geminiSubmit(tok)
		}
		p.waitFor("the answer to prompt "+strconv.Itoa(i+1)+" and idle", func() bool {
			return answered(tok) && slices.Contains(p.states[at:], "idle") && p.state() == "idle"
		})
	}
	p.quietFor(perfPTYQuiet)
	memAfter := [2]int64{vmRSS(pid), vmHWM(pid)}
	tuiRSSAfter := vmRSS(tui)
	sorted := slices.Clone(lat)
	slices.Sort(sorted)
	med := (sorted[(len(sorted)-1)/2] + sorted[len(sorted)/2]) / 2

	// The report.
	mb := func(kib int64) float64 { return float64(kib) * 1024 / 1e6 }
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	var r strings.Builder
	pr := func(format string, a ...any) { fmt.Fprintf(&r, format+"\n", a...) }
	pr("")
	model := "the harness's fake model"
	switch agent {
	case "codex":
		model = "ccbridge's --fake-model (its Responses API)"
	case "gemini":
		model = "ccbridge's --fake-model (its Gemini API)"
	}
	pr("pty worker: ccbridge --ui control --pty, the real TUI (%s) %d×%d, --stable-after 1s, %s; MB = 10^6 bytes",
		filepath.Base(cli), cols, rows, model)
	pr("started %s UTC, %s in all; load average before: %s; after: %s (nproc %d)",
		started.UTC().Format("15:04:05"), time.Since(started).Round(time.Second), loadBefore, loadAvg(), runtime.NumCPU())
	pr("")
	pr("1. Idle CPU over %.1f s, from when ccbridge had written nothing for %v (%.1f s after the first idle):", wall.Seconds(), perfPTYQuiet, settled.Seconds())
	pr("")
	pr("| process | utime+stime (ticks of %v) | ms | %% of one CPU | schedstat ms | schedstat %% | children's ticks | threads (gone, new) |", perfPTYTick)
	pr("|---|---:|---:|---:|---:|---:|---:|---|")
	row := func(what string, a, b perfPTYCPU) {
		d := time.Duration(b.ticks-a.ticks) * perfPTYTick
		s, gone, born := schedDelta(a, b)
		pr("| %s | %d | %.0f | %.3f | %.3f | %.4f | %d | %d (%d, %d) |", what, b.ticks-a.ticks, ms(d), 100*d.Seconds()/wall.Seconds(),
			ms(s), 100*s.Seconds()/wall.Seconds(), b.children-a.children, len(b.sched), gone, born)
	}
	row(fmt.Sprintf("ccbridge (pid %d)", pid), b0, b1)
	row(fmt.Sprintf("the TUI (pid %d)", tui), c0, c1)
	pr("")
	pr("utime+stime: /proc/PID/stat, every thread's, those that ended included. schedstat: the sum over the threads")
	pr("live at the window's end of their time on a CPU in it (ns; a thread that ended in it is not counted).")
	pr("children's ticks: cutime+cstime, the processes it started and waited for in the window.")
	pr("")
	pr("The screen's last rows at the first idle, then at the window's start:")
	for _, b := range bottomIdle {
		pr("  |%s", b)
	}
	pr("  --")
	for _, b := range bottom {
		pr("  |%s", b)
	}
	var kinds []string
	for k, n := range during {
		kinds = append(kinds, fmt.Sprintf("%s ×%d", k, n))
	}
	slices.Sort(kinds)
	if len(kinds) == 0 {
		kinds = []string{"none"}
	}
	pr("")
	pr("Lines ccbridge wrote during the window: %s; control.worker.screen lines: %d.", strings.Join(kinds, ", "), during["control.worker.screen"])
	for _, w := range window {
		pr("  %.300s", w)
	}
	pr("")
	vals := runValues(lat, func(d time.Duration) float64 { return ms(d) })
	pr("2. Ack latency, control.stdin.request written → control.stdin.ack read, %d prompts (\"hello <token>\"), each sent once", len(lat))
	pr("the worker was idle with the previous answer drawn: median %.0f ms, max %.0f ms, min %.0f ms.", ms(med), ms(sorted[len(sorted)-1]), ms(sorted[0]))
	pr("Each, in order: %s ms.", formatValues("%.0f", vals))
	slices.Sort(details)
	pr("Ack details: %q.", slices.Compact(details))
	pr("")
	pr("3. Memory of the ccbridge process (the TUI's VmRSS for context):")
	pr("")
	pr("| when | ccbridge VmRSS MB | ccbridge VmHWM MB | TUI VmRSS MB |")
	pr("|---|---:|---:|---:|")
	pr("| idle after start | %.1f | %.1f | %.1f |", mb(memStart[0]), mb(memStart[1]), mb(tuiRSSStart))
	pr("| idle after %d prompts | %.1f | %.1f | %.1f |", len(lat), mb(memAfter[0]), mb(memAfter[1]), mb(tuiRSSAfter))
	t.Log(r.String())
}
