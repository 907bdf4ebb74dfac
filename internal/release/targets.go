package main

import (
	"slices"
	"strings"
)

// target is one platform of a release, in Go's names.
type target struct{ os, arch string }

// allTargets are the six platforms a release is built for.
var allTargets = []target{
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"linux", "amd64"}, {"linux", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

func (t target) String() string { return t.os + "/" + t.arch }

// runsCLI reports whether ccbridge starts the Claude Code CLI on the
// target: not on windows, which has no process groups for the session's
// guarantees (session.Start refuses there). agent.json offers an editor
// only these.
func (t target) runsCLI() bool { return t.os != "windows" }

// exe is the binary's name.
func (t target) exe() string {
	if t.os == "windows" {
		return "ccbridge.exe"
	}
	return "ccbridge"
}

// archive is the file name of the target's archive.
func (t target) archive(version string) string {
	ext := ".tar.gz"
	if t.os == "windows" {
		ext = ".zip"
	}
	return "ccbridge_" + version + "_" + t.os + "_" + t.arch + ext
}

// npmOS and npmCPU are Node's process.platform and process.arch, which
// npm's os and cpu fields use.
func (t target) npmOS() string {
	if t.os == "windows" {
		return "win32"
	}
	return t.os
}

func (t target) npmCPU() string {
	if t.arch == "amd64" {
		return "x64"
	}
	return t.arch
}

// npmPackage is the name of the target's npm package.
func (t target) npmPackage() string { return "@ccbridge/" + t.npmOS() + "-" + t.npmCPU() }

// registryPlatform is the ACP registry's name of the platform.
func (t target) registryPlatform() string {
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[t.arch]
	return t.os + "-" + arch
}

// parseTargets reads "linux/amd64 darwin/arm64" (spaces or commas), in
// allTargets' order; all six when s is empty.
func parseTargets(s string) ([]target, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' || r == '\n' })
	if len(fields) == 0 {
		return allTargets, nil
	}
	var ts []target
	for _, f := range fields {
		os, arch, _ := strings.Cut(f, "/")
		t := target{os, arch}
		if !slices.Contains(allTargets, t) {
			names := make([]string, len(allTargets))
			for i, a := range allTargets {
				names[i] = a.String()
			}
			return nil, &InputError{"target", f, "not one of " + strings.Join(names, " ")}
		}
		if !slices.Contains(ts, t) {
			ts = append(ts, t)
		}
	}
	slices.SortFunc(ts, func(a, b target) int { return slices.Index(allTargets, a) - slices.Index(allTargets, b) })
	return ts, nil
}

// targetOfArchive finds the target an archive's file name names.
func targetOfArchive(version, name string) (target, bool) {
	for _, t := range allTargets {
		if t.archive(version) == name {
			return t, true
		}
	}
	return target{}, false
}
