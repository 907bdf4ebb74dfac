//go:build unix

package control

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ccbridge/ccbridge/mapping/lane000"
)

var refNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// refDir makes a temporary folder with the root "root" and the folder
// "out" beside it, both resolved (TMPDIR may itself be a symlink).
func refDir(t *testing.T) (root, out string) {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, out = filepath.Join(d, "root"), filepath.Join(d, "out")
	for _, p := range []string{root, out} {
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return root, out
}

func writeFile(t *testing.T, p string, data []byte) {
	t.Helper()
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, p string) {
	t.Helper()
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

func refTo(p string, data []byte) lane000.ContentRef {
	sum := sha256.Sum256(data)
	return lane000.ContentRef{Path: p, SHA256: hex.EncodeToString(sum[:]), MIME: "text/plain", Size: int64(len(data))}
}

// wantRefErr checks that err is a *RefError whose Detail holds want.
func wantRefErr(t *testing.T, data []byte, err error, want string) {
	t.Helper()
	var re *RefError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v (%T), want a *RefError with %q", err, err, want)
	}
	if !strings.Contains(re.Detail, want) {
		t.Fatalf("detail = %q, want it to hold %q", re.Detail, want)
	}
	if data != nil {
		t.Fatalf("data = %q with an error", data)
	}
}

func TestReadRefOK(t *testing.T) {
	root, _ := refDir(t)
	content := []byte("line one\nline two\n")
	p := filepath.Join(root, "sub", "in.txt")
	if err := os.Mkdir(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, p, content)
	ref := refTo(p, content)
	ref.SHA256 = strings.ToUpper(ref.SHA256) // hex in either case
	ref.ExpiresAt = refNow.Add(time.Minute)
	got, err := ReadRef([]string{"/nonexistent-root", root}, ref, 0, refNow)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, content) {
		t.Fatalf("got %q, want %q", got, content)
	}
	// A symlink that stays inside the roots is followed.
	link := filepath.Join(root, "link")
	symlink(t, "sub/in.txt", link)
	if got, err := ReadRef([]string{root}, refTo(link, content), 0, refNow); err != nil || !bytes.Equal(got, content) {
		t.Fatalf("through an inner symlink: %q, %v", got, err)
	}
	// Exactly max bytes is allowed.
	if _, err := ReadRef([]string{root}, ref, int64(len(content)), refNow); err != nil {
		t.Fatalf("at max: %v", err)
	}
}

func TestReadRefRootIsSymlink(t *testing.T) {
	root, out := refDir(t)
	content := []byte("hello")
	writeFile(t, filepath.Join(root, "f"), content)
	linkRoot := filepath.Join(out, "rootlink")
	symlink(t, root, linkRoot)
	// The root given as a symlink: paths through it and through its
	// target are both under it.
	for _, p := range []string{filepath.Join(linkRoot, "f"), filepath.Join(root, "f")} {
		got, err := ReadRef([]string{linkRoot}, refTo(p, content), 0, refNow)
		if err != nil || !bytes.Equal(got, content) {
			t.Fatalf("%s: %q, %v", p, got, err)
		}
	}
	// And a file beside the symlinked root's target is still outside.
	writeFile(t, filepath.Join(out, "g"), content)
	_, err := ReadRef([]string{linkRoot}, refTo(filepath.Join(out, "g"), content), 0, refNow)
	wantRefErr(t, nil, err, "outside every --ref-root")
}

