package main

// The layering of the house as a test, in the manner of Go's own
// go/build/deps_test.go: depsPolicy says which of the module's packages
// each package may import, and which standard packages some may not; the
// test fails on any other import, and on a package the policy does not
// name. This is a statement of policy: change it because the design
// changed, never to make a build pass.

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/ccbridge/ccbridge"

// dialects are the packages of the --ui dialects: each imports the core,
// none imports another.
var dialects = []string{"adapter/acp", "adapter/ipc", "adapter/rpc", "adapter/stream", "adapter/worker", "adapter/echo"}

// depsPolicy: a package (a pattern: "x/..." is x and every package below
// it) and the module's packages it may import. Rules are tried in order;
// the first that matches a package is its rule.
var depsPolicy = []struct {
	pkg string
	may []string
}{
	// The leaves: lines, JSON helpers, the screen.
	{"framing", nil},
	{"internal/jscan", nil},
	{"internal/jsonw", nil},
	{"internal/rfc3339", nil},
	{"internal/payload", nil},
	{"internal/cliflags", nil},
	{"internal/golden", nil},
	{"internal/version", nil},
	// The release tool (package main, run by scripts/release.sh).
	{"internal/release", nil},
	{"internal/crosscheck", nil},
	{"screen", nil},
	// The pure codecs: the CLI side and one per dialect and lane.
	{"mapping/...", []string{"mapping/...", "internal/jscan", "internal/jsonw", "internal/rfc3339"}},
	// The CLI child and its files.
	{"session/guardian", nil},
	{"session", []string{"framing", "session/guardian"}},
	{"session/clifiles", []string{"framing", "mapping"}},
	{"fakemodel", []string{"session/clifiles"}},
	// The control plane, beneath the core: it knows no dialect.
	{"adapter/control", []string{"framing", "mapping/...", "session/...", "internal/jsonw", "internal/jscan", "internal/payload"}},
	// The core.
	{"adapter", []string{"adapter/control", "framing", "mapping/...", "session/...", "internal/payload", "internal/jsonw"}},
	// The dialects (see dialects), on the core.
	{"adapter/*", []string{"adapter", "adapter/control", "framing", "mapping/...", "session/...", "screen", "internal/payload", "internal/jsonw", "internal/jscan", "internal/version"}},
	// ccbridge serve: the web UI's sessions are ipc dialects, its workers
	// --ui control workers.
	{"serve/webui", nil},
	{"serve", []string{"adapter", "adapter/control", "adapter/ipc", "adapter/worker", "serve/webui", "framing", "mapping/...", "session/...", "internal/cliflags", "internal/jsonw", "internal/payload", "internal/version"}},
	// What the tests share.
	{"internal/adaptertest", []string{"framing", "session/..."}},
	{"internal/controltest", []string{"adapter", "adapter/control", "internal/adaptertest", "mapping/..."}},
	{"e2e", []string{"...", ""}},
	// main: the commands, every dialect, serve and the fake model.
	{"", []string{"..."}},
}

// stdDenied are standard packages a layer may not import: the codecs do
// no I/O, start no goroutines and hold no locks; the core serves no HTTP.
var stdDenied = []struct {
	pkg    string
	denied []string
}{
	{"mapping/...", []string{"os", "os/exec", "os/signal", "net", "net/...", "sync", "sync/atomic", "syscall", "io/fs", "log", "log/slog"}},
	{"adapter", []string{"net/http", "net/http/..."}},
	{"adapter/control", []string{"net/http", "net/http/..."}},
}

// thirdPartyOnly are modules outside the standard library that only the
// packages named may import (their tests included): the NATS client is
// the control plane's (the bus, adapter/control/bus.go), and the NATS
// server is a test fixture of e2e alone, so that it is compiled once in
// a test run and never under -race (the product carries the client
// only).
var thirdPartyOnly = []struct {
	mod string
	may []string
}{
	{"github.com/nats-io/nats.go/...", []string{"adapter/control", "e2e"}},
	{"github.com/nats-io/nats-server/...", []string{"e2e"}},
}

// clockReads are the calls that read the clock or wait on it; the codecs
// make none (a caller passes the time).
var clockReads = []string{"Now", "Since", "Until", "Sleep", "After", "AfterFunc", "Tick", "NewTimer", "NewTicker"}

// match reports whether rel (a package relative to the module, "" for
// the root) matches pattern.
func match(pattern, rel string) bool {
	switch {
	case pattern == "...":
		return true
	case strings.HasSuffix(pattern, "/..."):
		base := strings.TrimSuffix(pattern, "/...")
		return rel == base || strings.HasPrefix(rel, base+"/")
	case strings.HasSuffix(pattern, "/*"):
		ok, _ := path.Match(pattern, rel)
		return ok
	}
	return pattern == rel
}

type pkgInfo struct {
	rel     string
	dir     string
	imports []string
	files   []string
	// tests: the imports of its _test.go files.
	tests bool
}

// testsMay adds what a layer's tests may import besides its rule: the
// codecs' tests cut lines at framing's MaxHead, as the reader does.
var testsMay = []struct{ pkg, may string }{
	{"mapping/...", "framing"},
}

// testHelpers are imported by tests only.
var testHelpers = []string{"internal/adaptertest", "internal/controltest", "internal/golden"}

func listPackages(t *testing.T) []pkgInfo {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .Imports \" \"}}\t{{join .GoFiles \" \"}}\t{{join .TestImports \" \"}} {{join .XTestImports \" \"}}", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkgInfo
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		rel := strings.TrimPrefix(strings.TrimPrefix(f[0], module), "/")
		pkgs = append(pkgs, pkgInfo{rel: rel, dir: f[1], imports: strings.Fields(f[2]), files: strings.Fields(f[3])})
		// A package's tests are held to its rule too, with the test
		// helpers and the package itself (an external test) added.
		pkgs = append(pkgs, pkgInfo{rel: rel, dir: f[1], imports: strings.Fields(f[4]), tests: true})
	}
	return pkgs
}

