package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The registry's schema, copied from github.com/agentclientprotocol/
// registry (testdata/acp-registry/README.md), and ccbridge's icon.
const (
	schemaFile = "../../testdata/acp-registry/agent.schema.json"
	iconFile   = "../../docs/icon.svg"
)

// agentSchema compiles the registry's schema, with "format" asserted (a
// URL must be a URL), as the registry's Python jsonschema does not by
// default: stricter than the registry.
func agentSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("agent.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("agent.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validate(s *jsonschema.Schema, data []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}

// registryURLVersion is build_registry.py's extract_version_from_url for
// GitHub release URLs: the registry refuses an archive URL whose version
// is not the entry's.
var registryURLVersion = regexp.MustCompile(`/(?:download|releases)/v?([\d.]+)/`)

// TestManifest: dist/agent.json is valid under the registry's schema,
// names each archive in dist with its SHA-256 (the file's and the
// checksums file's), and passes the registry's own checks of a release:
// an x.y.z version, the same version in the archive URLs and the npx
// package.
func TestManifest(t *testing.T) {
	const base = "https://github.com/ccbridge/ccbridge/releases/download/v1.2.3/"
	dist := makeDist(t, "v1.2.3", allTargets, testTime)
	if err := writeManifest("v1.2.3", dist, strings.TrimSuffix(base, "/"), iconFile, io.Discard); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dist, "agent.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := validate(agentSchema(t), data); err != nil {
		t.Fatalf("agent.json is not valid under the registry's schema: %v\n%s", err, data)
	}
	icon, _ := os.ReadFile(filepath.Join(dist, "icon.svg"))
	if want, _ := os.ReadFile(iconFile); !bytes.Equal(icon, want) {
		t.Errorf("dist/icon.svg is not %s", iconFile)
	}
	checkManifest(t, dist, "v1.2.3", data, 4)

	var a agent
	if err := json.Unmarshal(data, &a); err != nil {
		t.Fatal(err)
	}
	if a.ID != "ccbridge" || a.Version != "1.2.3" || a.Distribution.NPX.Package != "ccbridge@1.2.3" ||
		!slices.Equal(a.Distribution.NPX.Args, []string{"--ui", "acp"}) || a.Repository != repository {
		t.Errorf("agent.json: %s", data)
	}
	for p, b := range a.Distribution.Binary {
		if strings.HasPrefix(p, "windows-") {
			t.Errorf("%s is offered, but ccbridge does not start the CLI on windows", p)
		}
		m := registryURLVersion.FindStringSubmatch(b.Archive)
		if m == nil || m[1] != a.Version || !strings.HasPrefix(b.Archive, base) || strings.Contains(b.Archive, "/latest/") {
			t.Errorf("%s: archive URL %s: the registry wants version %s in it", p, b.Archive, a.Version)
		}
		if b.Cmd != "./ccbridge" || !slices.Equal(b.Args, []string{"--ui", "acp"}) {
			t.Errorf("%s: cmd %q args %q", p, b.Cmd, b.Args)
		}
	}
	for _, part := range strings.Split(a.Version, ".")[:3] {
		if strings.Trim(part, "0123456789") != "" {
			t.Errorf("version %q: the registry wants x.y.z of digits", a.Version)
		}
	}
}

// checkManifest checks that agent.json names n platforms and that each
// archive it names is in dist, under its name, with the SHA-256 the
// manifest and the checksums file give.
func checkManifest(t *testing.T, dist, version string, data []byte, n int) {
	t.Helper()
	var a agent
	if err := json.Unmarshal(data, &a); err != nil {
		t.Fatal(err)
	}
	if len(a.Distribution.Binary) != n {
		t.Errorf("agent.json names %d platforms, want %d", len(a.Distribution.Binary), n)
	}
	sums, err := os.ReadFile(filepath.Join(dist, checksumsName(version)))
	if err != nil {
		t.Fatal(err)
	}
	for p, b := range a.Distribution.Binary {
		u, err := url.Parse(b.Archive)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		name := path.Base(u.Path)
		archive, err := os.ReadFile(filepath.Join(dist, name))
		if err != nil {
			t.Errorf("%s: the archive %s is not in dist: %v", p, name, err)
			continue
		}
		sum := sha256.Sum256(archive)
		hexSum := hex.EncodeToString(sum[:])
		if b.SHA256 != hexSum {
			t.Errorf("%s: sha256 %s, the file's is %s", p, b.SHA256, hexSum)
		}
		if !bytes.Contains(sums, []byte(hexSum+"  "+name+"\n")) {
			t.Errorf("%s: %s is not in the checksums file with its SHA-256", p, name)
		}
		if tg, ok := targetOfArchive(version, name); !ok || tg.registryPlatform() != p {
			t.Errorf("%s names %s, another platform's archive", p, name)
		}
	}
}

