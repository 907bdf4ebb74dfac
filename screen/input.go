package screen

import (
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/ansi/parser"
)

// input follows the byte stream on its way into the library: it holds back
// an incomplete UTF-8 sequence at the end of a Write, and it runs the
// library's own parser state machine (the same transition table) alongside,
// so as to know where the parser is between Writes.
type input struct {
	tail     [utf8.UTFMax]byte // incomplete UTF-8 sequence held back
	tailN    int
	state    parser.State
	utf8Left int // continuation bytes the parser still collects
}

// ground reports whether the parser is in its ground state (not inside an
// escape sequence or a UTF-8 sequence).
func (in *input) ground() bool {
	return in.state == parser.GroundState && in.utf8Left == 0
}

// clean reports whether b can be fed as it is: nothing held back, and b is
// valid UTF-8 ending on a complete sequence.
func (in *input) clean(b []byte) bool {
	return in.tailN == 0 && utf8.Valid(b)
}

// firstByte is the first byte sanitize would produce from b (0 if none).
func (in *input) firstByte(b []byte) byte {
	if in.tailN > 0 {
		return in.tail[0]
	}
	if len(b) > 0 {
		return b[0]
	}
	return 0
}

// replacement is U+FFFD, which replaces every byte that is not part of a
// valid UTF-8 sequence.
const replacement = "\uFFFD"

// sanitize appends to dst the held-back bytes and b as valid UTF-8: each
// byte that cannot start or continue a valid sequence becomes U+FFFD (as
// utf8.DecodeRune reads it), and an incomplete sequence at the end is held
// back for the next call. The library's parser, given an invalid lead byte,
// would take the next bytes as its continuation whatever they are (an ESC
// included), and it treats lone bytes 0x80-0x9F as C1 controls (0x9B as CSI,
// 0x9D as the start of an OSC swallowing all that follows).
func (in *input) sanitize(dst, b []byte) []byte {
	for in.tailN > 0 {
		var tmp [2 * utf8.UTFMax]byte
		k := copy(tmp[:], in.tail[:in.tailN])
		k += copy(tmp[k:], b)
		r, size := utf8.DecodeRune(tmp[:k])
		if r == utf8.RuneError && size <= 1 {
			if !utf8.FullRune(tmp[:k]) {
				// Still incomplete: b is shorter than what is missing.
				in.tailN += copy(in.tail[in.tailN:], b)
				return dst
			}
			dst = append(dst, replacement...)
			in.tailN = copy(in.tail[:], in.tail[1:in.tailN])
			continue
		}
		// The held bytes are the start of a sequence, never a whole one,
		// so size > in.tailN.
		dst = append(dst, tmp[:size]...)
		b = b[size-in.tailN:]
		in.tailN = 0
	}
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			j := i + 1
			for j < len(b) && b[j] < utf8.RuneSelf {
				j++
			}
			dst = append(dst, b[i:j]...)
			i = j
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			if !utf8.FullRune(b[i:]) {
				in.tailN = copy(in.tail[:], b[i:])
				return dst
			}
			dst = append(dst, replacement...)
			i++
			continue
		}
		dst = append(dst, b[i:i+size]...)
		i += size
	}
	return dst
}

// scanned is what scan learns about the bytes of one Write.
type scanned struct {
	lineFeeds int // LF, VT and FF executed: each may scroll a line
	// cuts are grapheme clusters to feed on their own, in order: the wide
	// ones, and the final one when the bytes end with printable characters
	// the library will cut into clusters together.
	cuts []cut
}

// cut is one grapheme cluster, data[at:end], of width columns.
type cut struct {
	at, end, width int
	final          bool
}

// scan runs data (valid UTF-8, see sanitize) through the parser's state
// machine, in step with the library's parser (ansi.Parser.Advance), and
// finds the grapheme clusters the caller must watch.
//
// The library holds printed characters back until something flushes them
// (an executed control, a dispatched sequence, the end of a Write; a
// printable ASCII character flushes what came before it), then cuts them
// into grapheme clusters. scan does the same to the runs it can follow:
// characters printed from the ground state since the last flush.
func (in *input) scan(data []byte, cuts []cut) scanned {
	sc := scanned{cuts: cuts[:0]}
	clean := true     // only printing since the last flush (the last Write's end is one)
	seg := 0          // where the library's pending characters start, if clean
	nonASCII := false // data[seg:] holds a non-ASCII character
	wide := false     // data[seg:] may hold a wide cluster
	closeSeg := func(end int) {
		if clean && wide {
			sc.cuts = clusters(sc.cuts, data, seg, end, false)
		}
		nonASCII, wide = false, false
	}
	for i, b := range data {
		if in.utf8Left > 0 {
			in.utf8Left--
			if in.utf8Left == 0 {
				in.state = parser.GroundState
			}
			continue
		}
		state, action := parser.Table.Transition(in.state, b)
		if b == ansi.ESC && in.state == parser.EscapeState {
			action = parser.ExecuteAction // as the library's parser does
		}
		if state == parser.Utf8State {
			// A lead byte: the parser collects the sequence and prints the
			// rune, whatever state it was in.
			if in.state == parser.GroundState {
				nonASCII = true
				if !wide {
					r, _ := utf8.DecodeRune(data[i:])
					wide = !narrow(r)
				}
			} else {
				closeSeg(i)
				clean = false
			}
			in.utf8Left = utf8Len(b) - 1
			in.state = state
			if in.utf8Left <= 0 { // cannot happen with valid UTF-8
				in.utf8Left = 0
				in.state = parser.GroundState
			}
			continue
		}
		switch action {
		case parser.PrintAction:
			// Printable ASCII (ground state only): the library flushes what
			// it holds and holds this one.
			closeSeg(i)
			clean = true
			seg = i
		case parser.ExecuteAction, parser.DispatchAction:
			closeSeg(i)
			clean = true
			seg = i + 1
			if action == parser.ExecuteAction && b >= ansi.LF && b <= ansi.FF {
				sc.lineFeeds++
			}
		default:
			closeSeg(i)
			clean = false
		}
		in.state = state
	}
	if clean && in.ground() && seg < len(data) {
		if wide {
			sc.cuts = clusters(sc.cuts, data, seg, len(data), true)
		} else if nonASCII {
			at, w := lastCluster(data, seg)
			sc.cuts = append(sc.cuts, cut{at: at, end: len(data), width: w, final: true})
		} else {
			sc.cuts = append(sc.cuts, cut{at: seg, end: len(data), width: 1, final: true})
		}
	}
	return sc
}

