package e2e

// The soak test of the performance harness (docs/performance.md, "Soak"):
// the real CLI against ccbridge's own fake model (--fake-model, served in
// ccbridge's process), first many turns in one session, measuring
// ccbridge's resident set, then many sessions at once, checking that none
// leaves a process behind.
//
//	CCBRIDGE_PERF=1 go test -run TestPerfSoak -v -count=1 -timeout 30m ./e2e
//
// Knobs (environment): CCBRIDGE_PERF_NOASSERT=1 only reports;
// CCBRIDGE_PERF_SOAK_TURNS (1000), CCBRIDGE_PERF_SOAK_WARMUP (20),
// CCBRIDGE_PERF_SOAK_SESSIONS (20), CCBRIDGE_PERF_SOAK_SESSION_TURNS (5).

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// soakMarkEnv is put in the environment of every ccbridge the soak starts;
// the CLI and whatever it starts inherit it, so a process left behind is
// found by it in /proc/PID/environ, whatever its command line.
const soakMarkEnv = "CCBRIDGE_SOAK_MARK"

// soakTurn sends one prompt and reads until its result, without t (it runs
// on goroutines of its own).
func soakTurn(b *bridge, text string, timeout time.Duration) error {
	if _, err := io.WriteString(b.stdin, userLine(text)+"\n"); err != nil {
		return fmt.Errorf("writing the prompt: %w", err)
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		select {
		case line, ok := <-b.lines:
			if !ok {
				return fmt.Errorf("ccbridge's output ended before the result")
			}
			if gjson.GetBytes(line, "type").Str != "result" {
				continue
			}
			if gjson.GetBytes(line, "is_error").Bool() {
				return fmt.Errorf("the turn failed: %.300s", line)
			}
			return nil
		case <-deadline.C:
			return fmt.Errorf("no result within %v", timeout)
		}
	}
}

// marked lists the processes whose environment holds mark, as "pid
// command".
func marked(mark string) []string {
	var found []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		env, err := os.ReadFile(p + "/environ")
		if err != nil || !bytes.Contains(env, []byte("\x00"+mark+"\x00")) && !bytes.HasPrefix(env, []byte(mark+"\x00")) {
			continue
		}
		cmd, _ := os.ReadFile(p + "/cmdline")
		found = append(found, filepath.Base(p)+" "+strings.ReplaceAll(string(bytes.TrimRight(cmd, "\x00")), "\x00", " "))
	}
	return found
}

