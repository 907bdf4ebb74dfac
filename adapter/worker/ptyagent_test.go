//go:build linux

package worker

// The "ptyagent" fake CLI: a tiny scripted terminal agent, for the traps
// of driving an interactive TUI (Claude Code's, Codex's, Gemini's) under
// a pseudo-terminal. It reads its terminal (stdin) byte by byte in raw
// mode, takes bracketed pastes and typed keys into a prompt box, submits
// on a carriage return, streams an answer that ESC interrupts, and can be
// told by environment variables to fall into one trap or another:
//
//	PTYAGENT_START_DELAY=300ms  time before anything is drawn (a slow start);
//	                            a number alone is milliseconds
//	PTYAGENT_EARLY_INPUT=drop   discard what was written to the terminal
//	                            before the start (default: keep it, it is
//	                            read once the agent is up)
//	PTYAGENT_BOX=ascii|switch   draw the box with +-+ | +-+; "switch": the
//	                            unicode box first, the ascii one once the
//	                            first answer has ended (changed box drawing)
//	PTYAGENT_COLLAPSE=1         a paste with a newline, or of more than 800
//	                            characters, shows as "[Pasted text #N +L lines]"
//	                            (N counts the collapsed pastes, L is the
//	                            paste's number of newlines), in the box and in
//	                            the transcript, as Claude Code shows it
//	PTYAGENT_ECHO=0             nothing of the input is shown: not in the
//	                            box, not as "> text" in the transcript (no echo)
//	PTYAGENT_LOG=path           each submission is appended as {"text":"..."}
//	PTYAGENT_CHAR_DELAY=20ms    time between two characters of an answer
//	PTYAGENT_ANSWER_LINES=N     the answer is N lines: "answer to: …", then
//	                            "line 2 of N" … "line N of N" (scrollback)
//	PTYAGENT_IGNORE_CR=N        the first N carriage returns (outside a paste)
//	                            are lost, whatever the input (CR lost)
//	PTYAGENT_IGNORE_ESC=1       ESC does not interrupt (interrupt times out)
//	PTYAGENT_HANG_AFTER_SUBMIT=1  after a submission (logged as usual) it
//	                            draws nothing more and ignores every key
//	                            until EOF (ack times out)
//
// Input: ESC[200~ … ESC[201~ is a paste (a "\r" or "\r\n" in it becomes
// "\n"); printable bytes are typed; DEL or BS deletes the last character (a
// collapsed paste as a whole); "\n" typed is a newline in the input unless
// the input is empty; "\r" submits a non-empty input (an empty one: nothing
// happens, so a re-sent CR is harmless; during an answer it is queued and
// submits when the answer ends, unless the answer is interrupted); a lone
// ESC (no '[' or 'O' within 50 ms) interrupts an answer and does nothing
// otherwise; other escape sequences (arrow keys…) and control characters
// are ignored; Ctrl-D when not answering, or EOF, ends the agent (exit 0).
//
// Layout (1-based rows, R rows, C columns, each rune one column wide):
//
//	1 … R-3-h     the transcript, a scrolling region (ESC[1;{R-3-h}r)
//	R-2-h         ╭───…───╮   top border
//	R-1-h … R-2   │ > input │   h input lines (wrapped at C-6, "│   " for
//	                          the next ones; h ≤ (R-4)/2, the last ones shown)
//	R-1           ╰───…───╯   bottom border
//	R             "  esc to interrupt" while answering, else blank
//
// With a one-line input that is the ESC[1;{R-4}r of a 3-row box. Transcript
// lines are written at the next free row of the region; once it is full
// each new line is a line feed at its bottom row, which scrolls the region
// (and, as in xterm, sends its top line to the terminal's scrollback, the
// region starting at row 1). Lines are wrapped by the agent itself at C
// columns, never by the terminal. When the box grows the transcript is
// scrolled up first so that it stays visible above it; when it shrinks the
// freed rows are cleared and the transcript fills them. Each event (a key,
// a paste, an answer character) is drawn as one write, which ends with the
// cursor put after the input in the box.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/ccbridge/ccbridge/internal/adaptertest"
	"github.com/ccbridge/ccbridge/session"
)

func init() { adaptertest.Register("ptyagent", runPTYAgent) }

const (
	ptyAgentEscWait       = 50 * time.Millisecond
	ptyAgentCollapseRunes = 800
	ptyAgentAnswerRunes   = 40
	ptyAgentPasteStart    = "\x1b[200~"
	ptyAgentPasteEnd      = "\x1b[201~"
	ptyAgentStatus        = "  esc to interrupt"
)

// ptyAgentSeg is a piece of the input: typed text, or one paste.
type ptyAgentSeg struct {
	text      string // what is submitted
	shown     string // what is displayed: text, or a collapsed paste's placeholder
	paste     bool
	collapsed bool
}

type ptyAgent struct {
	// Configuration, from the environment.
	startDelay, charDelay     time.Duration
	boxStyle                  string
	collapse, echo, ignoreESC bool
	hang, dropEarly           bool
	answerLines, ignoreCR     int
	logPath                   string

	in         <-chan byte  // the terminal's bytes; closed at EOF
	out        bytes.Buffer // the frame being drawn
	rows, cols int

	// The screen.
	ascii            bool // the box is drawn with +-|
	boxH             int  // input lines in the box
	curRow, curCol   int  // where the cursor is parked
	next             int  // the transcript's next row
	openRow, openCol int  // the transcript line being written (0: none)

	// The input.
	input  []ptyAgentSeg
	pastes int // collapsed pastes so far
	crSeen int // carriage returns seen, for PTYAGENT_IGNORE_CR

	// The answer.
	answering, queuedCR, hung bool
	answer                    []string
	ansLine, ansPos           int // the next character
	tick                      *time.Timer
}

func ptyAgentDur(name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if d, err := time.ParseDuration(v); err == nil {
		return d
	}
	if ms, err := strconv.Atoi(v); err == nil {
		return time.Duration(ms) * time.Millisecond
	}
	return def
}

