package framing

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
)

const ki = 1 << 10
const mi = 1 << 20

// item is one result of ReadLine: a line, or a skipped line's size.
type item struct {
	line    string
	skipped int64 // > 0 for a *LineTooLongError
}

func (it item) String() string {
	if it.skipped > 0 {
		return fmt.Sprintf("skipped(%d)", it.skipped)
	}
	if len(it.line) > 40 {
		return fmt.Sprintf("%q...(%d bytes)", it.line[:40], len(it.line))
	}
	return fmt.Sprintf("%q", it.line)
}

func line(s string) item     { return item{line: s} }
func skipped(n int64) item   { return item{skipped: n} }
func pat(n, seed int) string { return string(patBytes(n, seed)) }

// patBytes returns n bytes of letters that vary with position, so a shifted
// or duplicated chunk shows up as a mismatch.
func patBytes(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte((i*7+seed)%26)
	}
	return b
}

// readLines calls ReadLine until it returns an error other than a
// *LineTooLongError, and returns the items and that error.
func readLines(t testing.TB, r *Reader, wantMax int64) ([]item, error) {
	t.Helper()
	items, _, err := readLinesHeads(t, r, wantMax)
	return items, err
}

// readLinesHeads is readLines that also returns the Head of every
// *LineTooLongError, in order.
func readLinesHeads(t testing.TB, r *Reader, wantMax int64) ([]item, []string, error) {
	t.Helper()
	var items []item
	var heads []string
	for range 1 << 20 {
		b, err := r.ReadLine()
		var tl *LineTooLongError
		switch {
		case err == nil:
			if bytes.IndexByte(b, '\n') >= 0 {
				t.Fatalf("line contains '\\n': %q", b)
			}
			if len(b) == 0 {
				t.Fatalf("ReadLine returned an empty line")
			}
			items = append(items, line(string(b)))
		case errors.As(err, &tl):
			if b != nil {
				t.Fatalf("ReadLine returned %d bytes with %v", len(b), err)
			}
			if !errors.Is(err, ErrLineTooLong) {
				t.Fatalf("errors.Is(%v, ErrLineTooLong) = false", err)
			}
			if tl.Max != wantMax {
				t.Fatalf("LineTooLongError.Max = %d, want %d", tl.Max, wantMax)
			}
			items = append(items, skipped(tl.Size))
			heads = append(heads, string(tl.Head))
		default:
			if b != nil {
				t.Fatalf("ReadLine returned %d bytes with %v", len(b), err)
			}
			return items, heads, err
		}
	}
	t.Fatal("ReadLine never returned an error")
	return nil, nil, nil
}

// modelHeads is the Head of every line over max in data.
func modelHeads(data []byte, max int) []string {
	var heads []string
	for _, p := range bytes.Split(data, []byte("\n")) {
		if p = dropCR(p); len(p) > max {
			heads = append(heads, string(p[:min(len(p), MaxHead)]))
		}
	}
	return heads
}

func diffItems(t testing.TB, got, want []item) {
	t.Helper()
	for i := range max(len(got), len(want)) {
		switch {
		case i >= len(got):
			t.Fatalf("item %d: missing, want %v (got %d items, want %d)", i, want[i], len(got), len(want))
		case i >= len(want):
			t.Fatalf("item %d: extra %v (got %d items, want %d)", i, got[i], len(got), len(want))
		case got[i] != want[i]:
			t.Fatalf("item %d: got %v, want %v", i, got[i], want[i])
		}
	}
}

// modelLines is what ReadLine must return for data with limit max,
// computed the simple way.
func modelLines(data []byte, max int) []item {
	var items []item
	parts := bytes.Split(data, []byte("\n"))
	for _, p := range parts {
		p = dropCR(p)
		switch {
		case len(p) == 0:
		case len(p) > max:
			items = append(items, skipped(int64(len(p))))
		default:
			items = append(items, line(string(p)))
		}
	}
	return items
}

