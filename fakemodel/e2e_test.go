package fakemodel

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

const cliRel = "node_modules/@anthropic-ai/claude-code/bin/claude.exe"

// findCLI locates the real Claude Code CLI: $CCBRIDGE_TEST_CLAUDE, else
// <repo>/.tools/... (scripts/install-tools.sh). Without one the test is
// skipped, unless CI=true.
func findCLI(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CCBRIDGE_TEST_CLAUDE"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("CCBRIDGE_TEST_CLAUDE: %v", err)
		}
		return p
	}
	var candidates []string
	if dir, err := os.Getwd(); err == nil {
		for ; ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				candidates = append(candidates, filepath.Join(dir, ".tools", cliRel))
				break
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	for _, p := range candidates {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("Claude Code CLI not found (tried $CCBRIDGE_TEST_CLAUDE, %s); run scripts/install-tools.sh", strings.Join(candidates, ", "))
	}
	t.Skipf("Claude Code CLI not found (tried $CCBRIDGE_TEST_CLAUDE, %s)", strings.Join(candidates, ", "))
	return ""
}

// cliEnv is the parent environment without anything that could point the
// CLI elsewhere, plus a scratch HOME and the server's variables. Proxy
// variables go too: the CLI sends even loopback requests through
// HTTP_PROXY/HTTPS_PROXY unless NO_PROXY lists 127.0.0.1.
func cliEnv(home string, srv *Server) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch u := strings.ToUpper(k); {
		case u == "HOME", u == "CLAUDECODE", strings.HasPrefix(u, "ANTHROPIC_"), strings.HasPrefix(u, "CLAUDE_"),
			u == "HTTP_PROXY", u == "HTTPS_PROXY", u == "ALL_PROXY", u == "NO_PROXY":
			continue
		}
		env = append(env, kv)
	}
	return append(append(env, "HOME="+home), srv.Env()...)
}

func TestEndToEndRealCLI(t *testing.T) {
	cli := findCLI(t)
	sc, err := Load("default")
	if err != nil {
		t.Fatal(err)
	}
	srv := startSC(t, sc)
	cwd := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli,
		"--output-format", "stream-json", "--input-format", "stream-json", "--verbose",
		"--permission-prompt-tool", "stdio", "--include-partial-messages")
	cmd.Dir = cwd
	cmd.Env = cliEnv(t.TempDir(), srv)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()

	send := func(v any) {
		b, _ := json.Marshal(v)
		if _, err := stdin.Write(append(b, '\n')); err != nil {
			t.Fatalf("write to CLI: %v", err)
		}
	}
	prompt := func(s string) {
		send(map[string]any{"type": "user", "session_id": "", "parent_tool_use_id": nil,
			"message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": s}}}})
	}

	// The API error comes second: a session whose last turn failed exits
	// with 1, and the failed prompt is merged into the next request.
	prompts := []string{"hello", "APIERR400 now", "WRITEFILE please"}
	var results []gjson.Result
	var asked []string
	prompt(prompts[0])
	rd := bufio.NewReaderSize(stdout, 1<<20)
	for {
		line, err := rd.ReadBytes('\n')
		if len(line) > 0 {
			if !gjson.ValidBytes(line) {
				t.Fatalf("CLI wrote non-JSON: %q", line)
			}
			m := gjson.ParseBytes(line)
			switch m.Get("type").String() {
			case "control_request":
				if m.Get("request.subtype").String() == "can_use_tool" {
					asked = append(asked, m.Get("request.tool_name").String())
					send(map[string]any{"type": "control_response", "response": map[string]any{
						"subtype": "success", "request_id": m.Get("request_id").String(),
						"response": map[string]any{"behavior": "allow"}}})
				}
			case "result":
				results = append(results, m)
				if len(results) < len(prompts) {
					prompt(prompts[len(results)])
				} else {
					stdin.Close()
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read CLI: %v", err)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("CLI exit: %v (results %d)\nstderr: %s", err, len(results), stderr.String())
	}
	if len(results) != 3 {
		t.Fatalf("%d results, want 3\nstderr: %s", len(results), stderr.String())
	}

	if r := results[0]; r.Get("is_error").Bool() || r.Get("result").String() != "Hello from the mock model. " {
		t.Errorf("text turn: %s", r.Raw)
	}

	if r := results[1]; !r.Get("is_error").Bool() || !strings.Contains(r.Get("result").String(), "400") {
		t.Errorf("APIERR400 turn: %s", r.Raw)
	}

	if r := results[2]; r.Get("is_error").Bool() || r.Get("result").String() != "Done. " || r.Get("num_turns").Int() != 2 {
		t.Errorf("WRITEFILE turn: %s", r.Raw)
	}
	if strings.Join(asked, ",") != "Write" {
		t.Errorf("can_use_tool asked for %v, want [Write]", asked)
	}
	if b, err := os.ReadFile(filepath.Join(cwd, "written.txt")); err != nil || string(b) != "hello world\n" {
		t.Errorf("written.txt: %q %v", b, err)
	}

	// What the server saw: the CLI's calls, each answered by the right step.
	var seen []string
	for _, r := range srv.Requests() {
		if r.Path == "/v1/messages" {
			seen = append(seen, fmt.Sprintf("%s/%d", r.Rule, r.Step))
		}
		if r.Status == 404 {
			t.Logf("unknown endpoint used: %s %s", r.Method, r.Path)
		}
	}
	got := strings.Join(seen, " ")
	t.Logf("server saw %s", got)
	if !strings.HasPrefix(got, "fallback/0 APIERR400/0") || !strings.HasSuffix(got, "APIERR400/0 WRITEFILE/0 WRITEFILE/1") {
		t.Errorf("server saw %s", got)
	}
}

// findCodex locates the real Codex CLI: $CCBRIDGE_TEST_CODEX, else
// <repo>/.tools/agents/node_modules/.bin/codex (scripts/install-agents.sh).
// Without one the test is skipped, unless CI=true.
func findCodex(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CCBRIDGE_TEST_CODEX"); p != "" {
		return p
	}
	dir, err := os.Getwd()
	for ; err == nil; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		if filepath.Dir(dir) == dir {
			err = os.ErrNotExist
		}
	}
	p := filepath.Join(dir, ".tools", "agents", "node_modules", ".bin", "codex")
	if _, serr := os.Stat(p); err == nil && serr == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("Codex CLI not found (tried $CCBRIDGE_TEST_CODEX, %s); run scripts/install-agents.sh", p)
	}
	t.Skipf("Codex CLI not found (tried $CCBRIDGE_TEST_CODEX, %s)", p)
	return ""
}

