//go:build !linux

package session

import "errors"

// startPTY is not supported here: raw mode needs termios requests that the
// syscall package only has for Linux.
func (c *Child) startPTY() error {
	return errors.ErrUnsupported
}

func (c *Child) ptyEOF() error { return errors.ErrUnsupported }
