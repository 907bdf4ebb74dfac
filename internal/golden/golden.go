// Package golden is what the golden tests of the mapping packages share:
// reading the recorded transcripts (testdata/transcripts) and comparing a
// test's output with its golden file. It is meant for tests only.
package golden

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Transcripts returns the paths of the transcripts (*.ndjson) in dir; it
// fails t when there are none.
func Transcripts(t testing.TB, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.ndjson"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts in %s: %v", dir, err)
	}
	return files
}

// ReadTranscript returns the lines of a transcript with their direction:
// out is true for "<< " (CLI → host) lines, false for ">> " (host → CLI)
// lines. Other lines (comments) are left out.
func ReadTranscript(t testing.TB, path string) (lines [][]byte, out []bool) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		l := sc.Bytes()
		switch {
		case bytes.HasPrefix(l, []byte("<< ")):
			lines, out = append(lines, bytes.Clone(l[3:])), append(out, true)
		case bytes.HasPrefix(l, []byte(">> ")):
			lines, out = append(lines, bytes.Clone(l[3:])), append(out, false)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines, out
}

// Join returns the lines, each followed by '\n'.
func Join(lines [][]byte) []byte {
	var buf bytes.Buffer
	for _, l := range lines {
		buf.Write(l)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

// Compare fails t unless got is the content of the golden file path, and
// names the first line that differs. With update it writes got to path
// instead, creating its folder.
func Compare(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestGolden -update in its package to create it)", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			t.Fatalf("%s line %d differs (run with -update after checking):\n got: %.600s\nwant: %.600s", path, i+1, gl, wl)
		}
	}
}
