package screen

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/x/vt"
)

// write feeds the strings to s, one Write each.
func write(s *Screen, parts ...string) {
	for _, p := range parts {
		s.Write([]byte(p))
	}
}

// rows pads want to n rows.
func rows(n int, want ...string) []string {
	out := make([]string, n)
	copy(out, want)
	return out
}

// fresh renders every visible row from the library's cells, bypassing the
// damage-tracked cache behind Lines.
func fresh(s *Screen) []string {
	t := s.t
	out := make([]string, t.rows)
	for y := range t.rows {
		var b []byte
		for x := range t.cols {
			b = appendCell(b, t.em.CellAt(x, y))
		}
		out[y] = string(trimRight(b))
	}
	return out
}

// check verifies what must hold after any input.
func check(t *testing.T, s *Screen) {
	t.Helper()
	lines := s.Lines()
	if len(lines) != s.t.rows {
		t.Fatalf("Lines has %d rows, want %d", len(lines), s.t.rows)
	}
	if f := fresh(s); !slices.Equal(lines, f) {
		t.Fatalf("cached Lines differ from the cells:\ncached %q\ncells  %q", lines, f)
	}
	if s.Panics() != 0 {
		t.Fatalf("%d library panics recovered", s.Panics())
	}
}

func eqLines(t *testing.T, s *Screen, want ...string) {
	t.Helper()
	check(t, s)
	if got, w := s.Lines(), rows(s.t.rows, want...); !slices.Equal(got, w) {
		t.Fatalf("Lines\n got %q\nwant %q", got, w)
	}
}

func eqCursor(t *testing.T, s *Screen, col, row int) {
	t.Helper()
	if c, r := s.Cursor(); c != col || r != row {
		t.Fatalf("Cursor = (%d, %d), want (%d, %d)", c, r, col, row)
	}
}

func TestNew(t *testing.T) {
	s := New(10, 3)
	eqLines(t, s)
	eqCursor(t, s, 0, 0)
	if s.AltScreen() || s.BracketedPaste() || s.Gen() != 0 || s.Replies() != nil || s.Scrolled() != nil {
		t.Fatal("a new screen is not blank")
	}
	s = New(0, -1)
	write(s, "abc")
	eqLines(t, s, "c")
}

func TestPlainText(t *testing.T) {
	s := New(20, 4)
	write(s, "hello, world")
	eqLines(t, s, "hello, world")
	eqCursor(t, s, 12, 0)
	// Wrapping at the right margin.
	s = New(5, 3)
	write(s, "abcdefgh")
	eqLines(t, s, "abcde", "fgh")
	eqCursor(t, s, 3, 1)
	// Tabs move the cursor; they leave no character.
	s = New(20, 2)
	write(s, "a\tb")
	eqLines(t, s, "a       b")
}

func TestCRLF(t *testing.T) {
	s := New(10, 4)
	write(s, "one\r\ntwo\r\nthree")
	eqLines(t, s, "one", "two", "three")
	eqCursor(t, s, 5, 2)
	// CR returns to the start of the line, LF alone only goes down.
	s = New(10, 4)
	write(s, "abc\rX\nY")
	eqLines(t, s, "Xbc", " Y")
	// Backspace.
	s = New(10, 2)
	write(s, "abc\b\bZ")
	eqLines(t, s, "aZc")
}

func TestCursorMovement(t *testing.T) {
	s := New(10, 4)
	write(s, "line1\r\nline2\r\nline3")
	write(s, "\x1b[2;3HX")
	eqLines(t, s, "line1", "liXe2", "line3")
	eqCursor(t, s, 3, 1)
	write(s, "\x1b[3;3H\x1b[K")
	eqLines(t, s, "line1", "liXe2", "li")
	write(s, "\x1b[H")
	eqCursor(t, s, 0, 0)
	write(s, "\x1b[2J")
	eqLines(t, s)
	eqCursor(t, s, 0, 0) // ED does not move the cursor
	write(s, "\x1b[4;10H")
	eqCursor(t, s, 9, 3)
	write(s, "\x1b[99;99H")
	eqCursor(t, s, 9, 3)
	write(s, "\x1b[2A\x1b[3Dab")
	eqLines(t, s, "", "      ab")
	eqCursor(t, s, 8, 1)
	write(s, "\x1b[1K")
	eqLines(t, s)
	// Save and restore, erase below, insert and delete characters.
	write(s, "\x1b[H0123456789\x1b[1;3H\x1b7\x1b[1;8H\x1b8\x1b[2P\x1b[2@")
	eqLines(t, s, "01  456789")
	write(s, "\x1b[1;5H\x1b[J")
	eqLines(t, s, "01")
}