func ptyAgentInt(name string) int {
	n, _ := strconv.Atoi(os.Getenv(name))
	return n
}

func runPTYAgent() {
	a := &ptyAgent{
		startDelay:  ptyAgentDur("PTYAGENT_START_DELAY", 300*time.Millisecond),
		charDelay:   ptyAgentDur("PTYAGENT_CHAR_DELAY", 20*time.Millisecond),
		boxStyle:    os.Getenv("PTYAGENT_BOX"),
		collapse:    os.Getenv("PTYAGENT_COLLAPSE") == "1",
		echo:        os.Getenv("PTYAGENT_ECHO") != "0",
		ignoreESC:   os.Getenv("PTYAGENT_IGNORE_ESC") == "1",
		hang:        os.Getenv("PTYAGENT_HANG_AFTER_SUBMIT") == "1",
		dropEarly:   os.Getenv("PTYAGENT_EARLY_INPUT") == "drop",
		answerLines: ptyAgentInt("PTYAGENT_ANSWER_LINES"),
		ignoreCR:    ptyAgentInt("PTYAGENT_IGNORE_CR"),
		logPath:     os.Getenv("PTYAGENT_LOG"),
		rows:        24,
		cols:        80,
	}
	a.ascii = a.boxStyle == "ascii"
	defer ptyAgentRaw(0)()
	time.Sleep(a.startDelay)
	if a.dropEarly {
		unix.IoctlSetInt(0, unix.TCFLSH, unix.TCIFLUSH) // Best effort.
	}
	if ws, err := unix.IoctlGetWinsize(1, unix.TIOCGWINSZ); err == nil && ws.Row >= 8 && ws.Col >= 20 {
		a.rows, a.cols = int(ws.Row), int(ws.Col)
	}
	in := make(chan byte, 64<<10)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := os.Stdin.Read(buf)
			for _, b := range buf[:n] {
				in <- b
			}
			if err != nil {
				close(in)
				return
			}
		}
	}()
	a.in = in
	a.start()
	if a.flush() {
		a.loop()
	}
	// Leave as a TUI does: bracketed paste off, the whole screen scrolling.
	fmt.Fprintf(os.Stdout, "\x1b[?2004l\x1b[r\x1b[%d;1H\r\n", a.rows)
}

// ptyAgentRaw puts the terminal fd in raw mode (cfmakeraw) unless it is
// already, and returns what restores it.
func ptyAgentRaw(fd int) (restore func()) {
	tio, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return func() {} // Not a terminal.
	}
	if tio.Lflag&(unix.ICANON|unix.ECHO|unix.ISIG|unix.IEXTEN) == 0 &&
		tio.Iflag&(unix.ICRNL|unix.IXON|unix.INLCR|unix.IGNCR) == 0 && tio.Oflag&unix.OPOST == 0 {
		return func() {}
	}
	old := *tio
	raw := *tio
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if unix.IoctlSetTermios(fd, unix.TCSETS, &raw) != nil {
		return func() {}
	}
	return func() { unix.IoctlSetTermios(fd, unix.TCSETS, &old) } // Best effort.
}

// loop handles keys and answer ticks until EOF, Ctrl-D or a failed write.
func (a *ptyAgent) loop() {
	for {
		var tick <-chan time.Time
		if a.answering {
			tick = a.tick.C
		}
		select {
		case b, ok := <-a.in:
			if !ok || a.key(b) {
				return
			}
		case <-tick:
			a.step()
		}
		if !a.flush() {
			return
		}
	}
}

// flush writes what was drawn, with the cursor parked in the box, as one write.
func (a *ptyAgent) flush() bool {
	if a.out.Len() == 0 {
		return true
	}
	a.cup(a.curRow, a.curCol)
	_, err := os.Stdout.Write(a.out.Bytes())
	a.out.Reset()
	return err == nil
}

func (a *ptyAgent) cup(r, c int) { fmt.Fprintf(&a.out, "\x1b[%d;%dH", r, c) }

// row replaces screen row r with s.
func (a *ptyAgent) row(r int, s string) {
	a.cup(r, 1)
	a.out.WriteString("\x1b[2K")
	a.out.WriteString(s)
}

func (a *ptyAgent) regionBottom() int { return a.rows - 3 - a.boxH }

func (a *ptyAgent) start() {
	a.out.WriteString("\x1b[?2004h\x1b[H\x1b[2J")
	a.boxH, a.next = 1, 1
	fmt.Fprintf(&a.out, "\x1b[1;%dr", a.regionBottom())
	a.drawBox()
	a.drawStatus()
}

// key handles one byte of input; it reports whether the agent must end.
func (a *ptyAgent) key(b byte) (exit bool) {
	if a.hung {
		return false
	}
	switch {
	case b == 0x1b:
		return a.escape()
	case b == '\r':
		a.carriageReturn()
	case b == '\n':
		if !a.inputEmpty() {
			a.typeText("\n")
		}
	case b == 0x04: // Ctrl-D
		return !a.answering
	case b == 0x7f || b == 0x08:
		a.backspace()
	case b < 0x20:
		// Other control characters (Tab, Ctrl-C…) are ignored.
	default:
		a.typeText(string(b))
	}
	return false
}

// nextByte waits up to d for the next byte: got is false when none came, ok
// false at EOF.
func (a *ptyAgent) nextByte(d time.Duration) (b byte, got, ok bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case b, ok = <-a.in:
		return b, ok, ok
	case <-t.C:
		return 0, false, true
	}
}

// escape follows an ESC: a CSI sequence (a paste among them), an SS3
// sequence, or a lone ESC.
func (a *ptyAgent) escape() (exit bool) {
	b, got, ok := a.nextByte(ptyAgentEscWait)
	switch {
	case !ok:
		a.loneESC()
		return true
	case !got:
		a.loneESC()
		return false
	case b == '[':
		return a.csi()
	case b == 'O':
		_, _, ok := a.nextByte(ptyAgentEscWait)
		return !ok
	}
	a.loneESC()
	return a.key(b)
}

