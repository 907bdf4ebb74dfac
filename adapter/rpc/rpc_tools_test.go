package rpc

import (
	"bytes"
	"os"
	"testing"
	"time"
)

// TestHeadTailBufSpill: output longer than head and tail is written whole
// to the spill file, up to shellCacheMax; output that fits makes no file.
func TestHeadTailBufSpill(t *testing.T) {
	var c outputCache
	defer c.close()
	small := headTailBuf{spill: c.spiller()}
	small.Write(bytes.Repeat([]byte("s"), 2*shellKeep))
	if o := small.spilled("stdout"); o.path != "" {
		t.Errorf("output that fits was spilled: %+v", o)
	}
	var want bytes.Buffer
	big := headTailBuf{spill: c.spiller()}
	for i := 0; want.Len() < 5*shellKeep; i++ {
		chunk := bytes.Repeat([]byte{byte('a' + i%26)}, 1000+i)
		big.Write(chunk)
		want.Write(chunk)
	}
	o := big.spilled("stdout")
	got, err := os.ReadFile(o.path)
	if err != nil || !bytes.Equal(got, want.Bytes()) || !o.complete || o.kept != int64(want.Len()) {
		t.Fatalf("spilled %d bytes (complete %v, %v), want the %d written", len(got), o.complete, err, want.Len())
	}
	huge := headTailBuf{spill: c.spiller()}
	chunk := bytes.Repeat([]byte("h"), 1<<20)
	for range 17 {
		huge.Write(chunk)
	}
	if o := huge.spilled("stderr"); o.kept != shellCacheMax || o.complete {
		t.Errorf("17 MiB of output: kept %d, complete %v", o.kept, o.complete)
	}
}

// TestOutputCache: ids per stream, reads from an offset, the oldest
// dropped past shellCacheEntries (its file removed), and expiry.
func TestOutputCache(t *testing.T) {
	var c outputCache
	defer c.close()
	now := time.Unix(1e9, 0)
	file := func(content string) spilledOutput {
		f, err := c.spiller()()
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(content)
		f.Close()
		return spilledOutput{path: f.Name(), stream: "stdout", kept: int64(len(content)), complete: true}
	}
	first := file("0123456789")
	out, errID := c.add([2]spilledOutput{first, {}}, now)
	if out == "" || errID != "" {
		t.Fatalf("ids %q %q", out, errID)
	}
	e := c.get(out, now)
	r, err := readOutput(*e, out, 3, 4)
	if err != nil || string(r.Content) != "3456" || r.EOF || r.Total != 10 {
		t.Errorf("read at 3, 4 bytes: %+v %v", r, err)
	}
	if r, _ := readOutput(*e, out, 0, 0); string(r.Content) != "0123456789" || !r.EOF {
		t.Errorf("whole read: %+v", r)
	}
	for range shellCacheEntries {
		c.add([2]spilledOutput{file("x"), {}}, now)
	}
	if c.get(out, now) != nil {
		t.Error("the oldest output is still kept past the limit")
	}
	if _, err := os.Stat(first.path); !os.IsNotExist(err) {
		t.Errorf("the dropped output's file is still there: %v", err)
	}
	last := c.order[len(c.order)-1]
	if c.get(last, now.Add(shellCacheTTL-time.Second)) == nil || c.get(last, now.Add(shellCacheTTL)) != nil {
		t.Error("outputs do not expire after shellCacheTTL")
	}
}
