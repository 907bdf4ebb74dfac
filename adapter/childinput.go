package adapter

// A child's input: what the loop writes to a CLI goes through a bounded
// queue of the child's own, so that the loop never blocks on a child that
// stops reading its stdin (a CLI stopped, hung, or slow to take a large
// prompt). It is the UI writer's counterpart (uiwriter.go). While a
// child's queue is at its bound the loop stops taking the UI's ordinary
// lines (Loop.Run), so the UI waits for the CLI and nothing is dropped;
// signals, urgent UI lines (interrupts, cancels), deadlines, submitted
// work and child exits are still served, and what they write is queued
// beyond the bound.
//
// The hot path stays on the loop: while nothing is queued, a line is
// written at once with the child's WriteNow (session.Child on Unix),
// which never waits. Only what the pipe does not take is queued, and a
// goroutine of the child's writes it, blocking for as long as the child
// reads nothing; it ends once the queue is empty. A child without
// WriteNow has every line written by that goroutine. Order is kept
// either way: the loop writes itself only when nothing is queued or
// being written.
//
// A staged shutdown never waits for the queue: it closes the child's
// stdin (or kills the child), which ends the write under way with an
// error, and what was not written is dropped with the child.

import (
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
)

// inputLimit is the soft bound of what is queued for one child, written
// or not yet: at it the loop stops taking the UI's ordinary lines. What
// is written beyond it (an interrupt, an answer made on the loop) is
// queued all the same, and a line longer than it is queued whole; only
// the UI waits. As much as the UI's side holds (queueLimit).
const inputLimit = 256 << 10

// scratchKeep: a line shorter than this is written at once together with
// its '\n', copied into a buffer the loop keeps.
const scratchKeep = 64 << 10

var newline = []byte{'\n'}

// writeNower is a child that can write to its stdin without waiting:
// WriteNow returns how much of p the pipe took now (maybe nothing).
// session.Child is one on Unix.
type writeNower interface {
	WriteNow(p []byte) (int, error)
}

// Why a child's input ended, besides a failed write.
var (
	errInputClosed = errors.New("the CLI's stdin was closed")
	errChildGone   = errors.New("the CLI exited")
)

// childInput is one child's input. write, close, stop and gone are
// called on the loop; the writer goroutine (run) is the only other user.
type childInput struct {
	child Child
	now   writeNower // nil: every line goes through the writer goroutine
	log   *slog.Logger
	// full counts the loop's inputs at their bound; wake tells the loop
	// that one went under it (or ended). Both are the loop's.
	full *atomic.Int32
	wake chan<- struct{}

	scratch []byte // the loop's: one line and its '\n', for WriteNow

	mu      sync.Mutex
	queued  []byte // bytes the writer takes next, in order
	spare   []byte // an empty buffer, handed back by the writer
	writing int    // bytes the writer has taken and not yet written
	running bool   // the writer goroutine runs
	closing bool   // CloseStdin: close once everything queued is written
	stopped bool   // a staged shutdown or a kill began: a failed write is no news
	over    bool   // counted in full
	err     error  // the input is over: a failed write, stdin closed, the child gone
	lost    int64  // bytes not written because the input was over
}

func newChildInput(child Child, log *slog.Logger, full *atomic.Int32, wake chan<- struct{}) *childInput {
	in := &childInput{child: child, log: log, full: full, wake: wake}
	in.now, _ = child.(writeNower)
	return in
}

// write sends line (and a '\n' after it with nl) to the child, after
// what was written before it, without waiting. Once the input is over
// (stdin closed or closing, a failed write, the child gone) it is
// dropped.
func (in *childInput) write(line []byte, nl bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.err != nil || in.closing {
		in.drop(len(line)+boolInt(nl), "writing to the CLI after its input ended")
		return
	}
	if in.now != nil && !in.running && len(in.queued) == 0 {
		// Nothing before it: straight into the pipe, as far as it goes.
		// A short line and its '\n' in one write; a long one is not
		// copied, its '\n' follows.
		b, tail := line, nl
		if nl && len(line) < scratchKeep {
			in.scratch = append(append(in.scratch[:0], line...), '\n')
			b, tail = in.scratch, false
		}
		n, err := in.now.WriteNow(b)
		if err == nil && n == len(b) && tail {
			var m int
			m, err = in.now.WriteNow(newline)
			tail = m == 0
		}
		if err != nil {
			in.fail(err)
			in.drop(len(b)-n+boolInt(tail), "")
			return
		}
		if n == len(b) && !tail {
			return
		}
		in.queued = append(in.queued, b[n:]...)
		if tail {
			in.queued = append(in.queued, '\n')
		}
	} else {
		in.queued = append(in.queued, line...)
		if nl {
			in.queued = append(in.queued, '\n')
		}
	}
	in.account()
	in.start()
}