func (a *ptyAgent) csi() (exit bool) {
	var params []byte
	for len(params) < 32 {
		b, got, ok := a.nextByte(ptyAgentEscWait)
		if !ok {
			return true
		}
		if !got {
			return false
		}
		if b >= 0x40 && b <= 0x7e {
			if b == '~' && string(params) == "200" {
				return a.paste()
			}
			return false
		}
		params = append(params, b)
	}
	return false
}

// paste reads up to the end of a bracketed paste.
func (a *ptyAgent) paste() (exit bool) {
	var buf []byte
	for !bytes.HasSuffix(buf, []byte(ptyAgentPasteEnd)) {
		b, ok := <-a.in
		if !ok {
			return true
		}
		buf = append(buf, b)
	}
	text := string(buf[:len(buf)-len(ptyAgentPasteEnd)])
	text = strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n")
	if text == "" {
		return false
	}
	seg := ptyAgentSeg{text: text, shown: text, paste: true}
	if a.collapse && (strings.Contains(text, "\n") || utf8.RuneCountInString(text) > ptyAgentCollapseRunes) {
		a.pastes++
		seg.collapsed = true
		seg.shown = fmt.Sprintf("[Pasted text #%d +%d lines]", a.pastes, strings.Count(text, "\n"))
	}
	a.input = append(a.input, seg)
	a.drawBox()
	return false
}

func (a *ptyAgent) typeText(s string) {
	if n := len(a.input); n > 0 && !a.input[n-1].paste {
		a.input[n-1].text += s
		a.input[n-1].shown += s
	} else {
		a.input = append(a.input, ptyAgentSeg{text: s, shown: s})
	}
	a.drawBox()
}

func (a *ptyAgent) backspace() {
	n := len(a.input)
	if n == 0 {
		return
	}
	last := &a.input[n-1]
	if !last.collapsed {
		_, size := utf8.DecodeLastRuneInString(last.text)
		last.text = last.text[:len(last.text)-size]
		last.shown = last.text
	}
	if last.collapsed || last.text == "" {
		a.input = a.input[:n-1]
	}
	a.drawBox()
}

func (a *ptyAgent) text() (text, shown string) {
	var t, s strings.Builder
	for _, seg := range a.input {
		t.WriteString(seg.text)
		s.WriteString(seg.shown)
	}
	return t.String(), s.String()
}

func (a *ptyAgent) inputEmpty() bool { return len(a.input) == 0 }

func (a *ptyAgent) carriageReturn() {
	if a.crSeen < a.ignoreCR {
		a.crSeen++
		return
	}
	if a.inputEmpty() {
		return
	}
	if a.answering {
		a.queuedCR = true
		return
	}
	a.submit()
}

func (a *ptyAgent) submit() {
	text, shown := a.text()
	a.record(text)
	a.input = nil
	if a.hang {
		a.hung = true
		return
	}
	if a.echo {
		for _, l := range strings.Split(ptyAgentClean(shown, '\n'), "\n") {
			a.printLine("> " + l)
		}
	}
	a.drawBox()
	a.answer = ptyAgentAnswer(text, a.answerLines)
	a.ansLine, a.ansPos = 0, 0
	a.answering = true
	a.drawStatus()
	a.tick = time.NewTimer(a.charDelay)
}

// record appends the submitted text to the log.
func (a *ptyAgent) record(text string) {
	if a.logPath == "" {
		return
	}
	line, _ := json.Marshal(struct {
		Text string `json:"text"`
	}{text})
	f, err := os.OpenFile(a.logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	f.Write(append(line, '\n')) // Best effort.
	f.Close()
}

func ptyAgentAnswer(text string, n int) []string {
	r := []rune(ptyAgentClean(text, ' '))
	r = r[:min(len(r), ptyAgentAnswerRunes)]
	lines := []string{"answer to: " + string(r)}
	for i := 2; i <= n; i++ {
		lines = append(lines, fmt.Sprintf("line %d of %d", i, n))
	}
	return lines
}

// ptyAgentClean makes s drawable: a tab is a space, a newline nl, other
// control characters are dropped.
func ptyAgentClean(s string, nl rune) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n':
			return nl
		case r == '\t':
			return ' '
		case r < 0x20 || (r >= 0x7f && r < 0xa0):
			return -1
		}
		return r
	}, s)
}

// step draws the answer's next character.
func (a *ptyAgent) step() {
	line := []rune(a.answer[a.ansLine])
	if a.ansPos == 0 {
		a.newLine()
	}
	a.put(string(line[a.ansPos]))
	a.ansPos++
	if a.ansPos == len(line) {
		a.openRow = 0
		a.ansLine++
		a.ansPos = 0
	}
	if a.ansLine == len(a.answer) {
		a.finish(false)
		return
	}
	a.tick.Reset(a.charDelay)
}

func (a *ptyAgent) loneESC() {
	if a.answering && !a.ignoreESC {
		a.finish(true)
	}
}

// finish ends the answer, interrupted or not.
func (a *ptyAgent) finish(interrupted bool) {
	a.answering = false
	a.tick.Stop()
	a.openRow = 0
	if interrupted {
		a.printLine("[interrupted]")
	}
	if a.boxStyle == "switch" {
		a.ascii = true
	}
	a.drawBox()
	a.drawStatus()
	queued := a.queuedCR
	a.queuedCR = false
	if queued && !interrupted && !a.inputEmpty() {
		a.submit()
	}
}

// newLine opens a new transcript line, scrolling the region when it is full.
func (a *ptyAgent) newLine() {
	if b := a.regionBottom(); a.next > b {
		a.cup(b, 1)
		a.out.WriteByte('\n') // At the region's bottom: scrolls it.
		a.next = b
	}
	a.openRow, a.openCol = a.next, 0
	a.next++
	a.cup(a.openRow, 1)
	a.out.WriteString("\x1b[2K")
}

