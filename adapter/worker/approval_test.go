package worker

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter/control"
	"github.com/ccbridge/ccbridge/mapping/lane000"
	"github.com/ccbridge/ccbridge/screen"
	"github.com/ccbridge/ccbridge/session"
)

// codexEdit is Codex's approval prompt for an edit as its screen shows it
// (CLI 0.171.0, -s read-only -a on-request; captured rows, frame kept).
var codexEdit = []string{
	"• I'll create the file now.",
	"",
	"  Would you like to make the following edits?",
	"",
	"  Description: Apply proposed file edits",
	"  Destination: /tmp/w/written.txt",
	"",
	"› 1. Yes, proceed (y)",
	"  2. Yes, and don't ask again for these files (a)",
	"  3. No, and tell Codex what to do differently (esc)",
	"",
	"  Press enter to confirm or esc to cancel",
}

func TestFindApprovalCodexEdit(t *testing.T) {
	a := findApproval(profiles["codex"].Approvals, codexEdit)
	if a == nil {
		t.Fatal("Codex's edit prompt not found")
	}
	if a.form.Kind != "edit" || a.question != "Would you like to make the following edits?" || a.file != "/tmp/w/written.txt" || a.command != "" {
		t.Errorf("kind %q question %q file %q command %q", a.form.Kind, a.question, a.file, a.command)
	}
	want := []lane000.ApprovalChoice{
		{N: 1, Label: "Yes, proceed", Key: "y"},
		{N: 2, Label: "Yes, and don't ask again for these files", Key: "a"},
		{N: 3, Label: "No, and tell Codex what to do differently", Key: "esc"},
	}
	if len(a.choices) != len(want) {
		t.Fatalf("choices %+v, want %+v", a.choices, want)
	}
	for i := range want {
		if a.choices[i] != want[i] {
			t.Errorf("choice %d: %+v, want %+v", i+1, a.choices[i], want[i])
		}
	}
	if strings.Join(a.text, "|") != "Description: Apply proposed file edits|Destination: /tmp/w/written.txt" {
		t.Errorf("text %q", a.text)
	}
}

func TestFindApprovalNone(t *testing.T) {
	forms := profiles["codex"].Approvals
	for name, rows := range map[string][]string{
		"no question":        {"› 1. Yes", "  2. No"},
		"question, 1 choice": {"Would you like to run the following command?", "$ ls", "1. Yes (y)"},
		"not from 1":         {"Would you like to run the following command?", "2. Yes (y)", "3. No (esc)"},
		"question quoted":    {"> tell me: Would you like to make the following edits?", "a reply"},
		"empty screen":       nil,
	} {
		if a := findApproval(forms, rows); a != nil {
			t.Errorf("%s: found %+v", name, a)
		}
	}
	if a := findApproval(profiles["none"].Approvals, codexEdit); a != nil {
		t.Errorf("a profile with no forms found %+v", a)
	}
}

func TestFindApprovalCommand(t *testing.T) {
	a := findApproval(profiles["codex"].Approvals, []string{
		"│ Would you like to run the following command? │",
		"│ $ echo hi > out.txt                          │",
		"│ 1. Yes, proceed (y)                          │",
		"│ 2. No (esc)                                  │",
	})
	if a == nil || a.form.Kind != "command" || a.command != "echo hi > out.txt" || len(a.choices) != 2 || a.choices[1].Key != "esc" {
		t.Fatalf("%+v", a)
	}
}

// A number names its choice before any key does.
func TestApprovalChoiceOrder(t *testing.T) {
	a := &approval{choices: []lane000.ApprovalChoice{{N: 1, Label: "Yes", Key: "2"}, {N: 2, Label: "No", Key: "esc"}}}
	for content, want := range map[string]int{"2": 2, "1": 1, "ESC": 2, " yes ": 1, "no": 2} {
		if c, ok := a.choice([]byte(content)); !ok || c.N != want {
			t.Errorf("%q: %+v, want choice %d", content, c, want)
		}
	}
	if c, ok := a.choice([]byte("maybe")); ok {
		t.Errorf("maybe: %+v", c)
	}
}

