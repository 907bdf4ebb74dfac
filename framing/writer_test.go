package framing

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// recorder keeps every Write call separately. It is deliberately not
// locked: if the Writer ever let two writes overlap, -race reports it.
type recorder struct {
	writes [][]byte
	failAt int // fail the failAt-th Write (1-based); 0 = never
	short  bool
}

func (r *recorder) Write(p []byte) (int, error) {
	r.writes = append(r.writes, bytes.Clone(p))
	if r.failAt > 0 && len(r.writes) == r.failAt {
		if r.short {
			return len(p) / 2, nil
		}
		return 0, errBoom
	}
	return len(p), nil
}

func (r *recorder) String() string { return string(bytes.Join(r.writes, nil)) }

func TestWriteLine(t *testing.T) {
	var rec recorder
	w := NewWriter(&rec)
	for _, s := range []string{`{"a":1}`, "", pat(100*ki, 1), "x\r"} {
		if err := w.WriteLine([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"{\"a\":1}\n", "\n", pat(100*ki, 1) + "\n", "x\r\n"}
	if len(rec.writes) != len(want) {
		t.Fatalf("%d Write calls, want one per line (%d)", len(rec.writes), len(want))
	}
	for i := range want {
		if string(rec.writes[i]) != want[i] {
			t.Errorf("write %d = %q, want %q", i, rec.writes[i], want[i])
		}
	}
}

func TestWriterRejectsNewline(t *testing.T) {
	var rec recorder
	w := NewWriter(&rec)
	for _, s := range []string{"a\nb", "\n", "ab\n"} {
		if err := w.WriteLine([]byte(s)); !errors.Is(err, ErrNewline) {
			t.Errorf("WriteLine(%q) = %v, want ErrNewline", s, err)
		}
		if err := w.AppendLine([]byte(s)); !errors.Is(err, ErrNewline) {
			t.Errorf("AppendLine(%q) = %v, want ErrNewline", s, err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if len(rec.writes) != 0 {
		t.Fatalf("rejected lines were written: %q", rec.writes)
	}
	// The Writer is still usable.
	if err := w.WriteLine([]byte("ok")); err != nil {
		t.Fatal(err)
	}
	if got := rec.String(); got != "ok\n" {
		t.Fatalf("output = %q", got)
	}
}

func TestAppendLineAndFlush(t *testing.T) {
	var rec recorder
	w := NewWriter(&rec)
	for _, s := range []string{"a", "b", "c"} {
		if err := w.AppendLine([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if len(rec.writes) != 0 {
		t.Fatalf("AppendLine wrote before Flush: %q", rec.writes)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil { // nothing pending: no Write call
		t.Fatal(err)
	}
	w.AppendLine([]byte("d"))
	w.WriteLine([]byte("e")) // pending lines go out with it, in one Write
	want := []string{"a\nb\nc\n", "d\ne\n"}
	if fmt.Sprintf("%q", rec.writes) != fmt.Sprintf("%q", want) {
		t.Fatalf("writes = %q, want %q", rec.writes, want)
	}
}

func TestAppendLineWritesWhenFull(t *testing.T) {
	var rec recorder
	w := NewWriter(&rec)
	line := []byte(pat(1000, 1))
	n := 0
	for len(rec.writes) == 0 {
		if err := w.AppendLine(line); err != nil {
			t.Fatal(err)
		}
		n++
		if n > 1000 {
			t.Fatal("AppendLine never wrote")
		}
	}
	if got := len(rec.writes[0]); got < flushSize || got%1001 != 0 {
		t.Fatalf("AppendLine wrote %d bytes; want whole lines once %d are pending", got, flushSize)
	}
}

// flushRecorder counts calls to Flush.
type flushRecorder struct {
	bytes.Buffer
	flushes int
	err     error
}

func (f *flushRecorder) Flush() error { f.flushes++; return f.err }

func TestWriterFlushesUnderlying(t *testing.T) {
	var f flushRecorder
	w := NewWriter(&f)
	w.WriteLine([]byte("a"))
	w.AppendLine([]byte("b"))
	if f.flushes != 1 {
		t.Fatalf("flushes = %d after WriteLine and AppendLine, want 1", f.flushes)
	}
	w.Flush()
	w.Stream(func(sw io.Writer) error { _, err := io.WriteString(sw, "c"); return err })
	if f.flushes != 3 || f.String() != "a\nb\nc\n" {
		t.Fatalf("flushes = %d, output %q", f.flushes, f.String())
	}

	// A failing Flush breaks the Writer like a failing Write.
	f.err = errBoom
	if err := w.WriteLine([]byte("d")); !errors.Is(err, errBoom) {
		t.Fatalf("WriteLine with failing Flush = %v", err)
	}
	if err := w.WriteLine([]byte("e")); !errors.Is(err, errBoom) {
		t.Fatalf("WriteLine after failing Flush = %v", err)
	}

	// With a real bufio.Writer, every line reaches the bottom.
	var out bytes.Buffer
	w = NewWriter(bufio.NewWriter(&out))
	w.WriteLine([]byte("x"))
	if out.String() != "x\n" {
		t.Fatalf("bufio.Writer was not flushed: %q", out.String())
	}
}

func TestWriterBroken(t *testing.T) {
	for _, short := range []bool{false, true} {
		t.Run(fmt.Sprint("short=", short), func(t *testing.T) {
			rec := &recorder{failAt: 2, short: short}
			w := NewWriter(rec)
			if err := w.WriteLine([]byte("one")); err != nil {
				t.Fatal(err)
			}
			w.AppendLine([]byte("two"))
			err := w.WriteLine([]byte("three"))
			want := errBoom
			if short {
				want = io.ErrShortWrite
			}
			if !errors.Is(err, want) {
				t.Fatalf("failed WriteLine = %v, want %v", err, want)
			}
			called := false
			for i, got := range []error{
				w.WriteLine([]byte("four")),
				w.AppendLine([]byte("five")),
				w.AppendLine([]byte("bad\n")),
				w.Flush(),
				w.Stream(func(io.Writer) error { called = true; return nil }),
			} {
				if got != err {
					t.Errorf("call %d after failure = %v, want the same error %v", i, got, err)
				}
			}
			if called {
				t.Error("Stream called fn on a broken Writer")
			}
			if len(rec.writes) != 2 {
				t.Fatalf("%d Write calls, want 2 (nothing after the failure)", len(rec.writes))
			}
		})
	}
}

func TestStream(t *testing.T) {
	var rec recorder
	w := NewWriter(&rec)
	w.AppendLine([]byte("pending"))
	err := w.Stream(func(sw io.Writer) error {
		for _, p := range []string{`{"a":`, `"b`, `c"}`} {
			if _, err := io.WriteString(sw, p); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	w.WriteLine([]byte("after"))
	want := []string{"pending\n{\"a\":\"bc\"}\n", "after\n"}
	if fmt.Sprintf("%q", rec.writes) != fmt.Sprintf("%q", want) {
		t.Fatalf("writes = %q, want %q", rec.writes, want)
	}
}

func TestStreamLong(t *testing.T) {
	var rec recorder
	w := NewWriter(&rec)
	big := pat(1*mi+3, 1)
	err := w.Stream(func(sw io.Writer) error {
		for s := big; len(s) > 0; {
			n := min(len(s), 10*ki)
			if _, err := io.WriteString(sw, s[:n]); err != nil {
				return err
			}
			s = s[n:]
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rec.String() != big+"\n" {
		t.Fatal("streamed line differs")
	}
	if len(rec.writes) < 2 {
		t.Fatalf("a 1 MiB line went out in %d Write calls; want it streamed", len(rec.writes))
	}
	for i, p := range rec.writes {
		if len(p) > flushSize+10*ki {
			t.Fatalf("write %d holds %d bytes", i, len(p))
		}
	}
}

// TestStreamSegments passes a long line from ReadSegment to Stream.
func TestStreamSegments(t *testing.T) {
	big := pat(300*ki, 2)
	r := NewReader(strings.NewReader("small\r\n"+big+"\r\n"), 0)
	var out bytes.Buffer
	w := NewWriter(&out)
	for {
		err := w.Stream(func(sw io.Writer) error {
			for {
				seg, _, last, err := r.ReadSegment()
				if err != nil {
					return err
				}
				if _, err := sw.Write(seg); err != nil {
					return err
				}
				if last {
					return nil
				}
			}
		})
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if out.String() != "small\n"+big+"\n" {
		t.Fatal("output differs")
	}
}

func TestStreamErrors(t *testing.T) {
	t.Run("fn error before output", func(t *testing.T) {
		var rec recorder
		w := NewWriter(&rec)
		w.AppendLine([]byte("pending"))
		err := w.Stream(func(sw io.Writer) error {
			io.WriteString(sw, "partial")
			return errBoom
		})
		if err != errBoom {
			t.Fatalf("Stream = %v, want %v", err, errBoom)
		}
		// The partial line is dropped; the pending line stays; the Writer works.
		if err := w.WriteLine([]byte("next")); err != nil {
			t.Fatal(err)
		}
		if got := rec.String(); got != "pending\nnext\n" {
			t.Fatalf("output = %q", got)
		}
	})
	t.Run("newline rejected", func(t *testing.T) {
		var rec recorder
		w := NewWriter(&rec)
		err := w.Stream(func(sw io.Writer) error {
			io.WriteString(sw, "a")
			if n, err := io.WriteString(sw, "b\nc"); n != 0 || !errors.Is(err, ErrNewline) {
				t.Errorf("Write with newline = %d, %v", n, err)
			}
			if _, err := io.WriteString(sw, "d"); !errors.Is(err, ErrNewline) {
				t.Errorf("Write after rejected Write = %v", err)
			}
			return nil // ignores the error; Stream must not
		})
		if !errors.Is(err, ErrNewline) {
			t.Fatalf("Stream = %v, want ErrNewline", err)
		}
		w.WriteLine([]byte("ok"))
		if got := rec.String(); got != "ok\n" {
			t.Fatalf("output = %q", got)
		}
	})
	t.Run("fn error after output", func(t *testing.T) {
		var rec recorder
		w := NewWriter(&rec)
		err := w.Stream(func(sw io.Writer) error {
			io.WriteString(sw, pat(flushSize+1, 1))
			return errBoom
		})
		if !errors.Is(err, errBoom) {
			t.Fatalf("Stream = %v, want %v", err, errBoom)
		}
		// Part of the line is out: the Writer is broken, and no '\n' follows it.
		if err2 := w.WriteLine([]byte("x")); err2 != err {
			t.Fatalf("WriteLine after a cut line = %v, want %v", err2, err)
		}
		if got := rec.String(); got != pat(flushSize+1, 1) {
			t.Fatalf("output is %d bytes, ends %q", len(got), got[max(0, len(got)-3):])
		}
	})
	t.Run("write error inside fn", func(t *testing.T) {
		rec := &recorder{failAt: 1}
		w := NewWriter(rec)
		err := w.Stream(func(sw io.Writer) error {
			_, err := io.WriteString(sw, pat(flushSize, 1))
			if !errors.Is(err, errBoom) {
				t.Errorf("Write = %v, want %v", err, errBoom)
			}
			return nil
		})
		if !errors.Is(err, errBoom) {
			t.Fatalf("Stream = %v, want %v", err, errBoom)
		}
		if err2 := w.Flush(); err2 != err {
			t.Fatalf("Flush = %v, want %v", err2, err)
		}
	})
	t.Run("panic", func(t *testing.T) {
		var rec recorder
		w := NewWriter(&rec)
		func() {
			defer func() {
				if recover() != "oops" {
					t.Error("the panic was not passed on")
				}
			}()
			w.Stream(func(sw io.Writer) error {
				io.WriteString(sw, "half")
				panic("oops")
			})
		}()
		if err := w.WriteLine([]byte("x")); err == nil {
			t.Fatal("WriteLine after a panicking Stream succeeded")
		}
		if len(rec.writes) != 0 {
			t.Fatalf("writes = %q", rec.writes)
		}
	})
	t.Run("writer kept after Stream", func(t *testing.T) {
		var rec recorder
		w := NewWriter(&rec)
		var kept io.Writer
		w.Stream(func(sw io.Writer) error { kept = sw; return nil })
		if _, err := kept.Write([]byte("late")); err == nil {
			t.Fatal("Write after Stream returned succeeded")
		}
		if got := rec.String(); got != "\n" {
			t.Fatalf("output = %q", got)
		}
	})
}

// TestWriterConcurrent writes from many goroutines with WriteLine,
// AppendLine+Flush and Stream and checks that every line comes out whole,
// in each goroutine's order, and that each Write call holds whole lines.
func TestWriterConcurrent(t *testing.T) {
	const goroutines = 12
	const perG = 150
	var rec recorder
	w := NewWriter(&rec)
	mk := func(g, i int) string {
		size := []int{10, 300, 5 * ki, 70 * ki}[(g+i)%4]
		return fmt.Sprintf("g%02d-i%04d-", g, i) + strings.Repeat(string(rune('a'+g)), size)
	}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perG {
				s := mk(g, i)
				var err error
				switch (g + i) % 3 {
				case 0:
					err = w.WriteLine([]byte(s))
				case 1:
					if err = w.AppendLine([]byte(s)); err == nil && i%2 == 0 {
						err = w.Flush()
					}
				case 2:
					err = w.Stream(func(sw io.Writer) error {
						for p := s; len(p) > 0; {
							n := min(len(p), 1+len(p)/3)
							if _, err := io.WriteString(sw, p[:n]); err != nil {
								return err
							}
							p = p[n:]
							runtime.Gosched()
						}
						return nil
					})
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	out := rec.String()
	if !strings.HasSuffix(out, "\n") {
		t.Fatal("output does not end with a newline")
	}
	next := make([]int, goroutines)
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var g, i int
		if _, err := fmt.Sscanf(l, "g%02d-i%04d-", &g, &i); err != nil {
			t.Fatalf("line %.40q...: %v", l, err)
		}
		if g < 0 || g >= goroutines || i != next[g] {
			t.Fatalf("line from g%d i%d out of order (want i%d)", g, i, next[g])
		}
		if l != mk(g, i) {
			t.Fatalf("line g%d i%d is damaged", g, i)
		}
		next[g]++
	}
	for g, n := range next {
		if n != perG {
			t.Errorf("goroutine %d: %d lines, want %d", g, n, perG)
		}
	}
	// Only Stream may split a line over Write calls, and then only a
	// line that is longer than flushSize; WriteLine and Flush write whole
	// lines. Check that no Write call begins inside a short line.
	for i, p := range rec.writes {
		if i > 0 && !bytes.HasSuffix(rec.writes[i-1], []byte("\n")) {
			continue // continues a streamed line
		}
		if !bytes.HasPrefix(p, []byte("g")) {
			t.Fatalf("write %d does not start a line: %.20q", i, p)
		}
	}
}

func TestWriteLineReusesBuffer(t *testing.T) {
	w := NewWriter(io.Discard)
	line := []byte(pat(mi, 1))
	w.WriteLine(line)
	allocs := testing.AllocsPerRun(50, func() {
		if err := w.WriteLine(line); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("WriteLine allocates %v times per line", allocs)
	}
}

// TestWriteLongLine: a line over 4 MiB is written as it is, not copied
// into the Writer's buffer, after the pending lines and before its '\n'.
func TestWriteLongLine(t *testing.T) {
	big := patBytes(keepSize+1, 4)
	for _, appendIt := range []bool{false, true} {
		var rec recorder
		w := NewWriter(&rec)
		w.AppendLine([]byte("pending"))
		before := heapAlloc()
		var err error
		if appendIt {
			err = w.AppendLine(big)
		} else {
			err = w.WriteLine(big)
		}
		grew := heapAlloc() - before
		if err != nil {
			t.Fatal(err)
		}
		if got := rec.String(); got != "pending\n"+string(big)+"\n" {
			t.Fatalf("wrote %d bytes, want the pending line, the long line and its newline", len(got))
		}
		// The recorder clones each write (about 4 MiB); the Writer adds
		// no copy of its own.
		if grew > uint64(len(big))+64*ki {
			t.Errorf("writing a %d-byte line allocated %d bytes", len(big), grew)
		}
		if err := w.WriteLine([]byte("next")); err != nil || !strings.HasSuffix(rec.String(), "\nnext\n") {
			t.Fatalf("the next line: %v", err)
		}
	}
	// A failed write of the long line breaks the Writer without a '\n'.
	rec := recorder{failAt: 1}
	w := NewWriter(&rec)
	if err := w.WriteLine(big); err == nil {
		t.Fatal("a failed write was not reported")
	}
	if len(rec.writes) != 1 || w.WriteLine([]byte("x")) == nil {
		t.Fatal("the Writer went on after a failed long write")
	}
}
