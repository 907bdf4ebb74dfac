package e2e

// The acp performance comparison (docs/performance.md, "acp dialect vs the
// Node adapter"): ccbridge --ui acp against the Node ACP adapter
// @agentclientprotocol/claude-agent-acp (pinned in
// scripts/install-tools.sh), in the same run, on the same fast fake CLI
// (this test binary, re-run with perfACPFakeEnv), driven by the same raw
// JSON-RPC client (this test). It measures the time from spawn to a ready
// session (initialize + session/new answered), a 20,000-chunk turn, the
// per-chunk latency (in that burst, and paced), and each adapter's peak
// RSS.
//
//	CCBRIDGE_PERF=1 go test -run TestPerfACP -v -count=1 ./e2e
//
// Knobs: CCBRIDGE_PERF_RUNS (3), CCBRIDGE_PERF_ACP_CHUNKS (20000),
// CCBRIDGE_PERF_ACP_PACED (1000 chunks at CCBRIDGE_PERF_ACP_RATE, 500/s),
// CCBRIDGE_PERF_NOASSERT=1 only reports.

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

// perfACPFakeEnv makes this test binary act as the fake CLI of the
// comparison. It is checked in an init function, before TestMain (which
// would build ccbridge), and only when the arguments are a CLI's.
const perfACPFakeEnv = "CCBRIDGE_PERF_ACP_FAKE"

func init() {
	if os.Getenv(perfACPFakeEnv) != "1" {
		return
	}
	switch {
	case slices.Contains(os.Args, "stream-json"):
		os.Exit(perfACPFake())
	case slices.Contains(os.Args, "auth"):
		// The Node adapter asks `claude auth status --json` in the background.
		fmt.Println(`{"loggedIn":true,"authMethod":"api_key","apiProvider":"firstParty","analyticsDisabled":true,"loginExpiresAt":null,"apiKeySource":"ANTHROPIC_API_KEY"}`)
		os.Exit(0)
	case len(os.Args) > 1 && !strings.HasPrefix(os.Args[1], "-test."):
		// Anything else a CLI might be asked (--version): never the tests.
		fmt.Println("2.1.330 (Claude Code)")
		os.Exit(0)
	}
}

const perfACPSession = "7a1f2a0e-51a9-4c1f-9a55-0c3f3d2b6e11"

// perfACPInit is the fake's answer to initialize: the fields the Agent SDK
// and the Node adapter read (commands, models, account, mode), and every
// "*_applied" flag the SDK checks.
const perfACPInit = `{"commands":[{"name":"compact","description":"Free up context by summarizing the conversation so far","argumentHint":"<optional custom summarization instructions>"},` +
	`{"name":"context","description":"Show current context usage","argumentHint":""},{"name":"review","description":"Review a pull request","argumentHint":""}],` +
	`"agents":[{"name":"general-purpose","description":"General-purpose agent"}],"output_style":"default","available_output_styles":["default"],` +
	`"models":[{"value":"default","resolvedModel":"claude-opus-5-5","displayName":"Default (recommended)","description":"Opus 5.5","supportsEffort":true,"supportedEffortLevels":["low","medium","high"],"supportsAdaptiveThinking":true,"supportsFastMode":false,"supportsAutoMode":false,"supportsThinkingOff":false},` +
	`{"value":"sonnet","resolvedModel":"claude-sonnet-5-5","displayName":"Sonnet","description":"Sonnet 5.5","supportsEffort":true,"supportedEffortLevels":["low","medium","high"],"supportsAdaptiveThinking":true,"supportsAutoMode":false,"supportsThinkingOff":false}],` +
	`"account":{"tokenSource":"none","apiKeySource":"ANTHROPIC_API_KEY","apiProvider":"firstParty"},"pid":1,"claude_code_version":"2.1.330","current_permission_mode":"default",` +
	`"hooks_applied":true,"hook_on_failure_supported":true,"plugins_applied":true,"managed_settings_applied":true,"settings_applied":true,"disallowed_tools_applied":true,` +
	`"mcp_servers_applied":true,"code_running_mcp_tools_applied":true,"analytics_disabled":true,"fast_mode_state":"off","session_state":"idle","capabilities":[]}`