func TestParseChoice(t *testing.T) {
	for line, want := range map[string]lane000.ApprovalChoice{
		"1. Yes, proceed (y)":             {N: 1, Label: "Yes, proceed", Key: "y"},
		"2. Allow always":                 {N: 2, Label: "Allow always", Key: "2"},
		"3. No (esc)":                     {N: 3, Label: "No", Key: "esc"},
		"4. Run it (with care)":           {N: 4, Label: "Run it (with care)", Key: "4"},
		"12. Twelve":                      {N: 12, Label: "Twelve", Key: "12"},
		"1. Yes, allow edits (shift+tab)": {N: 1, Label: "Yes, allow edits (shift+tab)", Key: "1"},
	} {
		got, ok := parseChoice(line)
		if !ok || got != want {
			t.Errorf("%q: %+v %v, want %+v", line, got, ok, want)
		}
	}
	for _, line := range []string{"", "1.", "1.x", "a. b", "0. zero", "123. far", "1.  ", "v1.2 released"} {
		if c, ok := parseChoice(line); ok {
			t.Errorf("%q read as a choice: %+v", line, c)
		}
	}
}

func TestProfileFor(t *testing.T) {
	for _, c := range []struct {
		agent   string
		command []string
		want    string
	}{
		{"", nil, "claude"},
		{"", []string{"/usr/local/bin/codex", "-s", "read-only"}, "codex"},
		{"", []string{"gemini"}, "gemini"},
		{"", []string{"claude.exe"}, "claude"},
		{"", []string{"./my-agent"}, "none"},
		{"codex", []string{"./my-agent"}, "codex"},
		{"none", []string{"codex"}, "none"},
	} {
		p, err := profileFor(c.agent, c.command)
		if err != nil || p.Name != c.want {
			t.Errorf("agent %q command %q: %q %v, want %q", c.agent, c.command, p.Name, err, c.want)
		}
	}
	if _, err := profileFor("vim", nil); err == nil || !strings.Contains(err.Error(), "codex") {
		t.Errorf("an unknown profile: %v", err)
	}
}

func TestPTYConfigProfile(t *testing.T) {
	pc := PTYConfig{Command: []string{"codex"}, Inline: true}
	prof, inline, err := pc.profile()
	if err != nil || prof.Name != "codex" || strings.Join(inline, " ") != "--no-alt-screen" || string(pc.InterruptKeys) != "\x1b" {
		t.Fatalf("%q %q %v keys %q", prof.Name, inline, err, pc.InterruptKeys)
	}
	// The flags win over the profile.
	pc = PTYConfig{Command: []string{"codex"}, InterruptKeys: []byte{3}, Working: []string{"thinking"}}
	prof, inline, err = pc.profile()
	if err != nil || inline != nil || string(pc.InterruptKeys) != "\x03" || len(prof.Working) != 1 || prof.Working[0] != "thinking" || prof.WorkingRows != 0 {
		t.Fatalf("%+v %q %v keys %q", prof, inline, err, pc.InterruptKeys)
	}
	// --inline where the profile knows no such arguments is an error, not
	// ignored.
	for _, cmd := range []string{"claude", "./my-agent"} {
		pc = PTYConfig{Command: []string{cmd}, Inline: true}
		if _, _, err := pc.profile(); err == nil {
			t.Errorf("--inline for %s: no error", cmd)
		}
	}
}

