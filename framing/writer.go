package framing

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
)

// ErrNewline is returned for a line that contains '\n'. Nothing of such a
// line is written, and the Writer stays usable.
var ErrNewline = errors.New("framing: line contains a newline")

// errStreamDone is returned by the io.Writer that Stream passes to fn
// when it is used after fn has returned.
var errStreamDone = errors.New("framing: Stream writer used after Stream returned")

const (
	// flushSize is how many pending bytes AppendLine and Stream collect
	// before writing them out without waiting for Flush or the line's end.
	flushSize = 64 << 10
	// keepSize is the largest buffer a Writer keeps for reuse; a buffer
	// grown beyond it for one huge line is dropped after the write.
	keepSize = 4 << 20
)

// Writer writes newline-delimited lines to an io.Writer.
//
// A Writer is safe for concurrent use: it serialises whole lines under
// one mutex, so two lines never interleave. After a failed write every
// later call returns the same error.
type Writer struct {
	mu      sync.Mutex
	w       io.Writer
	flusher interface{ Flush() error } // w, if it has a Flush method
	buf     []byte                     // pending bytes: whole lines, then at most one partial line from Stream
	err     error                      // sticky write error, already wrapped
	sw      streamWriter
}

// NewWriter returns a Writer that writes to w. If w has a method
// Flush() error (as *bufio.Writer does), the Writer calls it after every
// write that ends a line, so "flushed" holds all the way down.
func NewWriter(w io.Writer) *Writer {
	fw := &Writer{w: w}
	fw.flusher, _ = w.(interface{ Flush() error })
	return fw
}

// WriteLine writes line and a '\n', together with any lines pending from
// AppendLine, in a single Write call on the underlying writer, and flushes.
// A line longer than 4 MiB is not copied: it is written on its own after
// the pending lines, its '\n' by a second Write.
// It returns ErrNewline, writing nothing, if line contains '\n'.
func (w *Writer) WriteLine(line []byte) error {
	bad := bytes.IndexByte(line, '\n') >= 0
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if bad {
		return ErrNewline
	}
	if len(line) > keepSize {
		return w.writeLong(line)
	}
	w.buf = append(w.buf, line...)
	w.buf = append(w.buf, '\n')
	return w.flushLocked()
}

// AppendLine adds line and a '\n' to the Writer's buffer without writing
// it. Pending lines are written by the next Flush, WriteLine or Stream, or
// by AppendLine itself once 64 KiB are pending; only whole lines are ever
// written. A line longer than 4 MiB is written at once, as WriteLine
// writes it, rather than copied. It returns ErrNewline, buffering nothing,
// if line contains '\n'.
func (w *Writer) AppendLine(line []byte) error {
	bad := bytes.IndexByte(line, '\n') >= 0
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if bad {
		return ErrNewline
	}
	if len(line) > keepSize {
		return w.writeLong(line)
	}
	w.buf = append(w.buf, line...)
	w.buf = append(w.buf, '\n')
	if len(w.buf) >= flushSize {
		return w.flushLocked()
	}
	return nil
}

// writeLong writes a line longer than keepSize without copying it
// into the buffer: the pending lines, the line itself, then its '\n',
// and flushes. If the line's write fails part way, the Writer is broken
// (as after any failed write) and no '\n' follows the partial line.
func (w *Writer) writeLong(line []byte) error {
	if err := w.writeLocked(); err != nil {
		return err
	}
	if err := w.writeOut(line); err != nil {
		return err
	}
	w.buf = append(w.buf, '\n')
	return w.flushLocked()
}

// Flush writes the lines pending from AppendLine in one Write call.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	return w.flushLocked()
}

