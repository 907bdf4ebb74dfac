package main

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCheckVersion(t *testing.T) {
	for _, v := range []string{"v1.2.3", "1.2.3", "v1.2.3-rc.1", "408ee76", "408ee76-dirty", "v1.2.3-4-g408ee76-dirty", "v1.0.0+build.5"} {
		if err := checkVersion(v); err != nil {
			t.Errorf("checkVersion(%q) = %v", v, err)
		}
	}
	for _, v := range []string{"", "v1 2", "a/b", "-v1", ".v1", "v1\"", "v1;rm", "v1\n", strings.Repeat("1", 129)} {
		var in *InputError
		if err := checkVersion(v); !errors.As(err, &in) {
			t.Errorf("checkVersion(%q) = %v, want an InputError", v, err)
		}
	}
}

func TestNPMVersion(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"v1.2.3", "1.2.3"},
		{"1.2.3", "1.2.3"},
		{"v1.2.3-rc.1", "1.2.3-rc.1"},
		{"v1.0.0+build.5", "1.0.0+build.5"},
		{"v1.2.3-4-g408ee76", "1.2.3-4-g408ee76"},
		{"408ee76", "0.0.0-dev.408ee76"},
		{"408ee76-dirty", "0.0.0-dev.408ee76-dirty"},
		{"0123456", "0.0.0-dev.g0123456"},
		{"v01.2.3", "0.0.0-dev.v01.2.3"},
		{"dev", "0.0.0-dev.dev"},
		{"v1.2", "0.0.0-dev.v1.2"},
		{"a_b+c", "0.0.0-dev.a.b.c"},
	} {
		got := npmVersion(tc.in)
		if got != tc.want {
			t.Errorf("npmVersion(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if !semverRE.MatchString(got) {
			t.Errorf("npmVersion(%q) = %q is not semver", tc.in, got)
		}
	}
}

func TestParseTargets(t *testing.T) {
	all, err := parseTargets("")
	if err != nil || !slices.Equal(all, allTargets) || len(all) != 6 {
		t.Errorf("parseTargets(\"\") = %v, %v", all, err)
	}
	got, err := parseTargets("linux/amd64, darwin/arm64 linux/amd64")
	if want := []target{{"darwin", "arm64"}, {"linux", "amd64"}}; err != nil || !slices.Equal(got, want) {
		t.Errorf("parseTargets = %v, %v; want %v", got, err, want)
	}
	for _, s := range []string{"linux/386", "linux", "freebsd/amd64", "linux/amd64/x"} {
		var in *InputError
		if _, err := parseTargets(s); !errors.As(err, &in) {
			t.Errorf("parseTargets(%q) = %v, want an InputError", s, err)
		}
	}
}

func TestTargetNames(t *testing.T) {
	var names []string
	for _, tg := range allTargets {
		names = append(names, tg.archive("v1.2.3")+" "+tg.npmPackage()+" "+tg.registryPlatform()+" "+tg.exe())
	}
	want := []string{
		"ccbridge_v1.2.3_darwin_amd64.tar.gz @ccbridge/darwin-x64 darwin-x86_64 ccbridge",
		"ccbridge_v1.2.3_darwin_arm64.tar.gz @ccbridge/darwin-arm64 darwin-aarch64 ccbridge",
		"ccbridge_v1.2.3_linux_amd64.tar.gz @ccbridge/linux-x64 linux-x86_64 ccbridge",
		"ccbridge_v1.2.3_linux_arm64.tar.gz @ccbridge/linux-arm64 linux-aarch64 ccbridge",
		"ccbridge_v1.2.3_windows_amd64.zip @ccbridge/win32-x64 windows-x86_64 ccbridge.exe",
		"ccbridge_v1.2.3_windows_arm64.zip @ccbridge/win32-arm64 windows-aarch64 ccbridge.exe",
	}
	if !slices.Equal(names, want) {
		t.Errorf("names:\n%s\nwant:\n%s", strings.Join(names, "\n"), strings.Join(want, "\n"))
	}
}

func TestParseEpoch(t *testing.T) {
	if got, err := parseEpoch("1764291600"); err != nil || !got.Equal(time.Date(2025, 11, 28, 1, 0, 0, 0, time.UTC)) {
		t.Errorf("parseEpoch = %v, %v", got, err)
	}
	for _, s := range []string{"", "x", "-1", "1.5", "99999999999999"} {
		var in *InputError
		if _, err := parseEpoch(s); !errors.As(err, &in) {
			t.Errorf("parseEpoch(%q) = %v, want an InputError", s, err)
		}
	}
}

// TestRunRefusesBadInput: each step refuses what it cannot work with
// with an InputError (exit status 2), before it writes anything.
func TestRunRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		nil,
		{"publish", "-version", "v1"},
		{"check"},
		{"check", "-version", "v1 2"},
		{"check", "-version", "v1", "-targets", "plan9/amd64"},
		{"check", "-version", "v1", "-nosuchflag"},
		{"list", "-targets", "linux/mips"},
		{"archive", "-version", "v1", "-bin", dir, "-out", dir},
		{"archive", "-version", "v1", "-bin", dir, "-out", dir, "-epoch", "yesterday"},
		{"archive", "-version", "v1", "-out", dir, "-epoch", "0"},
		{"archive", "-version", "v1", "-bin", dir, "-out", dir, "-epoch", "0", "-targets", "linux/amd64"},
		{"npm", "-version", "v1"},
		{"npm", "-version", "v1", "-dist", dir},
		{"manifest", "-version", "v1", "-dist", dir, "-icon", "x.svg"},
		{"manifest", "-version", "v1", "-dist", dir, "-icon", "x.svg", "-url", "ftp://example.com/"},
		{"manifest", "-version", "v1", "-dist", dir, "-icon", "x.svg", "-url", "releases/v1/"},
	} {
		var in *InputError
		if err := run(args, io.Discard, io.Discard); !errors.As(err, &in) {
			t.Errorf("run %q = %v, want an InputError", args, err)
		}
	}
}

func TestRunList(t *testing.T) {
	var out strings.Builder
	if err := run([]string{"list", "-targets", "windows/arm64 linux/amd64"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if out.String() != "linux/amd64\nwindows/arm64\n" {
		t.Errorf("list printed %q", out.String())
	}
}