// A working text in the status line keeps the worker running while the
// screen is still; once it is gone the worker is idle after
// --stable-after; the same text higher up (the transcript) does not.
func TestPTYWorkingText(t *testing.T) {
	h := newPTYHarness(t)
	h.w.prof = profiles["codex"]
	h.idle()
	h.draw("\x1b[6;1H• Working (0s • esc to interrupt)")
	h.at(ptySample)
	h.state(control.WorkerRunning)
	for range 3 {
		h.at(h.w.pc.StableAfter)
		h.state(control.WorkerRunning)
	}
	var r result
	h.w.ControlInject([]byte("hi"), false, r.done)
	if r.res != lane000.Busy {
		t.Fatalf("input while the status line says working: %s %q", r.res, r.detail)
	}
	h.draw("\x1b[6;1H\x1b[2K")
	h.at(ptySample)
	h.at(h.w.pc.StableAfter)
	h.state(control.WorkerIdle)

	// Far from the bottom the text is the transcript's: idle.
	h.w.prof.WorkingRows = 2
	h.draw("\x1b[1;1Hyou said: esc to interrupt")
	h.at(ptySample)
	h.at(h.w.pc.StableAfter)
	h.state(control.WorkerIdle)
}

// approvalLines are the control.worker.approval lines the worker wrote.
func approvalLines(h *ptyHarness) []gjson.Result {
	h.w.emit()
	var out []gjson.Result
	for _, l := range bytes.Split(*h.w.loop.Out(), []byte{'\n'}) {
		if gjson.GetBytes(l, "type").Str == lane000.TypeWorkerApproval {
			out = append(out, gjson.ParseBytes(l))
		}
	}
	return out
}

// drawCodexEdit draws Codex's edit prompt at the top of a 40×16 screen.
func drawCodexEdit(h *ptyHarness) {
	var b strings.Builder
	b.WriteString("\x1b[2J")
	for i, r := range codexEdit {
		b.WriteString("\x1b[" + strconv.Itoa(i+1) + ";1H" + r)
	}
	h.draw(b.String())
}

func newApprovalHarness(t *testing.T) *ptyHarness {
	h := newPTYHarness(t)
	h.w.pc.Cols, h.w.pc.Rows = 80, 16
	h.w.scr = screen.New(80, 16)
	h.w.prof = profiles["codex"]
	h.idle()
	return h
}

// An approval prompt goes out once as open, with its choices; an input
// that is not a choice is busy and types nothing; a choice presses its
// key, and is acked ok only once the prompt has left the screen, when the
// closed line names the choice.
func TestPTYApprovalAnswered(t *testing.T) {
	h := newApprovalHarness(t)
	drawCodexEdit(h)
	h.at(ptySample)
	h.at(h.w.pc.StableAfter)
	h.state(control.WorkerIdle)
	lines := approvalLines(h)
	if len(lines) != 1 {
		t.Fatalf("%d approval lines, want 1 open", len(lines))
	}
	open := lines[0]
	if open.Get("status").Str != "open" || open.Get("kind").Str != "edit" || open.Get("file").Str != "/tmp/w/written.txt" ||
		open.Get("choices.#").Int() != 3 || open.Get("choices.2.key").Str != "esc" || open.Get("approval_id").Str == "" || open.Get("chosen").Exists() {
		t.Fatalf("the open line: %s", open.Raw)
	}
	// Redrawn the same: no second line.
	h.draw("\x1b[1;1H• I'll create the file now.")
	h.draw("\x1b[20;1H") // the cursor moves, nothing else
	h.at(ptySample)
	if n := len(approvalLines(h)); n != 1 {
		t.Fatalf("%d approval lines after a redraw, want 1", n)
	}

	var r result
	h.w.ControlInject([]byte("hello"), false, r.done)
	if r.res != lane000.Busy || !strings.Contains(r.detail, "1 (y) Yes, proceed") || h.in.Len() != 0 {
		t.Fatalf("a prompt while an approval is open: %s %q, typed %q", r.res, r.detail, h.in.String())
	}
	r = result{}
	h.w.ControlInject([]byte(" Y "), false, r.done)
	if r.n != 0 || h.in.String() != "y" {
		t.Fatalf("choice y: answered %d times (%s), typed %q", r.n, r.res, h.in.String())
	}
	// A second answer while the first is being taken: busy.
	var r2 result
	h.w.ControlInject([]byte("3"), false, r2.done)
	if r2.res != lane000.Busy || h.in.String() != "y" {
		t.Fatalf("a second answer: %s, typed %q", r2.res, h.in.String())
	}
	h.draw("\x1b[2J\x1b[1;1H• Edited written.txt")
	h.at(ptySample)
	if r.res != lane000.OK || r.n != 1 || !strings.Contains(r.detail, "choice 1 (Yes, proceed)") {
		t.Fatalf("ack after the prompt left: %s %q (%d)", r.res, r.detail, r.n)
	}
	lines = approvalLines(h)
	if len(lines) != 2 || lines[1].Get("status").Str != "closed" || lines[1].Get("approval_id").Str != open.Get("approval_id").Str ||
		lines[1].Get("chosen.key").Str != "y" {
		t.Fatalf("the closed line: %v", lines)
	}
	if h.w.appr != nil {
		t.Fatal("an approval still open")
	}
}

