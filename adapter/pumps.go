package adapter

// The readers of the session core (core.go): the UI's lines and the
// children's blocks of lines, handed to the loop over channels, with the
// buffer pool they share; and small helpers of the dialects.
//
// Each reader runs on a goroutine of its own and owns its framing.Reader;
// everything else here is called from the loop's goroutine.

import (
	"bytes"
	"errors"
	"io"
	"iter"
	"log/slog"
	"strings"
	"time"
	"unsafe"

	"github.com/ccbridge/ccbridge/framing"
	"github.com/ccbridge/ccbridge/session"
)

// uiLine is what the UI's reader hands to a loop: a line (a copy, the
// loop's to keep), a line over the limit that was dropped, or the end of
// the input (always the last message).
type uiLine struct {
	line    []byte
	tooLong *framing.LineTooLongError
	eof     bool
}

// uiQueue is the capacity of a loop's channel of UI lines.
const uiQueue = 64

// readUI reads the UI's lines and hands them to a loop on out, until the
// input ends or stop is closed.
func readUI(in io.Reader, maxLine int, log *slog.Logger, out chan<- uiLine, stop <-chan struct{}) {
	fr := framing.NewReader(in, maxLine)
	for {
		line, err := fr.ReadLine()
		var m uiLine
		var long *framing.LineTooLongError
		switch {
		case errors.As(err, &long):
			m.tooLong = long
		case err != nil:
			if !errors.Is(err, io.EOF) {
				log.Warn("reading the UI's input", "err", err)
			}
			m.eof = true
		case fr.Owned():
			m.line = line // memory of its own (a line over 4 MiB): no copy
		default:
			m.line = append([]byte(nil), line...)
		}
		select {
		case out <- m:
		case <-stop:
			return
		}
		if m.eof {
			return
		}
	}
}

// cliBlock is what a child's reader hands to a loop: whole lines, as many
// as one read brought (each ending in '\n' as read, except perhaps the
// child's final line; one copy and one hand-over for all of them), a line
// over the limit that was dropped, or the child's exit (always its last
// message). gen names the child.
type cliBlock struct {
	gen     int
	lines   string
	tooLong *framing.LineTooLongError
	exit    *session.Exit
	raw     bool // lines holds a pty child's output as read, not lines

	// buf holds lines when it came from a blockPool: the loop hands it
	// back with put once it is done with the block.
	buf []byte
}

// blockPool recycles the memory of CLI blocks between a reader and its
// loop, so that a stream allocates nothing per block and leaves the
// garbage collector idle. The reader hands over its framing.Reader's own
// buffer with each block and reads on into one from the pool
// (Reader.SwapBuffer), so a block is not even copied. A block's lines then alias buf: the loop must
// keep no string of a block after it has put the block's buffer back (the
// ipc translator copies what it keeps; TestGoldenReusedLines checks). A nil
// blockPool gives every block fresh memory of its own.
type blockPool chan []byte

// blockBufSize is the size of a pooled buffer: a framing.Reader's buffer,
// the most ReadBlock returns at once.
const blockBufSize = 64 << 10

func newBlockPool() blockPool { return make(blockPool, cliQueue+2) }

// get returns an empty buffer of blockBufSize bytes, a used one if the
// pool has one (a nil pool has none).
func (p blockPool) get() []byte {
	select {
	case buf := <-p:
		return buf[:0]
	default:
		return make([]byte, 0, blockBufSize)
	}
}

// block makes a cliBlock of a copy of b.
func (p blockPool) block(gen int, b []byte) cliBlock {
	if p == nil || len(b) > blockBufSize {
		return cliBlock{gen: gen, lines: string(b)}
	}
	buf := append(p.get(), b...)
	return cliBlock{gen: gen, lines: unsafe.String(unsafe.SliceData(buf), len(buf)), buf: buf}
}

// put hands a block's buffer back for reuse. Buffers of another size (a
// reader's buffer grown for a long line) are left to the collector.
func (p blockPool) put(buf []byte) {
	if p == nil || cap(buf) != blockBufSize {
		return
	}
	select {
	case p <- buf:
	default:
	}
}

// cliQueue is the capacity of a loop's channel of CLI blocks, each of up
// to 64 KiB: at most 256 KiB read and not yet taken, as much again as the
// CLI's own pipe holds (session.DefaultPipeSize). Each block held is live
// memory the collector's heap goal grows by half again: 16 blocks made an
// acp session's peak RSS about 1.2 MB higher in TestPerfACP
// (docs/performance.md), and its bursts no faster.
const cliQueue = 4

