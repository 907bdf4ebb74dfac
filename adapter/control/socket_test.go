//go:build unix

package control

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ccbridge/ccbridge/framing"
)

// sockPath is a socket path in a short temporary folder (socket paths are
// limited to about 100 bytes).
func sockPath(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "ccbs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return filepath.Join(d, "c.sock")
}

func listen(t *testing.T, path string) *Listener {
	t.Helper()
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// serve runs l.Serve on a goroutine; the channel closes when it returns.
func serve(l *Listener, maxLine int, greet func() []byte, handle func([]byte, func([]byte))) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Serve(maxLine, greet, handle)
	}()
	return done
}

type client struct {
	net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, path string) *client {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{c, bufio.NewReader(c)}
}

func (c *client) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// line reads one line within 5 s.
func (c *client) line(t *testing.T) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	s, err := c.r.ReadString('\n')
	if err != nil {
		t.Fatalf("read: %q, %v", s, err)
	}
	return strings.TrimSuffix(s, "\n")
}

func echo(line []byte, reply func([]byte)) { reply(append([]byte("r:"), line...)) }

func TestListenMode0600(t *testing.T) {
	old := syscall.Umask(0) // the widest umask: the socket must still be 0600
	defer syscall.Umask(old)
	path := sockPath(t)
	l := listen(t, path)
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&fs.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v, want a socket of 0600", fi.Mode())
	}
	// Nothing else is left beside it (the private folder is gone).
	ents, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != "c.sock" {
		t.Fatalf("folder holds %v", ents)
	}
	if l.Path() != path {
		t.Fatalf("Path = %q", l.Path())
	}
	done := serve(l, 0, func() []byte { return []byte("hello") }, echo)
	c := dial(t, path)
	if got := c.line(t); got != "hello" {
		t.Fatalf("greet = %q", got)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	<-done
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestListenReplacesStaleSocket(t *testing.T) {
	path := sockPath(t)
	old, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	old.SetUnlinkOnClose(false)
	old.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("the stale socket is not there: %v", err)
	}
	l := listen(t, path)
	serve(l, 0, func() []byte { return []byte("new") }, echo)
	if got := dial(t, path).line(t); got != "new" {
		t.Fatalf("greet = %q", got)
	}
}

