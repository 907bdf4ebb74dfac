package framing

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
)

// DefaultMaxLine is the line limit a Reader uses when NewReader is given
// zero or a negative limit.
const DefaultMaxLine = 256 << 20

// bufSize is the size of a Reader's buffer and the largest piece
// ReadSegment returns.
const bufSize = 64 << 10

// keepLine is the largest buffer a Reader grows for a line and keeps for
// reuse. A longer line is collected in chunks instead and handed out in
// memory of its own (see readLong), so that the Reader neither copies it
// again and again while it grows nor pins its memory afterwards.
const keepLine = 4 << 20

// longChunk is the size of the chunks a line longer than keepLine is
// collected in.
const longChunk = 4 << 20

// MaxHead is how many bytes of a skipped line a LineTooLongError keeps.
const MaxHead = 16 << 10

// maxEmptyReads is how many reads in a row may return no data and no
// error before the Reader gives up with io.ErrNoProgress.
const maxEmptyReads = 100

// ErrLineTooLong is matched by every *LineTooLongError.
var ErrLineTooLong = errors.New("framing: line too long")

// LineTooLongError reports a line that ReadLine skipped because it was
// longer than the Reader's limit. errors.Is(err, ErrLineTooLong) holds.
type LineTooLongError struct {
	// Size is the length of the skipped line in bytes, not counting its
	// "\n" or "\r\n" terminator.
	Size int64
	// Max is the Reader's limit.
	Max int64
	// Head is a copy of the first bytes of the line (at most MaxHead),
	// so that a caller can tell what kind of line it lost.
	Head []byte
}

func (e *LineTooLongError) Error() string {
	return fmt.Sprintf("framing: line too long: %d bytes, limit %d", e.Size, e.Max)
}

// Is reports whether target is ErrLineTooLong.
func (e *LineTooLongError) Is(target error) bool { return target == ErrLineTooLong }

// Reader reads newline-delimited lines from an io.Reader.
//
// A Reader is not safe for concurrent use; one goroutine owns it.
type Reader struct {
	rd   io.Reader
	buf  []byte // buf[r:w] is read but not yet consumed
	r, w int
	scan int   // buf[r:r+scan] is known to hold no '\n'
	seg  int   // the initial buffer size; the largest ReadSegment piece
	max  int   // ReadLine's line limit
	err  error // sticky read error, already wrapped
	eof  bool  // the underlying reader said io.EOF; report it once drained
	mid  bool  // ReadSegment has handed out part of a line, not its end
	keep int   // the largest buffer ReadLine grows; keepLine but in tests
	own  bool  // the line ReadLine returned last is in memory of its own
}

// NewReader returns a Reader that reads from rd with a 64 KiB buffer.
// ReadLine skips lines longer than maxLine bytes (not counting the
// terminator); maxLine <= 0 means DefaultMaxLine.
func NewReader(rd io.Reader, maxLine int) *Reader {
	return newReaderSize(rd, maxLine, bufSize)
}

// newReaderSize is NewReader with a chosen buffer size, so tests and
// fuzzers can reach the buffer's edges with small inputs.
func newReaderSize(rd io.Reader, maxLine, size int) *Reader {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	// The buffer may grow to maxLine+2 bytes; keep that from overflowing.
	maxLine = min(maxLine, math.MaxInt-2)
	size = max(size, 4)
	return &Reader{rd: rd, buf: make([]byte, size), seg: size, max: maxLine, keep: max(size, keepLine)}
}

// Buffered returns how many bytes can be consumed without reading from the
// underlying reader. A writer that forwards lines can flush when it is 0.
func (r *Reader) Buffered() int { return r.w - r.r }

