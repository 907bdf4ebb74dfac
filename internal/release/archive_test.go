package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var testTime = time.Date(2026, 11, 28, 1, 2, 3, 0, time.UTC)

// fakeBinaries writes a binary for each target into a bin folder, as
// scripts/release.sh lays them out, and a README.md; it returns the bin
// folder and the README's path.
func fakeBinaries(t *testing.T, ts []target) (bin, readme string) {
	t.Helper()
	dir := t.TempDir()
	bin = filepath.Join(dir, "bin")
	for _, tg := range ts {
		p := filepath.Join(bin, tg.os+"_"+tg.arch, tg.exe())
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("binary of "+tg.String()+strings.Repeat(" padding", 1000)), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	readme = filepath.Join(dir, "README.md")
	if err := os.WriteFile(readme, []byte("# ccbridge\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return bin, readme
}

// makeDist runs the archive step for ts into a new dist folder.
func makeDist(t *testing.T, version string, ts []target, mtime time.Time) string {
	t.Helper()
	bin, readme := fakeBinaries(t, ts)
	dist := filepath.Join(t.TempDir(), "dist")
	if err := writeArchives(version, ts, bin, dist, []string{readme}, mtime, io.Discard); err != nil {
		t.Fatal(err)
	}
	return dist
}

func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = data
	}
	return files
}

// TestArchivesReproducible: two runs over the same binaries give
// byte-identical archives and checksums; another time gives others.
func TestArchivesReproducible(t *testing.T) {
	bin, readme := fakeBinaries(t, allTargets)
	var runs []map[string][]byte
	for _, mtime := range []time.Time{testTime, testTime, testTime.Add(time.Second)} {
		dist := t.TempDir()
		if err := writeArchives("v1.2.3", allTargets, bin, dist, []string{readme}, mtime, io.Discard); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, readDir(t, dist))
	}
	if len(runs[0]) != 7 {
		t.Fatalf("%d files, want 6 archives and the checksums", len(runs[0]))
	}
	for name, data := range runs[0] {
		if !bytes.Equal(data, runs[1][name]) {
			t.Errorf("%s differs between two runs", name)
		}
		if name != checksumsName("v1.2.3") && bytes.Equal(data, runs[2][name]) {
			t.Errorf("%s is the same with another time: the time is not in it", name)
		}
	}
}

// TestArchiveContents: each archive holds the binary (0755) and README.md
// (0644), sorted, owned by root, dated at the given time; gzip has no name
// and no time; the checksums file is sha256sum's.
func TestArchiveContents(t *testing.T) {
	dist := makeDist(t, "v1.2.3", allTargets, testTime)
	files := readDir(t, dist)
	var sums []string
	for _, tg := range allTargets {
		name := tg.archive("v1.2.3")
		data, ok := files[name]
		if !ok {
			t.Fatalf("no %s", name)
		}
		sum := sha256.Sum256(data)
		sums = append(sums, hex.EncodeToString(sum[:])+"  "+name)
		want := []string{"README.md 644 # ccbridge\n", tg.exe() + " 755 binary of " + tg.String()}
		var got []string
		if tg.os == "windows" {
			zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range zr.File {
				if !f.Modified.Equal(testTime) {
					t.Errorf("%s: %s dated %v", name, f.Name, f.Modified)
				}
				rc, _ := f.Open()
				body, _ := io.ReadAll(rc)
				got = append(got, fmt.Sprintf("%s %o %s", f.Name, f.Mode().Perm(), strings.ReplaceAll(string(body), " padding", "")))
			}
		} else {
			gz, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if gz.Name != "" || !gz.ModTime.IsZero() {
				t.Errorf("%s: gzip header name %q, time %v", name, gz.Name, gz.ModTime)
			}
			tr := tar.NewReader(gz)
			for {
				h, err := tr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if !h.ModTime.Equal(testTime) || h.Uid != 0 || h.Gid != 0 || h.Uname != "root" || h.Typeflag != tar.TypeReg {
					t.Errorf("%s: %s: time %v, owner %d:%d %s, type %c", name, h.Name, h.ModTime, h.Uid, h.Gid, h.Uname, h.Typeflag)
				}
				body, _ := io.ReadAll(tr)
				got = append(got, fmt.Sprintf("%s %o %s", h.Name, h.Mode, strings.ReplaceAll(string(body), " padding", "")))
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s holds %q, want %q", name, got, want)
		}
	}
	// allTargets' order is the file names' order.
	if got := string(files[checksumsName("v1.2.3")]); got != strings.Join(sums, "\n")+"\n" {
		t.Errorf("checksums file:\n%s\nwant:\n%s", got, strings.Join(sums, "\n"))
	}
	ts, _, err := readRelease("v1.2.3", dist)
	if err != nil || !slices.Equal(ts, allTargets) {
		t.Errorf("readRelease = %v, %v", ts, err)
	}
	for _, tg := range allTargets {
		bin, err := extractBinary(tg, files[tg.archive("v1.2.3")])
		if err != nil || !bytes.HasPrefix(bin, []byte("binary of "+tg.String())) {
			t.Errorf("extractBinary(%s) = %.30q, %v", tg, bin, err)
		}
	}
}

// TestZipBefore1980: a zip entry cannot be dated before 1980; such a time
// becomes 1980-01-01.
func TestZipBefore1980(t *testing.T) {
	win := []target{{"windows", "amd64"}}
	dist := makeDist(t, "v1", win, time.Unix(0, 0).UTC())
	data, _ := os.ReadFile(filepath.Join(dist, win[0].archive("v1")))
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		if !f.Modified.Equal(zipEpoch) {
			t.Errorf("%s dated %v, want %v", f.Name, f.Modified, zipEpoch)
		}
	}
}

