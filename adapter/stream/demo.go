package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/framing"
	"github.com/ccbridge/ccbridge/session"
)

// Args are the CLI arguments of the stream dialect, before the
// session options and the user's extra arguments: stream-json both ways,
// permission prompts forwarded over stdio, partial messages streamed.
var Args = []string{
	"--output-format", "stream-json",
	"--input-format", "stream-json",
	"--verbose",
	"--permission-prompt-tool", "stdio",
	"--include-partial-messages",
}

// DemoPrompt asks the built-in fake model for a Write, which needs a
// permission.
const DemoPrompt = "Please WRITEFILE"

// Demo plays a small UI against a stream-dialect session: it sends one
// prompt, shows what comes back, answers the permission request with allow,
// and checks the written file. It prints a readable account to out.
// child.Args must hold the stream dialect's arguments; an empty child.Dir
// becomes a fresh temporary directory.
func Demo(ctx context.Context, child session.Config, out io.Writer) error {
	if child.Dir == "" {
		dir, err := os.MkdirTemp("", "ccbridge-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		child.Dir = dir
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	d := &DropIn{Child: child, Logger: child.Logger}
	type runResult struct {
		code int
		err  error
	}
	ran := make(chan runResult, 1)
	go func() {
		code, err := d.Run(ctx, inR, outW, nil)
		outW.Close()
		ran <- runResult{code, err}
	}()

	ui := framing.NewWriter(inW)
	say := func(format string, a ...any) { fmt.Fprintf(out, format+"\n", a...) }
	say("ccbridge demo: the real Claude Code CLI in %s, a scripted fake model, ccbridge in between.", child.Dir)
	prompt := `{"type":"user","session_id":"","message":{"role":"user","content":[{"type":"text","text":` +
		string(jsonString(DemoPrompt)) + `}]},"parent_tool_use_id":null}`
	say("UI  -> %s", prompt)
	if err := ui.WriteLine([]byte(prompt)); err != nil {
		return err
	}

	var written, result string
	fr := framing.NewReader(outR, 0)
	for {
		line, err := fr.ReadLine()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		typ := gjson.GetBytes(line, "type").Str
		switch typ {
		case "system":
			say("CLI <- system/%s session=%s", gjson.GetBytes(line, "subtype").Str, gjson.GetBytes(line, "session_id").Str)
		case "stream_event":
			// Partial deltas: shown once, complete, in the assistant frame.
		case "assistant":
			gjson.GetBytes(line, "message.content").ForEach(func(_, block gjson.Result) bool {
				switch block.Get("type").Str {
				case "text":
					say("CLI <- assistant text: %q", block.Get("text").Str)
				case "thinking":
					say("CLI <- assistant thinking: %q", block.Get("thinking").Str)
				case "tool_use":
					say("CLI <- assistant tool_use %s %s", block.Get("name").Str, block.Get("input").Raw)
				}
				return true
			})
		case "control_request":
			req := gjson.GetBytes(line, "request")
			id := gjson.GetBytes(line, "request_id").Str
			say("CLI <- permission request %s: %s wants %s", id, req.Get("display_name").Str, req.Get("input").Raw)
			if p := req.Get("input.file_path"); p.Exists() {
				written = p.Str
			}
			answer := `{"type":"control_response","response":{"subtype":"success","request_id":` +
				string(jsonString(id)) + `,"response":{"behavior":"allow"}}}`
			say("UI  -> allow: %s", answer)
			if err := ui.WriteLine([]byte(answer)); err != nil {
				return err
			}
		case "user":
			gjson.GetBytes(line, "message.content").ForEach(func(_, block gjson.Result) bool {
				if block.Get("type").Str == "tool_result" {
					say("CLI <- tool_result: %s", strings.TrimSpace(block.Get("content").String()))
				}
				return true
			})
		case "result":
			result = gjson.GetBytes(line, "subtype").Str
			say("CLI <- result %s: %q (cost $%.6f, %d ms)", result, gjson.GetBytes(line, "result").Str,
				gjson.GetBytes(line, "total_cost_usd").Num, gjson.GetBytes(line, "duration_ms").Int())
			// One prompt, one result: end the host's input, and the
			// session shuts down in stages.
			inW.Close()
		default:
			say("CLI <- %s", typ)
		}
	}
	r := <-ran
	if r.err != nil {
		return r.err
	}
	say("claude exited with code %d", r.code)
	if result != "success" {
		return fmt.Errorf("the turn ended with %q, want success", result)
	}
	if written == "" {
		return errors.New("no permission request was seen")
	}
	body, err := os.ReadFile(written)
	if err != nil {
		return fmt.Errorf("the allowed Write left no file: %w", err)
	}
	say("%s now holds %q", written, string(body))
	return nil
}