// A prompt just drawn gets its key approvalSettle after it appeared; a
// key the agent ignores is pressed again every ptyCRRetry, ptyCRTries
// times in all, and the answer is acked timeout at --control-timeout (the
// prompt can be answered again); a prompt that leaves the screen
// otherwise (answered at the terminal) is closed with chosen null; the
// next prompt is a new approval with a new id.
func TestPTYApprovalTimeoutAndClosedElsewhere(t *testing.T) {
	h := newApprovalHarness(t)
	drawCodexEdit(h)
	h.at(ptySample)
	var r result
	h.w.ControlInject([]byte("No, and tell Codex what to do differently"), false, r.done)
	if h.in.Len() != 0 {
		t.Fatalf("a key pressed at once on a prompt just drawn: %q", h.in.String())
	}
	h.at(approvalSettle)
	if h.in.String() != "\x1b" {
		t.Fatalf("choice 3 typed %q, want ESC", h.in.String())
	}
	for range ptyCRTries + 2 {
		h.at(ptyCRRetry)
	}
	if h.in.String() != strings.Repeat("\x1b", ptyCRTries) {
		t.Fatalf("typed %q, want ESC %d times", h.in.String(), ptyCRTries)
	}
	if r.n != 0 {
		t.Fatalf("answered before the timeout: %s", r.res)
	}
	h.at(h.w.cfg.ControlTimeout)
	if r.res != lane000.Timeout {
		t.Fatalf("%s %q, want timeout", r.res, r.detail)
	}
	h.in.Reset()
	r = result{}
	h.w.ControlInject([]byte("2"), false, r.done)
	if h.in.String() != "a" {
		t.Fatalf("typed %q", h.in.String())
	}
	h.draw("\x1b[2J")
	h.at(ptySample)
	if r.res != lane000.OK {
		t.Fatalf("%s %q", r.res, r.detail)
	}
	drawCodexEdit(h)
	h.at(ptySample)
	h.draw("\x1b[2J") // answered at the terminal
	h.at(ptySample)
	lines := approvalLines(h)
	if len(lines) != 4 || lines[2].Get("approval_id").Str == lines[0].Get("approval_id").Str ||
		lines[3].Get("status").Str != "closed" || lines[3].Get("chosen").Type != gjson.Null {
		t.Fatalf("%v", lines)
	}
}

// The program exits with an approval open: closed, and an answer in
// flight is not_live.
func TestPTYApprovalExited(t *testing.T) {
	h := newApprovalHarness(t)
	drawCodexEdit(h)
	h.at(ptySample)
	var r result
	h.w.ControlInject([]byte("y"), false, r.done)
	h.live = false
	h.w.ChildExited(nil, session.Exit{Code: 0})
	lines := approvalLines(h)
	if r.n != 1 || r.res == lane000.OK || len(lines) != 2 || lines[1].Get("status").Str != "closed" {
		t.Fatalf("%s %q %v", r.res, r.detail, lines)
	}
}

