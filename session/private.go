package session

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// PrivateDir is a folder of ccbridge's own for what the CLI must read but
// no other user may see: secrets (an MCP server's environment, an
// Authorization header) never go on the CLI's command line, which every
// local user can read (ps, /proc/PID/cmdline); they go in a file here, and
// the command line names the file.
//
// The folder is made on the first WriteFile, under os.TempDir(), with mode
// 0700; each file in it has mode 0600. Remove deletes the folder and
// everything in it; the owner calls it when the session ends, on every way
// out ccbridge controls (the end of the UI's input, a signal ccbridge
// handles, an error). After a kill -9 the folder stays behind: nothing in
// ccbridge runs then.
//
// The zero value is ready to use. Its methods are safe for concurrent use.
type PrivateDir struct {
	mu      sync.Mutex
	path    string // "" until the first WriteFile
	removed bool
}

// ErrRemoved is returned by WriteFile after Remove.
var ErrRemoved = errors.New("session: the private folder was removed")

// WriteFile writes data to a new file of mode 0600 in the folder, named
// after pattern as os.CreateTemp does, and returns its absolute path.
func (d *PrivateDir) WriteFile(pattern string, data []byte) (path string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.removed {
		return "", ErrRemoved
	}
	if d.path == "" {
		dir, err := os.MkdirTemp("", "ccbridge-")
		if err != nil {
			return "", fmt.Errorf("session: making a private folder: %w", err)
		}
		if dir, err = filepath.Abs(dir); err != nil {
			os.Remove(dir) // Best effort.
			return "", err
		}
		d.path = dir
	}
	f, err := os.CreateTemp(d.path, pattern) // mode 0600
	if err != nil {
		return "", fmt.Errorf("session: writing a private file: %w", err)
	}
	path = f.Name()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path) // Best effort.
		return "", fmt.Errorf("session: writing a private file: %w", err)
	}
	return path, nil
}

// RemoveFile deletes one file that WriteFile made. A missing file is not
// an error.
func (d *PrivateDir) RemoveFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Path is the folder's path, or "" before the first WriteFile.
func (d *PrivateDir) Path() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.path
}

// Remove deletes the folder and everything in it; later WriteFile calls
// fail. It is safe to call more than once.
func (d *PrivateDir) Remove() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.removed = true
	if d.path == "" {
		return nil
	}
	return os.RemoveAll(d.path)
}