func TestArchiveRefuses(t *testing.T) {
	linux := []target{{"linux", "amd64"}}
	bin, readme := fakeBinaries(t, linux)
	dir := t.TempDir()
	ccbridge := filepath.Join(dir, "ccbridge")
	os.WriteFile(ccbridge, []byte("not the binary"), 0o644)
	for _, tc := range []struct {
		name  string
		ts    []target
		extra []string
	}{
		{"no binary", []target{{"darwin", "arm64"}}, []string{readme}},
		{"no such extra file", linux, []string{filepath.Join(dir, "LICENSE")}},
		{"an extra file named as the binary", linux, []string{readme, ccbridge}},
	} {
		var in *InputError
		if err := writeArchives("v1", tc.ts, bin, t.TempDir(), tc.extra, testTime, io.Discard); !errors.As(err, &in) {
			t.Errorf("%s: %v, want an InputError", tc.name, err)
		}
	}
}

// TestReadReleaseRefuses: the steps after archive refuse a dist whose
// archives do not match its checksums file, or a checksums file they
// cannot read.
func TestReadReleaseRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		mend func(dist string)
	}{
		{"an archive changed", func(dist string) {
			os.WriteFile(filepath.Join(dist, "ccbridge_v1_linux_amd64.tar.gz"), []byte("other"), 0o644)
		}},
		{"an archive missing", func(dist string) { os.Remove(filepath.Join(dist, "ccbridge_v1_linux_amd64.tar.gz")) }},
		{"no checksums file", func(dist string) { os.Remove(filepath.Join(dist, checksumsName("v1"))) }},
		{"a line of another release", func(dist string) {
			os.WriteFile(filepath.Join(dist, checksumsName("v1")), []byte(strings.Repeat("0", 64)+"  ccbridge_v2_linux_amd64.tar.gz\n"), 0o644)
		}},
		{"a line that is not sha256sum's", func(dist string) {
			os.WriteFile(filepath.Join(dist, checksumsName("v1")), []byte("abc ccbridge_v1_linux_amd64.tar.gz\n"), 0o644)
		}},
	} {
		dist := makeDist(t, "v1", []target{{"linux", "amd64"}}, testTime)
		tc.mend(dist)
		var in *InputError
		if _, _, err := readRelease("v1", dist); !errors.As(err, &in) {
			t.Errorf("%s: %v, want an InputError", tc.name, err)
		}
	}
}
