package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestRelease: scripts/release.sh for this machine's platform only
// (CCBRIDGE_RELEASE_TARGETS), twice, into two folders: the two are byte
// for byte the same (archives, checksums, npm tarballs, agent.json). The
// archive holds a native executable of this platform; the npm tarballs
// install offline into an empty folder, and ccbridge version, run from
// node_modules/.bin, says the release version; agent.json names the
// archive with its SHA-256. Then the Agent SDK drives the npm-installed
// native binary in drop-in mode, as TestDropInAgentSDKWriteAllowed drives
// a development build.
func TestRelease(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skipf("the release test runs on linux and darwin, not %s", runtime.GOOS)
	}
	for _, tool := range []string{"npm", "node", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is missing", tool)
			}
			t.Skipf("%s is missing", tool)
		}
	}
	const version, npmVersion = "v0.0.0-e2e.1", "0.0.0-e2e.1"
	host := runtime.GOOS + "/" + runtime.GOARCH
	archive := "ccbridge_" + version + "_" + runtime.GOOS + "_" + runtime.GOARCH + ".tar.gz"
	npmOS, npmCPU := runtime.GOOS, map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	platform := runtime.GOOS + "-" + map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]

	var dists []string
	for range 2 {
		dist := filepath.Join(t.TempDir(), "dist")
		cmd := exec.Command(filepath.Join(repoRoot, "scripts", "release.sh"), version)
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), "CCBRIDGE_RELEASE_TARGETS="+host, "CCBRIDGE_RELEASE_DIST="+dist,
			"CCBRIDGE_RELEASE_URL=https://example.com/ccbridge/"+version)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("scripts/release.sh %s: %v\n%s", version, err, tail(string(out), 4000))
		}
		dists = append(dists, dist)
	}
	files := releaseFiles(t, dists[0])
	other := releaseFiles(t, dists[1])
	for _, name := range []string{archive, "ccbridge_" + version + "_checksums.txt", "agent.json", "icon.svg",
		"npm/ccbridge-" + npmVersion + ".tgz", "npm/ccbridge-" + npmOS + "-" + npmCPU + "-" + npmVersion + ".tgz"} {
		if _, ok := files[name]; !ok {
			t.Errorf("the release has no %s", name)
		}
	}
	if len(files) != 6 {
		t.Errorf("the release has %d files, want 6", len(files))
	}
	for name, data := range files {
		if !bytes.Equal(data, other[name]) {
			t.Errorf("%s differs between two runs: not reproducible", name)
		}
	}

	bin := tarMember(t, files[archive], "ccbridge")
	if got, want := executableFormat(bin), map[string]string{"linux": "ELF", "darwin": "Mach-O"}[runtime.GOOS]; got != want {
		t.Errorf("the archive's ccbridge is %q, want %s", got, want)
	}
	sum := sha256.Sum256(files[archive])
	if !bytes.Contains(files["ccbridge_"+version+"_checksums.txt"], []byte(hex.EncodeToString(sum[:])+"  "+archive+"\n")) {
		t.Errorf("the checksums file does not have %s's SHA-256:\n%s", archive, files["ccbridge_"+version+"_checksums.txt"])
	}
	agent := gjson.ParseBytes(files["agent.json"])
	entry := agent.Get("distribution.binary." + platform)
	if agent.Get("version").Str != npmVersion || path.Base(entry.Get("archive").Str) != archive ||
		entry.Get("sha256").Str != hex.EncodeToString(sum[:]) || agent.Get("distribution.npx.package").Str != "ccbridge@"+npmVersion {
		t.Errorf("agent.json: %s", files["agent.json"])
	}

	// npm install, offline, as docs/release.md says.
	dir := t.TempDir()
	install := exec.Command("npm", "install", "--offline", "--no-audit", "--no-fund", "--cache", t.TempDir(),
		filepath.Join(dists[0], "npm", "ccbridge-"+npmVersion+".tgz"),
		filepath.Join(dists[0], "npm", "ccbridge-"+npmOS+"-"+npmCPU+"-"+npmVersion+".tgz"))
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm install --offline: %v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(dir, "node_modules", ".bin", "ccbridge"), "version").Output()
	if first, _, _ := strings.Cut(string(out), "\n"); err != nil || first != "ccbridge "+version {
		t.Errorf("node_modules/.bin/ccbridge version: %v:\n%s", err, out)
	}
	native := filepath.Join(dir, "node_modules", "@ccbridge", npmOS+"-"+npmCPU, "bin", "ccbridge")
	if installed, err := os.ReadFile(native); err != nil || !bytes.Equal(installed, bin) {
		t.Fatalf("the npm-installed binary is not the archive's: %v", err)
	}
	js, err := exec.Command(native, "version", "--json").Output()
	if err != nil || gjson.GetBytes(js, "version").Str != version {
		t.Errorf("ccbridge version --json: %v: %s", err, js)
	}

	checkSDKWriteAllowed(t, agentSDKWith(t, native, "write"))
}

// releaseFiles reads a release's files, by their path below dist.
func releaseFiles(t *testing.T, dist string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dist, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dist, p)
		files[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// tarMember returns the file name of a .tar.gz.
func tarMember(t *testing.T, tgz []byte, name string) []byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("no %s in the archive: %v", name, err)
		}
		if h.Name == name {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return data
		}
	}
}

// executableFormat names an executable's format by its magic bytes: ELF,
// Mach-O (64-bit) or PE; "" for none of them.
func executableFormat(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x7fELF")):
		return "ELF"
	case len(b) >= 4 && (binary.LittleEndian.Uint32(b) == 0xfeedfacf || binary.BigEndian.Uint32(b) == 0xfeedfacf):
		return "Mach-O"
	case bytes.HasPrefix(b, []byte("MZ")) && len(b) >= 0x40:
		off := int(binary.LittleEndian.Uint32(b[0x3c:]))
		if off+4 <= len(b) && string(b[off:off+4]) == "PE\x00\x00" {
			return "PE"
		}
	}
	return ""
}