// perfACPFake is a CLI fast enough not to matter: it answers initialize
// and the other control requests at once, and a user message with a turn
// of text deltas (perfMarker and the send time at the start of each
// text), the complete assistant frame, the result and the session-state
// frames the Agent SDK waits for. The prompt's text says how many deltas
// and how fast: "chunks=N rate=R" (R deltas a second; 0 is a burst).
func perfACPFake() int {
	replay := slices.Contains(os.Args, "--replay-user-messages")
	w := bufio.NewWriterSize(os.Stdout, 64<<10)
	emit := func(s string) {
		w.WriteString(s)
		w.WriteByte('\n')
	}
	flush := func() {
		if w.Flush() != nil {
			os.Exit(3) // the reader is gone
		}
	}
	const wrap = `"session_id":"` + perfACPSession + `","parent_tool_use_id":null,"uuid":"0b6f0c86-7c5e-4d0b-a3c0-1f6e8a0f4d22"`
	deltaHead := `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + string(perfMarker)
	deltaTail := ` lorem ipsum "}},` + wrap + `,"api_message_id":"msg_perfacp"}` + "\n"
	delta := []byte(deltaHead + strings.Repeat("0", perfTSDigits) + deltaTail)
	ts := delta[len(deltaHead) : len(deltaHead)+perfTSDigits]

	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	turns := 0
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 && gjson.ValidBytes(line) {
			switch gjson.GetBytes(line, "type").Str {
			case "control_request":
				id := gjson.GetBytes(line, "request_id").Raw
				resp := `{}`
				switch gjson.GetBytes(line, "request.subtype").Str {
				case "initialize":
					resp = perfACPInit
				case "interrupt":
					resp = `{"still_queued":[]}`
				case "mcp_status":
					resp = `{"mcpServers":[]}`
				case "set_permission_mode":
					resp = `{"mode":` + gjson.GetBytes(line, "request.mode").Raw + `}`
				case "set_model":
					resp = `{"model":` + gjson.GetBytes(line, "request.model").Raw + `}`
				}
				emit(`{"type":"control_response","response":{"subtype":"success","request_id":` + id + `,"response":` + resp + `}}`)
				flush()
			case "user":
				turns++
				var n, rate int64 = 20000, 0
				for _, f := range strings.Fields(gjson.GetBytes(line, "message.content.0.text").Str) {
					if v, ok := strings.CutPrefix(f, "chunks="); ok {
						n, _ = strconv.ParseInt(v, 10, 64)
					}
					if v, ok := strings.CutPrefix(f, "rate="); ok {
						rate, _ = strconv.ParseInt(v, 10, 64)
					}
				}
				emit(`{"type":"system","subtype":"init","cwd":"/tmp","session_id":"` + perfACPSession + `","tools":["Bash","Read","Write"],"mcp_servers":[],"model":"claude-opus-5-5","permissionMode":"default","slash_commands":["compact","context","review"],"apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.330","output_style":"default","agents":[],"skills":[],"plugins":[],"uuid":"1d1e7a1c-65c4-4d57-9d6e-1f0c1e0a9c11"}`)
				emit(`{"type":"system","subtype":"session_state_changed","state":"running","sdk_host_only":true,` + wrap + `}`)
				if replay {
					u := gjson.GetBytes(line, "uuid").Str
					if u == "" {
						u = "2c0d6f4e-8a1b-4c3d-9e5f-6a7b8c9d0e1f"
					}
					emit(`{"type":"user","message":` + gjson.GetBytes(line, "message").Raw + `,"session_id":"` + perfACPSession + `","parent_tool_use_id":null,"uuid":"` + u + `","isReplay":true}`)
				}
				emit(`{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_perfacp","type":"message","role":"assistant","model":"claude-opus-5-5","content":[],"stop_reason":null,"usage":{"input_tokens":12,"output_tokens":1,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}},` + wrap + `,"api_message_id":"msg_perfacp"}`)
				emit(`{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}},` + wrap + `,"api_message_id":"msg_perfacp"}`)
				flush()
				start := time.Now()
				for i := range n {
					if rate > 0 {
						due := start.Add(time.Duration(i) * time.Second / time.Duration(rate))
						for d := time.Until(due); d > 0; d = time.Until(due) {
							nanosleep(d)
						}
					}
					putTS(ts, time.Now().UnixNano())
					w.Write(delta)
					if rate > 0 || w.Buffered() > 60<<10 {
						flush()
					}
				}
				full := strings.Repeat("x", int(n)*(len(perfMarker)+perfTSDigits+len(" lorem ipsum ")))
				emit(`{"type":"assistant","message":{"id":"msg_perfacp","type":"message","role":"assistant","model":"claude-opus-5-5","content":[{"type":"text","text":"` + full + `"}],"stop_reason":null,"usage":{"input_tokens":12,"output_tokens":1}},` + wrap + `}`)
				emit(`{"type":"stream_event","event":{"type":"content_block_stop","index":0},` + wrap + `,"api_message_id":"msg_perfacp"}`)
				emit(`{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":` + strconv.FormatInt(n, 10) + `}},` + wrap + `,"api_message_id":"msg_perfacp"}`)
				emit(`{"type":"stream_event","event":{"type":"message_stop"},` + wrap + `,"api_message_id":"msg_perfacp"}`)
				emit(`{"type":"result","subtype":"success","is_error":false,"duration_ms":1000,"duration_api_ms":900,"num_turns":1,"result":"done","stop_reason":"end_turn","terminal_reason":"completed","session_id":"` + perfACPSession + `","total_cost_usd":0.01,"usage":{"input_tokens":12,"output_tokens":` + strconv.FormatInt(n, 10) + `,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"modelUsage":{"claude-opus-5-5":{"inputTokens":12,"outputTokens":1,"contextWindow":200000,"costUSD":0.01}},"permission_denials":[],"result_index":` + strconv.Itoa(turns-1) + `,"uuid":"0f6a7a52-3f0e-4d37-bd0b-7b1f8a2b9e10"}`)
				emit(`{"type":"system","subtype":"session_state_changed","state":"idle","sdk_host_only":true,` + wrap + `}`)
				flush()
			}
		}
		if err != nil {
			flush()
			return 0
		}
	}
}

