package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCheck: code that builds on Linux only (a name a _linux.go file
// defines) fails the check for darwin and windows, in a package's files
// and in its tests, and passes it for Linux; each error is reported once although a package is checked twice
// (as itself and as its test variant).
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/m\n\ngo 1.26\n")
	// Names only Linux has: in the package, and in its tests. No imports,
	// so that nothing of the standard library is checked (the test is
	// quick under -race).
	write("a.go", "package a\n\n// Linux has OnlyHere; darwin and windows do not.\nvar X = OnlyHere\n")
	write("a_linux.go", "package a\n\nvar OnlyHere = 1\n")
	write("b_linux_test.go", "package a\n\nvar OnlyInTests = 2\n")
	write("a_test.go", "package a\n\nvar _ = OnlyInTests\n")

	for _, tc := range []struct {
		target string
		want   []string
	}{
		{"linux/amd64", nil},
		{"darwin/amd64", []string{"a.go:4:9: undefined: OnlyHere", "a_test.go:3:9: undefined: OnlyInTests"}},
		{"windows/arm64", []string{"a.go:4:9: undefined: OnlyHere", "a_test.go:3:9: undefined: OnlyInTests"}},
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