func TestSGRStripped(t *testing.T) {
	s := New(40, 2)
	write(s, "\x1b[1;31mred\x1b[0m \x1b[38;5;200mpink\x1b[m \x1b[38;2;1;2;3;48;2;9;9;9mrgb\x1b[4:3mcurly\x1b[m")
	eqLines(t, s, "red pink rgbcurly")
	// Coloured blanks at the end of a row are trailing spaces too.
	write(s, "\r\n\x1b[44mblue bg   \x1b[K")
	eqLines(t, s, "red pink rgbcurly", "blue bg")
	// OSC (title, hyperlink) and other strings leave nothing either.
	write(s, "\x1b[H\x1b]0;title\x07\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\x1bP+q544e\x1b\\\x1b_apc\x1b\\")
	eqLines(t, s, "linkpink rgbcurly", "blue bg")
}

func TestWideCharacters(t *testing.T) {
	s := New(20, 3)
	write(s, "中文ab")
	eqLines(t, s, "中文ab")
	eqCursor(t, s, 6, 0)
	write(s, "\r\n😀x👍🏽y")
	eqLines(t, s, "中文ab", "😀x👍🏽y")
	eqCursor(t, s, 6, 1)
	// A ZWJ family, a flag and an emoji-presentation selector: one cluster
	// each, two columns each.
	write(s, "\r\n👨\u200d👩\u200d👧|🇫🇷|☺\ufe0f|")
	eqLines(t, s, "中文ab", "😀x👍🏽y", "👨\u200d👩\u200d👧|🇫🇷|☺\ufe0f|")
	eqCursor(t, s, 9, 2)
	// Overwriting half of a wide character blanks the other half.
	write(s, "\x1b[1;2Hx")
	eqLines(t, s, " x文ab", "😀x👍🏽y", "👨\u200d👩\u200d👧|🇫🇷|☺\ufe0f|")
	// At the right margin xterm's way, not the library's: a wide character
	// that ends in the last column leaves a pending wrap (the library
	// would print the next one over it), and one that does not fit goes
	// to the next line (the library would drop it).
	s = New(5, 3)
	write(s, "abc中文")
	eqLines(t, s, "abc中", "文")
	eqCursor(t, s, 2, 1)
	s = New(5, 3)
	write(s, "abcd中x")
	eqLines(t, s, "abcd", "中x")
	s = New(5, 3)
	write(s, "abc中\r\nx")
	eqLines(t, s, "abc中", "x")
	s = New(5, 3)
	write(s, "abc中\x1b[D\x1b[Dx")
	eqLines(t, s, "abx中")
	s = New(5, 2)
	write(s, "abc中\r\nabcd中xyz中中")
	eqLines(t, s, "中xyz", "中中")
	if got := s.Scrolled(); !slices.Equal(got, []string{"abc中", "abcd"}) {
		t.Fatalf("Scrolled = %q", got)
	}
	// Without autowrap the library's behaviour stays.
	s = New(5, 3)
	write(s, "\x1b[?7labcd中x")
	check(t, s)
}

func TestCombiningMarks(t *testing.T) {
	s := New(10, 2)
	write(s, "e\u0301te a\u0308\u0323b")
	eqLines(t, s, "e\u0301te a\u0308\u0323b")
	eqCursor(t, s, 6, 0)
	// Hangul jamo compose into one syllable-wide cluster.
	write(s, "\r\n\u1100\u1161x")
	eqLines(t, s, "e\u0301te a\u0308\u0323b", "\u1100\u1161x")
	eqCursor(t, s, 3, 1)
}

