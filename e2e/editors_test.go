package e2e

// ccbridge under an editor's own Claude agent (docs/editors.md): the
// official Node ACP adapter @agentclientprotocol/claude-agent-acp (pinned
// in scripts/install-tools.sh), as Zed, JetBrains IDEs and the Neovim and
// Emacs clients run it, driven by the ACP client library through
// testdata/clients/acp_client.mjs (scenario editor), with
// CLAUDE_CODE_EXECUTABLE naming ccbridge: the adapter's Agent SDK runs
// ccbridge in drop-in mode, which runs the real CLI against the test's
// fake Messages API. Without node, the packages or the CLI the test is
// skipped, except under CI=true, where it fails.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/session/guardian"
)

// acpAdapterModule is the Node ACP adapter's entry file (its bin,
// claude-agent-acp), under .tools/node_modules.
const acpAdapterModule = "@agentclientprotocol/claude-agent-acp/dist/index.js"

func TestEditorClaudeAgentACP(t *testing.T) {
	t.Parallel()
	cli := realCLI(t)
	node, adapter := nodeModule(t, acpAdapterModule, "the Node ACP adapter claude-agent-acp")
	agent, err := json.Marshal([]string{node, adapter})
	if err != nil {
		t.Fatal(err)
	}
	api := fakeAPI(t)
	// IS_SANDBOX is emptied: as root, the adapter asks the CLI for
	// --allow-dangerously-skip-permissions whenever IS_SANDBOX is set at
	// all, and the CLI refuses to start unless it is "1" (docs/editors.md).
	r := runACPScript(t, clientScript("acp_client.mjs"), t.TempDir(), t.TempDir(), 90*time.Second,
		"SCENARIO=editor", "AGENT_COMMAND="+string(agent), "CLAUDE_CODE_EXECUTABLE="+ccbridgeBin, "IS_SANDBOX=")

	// The adapter answered, not ccbridge's own acp dialect.
	if name := r.response("initialize", 0).Get("result.agentInfo.name").Str; name != "@agentclientprotocol/claude-agent-acp" {
		t.Errorf("initialize answered by %q, want the Node adapter", name)
	}
	sid := r.response("session/new", 0).Get("result.sessionId").Str
	if sid == "" {
		t.Fatalf("session/new: %s", r.response("session/new", 0).Raw)
	}
	for i := range 3 {
		if got := r.stopReason(i); got != "end_turn" {
			t.Errorf("prompt %d: stopReason %q, want end_turn", i, got)
		}
	}
	if got := chunkText(r.updates("agent_message_chunk")); !strings.HasPrefix(got, "Hello from the mock model.") {
		t.Errorf("message chunks %q, want the fake model's answer first", got)
	}

	// Two permission requests reached the client, each allowed once, and
	// each tool ran.
	reqs := r.requests("session/request_permission")
	if len(reqs) != 2 {
		t.Fatalf("%d permission requests, want 2 (Write, Bash)", len(reqs))
	}
	for i, want := range []struct{ kind, name string }{{"edit", "Write"}, {"execute", "Bash"}} {
		p := reqs[i].Get("params")
		if p.Get("sessionId").Str != sid || p.Get("toolCall.kind").Str != want.kind {
			t.Errorf("permission request %d: want a %s (%s) of session %s: %.600s", i, want.kind, want.name, sid, p.Raw)
		}
		id := p.Get("toolCall.toolCallId").Str
		completed := r.filter(func(e gjson.Result) bool {
			return e.Get("update.sessionUpdate").Str == "tool_call_update" && e.Get("update.toolCallId").Str == id &&
				e.Get("update.status").Str == "completed"
		})
		if len(completed) == 0 {
			t.Errorf("the allowed %s (%s) never completed", want.name, id)
		}
	}
	if answers := r.filter(func(e gjson.Result) bool { return e.Get("event").Str == "answer" }); len(answers) != 2 ||
		answers[0].Get("result.outcome.outcome").Str != "selected" || answers[1].Get("result.outcome.outcome").Str != "selected" {
		t.Errorf("the client's answers: %v", answers)
	}
	if data, err := os.ReadFile(filepath.Join(r.workdir, "written.txt")); err != nil || string(data) != "hello world\n" {
		t.Errorf("the allowed Write left %q (%v)", data, err)
	}
	if _, err := os.Stat(filepath.Join(r.workdir, "bash_touched.txt")); err != nil {
		t.Errorf("the allowed Bash command did not run: %v", err)
	}
	if len(api.Requests()) == 0 {
		t.Errorf("the test's fake Messages API saw no request")
	}

	// ccbridge was in the path: while each permission request was open,
	// the adapter's CLI was ccbridge in drop-in mode, with the real CLI
	// below it, and no CLI ran below the adapter other than through
	// ccbridge.
	procs := r.filter(func(e gjson.Result) bool { return e.Get("event").Str == "processes" })
	if len(procs) != 2 {
		t.Fatalf("%d process snapshots, want 2", len(procs))
	}
	bridgeExe, cliExe := resolved(t, ccbridgeBin), resolved(t, cli)
	var seen []snapProc
	for _, snap := range procs {
		ps := snapProcs(snap)
		seen = append(seen, ps...)
		if err := checkCLIBehindBridge(snap.Get("agent").Int(), ps, bridgeExe, cliExe); err != nil {
			t.Errorf("%v; processes below the adapter: %s", err, snap.Get("procs").Raw)
		}
	}

	// Nothing the adapter started outlives it.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		left := slices.DeleteFunc(slices.Clone(seen), func(p snapProc) bool { return !p.alive() })
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("processes left 20 s after the adapter exited: %v", left)
			break
		}
	}
}

