package session

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestPrivateDir(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	var d PrivateDir
	if d.Path() != "" {
		t.Fatal("the folder exists before the first file")
	}
	if err := d.Remove(); err != nil {
		t.Fatalf("Remove before any file: %v", err)
	}
	d = PrivateDir{}
	a, err := d.WriteFile("mcp-*.json", []byte(`{"secret":"a"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.WriteFile("mcp-*.json", []byte(`{"secret":"b"}`))
	if err != nil {
		t.Fatal(err)
	}
	dir := d.Path()
	if !filepath.IsAbs(a) || filepath.Dir(a) != dir || filepath.Dir(b) != dir || a == b {
		t.Fatalf("files %s and %s, folder %s", a, b, dir)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 || !fi.IsDir() {
		t.Errorf("folder: %v, %v", fi.Mode(), err)
	}
	for _, f := range []string{a, b} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, %v", f, fi.Mode(), err)
		}
	}
	if data, _ := os.ReadFile(b); string(data) != `{"secret":"b"}` {
		t.Errorf("content %q", data)
	}
	if err := d.RemoveFile(a); err != nil {
		t.Fatal(err)
	}
	if err := d.RemoveFile(a); err != nil {
		t.Errorf("removing a missing file: %v", err)
	}
	if _, err := os.Stat(a); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still there: %v", a, err)
	}
	if err := d.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("folder still there: %v", err)
	}
	if err := d.Remove(); err != nil {
		t.Errorf("second Remove: %v", err)
	}
	if _, err := d.WriteFile("x-*", nil); !errors.Is(err, ErrRemoved) {
		t.Errorf("WriteFile after Remove: %v", err)
	}
}