func TestInvalidUTF8(t *testing.T) {
	s := New(20, 3)
	// A stray byte must not swallow the escape sequence after it.
	write(s, "a\xffb\xe4\x1b[1mc\xed\xa0\x80d\xc0\xaf")
	eqLines(t, s, "a\ufffdb\ufffdc\ufffd\ufffd\ufffdd\ufffd\ufffd")
	// Raw C1 bytes are not controls (0x9b would be CSI, 0x9d the start of
	// an OSC eating everything after it).
	write(s, "\r\n\x9b2J\x9dx\x07y")
	first := "a\ufffdb\ufffdc\ufffd\ufffd\ufffdd\ufffd\ufffd"
	eqLines(t, s, first, "\ufffd2J\ufffdxy")
	// An incomplete sequence waits for the next Write; if that does not
	// complete it, it is replaced.
	write(s, "\r\n\xe4", "\xb8\xad|\xe4", "z")
	eqLines(t, s, first, "\ufffd2J\ufffdxy", "中|\ufffdz")
	// C1 controls that arrive UTF-8 encoded are not shown either.
	write(s, "\x1b[3;1H\x1b[2K\u0085\u009bq")
	eqLines(t, s, first, "\ufffd2J\ufffdxy", "q")
	for _, l := range s.Lines() {
		if !utf8.ValidString(l) {
			t.Fatalf("invalid UTF-8 in %q", l)
		}
	}
}

// stream exercises most of what TestSplit cuts through.
var stream = strings.Join([]string{
	"\x1b[?25l\x1b[H\x1b[2J",
	"\x1b[1;31mred\x1b[0m plain \x1b[38;2;10;20;30mrgb\x1b[m\r\n",
	"中文 wide 😀 emoji 👍🏽 tone 🇫🇷🇩🇪 flags ☺\ufe0f vs16\r\n",
	"family 👨\u200d👩\u200d👧 e\u0301 a\u0308\u0323 combining\r\n",
	"bad \xff\xfe bytes \xe4 cut \xf0\x9f\x98 short\r\n",
	"\x1b]0;a title with 中文\x07\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\\r\n",
	"\x1b[5;10Hmoved\x1b[K\x1b[6;1H\x1b[2Kerased line\x1b[1A\x1b[3Cup",
	"\x1b[10;1H", "1\r\n2\r\n3\r\n4\r\n5\r\n6\r\n7\r\n8\r\n9\r\n10\r\n11\r\n12 scrolls",
	"\x1b[?1049h\x1b[Halt screen \x1b[7mreverse\x1b[m\x1b[?1049l",
	"\x1b[2;5r\x1b[5;1Hregion\r\nscrolls\r\nhere\x1b[r",
	"\x1b[1;1H\x1b[4merm\x1b[24m e\u0301\u0302 end ☺\ufe0f😀",
}, "")

func TestSplitAnywhere(t *testing.T) {
	const cols, rows = 30, 12
	whole := New(cols, rows)
	write(whole, stream)
	check(t, whole)
	wantLines, wantScrolled := whole.Lines(), whole.Scrolled()
	wc, wr := whole.Cursor()
	if len(wantScrolled) == 0 {
		t.Fatal("the stream scrolls nothing")
	}
	same := func(name string, s *Screen, scrolled []string) {
		t.Helper()
		check(t, s)
		if got := s.Lines(); !slices.Equal(got, wantLines) {
			t.Fatalf("%s: Lines\n got %q\nwant %q", name, got, wantLines)
		}
		if !slices.Equal(scrolled, wantScrolled) {
			t.Fatalf("%s: Scrolled\n got %q\nwant %q", name, scrolled, wantScrolled)
		}
		if c, r := s.Cursor(); c != wc || r != wr {
			t.Fatalf("%s: Cursor (%d, %d), want (%d, %d)", name, c, r, wc, wr)
		}
	}
	for i := range len(stream) + 1 {
		s := New(cols, rows)
		write(s, stream[:i])
		scrolled := s.Scrolled()
		_ = s.Lines() // looking in between changes nothing
		write(s, stream[i:])
		same(fmt.Sprintf("split at %d", i), s, append(scrolled, s.Scrolled()...))
	}
	s := New(cols, rows)
	var scrolled []string
	for i := range len(stream) {
		write(s, stream[i:i+1])
		scrolled = append(scrolled, s.Scrolled()...)
		_ = s.Lines()
	}
	same("byte by byte", s, scrolled)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		s := New(cols, rows)
		for rest := stream; rest != ""; {
			n := min(1+rng.IntN(12), len(rest))
			write(s, rest[:n])
			rest = rest[n:]
		}
		same("random cuts", s, s.Scrolled())
	}
}

