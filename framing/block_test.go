package framing

import (
	"bytes"
	"errors"
	"io"
	"math/rand"
	"strings"
	"testing"
	"testing/iotest"
)

// readAllBlocks reads input with ReadBlock, falling back to ReadSegment for
// long lines, and returns what a relay would write: blocks as they are,
// long lines' pieces followed by '\n'.
func readAllBlocks(t *testing.T, r *Reader) []byte {
	t.Helper()
	var out bytes.Buffer
	for {
		b, err := r.ReadBlock()
		if errors.Is(err, io.EOF) {
			return out.Bytes()
		}
		if err != nil {
			t.Fatal(err)
		}
		if b != nil {
			out.Write(b)
			if b[len(b)-1] != '\n' {
				out.WriteByte('\n')
			}
			continue
		}
		for {
			seg, _, last, err := r.ReadSegment()
			if err != nil {
				t.Fatal(err)
			}
			out.Write(seg)
			if last {
				out.WriteByte('\n')
				break
			}
		}
	}
}

func TestReadBlockPassesBytesThrough(t *testing.T) {
	cases := []string{
		"",
		"a\n",
		"a\nb\n\n\nc\n",
		"a\r\nb\r\n",
		"no newline at the end",
		"x\nlast without newline",
		strings.Repeat("y", 70000) + "\nshort\n",
		"short\n" + strings.Repeat("z", 200000) + "\nshort\n",
	}
	rng := rand.New(rand.NewSource(1))
	for range 20 {
		var b strings.Builder
		for range rng.Intn(50) {
			b.WriteString(strings.Repeat("q", rng.Intn(3000)))
			b.WriteByte('\n')
		}
		cases = append(cases, b.String())
	}
	for _, in := range cases {
		for _, rd := range []io.Reader{strings.NewReader(in), iotest.OneByteReader(strings.NewReader(in)), iotest.HalfReader(strings.NewReader(in))} {
			got := readAllBlocks(t, newReaderSize(rd, 0, 4096))
			want := in
			if want != "" && !strings.HasSuffix(want, "\n") {
				want += "\n"
			}
			// Long lines lose a "\r" before their '\n' through
			// ReadSegment; none of these inputs has one.
			if string(got) != want {
				t.Fatalf("input of %d bytes came out as %d bytes", len(in), len(got))
			}
		}
	}
}

func TestReadBlockWholeLinesOnly(t *testing.T) {
	r := newReaderSize(iotest.HalfReader(strings.NewReader("one\ntwo\nthr")), 0, 64)
	for {
		b, err := r.ReadBlock()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasSuffix(b, []byte("\n")) {
			t.Fatalf("a block before the end is not whole lines: %q", b)
		}
		if bytes.HasSuffix(b, []byte("two\n")) {
			break
		}
	}
	if b, err := r.ReadBlock(); string(b) != "thr" || err != nil {
		t.Fatalf("final unterminated line: %q, %v", b, err)
	}
	if _, err := r.ReadBlock(); !errors.Is(err, io.EOF) {
		t.Fatalf("want io.EOF, got %v", err)
	}
}

func TestWriteBlock(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	if err := w.AppendLine([]byte("pending")); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteBlock([]byte("a\nb\n")); err != nil {
		t.Fatal(err)
	}
	if out.String() != "pending\na\nb\n" {
		t.Fatalf("got %q", out.String())
	}
	if err := w.WriteBlock([]byte("no newline")); err == nil {
		t.Fatal("a block without a final newline was accepted")
	}
	big := bytes.Repeat([]byte("x\n"), 40000)
	w.AppendLine([]byte("p2"))
	if err := w.WriteBlock(big); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out.String(), "p2\n"+string(big)) {
		t.Fatal("pending line not written before a large block")
	}
	fw := NewWriter(failWriter{})
	if err := fw.WriteBlock([]byte("a\n")); err == nil {
		t.Fatal("a failed write was not reported")
	}
	if err := fw.WriteLine([]byte("b")); err == nil {
		t.Fatal("the writer is not broken after a failed WriteBlock")
	}
}

func BenchmarkRelayBlocks(b *testing.B) {
	line := []byte(`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hello world"}},"session_id":"5c3bb572-859f-4ecf-9616-2b9d21f1b011","parent_tool_use_id":null}` + "\n")
	data := bytes.Repeat(line, 4096)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	w := NewWriter(io.Discard)
	for b.Loop() {
		r := NewReader(bytes.NewReader(data), 0)
		for {
			blk, err := r.ReadBlock()
			if err != nil {
				break
			}
			w.WriteBlock(blk)
		}
	}
}

type failWriter struct{}

func (failWriter) Write(p []byte) (int, error) { return 0, errors.New("gone") }

// TestSwapBuffer: blocks returned before a swap stay intact while the
// Reader reads on into the buffers it is given, and the bytes pending at
// the swap are not lost.
func TestSwapBuffer(t *testing.T) {
	var in strings.Builder
	rng := rand.New(rand.NewSource(2))
	for i := range 400 {
		in.WriteString(strings.Repeat(string(rune('a'+i%26)), rng.Intn(40)))
		in.WriteByte('\n')
	}
	for _, rd := range []io.Reader{strings.NewReader(in.String()), iotest.HalfReader(strings.NewReader(in.String()))} {
		r := newReaderSize(rd, 0, 64)
		var held [][]byte // every block, never copied
		var spare [][]byte
		for {
			b, err := r.ReadBlock()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil || b == nil {
				t.Fatalf("ReadBlock: %q, %v", b, err)
			}
			held = append(held, b)
			next := make([]byte, 0, 64)
			if len(spare) > 0 && rng.Intn(2) == 0 {
				// A buffer given back earlier, whose blocks are done.
				next, spare = spare[0], spare[1:]
			}
			old := r.SwapBuffer(next)
			if old == nil {
				t.Fatal("SwapBuffer refused a buffer of the right size")
			}
			if rng.Intn(4) == 0 {
				spare = append(spare, old) // its blocks are ours, keep them
				held = held[:0:0]
			}
		}
		var got bytes.Buffer
		for _, b := range held {
			got.Write(b)
		}
		if !strings.HasSuffix(in.String(), got.String()) {
			t.Fatalf("held blocks were overwritten:\n%q", got.String())
		}
	}

	r := newReaderSize(strings.NewReader(strings.Repeat("x", 200)+"\n"), 0, 64)
	if r.SwapBuffer(make([]byte, 32)) != nil {
		t.Error("SwapBuffer took a buffer smaller than the Reader's")
	}
	if _, _, last, err := r.ReadSegment(); err != nil || last {
		t.Fatalf("ReadSegment: last %v, %v", last, err)
	}
	if r.SwapBuffer(make([]byte, 64)) != nil {
		t.Error("SwapBuffer in the middle of a ReadSegment line")
	}
}
