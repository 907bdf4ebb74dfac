package control

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/ccbridge/ccbridge/framing"
)

// DefaultWriteTimeout bounds one reply's write on the control socket when
// Listener.WriteTimeout is 0.
const DefaultWriteTimeout = 5 * time.Second

// Listener is the control socket (--control PATH): a unix socket of mode
// 0600 on which any number of controllers connect and speak NDJSON.
//
// Set the exported fields before Serve; they are not to change after.
type Listener struct {
	// TooLong, when set, gives the line written back to a connection that
	// sent a line over Serve's maxLine (the line is skipped, the connection
	// goes on). A nil result writes nothing; a nil TooLong too.
	TooLong func(e *framing.LineTooLongError) []byte
	// WriteTimeout bounds each reply's write (DefaultWriteTimeout when 0).
	// A connection whose reply cannot be written in time is closed, so a
	// controller that stops reading never holds up the caller of reply.
	WriteTimeout time.Duration
	// Logger gets the connections' errors (slog.Default() when nil).
	Logger *slog.Logger

	path string
	ln   *net.UnixListener
	file os.FileInfo // the socket file, which Close removes while it is still this one
	done chan struct{}

	mu     sync.Mutex
	closed bool
	conns  map[*sockConn]struct{}
	wg     sync.WaitGroup // Serve and every connection's goroutine

	closeOnce sync.Once
	closeErr  error
}

// Listen creates a unix socket at path with mode 0600. An existing path is
// refused unless it is a socket nobody listens on (a connection to it is
// refused): that stale socket is removed. A regular file, a folder, a
// symlink, a live socket, or a socket whose state cannot be told (another
// user's, say) are refused with an error that says which.
//
// The socket is never reachable with a wider mode: it is bound inside a
// fresh folder of mode 0700 beside path, made 0600 there, and then linked
// to path (link(2) fails rather than replace anything that appeared at
// path meanwhile); the private name and its folder are then removed. The
// process's umask is never changed. The private name is path's folder plus
// about 17 bytes, and must fit the system's limit on socket paths (about
// 100 bytes).
func Listen(path string) (*Listener, error) {
	if path == "" {
		return nil, errors.New("control socket: empty path")
	}
	if err := clearStale(path); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(path), ".ccb")
	if err != nil {
		return nil, fmt.Errorf("control socket %s: private folder: %w", path, err)
	}
	defer os.RemoveAll(tmp) // the private name only; path is a link of its own
	private := filepath.Join(tmp, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: private, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("control socket %s: listen on the private name %s (%d bytes): %w", path, private, len(private), err)
	}
	ln.SetUnlinkOnClose(false) // Close removes path itself, once it checked it is still ours
	fail := func(err error) (*Listener, error) {
		ln.Close()
		return nil, err
	}
	if err := os.Chmod(private, 0o600); err != nil {
		return fail(fmt.Errorf("control socket %s: chmod: %w", path, err))
	}
	if err := os.Link(private, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fail(fmt.Errorf("control socket %s: the path appeared while the socket was made", path))
		}
		return fail(fmt.Errorf("control socket %s: %w", path, err))
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return fail(fmt.Errorf("control socket %s: %w", path, err))
	}
	return &Listener{
		path:  path,
		ln:    ln,
		file:  fi,
		done:  make(chan struct{}),
		conns: make(map[*sockConn]struct{}),
	}, nil
}

// clearStale makes sure nothing is at path, removing a stale socket.
func clearStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("control socket %s: %w", path, err)
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("control socket %s: the path exists and is %s, not a stale socket", path, describe(fi.Mode()))
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("control socket %s: a live socket, another process listens on it", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("control socket %s: an existing socket that may be live (%v); not removed", path, err)
	}
	// Stale. Remove it only if it is still the socket that refused.
	now, err := os.Lstat(path)
	if err != nil || !os.SameFile(fi, now) {
		return fmt.Errorf("control socket %s: the path changed while it was checked", path)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("control socket %s: removing the stale socket: %w", path, err)
	}
	return nil
}

func describe(m fs.FileMode) string {
	if m.IsRegular() {
		return "a regular file"
	}
	return fileKind(m)
}

// Path is the socket's path.
func (l *Listener) Path() string { return l.path }

// Serve accepts connections until Close. Each connection has a goroutine
// of its own that first writes greet's line (when greet and its result are
// not nil), then reads NDJSON lines with a framing.Reader of maxLine and
// passes each to handle with the connection's reply. handle runs on that
// goroutine, one line at a time; line is valid only until handle returns.
// reply writes one line plus "\n" to that connection only; it is safe for
// concurrent use and may be called after handle returned, but once the
// connection is closed (by its controller, a failed or late write, or
// Close) it writes nothing. A line holding "\n" is not written. A
// connection is closed when its input ends (replies that were not written
// by then are lost: a controller that wants every ack keeps its side
// open). Serve is called at most once; after Close it returns at once.
// handle must not call Close (Close waits for handle).
func (l *Listener) Serve(maxLine int, greet func() []byte, handle func(line []byte, reply func([]byte))) {
	l.ServeConns(maxLine, func(reply func([]byte)) ConnHandler {
		if greet != nil {
			if g := greet(); g != nil {
				reply(g)
			}
		}
		return funcConn{handle: handle, reply: reply}
	})
}