// ReadLine returns the next non-blank line without its "\n" or "\r\n". A
// final line without a terminator is returned before io.EOF, with a
// trailing "\r" removed. The slice is valid until the next call.
//
// A line longer than the limit is read through and dropped without being
// held whole: ReadLine returns nil and a *LineTooLongError, and the next
// call goes on with the following line.
//
// While a line is read it is held in the Reader's buffer, which grows up
// to 4 MiB and is kept for the next lines; a longer line is collected in
// chunks and returned in memory of its own (see [Reader.Owned]), and a
// line found to be over the limit is dropped at once, so that skipping a
// line holds at most the limit and nothing after it.
//
// At the end of input ReadLine returns nil, io.EOF. Any other read error is
// returned wrapped, and returned again by every later call.
//
// ReadLine panics if called while ReadSegment is in the middle of a line.
func (r *Reader) ReadLine() ([]byte, error) {
	if r.mid {
		panic("framing: ReadLine called in the middle of a ReadSegment line")
	}
	r.own = false
	for {
		if i := bytes.IndexByte(r.buf[r.r+r.scan:r.w], '\n'); i >= 0 {
			end := r.r + r.scan + i
			line := dropCR(r.buf[r.r:end])
			r.r, r.scan = end+1, 0
			if len(line) == 0 {
				continue
			}
			if len(line) > r.max {
				// Possible when the buffer was grown earlier, or is
				// larger than the limit to begin with.
				return nil, r.tooLong(int64(len(line)), line)
			}
			return line, nil
		}
		r.scan = r.w - r.r
		if r.overLimit() {
			return nil, r.skip(int64(r.w-r.r), r.buf[r.w-1] == '\r', head(r.buf[r.r:r.w]))
		}
		if r.err != nil {
			return nil, r.err
		}
		if r.eof {
			line := dropCR(r.buf[r.r:r.w])
			r.r, r.scan = r.w, 0
			if len(line) == 0 {
				r.eof = false
				return nil, io.EOF
			}
			return line, nil // overLimit was false, so len(line) <= r.max
		}
		if r.r == 0 && r.w == len(r.buf) {
			if len(r.buf) >= r.keep {
				return r.readLong()
			}
			r.grow()
		}
		r.fill()
	}
}

// Owned reports whether the line ReadLine returned last is in memory of
// its own, which the Reader never reuses (a line longer than 4 MiB): the
// caller may keep that slice without copying it.
func (r *Reader) Owned() bool { return r.own }

// readLong reads on a line that fills the buffer, of r.keep bytes or more,
// without a '\n'. The line is collected in chunks: the buffer itself
// first, then chunks of longChunk bytes, while the Reader goes on with a
// buffer of its initial size. A line within the limit is then copied once
// into memory of exactly its size and returned; a line over it is dropped
// as soon as it is known to be, and the rest of it skipped.
func (r *Reader) readLong() ([]byte, error) {
	chunks := [][]byte{r.buf[:r.w]}
	size := int64(r.w)
	last := r.buf[r.w-1]
	r.buf = make([]byte, r.seg)
	r.r, r.w, r.scan = 0, 0, 0
	var cur []byte
	for {
		if over := size - int64(r.max); over > 1 || over == 1 && last != '\r' {
			h := head(chunks...)
			clear(chunks) // give the memory back now, not after the skip
			cur = nil
			return nil, r.skip(size, last == '\r', h)
		}
		if r.err != nil {
			return nil, r.err
		}
		if r.eof {
			return r.joinLong(chunks, size, last)
		}
		if len(cur) == cap(cur) {
			cur = make([]byte, 0, longChunk)
			chunks = append(chunks, cur)
		}
		// At most a buffer's worth at a time: what follows the line
		// must fit the buffer.
		p := cur[len(cur):min(cap(cur), len(cur)+len(r.buf))]
		n := r.readInto(p)
		if i := bytes.IndexByte(p[:n], '\n'); i >= 0 {
			r.w = copy(r.buf, p[i+1:n])
			n = i
			if i > 0 {
				last = p[i-1]
			}
			cur = cur[:len(cur)+n]
			chunks[len(chunks)-1] = cur
			size += int64(n)
			return r.joinLong(chunks, size, last)
		}
		if n > 0 {
			last = p[n-1]
		}
		cur = cur[:len(cur)+n]
		chunks[len(chunks)-1] = cur
		size += int64(n)
	}
}

// joinLong returns the line of size bytes held in chunks, last its final
// byte, in memory of its own: without a final '\r', with room for one more
// byte (a caller can add the '\n' without a copy). A line over the limit,
// which can only be one that ended just now, is reported instead.
func (r *Reader) joinLong(chunks [][]byte, size int64, last byte) ([]byte, error) {
	if last == '\r' {
		size--
	}
	if size > int64(r.max) {
		return nil, r.tooLong(size, chunks...)
	}
	line := make([]byte, 0, size+1)
	for _, c := range chunks {
		line = append(line, c[:min(len(c), int(size)-len(line))]...)
	}
	r.own = true
	return line, nil
}

