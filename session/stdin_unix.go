//go:build unix

package session

import (
	"fmt"
	"os"
	"syscall"
)

// WriteNow writes to the child's stdin as much of p as its pipe (or
// terminal) takes now, without waiting: it returns how many bytes that
// was, none when the pipe is full, and an error only when the write
// failed (stdin closed, the child gone). A Write of the rest waits for
// the child to read; the session core does that on a goroutine of its
// own, so that a child that stops reading never blocks the session.
// Unix only.
func (c *Child) WriteNow(p []byte) (int, error) {
	if c.stdinClosed.Load() {
		return 0, fmt.Errorf("session: writing to claude stdin: %w", os.ErrClosed)
	}
	n, err := writeNow(c.stdinConn, p)
	if err != nil {
		err = fmt.Errorf("session: writing to claude stdin: %w", err)
	}
	return n, err
}

// writeNow writes what conn takes of p now, without waiting for room.
func writeNow(conn syscall.RawConn, p []byte) (n int, err error) {
	if conn == nil {
		return 0, os.ErrInvalid
	}
	werr := conn.Write(func(fd uintptr) bool {
		for n < len(p) {
			m, e := syscall.Write(int(fd), p[n:])
			if m > 0 {
				n += m
			}
			switch e {
			case nil:
				if m <= 0 {
					return true
				}
			case syscall.EINTR:
			case syscall.EAGAIN:
				return true // full: never wait for the poller
			default:
				err = e
				return true
			}
		}
		return true
	})
	if err == nil {
		err = werr
	}
	return n, err
}
