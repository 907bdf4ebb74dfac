package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccbridge/ccbridge/session/clifiles"
)

// TestIPCAlignCLILineTooLong: a CLI line over --max-cli-line (here the
// assistant message and the result of a 300 kB text) is dropped and
// reported as error line_too_long, and the session goes on.
func TestIPCAlignCLILineTooLong(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), t.TempDir()
	b := startBridge(t, []string{"--ui", "ipc", "--cwd", cwd, "--max-cli-line", "100000"}, "HOME="+home)
	expectSessionInit(t, b)
	b.send(userMessage("BIGTEXT 300000"))
	lines := ipcUntil(t, b, "a line_too_long error", func(l []byte) bool {
		return typeOf(l) == "error" && get(l, "code").Str == "line_too_long"
	})
	e := lines[len(lines)-1]
	if !get(e, "recoverable").Bool() || !strings.Contains(get(e, "message").Str, "CLI line") {
		t.Errorf("line_too_long error: %.400s", e)
	}
	if len(ofType(lines, "assistant_text")) == 0 {
		t.Errorf("no text streamed before the long line; the lines:\n%s", lastLines(lines, 8))
	}
	complete(t, turn(t, b, "hello "+token("after")))
}

// TestIPCAlignResumeRefusedBeforeAnyChild: a session_command resume of a
// session whose file holds no conversation is refused with
// session_not_found before the CLI is stopped, and the session goes on in
// the same CLI.
func TestIPCAlignResumeRefusedBeforeAnyChild(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), t.TempDir()
	b := startBridge(t, []string{"--ui", "ipc", "--cwd", cwd}, "HOME="+home)
	sid := expectSessionInit(t, b)
	complete(t, turn(t, b, "hello "+token("first")))
	pid := b.childPID()

	real, err := filepath.EvalSymlinks(cwd)
	if err != nil {
		t.Fatal(err)
	}
	dir := clifiles.ProjectDir(filepath.Join(home, ".claude"), real)
	const empty = "0b7ad0e4-5a0c-4a6e-9d4e-2f2f7f6e8a11"
	if err := os.WriteFile(filepath.Join(dir, empty+".jsonl"), []byte(`{"type":"summary","summary":"nothing said"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{empty, "5a4b0c1d-0000-4000-8000-000000000000"} {
		b.send(`{"type":"session_command","command":"resume","session_id":"` + id + `"}`)
		l, err := recv(t, b, ipcWait)
		if err != nil || typeOf(l) != "error" || get(l, "code").Str != "session_not_found" || !get(l, "recoverable").Bool() {
			t.Fatalf("resume of %s: %v %.400s", id, err, l)
		}
	}
	lines := turn(t, b, "hello "+token("second"))
	complete(t, lines)
	noSessionChange(t, lines, sid)
	if b.childPID() != pid {
		t.Errorf("the CLI was replaced (pid %d, then %d)", pid, b.childPID())
	}
}