// TestSplitCluster checks the repair of grapheme clusters cut between
// Writes, the caller looking at the screen in between.
func TestSplitCluster(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"e", "\u0301x"},
		{"e\u0301", "\u0302x"},
		{"ab☺", "\ufe0fx"},
		{"👍", "🏽x"},
		{"🇫", "🇷x"},
		{"👨", "\u200d👩x"},
		{"👨\u200d", "👩x"},
		{"\x1b[31me", "\u0301\x1b[mx"},
		{"1234e", "\u0301x"}, // the cluster at the last column, pending wrap
		{"12345", "\u0301x"}, // the cluster wrapped to the next line
		{"123☺", "\ufe0fx"},  // grows to two columns at the last one
		{"12345\r\n12345\r\n1234e", "\u0301x"},
		{"12345\r\n12345\r\n12345", "\u0301x"}, // wraps and scrolls
		{"1234☺", "\ufe0fx"},                   // grows too wide for the last column
		{"123\x1b[5G☺", "\ufe0fx"},
		{"123中", "\u0301x"},
		{"1234中", "\u0301x"},
	} {
		whole := New(5, 3)
		write(whole, tc.a+tc.b)
		s := New(5, 3)
		write(s, tc.a)
		_ = s.Lines()
		write(s, tc.b)
		check(t, s)
		if got, want := s.Lines(), whole.Lines(); !slices.Equal(got, want) {
			t.Errorf("%q|%q: Lines\n got %q\nwant %q", tc.a, tc.b, got, want)
		}
		c, r := s.Cursor()
		wc, wr := whole.Cursor()
		if c != wc || r != wr {
			t.Errorf("%q|%q: Cursor (%d, %d), want (%d, %d)", tc.a, tc.b, c, r, wc, wr)
		}
		if got, want := s.Scrolled(), whole.Scrolled(); !slices.Equal(got, want) {
			t.Errorf("%q|%q: Scrolled %q, want %q", tc.a, tc.b, got, want)
		}
	}
}

func TestGen(t *testing.T) {
	s := New(20, 4)
	g := s.Gen()
	step := func(input string, changes bool) {
		t.Helper()
		write(s, input)
		check(t, s)
		switch n := s.Gen(); {
		case changes && n != g+1:
			t.Fatalf("after %q Gen = %d, want %d", input, n, g+1)
		case !changes && n != g:
			t.Fatalf("after %q Gen = %d, want it unchanged at %d", input, n, g)
		}
		g = s.Gen()
	}
	step("\x1b[31mhello\x1b[m", true)
	step("\x1b[H\x1b[1;32;44mhello\x1b[m", false) // same text, other colours
	step("\x1b[H\x1b[7mhel\x1b[27mlo", false)
	step("\x1b[3;7H", false)         // cursor only
	step("\x1b[?25l\x1b[2 q", false) // cursor visibility and style
	step("\x1b]0;title\x07", false)
	step("\x1b[Hj", true)
	step("\x1b[7G ", false) // a blank where there was one
	step("\x1b[H\x1b[2J", true)
	step("\x1b[2J", false)
	step("x\b \b", false) // drawn and erased within one Write
	step("\x1b[?1049h", false)
	step("alt", true)
	step("\x1b[?1049l", true) // back to the main screen's (empty) text
	step("\x1b[?1049h\x1b[?1049l", false)
	step("\x1bc", false)
	step("a\x1bc", false)
}

// numbered writes lines first..last, each followed by CRLF.
func numbered(first, last int) string {
	var b strings.Builder
	for i := first; i <= last; i++ {
		fmt.Fprintf(&b, "line %02d\r\n", i)
	}
	return b.String()
}

func names(first, last int) []string {
	var out []string
	for i := first; i <= last; i++ {
		out = append(out, fmt.Sprintf("line %02d", i))
	}
	return out
}

