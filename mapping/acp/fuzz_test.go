package acp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/internal/golden"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/acp"
)

// FuzzACP feeds arbitrary CLI lines, session-file lines, prompts and
// client answers through the translation: nothing may panic, and every
// line produced must be one valid JSON object without a newline.
func FuzzACP(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(transcriptDir, "*.ndjson"))
	for _, file := range files[:min(len(files), 12)] {
		lines, _ := golden.ReadTranscript(f, file)
		for _, l := range lines[:min(len(lines), 30)] {
			f.Add(l)
		}
	}
	f.Add([]byte(`{"type":"control_request","request_id":"r","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","input":{"questions":[{"question":"q","options":[{"label":"a"}]}]},"tool_use_id":"t"}}`))
	f.Add([]byte(`[{"type":"text","text":"x"},{"type":"resource","resource":{"uri":"u","text":"t"}}]`))
	f.Add([]byte(`{"outcome":{"outcome":"selected","optionId":"answer_0"}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		check := func(what string, out []byte) {
			if len(out) == 0 {
				return
			}
			if !json.Valid(out) {
				t.Fatalf("%s: invalid JSON from %q: %s", what, line, out)
			}
			for _, c := range out {
				if c == '\n' {
					t.Fatalf("%s: a newline in %s", what, out)
				}
			}
		}
		tr := acp.NewTranslator("s")
		ev := mapping.Route(line)
		valid := gjson.ValidBytes(line)
		for _, o := range tr.FromCLI(&ev, nil) {
			if valid { // FromCLI's contract: the caller validates lines
				check("FromCLI", o)
			}
		}
		for _, o := range tr.Replay(line, nil) {
			check("Replay", o)
		}
		if valid {
			reason, err := acp.TurnOutcome(&ev, false)
			if err != nil {
				check("TurnOutcome", err.AppendResponse(nil, "1"))
			} else if reason == "" {
				t.Fatalf("no stop reason and no error for %s", line)
			}
			res := gjson.ParseBytes(line)
			for _, elicit := range []bool{false, true} {
				p := acp.NewPending(&ev, elicit)
				check("AppendParams", tr.AppendParams(nil, p))
				a := p.Answer(res, "")
				if !a.Next {
					check("Answer", a.Stdin)
				}
			}
			if blocks, err := acp.PromptBlocks(res); err == nil {
				check("PromptBlocks", mapping.AppendUserMessage(nil, mapping.UserOptions{}, blocks...))
			}
			if cfg, err := acp.MCPConfig(res); err == nil && cfg != "" {
				check("MCPConfig", []byte(cfg))
			}
			c := acp.ConfigFromInitialize(res, "", true)
			check("Config", c.AppendSetupResult(nil, "s"))
			check("Commands", acp.AppendAvailableCommands(nil, "s", res, res))
		}
		var s mapping.SessionSummary
		s.Line(line)
		check("List", acp.AppendListResult(nil, []acp.SessionInfo{{ID: "i", CWD: s.CWD, Title: acp.SessionTitle(&s)}}, ""))
	})
}

// TestFuzzCorpusExists keeps the seed files findable: the fuzz target
// reads the transcripts.
func TestFuzzCorpusExists(t *testing.T) {
	if _, err := os.Stat(transcriptDir); err != nil {
		t.Fatal(err)
	}
}
