package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/template"
)

// repository is where ccbridge's source lives.
const repository = "https://github.com/ccbridge/ccbridge"

// writeNPM writes the npm packages into dist/npm with npm pack, from the
// archives in dist: one package per platform, @ccbridge/<os>-<cpu>
// holding the binary at bin/ccbridge[.exe] with os and cpu set, so that
// npm installs only the one that fits; and ccbridge, whose launcher
// (bin/ccbridge.js) runs that binary and whose optionalDependencies name
// every platform package at exactly this version. Nothing is fetched at
// install time (no postinstall).
func writeNPM(version, dist string, w io.Writer) error {
	ts, _, err := readRelease(version, dist)
	if err != nil {
		return err
	}
	npmv := npmVersion(version)
	stage, err := os.MkdirTemp("", "ccbridge-npm-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	outDir, err := filepath.Abs(filepath.Join(dist, "npm"))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	var dirs []string
	for _, t := range ts {
		archive, err := os.ReadFile(filepath.Join(dist, t.archive(version)))
		if err != nil {
			return err
		}
		bin, err := extractBinary(t, archive)
		if err != nil {
			return fmt.Errorf("%s: %w", t.archive(version), err)
		}
		dir := filepath.Join(stage, t.npmOS()+"-"+t.npmCPU())
		if err := writePackage(dir, platformManifest(t, npmv), map[string]file{
			"bin/" + t.exe(): {bin, 0o755},
			"README.md":      {[]byte(fmt.Sprintf("# %s\n\nThe %s %s binary of [ccbridge](%s), version %s. Install `ccbridge`, which depends on it.\n", t.npmPackage(), t.npmOS(), t.npmCPU(), repository, npmv)), 0o644},
		}); err != nil {
			return err
		}
		dirs = append(dirs, dir)
	}
	launcher, err := launcherJS(ts, npmv)
	if err != nil {
		return err
	}
	dir := filepath.Join(stage, "ccbridge")
	if err := writePackage(dir, mainManifest(ts, npmv), map[string]file{
		"bin/ccbridge.js": {launcher, 0o755},
		"README.md":       {[]byte(fmt.Sprintf("# ccbridge\n\nccbridge %s: the Claude Code CLI behind the protocol your UI speaks (stream-json, ipc, rpc, ACP, a control lane, a web UI). See %s.\n\nnpm installs the binary for your platform as an optional dependency (@ccbridge/<os>-<cpu>); nothing is downloaded at install time.\n", npmv, repository)), 0o644},
	}); err != nil {
		return err
	}
	dirs = append(dirs, dir)
	for _, d := range dirs {
		cmd := exec.Command("npm", "pack", "--pack-destination", outDir, "--ignore-scripts", "--offline", "--loglevel=error")
		cmd.Dir = d
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = w, &stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("npm pack in %s: %w: %s", filepath.Base(d), err, strings.TrimSpace(stderr.String()))
		}
	}
	return nil
}

// file is a package's file and its mode.
type file struct {
	data []byte
	mode os.FileMode
}

func writePackage(dir string, manifest map[string]any, files map[string]file) error {
	pj, err := json.MarshalIndent(manifest, "", "  ")
	if err != nil {
		return err
	}
	files["package.json"] = file{append(pj, '\n'), 0o644}
	for name, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.data, f.mode); err != nil {
			return err
		}
		// WriteFile's mode is masked by the umask.
		if err := os.Chmod(p, f.mode); err != nil {
			return err
		}
	}
	return nil
}

func repositoryField() map[string]string {
	return map[string]string{"type": "git", "url": "git+" + repository + ".git"}
}

// platformManifest is a platform package's package.json.
func platformManifest(t target, npmv string) map[string]any {
	return map[string]any{
		"name":            t.npmPackage(),
		"version":         npmv,
		"description":     fmt.Sprintf("The %s %s binary of ccbridge.", t.npmOS(), t.npmCPU()),
		"repository":      repositoryField(),
		"os":              []string{t.npmOS()},
		"cpu":             []string{t.npmCPU()},
		"files":           []string{"bin/"},
		"preferUnplugged": true,
	}
}