// readers wraps an input in the io.Readers each case runs through.
var readers = []struct {
	name string
	wrap func(io.Reader) io.Reader
	max  int // skip inputs larger than this (slow readers); 0 = no limit
}{
	{"plain", func(r io.Reader) io.Reader { return r }, 0},
	{"half", iotest.HalfReader, 0},
	{"dataerr", iotest.DataErrReader, 0},
	{"onebyte", iotest.OneByteReader, 400 * ki},
}

func TestReadLine(t *testing.T) {
	type tc struct {
		name    string
		in      string
		maxLine int
		want    []item
	}
	cases := []tc{
		{"empty", "", 0, nil},
		{"simple", "a\nb\n", 0, []item{line("a"), line("b")}},
		{"crlf", "a\r\nb\r\n", 0, []item{line("a"), line("b")}},
		{"mixed terminators", "a\r\nb\nc\r\n", 0, []item{line("a"), line("b"), line("c")}},
		{"blank lines", "\n\n a\n\n\nb\n\n", 0, []item{line(" a"), line("b")}},
		{"only blank", "\n\r\n\n\r\n\r", 0, nil},
		{"lone CR lines", "\r\n\r\na\r\n\r\n\r\nb\r\n\r", 0, []item{line("a"), line("b")}},
		{"CR kept inside", "a\rb\n\ra\n", 0, []item{line("a\rb"), line("\ra")}},
		{"two CRs", "a\r\r\n", 0, []item{line("a\r")}},
		{"no trailing newline", "a\nb", 0, []item{line("a"), line("b")}},
		{"no trailing newline CR", "a\nb\r", 0, []item{line("a"), line("b")}},
		{"single unterminated", "{}", 0, []item{line("{}")}},
		{"limit exact", pat(100, 1) + "\n" + "ok\n", 100, []item{line(pat(100, 1)), line("ok")}},
		{"limit exact CRLF", pat(100, 1) + "\r\nok\n", 100, []item{line(pat(100, 1)), line("ok")}},
		{"limit exact at EOF with CR", pat(100, 1) + "\r", 100, []item{line(pat(100, 1))}},
		{"over limit by one", pat(101, 1) + "\nok\n", 100, []item{skipped(101), line("ok")}},
		{"over limit by one CRLF", pat(101, 1) + "\r\nok\n", 100, []item{skipped(101), line("ok")}},
		{"over limit then good", pat(5000, 2) + "\n" + pat(10, 3) + "\n", 100,
			[]item{skipped(5000), line(pat(10, 3))}},
		{"over limit in a row", pat(2000, 1) + "\n" + pat(70*ki, 2) + "\r\n" + pat(5*mi+3, 3) + "\n" + "ok\n", 1000,
			[]item{skipped(2000), skipped(70 * ki), skipped(5*mi + 3), line("ok")}},
		{"over limit between good", "a\n" + pat(200, 1) + "\nb\n" + pat(300, 1) + "\n\nc", 100,
			[]item{line("a"), skipped(200), line("b"), skipped(300), line("c")}},
		{"over limit at EOF", "a\n" + pat(200, 1), 100, []item{line("a"), skipped(200)}},
		{"over limit at EOF CR", "a\n" + pat(200, 1) + "\r", 100, []item{line("a"), skipped(200)}},
		{"limit above buffer", pat(100*ki, 1) + "\n" + pat(100*ki+1, 2) + "\r\n" + pat(300*ki, 3) + "\n" + pat(100*ki, 4) + "\r\nend", 100 * ki,
			[]item{line(pat(100*ki, 1)), skipped(100*ki + 1), skipped(300 * ki), line(pat(100*ki, 4)), line("end")}},
	}
	// Lines of many sizes around the buffer size, alone and between others.
	for _, n := range []int{1, 200, 64*ki - 2, 64*ki - 1, 64 * ki, 64*ki + 1, 64*ki + 2, 128*ki - 1, 128 * ki, 3*mi + 5} {
		for _, term := range []string{"\n", "\r\n"} {
			big := pat(n, n)
			cases = append(cases,
				tc{fmt.Sprintf("size %d %q", n, term), big + term, 0, []item{line(big)}},
				tc{fmt.Sprintf("size %d %q between", n, term), "x" + term + big + term + "y" + term + big, 0,
					[]item{line("x"), line(big), line("y"), line(big)}},
			)
		}
	}
	// A run of lines whose ends fall at many offsets in the buffer.
	var run strings.Builder
	var runWant []item
	for i := range 300 {
		s := pat(i*37%1500+1, i)
		run.WriteString(s)
		run.WriteString([]string{"\n", "\r\n", "\n\n"}[i%3])
		runWant = append(runWant, line(s))
	}
	cases = append(cases, tc{"many lines", run.String(), 0, runWant})

	for _, c := range cases {
		wantMax := int64(c.maxLine)
		if c.maxLine <= 0 {
			wantMax = DefaultMaxLine
		}
		if model := modelLines([]byte(c.in), int(wantMax)); !itemsEqual(model, c.want) {
			t.Fatalf("%s: test case disagrees with the model: %v", c.name, model)
		}
		for _, rd := range readers {
			if rd.max > 0 && len(c.in) > rd.max {
				continue
			}
			t.Run(c.name+"/"+rd.name, func(t *testing.T) {
				r := NewReader(rd.wrap(strings.NewReader(c.in)), c.maxLine)
				got, err := readLines(t, r, wantMax)
				if err != io.EOF {
					t.Fatalf("final error = %v, want io.EOF", err)
				}
				diffItems(t, got, c.want)
				if r.Buffered() != 0 {
					t.Errorf("Buffered() = %d at EOF", r.Buffered())
				}
			})
		}
	}
}

