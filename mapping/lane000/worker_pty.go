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
// control.screen.request: the whole screen, every row.
func (w *Worker) AppendScreenAnswer(dst []byte, requestID, state string, rows []ScreenRow, col, row, cols, nrows int, now time.Time) []byte {
	dst = w.start(dst, TypeScreen, now)
	dst = append(dst, `,"request_id":`...)
	dst = jsonw.String(dst, requestID)
	dst = append(dst, `,"state":`...)
	dst = jsonw.String(dst, state)
	return appendRows(dst, rows, col, row, cols, nrows)
}