// ReadSegment returns the current line in pieces of at most 64 KiB, so a
// line of any length passes through while the Reader holds one buffer.
// first marks a line's first piece and last its final piece; a line that
// fits the buffer together with its terminator comes as one piece with
// first && last. The terminator is not included, and a "\r" before the
// "\n" is removed even when the two fall in different pieces. A final
// piece may be empty (for example when a line ends right at a piece
// boundary). Blank lines are skipped. There is no length limit.
//
// The slice is valid until the next call. Errors are as for ReadLine;
// seg is nil whenever err is not.
func (r *Reader) ReadSegment() (seg []byte, first, last bool, err error) {
	for {
		first = !r.mid
		win := r.buf[r.r:r.w]
		if len(win) > r.seg {
			win = win[:r.seg]
		}
		from := min(r.scan, len(win))
		if i := bytes.IndexByte(win[from:], '\n'); i >= 0 {
			seg = dropCR(win[:from+i])
			r.r += from + i + 1
			r.scan = 0
			if first && len(seg) == 0 {
				continue // blank line
			}
			r.mid = false
			return seg, first, true, nil
		}
		r.scan = max(r.scan, len(win))
		if len(win) == r.seg {
			// A full piece with no terminator in it. Hold back a
			// trailing '\r': it may be the start of "\r\n".
			n := len(win)
			if win[n-1] == '\r' {
				n--
			}
			r.r += n
			r.scan -= n
			r.mid = true
			return win[:n], first, false, nil
		}
		if r.err != nil {
			return nil, false, false, r.err
		}
		if r.eof {
			// len(win) < r.seg, so win holds everything buffered.
			seg = dropCR(win)
			r.r, r.scan = r.w, 0
			if first && len(seg) == 0 {
				r.eof = false
				return nil, false, false, io.EOF
			}
			r.mid = false
			return seg, first, true, nil
		}
		r.fill() // fewer than r.seg bytes are unread, so there is room
	}
}

// ReadBlock returns, exactly as read, the whole lines that are buffered:
// the bytes up to and including the last '\n' in the buffer, terminators
// and blank lines included. A relay that passes lines through unchanged
// can classify the lines in a block and write the block in one call, as a
// plain byte relay would.
//
// When the buffer fills up without a '\n' (a line longer than 64 KiB),
// ReadBlock returns nil, nil: read that line with ReadSegment, then go
// back to ReadBlock. A final line without a terminator is returned as a
// block of its own, not ending in '\n', before io.EOF. The slice is valid
// until the next call. Errors are as for ReadLine.
//
// ReadBlock panics if called while ReadSegment is in the middle of a line.
func (r *Reader) ReadBlock() ([]byte, error) {
	if r.mid {
		panic("framing: ReadBlock called in the middle of a ReadSegment line")
	}
	for {
		win := r.buf[r.r:r.w]
		if i := bytes.LastIndexByte(win[min(r.scan, len(win)):], '\n'); i >= 0 {
			end := min(r.scan, len(win)) + i + 1
			r.r += end
			r.scan = 0
			return win[:end], nil
		}
		r.scan = len(win)
		if len(win) >= r.seg {
			return nil, nil
		}
		if r.err != nil {
			return nil, r.err
		}
		if r.eof {
			r.r, r.scan = r.w, 0
			if len(win) == 0 {
				r.eof = false
				return nil, io.EOF
			}
			return win, nil
		}
		r.fill()
	}
}

// overLimit reports whether the partial line buf[r:w], which holds no
// '\n', is already longer than the limit. One byte over is still allowed
// when it is a '\r' that a following '\n' would strip.
func (r *Reader) overLimit() bool {
	over := r.w - r.r - r.max
	return over > 1 || over == 1 && r.buf[r.w-1] != '\r'
}

