// Package screen keeps the screen of a terminal program run under a
// pseudo-terminal (Claude Code's TUI, Codex, …): the child's output goes in
// ([Screen.Write]), the visible text ([Screen.Lines]), the lines that scrolled
// away ([Screen.Scrolled]) and the answers the child expects from its
// terminal ([Screen.Replies]) come out.
//
// # Why github.com/charmbracelet/x/vt
//
// The emulation is github.com/charmbracelet/x/vt, maintained by Charm (the
// Bubble Tea / Lip Gloss people) on top of their ansi parser and the
// ultraviolet cell buffer. It is a full xterm-style emulator, not an ANSI
// stripper: cursor addressing, scroll regions, insert/delete line and
// character, the alternate screen (1047/1049), a scrollback buffer, per-line
// damage tracking (which keeps [Screen.Gen] cheap), grapheme clusters and
// wide characters, and it answers the queries TUIs block on (cursor position
// report, primary and secondary device attributes, DECRQM, colour queries).
//
// # What this package adds
//
//   - Input is made valid UTF-8 before the parser sees it (a stray byte would
//     otherwise swallow the bytes after it, escape sequences included, and
//     lone bytes 0x80-0x9F would act as C1 controls), and an incomplete
//     sequence at the end of a Write waits for the next one.
//   - A grapheme cluster split between two Writes ("e" | U+0301, "☺" |
//     U+FE0F, one flag's two halves) is drawn again whole: the library cuts
//     clusters at the end of every Write. So any split of the input gives the
//     same screen, even when the caller looks in between; the exception is
//     malformed input where a non-ASCII character interrupts an escape
//     sequence.
//   - Wide characters at the right margin behave as in xterm: one that does
//     not fit wraps to the next line (the library drops it), one that ends in
//     the last column leaves a pending wrap (the library lets the next
//     character overwrite it).
//   - ED 2 (ESC[2J) clears without copying the screen into the scrollback (the
//     library copies it), so a full redraw adds nothing to [Screen.Scrolled].
//   - Counts that would make the library loop for seconds (REP, ECH, CHT, CBT
//     with a count of 2^31) are clamped to what makes a difference, and
//     scroll margins past the screen's edge (on which the library panics)
//     to the edge.
//   - DSR 5 is answered ESC[0n as in xterm (the library says ESC[?0n), and
//     mode 47 switches screens like 1047.
//   - The library writes its replies into a synchronous pipe; one goroutine
//     per Screen drains it, stopped by a cleanup when the Screen is garbage.
//   - The alternate screen's own scrollback (never read, capped by the library
//     at 10000 lines, each push into a full one shifting all of it) is
//     emptied every 1000 scrolled lines.
//   - A panic inside the library is recovered in Write; the screen stays
//     usable (see [Screen.Panics]).
//
// # Lines
//
// A row's text is its cells' grapheme clusters in order, a wide character
// once, trailing blanks trimmed (coloured ones too). A cluster that occupies
// no column (a combining mark right after an escape sequence, which the
// library keeps in a zero-width cell the next character overwrites) is left
// out, so no row is ever wider than the screen.
//
// # Scrolled lines
//
// A line goes to [Screen.Scrolled] when the library puts it into the main
// screen's scrollback: a line feed (or IND, SU, or DL at the top margin)
// scrolls the top line of the scroll region away while that region spans the
// full width. With a DECSTBM region that does not start at the first row,
// the library still saves the region's top line: such lines are delivered
// too, the rows above the region (a fixed header) are not. Blank lines that
// scroll away are delivered as "". Lines scrolled on the alternate screen
// never are.
//
// # Gen
//
// [Screen.Gen] changes when, after a Write, the text of a visible row differs
// from what it was after the previous Write: colours, attributes, the cursor
// and a switch between screens showing the same text do not count. Only the
// rows the library marked as touched are re-rendered and compared.
package screen