// TestEndToEndRealCodex runs the real Codex CLI (codex exec) against the
// server's Responses API with the config CodexConfig writes: a text
// answer, a command, a file written and a file edited through Codex's own
// tools, and a scripted API error.
func TestEndToEndRealCodex(t *testing.T) {
	t.Parallel()
	codex := findCodex(t)
	sc, err := Load("default")
	if err != nil {
		t.Fatal(err)
	}
	srv := startSC(t, sc)
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch u := strings.ToUpper(k); {
		case u == "HOME", strings.HasPrefix(u, "OPENAI_"), strings.HasPrefix(u, "CODEX_"),
			u == "HTTP_PROXY", u == "HTTPS_PROXY", u == "ALL_PROXY", u == "NO_PROXY":
			continue
		}
		env = append(env, kv)
	}
	run := func(t *testing.T, prompt string, setup func(cwd string)) (cwd, last, out string, err error) {
		home, cwd := t.TempDir(), t.TempDir()
		if err := os.WriteFile(filepath.Join(home, "config.toml"), srv.CodexConfig(), 0o600); err != nil {
			t.Fatal(err)
		}
		if setup != nil {
			setup(cwd)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		lastFile := filepath.Join(home, "last.txt")
		// The sandbox is Codex's business, not the fake's: bypassed, so
		// that a machine without user namespaces runs this too.
		cmd := exec.CommandContext(ctx, codex, "exec", "--skip-git-repo-check", "--ephemeral",
			"--dangerously-bypass-approvals-and-sandbox", "-o", lastFile, prompt)
		cmd.Dir = cwd
		cmd.Env = append(env[:len(env):len(env)], "HOME="+home, "CODEX_HOME="+home) // env is shared: never written
		b, err := cmd.CombinedOutput()
		l, _ := os.ReadFile(lastFile)
		return cwd, string(l), string(b), err
	}
	t.Run("text", func(t *testing.T) {
		t.Parallel()
		if _, last, out, err := run(t, "hello", nil); err != nil || strings.TrimSpace(last) != "Hello from the mock model." {
			t.Errorf("codex exec: %v, last message %q\n%s", err, last, out)
		}
	})
	t.Run("BASH", func(t *testing.T) {
		t.Parallel()
		cwd, last, out, err := run(t, "BASH please", nil)
		if _, serr := os.Stat(filepath.Join(cwd, "bash_touched.txt")); err != nil || serr != nil || strings.TrimSpace(last) != "Done." {
			t.Errorf("codex exec: %v, %v, last message %q\n%s", err, serr, last, out)
		}
	})
	t.Run("WRITEFILE", func(t *testing.T) {
		t.Parallel()
		cwd, last, out, err := run(t, "WRITEFILE please", nil)
		if b, rerr := os.ReadFile(filepath.Join(cwd, "written.txt")); err != nil || string(b) != "hello world\n" || strings.TrimSpace(last) != "Done." {
			t.Errorf("codex exec: %v; written.txt %q %v; last message %q\n%s", err, b, rerr, last, out)
		}
	})
	t.Run("EDITFILE", func(t *testing.T) {
		t.Parallel()
		cwd, last, out, err := run(t, "EDITFILE please", func(cwd string) {
			os.WriteFile(filepath.Join(cwd, "edit_target.txt"), []byte("line one\nline two\nline three\n"), 0o644)
		})
		if b, _ := os.ReadFile(filepath.Join(cwd, "edit_target.txt")); err != nil || string(b) != "line one\nline 2 (edited)\nline three\n" || strings.TrimSpace(last) != "Done." {
			t.Errorf("codex exec: %v; edit_target.txt %q; last message %q\n%s", err, b, last, out)
		}
	})
	t.Run("APIERR400", func(t *testing.T) {
		t.Parallel()
		_, _, out, err := run(t, "APIERR400 now", nil)
		if err == nil || !strings.Contains(out, "invalid_request_error (400)") {
			t.Errorf("codex exec: %v, want a failure naming the 400\n%s", err, out)
		}
	})
}