// clusters appends the wide grapheme clusters of data[seg:end], cut the way
// the library cuts its pending characters, and if final the last cluster.
func clusters(cuts []cut, data []byte, seg, end int, final bool) []cut {
	for rest := data[seg:end]; len(rest) > 0; {
		c, w := ansi.FirstGraphemeCluster(rest, ansi.GraphemeWidth)
		if len(c) == 0 {
			break
		}
		last := len(c) == len(rest)
		if w > 1 || (final && last) {
			cuts = append(cuts, cut{at: seg, end: seg + len(c), width: w, final: final && last})
		}
		seg += len(c)
		rest = rest[len(c):]
	}
	return cuts
}

// lastCluster is the offset and width of the last grapheme cluster of
// data[seg:], cut the way the library cuts its pending characters.
func lastCluster(data []byte, seg int) (int, int) {
	w := 0
	for rest := data[seg:]; len(rest) > 0; {
		c, cw := ansi.FirstGraphemeCluster(rest, ansi.GraphemeWidth)
		w = cw
		if len(c) == 0 || len(c) == len(rest) {
			break
		}
		seg += len(c)
		rest = rest[len(c):]
	}
	return seg, w
}

// narrow reports whether no grapheme cluster starting with r, or holding r
// after its start, can be wide: the first East Asian wide character is
// U+1100, emoji that are wide by default start at U+231A, and the selectors
// and modifiers that widen a cluster are above U+FE00. Box drawing, block
// elements and general punctuation, frequent in TUIs, are narrow too. It
// spares cutting every run of such characters into clusters.
func narrow(r rune) bool {
	return r < 0x1100 || (r >= 0x2010 && r <= 0x2027) || (r >= 0x2500 && r <= 0x259f)
}

func utf8Len(b byte) int {
	switch {
	case b < 0x80:
		return 1
	case b&0xE0 == 0xC0:
		return 2
	case b&0xF0 == 0xE0:
		return 3
	case b&0xF8 == 0xF0:
		return 4
	}
	return 1
}

// repair remembers the grapheme cluster a Write ended with and where it
// landed. The library cuts its pending characters into clusters at the end
// of every Write, so a cluster split between two Writes ("e" then U+0301, an
// emoji then U+FE0F or a skin tone, one flag's two halves) would end up as
// two cells, the second one overwritten by the next character. When the
// next Write begins with characters that extend the cluster, the cursor is
// sent back to it and the cluster is written again, followed by the Write:
// the library then sees the characters together, as in one Write. (The old
// cells are erased first: the cluster may have grown too wide for them.)
type repair struct {
	ok      bool
	cluster []byte
	width   int
	x, y    int
	scratch []byte
}

// set records cluster, which the cursor moved over from (x0, y0) to
// (x1, y1): it landed at (x0, y0) unless it wrapped to the next line
// (pending wrap), where it landed in column 0.
func (r *repair) set(cluster []byte, width, x0, y0, x1, y1 int) {
	if len(cluster) > 64 {
		return
	}
	r.cluster = append(r.cluster[:0], cluster...)
	r.width = width
	r.x, r.y = x0, y0
	if y1 != y0 || x1 < x0 {
		r.x, r.y = 0, y1
	}
	r.ok = true
}

// extends reports whether data, the next bytes to be fed, begins with
// characters that join the recorded cluster.
func (r *repair) extends(data []byte) bool {
	k := 0
	for k < len(data) && k < 256 && data[k] >= utf8.RuneSelf {
		k++
	}
	if k == 0 {
		return false // ASCII never extends a cluster
	}
	r.scratch = append(append(r.scratch[:0], r.cluster...), data[:k]...)
	c, _ := ansi.FirstGraphemeCluster(r.scratch, ansi.GraphemeWidth)
	return len(c) > len(r.cluster)
}