func TestScrolled(t *testing.T) {
	const n = 5
	s := New(20, n)
	write(s, numbered(1, 3*n))
	// 15 lines and a final CRLF: 11 scrolled off, 12..15 and an empty row
	// remain.
	eqLines(t, s, names(12, 15)...)
	if got, want := s.Scrolled(), names(1, 11); !slices.Equal(got, want) {
		t.Fatalf("Scrolled\n got %q\nwant %q", got, want)
	}
	if got := s.Scrolled(); got != nil {
		t.Fatalf("Scrolled again = %q", got)
	}
	// Collected line by line: the same lines, each once, in order.
	s = New(20, n)
	var got []string
	for i := 1; i <= 3*n; i++ {
		write(s, numbered(i, i))
		got = append(got, s.Scrolled()...)
	}
	if want := names(1, 11); !slices.Equal(got, want) {
		t.Fatalf("Scrolled line by line\n got %q\nwant %q", got, want)
	}
	// A redraw of the screen delivers nothing new.
	redraw := "\x1b[2J\x1b[H" + strings.Join(names(12, 15), "\r\n")
	write(s, redraw, redraw, "\x1b[H\x1b[2J\x1b[3J"+strings.Join(names(12, 15), "\r\n"))
	eqLines(t, s, names(12, 15)...)
	if got := s.Scrolled(); got != nil {
		t.Fatalf("a redraw delivered %q", got)
	}
	// Lines that scroll in the same Write as an ED 3 (which empties the
	// library's scrollback) are still delivered.
	write(s, "\x1b[5;1H"+numbered(16, 17)+"\x1b[3J")
	if got, want := s.Scrolled(), names(12, 13); !slices.Equal(got, want) {
		t.Fatalf("Scrolled before ED 3\n got %q\nwant %q", got, want)
	}
	// SGR and wide characters in scrolled lines come out as text.
	s = New(10, 2)
	write(s, "\x1b[31m中x\x1b[m  \r\n\r\n")
	if got := s.Scrolled(); !slices.Equal(got, []string{"中x"}) {
		t.Fatalf("Scrolled = %q", got)
	}
	// Scroll up (SU) and delete line (DL) at the top also scroll lines off.
	s = New(10, 3)
	write(s, "a\r\nb\r\nc\x1b[S\x1b[H\x1b[M")
	eqLines(t, s, "c")
	if got := s.Scrolled(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("Scrolled after SU, DL = %q", got)
	}
}

func TestAltScreen(t *testing.T) {
	const n = 4
	s := New(20, n)
	write(s, "main 1\r\nmain 2")
	main := s.Lines()
	write(s, "\x1b[?1049h")
	if !s.AltScreen() {
		t.Fatal("AltScreen after ESC[?1049h = false")
	}
	eqLines(t, s)
	write(s, numbered(1, 3*n))
	eqLines(t, s, names(10, 12)...)
	if got := s.Scrolled(); got != nil {
		t.Fatalf("the alternate screen scrolled %q", got)
	}
	write(s, "\x1b[?1049l")
	if s.AltScreen() {
		t.Fatal("AltScreen after ESC[?1049l = true")
	}
	eqLines(t, s, main...)
	eqCursor(t, s, 6, 1)
	if got := s.Scrolled(); got != nil {
		t.Fatalf("Scrolled after leaving the alternate screen = %q", got)
	}
	// 47 and 1047 switch as well.
	write(s, "\x1b[?47hX")
	if !s.AltScreen() {
		t.Fatal("AltScreen after ESC[?47h = false")
	}
	write(s, "\x1b[?47l")
	eqLines(t, s, main...)
}

// TestAltScrollbackCleaned scrolls the alternate screen past the point
// where its scrollback is emptied: the screen, cursor and pen come through.
func TestAltScrollbackCleaned(t *testing.T) {
	s := New(20, 4)
	ref := vt.NewEmulator(20, 4)
	go func() { _, _ = ref.Read(make([]byte, 1024)) }()
	in := "\x1b[?1049h\x1b[1;33m" + numbered(1, 3*altCleanAfter) + "中\x1b[Hx"
	write(s, in)
	_, _ = ref.Write([]byte(in))
	if s.t.altRoll >= altCleanAfter {
		t.Fatalf("altRoll = %d: never cleaned", s.t.altRoll)
	}
	last := names(3*altCleanAfter-2, 3*altCleanAfter)
	want := []string{"x" + last[0][1:], last[1], last[2], "中"}
	eqLines(t, s, want...)
	eqCursor(t, s, 1, 0)
	if c := s.t.em.CellAt(0, 0); c.Style.Fg == nil {
		t.Fatal("the pen was lost")
	}
	for y := range 4 {
		for x := range 20 {
			if a, b := s.t.em.CellAt(x, y), ref.CellAt(x, y); !a.Equal(b) {
				t.Fatalf("cell (%d, %d) = %+v, want %+v", x, y, a, b)
			}
		}
	}
	if got := s.Scrolled(); got != nil {
		t.Fatalf("Scrolled = %q", got)
	}
}

