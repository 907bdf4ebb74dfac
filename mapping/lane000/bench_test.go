package lane000

import (
	"strings"
	"testing"
)

func BenchmarkDecode(b *testing.B) {
	big := set(b, baseStdin, "content", `"`+strings.Repeat(`line of text \"quoted\"\n`, 64<<10/24)+`"`)
	for _, c := range []struct{ name, line string }{
		{"stdin", baseStdin},
		{"interrupt", baseInterrupt},
		{"content_ref", withRef(b, baseRef)},
		{"stdin_64KiB", big},
	} {
		line := []byte(c.line)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				if _, p := Decode(line); p != nil {
					b.Fatal(p)
				}
			}
		})
	}
}

func BenchmarkAppendAck(b *testing.B) {
	r, p := Decode([]byte(baseStdin))
	if p != nil {
		b.Fatal(p)
	}
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendAck(buf[:0], &r, OK, "queued", false, t0)
	}
}