func TestListenRefuses(t *testing.T) {
	t.Run("regular file", func(t *testing.T) {
		path := sockPath(t)
		writeFile(t, path, []byte("keep me"))
		_, err := Listen(path)
		if err == nil || !strings.Contains(err.Error(), "is a regular file, not a stale socket") {
			t.Fatalf("err = %v", err)
		}
		if b, _ := os.ReadFile(path); string(b) != "keep me" {
			t.Fatalf("the file was touched: %q", b)
		}
	})
	t.Run("folder", func(t *testing.T) {
		path := sockPath(t)
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
		if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "is a directory") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("symlink to a stale socket", func(t *testing.T) {
		path := sockPath(t)
		target := path + ".target"
		old, err := net.ListenUnix("unix", &net.UnixAddr{Name: target, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		old.SetUnlinkOnClose(false)
		old.Close()
		symlink(t, target, path)
		if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "is a symlink") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("live socket", func(t *testing.T) {
		path := sockPath(t)
		live, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		defer live.Close()
		if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "another process listens on it") {
			t.Fatalf("err = %v", err)
		}
		// The live socket still works.
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatalf("the live socket was broken: %v", err)
		}
		c.Close()
	})
	t.Run("live control socket", func(t *testing.T) {
		path := sockPath(t)
		listen(t, path)
		if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "another process listens on it") {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestServeConcurrentClients: every client gets the greeting first and
// then exactly the replies to its own lines, whether they are written from
// handle or from other goroutines.
func TestServeConcurrentClients(t *testing.T) {
	const clients, lines = 20, 100
	l := listen(t, sockPath(t))
	var async sync.WaitGroup
	serve(l, 0, func() []byte { return []byte("greet") }, func(line []byte, reply func([]byte)) {
		out := append([]byte("r:"), line...) // line is only valid during handle
		if line[len(line)-1]%2 == 0 {
			reply(out)
			return
		}
		async.Add(1)
		go func() { defer async.Done(); reply(out) }()
	})
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- runClient(l.Path(), i, lines)
		}()
	}
	wg.Wait()
	async.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func runClient(path string, id, lines int) error {
	c, err := net.Dial("unix", path)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	r := bufio.NewReader(c)
	first, err := r.ReadString('\n')
	if err != nil || first != "greet\n" {
		return fmt.Errorf("client %d: first line %q, %v", id, first, err)
	}
	go func() {
		w := bufio.NewWriter(c)
		for j := range lines {
			fmt.Fprintf(w, "c%d-%d\n", id, j)
		}
		w.Flush()
	}()
	want := make(map[string]bool, lines)
	for j := range lines {
		want[fmt.Sprintf("r:c%d-%d\n", id, j)] = true
	}
	for range lines {
		s, err := r.ReadString('\n')
		if err != nil {
			return fmt.Errorf("client %d: %v", id, err)
		}
		if !want[s] {
			return fmt.Errorf("client %d: unexpected or repeated reply %q", id, s)
		}
		delete(want, s)
	}
	return nil
}

func TestServeTooLong(t *testing.T) {
	for _, withHook := range []bool{true, false} {
		t.Run(fmt.Sprint("hook=", withHook), func(t *testing.T) {
			l := listen(t, sockPath(t))
			if withHook {
				l.TooLong = func(e *framing.LineTooLongError) []byte {
					return fmt.Appendf(nil, "too long: %d > %d", e.Size, e.Max)
				}
			}
			serve(l, 16, nil, echo)
			c := dial(t, l.Path())
			c.send(t, strings.Repeat("x", 40))
			c.send(t, "short")
			if withHook {
				if got := c.line(t); got != "too long: 40 > 16" {
					t.Fatalf("got %q", got)
				}
			}
			if got := c.line(t); got != "r:short" {
				t.Fatalf("got %q", got)
			}
		})
	}
}

// TestServeStuckReader: a controller that never reads cannot hold up the
// goroutine that replies to it (one worker serves every connection here,
// as the session loop does): the write times out, that connection is
// closed, and the other controller is answered.
func TestServeStuckReader(t *testing.T) {
	l := listen(t, sockPath(t))
	l.WriteTimeout = 300 * time.Millisecond
	type job struct {
		reply func([]byte)
		data  []byte
	}
	jobs := make(chan job, 4)
	queued := make(chan struct{}, 4)
	serve(l, 0, nil, func(line []byte, reply func([]byte)) {
		data := []byte("r:" + string(line))
		if string(line) == "big" {
			data = bytes.Repeat([]byte("b"), 32<<20) // far more than the socket buffers
		}
		jobs <- job{reply, data}
		queued <- struct{}{}
	})
	var stuckReply func([]byte)
	worker := make(chan struct{})
	go func() {
		defer close(worker)
		for j := range jobs {
			if len(j.data) > 100 {
				stuckReply = j.reply
			}
			j.reply(j.data)
		}
	}()
	stuck := dial(t, l.Path())
	stuck.send(t, "big")
	<-queued
	other := dial(t, l.Path())
	start := time.Now()
	other.send(t, "small")
	if got := other.line(t); got != "r:small" {
		t.Fatalf("got %q", got)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("the other controller waited %v", d)
	}
	<-queued // the second handle is done with jobs
	close(jobs)
	<-worker
	// The stuck connection was closed: reading it drains what was written
	// and then ends.
	stuck.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := io.Copy(io.Discard, stuck)
	if err != nil {
		t.Fatalf("stuck connection: %v after %d bytes", err, n)
	}
	if n >= 32<<20 {
		t.Fatalf("the whole reply arrived (%d bytes)", n)
	}
	// Later replies to it return at once.
	start = time.Now()
	stuckReply([]byte("late"))
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Fatalf("a reply to a closed connection took %v", d)
	}
}

// TestReplyAfterClientLeft: reply, kept after handle, writes nothing and
// does not block once the controller has gone.
func TestReplyAfterClientLeft(t *testing.T) {
	l := listen(t, sockPath(t))
	got := make(chan func([]byte), 1)
	serve(l, 0, nil, func(line []byte, reply func([]byte)) { got <- reply })
	c := dial(t, l.Path())
	c.send(t, "x")
	reply := <-got
	c.Close()
	reply([]byte("a line with\na break")) // refused, not written
	for range 3 {
		done := make(chan struct{})
		go func() { defer close(done); reply([]byte("late")) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("reply blocked")
		}
	}
}

func TestReplyRefusesLineBreak(t *testing.T) {
	l := listen(t, sockPath(t))
	serve(l, 0, nil, func(line []byte, reply func([]byte)) {
		reply([]byte("one\ntwo"))
		reply([]byte("ok"))
	})
	c := dial(t, l.Path())
	c.send(t, "x")
	if got := c.line(t); got != "ok" {
		t.Fatalf("got %q", got)
	}
}

// TestClose: Close ends Serve, closes the open connections, waits for a
// handle under way, removes the socket file, and can be called again.
func TestClose(t *testing.T) {
	path := sockPath(t)
	l := listen(t, path)
	inHandle := make(chan struct{})
	release := make(chan struct{})
	served := serve(l, 0, nil, func(line []byte, reply func([]byte)) {
		if string(line) == "block" {
			close(inHandle)
			<-release
		}
		reply([]byte("r:" + string(line)))
	})
	idle := dial(t, path)
	busy := dial(t, path)
	busy.send(t, "block")
	<-inHandle

	closed := make(chan error, 1)
	go func() { closed <- l.Close() }()
	// The idle connection is closed at once.
	idle.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := idle.r.ReadByte(); err != io.EOF {
		t.Fatalf("idle connection: %v, want EOF", err)
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while handle was running", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	select {
	case <-served:
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("socket file after Close: %v", err)
	}
	if _, err := net.Dial("unix", path); err == nil {
		t.Fatal("dial after Close succeeded")
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// Serve after Close returns at once.
	select {
	case <-serve(l, 0, nil, echo):
	case <-time.After(5 * time.Second):
		t.Fatal("Serve after Close did not return")
	}
}

// TestCloseKeepsForeignFile: Close removes the socket file only while it
// is still this listener's.
func TestCloseKeepsForeignFile(t *testing.T) {
	path := sockPath(t)
	l := listen(t, path)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, []byte("someone else's"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "someone else's" {
		t.Fatalf("the other file: %q, %v", b, err)
	}
}