// close closes the child's stdin once everything queued is written; what
// is written later is dropped.
func (in *childInput) close() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closing || in.err != nil {
		return
	}
	in.closing = true
	in.start() // the writer closes it, off the loop, after what is queued
}

// stop notes that the child is being stopped: its stdin is about to be
// closed (or the child killed), which ends a write that waits. The queue
// is left to that: a child still reading takes what it can meanwhile.
func (in *childInput) stop() {
	in.mu.Lock()
	in.stopped = true
	in.mu.Unlock()
}

// gone ends the input of a child that has exited: what is queued is
// dropped.
func (in *childInput) gone() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.stopped = true
	in.fail(errChildGone)
	if n := in.lost + int64(in.writing); n > 0 {
		in.log.Info("input for the CLI was not written", "bytes", n, "err", in.err)
	}
}

// pending is how many bytes are queued or being written.
func (in *childInput) pending() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.queued) + in.writing
}

// start starts the writer goroutine unless it runs. in.mu is held.
func (in *childInput) start() {
	if !in.running {
		in.running = true
		go in.run()
	}
}

// fail ends the input with err (the first reason stays) and drops what
// is queued. in.mu is held.
func (in *childInput) fail(err error) {
	if in.err == nil {
		in.err = err
		switch {
		case err == errInputClosed || err == errChildGone:
		case in.stopped:
			in.log.Debug("writing to the CLI while it stops", "err", err)
		default:
			// The child is going; its exit is reported when its reader
			// sees it.
			in.log.Warn("writing to the CLI", "err", err)
		}
	}
	in.drop(len(in.queued), "")
	in.queued = in.queued[:0]
	in.account()
}

// drop counts bytes that will not be written. in.mu is held.
func (in *childInput) drop(n int, why string) {
	if n <= 0 {
		return
	}
	in.lost += int64(n)
	if why != "" {
		in.log.Debug(why, "bytes", n, "err", in.err)
	}
}

// account keeps the loop's count of inputs at their bound, and wakes the
// loop when this one goes under it. in.mu is held.
func (in *childInput) account() {
	over := in.err == nil && len(in.queued)+in.writing >= inputLimit
	if over == in.over {
		return
	}
	in.over = over
	if over {
		in.full.Add(1)
		return
	}
	in.full.Add(-1)
	select {
	case in.wake <- struct{}{}:
	default:
	}
}

// run writes what is queued, in order, then closes stdin if asked, and
// ends once nothing is left to do.
func (in *childInput) run() {
	in.mu.Lock()
	defer in.mu.Unlock()
	for {
		switch {
		case in.err == nil && len(in.queued) > 0:
			buf := in.queued
			in.queued, in.spare = in.spare, nil
			in.writing = len(buf)
			in.mu.Unlock()
			err := in.writeOut(buf)
			in.mu.Lock()
			in.drop(in.writing, "")
			in.writing = 0
			if cap(buf) <= pendingKeep {
				in.spare = buf[:0]
			}
			if err != nil {
				in.fail(err)
			}
			in.account()
		case in.err == nil && in.closing:
			in.err = errInputClosed
			in.account()
			in.mu.Unlock()
			err := in.child.CloseStdin()
			in.mu.Lock()
			if err != nil {
				in.log.Debug("closing the CLI's stdin", "err", err)
			}
		default:
			in.running = false
			return
		}
	}
}

// writeOut writes buf to the child's stdin in pieces of at most
// writeChunk bytes, so that the loop sees the queue shrink as the child
// reads; it stops early once the input is over.
func (in *childInput) writeOut(buf []byte) error {
	w := in.child.Stdin()
	for len(buf) > 0 {
		chunk := buf[:min(len(buf), writeChunk)]
		n, err := w.Write(chunk)
		if err == nil && n < len(chunk) {
			err = io.ErrShortWrite
		}
		in.mu.Lock()
		in.writing -= n
		in.account()
		over := in.err != nil
		in.mu.Unlock()
		if err != nil || over {
			return err
		}
		buf = buf[n:]
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
