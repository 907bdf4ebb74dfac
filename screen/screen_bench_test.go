package screen

import (
	"fmt"
	"strings"
	"testing"
)

const benchCols, benchRows = 120, 40

// inkStream imitates an Ink TUI such as Claude Code's on the main screen:
// each frame erases the previous one line by line (ESC[2K ESC[1A), redraws
// a coloured box with a spinner and a prompt, and now and then the static
// output above it grows by a few lines, which scrolls.
func inkStream(frames int) []byte {
	var b strings.Builder
	b.WriteString("\x1b[?25l\x1b[?2004h\x1b[H\x1b[2J")
	spin := []string{"✻", "✽", "✶", "✳", "✢", "·"}
	bar := strings.Repeat("─", benchCols-2)
	const height = 14
	for f := range frames {
		if f > 0 {
			for range height - 1 {
				b.WriteString("\x1b[2K\x1b[1A")
			}
			b.WriteString("\x1b[2K\x1b[G")
		}
		if f%10 == 9 {
			// Static output: a reply paragraph, some of it wide.
			for i := range 4 {
				fmt.Fprintf(&b, "\x1b[38;2;215;119;87m⏺\x1b[39m Step %d.%d: edited \x1b[1msession/screen/screen.go\x1b[22m — 中文说明 %d lines changed\r\n", f, i, f*i)
			}
		}
		fmt.Fprintf(&b, "\x1b[38;5;174m╭%s╮\x1b[39m\r\n", bar)
		for i := range height - 7 {
			line := fmt.Sprintf(" %s tool call %03d: \x1b[2mread file \x1b[22m\x1b[36mpath/to/file_%d.go\x1b[39m (%d lines)", spin[(f+i)%len(spin)], f, i, f*7+i)
			pad := benchCols - 2 - len([]rune(stripSGR(line)))
			fmt.Fprintf(&b, "\x1b[38;5;174m│\x1b[39m%s%s\x1b[38;5;174m│\x1b[39m\r\n", line, strings.Repeat(" ", max(pad, 0)))
		}
		fmt.Fprintf(&b, "\x1b[38;5;174m╰%s╯\x1b[39m\r\n", bar)
		fmt.Fprintf(&b, "\x1b[38;2;215;119;87m%s\x1b[39m \x1b[38;2;215;119;87mThinking…\x1b[39m \x1b[2m(%ds · ↓ %d tokens · esc to interrupt)\x1b[22m\r\n", spin[f%len(spin)], f/10, f*13)
		fmt.Fprintf(&b, "\x1b[2m╭%s╮\x1b[22m\r\n", bar)
		fmt.Fprintf(&b, "\x1b[2m│\x1b[22m > %-*s\x1b[2m│\x1b[22m\r\n", benchCols-5, "")
		fmt.Fprintf(&b, "\x1b[2m╰%s╯\x1b[22m\r\n", bar)
		b.WriteString("  \x1b[2m? for shortcuts\x1b[22m")
	}
	return []byte(b.String())
}

// fullStream imitates a full-screen TUI on the alternate screen (Codex,
// vim, htop): cursor-addressed updates of a box, a list and a status line.
func fullStream(frames int) []byte {
	var b strings.Builder
	b.WriteString("\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J")
	for f := range frames {
		b.WriteString("\x1b[?2026h")
		fmt.Fprintf(&b, "\x1b[1;1H\x1b[44;97m %-*s\x1b[m", benchCols-1, fmt.Sprintf("model: gpt · frame %d", f))
		for y := 2; y < benchRows-1; y++ {
			if (y+f)%3 != 0 {
				continue // only some rows change each frame
			}
			fmt.Fprintf(&b, "\x1b[%d;1H\x1b[38;5;%dm│\x1b[m %-*s\x1b[38;5;%dm│\x1b[m", y, 60+y, benchCols-4, fmt.Sprintf("item %d of frame %d: \x1b[1mbold\x1b[22m and \x1b[3mitalic\x1b[23m text", y, f), 60+y)
		}
		fmt.Fprintf(&b, "\x1b[%d;1H\x1b[7m %-*s\x1b[27m\x1b[K", benchRows, benchCols-2, "NORMAL  ccbridge  utf-8  ln 1, col 1")
		b.WriteString("\x1b[?2026l")
	}
	return []byte(b.String())
}

// plainStream is a shell printing ordinary lines, which scroll.
func plainStream(lines int) []byte {
	var b strings.Builder
	for i := range lines {
		fmt.Fprintf(&b, "%6d  -rw-r--r-- 1 user user  %8d Jan  2 15:04 file_%d.go\r\n", i, i*37, i)
	}
	return []byte(b.String())
}

func stripSGR(s string) string {
	var out strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b {
			for i < len(s) && s[i] != 'm' {
				i++
			}
			continue
		}
		out.WriteByte(s[i])
	}
	return out.String()
}

// BenchmarkWrite feeds a stream in pty-read-sized pieces (4 KiB), polling
// Gen, Scrolled and Replies after each, as the caller does.
func BenchmarkWrite(b *testing.B) {
	for _, bc := range []struct {
		name   string
		stream []byte
	}{
		{"ink", inkStream(200)},
		{"fullscreen", fullStream(200)},
		{"plain", plainStream(20000)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.stream)))
			b.ReportAllocs()
			s := New(benchCols, benchRows)
			for b.Loop() {
				for p := bc.stream; len(p) > 0; {
					n := min(4096, len(p))
					s.Write(p[:n])
					p = p[n:]
					_ = s.Gen()
					_ = s.Scrolled()
					_ = s.Replies()
				}
			}
			if s.Panics() != 0 {
				b.Fatal("library panics")
			}
		})
	}
}

func BenchmarkLines(b *testing.B) {
	s := New(benchCols, benchRows)
	s.Write(inkStream(20))
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Lines()
	}
}

// TestBenchStreams checks that the benchmark streams draw what they should.
func TestBenchStreams(t *testing.T) {
	s := New(benchCols, benchRows)
	s.Write(inkStream(10))
	check(t, s)
	lines := s.Lines()
	all := strings.Join(lines, "\n")
	if strings.Count(all, "╭") != 2 || strings.Count(all, "Thinking…") != 1 || strings.Count(all, "Step") != 4 ||
		lines[4+13] != "  ? for shortcuts" {
		t.Fatalf("ink stream:\n%s", all)
	}
	if sc := s.Scrolled(); len(sc) != 0 {
		t.Fatalf("ink stream scrolled %q", sc)
	}
	s = New(benchCols, benchRows)
	s.Write(fullStream(10))
	check(t, s)
	if l := s.Lines(); !strings.HasPrefix(l[0], " model: gpt · frame 9") || !s.AltScreen() {
		t.Fatalf("fullscreen stream:\n%s", strings.Join(l, "\n"))
	}
}
