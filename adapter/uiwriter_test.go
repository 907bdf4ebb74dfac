package adapter

// The UI's output when the UI stops reading (uiwriter.go): backpressure
// on the CLI without loss, signals and shutdown still served, a failed
// write taken as "the UI is gone".

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ccbridge/ccbridge/framing"
)

// floodLines is how many lines of floodSize bytes a flood CLI writes: 10
// MiB, more than the queue's bound.
const (
	floodLines = 160
	floodSize  = 64 << 10
)

// floodCLI answers "flood" with floodLines long lines, numbered, and
// echoes anything else.
func floodCLI(line string) []string {
	if line != "flood" {
		return []string{line}
	}
	out := make([]string, floodLines)
	for i := range out {
		out[i] = fmt.Sprintf("%04d", i) + strings.Repeat("x", floodSize)
	}
	return out
}

// newFlood is a harness whose handler sends "flood" to the child and
// answers any other UI line itself ("reply LINE"), and whose "count"
// line reports on seen how many CLI lines the handler had by then.
func newFlood(t *testing.T) (*harness, chan int) {
	h := newHarness(t, floodCLI)
	seen := make(chan int, 1)
	r := h.rec
	r.onLine = func(line string) {
		switch line {
		case "flood":
			r.sup.Live().Write([]byte(line))
		case "count":
			seen <- len(slices.DeleteFunc(slices.Clone(r.calls), func(c string) bool { return !strings.HasPrefix(c, "cli ") }))
		}
		r.loop.Emit([]byte("reply " + line))
	}
	return h, seen
}

// TestLoopBackpressure: while the UI reads nothing the loop stops
// taking the CLI's output once the queue is at its bound (the CLI then
// blocks on its own stdout), yet UI lines and signals are still served,
// and their output is queued beyond the bound; when the UI reads again
// every line comes, in order, none dropped.
func TestLoopBackpressure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, seen := newFlood(t)
		h.send(t, "flood")
		synctest.Wait() // the UI reads nothing: everything stops
		h.send(t, "count")
		took := <-seen
		if maxTaken := queueLimit/floodSize + 2; took >= floodLines || took > maxTaken {
			t.Fatalf("the loop took %d of %d lines while the UI read nothing, want at most %d", took, floodLines, maxTaken)
		}
		h.signals <- syscall.SIGINT
		synctest.Wait()

		var got []string
		for len(got) < floodLines+2 {
			line := h.next(t)
			if len(line) > 20 {
				line = line[:20]
			}
			got = append(got, line)
		}
		var flood []string
		for _, l := range got {
			if !strings.HasPrefix(l, "reply") {
				flood = append(flood, l[:4])
			}
		}
		if len(flood) != floodLines {
			t.Fatalf("got %d flood lines, want %d", len(flood), floodLines)
		}
		for i, l := range flood {
			if want := fmt.Sprintf("%04d", i); l != want {
				t.Fatalf("flood line %d is %s, want %s: lost or out of order", i, l, want)
			}
		}
		if !slices.Contains(got, "reply flood") || !slices.Contains(got, "reply count") {
			t.Errorf("the replies to the UI's lines are missing")
		}
		h.ui.Close()
		<-h.done
		if h.err != nil {
			t.Errorf("Run: %v", h.err)
		}
		if !slices.Contains(h.rec.calls, "interrupt") {
			t.Errorf("the SIGINT sent while the UI was not reading was not served: %q", h.rec.calls)
		}
	})
}

// TestLoopShutdownWhileUIStalled: SIGTERM while the UI reads nothing
// and the queue is full: the shutdown runs, the child is stopped, the
// output the UI takes none of for stallLimit is given up, and Run
// returns (on the bubble's clock, after stallLimit and no more than a
// second later).
func TestLoopShutdownWhileUIStalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newFlood(t)
		h.send(t, "flood")
		synctest.Wait()
		start := time.Now()
		h.signals <- syscall.SIGTERM
		<-h.done
		took := time.Since(start)
		if took < stallLimit || took > stallLimit+time.Second {
			t.Errorf("Run returned %v after SIGTERM, want %v to %v", took, stallLimit, stallLimit+time.Second)
		}
		if !errors.Is(h.err, ErrUIStalled) {
			t.Errorf("Run: %v, want ErrUIStalled", h.err)
		}
		select {
		case <-h.starts[0].stopped:
		default:
			t.Error("the child was not stopped")
		}
		if !slices.Contains(h.rec.calls, "shutdown terminated") {
			t.Errorf("calls %q, want the shutdown", h.rec.calls)
		}
		if !strings.Contains(h.log.String(), "giving it up") {
			t.Errorf("no log of the output given up:\n%s", h.log)
		}
		h.outR.Close() // releases the writer still blocked on the UI
		h.ui.Close()
	})
}

// TestLoopShutdownSlowUIGetsEverything: a UI that reads slowly, but
// reads, during a shutdown gets every line: only a UI that takes nothing
// for stallLimit is given up on.
func TestLoopShutdownSlowUIGetsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newFlood(t)
		h.send(t, "flood")
		synctest.Wait()
		h.signals <- syscall.SIGTERM
		n := 0
		for {
			time.Sleep(stallLimit * 3 / 4)
			line, err := h.out.ReadLine()
			if err != nil {
				break
			}
			if !strings.HasPrefix(string(line), "reply") {
				n++
			}
		}
		<-h.done
		if n != floodLines || h.err != nil {
			t.Errorf("the slow UI got %d of %d lines; Run: %v", n, floodLines, h.err)
		}
		h.ui.Close()
	})
}