func TestReadRefRefused(t *testing.T) {
	root, out := refDir(t)
	content := []byte("secret-ish payload")
	in := filepath.Join(root, "in.txt")
	writeFile(t, in, content)
	outside := filepath.Join(out, "out.txt")
	writeFile(t, outside, content)
	big := filepath.Join(root, "big.txt")
	writeFile(t, big, bytes.Repeat([]byte("x"), 100))

	// symlinks: one to the outside at the end, one in the middle, a chain
	// that leaves on its second link, and one to a sibling folder whose
	// name starts like the root's.
	symlink(t, outside, filepath.Join(root, "end"))
	symlink(t, out, filepath.Join(root, "mid"))
	symlink(t, filepath.Join(root, "end"), filepath.Join(root, "chain1"))
	symlink(t, filepath.Join(root, "chain1"), filepath.Join(root, "chain2"))
	sibling := root + "2"
	if err := os.Mkdir(sibling, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(sibling, "f"), content)
	symlink(t, filepath.Join(sibling, "f"), filepath.Join(root, "sib"))
	if err := os.Mkdir(filepath.Join(root, "dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(root, "empty")
	writeFile(t, empty, nil)

	with := func(p string, edit func(*lane000.ContentRef)) lane000.ContentRef {
		r := refTo(p, content)
		if edit != nil {
			edit(&r)
		}
		return r
	}
	cases := []struct {
		name  string
		roots []string
		ref   lane000.ContentRef
		max   int64
		want  string
	}{
		{"no roots", nil, with(in, nil), 0, "no --ref-root is configured"},
		{"no root exists", []string{filepath.Join(out, "nope")}, with(in, nil), 0, "no --ref-root exists"},
		{"empty path", nil, with("", nil), 0, "no --ref-root"}, // roots first
		{"empty path with roots", []string{root}, with("", nil), 0, "path is empty"},
		{"relative", []string{root}, with("root/in.txt", nil), 0, "is relative"},
		{"dot relative", []string{root}, with("./in.txt", nil), 0, "is relative"},
		{"dotdot", []string{root}, with(root+"/../root/in.txt", nil), 0, `contains ".."`},
		{"dotdot at end", []string{root}, with(root+"/sub/..", nil), 0, `contains ".."`},
		{"outside", []string{root}, with(outside, nil), 0, "is outside every --ref-root"},
		{"sibling prefix", []string{root}, with(filepath.Join(sibling, "f"), nil), 0, "is outside every --ref-root"},
		{"symlink at end", []string{root}, with(filepath.Join(root, "end"), nil), 0, "resolves through a symlink"},
		{"symlink in middle", []string{root}, with(filepath.Join(root, "mid", "out.txt"), nil), 0, "resolves through a symlink"},
		{"symlink chain", []string{root}, with(filepath.Join(root, "chain2"), nil), 0, "resolves through a symlink"},
		{"symlink to sibling", []string{root}, with(filepath.Join(root, "sib"), nil), 0, "resolves through a symlink"},
		{"missing", []string{root}, with(filepath.Join(root, "nope"), nil), 0, "does not exist"},
		{"directory", []string{root}, with(filepath.Join(root, "dir"), nil), 0, "not a regular file (a directory)"},
		{"root itself", []string{root}, with(root, nil), 0, "not a regular file (a directory)"},
		{"fifo", []string{root}, with(filepath.Join(root, "fifo"), nil), 0, "not a regular file (a fifo)"},
		{"size mismatch", []string{root}, with(in, func(r *lane000.ContentRef) { r.Size++ }), 0, "size_bytes is 19 but the file has 18 bytes"},
		{"size smaller", []string{root}, with(in, func(r *lane000.ContentRef) { r.Size-- }), 0, "size_bytes is 17 but the file has 18 bytes"},
		{"hash mismatch", []string{root}, with(in, func(r *lane000.ContentRef) { r.SHA256 = strings.Repeat("ab", 32) }), 0, "sha256 differs"},
		{"hash not hex", []string{root}, with(in, func(r *lane000.ContentRef) { r.SHA256 = strings.Repeat("zz", 32) }), 0, "64 hex digits"},
		{"hash short", []string{root}, with(in, func(r *lane000.ContentRef) { r.SHA256 = "abcd" }), 0, "64 hex digits"},
		{"expired", []string{root}, with(in, func(r *lane000.ContentRef) { r.ExpiresAt = refNow.Add(-time.Second) }), 0, "expired at 2026-11-22T11:59:59Z"},
		{"too big declared", []string{root}, with(big, func(r *lane000.ContentRef) { r.Size = 100 }), 99, "size_bytes 100 is over --ref-max 99"},
		{"too big file", []string{root}, with(big, func(r *lane000.ContentRef) { r.Size = 50 }), 99, "file is 100 bytes, over --ref-max 99"},
		{"too big default", []string{root}, with(in, func(r *lane000.ContentRef) { r.Size = DefaultRefMax + 1 }), 0, "over --ref-max 67108864"},
		{"empty file", []string{root}, with(empty, func(r *lane000.ContentRef) { r.Size = 0 }), 0, "must be positive"},
		{"negative size", []string{root}, with(in, func(r *lane000.ContentRef) { r.Size = -1 }), 0, "must be positive"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan struct{})
			var data []byte
			var err error
			go func() {
				defer close(done)
				data, err = ReadRef(c.roots, c.ref, c.max, refNow)
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("ReadRef blocked")
			}
			wantRefErr(t, data, err, c.want)
		})
	}
	// Expiry is checked against now, not the wall clock, and a ref that
	// expires exactly now is still good.
	r := with(in, func(r *lane000.ContentRef) { r.ExpiresAt = refNow })
	if _, err := ReadRef([]string{root}, r, 0, refNow); err != nil {
		t.Fatalf("expires exactly now: %v", err)
	}
}

