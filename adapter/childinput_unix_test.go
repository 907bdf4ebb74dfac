//go:build unix

package adapter

// A child's input with real processes and pipes: session.Child's
// WriteNow (the loop's own write while the pipe has room) and the input's
// goroutine (what the pipe does not take) keep the lines in order, and a
// staged shutdown ends a write to a child that reads nothing.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ccbridge/ccbridge/session"
)

// startShell starts `sh -c script` as the live child of a supervisor of
// a loop that does not run (Proc's methods need none).
func startShell(t testing.TB, script string, cfg session.Config) *Proc {
	t.Helper()
	loop := NewLoop(LoopConfig{})
	sup := loop.NewSupervisor(SupervisorConfig{Child: cfg, Start: func(c session.Config) (Child, error) {
		c.Path, c.Args = "/bin/sh", []string{"-c", script}
		return session.Start(c)
	}})
	p, err := sup.Start(session.Options{}, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.child.Kill()
		<-p.child.Done()
	})
	return p
}

// TestChildInputOrderRealPipe: lines of many sizes written to a CLI that
// is stopped (SIGSTOP) return at once, the first straight into the pipe
// (WriteNow) and the rest queued; when the CLI runs again it reads every
// byte in order, and CloseStdin closes its stdin only after them.
func TestChildInputOrderRealPipe(t *testing.T) {
	out := filepath.Join(t.TempDir(), "read")
	p := startShell(t, `exec cat >'`+out+`'`, session.Config{})
	if err := syscall.Kill(p.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(p.Pid(), syscall.SIGCONT)
	var want bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 600 {
			line := fmt.Appendf(nil, "%04d %s", i, strings.Repeat(string(rune('a'+i%26)), (i*7919)%9000))
			p.Write(line)
			want.Write(line)
			want.WriteByte('\n')
		}
		p.CloseStdin()
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("writing to a stopped CLI blocked")
	}
	if n := p.in.pending(); n < 1<<20 {
		t.Errorf("%d bytes queued for the stopped CLI, want most of the %d written", n, want.Len())
	}
	syscall.Kill(p.Pid(), syscall.SIGCONT)
	select {
	case <-p.child.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the CLI did not end after its stdin was closed")
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		i := 0
		for i < min(len(got), want.Len()) && got[i] == want.Bytes()[i] {
			i++
		}
		t.Fatalf("the CLI read %d bytes, want %d; they differ from byte %d", len(got), want.Len(), i)
	}
}

// TestChildInputStopRealChild: a CLI that never reads its stdin, with a
// megabyte queued for it and the input's goroutine blocked in a write,
// is stopped in stages all the same: stdin closed, SIGTERM after the
// grace; the write ends, and nothing is left queued.
func TestChildInputStopRealChild(t *testing.T) {
	p := startShell(t, `exec sleep 600`, session.Config{Grace: 100 * time.Millisecond, TermGrace: 5 * time.Second})
	p.Write([]byte(strings.Repeat("z", 1<<20)))
	if n := p.in.pending(); n == 0 {
		t.Fatal("nothing queued for a CLI that does not read: the test proves nothing")
	}
	start := time.Now()
	p.Stop()
	select {
	case <-p.child.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the CLI was not stopped while a write to it waited")
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("the CLI took %v to stop, want about its 100 ms grace", took)
	}
	if sig := p.child.Exit().Signal; sig != syscall.SIGTERM {
		t.Errorf("the CLI ended with %v, want SIGTERM (the stage after the grace)", p.child.Exit())
	}
	for deadline := time.Now().Add(5 * time.Second); p.in.pending() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes still queued 5 s after the CLI ended", p.in.pending())
		}
	}
}

// BenchmarkProcWrite: lines written through Proc.Write to a CLI that
// reads them all (cat to /dev/null): a control response, a 4 KiB prompt,
// a 64 KiB one. The writer waits while the child's input is at its bound,
// as the loop does (it then takes no UI line).
func BenchmarkProcWrite(b *testing.B) {
	for _, size := range []int{200, 4 << 10, 64 << 10} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			p := startShell(b, `exec cat >/dev/null`, session.Config{})
			line := bytes.Repeat([]byte("w"), size-1)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				p.Write(line)
				room(p)
			}
			p.CloseStdin()
			<-p.child.Done()
		})
	}
}

// room waits while the child's input is at its bound, as the loop does.
func room(p *Proc) {
	l := p.sup.loop
	for l.inputFull() {
		<-l.inWake
	}
}
