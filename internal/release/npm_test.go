package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

func TestNPMManifests(t *testing.T) {
	p := platformManifest(target{"windows", "arm64"}, "1.2.3")
	if p["name"] != "@ccbridge/win32-arm64" || !slices.Equal(p["os"].([]string), []string{"win32"}) ||
		!slices.Equal(p["cpu"].([]string), []string{"arm64"}) || p["version"] != "1.2.3" || p["bin"] != nil {
		t.Errorf("platform package.json: %v", p)
	}
	m := mainManifest(allTargets, "1.2.3")
	opt := m["optionalDependencies"].(map[string]string)
	if len(opt) != 6 || opt["@ccbridge/darwin-x64"] != "1.2.3" || opt["@ccbridge/linux-arm64"] != "1.2.3" || opt["@ccbridge/win32-x64"] != "1.2.3" {
		t.Errorf("optionalDependencies: %v", opt)
	}
	if m["bin"].(map[string]string)["ccbridge"] != "bin/ccbridge.js" || m["scripts"] != nil {
		t.Errorf("ccbridge package.json: %v", m)
	}
	js, err := launcherJS(allTargets, "1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"'win32 x64': ['@ccbridge/win32-x64', 'ccbridge.exe']", "'darwin arm64': ['@ccbridge/darwin-arm64', 'ccbridge']", "require.resolve(pkg + '/package.json')"} {
		if !bytes.Contains(js, []byte(want)) {
			t.Errorf("the launcher has no %s", want)
		}
	}
}

// needNode skips the test when node or npm is missing (fails it under
// CI=true, where they must be).
func needNode(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is missing", tool)
			}
			t.Skipf("%s is missing", tool)
		}
	}
}

// hostTarget is the target of this machine, or skips the test.
func hostTarget(t *testing.T) target {
	tg := target{runtime.GOOS, runtime.GOARCH}
	if !slices.Contains(allTargets, tg) || tg.os == "windows" {
		t.Skipf("no release target for %s (or not unix)", tg)
	}
	return tg
}

// fakeCCBridge stands in for the binary: it prints its arguments, exits
// with a code, or waits for a signal and says which came.
const fakeCCBridge = `#!/bin/sh
case "$1" in
exit) exit "$2" ;;
wait)
  sleep 60 & pid=$!
  trap 'kill $pid; echo got TERM; exit 7' TERM
  trap 'kill $pid; echo got HUP; exit 8' HUP
  trap 'kill $pid; trap - INT; kill -INT $$' INT
  echo ready
  wait $pid ;;
ints)
  n=0
  trap 'n=$((n+1))' INT
  echo ready
  while [ $n -eq 0 ]; do sleep 0.05; done
  sleep 1
  echo "ints $n" ;;
*) echo "fake ccbridge: $*" ;;
esac
`

