package stream

// Drop-in with a host that stops reading its output.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/internal/adaptertest"
)

func init() {
	// flood: answers every user line with FAKE_SIZE bytes of assistant
	// lines of 64 KiB, then a result; exits at EOF.
	adaptertest.Register("flood", func() {
		stdin := bufio.NewReader(os.Stdin)
		size, _ := strconv.Atoi(os.Getenv("FAKE_SIZE"))
		w := bufio.NewWriterSize(os.Stdout, 1<<16)
		pad := strings.Repeat("x", 64<<10)
		for {
			if _, err := stdin.ReadBytes('\n'); err != nil {
				return
			}
			for i := 0; i < size; i += len(pad) {
				fmt.Fprintf(w, `{"type":"assistant","i":%d,"pad":"%s"}`+"\n", i, pad)
			}
			w.WriteString(`{"type":"result","subtype":"success","session_id":"sess-flood"}` + "\n")
			w.Flush()
		}
	})
}

// runStalledHost runs a DropIn whose host never reads its output; first
// is closed at the relay's first write to the host.
func runStalledHost(t *testing.T, d *DropIn) (outR *io.PipeReader, sigs chan os.Signal, first chan struct{}, done chan error) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	sigs, first, done = make(chan os.Signal, 1), make(chan struct{}), make(chan error, 1)
	var once sync.Once
	go func() {
		_, err := d.Run(context.Background(), inR, writerFunc(func(p []byte) (int, error) {
			once.Do(func() { close(first) })
			return outW.Write(p)
		}), sigs)
		done <- err
	}()
	if _, err := io.WriteString(inW, userMsg+"\n"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		inW.Close()
		outR.Close()
	})
	return outR, sigs, first, done
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestDropInStalledHostSIGTERM: a host that reads none of a flood does
// not freeze the relay: SIGTERM starts the staged shutdown, the output is
// given up once the host has taken none of it for the stall time, the
// CLI (its stdin closed) exits, and Run returns.
func TestDropInStalledHostSIGTERM(t *testing.T) {
	log := &adaptertest.LogBuffer{}
	d := &DropIn{Child: adaptertest.Config(t, "flood", adaptertest.StreamJSONArgs, "FAKE_SIZE=16777216"),
		stall: 200 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(log, nil))}
	_, sigs, first, done := runStalledHost(t, d)
	<-first
	sigs <- syscall.SIGTERM
	select {
	case err := <-done:
		if !errors.Is(err, adapter.ErrUIStalled) {
			t.Errorf("Run: %v, want ErrUIStalled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Run did not return within 10 s of SIGTERM; log:\n%s", log)
	}
	if !strings.Contains(log.String(), "giving it up") {
		t.Errorf("no log of the output given up:\n%s", log)
	}
}

// TestDropInHostClosesOutput: a failed write to the host (it closed its
// end) starts the staged shutdown: the CLI's stdin is closed, it exits,
// and Run returns the error.
func TestDropInHostClosesOutput(t *testing.T) {
	log := &adaptertest.LogBuffer{}
	d := &DropIn{Child: adaptertest.Config(t, "flood", adaptertest.StreamJSONArgs, "FAKE_SIZE=16777216"),
		Logger: slog.New(slog.NewTextHandler(log, nil))}
	outR, _, first, done := runStalledHost(t, d)
	<-first
	outR.CloseWithError(syscall.EPIPE)
	select {
	case err := <-done:
		if !errors.Is(err, syscall.EPIPE) {
			t.Errorf("Run: %v, want EPIPE", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Run did not return within 10 s of the host closing its output; log:\n%s", log)
	}
	if !strings.Contains(log.String(), `reason="the host's output is gone"`) {
		t.Errorf("no staged shutdown for the host's output:\n%s", log)
	}
}