// claudeBash and claudeWrite are Claude Code's TUI prompts (2.1.330,
// --permission-mode default) as its screen shows them (captured rows).
var claudeBash = []string{
	"● Touching a file and say hi",
	"  ⎿  $ touch /tmp/tuiw/bash_touched.txt && echo hi from bash",
	"",
	"────────────────────────────────────────────────────────────",
	" Bash command",
	" Tip: auto mode handles these prompts for you — choose \"switch to auto mode\" below",
	" Touch a file and say hi",
	"╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌",
	" touch /tmp/tuiw/bash_touched.txt && echo hi from bash",
	"╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌",
	" Do you want to proceed?",
	" ❯ 1. Yes",
	"   2. Yes, and always allow access to /tmp/tuiw from this project",
	"   3. Yes, and switch to auto mode · auto mode handles these prompts for you",
	"   4. No",
	"",
	" Esc to cancel · Tab to amend",
}

var claudeWrite = []string{
	"● Write(written.txt)",
	"",
	"────────────────────────────────────────────────────────────",
	" Create file",
	" written.txt",
	"╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌",
	"  1 hello world",
	"╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌",
	" Do you want to create written.txt?",
	" ❯ 1. Yes",
	"   2. Yes, and switch to accept edits (auto-approve file edits and common file commands) for this session (shift+tab)",
	"   3. No",
	"",
	" Esc to cancel · Tab to amend",
}

func TestFindApprovalClaude(t *testing.T) {
	forms := profiles["claude"].Approvals
	a := findApproval(forms, claudeBash)
	if a == nil || a.form.Kind != "command" || a.command != "touch /tmp/tuiw/bash_touched.txt && echo hi from bash" ||
		a.question != "Do you want to proceed?" || len(a.choices) != 4 || a.choices[3] != (lane000.ApprovalChoice{N: 4, Label: "No", Key: "4"}) ||
		len(a.text) != 4 || a.text[0] != "Bash command" {
		t.Fatalf("Bash: %+v", a)
	}
	a = findApproval(forms, claudeWrite)
	if a == nil || a.form.Kind != "edit" || a.file != "written.txt" || a.command != "" || len(a.choices) != 3 ||
		a.choices[1].Key != "2" || !strings.HasSuffix(a.choices[1].Label, "(shift+tab)") ||
		strings.Join(a.text, "|") != "Create file|written.txt|1 hello world" {
		t.Fatalf("Write: %+v", a)
	}
	// Another tool's prompt: kind tool, its header the first detail.
	other := append([]string{"────────", " Fetch", " https://example.com"}, claudeBash[10:]...)
	if a := findApproval(forms, other); a == nil || a.form.Kind != "tool" || a.command != "" || a.text[0] != "Fetch" {
		t.Fatalf("another tool: %+v", a)
	}
	// No rule above the question: not a prompt (a transcript quoting it).
	if a := findApproval(forms, claudeBash[10:]); a != nil {
		t.Fatalf("no rule above: %+v", a)
	}
}

// geminiWrite is Gemini CLI 0.61.0's prompt for write_file as its screen
// shows it (captured rows, shortened to 60 columns).
var geminiWrite = []string{
	" > WRITEFILE write1x",
	"╭──────────────────────────────────────────────────────────╮",
	"│ ? WriteFile  Writing to written.txt                      │",
	"│ ╭──────────────────────────────────────────────────────╮ │",
	"│ │ 1 hello world                                        │ │",
	"│ ╰──────────────────────────────────────────────────────╯ │",
	"│ Apply this change?                                       │",
	"│                                                          │",
	"│ ● 1. Allow once                                          │",
	"│   2. Allow for this session                              │",
	"│   3. Modify with external editor                         │",
	"│   4. No, suggest changes (esc)                           │",
	"╰──────────────────────────────────────────────────────────╯",
	"",
	"  Action Required (work)",
}

