package screen

import (
	"io"
	"math"
	"runtime"
	"strconv"
	"sync"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"
)

const (
	// scrollbackLines is the size of the library's main-screen scrollback.
	// It is emptied after every chunk fed to the library, and chunks are cut
	// small enough (term.chunk) that one chunk can never overflow it:
	// an overflowing scrollback would drop lines, and each push into a full
	// one shifts the whole buffer.
	scrollbackLines = 1 << 16
	// maxPendingScrolled bounds the lines kept for [Screen.Scrolled] when
	// nobody collects them; beyond it the oldest are dropped.
	maxPendingScrolled = 100_000
	// maxPendingReplies bounds the reply bytes kept for [Screen.Replies].
	maxPendingReplies = 1 << 20
	// altCleanAfter is how many lines may scroll on the alternate screen
	// before its (never read) scrollback is emptied.
	altCleanAfter = 1000
	// maxWide is the widest grapheme cluster whose margin handling is
	// fixed (the library makes none wider than 2).
	maxWide = 4
)

// Sequences fed to the library besides the input (never modified).
var (
	crlf   = []byte("\r\n")
	blank  = []byte(" ")
	ed3    = []byte("\x1b[3J")
	cancel = []byte{ansi.CAN, ansi.CAN, ansi.CAN, ansi.CAN}
)

// Screen is the terminal a pty child draws on: its output goes in, the
// screen's text comes out.
//
// Make one with [New]; do not copy it. A Screen is not safe for concurrent
// use; use it from one goroutine at a time.
type Screen struct {
	t *term
}

// term is the whole state. It is a separate object from Screen because the
// library's callbacks and handlers and the reply-draining goroutine refer to
// it: Screen itself must stay unreferenced by them, so that a Screen the
// caller dropped is collected and its cleanup stops the goroutine.
type term struct {
	em         *vt.Emulator
	cols, rows int
	pipe       io.Writer // the library's reply pipe (written to sync with the drainer)
	replies    *replyBuf
	chunk      int // largest piece handed to the library at once

	lines    []string         // text of the visible rows, as of the last Write
	gen      uint64           // see Gen
	allDirty bool             // every row must be re-rendered (screen switch, RIS)
	marks    [2][]uv.LineData // per-row "untouched" sentinels, main and alt screen
	rowBuf   []byte

	scrolled []string // lines scrolled off the main screen, not yet collected

	in       input
	repair   repair
	origin   bool // DECOM is set (the repair's CUP would be relative)
	autowrap bool // DECAWM is set
	paste    bool // bracketed paste mode
	query    bool // a query was answered during this Write
	altRoll  int  // lines scrolled on the alternate screen since its scrollback was emptied
	panics   int

	buf  []byte // scratch: the bytes fed to the library for one Write
	cuts []cut  // scratch: see scan
	san  []byte // scratch: sanitized input, when a repair may come first
	snap []uv.Cell
}

// replyBuf collects what the library writes into its reply pipe.
type replyBuf struct {
	mu sync.Mutex
	b  []byte
}

// New returns a blank screen of cols columns and rows rows (each at least
// 1), cursor at the top left, main screen, no modes set.
func New(cols, rows int) *Screen {
	cols, rows = max(cols, 1), max(rows, 1)
	em := vt.NewEmulator(cols, rows)
	t := &term{
		em:      em,
		cols:    cols,
		rows:    rows,
		pipe:    em.InputPipe(),
		replies: new(replyBuf),
		lines:   make([]string, rows),
		// DECAWM is on by default.
		autowrap: true,
		// A chunk can push at most one line per byte (LF), rows lines per
		// four bytes (ESC[9S, ESC[9M): keep that under the scrollback's size.
		chunk: min(max(3*scrollbackLines/rows, 64), scrollbackLines),
	}
	for i := range t.marks {
		t.marks[i] = make([]uv.LineData, rows)
		for y := range t.marks[i] {
			t.marks[i][y] = untouched
		}
	}
	em.SetScrollbackSize(scrollbackLines)
	em.SetCallbacks(vt.Callbacks{
		AltScreen: func(bool) { t.allDirty = true },
		EnableMode: func(m ansi.Mode) {
			t.setMode(m, true)
		},
		DisableMode: func(m ansi.Mode) {
			t.setMode(m, false)
		},
	})
	t.registerHandlers()
	t.resetMarks()

	go drainReplies(em, t.replies)
	s := &Screen{t: t}
	if c, ok := t.pipe.(io.Closer); ok {
		// Closing the pipe ends drainReplies. The cleanup must not refer to
		// s; the pipe does not.
		runtime.AddCleanup(s, func(c io.Closer) { _ = c.Close() }, c)
	}
	return s
}