// TestLoopUIWriteError: a write to the UI that fails (the UI closed its
// end: EPIPE) means the UI is gone: the session shuts down, the child is
// stopped, and Run returns the error.
func TestLoopUIWriteError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newFlood(t)
		h.send(t, "flood")
		synctest.Wait()
		h.outR.CloseWithError(syscall.EPIPE)
		<-h.done
		if !errors.Is(h.err, syscall.EPIPE) {
			t.Errorf("Run: %v, want EPIPE", h.err)
		}
		if !slices.Contains(h.rec.calls, "shutdown the UI's output is gone") {
			t.Errorf("calls %q, want the shutdown", h.rec.calls)
		}
		select {
		case <-h.starts[0].stopped:
		default:
			t.Error("the child was not stopped")
		}
		h.ui.Close()
	})
}

// TestUIWriterBound: Write waits until its bytes are written and holds
// no copy of them (drop-in's pump queues nothing), and returns once the
// output is given up; swap never waits, even behind a waiting Write.
func TestUIWriterBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, w := io.Pipe()
		q := newUIWriter(w)
		big := make([]byte, queueLimit)
		errc := make(chan error, 1)
		go func() {
			_, err := q.Write(big)
			errc <- err
		}()
		synctest.Wait()
		select {
		case err := <-errc:
			t.Fatalf("Write to a UI that reads nothing returned %v, want it to wait", err)
		default:
		}
		q.swap([]byte("reply\n")) // the loop's side never waits
		if got := q.pending(); got != queueLimit+len("reply\n") {
			t.Errorf("pending %d", got)
		}
		if lost := q.abandon(); lost != int64(queueLimit+len("reply\n")) {
			t.Errorf("abandon: %d bytes not written, want all", lost)
		}
		if err := <-errc; !errors.Is(err, ErrUIStalled) {
			t.Errorf("the waiting Write returned %v, want ErrUIStalled", err)
		}
		if _, err := q.Write([]byte("later\n")); !errors.Is(err, ErrUIStalled) {
			t.Errorf("Write after abandon: %v, want ErrUIStalled", err)
		}
		r.Close()
		q.close()
	})
}

// TestUIWriterOrder: what swap queued before Writes is written before
// them, and what it queues after them comes after.
func TestUIWriterOrder(t *testing.T) {
	r, w := io.Pipe()
	q := newUIWriter(w)
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		got <- b
	}()
	q.swap([]byte("1\n"))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 2; i <= 200; i++ {
			if _, err := q.Write([]byte(strconv.Itoa(i) + "\n")); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	<-done
	q.swap([]byte("201\n"))
	for q.pending() > 0 {
		time.Sleep(time.Millisecond)
	}
	q.close()
	w.Close()
	var want strings.Builder
	for i := 1; i <= 201; i++ {
		want.WriteString(strconv.Itoa(i) + "\n")
	}
	if b := <-got; string(b) != want.String() {
		t.Errorf("the UI got %q, want 1 to 201 in order", b)
	}
}

// TestUIWriterDirect: through a real pipe, where Write and swap write at
// once what the pipe has room for and hand the rest over, a UI that reads
// in small pieces, with pauses, gets every byte in order, and the writer
// is idle at the end.
func TestUIWriterDirect(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	q := newUIWriter(w)
	got := make(chan []byte)
	go func() {
		var all []byte
		buf := make([]byte, 3000)
		for i := 0; ; i++ {
			n, err := r.Read(buf)
			all = append(all, buf[:n]...)
			if err != nil {
				got <- all
				return
			}
			if i%64 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
	}()
	var want bytes.Buffer
	for i := range 400 {
		line := []byte(fmt.Sprintf("%d %s\n", i, strings.Repeat("x", (i*7919)%100000)))
		want.Write(line)
		if i%10 == 0 {
			q.swap(slices.Clone(line))
			continue
		}
		if _, err := q.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	for q.pending() > 0 {
		time.Sleep(time.Millisecond)
	}
	q.close()
	w.Close()
	if b := <-got; !bytes.Equal(b, want.Bytes()) {
		t.Errorf("the UI got %d bytes, want %d in order", len(b), want.Len())
	}
	if err := q.result(); err != nil {
		t.Error(err)
	}
}

// BenchmarkUIWriterBlock is the drop-in relay's write of one 64 KiB block
// of lines to the host: straight to the writer (as before the queue),
// and through the queue and its goroutine.
func BenchmarkUIWriterBlock(b *testing.B) {
	block := bytes.Repeat([]byte(strings.Repeat("x", 149)+"\n"), (64<<10)/150)
	b.Run("direct", func(b *testing.B) {
		w := framing.NewWriter(io.Discard)
		b.SetBytes(int64(len(block)))
		b.ReportAllocs()
		for b.Loop() {
			if err := w.WriteBlock(block); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("queued", func(b *testing.B) {
		q := newUIWriter(io.Discard)
		defer q.close()
		w := framing.NewWriter(q)
		b.SetBytes(int64(len(block)))
		b.ReportAllocs()
		for b.Loop() {
			if err := w.WriteBlock(block); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("swapped", func(b *testing.B) {
		q := newUIWriter(io.Discard)
		defer q.close()
		var out []byte
		b.SetBytes(int64(len(block)))
		b.ReportAllocs()
		for b.Loop() {
			out = append(out, block...)
			out = q.swap(out)
			for q.pending() > queueLimit {
				<-q.notify
			}
		}
	})
}