func itemsEqual(a, b []item) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestReadLineReusesBuffer checks that a steady stream of long lines does
// not allocate per line once the buffer has grown.
func TestReadLineReusesBuffer(t *testing.T) {
	block := bytes.Repeat(append(patBytes(mi, 1), '\n'), 4)
	r := NewReader(&loopReader{data: block}, 0)
	for range 3 {
		if _, err := r.ReadLine(); err != nil {
			t.Fatal(err)
		}
	}
	allocs := testing.AllocsPerRun(20, func() {
		if b, err := r.ReadLine(); err != nil || len(b) != mi {
			t.Fatalf("ReadLine = %d bytes, %v", len(b), err)
		}
	})
	if allocs != 0 {
		t.Errorf("ReadLine allocates %v times per 1 MiB line", allocs)
	}
}

func TestReadLineDefaultMax(t *testing.T) {
	for _, m := range []int{0, -1} {
		r := NewReader(strings.NewReader(""), m)
		if r.max != DefaultMaxLine {
			t.Errorf("NewReader(_, %d).max = %d, want DefaultMaxLine", m, r.max)
		}
	}
}

var errBoom = errors.New("boom")

func TestReadLineErrorMidLine(t *testing.T) {
	for _, rd := range readers {
		t.Run(rd.name, func(t *testing.T) {
			in := io.MultiReader(strings.NewReader("a\r\n\nb\nhalf a li"), iotest.ErrReader(errBoom))
			r := NewReader(rd.wrap(in), 0)
			got, err := readLines(t, r, DefaultMaxLine)
			diffItems(t, got, []item{line("a"), line("b")})
			if !errors.Is(err, errBoom) {
				t.Fatalf("error = %v, want one wrapping %v", err, errBoom)
			}
			if err == errBoom {
				t.Errorf("error is not wrapped")
			}
			// The error is sticky, and the partial line never comes out.
			for range 3 {
				if b, err2 := r.ReadLine(); b != nil || err2 != err {
					t.Fatalf("after error: ReadLine = %q, %v; want nil, %v", b, err2, err)
				}
				if seg, _, _, err2 := r.ReadSegment(); seg != nil || err2 != err {
					t.Fatalf("after error: ReadSegment = %q, %v; want nil, %v", seg, err2, err)
				}
			}
		})
	}
}