func TestScrollRegion(t *testing.T) {
	// What the library does: with a region (rows 2 to 5 of 6 here) the
	// line scrolled out at the region's top is saved, so it is delivered;
	// the header and footer outside the region stay and are not.
	s := New(10, 6)
	write(s, "HEADER\x1b[6;1HFOOTER\x1b[2;5r\x1b[2;1Hr1\r\nr2\r\nr3\r\nr4\r\nr5\r\nr6")
	eqLines(t, s, "HEADER", "r3", "r4", "r5", "r6", "FOOTER")
	if got := s.Scrolled(); !slices.Equal(got, []string{"r1", "r2"}) {
		t.Fatalf("Scrolled = %q", got)
	}
	// A region with left and right margins (DECLRMM) is not full width:
	// nothing is saved.
	s = New(10, 4)
	write(s, "\x1b[?69h\x1b[2;5s\x1b[1;4r\x1b[1;2Hab\r\ncd\r\nef\r\ngh\r\nij")
	if got := s.Scrolled(); got != nil {
		t.Fatalf("Scrolled with side margins = %q", got)
	}
}

func TestReplies(t *testing.T) {
	s := New(20, 5)
	write(s, "\x1b[3;5H\x1b[6n")
	if got := string(s.Replies()); got != "\x1b[3;5R" {
		t.Fatalf("reply to ESC[6n = %q", got)
	}
	if got := s.Replies(); got != nil {
		t.Fatalf("Replies again = %q", got)
	}
	write(s, "\x1b[c")
	if got := string(s.Replies()); got != "\x1b[?62;1;6;22c" {
		t.Fatalf("reply to ESC[c = %q", got)
	}
	write(s, "\x1b[>c\x1b[5n\x1b[?2004$p")
	if got := string(s.Replies()); got != "\x1b[>1;10;0c\x1b[0n\x1b[?2004;2$y" {
		t.Fatalf("replies to DA2, DSR 5, DECRQM = %q", got)
	}
	// A query cut anywhere, the cursor moved by text.
	write(s, "\x1b[H", "abc\x1b", "[", "6", "n")
	if got := string(s.Replies()); got != "\x1b[1;4R" {
		t.Fatalf("reply to a cut ESC[6n = %q", got)
	}
	// Replies accumulate until collected.
	write(s, "\x1b[6n")
	write(s, "\x1b[2;2H\x1b[6n")
	if got := string(s.Replies()); got != "\x1b[1;4R\x1b[2;2R" {
		t.Fatalf("two replies = %q", got)
	}
}

func TestBracketedPaste(t *testing.T) {
	s := New(10, 2)
	if s.BracketedPaste() {
		t.Fatal("on at start")
	}
	write(s, "\x1b[?2004h")
	if !s.BracketedPaste() {
		t.Fatal("off after ESC[?2004h")
	}
	write(s, "\x1b[?2004l")
	if s.BracketedPaste() {
		t.Fatal("on after ESC[?2004l")
	}
	write(s, "\x1b[?", "2004h")
	if !s.BracketedPaste() {
		t.Fatal("off after a cut ESC[?2004h")
	}
	write(s, "\x1bc")
	if s.BracketedPaste() {
		t.Fatal("on after a reset (RIS)")
	}
}

// TestHugeCounts: counts the library would loop over for seconds.
func TestHugeCounts(t *testing.T) {
	start := time.Now()
	s := New(10, 3)
	write(s, "a\x1b[2000000000b")
	// 2e9+1 characters: the last one alone on the last row.
	eqLines(t, s, "aaaaaaaaaa", "aaaaaaaaaa", "a")
	eqCursor(t, s, 1, 2)
	write(s, "\x1b[H\x1b[2000000000X")
	eqLines(t, s, "", "aaaaaaaaaa", "a")
	write(s, "\x1b[2;1H\x1b[2000000000I|\x1b[2;9H\x1b[2000000000Z|")
	eqLines(t, s, "", "|aaaaaaaa|", "a")
	write(s, "\x1b[2000000000@\x1b[2000000000P\x1b[2000000000L\x1b[2000000000M\x1b[2000000000S\x1b[2000000000T")
	check(t, s)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
}