// TestReadRefSwapped swaps the file between the path checks and the open:
// whatever is opened then is not the file that was checked, and is refused
// without blocking.
func TestReadRefSwapped(t *testing.T) {
	content := []byte("checked content")
	other := []byte("swapped content") // same size, so only identity tells
	swaps := []struct {
		name string
		swap func(t *testing.T, root, out, p string)
	}{
		{"file replaced", func(t *testing.T, root, out, p string) {
			writeFile(t, p+".new", other)
			if err := os.Rename(p+".new", p); err != nil {
				t.Fatal(err)
			}
		}},
		{"file replaced by symlink out", func(t *testing.T, root, out, p string) {
			writeFile(t, filepath.Join(out, "x"), content)
			os.Remove(p)
			symlink(t, filepath.Join(out, "x"), p)
		}},
		{"folder replaced by symlink out", func(t *testing.T, root, out, p string) {
			if err := os.Mkdir(filepath.Join(out, "sub"), 0o700); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(out, "sub", "f"), content)
			if err := os.Rename(filepath.Join(root, "sub"), filepath.Join(root, "gone")); err != nil {
				t.Fatal(err)
			}
			symlink(t, filepath.Join(out, "sub"), filepath.Join(root, "sub"))
		}},
		{"file replaced by fifo", func(t *testing.T, root, out, p string) {
			os.Remove(p)
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, s := range swaps {
		t.Run(s.name, func(t *testing.T) {
			root, out := refDir(t)
			if err := os.Mkdir(filepath.Join(root, "sub"), 0o700); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(root, "sub", "f")
			writeFile(t, p, content)
			called := false
			done := make(chan struct{})
			var data []byte
			var err error
			go func() {
				defer close(done)
				data, err = readRef([]string{root}, refTo(p, content), 0, refNow, func(string) {
					called = true
					s.swap(t, root, out, p)
				})
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("readRef blocked")
			}
			if !called {
				t.Fatal("the hook did not run")
			}
			wantRefErr(t, data, err, "changed while it was being checked")
		})
	}
}

// TestReadRefGrows checks that a file that grows after its size was taken
// is refused, not read to its new end.
func TestReadRefGrows(t *testing.T) {
	root, _ := refDir(t)
	content := []byte("0123456789")
	p := filepath.Join(root, "f")
	writeFile(t, p, content)
	_, err := readRef([]string{root}, refTo(p, content), 0, refNow, func(string) {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		f.Write([]byte("more"))
	})
	// The size is taken from the open file, after the growth: it no longer
	// matches size_bytes.
	wantRefErr(t, nil, err, "size_bytes is 10 but the file has 14 bytes")
}