// mainManifest is the ccbridge package's package.json.
func mainManifest(ts []target, npmv string) map[string]any {
	opt := map[string]string{}
	for _, t := range ts {
		opt[t.npmPackage()] = npmv
	}
	return map[string]any{
		"name":                 "ccbridge",
		"version":              npmv,
		"description":          "The Claude Code CLI behind the protocol your UI speaks: stream-json, ipc, rpc, ACP, a control lane, a web UI.",
		"repository":           repositoryField(),
		"bin":                  map[string]string{"ccbridge": "bin/ccbridge.js"},
		"files":                []string{"bin/"},
		"engines":              map[string]string{"node": ">=18"},
		"optionalDependencies": opt,
	}
}

// launcherJS is bin/ccbridge.js: it finds the platform package's binary
// with require.resolve and runs it with stdio inherited, forwards SIGINT
// (unless its stdin is a terminal, whose Ctrl-C reaches ccbridge itself),
// SIGTERM and SIGHUP to it, and exits as it did: with its code, or by its
// signal, raised again.
func launcherJS(ts []target, npmv string) ([]byte, error) {
	type platform struct{ Key, Package, Exe string }
	var ps []platform
	for _, t := range ts {
		ps = append(ps, platform{t.npmOS() + " " + t.npmCPU(), t.npmPackage(), t.exe()})
	}
	var b bytes.Buffer
	err := launcherTemplate.Execute(&b, map[string]any{"Platforms": ps, "Version": npmv})
	return b.Bytes(), err
}

var launcherTemplate = template.Must(template.New("launcher").Parse(`#!/usr/bin/env node
// ccbridge's launcher ({{.Version}}): runs the native binary of the
// platform package npm installed beside this one (an optional dependency,
// chosen by its os and cpu fields). Generated by internal/release.
'use strict';
const { spawn } = require('node:child_process');
const os = require('node:os');
const path = require('node:path');

const platforms = {
{{- range .Platforms}}
  '{{.Key}}': ['{{.Package}}', '{{.Exe}}'],
{{- end}}
};

const key = process.platform + ' ' + process.arch;
const entry = platforms[key];
if (!entry) {
  process.stderr.write('ccbridge: there is no ccbridge binary for ' + key + ' (Node\'s process.platform and process.arch); ' +
    'there is one for: ' + Object.keys(platforms).join(', ') + '\n');
  process.exit(1);
}
const [pkg, exe] = entry;
let bin;
try {
  bin = path.join(path.dirname(require.resolve(pkg + '/package.json')), 'bin', exe);
} catch (err) {
  process.stderr.write('ccbridge: the package ' + pkg + '@{{.Version}}, which holds the ccbridge binary for ' + key +
    ', is not installed. npm installs it with ccbridge as an optional dependency: install again without ' +
    '--omit=optional (or --no-optional), or install ' + pkg + '@{{.Version}} beside ccbridge.\n');
  process.exit(1);
}

const forwarded = ['SIGINT', 'SIGTERM', 'SIGHUP'];
// The handlers come first: a signal between the spawn and them would end
// Node by its default action and leave ccbridge running on its own.
let child;
// At a terminal, Ctrl-C reaches ccbridge itself (the terminal signals its
// whole foreground process group): forwarded too, it would come twice,
// which ccbridge takes for "stop" rather than "interrupt the turn".
const atTerminal = require('tty').isatty(0);
for (const sig of forwarded) {
  process.on(sig, () => {
    if (sig === 'SIGINT' && atTerminal) {
      return;
    }
    try {
      child.kill(sig);
    } catch {
      // The child is gone; its exit event ends this process.
    }
  });
}
child = spawn(bin, process.argv.slice(2), { stdio: 'inherit' });
child.on('error', (err) => {
  process.stderr.write('ccbridge: cannot run ' + bin + ': ' + err.message + '\n');
  process.exit(1);
});
child.on('exit', (code, signal) => {
  if (signal) {
    // Die by the same signal, so that the parent sees what ccbridge did;
    // where it does not kill Node (SIGPIPE), exit as a shell would.
    for (const sig of forwarded) process.removeAllListeners(sig);
    process.kill(process.pid, signal);
    process.exit(128 + (os.constants.signals[signal] || 0));
  }
  process.exit(code);
});
`))
