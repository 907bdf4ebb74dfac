package worker

// Agent profiles: what a pty worker knows of the program it drives
// beyond a terminal's bytes. The profile is chosen by the command's name
// (claude, codex, gemini; --agent names one, or none) and says which
// keys interrupt it, what on its screen means "working" (a status line
// shown only while it works: with it on the screen the worker is running
// even when nothing moves), and how its approval prompts look, so that
// they reach the controller as control.worker.approval lines and are
// answered through lane 000 (approval.go). docs/protocol/control.md,
// "Agent profiles".

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Profile is one agent's profile.
type Profile struct {
	// Name is the profile's name: "claude", "codex", "gemini", or "none".
	Name string
	// InterruptKeys interrupt a turn (--interrupt-keys overrides them).
	InterruptKeys []byte
	// Working are texts the agent shows only while it works; one of them
	// in the bottom WorkingRows rows of the screen (0: anywhere) keeps
	// the worker running (--working-text replaces them).
	Working []string
	// WorkingRows is how many rows at the bottom of the screen hold the
	// agent's status line (where Working is looked for): the transcript
	// above it may quote anything.
	WorkingRows int
	// AltScreen: the agent draws on the terminal's alternate screen, where
	// nothing scrolls away (control.worker.scrollback stays empty);
	// Inline are the arguments that keep it on the main screen, added
	// by --inline.
	AltScreen bool
	Inline    []string
	// Ready are texts the agent shows only when its input box is empty
	// and waiting (a placeholder): with some, an input counts as taken
	// once the screen shows one of them or a working text after its
	// return, not merely a changed screen (a return taken for a new line
	// in the box changes it too), and the return is sent again while
	// neither shows.
	Ready []string
	// Approvals are the forms of its approval prompts.
	Approvals []ApprovalForm
	// DropEnv are variables left out of its environment: those that make
	// it run headless whatever its terminal (under a pty it is there to be
	// driven as a person would).
	DropEnv []string
}

// ApprovalForm is how one kind of approval prompt looks on the screen: a
// row that begins with Question, with rows of details below it (or above
// it, back to a rule of ─), then the numbered choices ("› 1. Yes, proceed
// (y)": a number, a label and, in parentheses, the key that picks it;
// without one the number does).
type ApprovalForm struct {
	// Kind is what is asked: "command" (to run one), "edit" (to change
	// files) or "tool" (another tool's use).
	Kind string
	// Question begins the prompt's question row (after spaces and frame
	// characters).
	Question string
	// Above: the details are the rows above the question, from the row
	// that opens the prompt: a rule (a row of ─ alone), or with Top the
	// nearest row that begins with Top. Header, when set, must begin the
	// first of them.
	Above  bool
	Top    string
	Header string
	// Command and File begin the detail row that names the command or
	// the file asked about ("$ ", "Destination: "); the rest of the row
	// is it, up to FileEnd when set. FileInQuestion: the file is the
	// question's rest ("Do you want to create a.txt?"); Boxed: the
	// command is the detail between two dashed rules (╌).
	Command, File  string
	FileEnd        string
	FileInQuestion bool
	Boxed          bool
}

// profiles are the built-in profiles, by name. What each shows was read
// off the real programs (docs/protocol/control.md, "Agent profiles").
var profiles = map[string]Profile{
	"claude": {
		Name:          "claude",
		InterruptKeys: []byte{0x1b},
		Working:       []string{"esc to interrupt"},
		WorkingRows:   8,
		AltScreen:     true, // and no argument known to keep it off
		// Its prompts in the permission modes that ask (default, plan):
		// the details above the question, the choices picked by number.
		Approvals: []ApprovalForm{
			{Kind: "command", Question: "Do you want to proceed?", Above: true, Header: "Bash command", Boxed: true},
			{Kind: "edit", Question: "Do you want to create ", Above: true, FileInQuestion: true},
			{Kind: "edit", Question: "Do you want to make this edit to ", Above: true, FileInQuestion: true},
			{Kind: "tool", Question: "Do you want to proceed?", Above: true},
		},
	},
	"codex": {
		Name:          "codex",
		InterruptKeys: []byte{0x1b},
		Working:       []string{"esc to interrupt"},
		WorkingRows:   8,
		AltScreen:     true,
		Inline:        []string{"--no-alt-screen"},
		Approvals: []ApprovalForm{
			{Kind: "edit", Question: "Would you like to make the following edits?", File: "Destination: "},
			{Kind: "command", Question: "Would you like to run the following command?", Command: "$ "},
		},
	},
	"gemini": {
		Name:          "gemini",
		InterruptKeys: []byte{0x1b},
		Working:       []string{"(esc to cancel, "},
		WorkingRows:   12,
		Ready:         []string{"Type your message or @path/to/file"},
		// With CI=true or GITHUB_ACTIONS=true it runs headless: it reads
		// a prompt from stdin and exits ("No input provided via stdin").
		DropEnv: []string{"CI", "GITHUB_ACTIONS"},
		// Its prompts replace the input box: "? Tool  what", the
		// details, the question, the choices (a digit picks one, esc the
		// last).
		Approvals: []ApprovalForm{
			{Kind: "edit", Question: "Apply this change?", Above: true, Top: "? ", Header: "? WriteFile", File: "? WriteFile  Writing to "},
			{Kind: "edit", Question: "Apply this change?", Above: true, Top: "? ", Header: "? Edit", File: "? Edit  ", FileEnd: ": "},
			{Kind: "command", Question: "Allow execution of", Above: true, Top: "? ", Header: "? Shell", Command: "? Shell  "},
			{Kind: "tool", Question: "Allow execution of", Above: true, Top: "? "},
			{Kind: "tool", Question: "Apply this change?", Above: true, Top: "? "},
		},
	},
	"none": {Name: "none", InterruptKeys: []byte{0x1b}},
}

// ProfileNames are the names --agent takes.
func ProfileNames() []string {
	names := make([]string, 0, len(profiles))
	for n := range profiles {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// profileFor is the profile --agent names, else the one of the command's
// name (its base name, without an extension: claude.exe is claude), else
// "none"; no command is the CLI's TUI.
func profileFor(agent string, command []string) (Profile, error) {
	if agent != "" {
		p, ok := profiles[agent]
		if !ok {
			return Profile{}, fmt.Errorf("--agent %q: no such profile (one of %s)", agent, strings.Join(ProfileNames(), ", "))
		}
		return p, nil
	}
	if len(command) == 0 {
		return profiles["claude"], nil
	}
	base := filepath.Base(command[0])
	base = strings.TrimSuffix(base, filepath.Ext(base))
	if p, ok := profiles[base]; ok {
		return p, nil
	}
	return profiles["none"], nil
}

// ready reports whether the screen shows one of the profile's ready
// texts (true when it has none).
func (p *Profile) ready(rows []string) bool {
	if len(p.Ready) == 0 {
		return true
	}
	for _, r := range rows {
		for _, t := range p.Ready {
			if strings.Contains(r, t) {
				return true
			}
		}
	}
	return false
}

// working reports whether the screen shows one of the profile's working
// texts in its bottom rows.
func (p *Profile) working(rows []string) bool {
	if len(p.Working) == 0 {
		return false
	}
	from := 0
	if p.WorkingRows > 0 {
		from = max(0, len(rows)-p.WorkingRows)
	}
	for _, r := range rows[from:] {
		for _, w := range p.Working {
			if strings.Contains(r, w) {
				return true
			}
		}
	}
	return false
}