// skip reads through the rest of an over-long line, of which size bytes
// are read already (cr: the last of them is a '\r') and none is buffered,
// holding no more than the buffer, and returns the *LineTooLongError that
// reports it, with head as its Head.
func (r *Reader) skip(size int64, cr bool, head []byte) error {
	r.r, r.w, r.scan = 0, 0, 0
	for r.err == nil && !r.eof {
		r.fill()
		if i := bytes.IndexByte(r.buf[:r.w], '\n'); i >= 0 {
			size += int64(i)
			head = addHead(head, r.buf[:i])
			if i > 0 {
				cr = r.buf[i-1] == '\r'
			}
			r.r = i + 1
			r.shrink()
			if cr {
				size--
			}
			return r.tooLong(size, head)
		}
		if r.w > 0 {
			size += int64(r.w)
			head = addHead(head, r.buf[:r.w])
			cr = r.buf[r.w-1] == '\r'
		}
		r.r, r.w = 0, 0
	}
	if r.err != nil {
		return r.err
	}
	// The input ended inside the line. io.EOF stays pending for the next call.
	r.shrink()
	if cr {
		size--
	}
	return r.tooLong(size, head)
}

// head returns a copy of the first MaxHead bytes of a line held in parts.
func head(parts ...[]byte) []byte {
	var h []byte
	for _, p := range parts {
		h = addHead(h, p)
	}
	return h
}

// addHead appends to h the start of p, up to MaxHead bytes in all.
func addHead(h, p []byte) []byte {
	return append(h, p[:min(len(p), MaxHead-len(h))]...)
}

func (r *Reader) tooLong(size int64, line ...[]byte) error {
	h := head(line...)
	return &LineTooLongError{Size: size, Max: int64(r.max), Head: h[:min(int64(len(h)), size)]}
}

// grow enlarges a full buffer that holds one partial line, up to the
// largest size ReadLine can need (max bytes, a '\r', and one more byte to
// see what follows it) and no further than keep.
func (r *Reader) grow() {
	n := min(2*len(r.buf), r.keep)
	if n-2 > r.max {
		n = r.max + 2
	}
	nb := make([]byte, n)
	r.w = copy(nb, r.buf[r.r:r.w])
	r.r = 0
	r.buf = nb
}

// shrink gives back a buffer that grew for a line that was then skipped,
// so one over-long line does not pin its memory for the Reader's life.
// A buffer grown for a line that was returned is kept for reuse.
func (r *Reader) shrink() {
	if len(r.buf) > r.seg && r.w-r.r <= r.seg {
		nb := make([]byte, r.seg)
		r.w = copy(nb, r.buf[r.r:r.w])
		r.r, r.scan = 0, 0
		r.buf = nb
	}
}

// fill moves the unread bytes to the front of the buffer and reads once
// from the underlying reader into the free space, which the caller has
// made sure exists. It records io.EOF in r.eof and other errors in r.err.
func (r *Reader) fill() {
	if r.r > 0 {
		r.w = copy(r.buf, r.buf[r.r:r.w])
		r.r = 0
	}
	r.w += r.readInto(r.buf[r.w:])
}

// readInto reads once from the underlying reader into p, which is not
// empty, and returns how many bytes it read. It records io.EOF in r.eof
// and other errors in r.err.
func (r *Reader) readInto(p []byte) int {
	for range maxEmptyReads {
		n, err := r.rd.Read(p)
		if n < 0 || n > len(p) {
			r.err = fmt.Errorf("framing: read: invalid count %d from %T", n, r.rd)
			return 0
		}
		if err == io.EOF {
			r.eof = true
			return n
		}
		if err != nil {
			r.err = fmt.Errorf("framing: read: %w", err)
			return n
		}
		if n > 0 {
			return n
		}
	}
	r.err = fmt.Errorf("framing: read: %w", io.ErrNoProgress)
	return 0
}

// SwapBuffer gives the Reader b as its buffer, moving into it the bytes
// read but not yet returned, and returns the buffer it used until now.
// The Reader never writes to that buffer again, so the blocks and lines it
// returned from it stay intact: a caller can hand a block to another
// goroutine without copying it, and later offer the buffer back here.
//
// b is used up to its capacity, which must be at least 64 KiB (the
// Reader's initial buffer). SwapBuffer keeps its buffer and returns nil
// when b is smaller than that or than the pending bytes, and in the middle
// of a ReadSegment line.
func (r *Reader) SwapBuffer(b []byte) []byte {
	b = b[:cap(b)]
	if r.mid || len(b) < r.seg || r.w-r.r > len(b) {
		return nil
	}
	old := r.buf
	r.w = copy(b, r.buf[r.r:r.w])
	r.r = 0
	r.buf = b
	return old
}

func dropCR(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		return b[:n-1]
	}
	return b
}
