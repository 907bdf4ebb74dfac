package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/flate"
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
	"time"
)

// member is one file of an archive.
type member struct {
	name string
	mode int64
	data []byte
}

// zipEpoch is the earliest time a zip entry can hold (MS-DOS time).
var zipEpoch = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// checksumsName is the checksums file's name, in sha256sum's format.
func checksumsName(version string) string { return "ccbridge_" + version + "_checksums.txt" }

// writeArchives writes one archive per target into out, each with the
// target's binary and the extra files, and the checksums file. The
// archives are reproducible: entries sorted by name, each with mtime,
// owner root (0), and mode 0755 (the binary) or 0644; gzip with no name
// and no time.
func writeArchives(version string, ts []target, binDir, out string, extra []string, mtime time.Time, w io.Writer) error {
	var files []member
	for _, name := range extra {
		data, err := os.ReadFile(name)
		if err != nil {
			return &InputError{"file", name, err.Error()}
		}
		files = append(files, member{name: filepath.Base(name), mode: 0o644, data: data})
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	sums := map[string]string{}
	for _, t := range ts {
		bin := filepath.Join(binDir, t.os+"_"+t.arch, t.exe())
		data, err := os.ReadFile(bin)
		if err != nil {
			return &InputError{"binary of " + t.String(), bin, err.Error()}
		}
		members := append([]member{{name: t.exe(), mode: 0o755, data: data}}, files...)
		slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.name, b.name) })
		for i := 1; i < len(members); i++ {
			if members[i].name == members[i-1].name {
				return &InputError{"file", members[i].name, "named twice in the archive"}
			}
		}
		var buf bytes.Buffer
		if t.os == "windows" {
			err = writeZip(&buf, members, mtime)
		} else {
			err = writeTarGz(&buf, members, mtime)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", t.archive(version), err)
		}
		name := t.archive(version)
		if err := os.WriteFile(filepath.Join(out, name), buf.Bytes(), 0o644); err != nil {
			return err
		}
		sum := sha256.Sum256(buf.Bytes())
		sums[name] = hex.EncodeToString(sum[:])
		fmt.Fprintf(w, "release: %s (%d bytes)\n", name, buf.Len())
	}
	return os.WriteFile(filepath.Join(out, checksumsName(version)), formatChecksums(sums), 0o644)
}

func writeTarGz(w io.Writer, members []member, mtime time.Time) error {
	gz, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	// gzip.Header's zero Name and ModTime write no name and MTIME 0.
	tw := tar.NewWriter(gz)
	for _, m := range members {
		hdr := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     m.name,
			Mode:     m.mode,
			Size:     int64(len(m.data)),
			ModTime:  mtime,
			Uname:    "root",
			Gname:    "root",
			Format:   tar.FormatUSTAR,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(m.data); err != nil {
			return err
		}
	}
	return errors.Join(tw.Close(), gz.Close())
}

func writeZip(w io.Writer, members []member, mtime time.Time) error {
	if mtime.Before(zipEpoch) {
		mtime = zipEpoch
	}
	zw := zip.NewWriter(w)
	zw.RegisterCompressor(zip.Deflate, func(out io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(out, flate.BestCompression)
	})
	for _, m := range members {
		hdr := &zip.FileHeader{Name: m.name, Method: zip.Deflate, Modified: mtime}
		hdr.SetMode(os.FileMode(m.mode))
		f, err := zw.CreateHeader(hdr)
		if err != nil {
			return err
		}
		if _, err := f.Write(m.data); err != nil {
			return err
		}
	}
	return zw.Close()
}

// formatChecksums writes sums (file name to hex SHA-256) as sha256sum
// does, sorted by name.
func formatChecksums(sums map[string]string) []byte {
	var names []string
	for n := range sums {
		names = append(names, n)
	}
	slices.Sort(names)
	var b bytes.Buffer
	for _, n := range names {
		fmt.Fprintf(&b, "%s  %s\n", sums[n], n)
	}
	return b.Bytes()
}

// readRelease reads the checksums file the archive step wrote into dist
// and checks each archive it names against its sum. It returns the
// targets found, in allTargets' order, with their sums.
func readRelease(version, dist string) ([]target, map[target]string, error) {
	name := filepath.Join(dist, checksumsName(version))
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, nil, &InputError{"dist", dist, "no checksums file of version " + version + " (run the archive step first): " + err.Error()}
	}
	sums := map[target]string{}
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		sum, file, ok := strings.Cut(line, "  ")
		t, known := targetOfArchive(version, file)
		if !ok || !known || len(sum) != 64 {
			return nil, nil, &InputError{"checksums line", fmt.Sprintf("%s:%d", name, i+1), "want \"<sha256>  ccbridge_" + version + "_<os>_<arch>.<ext>\""}
		}
		archive, err := os.ReadFile(filepath.Join(dist, file))
		if err != nil {
			return nil, nil, &InputError{"archive", file, err.Error()}
		}
		if got := sha256.Sum256(archive); hex.EncodeToString(got[:]) != sum {
			return nil, nil, &InputError{"archive", file, "its SHA-256 is not the one in " + filepath.Base(name)}
		}
		sums[t] = sum
	}
	var ts []target
	for _, t := range allTargets {
		if _, ok := sums[t]; ok {
			ts = append(ts, t)
		}
	}
	return ts, sums, nil
}

// extractBinary returns the binary in a target's archive.
func extractBinary(t target, archive []byte) ([]byte, error) {
	if t.os == "windows" {
		zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
		if err != nil {
			return nil, err
		}
		f, err := zr.Open(t.exe())
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return io.ReadAll(f)
	}
	gz, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil, fmt.Errorf("no %s in the archive", t.exe())
		}
		if err != nil {
			return nil, err
		}
		if hdr.Name == t.exe() {
			return io.ReadAll(tr)
		}
	}
}
