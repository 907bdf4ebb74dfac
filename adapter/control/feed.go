package control

import (
	"log/slog"
	"sync"
)

// Outbox writes one connection's lines in order, on a goroutine of its
// own, so that whoever sends (the session's loop included) never waits
// for a slow controller. It holds at most OutboxLines lines; a controller
// that falls further behind loses the connection's later lines (logged
// once), as a reply that cannot be written closes the connection.
type Outbox struct {
	ch   chan []byte
	log  *slog.Logger
	mu   sync.Mutex
	shut bool
	lost bool
	done chan struct{}
}

// OutboxLines bounds an Outbox.
const OutboxLines = 1024

// NewOutbox starts an outbox writing through write (a connection's reply).
func NewOutbox(write func([]byte), log *slog.Logger) *Outbox {
	if log == nil {
		log = slog.Default()
	}
	o := &Outbox{ch: make(chan []byte, OutboxLines), log: log, done: make(chan struct{})}
	go func() {
		defer close(o.done)
		for line := range o.ch {
			write(line)
		}
	}()
	return o
}

// Send queues line (which the outbox keeps: the caller must not reuse it).
// It never blocks; after Close, or once the outbox overflowed, it drops.
func (o *Outbox) Send(line []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.shut || o.lost {
		return
	}
	select {
	case o.ch <- line:
	default:
		o.lost = true
		o.log.Warn("control socket: the controller reads too slowly; its later lines are dropped", "queued", OutboxLines)
	}
}

// Close stops the outbox once what is queued is written (or dropped by a
// closed connection) and waits for that.
func (o *Outbox) Close() {
	o.mu.Lock()
	if !o.shut {
		o.shut = true
		close(o.ch)
	}
	o.mu.Unlock()
	<-o.done
}

// Feed carries lane 001's loop:current events to the socket connections
// that asked for them (by sending a lane-001 line). The session's loop
// publishes; Add and Remove may be called from any goroutine.
type Feed struct {
	mu   sync.Mutex
	subs map[*Outbox]struct{}
}

// Add subscribes o; it gets every line published from then on.
func (f *Feed) Add(o *Outbox) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.subs == nil {
		f.subs = make(map[*Outbox]struct{})
	}
	f.subs[o] = struct{}{}
}

// Has reports whether o is subscribed.
func (f *Feed) Has(o *Outbox) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.subs[o]
	return ok
}

// Remove unsubscribes o.
func (f *Feed) Remove(o *Outbox) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.subs, o)
}

// Publish sends line to every subscriber. It does not block.
func (f *Feed) Publish(line []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for o := range f.subs {
		o.Send(line)
	}
}
