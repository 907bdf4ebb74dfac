package rpc

import (
	"bytes"
	"encoding/json"
	"flag"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ccbridge/ccbridge/internal/golden"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/jsonrpc"
	"github.com/tidwall/gjson"
)

var update = flag.Bool("update", false, "rewrite testdata/rpc/*.golden from the transcripts")

const (
	transcriptDir = "../../testdata/transcripts"
	goldenDir     = "../../testdata/rpc"
	clockBase     = int64(1795300000000) // 2026-11-21T…, near the transcripts' dates
)

// replay drives a transcript through Route and a Translator the way the
// adapter does, with a simulated UI that answers as the transcript's host
// did: every host prompt is a run.start, every host interrupt a run.cancel
// of the running turn, every host answer to a can_use_tool the UI's
// answer to the request ccbridge made of it. It returns the golden text:
// "ui  <line>" for lines to the UI, "cli <line>" for lines ccbridge writes
// to the CLI, "#   <what the UI did>".
func replay(t testing.TB, path string) []byte {
	t.Helper()
	lines, fromCLI := golden.ReadTranscript(t, path)
	tr := New(Options{Diagnostics: true})
	var buf bytes.Buffer
	var out Output
	emit := func(what string) {
		for _, l := range out.UI {
			checkLine(t, l)
			buf.WriteString("ui  ")
			buf.Write(l)
			buf.WriteByte('\n')
		}
		for _, l := range out.CLI {
			checkLine(t, l)
			buf.WriteString("cli ")
			buf.Write(l)
			buf.WriteByte('\n')
		}
		out.Reset()
		_ = what
	}
	runs := 0
	for i, l := range lines {
		now := clockBase + int64(i)*10
		if !gjson.ValidBytes(l) {
			continue // protocol_errors ends with a deliberately broken host line
		}
		if fromCLI[i] {
			tr.FromCLI(mapping.Route(l), now, &out)
			emit("")
			continue
		}
		switch gjson.GetBytes(l, "type").Str {
		case "user":
			runs++
			id := "run-" + strconv.Itoa(runs)
			buf.WriteString("#   run.start " + id + "\n")
			tr.BeginRun(id, &out)
			tr.SentPrompt(id)
			emit("")
		case "control_request":
			if gjson.GetBytes(l, "request.subtype").Str != "interrupt" {
				continue
			}
			for _, r := range append([]*run(nil), tr.turns...) {
				if Terminal(r.status) {
					continue
				}
				buf.WriteString("#   run.cancel " + r.id + "\n")
				tr.CancelRun(r.id, "", &out)
				if !gjson.GetBytes(l, "request.cancel_queued").Bool() {
					break
				}
			}
			emit("")
		case "control_response":
			answer(t, tr, l, now, &out, &buf)
			emit("")
		}
	}
	return buf.Bytes()
}

// answer turns the transcript host's answer to a can_use_tool into the
// UI's answers to the requests ccbridge made.
func answer(t testing.TB, tr *Translator, l []byte, now int64, out *Output, buf *bytes.Buffer) {
	cliID := gjson.GetBytes(l, "response.request_id").Str
	p := tr.byCLI[cliID]
	if p == nil {
		return // an answer to a hook or an MCP request: not the UI's business
	}
	resp := gjson.GetBytes(l, "response.response")
	send := func(result string) {
		line := `{"jsonrpc":"2.0","id":` + p.uiID + `,"result":` + result + `}`
		if gjson.GetBytes(l, "response.subtype").Str == "error" {
			line = `{"jsonrpc":"2.0","id":` + p.uiID + `,"error":{"code":-32603,"message":` + strconv.Quote(gjson.GetBytes(l, "response.error").Str) + `}}`
		}
		buf.WriteString("#   ui answers " + line + "\n")
		tr.FromUI(jsonrpc.Parse([]byte(line)), now, out)
	}
	if gjson.GetBytes(l, "response.subtype").Str == "error" {
		send("null")
		return
	}
	if p.kind != KindQuestion {
		if resp.Get("behavior").Str == "allow" {
			send(`{"ok":true,"remember":` + strconv.FormatBool(resp.Get("updatedPermissions").Exists()) + `}`)
		} else {
			send(`{"ok":false,"reason":` + strconv.Quote(resp.Get("message").Str) + `}`)
		}
		return
	}
	if resp.Get("behavior").Str != "allow" {
		send(`{"ids":[]}`)
		return
	}
	answers := resp.Get("updatedInput.answers")
	for p.kind == KindQuestion && tr.byCLI[cliID] == p {
		q := p.questions[p.qi]
		want := answers.Get(gjson.Escape(q.text)).Str
		if p.method == MethodUIPrompt {
			send(`{"value":` + strconv.Quote(want) + `}`)
			continue
		}
		var ids []string
		for _, label := range strings.Split(want, ",") {
			for i, o := range q.options {
				if o.label == label {
					ids = append(ids, `"`+strconv.Itoa(i+1)+`"`)
				}
			}
		}
		if len(ids) == 0 {
			ids = []string{`"` + OtherItemID + `"`}
		}
		send(`{"ids":[` + strings.Join(ids, ",") + `]}`)
	}
}

func checkLine(t testing.TB, l []byte) {
	t.Helper()
	if !json.Valid(l) {
		t.Fatalf("output is not valid JSON: %s", l)
	}
	if bytes.IndexByte(l, '\n') >= 0 {
		t.Fatalf("output contains a newline: %s", l)
	}
}

func TestGolden(t *testing.T) {
	files := golden.Transcripts(t, transcriptDir)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".ndjson")
		t.Run(name, func(t *testing.T) {
			got := replay(t, f)
			checkInvariants(t, got)
			golden.Compare(t, filepath.Join(goldenDir, name+".golden"), got, *update)
		})
	}
}

// checkInvariants checks the dialect's rules on a golden: per run, seq
// counts from 0 without gaps; exactly one terminal run.status per run, and
// no agent.event after it.
func checkInvariants(t *testing.T, golden []byte) {
	t.Helper()
	seq := map[string]int64{}
	terminal := map[string]string{}
	for _, l := range strings.Split(string(golden), "\n") {
		line, ok := strings.CutPrefix(l, "ui  ")
		if !ok {
			continue
		}
		m := gjson.Get(line, "method").Str
		run := gjson.Get(line, "params.run_id").Str
		switch m {
		case MethodAgentEvent:
			if st, done := terminal[run]; done {
				t.Errorf("agent.event for %s after run.status %s: %s", run, st, line)
			}
			if got := gjson.Get(line, "params.seq").Int(); got != seq[run] {
				t.Errorf("%s: seq %d, want %d", run, got, seq[run])
			}
			seq[run]++
		case MethodRunStatus:
			st := gjson.Get(line, "params.status").Str
			if prev, done := terminal[run]; done {
				t.Errorf("run.status %s for %s after terminal %s", st, run, prev)
			}
			if Terminal(st) {
				terminal[run] = st
			}
		}
	}
}