// snapProc is one process of a snapshot acp_client.mjs took.
type snapProc struct {
	pid, ppid int64
	exe       string
	args      []string
}

func snapProcs(snap gjson.Result) []snapProc {
	var ps []snapProc
	for _, p := range snap.Get("procs").Array() {
		var args []string
		for _, a := range p.Get("args").Array() {
			args = append(args, a.Str)
		}
		ps = append(ps, snapProc{pid: p.Get("pid").Int(), ppid: p.Get("ppid").Int(), exe: p.Get("exe").Str, args: args})
	}
	return ps
}

// alive reports whether the process still runs the same program.
func (p snapProc) alive() bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p.pid))
	return err == nil && exe == p.exe
}

// resolved is path with its symbolic links resolved, as /proc/PID/exe
// names a program.
func resolved(t *testing.T, path string) string {
	t.Helper()
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// checkCLIBehindBridge checks a snapshot of the processes below the agent
// (an ACP adapter): the real CLI runs a session (stream-json), and every
// process running the CLI (the session's, and one the adapter runs for
// `auth status`) has a ccbridge in drop-in mode (ccbridge with the CLI's
// arguments: not a dialect, not its guardian) between it and the agent.
func checkCLIBehindBridge(agent int64, ps []snapProc, bridgeExe, cliExe string) error {
	parent := map[int64]snapProc{}
	for _, p := range ps {
		parent[p.pid] = p
	}
	sessions := 0
	for _, p := range ps {
		if p.exe != cliExe {
			continue
		}
		if slices.Contains(p.args, "stream-json") {
			sessions++
		}
		behind := false
		for q, ok := parent[p.ppid]; ok && q.pid != agent; q, ok = parent[q.ppid] {
			if q.exe == bridgeExe && !slices.Contains(q.args, "--ui") && (len(q.args) == 0 || q.args[0] != guardian.Arg) {
				behind = true
			}
		}
		if !behind {
			return fmt.Errorf("the CLI (pid %d, %q) runs below the adapter without a ccbridge in drop-in mode between them", p.pid, p.args)
		}
	}
	if sessions == 0 {
		return fmt.Errorf("no process runs a session of the real CLI %s below the adapter", cliExe)
	}
	return nil
}
