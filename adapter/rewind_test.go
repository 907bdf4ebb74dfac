package adapter

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/framing"
	"github.com/ccbridge/ccbridge/internal/adaptertest"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/session"
	"github.com/ccbridge/ccbridge/session/clifiles"
)

const rwSession = "5c3bb572-859f-4ecf-9616-2b9d21f1b011"

// rewindCLI answers the rewind requests as the CLI 2.1.330 does (the
// shapes of docs/protocol/*.md, "Rewind"), and records them.
type rewindCLI struct {
	mu       sync.Mutex
	requests []string
	canFiles bool
	silent   bool   // answers no control request
	file     string // the session file, where a rewind's marker goes
}

func (c *rewindCLI) answer(line string) []string {
	req := gjson.Get(line, "request")
	id := gjson.Get(line, "request_id").Str
	c.mu.Lock()
	c.requests = append(c.requests, req.Raw)
	silent := c.silent
	c.mu.Unlock()
	if silent && req.Exists() {
		return nil
	}
	ok := func(resp string) []string {
		return []string{`{"type":"control_response","response":{"subtype":"success","request_id":"` + id + `","response":` + resp + `}}`}
	}
	switch req.Get("subtype").Str {
	case "rewind_files":
		switch {
		case !c.canFiles:
			return []string{`{"type":"control_response","response":{"subtype":"error","request_id":"` + id + `","error":"File rewinding is not enabled."}}`}
		case req.Get("dry_run").Bool():
			return ok(`{"canRewind":true,"filesChanged":["/w/written.txt"],"insertions":0,"deletions":1}`)
		default:
			return ok(`{"canRewind":true,"skippedLinks":0}`)
		}
	case "rewind_conversation":
		if req.Get("target_message_uuid").Str != "u2" {
			return ok(`{"rewound":false,"prefillText":null,"precedingAssistantUuid":null,"error":"target not found","reason":"target_not_found"}`)
		}
		// The marker, as the CLI writes it (later, in truth: the rewind
		// waits for it).
		if f, err := os.OpenFile(c.file, os.O_APPEND|os.O_WRONLY, 0); err == nil {
			f.WriteString(`{"type":"last-prompt","lastPrompt":"WRITEFILE please","leafUuid":"a1","explicit":true,"rewound":true,"cutUuid":"u2"}` + "\n")
			f.Close()
		}
		return ok(`{"rewound":true,"targetMessageUuid":"u2","prefillText":"WRITEFILE please","precedingAssistantUuid":"a1"}`)
	}
	return []string{`{"type":"assistant","echo":` + strconvQuote(line) + `}`}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

func (c *rewindCLI) seen() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.requests...)
}

