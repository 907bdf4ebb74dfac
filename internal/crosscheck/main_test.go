package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCheck: code that builds on Linux only fails the check for darwin
// and windows, in a package's files and in its tests, and passes it for
// Linux; each error is reported once although a package is checked twice
// (as itself and as its test variant).
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/m\n\ngo 1.26\n")
	write("a.go", "package a\n\nimport \"syscall\"\n\n// Linux has PR_SET_PDEATHSIG's prctl; darwin and windows do not.\nvar Prctl = syscall.SYS_PRCTL\n")
	write("a_linux.go", "package a\n\nvar OnlyHere = 1\n")
	write("a_test.go", "package a\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) { _ = OnlyHere }\n")

	for _, tc := range []struct {
		target string
		want   []string
	}{
		{"linux/amd64", nil},
		{"darwin/amd64", []string{"a.go:6:21: undefined: syscall.SYS_PRCTL", "a_test.go:5:32: undefined: OnlyHere"}},
		{"windows/arm64", []string{"a.go:6:21: undefined: syscall.SYS_PRCTL", "a_test.go:5:32: undefined: OnlyHere"}},
	} {
		goos, goarch, _ := strings.Cut(tc.target, "/")
		n, errs, err := check(goos, goarch, dir, []string{"./..."})
		if err != nil {
			t.Fatalf("%s: %v", tc.target, err)
		}
		var got []string
		for _, e := range errs {
			got = append(got, strings.TrimPrefix(e, dir+string(filepath.Separator)))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: errors %q, want %q", tc.target, got, tc.want)
		}
		if n != 2 { // a, and a with its test
			t.Errorf("%s: %d of the module's packages checked, want 2", tc.target, n)
		}
	}
}