// dataErrReader returns its data and err from one Read call.
type dataErrReader struct {
	data string
	err  error
	done bool
}

func (d *dataErrReader) Read(p []byte) (int, error) {
	if d.done {
		return 0, d.err
	}
	d.done = true
	return copy(p, d.data), d.err
}

func TestReadLineDataWithError(t *testing.T) {
	// Complete lines that arrive with the error are still returned.
	r := NewReader(&dataErrReader{data: "x\ny\r\nz", err: errBoom}, 0)
	got, err := readLines(t, r, DefaultMaxLine)
	diffItems(t, got, []item{line("x"), line("y")})
	if !errors.Is(err, errBoom) {
		t.Fatalf("error = %v, want %v", err, errBoom)
	}
}

func TestReadLineErrorWhileSkipping(t *testing.T) {
	in := io.MultiReader(strings.NewReader("a\n"+pat(300*ki, 1)), iotest.ErrReader(errBoom))
	r := NewReader(in, 100)
	got, err := readLines(t, r, 100)
	diffItems(t, got, []item{line("a")})
	if !errors.Is(err, errBoom) {
		t.Fatalf("error = %v, want %v", err, errBoom)
	}
}

func TestReadLineNoProgress(t *testing.T) {
	r := NewReader(emptyReader{}, 0)
	if _, err := r.ReadLine(); !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("error = %v, want io.ErrNoProgress", err)
	}
}

type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, nil }

func TestReadLineBadCount(t *testing.T) {
	r := NewReader(badCountReader{}, 0)
	if _, err := r.ReadLine(); err == nil || err == io.EOF {
		t.Fatalf("error = %v, want an invalid count error", err)
	}
}

type badCountReader struct{}

func (badCountReader) Read(p []byte) (int, error) { return len(p) + 1, nil }

// TestReadLineEOFNotSticky checks that after io.EOF a Reader reads again,
// as for a file that is still being written.
func TestReadLineEOFNotSticky(t *testing.T) {
	var src bytes.Buffer
	r := NewReader(&src, 0)
	src.WriteString("a\npart")
	got, err := readLines(t, r, DefaultMaxLine)
	diffItems(t, got, []item{line("a"), line("part")})
	if err != io.EOF {
		t.Fatalf("error = %v, want io.EOF", err)
	}
	src.WriteString("b\n")
	got, err = readLines(t, r, DefaultMaxLine)
	diffItems(t, got, []item{line("b")})
	if err != io.EOF {
		t.Fatalf("error = %v, want io.EOF", err)
	}
}

func TestBuffered(t *testing.T) {
	r := NewReader(strings.NewReader("a\nbb\ncc"), 0)
	if n := r.Buffered(); n != 0 {
		t.Fatalf("Buffered() before reading = %d", n)
	}
	if _, err := r.ReadLine(); err != nil {
		t.Fatal(err)
	}
	if n := r.Buffered(); n != 5 {
		t.Fatalf("Buffered() after first line = %d, want 5", n)
	}
	r.ReadLine()
	r.ReadLine()
	if n := r.Buffered(); n != 0 {
		t.Fatalf("Buffered() after last line = %d, want 0", n)
	}
}

// segLine is one line reassembled from ReadSegment, with its pieces' sizes.
type segLine struct {
	data   []byte
	pieces []int
}