// violations checks one package's imports against the policy.
func violations(p pkgInfo) []string {
	var bad []string
	rule := -1
	for i, r := range depsPolicy {
		if match(r.pkg, p.rel) {
			rule = i
			break
		}
	}
	if rule < 0 {
		return []string{p.rel + ": no rule in depsPolicy names this package"}
	}
	what := p.rel
	if p.tests {
		what += " (its tests)"
	}
	for _, imp := range p.imports {
		if imp == module || strings.HasPrefix(imp, module+"/") {
			rel := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
			switch {
			case slices.Contains(testHelpers, rel) && !p.tests && !slices.Contains(testHelpers, p.rel):
				bad = append(bad, what+" imports "+rel+", which is for tests only")
			case p.tests && (rel == p.rel || slices.Contains(testHelpers, rel) ||
				slices.ContainsFunc(testsMay, func(t struct{ pkg, may string }) bool { return match(t.pkg, p.rel) && match(t.may, rel) })):
			case !slices.ContainsFunc(depsPolicy[rule].may, func(m string) bool { return match(m, rel) }):
				bad = append(bad, what+" imports "+rel)
			}
			if slices.Contains(dialects, p.rel) && slices.Contains(dialects, rel) {
				bad = append(bad, what+" imports "+rel+": a dialect imports no other dialect")
			}
			continue
		}
		for _, d := range thirdPartyOnly {
			if match(d.mod, imp) && !slices.Contains(d.may, p.rel) {
				bad = append(bad, what+" imports "+imp+", which only "+strings.Join(d.may, " and ")+" may")
			}
		}
		for _, d := range stdDenied {
			if !p.tests && match(d.pkg, p.rel) && slices.ContainsFunc(d.denied, func(m string) bool { return match(m, imp) }) {
				bad = append(bad, what+" imports "+imp)
			}
		}
	}
	return bad
}

func TestDeps(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) < 20 {
		t.Fatalf("go list gave %d packages", len(pkgs))
	}
	for _, p := range pkgs {
		for _, v := range violations(p) {
			t.Error(v)
		}
	}
}

// TestDepsPolicyBites: the policy refuses what it is there to refuse, so
// that a rule that matches nothing cannot pass unnoticed.
func TestDepsPolicyBites(t *testing.T) {
	for _, p := range []pkgInfo{
		{rel: "mapping/ipc", imports: []string{"os"}},
		{rel: "mapping", imports: []string{"sync"}},
		{rel: "adapter", imports: []string{"net/http"}},
		{rel: "adapter", imports: []string{module + "/adapter/ipc"}},
		{rel: "adapter/ipc", imports: []string{module + "/adapter/rpc"}},
		{rel: "adapter/control", imports: []string{module + "/adapter"}},
		{rel: "framing", imports: []string{module + "/session"}},
		{rel: "session", imports: []string{module + "/adapter"}},
		{rel: "mapping/acp", imports: []string{module + "/session"}},
		{rel: "newpackage", imports: nil},
		{rel: "", imports: []string{module + "/internal/adaptertest"}},
		{rel: "adapter/echo", imports: []string{module + "/adapter/ipc"}, tests: true},
		{rel: "serve", imports: []string{"github.com/nats-io/nats.go/jetstream"}},
		{rel: "adapter/control", imports: []string{"github.com/nats-io/nats-server/v2/server"}, tests: true},
	} {
		if len(violations(p)) == 0 {
			t.Errorf("%s importing %v passes the policy", p.rel, p.imports)
		}
	}
	if v := violations(pkgInfo{rel: "adapter/ipc", imports: []string{module + "/adapter", module + "/mapping/ipc", "os"}}); len(v) != 0 {
		t.Errorf("a dialect on the core is refused: %v", v)
	}
}

// TestMappingReadsNoClock: no function of mapping/... reads the clock.
func TestMappingReadsNoClock(t *testing.T) {
	for _, p := range listPackages(t) {
		if !match("mapping/...", p.rel) {
			continue
		}
		for _, name := range p.files {
			for _, call := range clockCalls(t, filepath.Join(p.dir, name)) {
				t.Errorf("%s/%s: %s reads the clock; the caller passes the time", p.rel, name, call)
			}
		}
	}
}

// clockCalls lists the time.X calls of clockReads in a file.
func clockCalls(t *testing.T, file string) []string {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	timePkg := ""
	for _, imp := range f.Imports {
		if imp.Path.Value == `"time"` {
			timePkg = "time"
			if imp.Name != nil {
				timePkg = imp.Name.Name
			}
		}
	}
	if timePkg == "" {
		return nil
	}
	var calls []string
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == timePkg && slices.Contains(clockReads, sel.Sel.Name) {
				calls = append(calls, "time."+sel.Sel.Name)
			}
		}
		return true
	})
	return calls
}

func TestClockCallsFound(t *testing.T) {
	file := filepath.Join(t.TempDir(), "x.go")
	src := "package x\nimport t \"time\"\nfunc f() { _ = t.Now() }\n"
	if err := writeFile(file, src); err != nil {
		t.Fatal(err)
	}
	if got := clockCalls(t, file); !slices.Equal(got, []string{"time.Now"}) {
		t.Errorf("clockCalls = %q, want time.Now", got)
	}
}

func writeFile(name, s string) error { return os.WriteFile(name, []byte(s), 0o644) }