// rewindHarness runs a loop whose recorder starts a rewind on each UI
// line (a RewindRequest as JSON) and emits the result or the error.
func rewindHarness(t *testing.T, cli *rewindCLI, file string) (*harness, *recorder) {
	t.Helper()
	cwd, conf := t.TempDir(), t.TempDir()
	if file != "" {
		dir := clifiles.ProjectDir(conf, mustReal(t, cwd))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		cli.file = filepath.Join(dir, rwSession+".jsonl")
		if err := os.WriteFile(cli.file, []byte(file), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h := &harness{signals: make(chan os.Signal, 4), done: make(chan int, 1), log: &adaptertest.LogBuffer{}}
	loop := NewLoop(LoopConfig{Logger: slog.New(slog.NewTextHandler(h.log, nil))})
	r := &recorder{loop: loop, onExpire: func(time.Time) {}}
	h.rec = r
	r.sup = loop.NewSupervisor(SupervisorConfig{
		Child: session.Config{Dir: cwd, Env: []string{"CLAUDE_CONFIG_DIR=" + conf}},
		Start: func(session.Config) (Child, error) { return startMem(100, cli.answer), nil },
	})
	if _, err := r.sup.Start(session.Options{SessionID: rwSession}, false); err != nil {
		t.Fatal(err)
	}
	r.onLine = func(line string) {
		if line == "cli" {
			r.sup.Live().Write([]byte(`{"type":"user"}`))
			return
		}
		var req RewindRequest
		if err := json.Unmarshal([]byte(line), &req); err != nil {
			t.Errorf("bad test line %q", line)
			return
		}
		r.sup.Rewind(req, func(res RewindResult, err *RewindError) {
			if err != nil {
				b, _ := json.Marshal(err)
				loop.Emit(append([]byte(`{"error":`), append(b, '}')...))
				return
			}
			b, _ := json.Marshal(res)
			loop.Emit(b)
		})
	}
	uiR, uiW := io.Pipe()
	outR, outW := io.Pipe()
	h.ui, h.out, h.outR = uiW, framing.NewReader(outR, 1<<20), outR
	go func() {
		code, err := loop.Run(context.Background(), r, uiR, outW, h.signals)
		h.err = err
		outW.Close()
		h.done <- code
	}()
	t.Cleanup(func() { h.ui.Close(); <-h.done })
	return h, r
}

func mustReal(t *testing.T, p string) string {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return real
}

const rwFile = `{"type":"user","uuid":"u1","message":{"role":"user","content":"hello one"}}
{"type":"assistant","uuid":"a1","message":{"id":"m1","content":[{"type":"text","text":"hi"}]}}
{"type":"user","uuid":"u2","message":{"role":"user","content":"WRITEFILE please"}}
{"type":"assistant","uuid":"a2","message":{"id":"m2","content":[{"type":"text","text":"done"}]}}
`

// TestRewindTurnsWithFiles: one turn back with files is a dry run of
// rewind_files (for the list of files), rewind_files, then
// rewind_conversation to that turn's prompt; the CLI's answers go to the
// rewind, never to the handler.
func TestRewindTurnsWithFiles(t *testing.T) {
	t.Parallel()
	cli := &rewindCLI{canFiles: true}
	h, r := rewindHarness(t, cli, rwFile)
	h.send(t, `{"Turns":1,"Files":true}`)
	got := h.next(t)
	var res RewindResult
	if err := json.Unmarshal([]byte(got), &res); err != nil || res.UserMessageID != "u2" || res.Prompt != "WRITEFILE please" ||
		res.Turns != 1 || res.Kept != 1 || len(res.Files) != 1 || res.Files[0] != "/w/written.txt" || res.Deletions != 1 || res.DryRun {
		t.Fatalf("result %s", got)
	}
	want := []string{
		`{"subtype":"rewind_files","user_message_id":"u2","dry_run":true}`,
		`{"subtype":"rewind_files","user_message_id":"u2"}`,
		`{"subtype":"rewind_conversation","target_message_uuid":"u2"}`,
	}
	if s := cli.seen(); strings.Join(s, "\n") != strings.Join(want, "\n") {
		t.Errorf("the CLI got\n%s\nwant\n%s", strings.Join(s, "\n"), strings.Join(want, "\n"))
	}
	// The handler saw no control_response; the child still serves it.
	h.send(t, "cli")
	if got := h.next(t); !strings.Contains(got, `"echo"`) {
		t.Errorf("after the rewind: %s", got)
	}
	h.ui.Close()
	<-h.done
	h.done <- 0
	for _, c := range r.calls {
		if strings.Contains(c, "control_response") {
			t.Errorf("the handler saw %s", c)
		}
	}
}

// TestRewindDryRunAndErrors: a dry run asks for nothing but the files'
// dry run; a user message id goes to that prompt; too many turns, an
// unknown id, no turns, files the CLI cannot restore and a session with
// no file are typed errors, each leaving the session usable.
func TestRewindDryRunAndErrors(t *testing.T) {
	t.Parallel()
	cli := &rewindCLI{canFiles: true}
	h, _ := rewindHarness(t, cli, rwFile)
	h.send(t, `{"UserMessageID":"u1","Files":true,"DryRun":true}`)
	got := h.next(t)
	if gjson.Get(got, "UserMessageID").Str != "u1" || gjson.Get(got, "Turns").Int() != 2 || !gjson.Get(got, "DryRun").Bool() || gjson.Get(got, "Files.#").Int() != 1 {
		t.Errorf("dry run: %s", got)
	}
	if s := cli.seen(); len(s) != 1 || !strings.Contains(s[0], `"dry_run":true`) {
		t.Errorf("a dry run sent %q", s)
	}
	for _, tc := range []struct{ line, code string }{
		{`{"Turns":3}`, RewindNotFound},
		{`{"UserMessageID":"nope"}`, RewindNotFound},
		{`{}`, RewindInvalid},
		{`{"Turns":-1}`, RewindInvalid},
	} {
		h.send(t, tc.line)
		if got := h.next(t); gjson.Get(got, "error.Code").Str != tc.code {
			t.Errorf("%s: %s, want code %s", tc.line, got, tc.code)
		}
	}
	cli.mu.Lock()
	cli.canFiles = false
	cli.mu.Unlock()
	h.send(t, `{"Turns":1,"Files":true}`)
	if got := h.next(t); gjson.Get(got, "error.Code").Str != RewindNoFiles || !strings.Contains(got, "not enabled") {
		t.Errorf("files off: %s", got)
	}
	// Conversation only: no rewind_files.
	n := len(cli.seen())
	h.send(t, `{"Turns":1}`)
	if got := h.next(t); gjson.Get(got, "UserMessageID").Str != "u2" || gjson.Get(got, "Files").Raw != "null" {
		t.Errorf("conversation only: %s", got)
	}
	if s := cli.seen()[n:]; len(s) != 1 || !strings.Contains(s[0], "rewind_conversation") {
		t.Errorf("conversation only sent %q", s)
	}

	h2, _ := rewindHarness(t, &rewindCLI{}, "")
	h2.send(t, `{"Turns":1}`)
	if got := h2.next(t); gjson.Get(got, "error.Code").Str != RewindNoSession {
		t.Errorf("no file: %s", got)
	}
}

// TestRewindBusy: a second rewind while one waits for the CLI is refused.
func TestRewindBusy(t *testing.T) {
	t.Parallel()
	cli := &rewindCLI{canFiles: true}
	h, r := rewindHarness(t, cli, rwFile)
	var errs []string
	r.onLine = func(string) {
		for range 2 {
			r.sup.Rewind(RewindRequest{Turns: 1}, func(res RewindResult, err *RewindError) {
				if err != nil {
					errs = append(errs, err.Code)
				} else {
					errs = append(errs, "ok")
				}
				if len(errs) == 2 {
					r.loop.Emit([]byte(strings.Join(errs, " ")))
				}
			})
		}
	}
	h.send(t, "go")
	if got := h.next(t); got != "busy ok" {
		t.Errorf("two rewinds at once: %q, want busy ok", got)
	}
}

// TestRewindMarkerAfter: the wait for the CLI's record of a rewind reads
// the file from the offset it had before the rewind, and only a marker of
// that prompt counts.
func TestRewindMarkerAfter(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	old := `{"type":"last-prompt","rewound":true,"cutUuid":"u2"}` + "\n"
	if err := os.WriteFile(path, []byte(old+`{"type":"last-prompt","rewound":true,"cutUuid":"u9"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if markerAfter(path, int64(len(old)), "u2") {
		t.Error("a marker before the offset counted")
	}
	if !markerAfter(path, int64(len(old)), "u9") || !markerAfter(path, 0, "u2") {
		t.Error("a marker after the offset was not found")
	}
	if markerAfter(filepath.Join(t.TempDir(), "none"), 0, "u2") {
		t.Error("a missing file holds a marker")
	}
}

// TestRewindFilesOnlyAndPoints: KeepConversation restores the files and
// sends no rewind_conversation; RewindPoints lists the conversation's
// prompts.
func TestRewindFilesOnlyAndPoints(t *testing.T) {
	t.Parallel()
	cli := &rewindCLI{canFiles: true}
	h, r := rewindHarness(t, cli, rwFile)
	h.send(t, `{"Turns":1,"Files":true,"KeepConversation":true}`)
	if got := h.next(t); gjson.Get(got, "UserMessageID").Str != "u2" || gjson.Get(got, "Files.#").Int() != 1 {
		t.Errorf("files only: %s", got)
	}
	for _, req := range cli.seen() {
		if strings.Contains(req, "rewind_conversation") {
			t.Errorf("files only sent %s", req)
		}
	}
	r.onLine = func(string) {
		r.sup.RewindPoints(func(ps []mapping.Prompt, err *RewindError) {
			b, _ := json.Marshal(ps)
			r.loop.Emit(b)
		})
	}
	h.send(t, "points")
	if got := h.next(t); got != `[{"UUID":"u1","Text":"hello one"},{"UUID":"u2","Text":"WRITEFILE please"}]` {
		t.Errorf("points: %s", got)
	}
}

// TestRewindTimeout: a CLI that never answers a rewind's request fails
// the rewind once its Timeout has passed, and the next rewind may go (it
// is not refused as busy for the rest of the child's life).
func TestRewindTimeout(t *testing.T) {
	t.Parallel()
	cli := &rewindCLI{canFiles: true, silent: true}
	h, _ := rewindHarness(t, cli, rwFile)
	h.send(t, `{"Turns":1,"Files":true,"Timeout":100000000}`)
	got := gjson.Parse(h.next(t))
	if got.Get("error.Code").Str != RewindFailed || !strings.Contains(got.Get("error.Message").Str, "did not answer") {
		t.Fatalf("a rewind the CLI does not answer: %s", got.Raw)
	}
	cli.mu.Lock()
	cli.silent = false
	cli.mu.Unlock()
	h.send(t, `{"Turns":1,"Files":true,"Timeout":100000000}`)
	if got := gjson.Parse(h.next(t)); got.Get("error").Exists() || got.Get("Turns").Int() != 1 {
		t.Errorf("the rewind after a timed-out one: %s", got.Raw)
	}
}