func TestFindApprovalGemini(t *testing.T) {
	forms := profiles["gemini"].Approvals
	a := findApproval(forms, geminiWrite)
	if a == nil || a.form.Kind != "edit" || a.file != "written.txt" || len(a.choices) != 4 ||
		a.choices[0] != (lane000.ApprovalChoice{N: 1, Label: "Allow once", Key: "1"}) ||
		a.choices[3] != (lane000.ApprovalChoice{N: 4, Label: "No, suggest changes", Key: "esc"}) ||
		strings.Join(a.text, "|") != "? WriteFile  Writing to written.txt|1 hello world" {
		t.Fatalf("write_file: %+v", a)
	}
	edit := slices.Clone(geminiWrite)
	edit[2] = "│ ? Edit  edit_target.txt: line two => line 2 (edited)      │"
	if a := findApproval(forms, edit); a == nil || a.form.Kind != "edit" || a.file != "edit_target.txt" {
		t.Fatalf("replace: %+v", a)
	}
	shell := []string{
		"╭──────────────────────────────────────────╮",
		"│ ? Shell  touch /w/bash_touched.txt        │",
		"│ ╭──────────────────────────────────────╮ │",
		"│ │ touch /w/bash_touched.txt            │ │",
		"│ ╰──────────────────────────────────────╯ │",
		"│ Allow execution of [Shell]?               │",
		"│ ● 1. Allow once                           │",
		"│   2. Allow for this session               │",
		"│   3. No, suggest changes (esc)            │",
		"╰──────────────────────────────────────────╯",
	}
	if a := findApproval(forms, shell); a == nil || a.form.Kind != "command" || a.command != "touch /w/bash_touched.txt" || len(a.choices) != 3 {
		t.Fatalf("run_shell_command: %+v", a)
	}
	// An MCP tool's prompt: kind tool.
	shell[1] = "│ ? fetch (web MCP Server)                  │"
	if a := findApproval(forms, shell); a == nil || a.form.Kind != "tool" || a.command != "" {
		t.Fatalf("another tool: %+v", a)
	}
}

// With ready texts in the profile, a changed screen after the return is
// not enough: while the input box shows neither its placeholder nor a
// working text (the return became a new line in the box) the return is
// sent again, and the input is acked once the box is empty.
// geminiIdle is a pty worker of the gemini profile, idle at its empty
// input box (its placeholder showing).
func geminiIdle(t *testing.T) *ptyHarness {
	h := newPTYHarness(t)
	h.w.prof = profiles["gemini"]
	h.draw("\x1b[2J\x1b[1;1H >   Type your message or @path/to/file")
	h.at(ptySample)
	h.at(h.w.pc.StableAfter)
	h.state(control.WorkerIdle)
	return h
}

func TestPTYReadyText(t *testing.T) {
	h := geminiIdle(t)
	var r result
	h.w.ControlInject([]byte("hello"), false, r.done)
	h.at(ptySettle)
	// The placeholder still shows: the paste has not reached the box, and
	// a return now could come before it. None is sent until it shows.
	if h.in.String() != "\x1b[200~hello\x1b[201~" {
		t.Fatalf("typed %q before the paste showed, want the paste alone", h.in.String())
	}
	h.draw("\x1b[1;1H\x1b[2K > hello")
	h.at(ptySample)
	h.at(ptySample)
	if !strings.HasSuffix(h.in.String(), "\x1b[201~\r") {
		t.Fatalf("typed %q, want the paste and a return once it showed", h.in.String())
	}
	// The return became a new line in the box: the screen changed.
	h.draw("\x1b[1;1H\x1b[2K > hello\r\n   ")
	h.at(ptySample)
	if r.n != 0 {
		t.Fatalf("acked %s with the input still in the box", r.res)
	}
	h.at(ptyCRRetry - ptySample)
	if n := strings.Count(h.in.String(), "\r"); n != 2 {
		t.Fatalf("%d returns, want a second one: %q", n, h.in.String())
	}
	h.draw("\x1b[2J\x1b[1;1H > hello\r\n ⠋ Thinking... (esc to cancel, 0s)")
	h.at(ptySample)
	if r.res != lane000.OK || r.n != 1 {
		t.Fatalf("%s (%d), want ok once Gemini works", r.res, r.n)
	}
}