// Stream writes one line in pieces. It holds the Writer's lock while fn
// writes the line's bytes to the io.Writer it is given, then adds the '\n'
// and flushes; lines pending from AppendLine go out first. The bytes are
// written out in chunks of about 64 KiB as they come, so a line of any
// length passes through without being held whole (the pieces from
// ReadSegment, for example).
//
// fn must not write '\n' (such a Write fails with ErrNewline and the line
// is abandoned), must not call other methods of this Writer (they would
// deadlock), and must not keep the io.Writer after it returns.
//
// If fn returns an error, or a Write inside it failed, Stream returns that
// error. When none of the line has reached the underlying writer yet, the
// line is dropped and the Writer stays usable. When part of it has, the
// line cannot be completed or withdrawn: the Writer is broken, and every
// later call returns an error that wraps fn's error. No '\n' is written
// after a partial line, so a peer never sees a cut line as complete. The
// same holds if fn panics; the panic is passed on.
func (w *Writer) Stream(fn func(w io.Writer) error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	sw := &w.sw
	*sw = streamWriter{w: w, active: true, start: len(w.buf)}
	returned := false
	defer func() {
		sw.active = false
		if !returned && w.err == nil {
			w.err = errors.New("framing: Stream callback panicked; line left incomplete")
			w.buf = nil
		}
	}()
	err := fn(sw)
	returned = true
	if w.err != nil {
		return w.err // a write inside fn failed
	}
	if err == nil {
		err = sw.err // fn ignored a rejected Write
	}
	if err != nil {
		if !sw.wrote {
			w.buf = w.buf[:sw.start]
			return err
		}
		w.err = fmt.Errorf("framing: line left incomplete: %w", err)
		w.buf = nil
		return w.err
	}
	w.buf = append(w.buf, '\n')
	return w.flushLocked()
}

// streamWriter is the io.Writer that Stream passes to fn. It lives in the
// Writer and is reused; w.mu is held whenever it is active.
type streamWriter struct {
	w      *Writer
	active bool
	start  int   // len(w.buf) when the line began, while nothing is written out
	wrote  bool  // part of the line has reached the underlying writer
	err    error // a rejected Write
}

func (s *streamWriter) Write(p []byte) (int, error) {
	if !s.active {
		return 0, errStreamDone
	}
	w := s.w
	if w.err != nil {
		return 0, w.err
	}
	if s.err != nil {
		return 0, s.err
	}
	if bytes.IndexByte(p, '\n') >= 0 {
		s.err = ErrNewline
		return 0, s.err
	}
	w.buf = append(w.buf, p...)
	if len(w.buf) >= flushSize {
		if err := w.writeLocked(); err != nil {
			return 0, err
		}
		s.wrote = true
	}
	return len(p), nil
}

// WriteBlock writes p, one or more whole lines each ending in '\n', as
// they are: the pending lines first, then p in one Write call, without
// copying p. It is the write side of Reader.ReadBlock.
func (w *Writer) WriteBlock(p []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if len(p) == 0 {
		return nil
	}
	if p[len(p)-1] != '\n' {
		return errors.New("framing: WriteBlock: the block does not end with a newline")
	}
	if len(w.buf) > 0 {
		if len(w.buf)+len(p) <= flushSize {
			w.buf = append(w.buf, p...)
			return w.flushLocked()
		}
		if err := w.writeLocked(); err != nil {
			return err
		}
	}
	if err := w.writeOut(p); err != nil {
		return err
	}
	return w.flushOut()
}

// flushLocked writes the pending bytes and then flushes the underlying
// writer, if it can be flushed.
func (w *Writer) flushLocked() error {
	if err := w.writeLocked(); err != nil {
		return err
	}
	return w.flushOut()
}

// flushOut flushes the underlying writer, if it can be flushed.
func (w *Writer) flushOut() error {
	if w.flusher != nil {
		if err := w.flusher.Flush(); err != nil {
			return w.fail(err)
		}
	}
	return nil
}

// writeLocked writes the pending bytes in one Write call.
func (w *Writer) writeLocked() error {
	if len(w.buf) == 0 {
		return nil
	}
	if err := w.writeOut(w.buf); err != nil {
		return err
	}
	if cap(w.buf) > keepSize {
		w.buf = nil
	} else {
		w.buf = w.buf[:0]
	}
	return nil
}

// writeOut writes p in one Write call; a short write is an error.
func (w *Writer) writeOut(p []byte) error {
	n, err := w.w.Write(p)
	if err == nil && n != len(p) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return w.fail(err)
	}
	return nil
}

// fail breaks the Writer.
func (w *Writer) fail(err error) error {
	w.err = fmt.Errorf("framing: write: %w", err)
	w.buf = nil
	return w.err
}