// put appends s to the open transcript line, wrapping at the last column.
func (a *ptyAgent) put(s string) {
	placed := false
	for _, r := range s {
		if a.openRow == 0 || a.openCol >= a.cols {
			a.newLine()
			placed = true
		} else if !placed {
			a.cup(a.openRow, a.openCol+1)
			placed = true
		}
		a.out.WriteRune(r)
		a.openCol++
	}
}

func (a *ptyAgent) printLine(s string) {
	a.newLine()
	a.put(s)
	a.openRow = 0
}

func (a *ptyAgent) maxBoxH() int { return max(1, (a.rows-4)/2) }

// boxLines is the input as displayed in the box, wrapped.
func (a *ptyAgent) boxLines() []string {
	if !a.echo {
		return []string{""}
	}
	_, shown := a.text()
	w := a.cols - 6
	var lines []string
	for _, l := range strings.Split(ptyAgentClean(shown, '\n'), "\n") {
		r := []rune(l)
		for len(r) > w {
			lines = append(lines, string(r[:w]))
			r = r[w:]
		}
		lines = append(lines, string(r))
	}
	return lines
}

func (a *ptyAgent) drawBox() {
	all := a.boxLines()
	h := min(len(all), a.maxBoxH())
	lines := all[len(all)-h:]
	if h != a.boxH {
		a.resizeBox(h)
	}
	hz, vt, tl, tr, bl, br := "─", "│", "╭", "╮", "╰", "╯"
	if a.ascii {
		hz, vt, tl, tr, bl, br = "-", "|", "+", "+", "+", "+"
	}
	top := a.rows - 2 - h
	a.row(top, tl+strings.Repeat(hz, a.cols-2)+tr)
	w := a.cols - 6
	for i, l := range lines {
		prefix := vt + " > "
		if i > 0 || len(all) > h {
			prefix = vt + "   "
		}
		a.row(top+1+i, prefix+l+strings.Repeat(" ", w-utf8.RuneCountInString(l))+" "+vt)
	}
	a.row(a.rows-1, bl+strings.Repeat(hz, a.cols-2)+br)
	a.curRow, a.curCol = top+h, 5+utf8.RuneCountInString(lines[h-1])
}

// resizeBox gives the box h input lines and the transcript the rows above.
func (a *ptyAgent) resizeBox(h int) {
	oldBottom := a.regionBottom()
	a.boxH = h
	bottom := a.regionBottom()
	if k := a.next - 1 - bottom; bottom < oldBottom && k > 0 {
		// Scroll the transcript up in the old region so that its last
		// line stays above the grown box.
		a.cup(oldBottom, 1)
		a.out.WriteString(strings.Repeat("\n", k))
		a.next -= k
		if a.openRow > 0 {
			a.openRow = max(1, a.openRow-k)
		}
	}
	for r := oldBottom + 1; r <= bottom; r++ {
		a.row(r, "") // Rows the shrunk box left.
	}
	fmt.Fprintf(&a.out, "\x1b[1;%dr", bottom)
}

func (a *ptyAgent) drawStatus() {
	s := ""
	if a.answering {
		s = ptyAgentStatus
	}
	a.row(a.rows, s)
}

// ---------------------------------------------------------------------
// The test: the mode under a pty, driven through session directly.

// paScreen is a small terminal emulator, enough for what ptyagent
// draws: UTF-8 text, CR, LF, BS, autowrap, CUP, ED, EL, DECSTBM, cursor
// moves and bracketed paste mode; lines scrolled off a region starting at
// the top go to the scrollback, as in xterm.
type paScreen struct {
	rows, cols int
	cells      [][]rune
	r, c       int
	wrapNext   bool
	top, bot   int
	scrollback []string
	pending    []byte
	state      int // 0 ground, 1 after ESC, 2 in a CSI sequence
	seq        []byte
	bracketed  bool
}

func newPAScreen(rows, cols int) *paScreen {
	s := &paScreen{rows: rows, cols: cols, bot: rows - 1}
	s.cells = make([][]rune, rows)
	for i := range s.cells {
		s.cells[i] = s.blank()
	}
	return s
}

func (s *paScreen) blank() []rune {
	row := make([]rune, s.cols)
	for i := range row {
		row[i] = ' '
	}
	return row
}

func (s *paScreen) feed(p []byte) {
	b := append(s.pending, p...)
	for len(b) > 0 {
		if s.state == 0 && b[0] >= 0x80 {
			if !utf8.FullRune(b) {
				break
			}
			r, n := utf8.DecodeRune(b)
			s.print(r)
			b = b[n:]
			continue
		}
		s.input(b[0])
		b = b[1:]
	}
	s.pending = bytes.Clone(b)
}

func (s *paScreen) input(c byte) {
	switch s.state {
	case 1:
		s.state = 0
		if c == '[' {
			s.state, s.seq = 2, s.seq[:0]
		}
		return
	case 2:
		if c >= 0x40 && c <= 0x7e {
			s.state = 0
			s.csi(string(s.seq), c)
		} else {
			s.seq = append(s.seq, c)
		}
		return
	}
	switch {
	case c == 0x1b:
		s.state = 1
	case c == '\r':
		s.c, s.wrapNext = 0, false
	case c == '\n':
		s.lf()
	case c == '\b':
		s.c, s.wrapNext = max(0, s.c-1), false
	case c < 0x20 || c == 0x7f:
	default:
		s.print(rune(c))
	}
}

