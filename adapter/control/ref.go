package control

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ccbridge/ccbridge/mapping/lane000"
)

// DefaultRefMax is the largest file ReadRef reads when max is 0 or less
// (--ref-max).
const DefaultRefMax = 64 << 20

// RefError is why a content_ref was refused. Detail is fit for an ack's
// detail; it never holds the file's contents.
type RefError struct{ Detail string }

func (e *RefError) Error() string { return e.Detail }

func refErr(format string, args ...any) error {
	return &RefError{Detail: fmt.Sprintf(format, args...)}
}

// ReadRef reads the file ref names, once, and checks it: an absolute path
// with no ".." element, which resolves (symlinks followed, anywhere in the
// path) under one of roots (each root made absolute, cleaned and resolved
// too), to a regular file of at most max bytes (DefaultRefMax when max <= 0)
// whose size is ref.Size and whose SHA-256 is ref.SHA256 (hex, either case),
// and ref not expired at now. An empty file is refused too (empty content
// is). ref.MIME is not checked. Every refusal is a *RefError.
//
// The bytes returned are the bytes checked: the file is opened once, its
// size is taken from the open file, and the hash is of exactly the bytes
// read from it. See docs/control/ref-and-socket.md for why the checks
// cannot be raced.
func ReadRef(roots []string, ref lane000.ContentRef, max int64, now time.Time) ([]byte, error) {
	return readRef(roots, ref, max, now, nil)
}

// readRef is ReadRef; beforeOpen, when not nil, runs between the checks on
// the path and the open (tests swap the file there).
func readRef(roots []string, ref lane000.ContentRef, max int64, now time.Time, beforeOpen func(resolved string)) ([]byte, error) {
	if max <= 0 {
		max = DefaultRefMax
	}
	// Checks that need no file system come first.
	if len(roots) == 0 {
		return nil, refErr("content_ref is not allowed: no --ref-root is configured")
	}
	if !ref.ExpiresAt.IsZero() && ref.ExpiresAt.Before(now) {
		return nil, refErr("content_ref expired at %s", ref.ExpiresAt.UTC().Format(time.RFC3339))
	}
	want, err := hex.DecodeString(ref.SHA256)
	if err != nil || len(want) != sha256.Size {
		return nil, refErr("content_ref sha256 must be 64 hex digits")
	}
	switch {
	case ref.Size <= 0:
		return nil, refErr("content_ref size_bytes must be positive (empty content is refused), got %d", ref.Size)
	case ref.Size > max:
		return nil, refErr("content_ref size_bytes %d is over --ref-max %d", ref.Size, max)
	}
	p := ref.Path
	if p == "" {
		return nil, refErr("content_ref path is empty")
	}
	if !filepath.IsAbs(p) {
		return nil, refErr("content_ref path %q is relative; it must be absolute", p)
	}
	if hasDotDot(p) {
		return nil, refErr("content_ref path %q contains \"..\"", p)
	}
	p = filepath.Clean(p)

	clean, resolvedRoots := refRoots(roots)
	if len(resolvedRoots) == 0 {
		return nil, refErr("content_ref is not allowed: no --ref-root exists")
	}
	// Lexically outside every root (as given or resolved): refused before
	// the path is looked at, so that a ref cannot probe the file system
	// outside the roots.
	if !underAny(clean, p) && !underAny(resolvedRoots, p) {
		return nil, refErr("content_ref path %q is outside every --ref-root", p)
	}
	resolved, err := filepath.EvalSymlinks(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, refErr("content_ref path %q does not exist", p)
		}
		return nil, refErr("content_ref path %q cannot be resolved: %v", p, pathErr(err))
	}
	if !underAny(resolvedRoots, resolved) {
		return nil, refErr("content_ref path %q resolves through a symlink to %q, outside every --ref-root", p, resolved)
	}
	// resolved holds no symlink, so Lstat and Stat agree; Lstat makes sure.
	// Refusing a non-regular file here means a fifo is never opened.
	st, err := os.Lstat(resolved)
	if err != nil {
		return nil, refErr("content_ref path %q cannot be read: %v", p, pathErr(err))
	}
	if !st.Mode().IsRegular() {
		return nil, refErr("content_ref path %q is not a regular file (%s)", p, fileKind(st.Mode()))
	}
	if beforeOpen != nil {
		beforeOpen(resolved)
	}
	// O_NONBLOCK: should the path have become a fifo since the Lstat, the
	// open does not wait for a writer; the SameFile check then refuses it.
	f, err := os.OpenFile(resolved, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, refErr("content_ref path %q cannot be opened: %v", p, pathErr(err))
	}
	defer f.Close()
	fst, err := f.Stat()
	if err != nil {
		return nil, refErr("content_ref path %q cannot be read: %v", p, pathErr(err))
	}
	// The open file must be the very file checked above (same device and
	// inode), which was a regular file under a root: if a component of the
	// path was swapped for a symlink, or the file for another, between the
	// Lstat and the open, it is not.
	if !os.SameFile(st, fst) || !fst.Mode().IsRegular() {
		return nil, refErr("content_ref path %q changed while it was being checked", p)
	}
	size := fst.Size()
	switch {
	case size > max:
		return nil, refErr("content_ref file is %d bytes, over --ref-max %d", size, max)
	case size != ref.Size:
		return nil, refErr("content_ref size_bytes is %d but the file has %d bytes", ref.Size, size)
	}
	// One byte more than the size shows a file that grew since the Stat;
	// the buffer bounds the read at size+1 <= max+1 bytes.
	buf := make([]byte, size+1)
	n, err := io.ReadFull(f, buf)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, refErr("content_ref path %q cannot be read: %v", p, pathErr(err))
	}
	if int64(n) != ref.Size {
		return nil, refErr("content_ref file changed size while it was read (size_bytes %d)", ref.Size)
	}
	buf = buf[:n]
	sum := sha256.Sum256(buf)
	if string(sum[:]) != string(want) {
		return nil, refErr("content_ref sha256 differs: the file's is %x", sum[:])
	}
	return buf, nil
}

// hasDotDot reports whether p has a ".." element, before any cleaning.
func hasDotDot(p string) bool {
	for el := range strings.SplitSeq(filepath.ToSlash(p), "/") {
		if el == ".." {
			return true
		}
	}
	return false
}

// refRoots returns the roots made absolute and cleaned, and those of them
// that exist resolved (symlinks followed).
func refRoots(roots []string) (clean, resolved []string) {
	for _, r := range roots {
		a, err := filepath.Abs(r)
		if err != nil {
			continue
		}
		clean = append(clean, a)
		if res, err := filepath.EvalSymlinks(a); err == nil {
			resolved = append(resolved, res)
		}
	}
	return clean, resolved
}

// underAny reports whether the clean absolute path p is one of roots or
// below one.
func underAny(roots []string, p string) bool {
	for _, r := range roots {
		if p == r {
			return true
		}
		if strings.HasSuffix(r, string(filepath.Separator)) { // the file system's root
			if strings.HasPrefix(p, r) {
				return true
			}
		} else if strings.HasPrefix(p, r+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// pathErr drops the path from an *fs.PathError (the detail names it already).
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a fifo"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	}
	return "not regular"
}
