package adapter

// The UI's writer: output to the UI goes through a bounded queue that a
// goroutine of its own writes, so that what serves the session (the
// loop, the drop-in relay's signals) never blocks on a UI that stops
// reading. Whoever fills the queue decides what a full queue means: the
// loop stops reading the CLI (Loop.Run); either way the CLI then blocks on
// its own stdout and nothing is dropped. The drop-in relay's pump queues
// nothing: its Write lends the writer its own buffer and waits until it
// is written, as a plain relay's write waits, but a shutdown can still
// give the output up and release it.
//
// When the writer is idle and nothing is queued, output the UI can take
// at once (ccbridge's stdout a pipe with room, on Linux) is written on the
// caller's goroutine without waiting (session.NoWaitWriter), and only what
// does not fit is handed over: a line through an idle bridge then costs
// one write and no goroutine hand-off, as in a plain relay.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ccbridge/ccbridge/session"
)

const (
	// queueLimit is the soft bound of the output queued for the UI,
	// written or not yet: at it the CLI's output is no longer read. Output
	// made in answer to the UI (a reply, an error) is still queued beyond
	// it, and a line longer than it is queued whole: only the CLI waits.
	// As much again as the UI's pipe holds (session.DefaultPipeSize):
	// enough that the writer never waits for the loop, while the peak
	// memory stays near the relay's (docs/reliability/output.md has the
	// figures). Drop-in's pump queues nothing (Write).
	queueLimit = 256 << 10
	// writeChunk is the most one Write call on the UI's output carries, so
	// that a UI reading slowly is seen to make progress.
	writeChunk = 64 << 10
	// stallLimit: once a shutdown began (a signal, the context), output
	// that the UI takes none of for this long is given up: the UI is not
	// reading, and the staged shutdown must not wait for it.
	stallLimit = 2 * time.Second
)

// ErrUIStalled is the error of output given up on (uiWriter.abandon).
var ErrUIStalled = errors.New("the UI stopped reading its output")

// uiWriter writes the UI's output on a goroutine of its own. Its methods
// are safe for concurrent use. After a failed write (or abandon) every
// byte queued is dropped and failed reports why.
type uiWriter struct {
	w io.Writer

	mu      sync.Mutex
	cond    sync.Cond // the writer waits for output; Write for its bytes to be written
	lent    []byte    // Write's bytes, which the writer takes first
	queued  []byte    // whole lines the writer takes next
	spare   []byte    // an empty buffer, handed back by swap
	writing int       // bytes the writer has taken and not yet written
	err     error     // the first write error, or ErrUIStalled
	total   int64     // bytes handed over, written or not
	closed  bool

	written atomic.Int64  // bytes written so far: the UI's progress
	notify  chan struct{} // a write ended (room, an error, or nothing left)

	// try writes without waiting (session.NoWaitWriter), or is nil: w is
	// not an *os.File, or cannot be written to that way.
	try func([]byte) (int, error)
}

func newUIWriter(w io.Writer) *uiWriter {
	q := &uiWriter{w: w, notify: make(chan struct{}, 1)}
	if f, ok := w.(*os.File); ok {
		q.try = session.NoWaitWriter(f)
	}
	q.cond.L = &q.mu
	go q.run()
	return q
}

// direct writes p on the caller's goroutine when nothing is handed over
// or being written and the UI takes it without waiting, and returns the
// part of p left for the writer: all of it when the UI took nothing (its
// pipe full, or an error, which the writer's own write then meets), the
// tail when it took part. q.mu is held: the write never waits.
func (q *uiWriter) direct(p []byte) []byte {
	if q.try == nil || q.err != nil || len(q.queued) > 0 || q.lent != nil || q.writing > 0 {
		return p
	}
	n, err := q.try(p)
	if errors.Is(err, errors.ErrUnsupported) {
		q.try = nil
	}
	q.written.Add(int64(n))
	return p[n:]
}

