package framing_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ccbridge/ccbridge/framing"
)

// A forwarder copies lines from one stream to another. It coalesces the
// writes while more input is already buffered and flushes as soon as the
// input is drained, and it reports an over-long line and goes on.
func Example() {
	in := strings.NewReader("{\"type\":\"system\"}\r\n" +
		"\n" +
		"{\"type\":\"assistant\",\"text\":\"" + strings.Repeat("x", 100) + "\"}\n" +
		"{\"type\":\"result\"}")
	r := framing.NewReader(in, 64)
	w := framing.NewWriter(os.Stdout)
	for {
		line, err := r.ReadLine()
		if errors.Is(err, framing.ErrLineTooLong) {
			// Written through w, so it keeps its place among the lines.
			w.AppendLine([]byte("# skipped: " + err.Error()))
			continue
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println("read:", err)
			return
		}
		// line is only valid until the next ReadLine; AppendLine copies it.
		if err := w.AppendLine(line); err != nil {
			fmt.Println("write:", err)
			return
		}
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				fmt.Println("write:", err)
				return
			}
		}
	}
	// Output:
	// {"type":"system"}
	// # skipped: framing: line too long: 130 bytes, limit 64
	// {"type":"result"}
}