// readSegments reads r to the end with ReadSegment, checking the piece
// invariants, and returns the reassembled lines.
func readSegments(t testing.TB, r *Reader, maxPiece int) ([]segLine, error) {
	t.Helper()
	var lines []segLine
	inLine := false
	for range 1 << 24 {
		seg, first, last, err := r.ReadSegment()
		if err != nil {
			if seg != nil || first || last {
				t.Fatalf("ReadSegment returned %d bytes, first=%v last=%v with %v", len(seg), first, last, err)
			}
			if inLine {
				t.Fatalf("ReadSegment ended with %v in the middle of a line", err)
			}
			return lines, err
		}
		if len(seg) > maxPiece {
			t.Fatalf("piece of %d bytes, more than %d", len(seg), maxPiece)
		}
		if bytes.IndexByte(seg, '\n') >= 0 {
			t.Fatalf("piece contains '\\n'")
		}
		if first == inLine {
			t.Fatalf("first=%v inside a line=%v", first, inLine)
		}
		if first {
			lines = append(lines, segLine{})
		}
		l := &lines[len(lines)-1]
		l.data = append(l.data, seg...)
		l.pieces = append(l.pieces, len(seg))
		inLine = !last
		if last && len(l.data) == 0 {
			t.Fatalf("ReadSegment returned a blank line")
		}
	}
	t.Fatal("ReadSegment never returned an error")
	return nil, nil
}

func TestReadSegmentCRSplit(t *testing.T) {
	const n = 64 * ki
	x := pat(n-1, 5)
	cases := []struct {
		name   string
		in     string
		want   []string
		pieces [][]int
	}{
		{"CRLF across pieces", x + "\r\nnext\n", []string{x, "next"}, [][]int{{n - 1, 0}, {4}}},
		{"CR content across pieces", x + "\ry\n", []string{x + "\ry"}, [][]int{{n - 1, 2}}},
		{"CR at EOF across pieces", x + "\r", []string{x}, [][]int{{n - 1, 0}}},
		{"CR then more pieces", x + "\r" + x + "\r\n", []string{x + "\r" + x}, [][]int{{n - 1, n, 0}}},
		{"fits with CRLF", pat(n-2, 1) + "\r\n", []string{pat(n-2, 1)}, [][]int{{n - 2}}},
		{"fits with LF", x + "\n", []string{x}, [][]int{{n - 1}}},
		{"exactly buffer", pat(n, 1) + "\n", []string{pat(n, 1)}, [][]int{{n, 0}}},
		{"buffer plus one", pat(n+1, 1) + "\r\n", []string{pat(n+1, 1)}, [][]int{{n, 1}}},
		{"blank lines skipped", "\n\r\n" + x + "\r\n\r\n\n", []string{x}, [][]int{{n - 1, 0}}},
		{"unterminated", "a\nbc", []string{"a", "bc"}, [][]int{{1}, {2}}},
	}
	for _, c := range cases {
		for _, rd := range readers {
			t.Run(c.name+"/"+rd.name, func(t *testing.T) {
				r := NewReader(rd.wrap(strings.NewReader(c.in)), 0)
				got, err := readSegments(t, r, 64*ki)
				if err != io.EOF {
					t.Fatalf("error = %v, want io.EOF", err)
				}
				if len(got) != len(c.want) {
					t.Fatalf("got %d lines, want %d", len(got), len(c.want))
				}
				for i := range got {
					if string(got[i].data) != c.want[i] {
						t.Errorf("line %d = %v, want %v", i, line(string(got[i].data)), line(c.want[i]))
					}
					if fmt.Sprint(got[i].pieces) != fmt.Sprint(c.pieces[i]) {
						t.Errorf("line %d pieces = %v, want %v", i, got[i].pieces, c.pieces[i])
					}
				}
			})
		}
	}
}

