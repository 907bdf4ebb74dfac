// Command crosscheck type-checks packages, with their tests, as the Go
// compiler would for another system: scripts/test.sh runs it for darwin
// and windows, the systems a release is built for beside Linux, where the
// tests do not run. Code that builds on Linux only (a syscall, a field, a
// file without its build tag) fails it.
//
//	go run ./internal/crosscheck -target darwin/amd64 ./...
//
// It is go vet's build step for that system without the compiler: go list
// says which files each package has there (build tags, _GOOS.go names,
// cgo off), and go/types checks them from source. The standard library
// and the other modules are checked for their exported API only (their
// function bodies are skipped); the module's own packages and tests in
// full. A cold go vet for another system compiles the standard library
// for it first, about a minute of two cores' time each (docs/testing.md).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// listed is what go list -json says of a package.
type listed struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	CgoFiles   []string
	Imports    []string
	ImportMap  map[string]string
	Module     *struct{ Main bool }
	Error      *struct{ Err string }
}

func main() {
	target := flag.String("target", "", "GOOS/GOARCH to check for, e.g. darwin/amd64")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: crosscheck -target GOOS/GOARCH packages...")
		flag.PrintDefaults()
	}
	flag.Parse()
	goos, goarch, ok := strings.Cut(*target, "/")
	if !ok || goos == "" || goarch == "" || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	start := time.Now()
	n, errs, err := check(goos, goarch, "", flag.Args())
	if err != nil {
		fmt.Fprintf(os.Stderr, "crosscheck %s: %v\n", *target, err)
		os.Exit(2)
	}
	for _, e := range errs {
		fmt.Fprintln(os.Stderr, e)
	}
	fmt.Printf("crosscheck %s: %d packages with their tests type-checked, %d errors (%.1f s)\n", *target, n, len(errs), time.Since(start).Seconds())
	if len(errs) > 0 {
		os.Exit(1)
	}
}

// check type-checks the packages patterns name, in dir, for goos/goarch.
// It returns how many of the module's own packages (test variants
// included) it checked in full, and the errors found in any package.
func check(goos, goarch, dir string, patterns []string) (int, []string, error) {
	pkgs, err := list(goos, goarch, dir, patterns)
	if err != nil {
		return 0, nil, err
	}
	sizes := types.SizesFor("gc", goarch)
	if sizes == nil {
		return 0, nil, fmt.Errorf("unknown GOARCH %q", goarch)
	}
	fset := token.NewFileSet()
	checked := map[string]*types.Package{"unsafe": types.Unsafe}
	var errs []string
	seen := map[string]bool{}
	report := func(e string) {
		// A package and its test variant share their files.
		if !seen[e] {
			seen[e] = true
			errs = append(errs, e)
		}
	}
	// Only what the module's packages and their tests import is checked:
	// not the test binaries' own imports (testing's closure, for a
	// package whose tests do not import it).
	byPath := make(map[string]*listed, len(pkgs))
	for i := range pkgs {
		byPath[pkgs[i].ImportPath] = &pkgs[i]
	}
	needed := map[string]bool{}
	var need func(path string)
	need = func(path string) {
		p := byPath[path]
		if p == nil || needed[path] {
			return
		}
		needed[path] = true
		for _, imp := range p.Imports {
			need(imp) // go list gives the imports as mapped (vendor/…, test variants)
		}
	}
	for _, p := range pkgs {
		if p.Module != nil && p.Module.Main && !strings.HasSuffix(p.ImportPath, ".test") {
			need(p.ImportPath)
		}
	}
	n := 0
	for _, p := range pkgs {
		if !needed[p.ImportPath] {
			continue
		}
		// The test binaries' generated main packages, and cgo's pseudo
		// package: nothing of the module's own to check.
		if strings.HasSuffix(p.ImportPath, ".test") || p.ImportPath == "unsafe" || p.ImportPath == "C" {
			continue
		}
		own := p.Module != nil && p.Module.Main
		if p.Error != nil {
			report(fmt.Sprintf("%s: %s", p.ImportPath, strings.TrimSpace(p.Error.Err)))
			continue
		}
		if len(p.CgoFiles) > 0 {
			report(fmt.Sprintf("%s: has cgo files with cgo off (%s)", p.ImportPath, strings.Join(p.CgoFiles, ", ")))
			continue
		}
		files := make([]*ast.File, 0, len(p.GoFiles))
		for _, name := range p.GoFiles {
			path := name
			if !filepath.IsAbs(path) {
				path = filepath.Join(p.Dir, name)
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				report(err.Error())
				continue
			}
			files = append(files, f)
		}
		conf := types.Config{
			Sizes:            sizes,
			IgnoreFuncBodies: !own,
			Importer: importerFunc(func(path string) (*types.Package, error) {
				if mapped, ok := p.ImportMap[path]; ok {
					path = mapped
				}
				if pkg := checked[path]; pkg != nil {
					return pkg, nil
				}
				return nil, fmt.Errorf("%s: not type-checked before %s", path, p.ImportPath)
			}),
			Error: func(err error) { report(err.Error()) },
		}
		// The checker's own package path drops the test variant's suffix
		// ("p [p.test]" is package p).
		path, _, _ := strings.Cut(p.ImportPath, " ")
		pkg, _ := conf.Check(path, fset, files, nil)
		checked[p.ImportPath] = pkg
		if own {
			n++
		}
	}
	return n, errs, nil
}

// list runs go list for goos/goarch with cgo off: every package the
// patterns need, their test variants, in dependency order.
func list(goos, goarch, dir string, patterns []string) ([]listed, error) {
	args := append([]string{"list", "-e", "-deps", "-test", "-json=ImportPath,Dir,GoFiles,CgoFiles,Imports,ImportMap,Module,Error"}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list's output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }
