package acp_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/internal/golden"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/acp"
	"github.com/ccbridge/ccbridge/mapping/jsonrpc"
)

var update = flag.Bool("update", false, "rewrite testdata/acp/*.golden from the transcripts and session files")

const (
	transcriptDir = "../../testdata/transcripts"
	goldenDir     = "../../testdata/acp"
	goldenSession = "acp-golden-session"
)

// translate drives one transcript the way the adapter does: the host's
// initialize becomes a session setup answered from the CLI's initialize
// response; each host prompt is a session/prompt ("p1", "p2", …) answered
// by the result that ends it; a host interrupt during a turn is a
// session/cancel; each can_use_tool becomes a client request (ids 1, 2, …).
func translate(t testing.TB, path string) [][]byte {
	t.Helper()
	lines, fromCLI := golden.ReadTranscript(t, path)
	tr := acp.NewTranslator(goldenSession)
	var got [][]byte
	initID := ""
	var prompts []string
	cancelled := map[string]bool{}
	nPrompt, nReq := 0, 0
	for i, l := range lines {
		if !gjson.ValidBytes(l) {
			continue // protocol_errors ends with a deliberately broken host line
		}
		if !fromCLI[i] {
			switch gjson.GetBytes(l, "type").Str {
			case "control_request":
				switch gjson.GetBytes(l, "request.subtype").Str {
				case "initialize":
					initID = gjson.GetBytes(l, "request_id").Str
				case "interrupt":
					if len(prompts) > 0 {
						cancelled[prompts[0]] = true
					}
				}
			case "user":
				nPrompt++
				prompts = append(prompts, "p"+strconv.Itoa(nPrompt))
			}
			continue
		}
		n := len(got)
		ev := mapping.Route(l)
		switch {
		case ev.Kind == mapping.KindControlResponse && initID != "" && ev.RequestID == initID:
			resp := ev.Body.Get("response")
			tr.Config = acp.ConfigFromInitialize(resp, "", false)
			got = append(got, jsonrpc.AppendResult(nil, `"setup"`, string(tr.Config.AppendSetupResult(nil, goldenSession))))
			got = append(got, acp.AppendAvailableCommands(nil, goldenSession, resp, gjson.Result{}))
		case ev.Kind == mapping.KindCanUseTool:
			nReq++
			p := acp.NewPending(&ev, strings.Contains(path, "ask_user"))
			got = append(got, jsonrpc.AppendRequest(nil, strconv.Itoa(nReq), p.Method(), string(tr.AppendParams(nil, p))))
		}
		got = tr.FromCLI(&ev, got)
		if ev.Kind == mapping.KindResult && len(prompts) > 0 {
			id := `"` + prompts[0] + `"`
			reason, err := acp.TurnOutcome(&ev, cancelled[prompts[0]])
			prompts = prompts[1:]
			if err != nil {
				got = append(got, err.AppendResponse(nil, id))
			} else {
				got = append(got, jsonrpc.AppendResult(nil, id, string(acp.AppendStopResult(nil, reason))))
			}
		}
		for _, o := range got[n:] {
			checkLine(t, i+1, o)
		}
	}
	return got
}

// checkLine checks that an output line is one JSON-RPC 2.0 message on one
// line, and a session/update of a known kind.
func checkLine(t testing.TB, line int, o []byte) {
	t.Helper()
	if !json.Valid(o) || bytes.ContainsAny(o, "\n") {
		t.Fatalf("line %d: output is not one line of JSON: %s", line, o)
	}
	if gjson.GetBytes(o, "jsonrpc").Str != "2.0" {
		t.Fatalf("line %d: not JSON-RPC 2.0: %s", line, o)
	}
	if gjson.GetBytes(o, "method").Str != acp.MethodSessionUpdate {
		return
	}
	if gjson.GetBytes(o, "params.sessionId").Str != goldenSession {
		t.Fatalf("line %d: update without the session id: %s", line, o)
	}
	switch k := gjson.GetBytes(o, "params.update.sessionUpdate").Str; k {
	case "agent_message_chunk", "agent_thought_chunk", "user_message_chunk", "tool_call", "tool_call_update",
		"plan", "available_commands_update", "current_mode_update", "config_option_update", "usage_update", "session_info_update":
	default:
		t.Fatalf("line %d: unknown update kind %q: %s", line, k, o)
	}
}

func compareGolden(t *testing.T, name string, got [][]byte) {
	t.Helper()
	golden.Compare(t, filepath.Join(goldenDir, name+".golden"), golden.Join(got), *update)
}

func TestGolden(t *testing.T) {
	files := golden.Transcripts(t, transcriptDir)
	synthetic, _ := filepath.Glob(filepath.Join(goldenDir, "synthetic", "*.ndjson"))
	captures, _ := filepath.Glob(filepath.Join(goldenDir, "captures", "*.ndjson"))
	for _, f := range append(append(files, synthetic...), captures...) {
		name := strings.TrimSuffix(filepath.Base(f), ".ndjson")
		switch filepath.Base(filepath.Dir(f)) {
		case "synthetic":
			name = "synthetic_" + name
		case "captures":
			name = "capture_" + name
		}
		t.Run(name, func(t *testing.T) {
			compareGolden(t, name, translate(t, f))
		})
	}
}

// TestGoldenReplay replays the real session files in testdata/acp (written
// by the CLI 2.1.330 under a scratch HOME) as session/load does.
func TestGoldenReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no session files in %s: %v", goldenDir, err)
	}
	for _, f := range files {
		name := "replay_" + strings.TrimSuffix(filepath.Base(f), ".jsonl")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			tr := acp.NewTranslator(goldenSession)
			var got [][]byte
			for i, l := range bytes.Split(data, []byte("\n")) {
				n := len(got)
				got = tr.Replay(l, got)
				for _, o := range got[n:] {
					checkLine(t, i+1, o)
				}
			}
			tr.ReplayDone()
			compareGolden(t, name, got)
		})
	}
}