// drainReplies copies the library's replies into rb until the pipe closes.
// The pipe is synchronous: without a reader the library would block in the
// middle of a Write.
func drainReplies(em *vt.Emulator, rb *replyBuf) {
	buf := make([]byte, 512)
	for {
		n, err := em.Read(buf)
		if n > 0 {
			rb.mu.Lock()
			if len(rb.b)+n <= maxPendingReplies {
				rb.b = append(rb.b, buf[:n]...)
			}
			rb.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

func (t *term) setMode(m ansi.Mode, on bool) {
	switch m {
	case ansi.ModeOrigin:
		t.origin = on
	case ansi.ModeBracketedPaste:
		t.paste = on
	case ansi.ModeAutoWrap:
		t.autowrap = on
	}
}

// registerHandlers puts handlers in front of some of the library's own. A
// handler returning false passes the sequence on to the library's handler,
// which sees the same (possibly rewritten) parameters.
func (t *term) registerHandlers() {
	em := t.em
	em.RegisterCsiHandler('J', func(params ansi.Params) bool {
		// ED: deliver what scrolled so far before the library may empty
		// the scrollback (ED 3), and make ED 2 an ED 3, which clears the
		// screen the same way but without first copying it into the
		// scrollback: a redraw must not be reported as scrolled lines. On
		// the alternate screen this also empties its scrollback.
		t.drain()
		if n, _, _ := params.Param(0, 0); n == 2 {
			params[0] = 3
		}
		return false
	})
	// The sequences the library answers through its reply pipe (see
	// write). Mode 2048 is seen below.
	queried := func(ansi.Params) bool { t.query = true; return false }
	for _, cmd := range []int{
		'c', ansi.Command('>', 0, 'c'), // DA1, DA2
		'n', ansi.Command('?', 0, 'n'), // DSR, DECXCPR
		ansi.Command(0, '$', 'p'), ansi.Command('?', '$', 'p'), // DECRQM
	} {
		em.RegisterCsiHandler(cmd, queried)
	}
	for _, cmd := range []int{10, 11, 12} { // colour queries
		em.RegisterOscHandler(cmd, func([]byte) bool { t.query = true; return false })
	}
	em.RegisterCsiHandler('n', func(params ansi.Params) bool {
		// DSR 5 (operating status): xterm answers CSI 0 n, the library
		// CSI ? 0 n, which programs waiting for the former do not take.
		if n, _, _ := params.Param(0, 0); n == 5 {
			t.query = true
			_, _ = io.WriteString(t.pipe, "\x1b[0n")
			return true
		}
		return false
	})
	// Mode 47, the original alternate screen, which the library does not
	// know: take it as 1047 (switch, clearing the alternate screen on
	// entry).
	for _, cmd := range []int{ansi.Command('?', 0, 'h'), ansi.Command('?', 0, 'l')} {
		em.RegisterCsiHandler(cmd, func(params ansi.Params) bool {
			for i, p := range params {
				if p.Param(-1) == ansi.ModeInBandResize.Mode() {
					t.query = true // reported when set
				}
				if p.Param(-1) == 47 {
					params[i] = ansi.Param(ansi.Parameter(ansi.ModeAltScreen.Mode(), p.HasMore()))
				}
			}
			return false
		})
	}
	// Margins beyond the screen, which the library takes as they are and
	// then indexes its rows or cells with (a panic): clamp them to the
	// screen as xterm does.
	margin := func(limit int) func(ansi.Params) bool {
		return func(params ansi.Params) bool {
			for i := range min(len(params), 2) {
				if n := params[i].Param(0); n > limit {
					params[i] = ansi.Param(ansi.Parameter(limit, params[i].HasMore()))
				}
			}
			return false
		}
	}
	em.RegisterCsiHandler('r', margin(t.rows)) // DECSTBM
	em.RegisterCsiHandler('s', margin(t.cols)) // DECSLRM (SCOSC without DECLRMM)
	// Counts that only make the library loop longer.
	clamp := func(cmd int, limit func(n int) int) {
		em.RegisterCsiHandler(cmd, func(params ansi.Params) bool {
			if n, _, ok := params.Param(0, 1); ok {
				if l := limit(n); l != n {
					params[0] = ansi.Param(l)
				}
			}
			return false
		})
	}
	toCols := func(n int) int { return min(n, t.cols) }
	clamp('X', toCols) // ECH: nothing beyond the line
	clamp('I', toCols) // CHT: at most cols tab stops
	clamp('Z', toCols) // CBT
	clamp('b', func(n int) int {
		// REP: once the whole screen has been written over, more
		// repetitions only scroll lines of the same character; keep the
		// count modulo the width so the cursor ends where it would.
		lim := (t.rows + 2) * t.cols
		if n > lim {
			n = lim + (n-lim)%t.cols
		}
		return n
	})
	// Lines scrolled on the alternate screen pile up in its scrollback.
	rolled := func(params ansi.Params) bool {
		if em.IsAltScreen() {
			n, _, _ := params.Param(0, 1)
			t.altRoll += min(max(n, 1), t.rows)
		}
		return false
	}
	em.RegisterCsiHandler('S', rolled)       // SU
	em.RegisterCsiHandler('M', rolled)       // DL
	em.RegisterEscHandler('D', func() bool { // IND
		if em.IsAltScreen() {
			t.altRoll++
		}
		return false
	})
	em.RegisterEscHandler('c', func() bool {
		// RIS: the library resets the screens and modes without telling
		// the callbacks or the damage tracking.
		t.allDirty = true
		t.origin, t.paste, t.autowrap = false, false, true
		return false
	})
}

// Write feeds the child's output (any bytes, split anywhere, even inside an
// escape sequence or a UTF-8 sequence).
func (s *Screen) Write(b []byte) { s.t.write(b) }

// Replies returns (and forgets) the bytes the terminal answers the child with
// (cursor position reports to ESC[6n, device attributes to ESC[c, …), which
// the caller writes to the pty. Agents such as Claude Code's TUI wait for such
// answers.
func (s *Screen) Replies() []byte {
	rb := s.t.replies
	rb.mu.Lock()
	defer rb.mu.Unlock()
	if len(rb.b) == 0 {
		return nil
	}
	out := rb.b
	rb.b = nil
	return out
}

// Lines is the visible screen as plain text: one string per row (rows of
// them), escape sequences gone, trailing spaces trimmed, wide characters
// once, valid UTF-8. It contains no control characters and no row is wider
// than the screen.
func (s *Screen) Lines() []string {
	return append([]string(nil), s.t.lines...)
}

// Gen increases whenever the visible text changes (not on changes of colour
// or cursor alone); it is cheap (no full rendering per call). Precisely: each
// Write that leaves the text of some row different from what the previous
// Write left increases it by one.
func (s *Screen) Gen() uint64 { return s.t.gen }

// Scrolled returns (and forgets) the lines that scrolled off the top of the
// main screen since the last call, oldest first, as plain text: each line
// delivered once and in order. Lines of the alternate screen never scroll
// into it. If it is not called, the oldest lines beyond 100000 are dropped.
func (s *Screen) Scrolled() []string {
	out := s.t.scrolled
	s.t.scrolled = nil
	return out
}

// Cursor is the cursor's column and row (0-based).
func (s *Screen) Cursor() (col, row int) {
	p := s.t.em.CursorPosition()
	return p.X, p.Y
}

// AltScreen reports whether the alternate screen is in use.
func (s *Screen) AltScreen() bool { return s.t.em.IsAltScreen() }

// BracketedPaste reports whether the child has turned bracketed paste mode
// on (ESC[?2004h) and not off again.
func (s *Screen) BracketedPaste() bool { return s.t.paste }

// Panics is the number of panics raised by the emulator library and
// recovered in Write. After one, the rest of the piece being fed is lost and
// the parser is reset; the screen stays usable.
func (s *Screen) Panics() int { return s.t.panics }

func (t *term) write(b []byte) {
	data := t.prepare(b)
	if len(data) == 0 {
		return
	}
	sc := t.in.scan(data, t.cuts)
	t.cuts = sc.cuts
	alt := t.em.IsAltScreen()

	t.repair.ok = false
	pos := 0
	for _, c := range sc.cuts {
		t.feed(data[pos:c.at])
		pos = c.end
		p := t.panics
		x0, y0, x1, y1 := t.feedCluster(data[c.at:c.end], c.width)
		if c.final && p == t.panics {
			t.repair.set(data[c.at:c.end], c.width, x0, y0, x1, y1)
		}
	}
	t.feed(data[pos:])

	if alt || t.em.IsAltScreen() {
		t.altRoll += sc.lineFeeds
	}
	if t.altRoll >= altCleanAfter && t.em.IsAltScreen() && t.in.ground() {
		t.cleanAltScrollback()
	}
	if t.query {
		// A reply was written into the pipe. Pipe writes are served in
		// order, so once this empty write has been taken the drainer has
		// stored every earlier reply.
		t.query = false
		_, _ = t.pipe.Write(nil)
	}
	t.refresh()
}

// feedCluster feeds one grapheme cluster, printed from the ground state,
// and returns the cursor before and after.
//
// Wide clusters at the right margin get what xterm does, which the library
// does not (with autowrap on): one that does not fit in the columns left
// goes to the next line (the library blanks the last column and drops it),
// and one that ends in the last column leaves a pending wrap, so that the
// next character goes to the next line (the library leaves the cursor on
// the last column, and the next character there wipes the wide one).
func (t *term) feedCluster(c []byte, width int) (x0, y0, x1, y1 int) {
	fix := width > 1 && width <= maxWide && t.autowrap && t.cols >= width
	x0, y0 = t.cursor()
	if fix && x0 > t.cols-width {
		// Pending wrap or not, CR LF does what the wrap would.
		t.feedOne(crlf)
		x0, y0 = t.cursor()
	}
	t.feed(c)
	x1, y1 = t.cursor()
	if fix && x0 == t.cols-width && x1 == t.cols-1 && y1 == y0 {
		// Print a blank in the last column (which sets the pending wrap
		// but wipes the wide cluster), then put its cells back.
		var saved [maxWide]uv.Cell
		for i := range width {
			saved[i] = *t.em.CellAt(x0+i, y0)
		}
		t.feedOne(blank)
		for i := range width {
			*t.em.CellAt(x0+i, y0) = saved[i]
		}
	}
	return x0, y0, x1, y1
}

// prepare turns b into the bytes to feed: valid UTF-8 (see input.sanitize),
// preceded, when b extends the grapheme cluster the previous Write ended
// with, by a cursor move back to that cluster and the cluster itself.
func (t *term) prepare(b []byte) []byte {
	if t.repair.ok && t.in.ground() && !t.origin && t.in.firstByte(b) >= 0x80 {
		t.san = t.in.sanitize(t.san[:0], b)
		if !t.repair.extends(t.san) {
			return t.san
		}
		t.buf = append(t.buf[:0], "\x1b["...)
		t.buf = strconv.AppendInt(t.buf, int64(t.repair.y+1), 10)
		t.buf = append(t.buf, ';')
		t.buf = strconv.AppendInt(t.buf, int64(t.repair.x+1), 10)
		t.buf = append(t.buf, 'H')
		if w := t.repair.width; w > 0 {
			// Erase it first: grown wider, it may wrap to the next line
			// instead of covering its old cells.
			t.buf = append(t.buf, "\x1b["...)
			t.buf = strconv.AppendInt(t.buf, int64(w), 10)
			t.buf = append(t.buf, 'X')
		}
		t.buf = append(t.buf, t.repair.cluster...)
		t.buf = append(t.buf, t.san...)
		return t.buf
	}
	if t.in.clean(b) {
		return b
	}
	t.buf = t.in.sanitize(t.buf[:0], b)
	return t.buf
}

// feed hands data to the library in pieces (see chunkSize), recovering from
// panics, and collects what scrolled off after each piece.
func (t *term) feed(data []byte) {
	for len(data) > 0 {
		n := len(data)
		if n > t.chunk {
			// Cut before an ASCII byte: the library flushes its pending
			// grapheme cluster at the end of each Write, which is harmless
			// only where an ASCII byte would have flushed it anyway.
			n = t.chunk
			for n < len(data) && data[n] >= 0x80 {
				n++
			}
		}
		t.feedOne(data[:n])
		t.drain()
		data = data[n:]
	}
}

func (t *term) feedOne(p []byte) {
	defer func() {
		if r := recover(); r != nil {
			t.panics++
			t.resync()
		}
	}()
	_, _ = t.em.Write(p)
}

// resync brings the library's parser back to its ground state after a
// panic left it anywhere: CAN ends any sequence, and three of them first
// complete a UTF-8 sequence the parser may be collecting.
func (t *term) resync() {
	defer func() {
		if r := recover(); r != nil {
			t.panics++
		}
	}()
	t.in = input{}
	t.repair.ok = false
	t.allDirty = true
	_, _ = t.em.Write(cancel)
}

func (t *term) cursor() (int, int) {
	p := t.em.CursorPosition()
	return p.X, p.Y
}

// drain moves the lines the library saved in the main screen's scrollback
// to t.scrolled, as text.
func (t *term) drain() {
	sb := t.em.Scrollback()
	if sb.Len() == 0 {
		return
	}
	for _, line := range sb.Lines() {
		if len(t.scrolled) >= maxPendingScrolled {
			n := copy(t.scrolled, t.scrolled[len(t.scrolled)/2:])
			clear(t.scrolled[n:])
			t.scrolled = t.scrolled[:n]
		}
		t.rowBuf = t.rowBuf[:0]
		for i := range line {
			t.rowBuf = appendCell(t.rowBuf, &line[i])
		}
		t.scrolled = append(t.scrolled, string(trimRight(t.rowBuf)))
	}
	sb.Clear()
}

// cleanAltScrollback empties the alternate screen's scrollback, which the
// library fills (up to 10000 lines, each push into a full one shifting it)
// but never lets anybody read: ED 3 empties it, but also clears the screen,
// so the cells are saved and put back. Cursor, pen and modes are untouched
// by ED 3.
func (t *term) cleanAltScrollback() {
	t.snap = t.snap[:0]
	for y := range t.rows {
		for x := range t.cols {
			t.snap = append(t.snap, *t.em.CellAt(x, y))
		}
	}
	t.feedOne(ed3)
	i := 0
	for y := range t.rows {
		for x := range t.cols {
			*t.em.CellAt(x, y) = t.snap[i]
			i++
		}
	}
	clear(t.snap)
	t.altRoll = 0
}

// untouched marks a row the library has not touched since the last refresh:
// the library widens FirstCell and LastCell of a touched row's LineData.
var untouched = uv.LineData{FirstCell: math.MaxInt, LastCell: math.MinInt}

// resetMarks points every row of the current screen's damage list at its
// untouched sentinel. (The library allocates a LineData for each row it
// touches whose entry is nil; reusing ours avoids that.)
func (t *term) resetMarks() {
	marks := t.marks[0]
	if t.em.IsAltScreen() {
		marks = t.marks[1]
	}
	touched := t.em.Touched()
	for y := range touched {
		if y < len(marks) {
			marks[y] = untouched
			touched[y] = &marks[y]
		} else {
			touched[y] = nil
		}
	}
}

// refresh re-renders the rows the library touched (all of them after a
// screen switch or reset) and advances gen if any row's text changed.
func (t *term) refresh() {
	touched := t.em.Touched()
	changed := false
	for y := range t.rows {
		if !t.allDirty {
			if y >= len(touched) {
				break
			}
			if d := touched[y]; d == nil || *d == untouched {
				continue
			}
		}
		t.rowBuf = t.rowBuf[:0]
		for x := range t.cols {
			t.rowBuf = appendCell(t.rowBuf, t.em.CellAt(x, y))
		}
		row := trimRight(t.rowBuf)
		if string(row) != t.lines[y] {
			t.lines[y] = string(row)
			changed = true
		}
	}
	t.allDirty = false
	t.resetMarks()
	if changed {
		t.gen++
	}
}