// TestSchemaBites: the schema refuses what the registry refuses; so a
// manifest that passes is checked.
func TestSchemaBites(t *testing.T) {
	s := agentSchema(t)
	dist := makeDist(t, "v1.2.3", allTargets[:1], testTime)
	_, sums, err := readRelease("v1.2.3", dist)
	if err != nil {
		t.Fatal(err)
	}
	good, err := manifest("v1.2.3", "https://example.com/v1.2.3/", allTargets[:1], sums)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate(s, good); err != nil {
		t.Fatalf("the good manifest fails: %v", err)
	}
	for _, tc := range []struct{ name, from, to string }{
		{"no version", `"version": "1.2.3",`, ``},
		{"no distribution", `"distribution"`, `"distributio"`},
		{"a version that is not x.y.z", `"version": "1.2.3"`, `"version": "v1.2"`},
		{"an id in capitals", `"id": "ccbridge"`, `"id": "CCBridge"`},
		{"an unknown platform", `"darwin-x86_64"`, `"darwin-amd64"`},
		{"a sha256 that is not one", `"sha256": "`, `"sha256": "z`},
		{"an archive that is no URL", `"archive": "https://example.com/`, `"archive": "https://exa mple.com/`},
		{"no cmd", `"cmd"`, `"command"`},
		{"an unknown distribution", `"npx"`, `"pipx"`},
	} {
		bad := strings.Replace(string(good), tc.from, tc.to, 1)
		if bad == string(good) {
			t.Fatalf("%s: %q is not in the manifest", tc.name, tc.from)
		}
		if err := validate(s, []byte(bad)); err == nil {
			t.Errorf("%s: the schema takes it", tc.name)
		}
	}
}

func TestManifestRefuses(t *testing.T) {
	dist := makeDist(t, "v1", allTargets[:1], testTime)
	for _, tc := range []struct{ name, url, icon string }{
		{"a relative URL", "releases/v1/", iconFile},
		{"not http", "file:///tmp/", iconFile},
		{"no icon", "https://example.com/", "no-such.svg"},
	} {
		var in *InputError
		if err := writeManifest("v1", dist, tc.url, tc.icon, io.Discard); !errors.As(err, &in) {
			t.Errorf("%s: %v, want an InputError", tc.name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dist, "agent.json")); err == nil {
		t.Error("agent.json written after all")
	}
}

// TestIcon: ccbridge's icon meets the registry's rules, which checkIcon
// applies; and checkIcon refuses what breaks them.
func TestIcon(t *testing.T) {
	icon, err := os.ReadFile(iconFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkIcon(icon); err != nil {
		t.Errorf("%s: %v", iconFile, err)
	}
	const ok = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 16 16"><path fill="currentColor" d="M0 0h16v16H0z"/></svg>`
	if err := checkIcon([]byte(ok)); err != nil {
		t.Fatalf("the good icon: %v", err)
	}
	for _, tc := range []struct{ name, from, to string }{
		{"a colour", `fill="currentColor"`, `fill="#ff0000"`},
		{"a named colour in style", `fill="currentColor"`, `style="fill: red"`},
		{"a stroke colour", `fill="currentColor"`, `fill="currentColor" stroke="black"`},
		{"no currentColor", `fill="currentColor"`, `fill="none"`},
		{"32x32", `width="16" height="16"`, `width="32" height="32"`},
		{"not square", `width="16" height="16" viewBox="0 0 16 16"`, `viewBox="0 0 16 12"`},
		{"a comment", `<path`, `<!-- x --><path`},
		{"not svg", `<svg`, `<g`},
		{"a style element", `<path`, `<style>path{fill:red}</style><path`},
		{"not XML", `/></svg>`, `>`},
	} {
		bad := strings.Replace(ok, tc.from, tc.to, 1)
		if tc.name == "not svg" {
			bad = strings.Replace(bad, "</svg>", "</g>", 1)
		}
		if err := checkIcon([]byte(bad)); err == nil {
			t.Errorf("%s: checkIcon takes %s", tc.name, bad)
		}
	}
	// Size from the viewBox alone, as the registry reads it.
	if err := checkIcon([]byte(strings.Replace(ok, `width="16" height="16" `, ``, 1))); err != nil {
		t.Errorf("an icon sized by its viewBox: %v", err)
	}
}
