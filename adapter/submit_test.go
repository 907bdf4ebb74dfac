package adapter

import (
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
)

// TestLoopSubmit: work handed to Submit from another goroutine runs on the
// loop, also while the loop holds the CLI's output back for a UI that
// reads nothing; once the loop has ended, Submit returns false at once
// and the work never runs.
func TestLoopSubmit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		line := strings.Repeat("x", 1<<10)
		flood := func(string) []string {
			out := make([]string, 512) // 512 KiB: past the 256 KiB bound
			for i := range out {
				out[i] = line
			}
			return out
		}
		h := newHarness(t, flood)
		r := h.rec
		r.onLine = func(l string) { r.sup.Live().Write([]byte(l)) }
		h.send(t, "go")
		synctest.Wait() // the UI reads nothing: the loop stops taking the CLI's output

		ran := make(chan bool, 1)
		if !r.loop.Submit(func() { ran <- r.loop.full() }) {
			t.Fatal("Submit returned false while the loop runs")
		}
		if paused := <-ran; !paused {
			t.Error("the work ran, but the loop was not holding the CLI's output back: the test proves nothing")
		}
		// Submit's work runs in order with everything else on the loop.
		var order []string
		for _, s := range []string{"a", "b", "c"} {
			r.loop.Submit(func() { order = append(order, s) })
		}
		r.loop.Submit(func() {})
		if got := strings.Join(order, ""); got != "abc" {
			t.Errorf("submitted work ran as %q, want abc", got)
		}

		h.signals <- syscall.SIGTERM // output given up after 2 s unread
		<-h.done
		h.ui.Close()
		synctest.Wait()
		never := false
		if r.loop.Submit(func() { never = true }) {
			t.Error("Submit returned true after the loop ended")
		}
		synctest.Wait()
		if never {
			t.Error("work submitted after the loop ended ran")
		}
	})
}