// npmInstall installs tarballs into a new folder as docs/release.md says,
// offline with an empty cache, and returns the folder.
func npmInstall(t *testing.T, tarballs ...string) string {
	t.Helper()
	dir := t.TempDir()
	args := append([]string{"install", "--offline", "--no-audit", "--no-fund", "--cache", t.TempDir()}, tarballs...)
	cmd := exec.Command("npm", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return dir
}

// TestNPMPackages: the npm step packs a platform package holding the
// archive's binary (mode 0755, os and cpu set) and ccbridge; the two
// install offline, although ccbridge's other optional dependencies are
// nowhere to be had; the launcher runs the binary with the arguments,
// exits with its code, forwards SIGTERM, SIGHUP and SIGINT, dies by the
// signal that killed it, and names the platform package when it is
// missing.
func TestNPMPackages(t *testing.T) {
	needNode(t)
	host := hostTarget(t)
	// Every target, so that ccbridge depends on six packages, of which
	// only the host's is installed; each holds the fake.
	bin := filepath.Join(t.TempDir(), "bin")
	for _, tg := range allTargets {
		p := filepath.Join(bin, tg.os+"_"+tg.arch, tg.exe())
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(fakeCCBridge), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dist := t.TempDir()
	if err := writeArchives("v9.8.7-rc.1", allTargets, bin, dist, nil, testTime, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := writeNPM("v9.8.7-rc.1", dist, io.Discard); err != nil {
		t.Fatal(err)
	}
	npmDir := filepath.Join(dist, "npm")
	var names []string
	entries, _ := os.ReadDir(npmDir)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{"ccbridge-9.8.7-rc.1.tgz"}
	for _, tg := range allTargets {
		want = append(want, "ccbridge-"+tg.npmOS()+"-"+tg.npmCPU()+"-9.8.7-rc.1.tgz")
	}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("dist/npm holds %q, want %q", names, want)
	}
	mainTgz := filepath.Join(npmDir, "ccbridge-9.8.7-rc.1.tgz")
	hostTgz := filepath.Join(npmDir, "ccbridge-"+host.npmOS()+"-"+host.npmCPU()+"-9.8.7-rc.1.tgz")
	files := tgzFiles(t, hostTgz)
	if f, ok := files["package/bin/ccbridge"]; !ok || f.mode != 0o755 || string(f.data) != fakeCCBridge {
		t.Errorf("%s: bin/ccbridge mode %o, %d bytes", hostTgz, f.mode, len(f.data))
	}
	var pj map[string]any
	json.Unmarshal(files["package/package.json"].data, &pj)
	if pj["name"] != host.npmPackage() || pj["version"] != "9.8.7-rc.1" {
		t.Errorf("%s: package.json %s", hostTgz, files["package/package.json"].data)
	}
	mainFiles := tgzFiles(t, mainTgz)
	if f := mainFiles["package/bin/ccbridge.js"]; f.mode&0o111 == 0 {
		t.Errorf("bin/ccbridge.js mode %o", f.mode)
	}

	dir := npmInstall(t, mainTgz, hostTgz)
	launcher := filepath.Join(dir, "node_modules", ".bin", "ccbridge")
	if fi, err := os.Stat(filepath.Join(dir, "node_modules", host.npmPackage(), "bin", "ccbridge")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("the installed binary: %v, %v", fi, err)
	}

	out, err := exec.Command(launcher, "version", "--json", "a b").Output()
	if err != nil || string(out) != "fake ccbridge: version --json a b\n" {
		t.Errorf("ccbridge version: %q, %v", out, err)
	}
	var exit *exec.ExitError
	if err := exec.Command(launcher, "exit", "3").Run(); !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("exit 3: %v", err)
	}
	for _, tc := range []struct {
		sig  syscall.Signal
		out  string
		code int
	}{
		{syscall.SIGTERM, "got TERM\n", 7},
		{syscall.SIGHUP, "got HUP\n", 8},
		{syscall.SIGINT, "", -1},
	} {
		cmd := exec.Command(launcher, "wait")
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(stdout)
		if l, err := r.ReadString('\n'); l != "ready\n" {
			t.Fatalf("%v: the fake said %q, %v", tc.sig, l, err)
		}
		cmd.Process.Signal(tc.sig)
		// The fake answers at once; when the signal is not forwarded, it
		// goes on waiting (its sleep holds stdout open for 60 s).
		done := make(chan []byte, 1)
		go func() {
			b, _ := io.ReadAll(r)
			done <- b
		}()
		var rest []byte
		select {
		case rest = <-done:
		case <-time.After(20 * time.Second):
			t.Errorf("%v: no answer from the fake in 20 s: not forwarded", tc.sig)
			cmd.Process.Kill()
			continue
		}
		err := cmd.Wait()
		if string(rest) != tc.out || cmd.ProcessState.ExitCode() != tc.code {
			t.Errorf("%v: the fake said %q; the launcher: %v", tc.sig, rest, err)
		}
		if tc.code == -1 {
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != tc.sig {
				t.Errorf("%v: the launcher did not die by it: %v", tc.sig, cmd.ProcessState)
			}
		}
	}

	t.Run("at a terminal", func(t *testing.T) { launcherAtATerminal(t, launcher) })

	// An unsupported platform, as Node would report it.
	preload := filepath.Join(t.TempDir(), "arch.js")
	os.WriteFile(preload, []byte("Object.defineProperty(process, 'arch', { value: 'mips' });\n"), 0o644)
	cmd := exec.Command("node", "-r", preload, launcher, "version")
	msg, err := cmd.CombinedOutput()
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(msg), "no ccbridge binary for "+host.npmOS()+" mips") {
		t.Errorf("on mips: %v: %s", err, msg)
	}

	// ccbridge alone: its platform package is missing.
	bare := filepath.Join(npmInstall(t, mainTgz), "node_modules", ".bin", "ccbridge")
	msg, err = exec.Command(bare, "version").CombinedOutput()
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(msg), "the package "+host.npmPackage()+"@9.8.7-rc.1") {
		t.Errorf("without %s: %v: %s", host.npmPackage(), err, msg)
	}
}

type tgzFile struct {
	mode int64
	data []byte
}

func tgzFiles(t *testing.T, name string) map[string]tgzFile {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]tgzFile{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		files[h.Name] = tgzFile{h.Mode, body}
	}
}

// launcherAtATerminal: Ctrl-C at a terminal signals the launcher and
// ccbridge both (the terminal's foreground process group); the launcher
// does not forward it, so ccbridge sees one SIGINT, which interrupts a
// turn, not two, which stop it.
func launcherAtATerminal(t *testing.T, launcher string) {
	// pty.Start makes the launcher a session leader with the terminal as
	// its controlling terminal, its process group the foreground one.
	cmd := exec.Command(launcher, "ints")
	term, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	defer cmd.Process.Kill()
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(term)
		for sc.Scan() {
			lines <- strings.TrimSpace(sc.Text())
		}
		close(lines)
	}()
	next := func() string {
		select {
		case l := <-lines:
			return l
		case <-time.After(20 * time.Second):
			t.Fatal("the fake said nothing for 20 s")
		}
		return ""
	}
	if l := next(); l != "ready" {
		t.Fatalf("the fake said %q", l)
	}
	term.Write([]byte{3})                 // Ctrl-C
	l := strings.TrimPrefix(next(), "^C") // the terminal echoes the Ctrl-C
	for l == "" {
		l = strings.TrimPrefix(next(), "^C")
	}
	if l != "ints 1" {
		t.Errorf("after one Ctrl-C the binary counted %q, want ints 1: the launcher forwarded the terminal's SIGINT", l)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("the launcher: %v", err)
	}
}