func TestRIS(t *testing.T) {
	s := New(10, 3)
	write(s, "abc\r\ndef\x1b[?6h")
	write(s, "\x1bc")
	eqLines(t, s)
	eqCursor(t, s, 0, 0)
	if s.t.origin {
		t.Fatal("origin mode survives RIS")
	}
	write(s, "x")
	eqLines(t, s, "x")
}

// TestAgainstLibrary: for input the package does not rewrite, the screen
// is the library's.
func TestAgainstLibrary(t *testing.T) {
	in := strings.ReplaceAll(stream, "\x1b[2J", "")
	in = strings.Map(func(r rune) rune {
		if r == utf8.RuneError {
			return 'X'
		}
		return r
	}, strings.ToValidUTF8(in, "X"))
	s := New(30, 12)
	write(s, in)
	ref := vt.NewEmulator(30, 12)
	go func() {
		b := make([]byte, 64)
		for {
			if _, err := ref.Read(b); err != nil {
				return
			}
		}
	}()
	_, _ = ref.Write([]byte(in))
	for y := range 12 {
		for x := range 30 {
			if a, b := s.t.em.CellAt(x, y), ref.CellAt(x, y); !a.Equal(b) {
				t.Fatalf("cell (%d, %d) = %+v, want %+v", x, y, a, b)
			}
		}
	}
	if a, b := s.t.em.CursorPosition(), ref.CursorPosition(); a != b {
		t.Fatalf("cursor %v, want %v", a, b)
	}
}

func TestDiff(t *testing.T) {
	for _, tc := range []struct {
		before, now []string
		want        []Row
	}{
		{nil, nil, nil},
		{[]string{"a", "b"}, []string{"a", "b"}, nil},
		{[]string{"a", "b", "c"}, []string{"a", "x", "c"}, []Row{{1, "x"}}},
		{[]string{"a"}, []string{"b", "c"}, []Row{{0, "b"}, {1, "c"}}},
		{[]string{"a", "b", "c"}, []string{"a"}, nil},
		{[]string{"a", "b"}, []string{"", "b"}, []Row{{0, ""}}},
	} {
		if got := Diff(tc.before, tc.now); !slices.Equal(got, tc.want) {
			t.Errorf("Diff(%q, %q) = %v, want %v", tc.before, tc.now, got, tc.want)
		}
	}
	s := New(10, 3)
	write(s, "a\r\nb")
	before := s.Lines()
	write(s, "\x1b[2;1Hc\x1b[3;1Hd")
	if got, want := Diff(before, s.Lines()), []Row{{1, "c"}, {2, "d"}}; !slices.Equal(got, want) {
		t.Fatalf("Diff = %v, want %v", got, want)
	}
}

func TestLinesIsACopy(t *testing.T) {
	s := New(10, 2)
	write(s, "abc")
	l := s.Lines()
	l[0] = "changed"
	eqLines(t, s, "abc")
}

// TestReaderStops: the goroutine draining a Screen's replies ends once the
// Screen is garbage.
func TestReaderStops(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 50 {
		s := New(10, 2)
		write(s, "\x1b[6n")
		_ = s.Replies()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		if runtime.NumGoroutine() <= before+5 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMarginsBeyondTheScreen: the library panicked on margins past the
// screen's edge (found by FuzzScreen).
func TestMarginsBeyondTheScreen(t *testing.T) {
	s := New(3, 4)
	write(s, "\x1b[?69h\x1b[;7s\x1b[S")
	check(t, s)
	s = New(5, 4)
	write(s, "a\r\nb\r\nc\r\nd\x1b[2;99r\x1b[S\x1b[99;1H\x1b[M\x1b[2L\r\n\r\n")
	// The region is rows 2 to 4: "a" stays, the region's top lines go.
	eqLines(t, s, "a")
	if got := s.Scrolled(); !slices.Equal(got, []string{"b", "c", "d"}) {
		t.Fatalf("Scrolled = %q", got)
	}
}