func (s *paScreen) csi(seq string, f byte) {
	private := strings.HasPrefix(seq, "?")
	ps := strings.Split(strings.TrimPrefix(seq, "?"), ";")
	n := func(i, def int) int {
		if i < len(ps) {
			if v, err := strconv.Atoi(ps[i]); err == nil && v > 0 {
				return v
			}
		}
		return def
	}
	erase := func(r, from, to int) {
		for c := from; c < to; c++ {
			s.cells[r][c] = ' '
		}
	}
	s.wrapNext = false
	switch f {
	case 'H', 'f':
		s.r, s.c = min(n(0, 1), s.rows)-1, min(n(1, 1), s.cols)-1
	case 'A':
		s.r = max(0, s.r-n(0, 1))
	case 'B':
		s.r = min(s.rows-1, s.r+n(0, 1))
	case 'C':
		s.c = min(s.cols-1, s.c+n(0, 1))
	case 'D':
		s.c = max(0, s.c-n(0, 1))
	case 'J':
		switch n(0, 0) {
		case 0:
			erase(s.r, s.c, s.cols)
			for r := s.r + 1; r < s.rows; r++ {
				erase(r, 0, s.cols)
			}
		case 2, 3:
			for r := range s.rows {
				erase(r, 0, s.cols)
			}
		}
	case 'K':
		switch n(0, 0) {
		case 0:
			erase(s.r, s.c, s.cols)
		case 1:
			erase(s.r, 0, s.c+1)
		case 2:
			erase(s.r, 0, s.cols)
		}
	case 'r':
		if private {
			return
		}
		s.top, s.bot = n(0, 1)-1, min(n(1, s.rows), s.rows)-1
		if s.top >= s.bot {
			s.top, s.bot = 0, s.rows-1
		}
		s.r, s.c = 0, 0
	case 'h', 'l':
		if private && n(0, 0) == 2004 {
			s.bracketed = f == 'h'
		}
	}
}

func (s *paScreen) lf() {
	switch {
	case s.r == s.bot:
		if s.top == 0 {
			s.scrollback = append(s.scrollback, strings.TrimRight(string(s.cells[0]), " "))
		}
		copy(s.cells[s.top:s.bot], s.cells[s.top+1:s.bot+1])
		s.cells[s.bot] = s.blank()
	case s.r < s.rows-1:
		s.r++
	}
	s.wrapNext = false
}

func (s *paScreen) print(r rune) {
	if s.wrapNext {
		s.c = 0
		s.lf()
	}
	s.cells[s.r][s.c] = r
	if s.c == s.cols-1 {
		s.wrapNext = true
	} else {
		s.c++
	}
}

func (s *paScreen) lines() []string {
	out := make([]string, s.rows)
	for i, row := range s.cells {
		out[i] = strings.TrimRight(string(row), " ")
	}
	return out
}

// paBox finds the prompt box at the bottom of the screen (above the
// status row) and returns its input lines and its top border's index.
func paBox(lines []string, cols int, ascii bool) (input []string, top int, ok bool) {
	hz, vt, tl, tr, bl, br := "─", "│", "╭", "╮", "╰", "╯"
	if ascii {
		hz, vt, tl, tr, bl, br = "-", "|", "+", "+", "+", "+"
	}
	rows := len(lines)
	if lines[rows-2] != bl+strings.Repeat(hz, cols-2)+br {
		return nil, 0, false
	}
	top = rows - 3
	for top >= 0 && strings.HasPrefix(lines[top], vt) {
		top--
	}
	if top < 0 || top == rows-3 || lines[top] != tl+strings.Repeat(hz, cols-2)+tr {
		return nil, 0, false
	}
	for i := top + 1; i <= rows-3; i++ {
		l, okEnd := strings.CutSuffix(strings.TrimPrefix(lines[i], vt), vt)
		if !okEnd || utf8.RuneCountInString(lines[i]) != cols {
			return nil, 0, false
		}
		prefix := " > "
		if i > top+1 {
			prefix = "   "
		}
		l, okPrefix := strings.CutPrefix(l, prefix)
		if !okPrefix {
			return nil, 0, false
		}
		input = append(input, strings.TrimRight(l, " "))
	}
	return input, top, true
}

// paTerm is the test's side of the pty.
type paTerm struct {
	t          *testing.T
	c          *session.Child
	logPath    string
	rows, cols int
	started    time.Time

	mu      sync.Mutex
	raw     []byte
	scr     *paScreen
	eof     bool
	changed chan struct{} // closed and replaced at every read
	pos     int           // how far waitRaw has looked in raw
}

const paDeadline = 10 * time.Second

func startPTYAgent(t *testing.T, rows, cols int, env ...string) *paTerm {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "prompts.jsonl")
	cfg := adaptertest.Config(t, "ptyagent", nil, append([]string{"PTYAGENT_LOG=" + logPath}, env...)...)
	cfg.PTY, cfg.PTYRows, cfg.PTYCols = true, uint16(rows), uint16(cols)
	p := &paTerm{t: t, logPath: logPath, rows: rows, cols: cols, scr: newPAScreen(rows, cols), changed: make(chan struct{}), started: time.Now()}
	c, err := session.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.c = c
	t.Cleanup(func() {
		c.Kill()
		<-c.Done()
	})
	go p.read()
	return p
}