// TestPerfACP runs the comparison and writes its report to stdout (with
// -v) or the test log. It needs node and the Node adapter (run
// scripts/install-tools.sh); without CCBRIDGE_PERF=1 it is skipped.
func TestPerfACP(t *testing.T) {
	perfOnly(t, "the acp performance comparison")
	const adapterRel = "node_modules/@agentclientprotocol/claude-agent-acp/dist/index.js"
	nodeAdapter := toolsFile(adapterRel)
	node, err := exec.LookPath("node")
	if err != nil || nodeAdapter == "" {
		t.Fatalf("node or the Node ACP adapter is missing (run scripts/install-tools.sh): node: %v; .tools/%s: %q", err, adapterRel, nodeAdapter)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ccbridge := ccbridgeBin
	runs := int(envIntDefault("CCBRIDGE_PERF_RUNS", 3))
	chunks := envIntDefault("CCBRIDGE_PERF_ACP_CHUNKS", 20000)
	paced := envIntDefault("CCBRIDGE_PERF_ACP_PACED", 1000)
	rate := envIntDefault("CCBRIDGE_PERF_ACP_RATE", 500)
	adapters := []perfACPAdapter{
		{key: "ccbridge", name: "ccbridge --ui acp", path: ccbridge, args: []string{"--ui", "acp"}},
		{key: "node", name: "claude-agent-acp 0.100.0 (node " + nodeVersion(node) + ")", path: node, args: []string{nodeAdapter}},
	}
	results := map[string][]perfACPRun{}
	loadBefore := loadAvg()
	began := time.Now()
	for rep := range runs {
		for _, a := range adapters { // interleaved, so that noise spreads over both
			r, err := runPerfACPOnce(t, self, a, chunks, paced, rate)
			if err != nil {
				t.Fatalf("%s, run %d: %v", a.name, rep+1, err)
			}
			results[a.key] = append(results[a.key], r)
		}
	}
	elapsed := time.Since(began)

	med := func(key string, f func(perfACPRun) float64) float64 {
		return median(runValues(results[key], f))
	}
	all := func(key string, f func(perfACPRun) float64, format string) string {
		return formatValues(format, runValues(results[key], f))
	}
	ms := func(d func(perfACPRun) time.Duration) func(perfACPRun) float64 {
		return func(r perfACPRun) float64 { return float64(d(r)) / 1e6 }
	}
	ready := ms(func(r perfACPRun) time.Duration { return r.ready })
	turn := ms(func(r perfACPRun) time.Duration { return r.turn })
	us := func(lat func(perfACPRun) []int64, p float64) func(perfACPRun) float64 {
		return func(r perfACPRun) float64 { return float64(percentile(lat(r), p)) / 1e3 }
	}
	burst := func(r perfACPRun) []int64 { return r.burstLat }
	pacedLat := func(r perfACPRun) []int64 { return r.pacedLat }
	rss := func(r perfACPRun) float64 { return float64(r.hwm) * 1024 / 1e6 }
	chunksPerSec := func(r perfACPRun) float64 { return float64(r.chunks) / r.turn.Seconds() }

	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	p("")
	p("acp comparison: %d runs of each adapter, interleaved, median shown; %s in all", runs, elapsed.Round(time.Second))
	p("load average before: %s; after: %s (nproc %d)", loadBefore, loadAvg(), runtime.NumCPU())
	p("")
	p("| measurement | %s | %s | ratio |", adapters[0].name, adapters[1].name)
	p("|---|---:|---:|---:|")
	row := func(what string, f func(perfACPRun) float64, format string) {
		c, n := med("ccbridge", f), med("node", f)
		p("| %s | "+format+" | "+format+" | %.1f× |", what, c, n, n/c)
	}
	row("spawn → initialize + session/new answered, ms", ready, "%.1f")
	row(fmt.Sprintf("%d-chunk turn: session/prompt → its answer, ms", chunks), turn, "%.1f")
	p("| the same turn, chunks/s | %.0f | %.0f | |", med("ccbridge", chunksPerSec), med("node", chunksPerSec))
	row("per-chunk latency in that burst, median µs", us(burst, 0.5), "%.0f")
	row("per-chunk latency in that burst, p99 µs", us(burst, 0.99), "%.0f")
	row(fmt.Sprintf("per-chunk latency, %d chunks at %d/s, median µs", paced, rate), us(pacedLat, 0.5), "%.0f")
	row(fmt.Sprintf("per-chunk latency, %d chunks at %d/s, p99 µs", paced, rate), us(pacedLat, 0.99), "%.0f")
	row("peak RSS of the adapter (VmHWM), MB", rss, "%.1f")
	p("")
	p("Every run (in order):")
	p("")
	p("| adapter | ready ms | turn ms | burst p50 µs | paced p50 µs | paced p99 µs | peak RSS MB |")
	p("|---|---|---|---|---|---|---|")
	for _, a := range adapters {
		p("| %s | %s | %s | %s | %s | %s | %s |", a.name, all(a.key, ready, "%.1f"), all(a.key, turn, "%.0f"),
			all(a.key, us(burst, 0.5), "%.0f"), all(a.key, us(pacedLat, 0.5), "%.0f"), all(a.key, us(pacedLat, 0.99), "%.0f"), all(a.key, rss, "%.1f"))
	}
	rReady := med("node", ready) / med("ccbridge", ready)
	rTurn := med("node", turn) / med("ccbridge", turn)
	rRSS := med("node", rss) / med("ccbridge", rss)
	targets := []perfTarget{
		{what: "ready in under a tenth of the Node adapter's time", ok: rReady > 10, got: fmt.Sprintf("%.1f ms vs %.1f ms (%.0f×)", med("ccbridge", ready), med("node", ready), rReady)},
		{what: fmt.Sprintf("the %d-chunk turn at least 4× faster", chunks), ok: rTurn >= 4, got: fmt.Sprintf("%.0f ms vs %.0f ms (%.1f×)", med("ccbridge", turn), med("node", turn), rTurn)},
		{what: "peak memory under a tenth", ok: rRSS > 10, got: fmt.Sprintf("%.1f MB vs %.1f MB (%.1f×)", med("ccbridge", rss), med("node", rss), rRSS)},
	}
	p("")
	p("| target | measured | met |")
	p("|---|---|---|")
	finishPerfReport(t, &b, targets, "acp performance", os.Getenv("CCBRIDGE_PERF_NOASSERT") == "1")
}

type perfACPAdapter struct {
	key, name string
	path      string
	args      []string
}

// perfACPRun is what one run of one adapter gave.
type perfACPRun struct {
	ready    time.Duration // spawn → session/new answered
	turn     time.Duration // session/prompt sent → its answer
	chunks   int           // message chunks of the burst turn
	burstLat []int64       // sorted arrival − send, ns, burst turn
	pacedLat []int64       // the same, paced turn
	hwm      int64         // peak RSS of the adapter's processes (the fake CLI left out), KiB
}

func nodeVersion(node string) string {
	out, _ := exec.Command(node, "--version").Output()
	return strings.TrimSpace(string(out))
}

// runPerfACPOnce starts one adapter and plays: initialize, session/new, a
// burst turn of chunks deltas, a paced turn of paced deltas at rate a
// second; then it ends the session as a client does.
func runPerfACPOnce(t *testing.T, self string, a perfACPAdapter, chunks, paced, rate int64) (perfACPRun, error) {
	var res perfACPRun
	home, work := t.TempDir(), t.TempDir()
	cmd := exec.Command(a.path, a.args...)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "HOME="+home, perfACPFakeEnv+"=1", "CCBRIDGE_CLAUDE="+self, "CLAUDE_CODE_EXECUTABLE="+self,
		"ANTHROPIC_API_KEY=sk-ant-fake", "CCBRIDGE_LOG_LEVEL=warn")
	var stderr lockedBuffer
	stdin, stdout, err := pipePerfProcess(cmd, &stderr)
	if err != nil {
		return res, err
	}
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return res, err
	}
	pid := cmd.Process.Pid
	watchdog := time.AfterFunc(3*time.Minute, func() { syscall.Kill(-pid, syscall.SIGKILL) })
	defer watchdog.Stop()
	fail := func(err error) (perfACPRun, error) {
		syscall.Kill(-pid, syscall.SIGKILL)
		cmd.Wait()
		return res, fmt.Errorf("%w; stderr: %s", err, tail(stderr.String(), 2000))
	}
	br := bufio.NewReaderSize(stdout, 1<<20)
	send := func(s string) error {
		_, err := io.WriteString(stdin, s+"\n")
		return err
	}
	// await reads until the answer to id, recording the latency of every
	// chunk into lat (when not nil); it answers requests from the agent
	// with "method not found".
	await := func(id string, lat *[]int64) (gjson.Result, error) {
		for {
			line, err := br.ReadSlice('\n')
			if errors.Is(err, bufio.ErrBufferFull) {
				big := append([]byte(nil), line...)
				for errors.Is(err, bufio.ErrBufferFull) {
					line, err = br.ReadSlice('\n')
					big = append(big, line...)
				}
				line = big
			}
			if err != nil {
				return gjson.Result{}, fmt.Errorf("output ended: %v", err)
			}
			now := time.Now()
			if i := bytes.Index(line, perfMarker); i >= 0 {
				if lat != nil {
					if ts, ok := parseTS(line[i+len(perfMarker):]); ok {
						*lat = append(*lat, now.UnixNano()-ts)
					}
				}
				continue
			}
			m := gjson.ParseBytes(line)
			if m.Get("id").Exists() && !m.Get("method").Exists() && m.Get("id").Raw == id {
				return m, nil
			}
			if m.Get("id").Exists() && m.Get("method").Exists() {
				send(`{"jsonrpc":"2.0","id":` + m.Get("id").Raw + `,"error":{"code":-32601,"message":"not in this client"}}`)
			}
		}
	}
	if err := send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false},"clientInfo":{"name":"perf","version":"1"}}}`); err != nil {
		return fail(err)
	}
	if _, err := await("0", nil); err != nil {
		return fail(err)
	}
	if err := send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"` + work + `","mcpServers":[]}}`); err != nil {
		return fail(err)
	}
	nw, err := await("1", nil)
	if err != nil {
		return fail(err)
	}
	res.ready = time.Since(began)
	sid := nw.Get("result.sessionId").Str
	if sid == "" {
		return fail(fmt.Errorf("session/new: %s", nw.Raw))
	}
	prompt := func(id, text string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"` + text + `"}]}}`
	}
	res.burstLat = make([]int64, 0, chunks)
	start := time.Now()
	if err := send(prompt("2", fmt.Sprintf("chunks=%d rate=0", chunks))); err != nil {
		return fail(err)
	}
	r, err := await("2", &res.burstLat)
	if err != nil {
		return fail(err)
	}
	res.turn = time.Since(start)
	res.chunks = len(res.burstLat)
	if r.Get("result.stopReason").Str != "end_turn" || int64(res.chunks) != chunks {
		return fail(fmt.Errorf("burst turn: %d chunks, answer %s", res.chunks, r.Raw))
	}
	res.pacedLat = make([]int64, 0, paced)
	if err := send(prompt("3", fmt.Sprintf("chunks=%d rate=%d", paced, rate))); err != nil {
		return fail(err)
	}
	if r, err := await("3", &res.pacedLat); err != nil || r.Get("result.stopReason").Str != "end_turn" {
		return fail(fmt.Errorf("paced turn: %v %s", err, r.Raw))
	}
	res.hwm = adapterHWM(pid, self)
	stdin.Close()
	io.Copy(io.Discard, br)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return res, fmt.Errorf("exit: %v; stderr: %s", err, tail(stderr.String(), 2000))
		}
	case <-time.After(30 * time.Second):
		return fail(errors.New("did not exit within 30 s of the end of its input"))
	}
	slices.Sort(res.burstLat)
	slices.Sort(res.pacedLat)
	return res, nil
}

// adapterHWM sums the peak RSS of process pid and its descendants, except
// the fake CLI (processes running this test binary).
func adapterHWM(pid int, self string) int64 {
	var sum int64
	var walk func(p int)
	walk = func(p int) {
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", p))
		if exe != self {
			sum += vmHWM(p)
		}
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", p))
		for _, f := range tasks {
			data, _ := os.ReadFile(f)
			for _, c := range strings.Fields(string(data)) {
				if n, err := strconv.Atoi(c); err == nil {
					walk(n)
				}
			}
		}
	}
	walk(pid)
	return sum
}