func TestPerfSoak(t *testing.T) {
	perfOnly(t, "the soak test")
	realCLI(t)
	noAssert := os.Getenv("CCBRIDGE_PERF_NOASSERT") == "1"
	turns := int(envIntDefault("CCBRIDGE_PERF_SOAK_TURNS", 1000))
	warmup := int(envIntDefault("CCBRIDGE_PERF_SOAK_WARMUP", 20))
	sessions := int(envIntDefault("CCBRIDGE_PERF_SOAK_SESSIONS", 20))
	sessionTurns := int(envIntDefault("CCBRIDGE_PERF_SOAK_SESSION_TURNS", 5))
	warmup = min(warmup, turns)
	mark := soakMarkEnv + "=" + token("soak")
	env := []string{"CCBRIDGE_FAKE_MODEL=default", "CCBRIDGE_LOG_LEVEL=info", mark}
	// The check finds a marked process: a sleep started with the mark.
	probe := exec.Command("sleep", "60")
	probe.Env = append(os.Environ(), mark)
	if err := probe.Start(); err != nil {
		t.Fatal(err)
	}
	if found := marked(mark); len(found) != 1 || !strings.HasPrefix(found[0], strconv.Itoa(probe.Process.Pid)+" ") {
		t.Fatalf("the check for processes left behind found %q, want the probe %d", found, probe.Process.Pid)
	}
	probe.Process.Kill()
	probe.Wait()
	loadBefore := loadAvg()

	// One session, many turns.
	b := startBridge(t, perfDropInArgs, env...)
	pid := b.cmd.Process.Pid
	var rssFirst, rssWarm int64
	samples := []string{}
	start := time.Now()
	for i := 1; i <= turns; i++ {
		if err := soakTurn(b, fmt.Sprintf("soak turn %d", i), 90*time.Second); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		switch rss := vmRSS(pid); {
		case i == 1:
			rssFirst = rss
		case i == warmup:
			rssWarm = rss
		}
		if i%100 == 0 || i == turns {
			samples = append(samples, fmt.Sprintf("%d: %.1f", i, float64(vmRSS(pid))*1024/1e6))
		}
	}
	soakTime := time.Since(start)
	rssEnd, hwm := vmRSS(pid), vmHWM(pid)
	b.stdin.Close()
	if code := b.wait(); code != 0 {
		t.Errorf("ccbridge of the long session exited %d", code)
	}

	// Many sessions at once.
	bridges := make([]*bridge, sessions)
	for i := range bridges {
		bridges[i] = startBridge(t, perfDropInArgs, env...)
	}
	start = time.Now()
	errs := make([]error, sessions)
	var wg sync.WaitGroup
	for i, b := range bridges {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 1; k <= sessionTurns; k++ {
				if err := soakTurn(b, fmt.Sprintf("session %d turn %d", i, k), 180*time.Second); err != nil {
					errs[i] = fmt.Errorf("session %d, turn %d: %w", i, k, err)
					return
				}
			}
			b.stdin.Close()
			select {
			case <-b.exited:
				if b.code != 0 {
					errs[i] = fmt.Errorf("session %d: ccbridge exited %d", i, b.code)
				}
			case <-time.After(60 * time.Second):
				errs[i] = fmt.Errorf("session %d: ccbridge did not exit within 60 s of the end of its input", i)
			}
		}()
	}
	wg.Wait()
	parallelTime := time.Since(start)
	failed := 0
	for _, err := range errs {
		if err != nil {
			failed++
			t.Error(err)
		}
	}
	// Every ccbridge has exited; whatever still carries the mark was left
	// behind. A process in the middle of exiting gets a moment.
	left := marked(mark)
	for deadline := time.Now().Add(5 * time.Second); len(left) > 0 && time.Now().Before(deadline); left = marked(mark) {
		time.Sleep(50 * time.Millisecond)
	}

	mb := func(kib int64) float64 { return float64(kib) * 1024 / 1e6 }
	growth := mb(rssEnd - rssWarm)
	var r strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&r, format+"\n", a...) }
	p("")
	p("ccbridge soak: the real CLI against --fake-model default, drop-in mode; MB = 10^6 bytes")
	p("load average before: %s; after: %s (nproc %d)", loadBefore, loadAvg(), runtime.NumCPU())
	p("")
	p("One session: %d turns in %s (%.1f turns/s)", turns, soakTime.Round(time.Second), float64(turns)/soakTime.Seconds())
	p("ccbridge VmRSS (MB) after turn: %s", strings.Join(samples, ", "))
	p("")
	p("| figure | value |")
	p("|---|---:|")
	p("| ccbridge VmRSS after turn 1 | %.1f MB |", mb(rssFirst))
	p("| ccbridge VmRSS after turn %d (warmup) | %.1f MB |", warmup, mb(rssWarm))
	p("| ccbridge VmRSS after turn %d | %.1f MB |", turns, mb(rssEnd))
	p("| ccbridge VmHWM after turn %d | %.1f MB |", turns, mb(hwm))
	p("| %d sessions × %d turns at once | %s, %d failed |", sessions, sessionTurns, parallelTime.Round(100*time.Millisecond), failed)
	p("")
	p("| target | got | met |")
	p("|---|---|---|")
	finishPerfReport(t, &r, []perfTarget{
		{what: fmt.Sprintf("RSS growth from turn %d to turn %d under 15 MB", warmup, turns),
			ok: growth < 15, got: fmt.Sprintf("%.1f MB", growth)},
		{what: fmt.Sprintf("nothing left behind by %d parallel sessions", sessions),
			ok: len(left) == 0, got: fmt.Sprintf("%d processes", len(left))},
	}, "soak", noAssert)
	if len(left) > 0 {
		t.Errorf("left behind:\n  %s", strings.Join(left, "\n  "))
	}
}
