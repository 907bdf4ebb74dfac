package framing

import (
	"bufio"
	"bytes"
	"io"
	"testing"
)

var benchSizes = []struct {
	name string
	n    int
}{
	{"200B", 200},
	{"4KiB", 4 * ki},
	{"1MiB", mi},
}

// benchInput is at least 2 MiB of whole lines of n bytes each, which a
// loopReader repeats forever, 64 KiB per Read as from a pipe.
func benchInput(n int) []byte {
	l := append(patBytes(n, 1), '\n')
	return bytes.Repeat(l, max(2, 2*mi/len(l)))
}

func BenchmarkReadLine(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			r := NewReader(&loopReader{data: benchInput(s.n), chunk: 64 * ki}, 0)
			for range 3 { // let the buffer grow before measuring
				r.ReadLine()
			}
			b.SetBytes(int64(s.n + 1))
			b.ReportAllocs()
			for b.Loop() {
				if l, err := r.ReadLine(); err != nil || len(l) != s.n {
					b.Fatalf("ReadLine = %d bytes, %v", len(l), err)
				}
			}
		})
	}
}

// BenchmarkScanner is bufio.Scanner on the same input, for comparison.
func BenchmarkScanner(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			sc := bufio.NewScanner(&loopReader{data: benchInput(s.n), chunk: 64 * ki})
			sc.Buffer(make([]byte, 64*ki), DefaultMaxLine)
			for range 3 {
				sc.Scan()
			}
			b.SetBytes(int64(s.n + 1))
			b.ReportAllocs()
			for b.Loop() {
				if !sc.Scan() || len(sc.Bytes()) != s.n {
					b.Fatalf("Scan = %d bytes, %v", len(sc.Bytes()), sc.Err())
				}
			}
		})
	}
}

func BenchmarkReadSegment1MiB(b *testing.B) {
	r := NewReader(&loopReader{data: benchInput(mi), chunk: 64 * ki}, 0)
	b.SetBytes(mi + 1)
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for {
			seg, _, last, err := r.ReadSegment()
			if err != nil {
				b.Fatal(err)
			}
			n += len(seg)
			if last {
				break
			}
		}
		if n != mi {
			b.Fatalf("line of %d bytes", n)
		}
	}
}

func BenchmarkWriteLine(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			w := NewWriter(io.Discard)
			line := patBytes(s.n, 1)
			w.WriteLine(line) // let the buffer grow before measuring
			b.SetBytes(int64(s.n + 1))
			b.ReportAllocs()
			for b.Loop() {
				if err := w.WriteLine(line); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkWriteLineParallel(b *testing.B) {
	w := NewWriter(io.Discard)
	line := patBytes(200, 1)
	b.SetBytes(201)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := w.WriteLine(line); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkAppendLine200B(b *testing.B) {
	w := NewWriter(io.Discard)
	line := patBytes(200, 1)
	b.SetBytes(201)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := w.AppendLine(line); err != nil {
			b.Fatal(err)
		}
		if i%16 == 15 {
			w.Flush()
		}
	}
}

// BenchmarkForward is the forwarding loop: ReadLine into AppendLine,
// flushing when the input is drained.
func BenchmarkForward(b *testing.B) {
	for _, s := range benchSizes[:2] {
		b.Run(s.name, func(b *testing.B) {
			r := NewReader(&loopReader{data: benchInput(s.n), chunk: 64 * ki}, 0)
			w := NewWriter(io.Discard)
			b.SetBytes(int64(s.n + 1))
			b.ReportAllocs()
			for b.Loop() {
				l, err := r.ReadLine()
				if err != nil {
					b.Fatal(err)
				}
				w.AppendLine(l)
				if r.Buffered() == 0 {
					w.Flush()
				}
			}
		})
	}
}
