package control

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func saveRun(t *testing.T, path string, st RunState) {
	t.Helper()
	if err := SaveRun(path, st); err != nil {
		t.Fatal(err)
	}
}

func loadRun(t *testing.T, path, runID string) RunState {
	t.Helper()
	st, err := LoadRun(path, runID)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func wantRunState(t *testing.T, got, want RunState) {
	t.Helper()
	if got.RunID != want.RunID || got.Paused != want.Paused || got.Iter != want.Iter || got.Model != want.Model ||
		got.EscalationReason != want.EscalationReason || !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Fatalf("state\n got %+v\nwant %+v", got, want)
	}
}

func TestRunStateRoundTrip(t *testing.T) {
	for i, st := range []RunState{
		{RunID: "loop-1", Paused: true, Iter: 7, Model: "opus", EscalationReason: "stuck", UpdatedAt: t0.Add(1500 * time.Millisecond)},
		{RunID: "loop-2", Iter: 0, UpdatedAt: t0},
		{RunID: `a "quoted"/id with ../ and ünïcode`, Paused: true, Iter: 1},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			path := RunFile(t.TempDir(), st.RunID)
			saveRun(t, path, st)
			wantRunState(t, loadRun(t, path, st.RunID), st)
		})
	}
}

func TestLoadRunMissing(t *testing.T) {
	dir := t.TempDir()
	for _, path := range []string{
		RunFile(dir, "loop-1"),                     // no runs folder at all
		filepath.Join(dir, "nothing", "here.json"), // nor its folder
	} {
		st, err := LoadRun(path, "loop-1")
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		wantRunState(t, st, RunState{RunID: "loop-1"})
	}
}

// TestLoadRunOtherID: a file that holds another run (a hash collision)
// counts as missing.
func TestLoadRunOtherID(t *testing.T) {
	path := RunFile(t.TempDir(), "loop-b")
	saveRun(t, path, RunState{RunID: "loop-a", Paused: true, Iter: 9, Model: "opus", UpdatedAt: t0})
	wantRunState(t, loadRun(t, path, "loop-b"), RunState{RunID: "loop-b"})
}

func TestLoadRunCorrupt(t *testing.T) {
	for _, data := range []string{"", "{", "not json", `["run_id"]`, `{"run_id":"loop-1","iter":"seven"}`} {
		path := RunFile(t.TempDir(), "loop-1")
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		st, err := LoadRun(path, "loop-1")
		if err == nil {
			t.Fatalf("%q: no error (state %+v)", data, st)
		}
		if !strings.Contains(err.Error(), path) {
			t.Errorf("%q: the error does not name the file: %v", data, err)
		}
		if st.Paused || st.RunID != "loop-1" {
			t.Errorf("%q: state %+v with the error", data, st)
		}
	}
}

func TestSaveRunModes(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no unix modes")
	}
	dir := t.TempDir()
	path := RunFile(dir, "loop-1")
	saveRun(t, path, RunState{RunID: "loop-1", Paused: true})
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || !fi.Mode().IsRegular() {
		t.Errorf("file mode %v, want 0600", fi.Mode())
	}
	di, err := os.Stat(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if di.Mode().Perm() != 0o700 || !di.IsDir() {
		t.Errorf("folder mode %v, want 0700", di.Mode())
	}
}

func TestRunFile(t *testing.T) {
	dir := t.TempDir()
	ids := []string{"loop-1", "loop-2", "Loop-1", "", "../../etc/passwd", "a/b", strings.Repeat("x", 4096)}
	for i := range 2000 { // more ids than a short hash has names
		ids = append(ids, fmt.Sprint("run-", i))
	}
	seen := map[string]string{}
	for _, id := range ids {
		p := RunFile(dir, id)
		if again := RunFile(dir, id); again != p {
			t.Errorf("RunFile(%q) not stable: %s, then %s", id, p, again)
		}
		if filepath.Dir(p) != filepath.Join(dir, "runs") || !strings.HasSuffix(p, ".json") {
			t.Errorf("RunFile(%q) = %s, want a .json file directly in %s", id, p, filepath.Join(dir, "runs"))
		}
		if len(filepath.Base(p)) > 64 {
			t.Errorf("RunFile(%q): name of %d bytes", id, len(filepath.Base(p)))
		}
		if other, dup := seen[p]; dup {
			t.Errorf("RunFile(%q) = RunFile(%q) = %s", id, other, p)
		}
		seen[p] = id
	}
}

// TestSaveRunReplaces: saving over a state replaces it, and the folder
// holds the one file afterwards (no temporary file left).
func TestSaveRunReplaces(t *testing.T) {
	dir := t.TempDir()
	path := RunFile(dir, "loop-1")
	saveRun(t, path, RunState{RunID: "loop-1", Paused: true, Iter: 3, Model: "opus", EscalationReason: "long reason " + strings.Repeat("x", 200), UpdatedAt: t0})
	second := RunState{RunID: "loop-1", Iter: 4, UpdatedAt: t0.Add(time.Minute)}
	saveRun(t, path, second)
	wantRunState(t, loadRun(t, path, "loop-1"), second)
	ents, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != filepath.Base(path) {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("folder holds %q, want only %s", names, filepath.Base(path))
	}
}

// TestSaveRunFailureLeavesNoTemp: a rename that fails (a folder is in the
// file's place) reports an error and removes its temporary file.
func TestSaveRunFailureLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	path := RunFile(dir, "loop-1")
	if err := os.MkdirAll(filepath.Join(path, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := SaveRun(path, RunState{RunID: "loop-1"}); err == nil {
		t.Fatal("SaveRun over a non-empty folder succeeded")
	}
	ents, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != filepath.Base(path) {
		t.Fatalf("folder holds %v after a failed save", ents)
	}
}