// blockLines yields the lines of a block in order, without their '\n' or
// "\r\n" and skipping blank lines: the lines ReadLine would have returned.
func blockLines(lines string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for rest := lines; rest != ""; {
			line, after, _ := strings.Cut(rest, "\n")
			rest = after
			if line = strings.TrimSuffix(line, "\r"); line != "" && !yield(line) {
				return
			}
		}
	}
}

// readBlocks reads the output of child gen until it ends and hands it to
// send: the whole lines one read brought as one block, a line longer than
// the buffer read whole on its own (up to maxLine), and every line over
// maxLine as a tooLong message in its place. It reports false when send
// did (the loop is gone).
func readBlocks(gen int, r io.Reader, maxLine int, pool blockPool, log *slog.Logger, send func(cliBlock) bool) bool {
	fr := framing.NewReader(r, maxLine)
	for {
		block, err := fr.ReadBlock()
		inBuffer := block != nil // the block aliases the Reader's buffer
		if block == nil && err == nil {
			// A line longer than the buffer: read it whole, up to
			// the limit.
			var line []byte
			if line, err = fr.ReadLine(); err == nil {
				block = append(line, '\n')
				if fr.Owned() {
					// Memory of its own (over 4 MiB): hand it over
					// as it is rather than copy it once more.
					if !send(cliBlock{gen: gen, lines: unsafe.String(unsafe.SliceData(block), len(block))}) {
						return false
					}
					continue
				}
				// In the Reader's buffer, grown for it: hand that
				// over too (below), rather than copy the line and
				// keep the grown buffer for the rest of the session.
				inBuffer = true
			}
		}
		var long *framing.LineTooLongError
		switch {
		case errors.As(err, &long):
			if !send(cliBlock{gen: gen, tooLong: long}) {
				return false
			}
		case err != nil:
			if !errors.Is(err, io.EOF) {
				log.Debug("reading the CLI's output", "err", err)
			}
			return true
		default:
			if inBuffer && len(block) <= maxLine && (pool != nil || len(block) > blockBufSize) {
				// Hand over the Reader's buffer itself and read on
				// into a pooled one (or a new one): no copy of the
				// block. Without a pool only for a line longer than
				// a buffer (a turn's final assistant message and its
				// result hold the whole text): the Reader's buffer
				// grew for it, and would stay that large for the
				// rest of the session besides the copy.
				fresh := pool.get()
				if old := fr.SwapBuffer(fresh); old != nil {
					if !send(cliBlock{gen: gen, lines: unsafe.String(unsafe.SliceData(block), len(block)), buf: old}) {
						return false
					}
					continue
				}
				pool.put(fresh)
			}
			if !sendBlock(gen, block, maxLine, pool, send) {
				return false
			}
		}
	}
}

// sendBlock hands over a block of whole lines. ReadBlock does not apply
// the line limit, so a block longer than maxLine may hold lines over it:
// each of those is reported as ReadLine would report it, between the
// lines before and after it.
func sendBlock(gen int, block []byte, maxLine int, pool blockPool, send func(cliBlock) bool) bool {
	if len(block) > maxLine {
		from := 0 // the start of the lines not handed over yet
		for at := 0; at < len(block); {
			n := bytes.IndexByte(block[at:], '\n')
			next := at + n + 1
			if n < 0 {
				n, next = len(block)-at, len(block)
			}
			size := n
			if size > 0 && block[at+size-1] == '\r' {
				size--
			}
			if size > maxLine {
				if from < at && !send(pool.block(gen, block[from:at])) {
					return false
				}
				head := bytes.Clone(block[at : at+min(size, framing.MaxHead)])
				if !send(cliBlock{gen: gen, tooLong: &framing.LineTooLongError{Size: int64(size), Max: int64(maxLine), Head: head}}) {
					return false
				}
				from = next
			}
			at = next
		}
		if block = block[from:]; len(block) == 0 {
			return true
		}
	}
	return send(pool.block(gen, block))
}

// Earliest returns the earlier of two deadlines; the zero time is none.
func Earliest(next, at time.Time) time.Time {
	if !at.IsZero() && (next.IsZero() || at.Before(next)) {
		return at
	}
	return next
}
