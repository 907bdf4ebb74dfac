package webui

import (
	"io/fs"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestMarkdown runs the JavaScript tests of the Markdown renderer
// (md_test.mjs) with node's test runner. Without node the test is
// skipped, except under CI=true, where it fails.
func TestMarkdown(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node is not installed: the page's JavaScript tests cannot run")
		}
		t.Skip("node is not installed")
	}
	cmd := exec.Command(node, "--test", "md_test.mjs")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test md_test.mjs: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "# fail 0") {
		t.Fatalf("node --test md_test.mjs did not report its results:\n%s", out)
	}
	t.Logf("%s", tail(string(out), 9))
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestStaticFiles checks what the Content-Security-Policy and the
// server rely on: index.html loads app.js as a module and app.css, has
// no inline script, style or event handler, every module imported is
// embedded, and the page stays small.
func TestStaticFiles(t *testing.T) {
	static, err := fs.Sub(Static, "static")
	if err != nil {
		t.Fatal(err)
	}
	html, err := fs.ReadFile(static, "index.html")
	if err != nil {
		t.Fatal(err)
	}
	page := string(html)
	for _, want := range []string{`<script type="module" src="/app.js"></script>`, `<link rel="stylesheet" href="/app.css">`} {
		if !strings.Contains(page, want) {
			t.Errorf("index.html lacks %s", want)
		}
	}
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`), // inline script
		regexp.MustCompile(`(?i)<style`),
		regexp.MustCompile(`(?i)\sstyle\s*=`),
		regexp.MustCompile(`(?i)\son[a-z]+\s*=`),
		regexp.MustCompile(`(?i)(?:src|href)\s*=\s*"(?:https?:)?//`), // nothing from elsewhere
	} {
		if m := bad.FindString(page); m != "" {
			t.Errorf("index.html has %q, which the CSP forbids or the page must not do", m)
		}
	}

	importRe := regexp.MustCompile(`(?m)^import [^'"]*['"]\./([^'"]+)['"]`)
	total := len(html)
	files, err := fs.Glob(static, "*")
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range files {
		have[f] = true
	}
	for _, name := range files {
		b, err := fs.ReadFile(static, name)
		if err != nil {
			t.Fatal(err)
		}
		if name != "index.html" {
			total += len(b)
		}
		if !strings.HasSuffix(name, ".js") {
			continue
		}
		src := string(b)
		for _, m := range importRe.FindAllStringSubmatch(src, -1) {
			if !have[m[1]] {
				t.Errorf("%s imports ./%s, which is not embedded", name, m[1])
			}
		}
		for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "eval(", "new Function", "document.write"} {
			if strings.Contains(src, bad) {
				t.Errorf("%s uses %s", name, bad)
			}
		}
	}
	for _, want := range []string{"app.js", "app.css", "md.js"} {
		if !have[want] {
			t.Errorf("static/%s is missing", want)
		}
	}
	const budget = 111_000 // bytes of HTML, CSS and JavaScript (100,000 until the rewind panel, about 3.2 KB, went past it; 105,000 until @-mentions, the MCP panel and the CLI's context use, about 7.4 KB)
	if total > budget {
		t.Errorf("the page weighs %d bytes, over its budget of %d", total, budget)
	}
	t.Logf("the page: %d bytes in %d files", total, len(files))
}
