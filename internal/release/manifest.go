package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// agent is an entry of the ACP registry (github.com/agentclientprotocol/
// registry, agent.schema.json; a copy in testdata/acp-registry/). Its
// icon is not a field here: the registry sets it from the icon.svg
// beside agent.json.
type agent struct {
	ID           string       `json:"id"`
	Name         string       `json:"name"`
	Version      string       `json:"version"`
	Description  string       `json:"description"`
	Repository   string       `json:"repository"`
	Authors      []string     `json:"authors"`
	Distribution distribution `json:"distribution"`
}

type distribution struct {
	Binary map[string]binaryTarget `json:"binary"`
	NPX    npxPackage              `json:"npx"`
}

type binaryTarget struct {
	Archive string   `json:"archive"`
	SHA256  string   `json:"sha256"`
	Cmd     string   `json:"cmd"`
	Args    []string `json:"args"`
}

type npxPackage struct {
	Package string   `json:"package"`
	Args    []string `json:"args"`
}

// acpArgs start ccbridge as an ACP agent.
var acpArgs = []string{"--ui", "acp"}

// writeManifest writes dist/agent.json for the archives the archive step
// wrote into dist, each downloaded from baseURL, and dist/icon.svg.
func writeManifest(version, dist, baseURL, iconFile string, w io.Writer) error {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return &InputError{"-url", baseURL, "want an absolute http(s) URL, the folder the archives are downloaded from"}
	}
	if !strings.HasSuffix(baseURL, "/") {
		baseURL += "/"
	}
	icon, err := os.ReadFile(iconFile)
	if err != nil {
		return &InputError{"-icon", iconFile, err.Error()}
	}
	if err := checkIcon(icon); err != nil {
		return &InputError{"-icon", iconFile, err.Error()}
	}
	ts, sums, err := readRelease(version, dist)
	if err != nil {
		return err
	}
	data, err := manifest(version, baseURL, ts, sums)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dist, "icon.svg"), icon, 0o644); err != nil {
		return err
	}
	offered := 0
	for _, t := range ts {
		if t.runsCLI() {
			offered++
		}
	}
	fmt.Fprintf(w, "release: agent.json (%d of the %d platforms: ccbridge starts no CLI on the others)\n", offered, len(ts))
	return os.WriteFile(filepath.Join(dist, "agent.json"), data, 0o644)
}

// manifest is agent.json's text.
func manifest(version, baseURL string, ts []target, sums map[target]string) ([]byte, error) {
	npmv := npmVersion(version)
	a := agent{
		ID:          "ccbridge",
		Name:        "ccbridge",
		Version:     npmv,
		Description: "Claude Code as an ACP agent: the real Claude Code CLI, one child per session, behind a small Go bridge that adds in-band interrupts, a clean shutdown and lines of any size.",
		Repository:  repository,
		Authors:     []string{"The ccbridge authors"},
		Distribution: distribution{
			Binary: map[string]binaryTarget{},
			NPX:    npxPackage{Package: "ccbridge@" + npmv, Args: acpArgs},
		},
	}
	for _, t := range ts {
		if !t.runsCLI() {
			continue // an archive of its own, but no agent an editor could start
		}
		a.Distribution.Binary[t.registryPlatform()] = binaryTarget{
			Archive: baseURL + t.archive(version),
			SHA256:  sums[t],
			Cmd:     "./" + t.exe(),
			Args:    acpArgs,
		}
	}
	data, err := json.MarshalIndent(a, "", "  ")
	return append(data, '\n'), err
}

// checkIcon applies the registry's rules for icon.svg (its CONTRIBUTING.md
// and build_registry.py): an <svg> of 16x16, square, no comments, fill
// and stroke only currentColor, none or inherit, and currentColor used.
func checkIcon(data []byte) error {
	if bytes.Contains(data, []byte("<!--")) {
		return fmt.Errorf("the icon has an XML comment")
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	root := true
	usesCurrent := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("the icon is not XML: %w", err)
		}
		el, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		attr := map[string]string{}
		for _, a := range el.Attr {
			attr[a.Name.Local] = a.Value
		}
		if root {
			root = false
			if el.Name.Local != "svg" {
				return fmt.Errorf("the icon's root is <%s>, not <svg>", el.Name.Local)
			}
			// Its size: width and height when both are given, else the
			// viewBox's, as the registry reads it.
			w, h := size(attr["width"]), size(attr["height"])
			if attr["width"] == "" || attr["height"] == "" {
				w, h = -1, -1
				if vb := strings.Fields(attr["viewBox"]); len(vb) == 4 {
					w, h = size(vb[2]), size(vb[3])
				}
			}
			if w != 16 || h != 16 {
				return fmt.Errorf("the icon is not 16x16 (width %q, height %q, viewBox %q)", attr["width"], attr["height"], attr["viewBox"])
			}
		}
		if el.Name.Local == "style" {
			return fmt.Errorf("the icon has a <style> element; use fill and stroke attributes")
		}
		paint := []string{attr["fill"], attr["stroke"]}
		for _, decl := range strings.Split(attr["style"], ";") {
			if k, v, ok := strings.Cut(decl, ":"); ok && (strings.TrimSpace(k) == "fill" || strings.TrimSpace(k) == "stroke") {
				paint = append(paint, v)
			}
		}
		for _, p := range paint {
			switch strings.ToLower(strings.TrimSpace(p)) {
			case "currentcolor":
				usesCurrent = true
			case "", "none", "inherit":
			default:
				return fmt.Errorf("the icon paints with %q: only currentColor, none or inherit", p)
			}
		}
	}
	if root {
		return fmt.Errorf("the icon is empty")
	}
	if !usesCurrent {
		return fmt.Errorf("the icon does not use currentColor")
	}
	return nil
}

// size reads an SVG length in user units or px ("16", "16px"); -1 if it
// is not one.
func size(s string) float64 {
	f, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "px"), 64)
	if err != nil {
		return -1
	}
	return f
}
