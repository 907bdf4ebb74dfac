// Package framing turns a byte stream into newline-delimited lines and
// lines back into a byte stream. It owns only that: it knows nothing of
// JSON or of the protocol carried in the lines.
//
// # Reading
//
// A [Reader] wraps one io.Reader and keeps a read-ahead buffer (64 KiB,
// grown by [Reader.ReadLine] up to 4 MiB for longer lines; a line longer
// still is collected in chunks and handed out in memory of its own, see
// [Reader.Owned]) that must survive between
// lines, so a stream gets exactly one long-lived Reader. A Reader is not
// safe for concurrent use: one goroutine owns it and makes every call.
//
// [Reader.ReadLine] returns one whole line at a time, without its "\n" or
// "\r\n". Blank lines, including lines that hold only "\r", are skipped.
// A line longer than the Reader's limit is skipped without being held: it
// is dropped as soon as it is known to be over the limit, the call returns
// a [*LineTooLongError] (errors.Is(err, [ErrLineTooLong]) holds) with the
// line's size and a copy of its first 16 KiB (Head, so that a caller can
// tell what it lost), and the next call goes on with the following line. A final line
// without a terminator is returned before io.EOF.
//
// [Reader.ReadSegment] is the streaming form, for lines too long to hold:
// it hands out a line in pieces of at most 64 KiB and has no length limit.
// ReadLine and ReadSegment may be mixed only at line boundaries.
//
// The slices that ReadLine and ReadSegment return point into the Reader's
// buffer. They are valid only until the next call on the Reader; a caller
// that keeps a line, or hands it to another goroutine, copies it first
// (unless [Reader.Owned] says the line is its own).
//
// After a read error other than io.EOF the Reader is finished: that call
// and every later one return the same wrapped error. Lines that were
// complete before the error are still returned first; a partial line is
// dropped. io.EOF is returned unwrapped, once the buffered lines are
// consumed, and is not sticky.
//
// # Writing
//
// A [Writer] is safe for concurrent use. It serialises whole lines under
// one mutex, so lines written from different goroutines never interleave.
// [Writer.WriteLine] writes a line and its "\n" in a single Write call on
// the underlying writer; [Writer.AppendLine] buffers lines until
// [Writer.Flush] (or until 64 KiB are pending), which lets a forwarder
// coalesce writes while [Reader.Buffered] says more input is ready, without
// adding latency; [Writer.Stream] writes one line in pieces while holding
// the lock. A line must not contain "\n": such a line is rejected with
// [ErrNewline] and nothing is written. The Writer copies the bytes it is
// given before returning, so callers may reuse their slices.
//
// After a failed write the Writer is broken: every later call returns the
// same error and writes nothing.
package framing
