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
	"slices"
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

// connRec is a ConnHandler that records its lines and Close calls and
// answers each line through its connection's reply.
type connRec struct {
	id     int
	reply  func([]byte)
	closed chan struct{} // closed by the first Close

	mu     sync.Mutex
	lines  []string
	closes int
}

func (c *connRec) Handle(line []byte) {
	c.mu.Lock()
	c.lines = append(c.lines, string(line)) // line is only valid during Handle
	c.mu.Unlock()
	c.reply(fmt.Appendf(nil, "%d:%s", c.id, line))
}

func (c *connRec) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closes++
	if c.closes == 1 {
		close(c.closed)
	}
}

func (c *connRec) state() ([]string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.lines...), c.closes
}

// TestServeConns: each connection gets a handler of its own, made once
// with a reply that reaches that connection; its lines reach Handle in
// order, and Close is called once when the connection ends, whether the
// controller closes it or the Listener does.
func TestServeConns(t *testing.T) {
	l := listen(t, sockPath(t))
	var mu sync.Mutex
	opens := 0
	opened := make(chan *connRec, 4)
	served := make(chan struct{})
	go func() {
		defer close(served)
		l.ServeConns(0, func(reply func([]byte)) ConnHandler {
			mu.Lock()
			opens++
			h := &connRec{id: opens, reply: reply, closed: make(chan struct{})}
			mu.Unlock()
			reply(fmt.Appendf(nil, "open %d", h.id))
			opened <- h
			return h
		})
	}()
	conn := func(want int) (*client, *connRec) {
		t.Helper()
		c := dial(t, l.Path())
		if got := c.line(t); got != fmt.Sprint("open ", want) {
			t.Fatalf("first line %q, want open %d", got, want)
		}
		return c, <-opened
	}
	c1, h1 := conn(1)
	c2, h2 := conn(2)

	// Interleaved sends: each connection's replies come from its own
	// handler, in order.
	want1 := []string{"a", "b", "c", "d"}
	want2 := []string{"x", "y", "z"}
	for i := range max(len(want1), len(want2)) {
		if i < len(want1) {
			c1.send(t, want1[i])
		}
		if i < len(want2) {
			c2.send(t, want2[i])
		}
	}
	for _, tc := range []struct {
		c    *client
		h    *connRec
		want []string
	}{{c1, h1, want1}, {c2, h2, want2}} {
		for _, s := range tc.want {
			if got := tc.c.line(t); got != fmt.Sprintf("%d:%s", tc.h.id, s) {
				t.Fatalf("connection %d: reply %q, want %d:%s", tc.h.id, got, tc.h.id, s)
			}
		}
		if lines, _ := tc.h.state(); !slices.Equal(lines, tc.want) {
			t.Fatalf("handler %d got %q, want %q", tc.h.id, lines, tc.want)
		}
	}

	// The controller closes connection 1: its handler is closed, not 2's.
	c1.Close()
	select {
	case <-h1.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close not called when the controller closed its connection")
	}
	if _, n := h2.state(); n != 0 {
		t.Fatalf("handler 2 closed %d times while its connection is open", n)
	}
	c2.send(t, "still here")
	if got := c2.line(t); got != "2:still here" {
		t.Fatalf("connection 2 after 1 closed: %q", got)
	}

	// The Listener closes connection 2; Close waits for its handler's Close.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h2.closed:
	default:
		t.Fatal("Listener.Close returned before the open connection's handler was closed")
	}
	select {
	case <-served:
	case <-time.After(5 * time.Second):
		t.Fatal("ServeConns did not return after Close")
	}
	for _, h := range []*connRec{h1, h2} {
		if _, n := h.state(); n != 1 {
			t.Errorf("handler %d closed %d times, want once", h.id, n)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if opens != 2 {
		t.Errorf("open called %d times for 2 connections", opens)
	}
}