// randomInput builds a stream of random lines: sizes around the buffer
// size and small ones, "\n" or "\r\n", blank and "\r"-only lines, and
// sometimes no final terminator.
func randomInput(rng *rand.Rand, maxTotal int) []byte {
	sizes := []int{0, 1, 2, 10, 100, 1000, 64*ki - 2, 64*ki - 1, 64 * ki, 64*ki + 1, 64*ki + 2, 130 * ki}
	var b []byte
	for len(b) < maxTotal {
		n := sizes[rng.IntN(len(sizes))]
		if rng.IntN(3) == 0 {
			n = rng.IntN(200 * ki)
		}
		s := patBytes(n, rng.IntN(26))
		for range rng.IntN(4) {
			if len(s) > 0 {
				s[rng.IntN(len(s))] = '\r'
			}
		}
		b = append(b, s...)
		b = append(b, []string{"\n", "\r\n", "\r\n", "\r\r\n"}[rng.IntN(4)]...)
	}
	if rng.IntN(2) == 0 {
		b = b[:len(b)-rng.IntN(3)]
	}
	return b
}

func TestReadSegmentRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 40 {
		data := randomInput(rng, rng.IntN(2*mi))
		for _, rd := range readers[:3] {
			t.Run(fmt.Sprintf("%d/%s", i, rd.name), func(t *testing.T) {
				segs, err := readSegments(t, NewReader(rd.wrap(bytes.NewReader(data)), 0), 64*ki)
				if err != io.EOF {
					t.Fatalf("ReadSegment error = %v", err)
				}
				lines, err := readLines(t, NewReader(rd.wrap(bytes.NewReader(data)), 0), DefaultMaxLine)
				if err != io.EOF {
					t.Fatalf("ReadLine error = %v", err)
				}
				diffItems(t, lines, modelLines(data, DefaultMaxLine))
				got := make([]item, len(segs))
				for i, s := range segs {
					got[i] = line(string(s.data))
				}
				diffItems(t, got, lines)
			})
		}
	}
}

func TestReadSegmentMixed(t *testing.T) {
	big := pat(200*ki, 1)
	r := NewReader(strings.NewReader("a\n"+big+"\r\nb\n\n"+big+"\nc"), 0)
	if b, err := r.ReadLine(); err != nil || string(b) != "a" {
		t.Fatalf("ReadLine = %q, %v", b, err)
	}
	var got []byte
	for {
		seg, _, last, err := r.ReadSegment()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, seg...)
		if last {
			break
		}
	}
	if string(got) != big {
		t.Fatalf("ReadSegment line differs")
	}
	if b, err := r.ReadLine(); err != nil || string(b) != "b" {
		t.Fatalf("ReadLine = %q, %v", b, err)
	}
	if b, err := r.ReadLine(); err != nil || string(b) != big {
		t.Fatalf("ReadLine = %d bytes, %v", len(b), err)
	}
	// The buffer has grown; pieces stay within 64 KiB.
	seg, first, last, err := r.ReadSegment()
	if err != nil || string(seg) != "c" || !first || !last {
		t.Fatalf("ReadSegment = %q, %v, %v, %v", seg, first, last, err)
	}
	if _, _, _, err := r.ReadSegment(); err != io.EOF {
		t.Fatalf("ReadSegment at end = %v, want io.EOF", err)
	}
}

func TestReadLineMidSegmentPanics(t *testing.T) {
	r := NewReader(strings.NewReader(pat(100*ki, 1)+"\n"), 0)
	if _, _, last, err := r.ReadSegment(); err != nil || last {
		t.Fatalf("ReadSegment: last=%v err=%v", last, err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("ReadLine in the middle of a segmented line did not panic")
		}
	}()
	r.ReadLine()
}

// hugeLineReader produces n bytes of 'a', then "\r\n", then tail, without
// holding them.
type hugeLineReader struct {
	n    int64
	tail string
}

var aBlock = bytes.Repeat([]byte{'a'}, 256*ki)

func (h *hugeLineReader) Read(p []byte) (int, error) {
	if h.n > 0 {
		k := copy(p[:min(int64(len(p)), h.n)], aBlock)
		h.n -= int64(k)
		return k, nil
	}
	if h.tail == "" {
		return 0, io.EOF
	}
	k := copy(p, h.tail)
	h.tail = h.tail[k:]
	return k, nil
}