// swap queues the whole lines in b without blocking and without a bound
// (the caller keeps its own), and returns an empty buffer for the next
// ones: when nothing else is queued, b itself is queued and the writer's
// spare buffer comes back, so a steady stream copies nothing.
func (q *uiWriter) swap(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.total += int64(len(b))
	if rest := q.direct(b); len(rest) < len(b) {
		// Written, all or some: the rest (rare) is queued as a copy, and
		// the caller keeps its buffer.
		if len(rest) > 0 {
			q.queued = append(q.queued, rest...)
			q.cond.Broadcast()
		}
		if cap(b) > pendingKeep {
			return nil
		}
		return b[:0]
	}
	switch {
	case q.err != nil:
	case len(q.queued) == 0:
		b, q.queued = q.queued, b
		q.cond.Broadcast()
	default:
		q.queued = append(q.queued, b...)
	}
	if cap(b) > pendingKeep {
		return nil
	}
	return b[:0]
}

// Write writes p after what was handed over before it, and returns once
// p is written: at once when the UI takes it without waiting (direct),
// else through the writer, which is lent p itself (no copy) while Write
// waits. Like a plain relay's write it waits for the UI, and it holds no
// memory of its own; unlike it, it returns as soon as a write failed or
// the output was given up (abandon), with that error, even while the
// writer is still blocked in a write of p: p must not be written to
// after such an error (the write may still read it).
func (q *uiWriter) Write(p []byte) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.err == nil && (q.lent != nil || len(q.queued) > 0 || q.writing > 0) {
		q.cond.Wait()
	}
	q.total += int64(len(p))
	if q.err != nil {
		return 0, q.err
	}
	if rest := q.direct(p); len(rest) > 0 {
		q.lent = rest
		q.cond.Broadcast()
		for q.err == nil && (q.lent != nil || q.writing > 0) {
			q.cond.Wait()
		}
		if q.err != nil {
			return 0, q.err
		}
	}
	return len(p), nil
}

// pending is how many bytes are handed over or being written.
func (q *uiWriter) pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.lent) + len(q.queued) + q.writing
}

// failed is the error of a failed write, ErrUIStalled after abandon, or
// nil.
func (q *uiWriter) failed() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.err
}

// progress counts the bytes written so far.
func (q *uiWriter) progress() int64 { return q.written.Load() }

// abandon gives the output up: what is handed over is dropped, the write
// under way ends after its current chunk, a waiting Write returns, and
// later output is dropped. It returns how many bytes were not written.
func (q *uiWriter) abandon() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err == nil {
		q.err = ErrUIStalled
	}
	q.lent, q.queued = nil, q.queued[:0]
	q.cond.Broadcast()
	return q.total - q.written.Load()
}

// close ends the writer once what is queued is written. A write the UI
// never takes keeps the goroutine blocked until the process exits.
func (q *uiWriter) close() {
	q.mu.Lock()
	q.closed = true
	q.cond.Broadcast()
	q.mu.Unlock()
}

// result is the error a session ends with: nil when everything was
// written.
func (q *uiWriter) result() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err == nil {
		return nil
	}
	return fmt.Errorf("writing to the UI: %w (%d bytes not written)", q.err, q.total-q.written.Load())
}

func (q *uiWriter) run() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		for q.lent == nil && len(q.queued) == 0 && !q.closed {
			q.cond.Wait()
		}
		buf, lent := q.lent, q.lent != nil
		switch {
		case lent:
			q.lent = nil // Write's: its caller's to keep
		case len(q.queued) == 0:
			return
		default:
			buf = q.queued
			q.queued, q.spare = q.spare, nil
		}
		q.writing = len(buf)
		q.mu.Unlock()
		err := q.write(buf)
		q.mu.Lock()
		q.writing = 0
		if !lent && cap(buf) <= pendingKeep {
			q.spare = buf[:0]
		}
		if err != nil && q.err == nil {
			q.err = err
		}
		if q.err != nil {
			q.lent, q.queued = nil, q.queued[:0]
		}
		q.cond.Broadcast()
		select {
		case q.notify <- struct{}{}:
		default:
		}
	}
}

// write writes buf in chunks of at most writeChunk bytes, counting the
// progress; it stops early once the output was given up.
func (q *uiWriter) write(buf []byte) error {
	for len(buf) > 0 {
		chunk := buf[:min(len(buf), writeChunk)]
		n, err := q.w.Write(chunk)
		q.written.Add(int64(n))
		if err == nil && n < len(chunk) {
			err = io.ErrShortWrite
		}
		if err != nil {
			return err
		}
		buf = buf[n:]
		if len(buf) > 0 && q.failed() != nil {
			return nil
		}
	}
	return nil
}
