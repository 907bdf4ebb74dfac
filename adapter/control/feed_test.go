package control

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// lineLog is a write function that records lines; safe for concurrent use.
type lineLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *lineLog) write(b []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, string(b))
}

func (l *lineLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// wantLines checks got is exactly want, saying where they first differ.
func wantLines(t *testing.T, got, want []string) {
	t.Helper()
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Fatalf("line %d = %q, want %q (%d lines, want %d)", i, got[i], want[i], len(got), len(want))
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d", len(got), len(want))
	}
}

func numbered(prefix string, from, to int) []string {
	var s []string
	for i := from; i < to; i++ {
		s = append(s, fmt.Sprintf("%s%d", prefix, i))
	}
	return s
}

// TestOutboxOrder: many Sends from one goroutine are written in order,
// all of them by the time Close returns.
func TestOutboxOrder(t *testing.T) {
	var w lineLog
	o := NewOutbox(w.write, quietLog())
	want := numbered("l", 0, OutboxLines/2)
	for _, s := range want {
		o.Send([]byte(s))
	}
	o.Close()
	wantLines(t, w.get(), want)
}

// TestOutboxCloseWaits: Close returns only once every queued line is
// written; Close again returns at once.
func TestOutboxCloseWaits(t *testing.T) {
	const n = 5
	gate := make(chan struct{})
	wrote := make(chan string, n)
	o := NewOutbox(func(b []byte) {
		<-gate
		wrote <- string(b)
	}, quietLog())
	for _, s := range numbered("q", 0, n) {
		o.Send([]byte(s))
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		o.Close()
	}()
	for i := range n - 1 {
		gate <- struct{}{}
		if got := <-wrote; got != fmt.Sprint("q", i) {
			t.Fatalf("line %d = %q", i, got)
		}
	}
	select {
	case <-closed:
		t.Fatal("Close returned with a line still queued")
	default:
	}
	gate <- struct{}{}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return once every line was written")
	}
	if got := <-wrote; got != fmt.Sprint("q", n-1) {
		t.Fatalf("last line = %q", got)
	}
	o.Close() // again: no panic, no wait
}

// TestOutboxSendAfterClose: a Send after Close drops the line (and does not
// panic on the closed queue).
func TestOutboxSendAfterClose(t *testing.T) {
	var w lineLog
	o := NewOutbox(w.write, quietLog())
	o.Send([]byte("before"))
	o.Close()
	o.Send([]byte("after"))
	wantLines(t, w.get(), []string{"before"})
}

// TestOutboxOverflow: with the writer stuck, the outbox takes OutboxLines
// lines without blocking; the next one is dropped, and so is every later
// one, even once the writer caught up (the connection's feed is lost
// rather than given a hole), with one warning.
func TestOutboxOverflow(t *testing.T) {
	var logBuf syncBuffer
	var w lineLog
	started := make(chan struct{})
	release := make(chan struct{})
	drained := make(chan struct{})
	n := 0 // lines written, on the writer's goroutine
	o := NewOutbox(func(b []byte) {
		if n == 0 {
			close(started)
			<-release
		}
		w.write(b)
		n++
		if n == OutboxLines+1 {
			close(drained)
		}
	}, slog.New(slog.NewTextHandler(&logBuf, nil)))

	o.Send([]byte("first")) // taken by the writer, which then blocks
	<-started
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for _, s := range numbered("f", 0, OutboxLines+1) { // the last one overflows
			o.Send([]byte(s))
		}
		o.Send([]byte("while full"))
	}()
	select {
	case <-sent:
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatal("Send blocked on a full outbox")
	}
	close(release)
	select {
	case <-drained:
	case <-time.After(5 * time.Second):
		t.Fatalf("the writer did not drain: %d lines", len(w.get()))
	}
	o.Send([]byte("after the queue drained"))
	o.Close()
	wantLines(t, w.get(), append([]string{"first"}, numbered("f", 0, OutboxLines)...))

	logged := logBuf.String()
	if c := strings.Count(logged, "reads too slowly"); c != 1 {
		t.Fatalf("warning logged %d times, want once:\n%s", c, logged)
	}
	if !strings.Contains(logged, "level=WARN") {
		t.Fatalf("not a warning: %s", logged)
	}
}

// TestFeed: Publish reaches every subscribed outbox in order, and not one
// that was removed; Has says which are subscribed.
func TestFeed(t *testing.T) {
	var f Feed
	var a, b, c lineLog
	oa, ob, oc := NewOutbox(a.write, quietLog()), NewOutbox(b.write, quietLog()), NewOutbox(c.write, quietLog())
	if f.Has(oa) {
		t.Fatal("Has on an empty feed")
	}
	f.Publish([]byte("nobody")) // no subscribers: no panic
	f.Add(oa)
	f.Add(ob)
	f.Add(oc)
	f.Add(oa) // twice: still one subscription
	f.Remove(oc)
	for _, tc := range []struct {
		o    *Outbox
		want bool
	}{{oa, true}, {ob, true}, {oc, false}} {
		if got := f.Has(tc.o); got != tc.want {
			t.Errorf("Has = %v, want %v", got, tc.want)
		}
	}
	f.Publish([]byte("e1"))
	f.Publish([]byte("e2"))
	f.Remove(ob)
	f.Publish([]byte("e3"))
	f.Remove(ob) // not subscribed: no-op
	for _, o := range []*Outbox{oa, ob, oc} {
		o.Close()
	}
	wantLines(t, a.get(), []string{"e1", "e2", "e3"})
	wantLines(t, b.get(), []string{"e1", "e2"})
	wantLines(t, c.get(), nil)
	if f.Has(ob) || !f.Has(oa) {
		t.Errorf("after Remove: Has(ob) = %v, Has(oa) = %v", f.Has(ob), f.Has(oa))
	}
}
