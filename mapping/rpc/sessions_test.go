package rpc

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func readSample(t testing.TB) [][]byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(goldenDir, "session_sample.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Split(bytes.TrimSpace(data), []byte("\n"))
}

// TestHistoryGolden replays the sample session file (a real CLI 2.1.330
// session: text, Write, AskUserQuestion, a failing Read, a subagent, an
// interrupted stream, /compact, an API error) into
// testdata/rpc/history_sample.golden.
func TestHistoryGolden(t *testing.T) {
	h := History{SessionID: "fac00dbd-8d5c-44e7-91b4-67f2354b4ac3", MaxRuns: DefaultHistoryRuns}
	for _, l := range readSample(t) {
		h.Line(l)
	}
	lines, runs, truncated := h.Result(DefaultHistoryEvents)
	if runs != 8 || truncated {
		t.Errorf("runs %d truncated %v", runs, truncated)
	}
	var buf bytes.Buffer
	for _, l := range lines {
		checkLine(t, l)
		buf.Write(l)
		buf.WriteByte('\n')
	}
	golden := filepath.Join(goldenDir, "history_sample.golden")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("%s differs; run with -update after checking", golden)
	}
}

func TestHistoryLimits(t *testing.T) {
	sample := readSample(t)
	h := History{SessionID: "s", MaxRuns: 2}
	for _, l := range sample {
		h.Line(l)
	}
	lines, runs, truncated := h.Result(1000)
	if runs != 2 || !truncated || !bytes.Contains(lines[0], []byte(`"run_id":"s:7"`)) {
		t.Errorf("max_runs 2: runs %d truncated %v first %s", runs, truncated, lines[0])
	}
	h = History{SessionID: "s", MaxRuns: 20}
	for _, l := range sample {
		h.Line(l)
	}
	if lines, _, truncated := h.Result(3); len(lines) != 3 || !truncated {
		t.Errorf("max_events 3: %d lines, truncated %v", len(lines), truncated)
	}
	h = History{SessionID: "s", MaxRuns: 0}
	for _, l := range sample {
		h.Line(l)
	}
	if lines, runs, _ := h.Result(10); len(lines) != 0 || runs != 0 {
		t.Errorf("max_runs 0: %d lines", len(lines))
	}
	var empty History
	empty.Line([]byte("garbage"))
	if empty.Valid() != 0 {
		t.Error("garbage counted as JSON")
	}
}