func heapAlloc() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

func TestReadSegmentHugeLine(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 1 GiB")
	}
	const size = 1 << 30
	r := NewReader(&hugeLineReader{n: size, tail: "\r\nafter\n"}, 0)
	before := heapAlloc()
	var total int64
	var pieces int
	for {
		seg, first, last, err := r.ReadSegment()
		if err != nil {
			t.Fatal(err)
		}
		if first != (pieces == 0) {
			t.Fatalf("piece %d: first=%v", pieces, first)
		}
		total += int64(len(seg))
		pieces++
		if last {
			break
		}
	}
	grew := heapAlloc() - before
	if total != size {
		t.Fatalf("line of %d bytes came out as %d", size, total)
	}
	if grew > 256*ki {
		t.Errorf("ReadSegment allocated %d bytes for a 1 GiB line", grew)
	}
	if seg, first, last, err := r.ReadSegment(); err != nil || string(seg) != "after" || !first || !last {
		t.Fatalf("next line: %q, %v, %v, %v", seg, first, last, err)
	}
	t.Logf("%d pieces, %d bytes allocated", pieces, grew)
}

func TestReadLineSkipHugeLine(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 256 MiB")
	}
	const size = 256 << 20
	r := NewReader(&hugeLineReader{n: size, tail: "\r\nafter\n"}, mi)
	before := heapAlloc()
	_, err := r.ReadLine()
	grew := heapAlloc() - before
	var tl *LineTooLongError
	if !errors.As(err, &tl) || tl.Size != size || tl.Max != mi {
		t.Fatalf("ReadLine error = %v, want LineTooLongError{%d, %d}", err, size, mi)
	}
	// The buffer may grow to the limit before the line is known to be
	// too long, never beyond it: the doubling steps to 1 MiB+2 come to
	// about 3 MiB, far from the 256 MiB of the line.
	if grew > 6*mi {
		t.Errorf("skipping a 256 MiB line allocated %d bytes with a 1 MiB limit", grew)
	}
	if b, err := r.ReadLine(); err != nil || string(b) != "after" {
		t.Fatalf("next line: %q, %v", b, err)
	}
	if len(r.buf) != bufSize {
		t.Errorf("buffer is %d bytes after the skip, want it back to %d", len(r.buf), bufSize)
	}
}

// loopReader repeats data forever, at most chunk bytes per Read if chunk
// is set (a pipe gives at most 64 KiB).
type loopReader struct {
	data  []byte
	off   int
	chunk int
}

func (l *loopReader) Read(p []byte) (int, error) {
	if l.chunk > 0 && len(p) > l.chunk {
		p = p[:l.chunk]
	}
	n := 0
	for n < len(p) {
		k := copy(p[n:], l.data[l.off:])
		n += k
		l.off = (l.off + k) % len(l.data)
	}
	return n, nil
}

// TestLineTooLongHead: a skipped line's error carries a copy of its first
// MaxHead bytes, however the line was read (within the buffer, grown, or
// in chunks), and the copy survives the Reader's next calls.
func TestLineTooLongHead(t *testing.T) {
	long := `{"duration_api_ms":38,"session_id":"s","result":"` + pat(3*mi, 1) + `","type":"result"}`
	for _, c := range []struct {
		name  string
		in    string
		max   int
		keep  int
		head  string
		lines int
	}{
		{"short line over a small limit", "0123456789\r\nok\n", 5, 0, "0123456789", 1},
		{"buffer-sized", pat(70*ki, 2) + "\nok\n", 1000, 0, pat(70*ki, 2)[:MaxHead], 1},
		{"grown then skipped", long + "\r\nok\n", 2 * mi, 0, long[:MaxHead], 1},
		{"skipped after chunks", long + "\nok\n", 2 * mi, 256 * ki, long[:MaxHead], 1},
		{"over at its end, in chunks", long + "\nok\n", len(long) - 1, 256 * ki, long[:MaxHead], 1},
		{"at EOF", "ok\n" + long, 2 * mi, 256 * ki, long[:MaxHead], 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := NewReader(iotest.HalfReader(strings.NewReader(c.in)), c.max)
			if c.keep > 0 {
				r.keep = c.keep
			}
			var tl *LineTooLongError
			var got []string
			for {
				b, err := r.ReadLine()
				if err == io.EOF {
					break
				}
				if errors.As(err, &tl) {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, string(b))
			}
			if tl == nil {
				t.Fatal("no line was skipped")
			}
			if string(tl.Head) != c.head {
				t.Errorf("Head is %d bytes %.40q, want %d bytes %.40q", len(tl.Head), tl.Head, len(c.head), c.head)
			}
			if len(got) != c.lines {
				t.Errorf("lines %q", got)
			}
		})
	}
}