func (p *paTerm) read() {
	buf := make([]byte, 32<<10)
	for {
		n, err := p.c.Stdout().Read(buf)
		p.mu.Lock()
		p.raw = append(p.raw, buf[:n]...)
		p.scr.feed(buf[:n])
		if err != nil {
			p.eof = true
		}
		close(p.changed)
		p.changed = make(chan struct{})
		p.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// waitFor waits until cond (called with p.mu held) holds.
func (p *paTerm) waitFor(what string, cond func() bool) {
	p.t.Helper()
	deadline := time.NewTimer(paDeadline)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		ok, eof, ch := cond(), p.eof, p.changed
		p.mu.Unlock()
		if ok {
			return
		}
		if eof {
			p.t.Fatalf("the agent ended before %s; screen:\n%s\nstderr: %s", what, p.screenText(), p.c.StderrTail())
		}
		select {
		case <-ch:
		case <-deadline.C:
			p.t.Fatalf("no %s after %v; screen:\n%s", what, paDeadline, p.screenText())
		}
	}
}

// waitRaw waits for s in the raw output after what earlier waits matched
// and returns the offset after it.
func (p *paTerm) waitRaw(s string) int {
	p.t.Helper()
	p.waitFor(fmt.Sprintf("%q in the output", s), func() bool {
		if i := bytes.Index(p.raw[p.pos:], []byte(s)); i >= 0 {
			p.pos += i + len(s)
			return true
		}
		return false
	})
	return p.pos
}

// waitScreen waits until ok holds for the screen's lines and returns them.
func (p *paTerm) waitScreen(what string, ok func(lines []string) bool) []string {
	p.t.Helper()
	var lines []string
	p.waitFor(what, func() bool {
		lines = p.scr.lines()
		return ok(lines)
	})
	return lines
}

// waitBox waits for the box (of the style) holding input and returns the screen.
func (p *paTerm) waitBox(ascii bool, input string) []string {
	p.t.Helper()
	return p.waitScreen(fmt.Sprintf("a box holding %q", input), func(lines []string) bool {
		in, _, ok := paBox(lines, p.cols, ascii)
		return ok && strings.Join(in, "\n") == input
	})
}

// waitAnswered waits for the line answer, the status row blank and the
// box empty.
func (p *paTerm) waitAnswered(ascii bool, answer string) []string {
	p.t.Helper()
	return p.waitScreen(fmt.Sprintf("the answer %q", answer), func(lines []string) bool {
		in, _, ok := paBox(lines, p.cols, ascii)
		return ok && len(in) == 1 && in[0] == "" && lines[p.rows-1] == "" && slices.Contains(lines, answer)
	})
}

// paPrefixed reports whether one of lines begins with prefix.
func paPrefixed(lines []string, prefix string) bool {
	return slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, prefix) })
}

func (p *paTerm) screenText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.scr.lines(), "\n")
}

func (p *paTerm) write(s string) {
	p.t.Helper()
	if _, err := p.c.Stdin().Write([]byte(s)); err != nil {
		p.t.Fatal(err)
	}
}

// send pastes text, then sends the carriage return as a write of its own.
func (p *paTerm) send(text string) {
	p.t.Helper()
	p.write(ptyAgentPasteStart + text + ptyAgentPasteEnd)
	p.write("\r")
}

// end closes the input and checks that the agent exits with 0.
func (p *paTerm) end() {
	p.t.Helper()
	p.c.CloseStdin()
	p.exited()
}

func (p *paTerm) exited() {
	p.t.Helper()
	select {
	case <-p.c.Done():
	case <-time.After(paDeadline):
		p.t.Fatal("the agent did not exit")
	}
	if ex := p.c.Exit(); ex.Code != 0 {
		p.t.Fatalf("the agent exited: %v", ex)
	}
	p.waitFor("the output's end", func() bool { return p.eof })
}

// output is all the agent has written so far.
func (p *paTerm) output() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return bytes.Clone(p.raw)
}

// prompts is what the agent logged.
func (p *paTerm) prompts() []string { return ptyAgentLog(p.t, p.logPath) }

