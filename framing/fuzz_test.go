package framing

import (
	"io"
	"slices"
	"testing"
)

// chunkReader returns at most n bytes per Read, so a fuzzer controls where
// reads split the input.
type chunkReader struct {
	data []byte
	n    int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.data)
	c.data = c.data[k:]
	return k, nil
}

// fuzzSeeds are inputs around the edges: terminators, "\r" placement,
// blank lines, and lines near the small limits and buffers the fuzzers use.
var fuzzSeeds = []string{
	"",
	"\n",
	"\r\n",
	"\r",
	"a",
	"a\nb\n",
	"a\r\nb\r\n\r\n\n",
	"a\rb\r\r\n\r",
	"0123456789abcdef\n0123456789abcdefg\r\nx",
	"0123456789abcdef\r\r\n",
	"0123456789abcdef0123456789abcdef0123456789\n\nshort\n",
	"\n\n\n0123456789abcdef0123456789abcdef0123456789",
	"{\"type\":\"assistant\"}\n{\"type\":\"result\"}",
}

// FuzzReader reads arbitrary input with small limits and buffers and
// checks ReadLine against a model: every line comes back whole and
// without '\n', every over-long line is reported with its size, and
// together they are exactly the input's non-blank lines.
func FuzzReader(f *testing.F) {
	for i, s := range fuzzSeeds {
		f.Add([]byte(s), uint8(i*5), uint8(i*3), uint8(i))
	}
	f.Fuzz(func(t *testing.T, data []byte, maxLine, size, chunk uint8) {
		limit := int(maxLine%40) + 1
		bufSize := int(size%32) + 4
		r := newReaderSize(&chunkReader{data: data, n: int(chunk%17) + 1}, limit, bufSize)
		// Lines over keep bytes are collected in chunks (readLong).
		r.keep = bufSize << (size / 32 % 4)
		got, heads, err := readLinesHeads(t, r, int64(limit))
		if err != io.EOF {
			t.Fatalf("final error = %v, want io.EOF", err)
		}
		if want := modelHeads(data, limit); !slices.Equal(heads, want) {
			t.Fatalf("heads %q, want %q", heads, want)
		}
		for _, it := range got {
			if len(it.line) > limit {
				t.Fatalf("line of %d bytes with limit %d", len(it.line), limit)
			}
		}
		diffItems(t, got, modelLines(data, limit))
	})
}

// FuzzSegments reads arbitrary input with ReadSegment and small buffers
// and checks that the pieces are well formed and reassemble to what
// ReadLine (with no effective limit) returns.
func FuzzSegments(f *testing.F) {
	for i, s := range fuzzSeeds {
		f.Add([]byte(s), uint8(i*3), uint8(i))
	}
	f.Fuzz(func(t *testing.T, data []byte, size, chunk uint8) {
		bufSize := int(size%32) + 4
		n := int(chunk%17) + 1
		segs, err := readSegments(t, newReaderSize(&chunkReader{data: data, n: n}, 0, bufSize), bufSize)
		if err != io.EOF {
			t.Fatalf("ReadSegment error = %v, want io.EOF", err)
		}
		lr := newReaderSize(&chunkReader{data: data, n: n}, 0, bufSize)
		lr.keep = bufSize << (size / 32 % 4) // longer lines go through readLong
		lines, err := readLines(t, lr, DefaultMaxLine)
		if err != io.EOF {
			t.Fatalf("ReadLine error = %v, want io.EOF", err)
		}
		got := make([]item, len(segs))
		for i, s := range segs {
			got[i] = line(string(s.data))
			if len(s.data)+2 <= bufSize && len(s.pieces) != 1 {
				t.Fatalf("line of %d bytes came in pieces %v with a %d-byte buffer", len(s.data), s.pieces, bufSize)
			}
		}
		diffItems(t, got, lines)

		// Mixing at line boundaries: alternate ReadLine and ReadSegment.
		r := newReaderSize(&chunkReader{data: data, n: n}, 0, bufSize)
		r.keep = bufSize << (chunk / 17 % 4)
		var mixed []item
		for i := 0; ; i++ {
			var b []byte
			var err error
			if i%2 == 0 {
				b, err = r.ReadLine()
			} else {
				b, err = readSegmentedLine(r)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			mixed = append(mixed, line(string(b)))
		}
		diffItems(t, mixed, lines)
	})
}

// readSegmentedLine reads one whole line with ReadSegment.
func readSegmentedLine(r *Reader) ([]byte, error) {
	var acc []byte
	for {
		seg, _, last, err := r.ReadSegment()
		if err != nil {
			return nil, err
		}
		acc = append(acc, seg...)
		if last {
			return acc, nil
		}
	}
}
