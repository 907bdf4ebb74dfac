package adapter

import (
	"testing"
	"testing/synctest"
)

// TestLoopOutputIsUTF8: a line with bytes that are not UTF-8, emitted by a
// handler (here a CLI line copied as it is, as the dialects copy raw
// subtrees), reaches the UI with each bad run replaced by U+FFFD.
func TestLoopOutputIsUTF8(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bad := func(string) []string { return []string{"{\"text\":\"a\xffb\xe2\x82\"}"} }
		h := newHarness(t, bad)
		h.rec.onLine = func(line string) { h.rec.sup.Live().Write([]byte(line)) }
		h.send(t, "go")
		got := h.next(t)
		if want := "{\"text\":\"a\uFFFDb\uFFFD\"}"; got != want {
			t.Errorf("the UI got %q, want %q", got, want)
		}
		h.ui.Close()
		<-h.done
	})
}