// ptyAgentLog reads the prompts the agent logged at path (PTYAGENT_LOG),
// in order; none when it logged nothing yet.
func ptyAgentLog(t testing.TB, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var texts []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var rec struct {
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil || rec.Text == nil {
			t.Fatalf("log line %.200q: %v", sc.Bytes(), err)
		}
		texts = append(texts, *rec.Text)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return texts
}

func (p *paTerm) wantPrompts(want ...string) {
	p.t.Helper()
	if got := p.prompts(); !slices.Equal(got, want) {
		p.t.Errorf("logged prompts %q, want %q", got, want)
	}
}

func TestPTYAgentScript(t *testing.T) {
	fast := []string{"PTYAGENT_START_DELAY=20ms", "PTYAGENT_CHAR_DELAY=2ms"}

	for _, size := range [][2]int{{24, 80}, {40, 120}} {
		rows, cols := size[0], size[1]
		t.Run(fmt.Sprintf("basic/%dx%d", cols, rows), func(t *testing.T) {
			t.Parallel()
			// 80x24 runs with the default delays: 300 ms to start, 20 ms
			// a character.
			var env []string
			if cols != 80 {
				env = fast
			}
			p := startPTYAgent(t, rows, cols, env...)
			p.waitRaw("\x1b[?2004h")
			lines := p.waitBox(false, "")
			p.mu.Lock()
			bracketed := p.scr.bracketed
			p.mu.Unlock()
			if !bracketed {
				t.Error("bracketed paste mode is off")
			}
			if d := time.Since(p.started); env == nil && d < 300*time.Millisecond {
				t.Errorf("the box was drawn after %v, before the start delay", d)
			}
			if _, top, _ := paBox(lines, cols, false); top != rows-4 {
				t.Errorf("box top border on row %d, want %d", top+1, rows-3)
			}
			p.write("\x1b") // ESC while idle: nothing
			p.write(ptyAgentPasteStart + "hello world" + ptyAgentPasteEnd)
			lines = p.waitBox(false, "hello world")
			if lines[0] != "" {
				t.Errorf("the transcript shows %q before the submission", lines[0])
			}
			p.write("\r")
			p.waitScreen("esc to interrupt", func(l []string) bool { return l[rows-1] == ptyAgentStatus })
			p.waitAnswered(false, "answer to: hello world")
			p.write("\r") // on an empty input: nothing
			p.send("again")
			lines = p.waitAnswered(false, "answer to: again")
			want := []string{"> hello world", "answer to: hello world", "> again", "answer to: again", ""}
			if !slices.Equal(lines[:5], want) {
				t.Errorf("transcript %q, want %q", lines[:5], want)
			}
			p.end()
			p.wantPrompts("hello world", "again")
			if n := bytes.Count(p.output(), []byte("hello world")); n < 2 {
				t.Errorf(`"hello world" drawn %d times, want in the box and in the transcript`, n)
			}
		})
	}

	t.Run("interrupt", func(t *testing.T) {
		t.Parallel()
		p := startPTYAgent(t, 24, 80, "PTYAGENT_START_DELAY=0", "PTYAGENT_CHAR_DELAY=15ms")
		p.waitBox(false, "")
		p.send("please write a long story about terminals")
		p.waitScreen("the answer's start", func(l []string) bool { return paPrefixed(l, "answer to:") })
		p.write("\x04")   // Ctrl-D while answering: ignored
		p.write("\x1b[A") // an arrow key is no interrupt
		p.waitScreen("the answer going on", func(l []string) bool { return paPrefixed(l, "answer to: plea") })
		p.write("\x1b")
		lines := p.waitScreen("[interrupted]", func(l []string) bool { return l[2] == "[interrupted]" && l[23] == "" })
		if !strings.HasPrefix(lines[1], "answer to: plea") || lines[1] == "answer to: please write a long story about terminal" {
			t.Errorf("answer line %q, want it cut short", lines[1])
		}
		p.write("\x1b") // ESC while idle: nothing
		p.send("again")
		lines = p.waitAnswered(false, "answer to: again")
		if strings.Count(strings.Join(lines, "\n"), "[interrupted]") != 1 {
			t.Errorf("screen:\n%s\nwant one [interrupted]", strings.Join(lines, "\n"))
		}
		p.end()
		p.wantPrompts("please write a long story about terminals", "again")
	})

	t.Run("ignore-esc", func(t *testing.T) {
		t.Parallel()
		p := startPTYAgent(t, 24, 80, "PTYAGENT_START_DELAY=0", "PTYAGENT_CHAR_DELAY=10ms", "PTYAGENT_IGNORE_ESC=1")
		p.waitBox(false, "")
		p.send("0123456789012345678901234567890123456789 and more")
		p.waitScreen("the answer's start", func(l []string) bool { return paPrefixed(l, "answer to:") })
		p.write("\x1b")
		lines := p.waitAnswered(false, "answer to: 0123456789012345678901234567890123456789")
		if strings.Contains(strings.Join(lines, "\n"), "[interrupted]") {
			t.Error("ESC interrupted with PTYAGENT_IGNORE_ESC=1")
		}
		p.end()
		p.wantPrompts("0123456789012345678901234567890123456789 and more")
	})

	t.Run("no-echo", func(t *testing.T) {
		t.Parallel()
		p := startPTYAgent(t, 24, 80, append(fast, "PTYAGENT_ECHO=0")...)
		p.waitBox(false, "")
		p.send("secret words")
		lines := p.waitAnswered(false, "answer to: secret words")
		if lines[0] != "answer to: secret words" {
			t.Errorf("first transcript line %q, want the answer only", lines[0])
		}
		p.end()
		p.wantPrompts("secret words")
		if bytes.Contains(p.output(), []byte("secret words")) {
			t.Error("the input was drawn with PTYAGENT_ECHO=0")
		}
	})

	t.Run("collapse", func(t *testing.T) {
		t.Parallel()
		p := startPTYAgent(t, 24, 80, append(fast, "PTYAGENT_COLLAPSE=1")...)
		p.waitBox(false, "")
		p.write(ptyAgentPasteStart + "short " + ptyAgentPasteEnd)
		p.waitBox(false, "short")
		p.write(ptyAgentPasteStart + "line one\r\nline two\nline three" + ptyAgentPasteEnd)
		p.waitBox(false, "short [Pasted text #1 +2 lines]")
		p.write("\r")
		lines := p.waitAnswered(false, "answer to: short line one line two line three")
		if lines[0] != "> short [Pasted text #1 +2 lines]" {
			t.Errorf("transcript %q, want the placeholder", lines[0])
		}
		long := strings.Repeat("abcdefghij", 90)
		p.write(ptyAgentPasteStart + long + ptyAgentPasteEnd)
		p.waitBox(false, "[Pasted text #2 +0 lines]")
		p.write("\r")
		p.waitAnswered(false, "answer to: "+long[:40])
		p.end()
		p.wantPrompts("short line one\nline two\nline three", long)
	})

	t.Run("controltest.Multiline/120x40", func(t *testing.T) {
		t.Parallel()
		p := startPTYAgent(t, 40, 120, "PTYAGENT_START_DELAY=20ms", "PTYAGENT_CHAR_DELAY=0", "PTYAGENT_ANSWER_LINES=36")
		p.waitBox(false, "")
		p.send("fill the screen")
		lines := p.waitAnswered(false, "line 36 of 36")
		if lines[35] != "line 36 of 36" {
			t.Errorf("screen:\n%s\nwant the transcript down to the box", strings.Join(lines, "\n"))
		}
		// The box grows by two lines: the transcript scrolls up by two.
		p.write(ptyAgentPasteStart + "alpha\nbeta\ngamma" + ptyAgentPasteEnd)
		lines = p.waitBox(false, "alpha\nbeta\ngamma")
		if _, top, _ := paBox(lines, 120, false); top != 40-6 || lines[top-1] != "line 36 of 36" || lines[top-2] != "line 35 of 36" {
			t.Errorf("screen:\n%s\nwant the grown box's top border on row %d, the transcript's end above it", strings.Join(lines, "\n"), 40-5)
		}
		p.write("\r")
		var all []string
		p.waitFor("the second answer", func() bool {
			lines = p.scr.lines()
			all = append(slices.Clone(p.scr.scrollback), lines...)
			in, _, ok := paBox(lines, 120, false)
			return ok && slices.Equal(in, []string{""}) && lines[39] == "" && slices.Contains(all, "answer to: alpha beta gamma")
		})
		if _, top, _ := paBox(lines, 120, false); top != 40-4 || lines[top-1] != "line 36 of 36" {
			t.Errorf("screen:\n%s\nwant the box's top border on row %d after the submission, the answer's end above it", strings.Join(lines, "\n"), 40-3)
		}
		i := slices.Index(all, "> alpha")
		want := []string{"> alpha", "> beta", "> gamma", "answer to: alpha beta gamma", "line 2 of 36"}
		if i < 0 || !slices.Equal(all[i:i+5], want) {
			t.Errorf("transcript (scrollback and screen):\n%s\nwant %q", strings.Join(all, "\n"), want)
		}
		p.end()
		p.wantPrompts("fill the screen", "alpha\nbeta\ngamma")
	})

	t.Run("box-ascii", func(t *testing.T) {
		t.Parallel()
		p := startPTYAgent(t, 24, 80, append(fast, "PTYAGENT_BOX=ascii")...)
		p.waitBox(true, "")
		p.send("plain")
		p.waitAnswered(true, "answer to: plain")
		p.end()
		p.wantPrompts("plain")
	})

	t.Run("box-switch", func(t *testing.T) {
		t.Parallel()
		p := startPTYAgent(t, 24, 80, append(fast, "PTYAGENT_BOX=switch")...)
		p.waitBox(false, "")
		p.send("one")
		p.waitAnswered(true, "answer to: one")
		p.send("two")
		p.waitAnswered(true, "answer to: two")
		p.end()
		p.wantPrompts("one", "two")
	})

	t.Run("scrollback", func(t *testing.T) {
		t.Parallel()
		p := startPTYAgent(t, 24, 80, "PTYAGENT_START_DELAY=0", "PTYAGENT_CHAR_DELAY=1ms", "PTYAGENT_ANSWER_LINES=30")
		p.waitBox(false, "")
		p.send("a long answer please")
		lines := p.waitAnswered(false, "line 30 of 30")
		if lines[24-5] != "line 30 of 30" || lines[0] != "line 11 of 30" {
			t.Errorf("screen:\n%s\nwant lines 11 to 30 above the box", strings.Join(lines, "\n"))
		}
		p.mu.Lock()
		sb := slices.Contains(p.scr.scrollback, "> a long answer please") && slices.Contains(p.scr.scrollback, "answer to: a long answer please")
		p.mu.Unlock()
		if !sb {
			t.Error("the prompt and the answer's first line are not in the scrollback")
		}
		p.end()
		p.wantPrompts("a long answer please")
	})

	t.Run("lost-cr", func(t *testing.T) {
		t.Parallel()
		p := startPTYAgent(t, 24, 80, append(fast, "PTYAGENT_IGNORE_CR=1")...)
		p.waitBox(false, "")
		p.write("ab\x7fc")
		p.waitBox(false, "ac")
		p.write(ptyAgentPasteStart + " p1" + ptyAgentPasteEnd)
		p.waitBox(false, "ac p1")
		p.write("\r") // lost
		p.write("x")
		lines := p.waitBox(false, "ac p1x")
		if lines[0] != "" {
			t.Errorf("the lost CR submitted: %q", lines[0])
		}
		p.write("\r")
		p.waitAnswered(false, "answer to: ac p1x")
		p.end()
		p.wantPrompts("ac p1x")
	})

	t.Run("hang", func(t *testing.T) {
		t.Parallel()
		p := startPTYAgent(t, 24, 80, append(fast, "PTYAGENT_HANG_AFTER_SUBMIT=1")...)
		p.waitBox(false, "")
		p.write(ptyAgentPasteStart + "stuck" + ptyAgentPasteEnd)
		p.waitRaw("stuck")
		mark := p.waitRaw("\x1b[22;10H") // the cursor after the echo: the frame's end
		p.write("\r")
		p.write("more keys\x1b")
		p.end()
		p.wantPrompts("stuck")
		after := string(p.output()[mark:])
		if !strings.HasPrefix(after, "\x1b[?2004l") {
			t.Errorf("drawn after the submission: %q, want nothing before the exit", after)
		}
	})

	t.Run("early-input-kept+ctrl-d", func(t *testing.T) {
		t.Parallel()
		p := startPTYAgent(t, 24, 80, "PTYAGENT_START_DELAY=200ms", "PTYAGENT_CHAR_DELAY=2ms")
		p.write(ptyAgentPasteStart + "early bird" + ptyAgentPasteEnd)
		p.waitBox(false, "early bird")
		p.write("\r")
		p.waitAnswered(false, "answer to: early bird")
		p.write("\x04") // Ctrl-D when idle: exit
		p.exited()
		p.wantPrompts("early bird")
	})

	t.Run("raw-mode", func(t *testing.T) {
		t.Parallel()
		// session's pty is raw already; a cooked one is made raw, and
		// restored.
		master, tty, err := pty.Open()
		if err != nil {
			t.Skip(err)
		}
		defer master.Close()
		defer tty.Close()
		fd := int(tty.Fd())
		cooked := func() bool {
			tio, err := unix.IoctlGetTermios(fd, unix.TCGETS)
			if err != nil {
				t.Fatal(err)
			}
			return tio.Lflag&(unix.ICANON|unix.ECHO) != 0
		}
		if !cooked() {
			t.Skip("a new pty is not in canonical mode")
		}
		restore := ptyAgentRaw(fd)
		if cooked() {
			t.Error("the terminal is not raw")
		}
		ptyAgentRaw(fd)() // raw already: nothing to restore
		if cooked() {
			t.Error("the terminal was restored by a call that changed nothing")
		}
		restore()
		if !cooked() {
			t.Error("the terminal was not restored")
		}
	})

	t.Run("early-input-dropped", func(t *testing.T) {
		t.Parallel()
		p := startPTYAgent(t, 24, 80, "PTYAGENT_START_DELAY=200ms", "PTYAGENT_CHAR_DELAY=2ms", "PTYAGENT_EARLY_INPUT=drop")
		p.write(ptyAgentPasteStart + "lost" + ptyAgentPasteEnd + "\r")
		p.waitBox(false, "")
		p.send("kept")
		p.waitAnswered(false, "answer to: kept")
		p.end()
		p.wantPrompts("kept")
	})
}
