package lane000

import (
	"time"

	"github.com/ccbridge/ccbridge/internal/jsonw"
)

// The lines of a pty worker (--ui control --pty): what its screen shows.
const (
	// TypeWorkerScreen: rows of the screen that changed (full: every row,
	// as control.screen answers).
	TypeWorkerScreen = "control.worker.screen"
	// TypeWorkerScrollback: lines that scrolled off the top of the
	// screen, oldest first; each is delivered once, never merged with
	// another.
	TypeWorkerScrollback = "control.worker.scrollback"
	// TypeScreenRequest asks for the whole screen; TypeScreen answers.
	TypeScreenRequest = "control.screen.request"
	TypeScreen        = "control.screen"
)

// ScreenRow is one row of a screen: its index (0 at the top) and its
// text, plain (no escape sequences, trailing spaces trimmed).
type ScreenRow struct {
	N    int
	Text string
}

// AppendScreen appends a control.worker.screen line: the rows given, the
// cursor, the screen's size.
func (w *Worker) AppendScreen(dst []byte, rows []ScreenRow, col, row, cols, nrows int, now time.Time) []byte {
	dst = w.start(dst, TypeWorkerScreen, now)
	return appendRows(dst, rows, col, row, cols, nrows)
}

func appendRows(dst []byte, rows []ScreenRow, col, row, cols, nrows int) []byte {
	dst = append(dst, `,"cols":`...)
	dst = jsonw.Int(dst, int64(cols))
	dst = append(dst, `,"rows":`...)
	dst = jsonw.Int(dst, int64(nrows))
	dst = append(dst, `,"cursor":[`...)
	dst = jsonw.Int(dst, int64(col))
	dst = append(dst, ',')
	dst = jsonw.Int(dst, int64(row))
	dst = append(dst, `],"lines":[`...)
	for i, r := range rows {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"n":`...)
		dst = jsonw.Int(dst, int64(r.N))
		dst = append(dst, `,"text":`...)
		dst = jsonw.String(dst, r.Text)
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

// AppendScrollback appends a control.worker.scrollback line.
func (w *Worker) AppendScrollback(dst []byte, lines []string, now time.Time) []byte {
	dst = w.start(dst, TypeWorkerScrollback, now)
	dst = append(dst, `,"lines":`...)
	dst = jsonw.Strings(dst, lines)
	return append(dst, '}')
}

// AppendScreenAnswer appends the control.screen answer to a
// control.screen.request: the whole screen, every row, and whether the
// program draws on the alternate screen (where nothing scrolls away).
func (w *Worker) AppendScreenAnswer(dst []byte, requestID, state string, alt bool, rows []ScreenRow, col, row, cols, nrows int, now time.Time) []byte {
	dst = w.start(dst, TypeScreen, now)
	dst = append(dst, `,"request_id":`...)
	dst = jsonw.String(dst, requestID)
	dst = append(dst, `,"state":`...)
	dst = jsonw.String(dst, state)
	dst = append(dst, `,"alt_screen":`...)
	dst = jsonw.Bool(dst, alt)
	return appendRows(dst, rows, col, row, cols, nrows)
}

// TypeWorkerApproval: an approval prompt of the agent (its profile knows
// its look), opened or closed. docs/protocol/control.md, "Approvals".
const TypeWorkerApproval = "control.worker.approval"

// The statuses of a control.worker.approval line.
const (
	ApprovalOpen   = "open"   // the prompt shows, waiting for a choice
	ApprovalClosed = "closed" // the prompt has left the screen
)

// ApprovalChoice is one of an approval prompt's choices: its number, its
// label, and the key that picks it ("y", "esc", or the number).
type ApprovalChoice struct {
	N     int
	Label string
	Key   string
}

// Approval is an approval prompt as a control.worker.approval line says
// it.
type Approval struct {
	// ID names the prompt from its opening to its closing line.
	ID     string
	Status string // ApprovalOpen or ApprovalClosed
	// Kind is what is asked ("command", "edit"); Question the prompt's
	// first row; Text the rows between it and the choices; Command and
	// File what is asked about, when the prompt names it.
	Kind, Question string
	Text           []string
	Command, File  string
	Choices        []ApprovalChoice
	// Chosen is the choice taken through the lane (closed only; nil when
	// the prompt left the screen otherwise).
	Chosen *ApprovalChoice
}

// AppendApproval appends a control.worker.approval line.
func (w *Worker) AppendApproval(dst []byte, a *Approval, now time.Time) []byte {
	dst = w.start(dst, TypeWorkerApproval, now)
	dst = append(dst, `,"approval_id":`...)
	dst = jsonw.String(dst, a.ID)
	dst = append(dst, `,"status":`...)
	dst = jsonw.String(dst, a.Status)
	dst = append(dst, `,"kind":`...)
	dst = jsonw.String(dst, a.Kind)
	dst = append(dst, `,"question":`...)
	dst = jsonw.String(dst, a.Question)
	if a.Command != "" {
		dst = append(dst, `,"command":`...)
		dst = jsonw.String(dst, a.Command)
	}
	if a.File != "" {
		dst = append(dst, `,"file":`...)
		dst = jsonw.String(dst, a.File)
	}
	dst = append(dst, `,"text":`...)
	dst = jsonw.Strings(dst, a.Text)
	dst = append(dst, `,"choices":[`...)
	for i := range a.Choices {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendChoice(dst, &a.Choices[i])
	}
	dst = append(dst, ']')
	if a.Status == ApprovalClosed {
		dst = append(dst, `,"chosen":`...)
		if a.Chosen == nil {
			dst = append(dst, "null"...)
		} else {
			dst = appendChoice(dst, a.Chosen)
		}
	}
	return append(dst, '}')
}

func appendChoice(dst []byte, c *ApprovalChoice) []byte {
	dst = append(dst, `{"n":`...)
	dst = jsonw.Int(dst, int64(c.N))
	dst = append(dst, `,"label":`...)
	dst = jsonw.String(dst, c.Label)
	dst = append(dst, `,"key":`...)
	dst = jsonw.String(dst, c.Key)
	return append(dst, '}')
}
