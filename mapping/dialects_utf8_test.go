package mapping_test

// The UTF-8 property of every dialect's translator, fuzzed here rather
// than beside the loop (adapter): it needs the codecs and framing only,
// so that its fuzzing build is theirs alone.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/framing"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/acp"
	"github.com/ccbridge/ccbridge/mapping/dropin"
	"github.com/ccbridge/ccbridge/mapping/ipc"
	"github.com/ccbridge/ccbridge/mapping/jsonrpc"
	"github.com/ccbridge/ccbridge/mapping/rpc"
)

// FuzzDialectsUTF8 is the UTF-8 property of every dialect: any CLI line and
// any UI line, through each dialect's translator, give whole JSON lines
// (drop-in: the CLI's line as its relay passes it, whole or in pieces);
// once through the loop's output guard (framing.ValidUTF8, which
// Loop.flush applies to everything it writes) not a byte is outside UTF-8;
// the lines built for the CLI are UTF-8 on their own; and a UI line that is
// not UTF-8 is each dialect's parse error (ipc invalid_json, rpc and acp
// -32700, drop-in dropped).
func FuzzDialectsUTF8(f *testing.F) {
	files, _ := filepath.Glob("../testdata/transcripts/*.ndjson")
	seeds := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 16<<20)
		for sc.Scan() && seeds < 400 {
			if l, ok := strings.CutPrefix(sc.Text(), "<< "); ok {
				f.Add([]byte(l), []byte(`{"type":"user_message","text":"hi"}`))
				seeds++
			}
		}
	}
	for _, ui := range []string{
		"{\"jsonrpc\":\"2.0\",\"id\":\"a\xffb\",\"method\":\"initialize\",\"params\":{}}",
		"{\"type\":\"user_message\",\"text\":\"caf\xe9\"}",
		`{"jsonrpc":"2.0","id":"ui-1","result":{"ok":true}}`,
		`{"type":"model_change","model":"x"}`,
	} {
		f.Add([]byte("{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"\xff\"}]}}"), []byte(ui))
	}
	f.Fuzz(func(t *testing.T, cli, ui []byte) {
		var toUI, toCLI [][]byte

		// The CLI side: every dialect's translator.
		if gjson.ValidBytes(cli) {
			ev := mapping.Route(cli)
			toUI = ipc.New(ipc.Options{}).FromCLI(ev, toUI)
			toUI = acp.NewTranslator("s").FromCLI(&ev, toUI)
			tr := rpc.New(rpc.Options{Diagnostics: true})
			var out rpc.Output
			tr.BeginRun("run-1", &out)
			tr.SentPrompt("run-1")
			tr.FromCLI(ev, 1, &out)
			toUI = append(toUI, out.UI...)
			toCLI = append(toCLI, out.CLI...)
		}

		// The UI side.
		cmd, err := ipc.New(ipc.Options{}).FromUI(ui)
		var ie *ipc.Error
		switch {
		case errors.As(err, &ie):
			toUI = append(toUI, ie.AppendIPC(nil))
		case err == nil && len(cmd.Stdin) > 0:
			toCLI = append(toCLI, cmd.Stdin)
		}
		m := jsonrpc.Parse(ui)
		if m.Kind == jsonrpc.KindInvalid {
			toUI = append(toUI, jsonrpc.AppendError(nil, m.ID, m.ProblemCode(), m.Problem, ""))
		}
		if !utf8.Valid(ui) {
			if ie == nil || ie.Code != ipc.CodeInvalidJSON {
				t.Fatalf("ipc: %q is not UTF-8 but gave %v", ui, err)
			}
			if m.Kind != jsonrpc.KindInvalid || m.ProblemCode() != jsonrpc.CodeParseError {
				t.Fatalf("rpc/acp: %q is not UTF-8 but parsed as %+v", ui, m)
			}
			if v := dropin.Check(ui); v.Reason != dropin.NotUTF8 {
				t.Fatalf("drop-in: %q is not UTF-8 but got %+v", ui, v)
			}
		}

		// What the loop writes: the lines joined, then its guard.
		var block []byte
		for _, l := range toUI {
			if bytes.IndexByte(l, '\n') >= 0 {
				t.Fatalf("a UI line holds a line break: %q", l)
			}
			block = append(append(block, l...), '\n')
		}
		block = framing.ValidUTF8(block)
		if !utf8.Valid(block) {
			t.Fatalf("not UTF-8 after the guard: %q", block)
		}
		for _, l := range bytes.Split(bytes.TrimSuffix(block, []byte("\n")), []byte("\n")) {
			if len(block) > 0 && (!json.Valid(l) || !gjson.ValidBytes(l)) {
				t.Fatalf("a UI line is not JSON after the guard: %q", l)
			}
		}
		for _, l := range toCLI {
			if !utf8.Valid(l) || !json.Valid(l) {
				t.Fatalf("a CLI line is not UTF-8 JSON: %q", l)
			}
		}

		// Drop-in relays the CLI's line: whole (framing.ValidUTF8, as
		// passBlock does) or in pieces (framing.UTF8Writer, as streamLine
		// does), here cut at a third and at two thirds.
		var pieces bytes.Buffer
		u := framing.UTF8Writer{W: &pieces}
		n := len(cli)
		for _, p := range [][]byte{cli[:n/3], cli[n/3 : 2*n/3], cli[2*n/3:]} {
			u.Write(p)
		}
		u.End()
		for _, got := range [][]byte{framing.ValidUTF8(cli), pieces.Bytes()} {
			if !utf8.Valid(got) {
				t.Fatalf("drop-in: %q reached the host as %q, not UTF-8", cli, got)
			}
			if utf8.Valid(cli) && !bytes.Equal(got, cli) {
				t.Fatalf("drop-in: valid %q reached the host as %q", cli, got)
			}
		}
	})
}