// A paste the program never shows (its placeholder stays) still gets its
// return, ptyPasteShown after ptySettle; the placeholder after it does
// not ack it, the screen not having moved since.
func TestPTYReadyTextPasteNeverShown(t *testing.T) {
	h := geminiIdle(t)
	var r result
	h.w.ControlInject([]byte("hello"), false, r.done)
	h.at(ptySettle)
	for waited := time.Duration(0); waited < ptyPasteShown-ptySample; waited += ptySample {
		h.at(ptySample)
		if strings.Contains(h.in.String(), "\r") {
			t.Fatalf("a return %v after the settle, before ptyPasteShown: %q", waited+ptySample, h.in.String())
		}
	}
	h.at(2 * ptySample)
	if !strings.HasSuffix(h.in.String(), "\x1b[201~\r") || r.n != 0 {
		t.Fatalf("typed %q, acked %d: want the return, no ack", h.in.String(), r.n)
	}
}

// An interrupt while an approval prompt waits on a still screen (the
// worker idle) sends the keys, and is acked once the screen is stable
// again; with no prompt it is ok at once, with no keys.
func TestPTYInterruptApproval(t *testing.T) {
	h := newApprovalHarness(t)
	var r result
	h.w.ControlInterrupt(r.done)
	if r.res != lane000.OK || h.in.Len() != 0 {
		t.Fatalf("idle, no prompt: %s, typed %q", r.res, h.in.String())
	}
	drawCodexEdit(h)
	h.at(ptySample)
	h.at(h.w.pc.StableAfter)
	h.state(control.WorkerIdle)
	r = result{}
	h.w.ControlInterrupt(r.done)
	if r.n != 0 || h.in.String() != "\x1b" {
		t.Fatalf("a prompt open: answered %d (%s), typed %q", r.n, r.res, h.in.String())
	}
	h.draw("\x1b[2J\x1b[1;1H■ Conversation interrupted")
	h.at(ptySample)
	h.at(h.w.pc.StableAfter)
	if r.res != lane000.OK || h.w.appr != nil {
		t.Fatalf("%s, approval %v", r.res, h.w.appr)
	}
}

// The screen is the program's to draw: findApproval takes any rows, of
// any profile's forms, without a panic, and what it finds holds its
// rules (choices numbered from 1 on, at least two, each with a label and
// a key, each found again by its number, key and label). Random screens
// built of the pieces prompts are made of, with a fixed seed.
func TestFindApprovalAnyScreen(t *testing.T) {
	var forms []ApprovalForm
	for _, p := range profiles {
		forms = append(forms, p.Approvals...)
	}
	pieces := []string{"", "  ", "────────", "╌╌╌╌╌╌", "╭────╮", "╰────╯", "│ │", "● ", "❯ ", "› ",
		"Do you want to proceed?", "Do you want to create a.txt?", "Would you like to run the following command?",
		"Would you like to make the following edits?", "Apply this change?", "Allow execution of [Shell]?",
		"Bash command", "? Shell  ls", "? WriteFile  Writing to a.txt", "? Edit  a.txt: x => y", "$ ls -l",
		"Destination: /a.txt", "1. Yes", "2. No (esc)", "3. Maybe (m)", "1. ", "2.", "0. zero", "4. (", "5. x ()",
		"(y)", "é", "\x00", "12. far", "1.  two spaces", "Esc to cancel"}
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		rows := make([]string, rnd.IntN(16))
		for i := range rows {
			for range rnd.IntN(3) + 1 {
				rows[i] += pieces[rnd.IntN(len(pieces))]
			}
		}
		a := findApproval(forms, rows)
		if a == nil {
			continue
		}
		if len(a.choices) < 2 || a.question == "" {
			t.Fatalf("%q: %+v", rows, a)
		}
		for i, c := range a.choices {
			if c.N != i+1 || c.Label == "" || c.Key == "" {
				t.Fatalf("choice %d of %q: %+v", i, rows, c)
			}
			if got, ok := a.choice([]byte(strconv.Itoa(c.N))); !ok || got.N != c.N {
				t.Fatalf("%d does not name choice %d of %q (%+v)", c.N, c.N, rows, got)
			}
			if got, ok := a.choice([]byte(c.Label)); !ok || got.N > c.N {
				t.Fatalf("%q does not name choice %d of %q (%+v)", c.Label, c.N, rows, got)
			}
		}
	}
}
