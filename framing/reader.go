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
	return &Reader{rd: rd, buf: make([]byte, size), seg: size, max: maxLine}
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
// At the end of input ReadLine returns nil, io.EOF. Any other read error is
// returned wrapped, and returned again by every later call.
//
// ReadLine panics if called while ReadSegment is in the middle of a line.
func (r *Reader) ReadLine() ([]byte, error) {
	if r.mid {
		panic("framing: ReadLine called in the middle of a ReadSegment line")
	}
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
				return nil, r.tooLong(int64(len(line)))
			}
			return line, nil
		}
		r.scan = r.w - r.r
		if r.overLimit() {
			return nil, r.skip()
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
			r.grow()
		}
		r.fill()
	}
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

// skip reads through the rest of an over-long line whose first w-r bytes
// are buffered, holding no more than the buffer, and returns the
// *LineTooLongError that reports it.
func (r *Reader) skip() error {
	size := int64(r.w - r.r)
	cr := r.buf[r.w-1] == '\r'
	r.r, r.w, r.scan = 0, 0, 0
	for r.err == nil && !r.eof {
		r.fill()
		if i := bytes.IndexByte(r.buf[:r.w], '\n'); i >= 0 {
			size += int64(i)
			if i > 0 {
				cr = r.buf[i-1] == '\r'
			}
			r.r = i + 1
			r.shrink()
			if cr {
				size--
			}
			return r.tooLong(size)
		}
		if r.w > 0 {
			size += int64(r.w)
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
	return r.tooLong(size)
}

func (r *Reader) tooLong(size int64) error {
	return &LineTooLongError{Size: size, Max: int64(r.max)}
}

// grow enlarges a full buffer that holds one partial line, up to the
// largest size ReadLine can need: max bytes, a '\r', and one more byte to
// see what follows it.
func (r *Reader) grow() {
	n := 2 * len(r.buf)
	if n < len(r.buf) || n-2 > r.max {
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
	for range maxEmptyReads {
		n, err := r.rd.Read(r.buf[r.w:])
		if n < 0 || n > len(r.buf)-r.w {
			r.err = fmt.Errorf("framing: read: invalid count %d from %T", n, r.rd)
			return
		}
		r.w += n
		if err == io.EOF {
			r.eof = true
			return
		}
		if err != nil {
			r.err = fmt.Errorf("framing: read: %w", err)
			return
		}
		if n > 0 {
			return
		}
	}
	r.err = fmt.Errorf("framing: read: %w", io.ErrNoProgress)
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
