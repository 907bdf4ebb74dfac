//go:build linux

package adapter

import (
	"bytes"
	"context"
	"io"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/ccbridge/ccbridge/session"
)

// rawRecorder is a recorder whose children write bytes (a pty).
type rawRecorder struct {
	recorder
	got  bytes.Buffer
	seen chan struct{} // closed once got holds want
	want []byte
}

func (r *rawRecorder) CLIOutput(p *Proc, b []byte) {
	r.got.Write(b)
	if r.seen != nil && bytes.Contains(r.got.Bytes(), r.want) {
		close(r.seen)
		r.seen = nil
		p.CloseStdin()
	}
}

// TestSupervisorPTY runs a child under a pty through the core: the
// supervisor's Bytes transport writes bytes as they are and hands the
// output to the handler as it is read, not as lines; the child's exit
// ends the session.
func TestSupervisorPTY(t *testing.T) {
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat on PATH")
	}
	loop := NewLoop(LoopConfig{})
	r := &rawRecorder{recorder: recorder{loop: loop, onLine: func(string) {}, onExpire: func(time.Time) {}},
		seen: make(chan struct{}), want: []byte("no newline here, \x1b[1mbold\x1b[0m")}
	r.sup = loop.NewSupervisor(SupervisorConfig{Transport: Bytes,
		Child: session.Config{Path: cat, PTY: true, Grace: 5 * time.Second}})
	p, err := r.sup.Start(session.Options{}, false)
	if err != nil {
		t.Fatal(err)
	}
	p.Write(append(r.want, '\n'))
	uiR, uiW := io.Pipe()
	defer uiW.Close()
	done := make(chan error, 1)
	seen := r.seen
	go func() {
		_, err := loop.Run(context.Background(), r, uiR, io.Discard, nil)
		done <- err
	}()
	select {
	case <-seen:
	case <-time.After(20 * time.Second):
		t.Fatal("the pty child's output never came")
	}
	uiW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the session did not end after the input ended")
	}
	if !bytes.Contains(r.got.Bytes(), r.want) {
		t.Errorf("the pty child's output %q does not hold what was written", r.got.Bytes())
	}
	if !slices.Contains(r.calls, "exited claude exited with code 0") {
		t.Errorf("calls %q, want the child's exit", r.calls)
	}
}
