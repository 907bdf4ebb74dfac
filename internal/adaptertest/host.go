package adaptertest

import (
	"bytes"
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/framing"
)

// Host drives a session's Run in memory, as a UI would: it writes the
// UI's lines and reads the session's output line by line.
type Host struct {
	T     *testing.T
	In    *io.PipeWriter
	Lines chan []byte
	Sigs  chan os.Signal
	done  chan struct{}
	code  int
	err   error
}

// StartRunner runs run in memory; the test's cleanup closes the UI's
// input and waits for run to return.
func StartRunner(t *testing.T, run func(context.Context, io.Reader, io.Writer, <-chan os.Signal) (int, error)) *Host {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &Host{T: t, In: inW, Lines: make(chan []byte, 4096), Sigs: make(chan os.Signal, 4), done: make(chan struct{})}
	go func() {
		h.code, h.err = run(context.Background(), inR, outW, h.Sigs)
		outW.Close()
		close(h.done)
	}()
	go func() {
		fr := framing.NewReader(outR, 0)
		for {
			line, err := fr.ReadLine()
			if err != nil {
				close(h.Lines)
				return
			}
			h.Lines <- bytes.Clone(line)
		}
	}()
	t.Cleanup(func() {
		h.In.Close()
		select {
		case <-h.done:
		case <-time.After(20 * time.Second):
			t.Errorf("Run did not return")
		}
	})
	return h
}

// Send writes one UI line.
func (h *Host) Send(line string) {
	h.T.Helper()
	if _, err := io.WriteString(h.In, line+"\n"); err != nil {
		h.T.Fatal(err)
	}
}

// Next is the next output line; it fails the test after 10 s.
func (h *Host) Next() []byte {
	h.T.Helper()
	select {
	case l, ok := <-h.Lines:
		if !ok {
			h.T.Fatal("output ended")
		}
		return l
	case <-time.After(10 * time.Second):
		h.T.Fatal("no line within 10 s")
		return nil
	}
}

// Rest is every output line left, once the output ends.
func (h *Host) Rest() [][]byte {
	var all [][]byte
	for l := range h.Lines {
		all = append(all, l)
	}
	return all
}

// Wait waits for Run to return and gives its exit code.
func (h *Host) Wait() int {
	h.T.Helper()
	select {
	case <-h.done:
	case <-time.After(20 * time.Second):
		h.T.Fatal("Run did not return")
	}
	if h.err != nil {
		h.T.Fatalf("Run: %v", h.err)
	}
	return h.code
}

// Done is closed once Run has returned.
func (h *Host) Done() <-chan struct{} { return h.done }

// Until reads lines until one satisfies pred.
func (h *Host) Until(pred func([]byte) bool) []byte {
	h.T.Helper()
	for {
		if l := h.Next(); pred(l) {
			return l
		}
	}
}

// NextOf reads lines until one of type typ arrives.
func (h *Host) NextOf(typ string) []byte {
	h.T.Helper()
	return h.Until(func(l []byte) bool { return gjson.GetBytes(l, "type").Str == typ })
}
