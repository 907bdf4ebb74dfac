package adapter

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/ccbridge/ccbridge/framing"
)

// readLines is what framing.ReadLine makes of in: each line, or
// "too long SIZE/MAX" for a line it skipped.
func readLines(t *testing.T, in string, maxLine int) []string {
	t.Helper()
	fr := framing.NewReader(strings.NewReader(in), maxLine)
	var got []string
	for {
		line, err := fr.ReadLine()
		var long *framing.LineTooLongError
		switch {
		case errors.As(err, &long):
			got = append(got, fmt.Sprintf("too long %d/%d", long.Size, long.Max))
		case errors.Is(err, io.EOF):
			return got
		case err != nil:
			t.Fatal(err)
		default:
			got = append(got, string(line))
		}
	}
}

// TestReadBlocks checks that the blocks readBlocks hands over, walked with
// blockLines, hold exactly the lines and over-long lines that ReadLine
// reports, in the same order, whatever the limit.
func TestReadBlocks(t *testing.T) {
	long := strings.Repeat("x", 100<<10) // longer than the 64 KiB buffer
	inputs := map[string]string{
		"empty":          "",
		"lines":          "a\nbb\nccc\n",
		"crlf and blank": "a\r\n\r\n\nbb\r\n \n\r\r\nc",
		"final cr":       "a\nb\r",
		"long":           "a\n" + long + "\nb\n" + long + "\r\n" + long,
		"mixed":          strings.Repeat("0123456789\n"+strings.Repeat("y", 40)+"\r\n", 3000) + "\n" + long,
	}
	for name, in := range inputs {
		for _, maxLine := range []int{1, 5, 10, 39, 40, 41, 1000, 80 << 10, framing.DefaultMaxLine} {
			for _, mode := range []string{"fresh", "fresh held", "pooled", "held"} {
				var pool blockPool
				if !strings.HasPrefix(mode, "fresh") {
					pool = newBlockPool()
				}
				t.Run(fmt.Sprintf("%s/%d/%s", name, maxLine, mode), func(t *testing.T) {
					grown := testReadBlocks(t, in, maxLine, pool, strings.HasSuffix(mode, "held"))
					// The first long line fills the Reader's grown
					// buffer with room behind it: that buffer is
					// handed over, not copied and kept.
					if name == "long" && maxLine == framing.DefaultMaxLine && grown == 0 {
						t.Error("no long line came in the buffer the Reader grew for it")
					}
				})
			}
		}
	}
}

// testReadBlocks: with hold, blocks are kept as they came, uncopied, and
// their buffers never given back, until the end; a reader that wrote into
// a buffer it had handed over would show then. It returns how many blocks
// came in a buffer the Reader grew for them.
func testReadBlocks(t *testing.T, in string, maxLine int, pool blockPool, hold bool) (grown int) {
	var got []string
	var held []cliBlock
	collect := func(m cliBlock) {
		if m.tooLong != nil {
			got = append(got, fmt.Sprintf("too long %d/%d", m.tooLong.Size, m.tooLong.Max))
			return
		}
		for l := range blockLines(m.lines) {
			got = append(got, strings.Clone(l))
		}
	}
	send := func(m cliBlock) bool {
		if m.gen != 7 {
			t.Errorf("gen %d, want 7", m.gen)
		}
		if m.tooLong == nil && m.lines == "" {
			t.Error("an empty block")
		}
		// A block of up to blockBufSize bytes comes in a pooled buffer,
		// or copied without a pool; a longer one, in the buffer the
		// Reader grew for it (which put then drops) or copied.
		switch {
		case m.tooLong != nil:
		case len(m.lines) > blockBufSize:
			if m.buf != nil && (cap(m.buf) == blockBufSize || cap(m.buf) < len(m.lines)) {
				t.Errorf("a block of %d bytes has a buffer of %d bytes (pool %v)", len(m.lines), cap(m.buf), pool != nil)
			}
			if m.buf != nil {
				grown++
			}
		case pool == nil:
			if m.buf != nil {
				t.Errorf("a block of %d bytes has a buffer of %d bytes without a pool", len(m.lines), cap(m.buf))
			}
		case m.buf == nil:
			t.Errorf("a block of %d bytes has no pooled buffer", len(m.lines))
		}
		if hold {
			held = append(held, m)
			return true
		}
		collect(m)
		pool.put(m.buf) // the next block may reuse it
		return true
	}
	if !readBlocks(7, strings.NewReader(in), maxLine, pool, slog.New(slog.DiscardHandler), send) {
		t.Fatal("readBlocks reported that send failed")
	}
	for _, m := range held {
		collect(m)
	}
	if want := readLines(t, in, maxLine); !slices.Equal(got, want) {
		t.Errorf("got %d lines, want %d\n got %.300q\nwant %.300q", len(got), len(want), got, want)
	}
	return grown
}

// TestBlockPoolReuses: a buffer put back is the next block's, so a stream
// of blocks allocates none after the first.
func TestBlockPoolReuses(t *testing.T) {
	p := newBlockPool()
	a := p.block(1, []byte("one\n"))
	p.put(a.buf)
	b := p.block(2, []byte("two\n"))
	if b.lines != "two\n" || b.gen != 2 {
		t.Fatalf("block = %+v", b)
	}
	if &a.buf[:1][0] != &b.buf[:1][0] {
		t.Error("the second block did not reuse the first one's buffer")
	}
	if allocs := testing.AllocsPerRun(100, func() { p.put(p.block(1, []byte("line\n")).buf) }); allocs != 0 {
		t.Errorf("%v allocations per pooled block, want 0", allocs)
	}
	var nilPool blockPool
	if c := nilPool.block(3, []byte("x\n")); c.buf != nil || c.lines != "x\n" {
		t.Errorf("a nil pool gave %+v", c)
	}
	nilPool.put([]byte("ignored")) // no panic
}

func TestReadBlocksStops(t *testing.T) {
	calls := 0
	send := func(cliBlock) bool { calls++; return false }
	in := strings.Repeat("line\n", 100)
	if readBlocks(1, strings.NewReader(in), 2, nil, slog.New(slog.DiscardHandler), send) {
		t.Error("readBlocks went on after send failed")
	}
	if calls != 1 {
		t.Errorf("send called %d times, want 1", calls)
	}
}