// ConnHandler serves one connection (ServeConns): Handle gets its lines,
// one at a time on the connection's goroutine, and Close is called once
// when the connection is over.
type ConnHandler interface {
	Handle(line []byte)
	Close()
}

// funcConn is Serve's ConnHandler.
type funcConn struct {
	handle func([]byte, func([]byte))
	reply  func([]byte)
}

func (f funcConn) Handle(line []byte) { f.handle(line, f.reply) }
func (funcConn) Close()               {}

// ServeConns is Serve with a handler of each connection's own, made by
// open on the connection's goroutine with its reply (as Serve describes
// it) before any line is read; a handler keeps what it knows of its
// connection, and its Close says the connection is over.
func (l *Listener) ServeConns(maxLine int, open func(reply func([]byte)) ConnHandler) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.wg.Add(1)
	l.mu.Unlock()
	defer l.wg.Done()

	timeout := l.WriteTimeout
	if timeout <= 0 {
		timeout = DefaultWriteTimeout
	}
	log := l.Logger
	if log == nil {
		log = slog.Default()
	}
	var delay time.Duration
	for {
		c, err := l.ln.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors and the like: wait and go on, as
			// net/http does.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			log.Error("control socket: accept", "path", l.path, "err", err, "retry_in", delay)
			select {
			case <-l.done:
				return
			case <-time.After(delay):
			}
			continue
		}
		delay = 0
		sc := &sockConn{c: c, timeout: timeout, log: log}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			c.Close()
			return
		}
		l.conns[sc] = struct{}{}
		l.wg.Add(1)
		l.mu.Unlock()
		go l.serveConn(sc, maxLine, open)
	}
}

func (l *Listener) serveConn(sc *sockConn, maxLine int, open func(func([]byte)) ConnHandler) {
	h := open(sc.reply)
	defer func() {
		h.Close()
		sc.close()
		l.mu.Lock()
		delete(l.conns, sc)
		l.mu.Unlock()
		l.wg.Done()
	}()
	r := framing.NewReader(sc.c, maxLine)
	for {
		line, err := r.ReadLine()
		if err != nil {
			var tl *framing.LineTooLongError
			if errors.As(err, &tl) {
				sc.log.Warn("control socket: line too long, skipped", "size", tl.Size, "max", tl.Max)
				if l.TooLong != nil {
					if b := l.TooLong(tl); b != nil {
						sc.reply(b)
					}
				}
				continue
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				sc.log.Debug("control socket: read", "err", err)
			}
			return
		}
		h.Handle(line)
	}
}

// Close stops accepting, closes every open connection, waits for Serve and
// for every connection's goroutine (so for any handle under way) to end,
// and removes the socket file unless something else has taken its place.
// It is safe to call more than once; later calls return the first's result.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		conns := make([]*sockConn, 0, len(l.conns))
		for c := range l.conns {
			conns = append(conns, c)
		}
		l.mu.Unlock()
		close(l.done)
		err := l.ln.Close()
		if fi, e := os.Lstat(l.path); e == nil && os.SameFile(fi, l.file) {
			if e := os.Remove(l.path); e != nil && err == nil {
				err = e
			}
		}
		for _, c := range conns {
			c.close()
		}
		l.wg.Wait()
		l.closeErr = err
	})
	return l.closeErr
}

// sockConn is one controller's connection: its goroutine reads, any
// goroutine replies.
type sockConn struct {
	c       *net.UnixConn
	timeout time.Duration
	log     *slog.Logger

	mu        sync.Mutex // one reply at a time
	dead      bool
	closeOnce sync.Once
}

var newline = []byte{'\n'}

// reply writes line and "\n" in one writev, bounded by the write timeout;
// a failed write closes the connection and makes later replies no-ops.
func (s *sockConn) reply(line []byte) {
	if bytes.IndexByte(line, '\n') >= 0 {
		s.log.Error("control socket: a reply holds a line break; not written")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return
	}
	bufs := net.Buffers{line, newline}
	s.c.SetWriteDeadline(time.Now().Add(s.timeout))
	if _, err := bufs.WriteTo(s.c); err != nil {
		s.dead = true
		if !errors.Is(err, net.ErrClosed) {
			s.log.Warn("control socket: reply not written, connection closed", "err", err)
		}
		s.close()
	}
}

func (s *sockConn) close() { s.closeOnce.Do(func() { s.c.Close() }) }
