package e2e

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// TestDemoScript runs the README's first command, ./scripts/demo.sh, as a
// newcomer would (no browser at hand): it prints the page's address, the
// page and its API answer there with the demo's project folder, and
// Ctrl-C (SIGINT to its process group, pressed again and again) stops it,
// the CLI's fake model, serve and all, leaving neither a process nor its
// temporary folders.
func TestDemoScript(t *testing.T) {
	t.Parallel()
	realCLI(t) // the script installs the CLI itself; this test needs it there already
	cmd := exec.Command("bash", filepath.Join(repoRoot, "scripts", "demo.sh"))
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CCBRIDGE_DEMO_LISTEN=127.0.0.1:0", "DISPLAY=", "WAYLAND_DISPLAY=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	exited := make(chan error, 1)
	defer func() {
		syscall.Kill(-pgid, syscall.SIGKILL)
	}()

	urls := make(chan string, 1)
	var printed strings.Builder
	go func() {
		sc := bufio.NewScanner(out)
		re := regexp.MustCompile(`running at (http://127\.0\.0\.1:[0-9]+/)`)
		for sc.Scan() {
			printed.WriteString(sc.Text() + "\n")
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
		exited <- cmd.Wait()
	}()
	var url string
	select {
	case url = <-urls:
	case err := <-exited:
		t.Fatalf("demo.sh exited (%v) before printing its address", err)
	case <-time.After(120 * time.Second):
		t.Fatal("demo.sh printed no address within 120 s")
	}

	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "<script") {
		t.Fatalf("the page: %d %.200s", resp.StatusCode, page)
	}
	resp, err = c.Get(url + "api/web/info")
	if err != nil {
		t.Fatal(err)
	}
	info, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	project := gjson.GetBytes(info, "dirs.0").Str
	if !gjson.GetBytes(info, "fake_model").Bool() || project == "" {
		t.Fatalf("info %s", info)
	}
	if b, err := os.ReadFile(filepath.Join(project, "edit_target.txt")); err != nil || !strings.Contains(string(b), "line two") {
		t.Errorf("the demo's project folder has no edit_target.txt: %v", err)
	}
	serve := servePIDs(t, project)
	if len(serve) != 1 {
		t.Fatalf("ccbridge serve processes for %s: %v", project, serve)
	}

	// Ctrl-C reaches serve and the script together; serve may be gone
	// before the script's trap runs (it was, now and then, and the trap
	// then stopped before removing the folders). That order is made
	// certain here: serve first, then the whole group.
	syscall.Kill(serve[0], syscall.SIGINT)
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(serve[0], 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("ccbridge serve (pid %d) did not stop within 10 s of SIGINT", serve[0])
		}
		time.Sleep(20 * time.Millisecond)
	}
	// An impatient user presses Ctrl-C again and again while the script
	// cleans up: the folders go all the same.
	syscall.Kill(-pgid, syscall.SIGINT)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	giveUp := time.After(30 * time.Second)
wait:
	for {
		select {
		case <-exited:
			break wait
		case <-tick.C:
			syscall.Kill(-pgid, syscall.SIGINT)
		case <-giveUp:
			t.Fatalf("demo.sh did not stop within 30 s of Ctrl-C:\n%s", printed.String())
		}
	}
	if _, err := os.Stat(project); !os.IsNotExist(err) {
		t.Errorf("the demo's project folder is still there: %v", err)
	}
}

// servePIDs lists the processes whose command line is ccbridge serve with
// --dir dir.
func servePIDs(t *testing.T, dir string) []int {
	t.Helper()
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 2 && args[1] == "serve" && strings.Contains(string(b), "\x00--dir\x00"+dir+"\x00") {
			var pid int
			for _, c := range e.Name() {
				pid = pid*10 + int(c-'0')
			}
			pids = append(pids, pid)
		}
	}
	return pids
}
