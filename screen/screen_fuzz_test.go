package screen

import (
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// validLine checks one line of output: valid UTF-8, no control character
// (C0, DEL, C1), at most cols columns wide.
func validLine(t *testing.T, what string, l string, cols int) {
	t.Helper()
	if !utf8.ValidString(l) {
		t.Fatalf("%s %q: invalid UTF-8", what, l)
	}
	for _, r := range l {
		if r < 0x20 || (r >= 0x7f && r < 0xa0) {
			t.Fatalf("%s %q: control character %U", what, l, r)
		}
	}
	if w := ansi.StringWidth(l); w > cols {
		t.Fatalf("%s %q: %d columns wide, the screen has %d", what, l, w, cols)
	}
}

// invariants checks what must hold after every Write.
func invariants(t *testing.T, s *Screen, cols, rows int) {
	t.Helper()
	lines := s.Lines()
	if len(lines) != rows {
		t.Fatalf("Lines has %d rows, want %d", len(lines), rows)
	}
	for _, l := range lines {
		validLine(t, "row", l, cols)
	}
	if f := fresh(s); !slices.Equal(lines, f) {
		t.Fatalf("cached Lines differ from the cells:\ncached %q\ncells  %q", lines, f)
	}
	for _, l := range s.Scrolled() {
		validLine(t, "scrolled line", l, cols)
	}
	if c, r := s.Cursor(); c < 0 || c >= cols || r < 0 || r >= rows {
		t.Fatalf("Cursor (%d, %d) outside %dx%d", c, r, cols, rows)
	}
	_ = s.Replies()
	_ = s.Gen()
	_ = s.AltScreen()
	_ = s.BracketedPaste()
	if n := s.Panics(); n != 0 {
		t.Fatalf("the library panicked %d times (recovered)", n)
	}
}

// FuzzScreen feeds any bytes, cut anywhere, to screens of various sizes.
// cuts gives the lengths of the pieces (cycled; 0 means 1), dims the size.
func FuzzScreen(f *testing.F) {
	for _, seed := range []string{
		stream,
		"\x1b[6n\x1b[c\x1b[>c\x1b[5n\x1b[?6n\x1b[?2004$p\x1b[2$p\x1b]10;?\x07\x1b]11;?\x1b\\\x1b[?2048h",
		"\x1b[?1049h" + numbered(1, 40) + "\x1b[?1049l",
		"\x1b[2;4r\x1b[3;1H" + numbered(1, 10) + "\x1b[r\x1b[?69h\x1b[2;5s\x1b[S\x1b[T\x1b[L\x1b[M",
		"a\x1b[2000000000b\x1b[2000000000X\x1b[2000000000I\x1b[2000000000Z\x1b[99999999999999999999@",
		"中文中文中文中文😀😀😀👨\u200d👩\u200d👧e\u0301\u0302\u0303🇫🇷🇩🇪☺\ufe0f\x1b[?7l中文中文中文中文\x1b[?7h",
		"\x1b(0lqqqk\x1b(B\x0e\x0f\x1bn\x1bo\x1b#8\x1bc\x1b[?6h\x1b[5;5H\x1b[?6l",
		"\xff\xfe\xe4\x1b\x9b\x9d\xc2\x9b\xed\xa0\x80\xf4\x90\x80\x80\x1bP\x1b_\x1b^\x1bX",
		"\x1b[1;31;4:3;58:2::1:2:3mx\x1b]8;id=1;http://a\x07y\x1b]8;;\x07\x1b[38:5:1m",
	} {
		f.Add([]byte(seed), []byte{1, 3, 7, 0, 64}, uint16(30+97*11))
		f.Add([]byte(seed), []byte{255}, uint16(4+97*2))
		f.Add([]byte(seed), []byte{1}, uint16(0))
	}
	f.Fuzz(func(t *testing.T, data, cuts []byte, dims uint16) {
		cols := 1 + int(dims%97)
		rows := 1 + int(dims/97%31)
		s := New(cols, rows)
		for i := 0; len(data) > 0; i++ {
			n := 1
			if len(cuts) > 0 {
				n = max(int(cuts[i%len(cuts)]), 1)
			}
			n = min(n, len(data))
			s.Write(data[:n])
			data = data[n:]
			invariants(t, s, cols, rows)
		}
	})
}