// TestReadLineOwned: a line longer than the kept buffer is returned in
// memory of its own, which later calls leave alone; shorter ones are not.
func TestReadLineOwned(t *testing.T) {
	big := pat(5*mi+7, 3)
	r := NewReader(iotest.HalfReader(strings.NewReader("a\n"+big+"\r\n"+big+"\nb\n")), 0)
	var kept [][]byte
	for i, wantOwned := range []bool{false, true, true, false} {
		b, err := r.ReadLine()
		if err != nil {
			t.Fatal(err)
		}
		if r.Owned() != wantOwned {
			t.Fatalf("line %d (%d bytes): Owned() = %v", i, len(b), r.Owned())
		}
		if r.Owned() {
			kept = append(kept, b)
		}
	}
	for _, b := range kept {
		if string(b) != big {
			t.Fatal("an owned line changed after later calls")
		}
	}
	if len(r.buf) != bufSize {
		t.Errorf("buffer is %d bytes after a long line, want %d", len(r.buf), bufSize)
	}
}

// TestReadLineLongLineMemory: skipping a line holds no more than the
// limit (and gives it back), and reading a long line that is returned
// allocates about twice its size, not the three times and more of a
// buffer that doubles.
func TestReadLineLongLineMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 192 MiB")
	}
	const limit = 64 << 20
	// Skipped: a 128 MiB line over a 64 MiB limit.
	r := NewReader(&hugeLineReader{n: 2 * limit, tail: "\nafter\n"}, limit)
	before := heapAlloc()
	_, err := r.ReadLine()
	grew := heapAlloc() - before
	var tl *LineTooLongError
	if !errors.As(err, &tl) || tl.Size != 2*limit || len(tl.Head) != MaxHead {
		t.Fatalf("ReadLine error = %v", err)
	}
	if grew > limit+2*longChunk+2*keepLine {
		t.Errorf("skipping a 128 MiB line over a 64 MiB limit allocated %d MiB", grew>>20)
	}
	t.Logf("skipping 128 MiB over a 64 MiB limit allocated %d MiB", grew>>20)
	if b, err := r.ReadLine(); err != nil || string(b) != "after" {
		t.Fatalf("next line: %q, %v", b, err)
	}
	if len(r.buf) != bufSize {
		t.Errorf("buffer is %d bytes after the skip, want %d", len(r.buf), bufSize)
	}

	// Returned: a 64 MiB line.
	r = NewReader(&hugeLineReader{n: limit, tail: "\nafter\n"}, 0)
	before = heapAlloc()
	b, err := r.ReadLine()
	grew = heapAlloc() - before
	if err != nil || len(b) != limit || !r.Owned() {
		t.Fatalf("ReadLine = %d bytes, %v", len(b), err)
	}
	if grew > 2*limit+2*longChunk+2*keepLine {
		t.Errorf("reading a 64 MiB line allocated %d MiB", grew>>20)
	}
	t.Logf("reading a 64 MiB line allocated %d MiB", grew>>20)
}
