// Command release makes ccbridge's release files from the binaries that
// scripts/release.sh built: the archives and their checksums, the npm
// packages and the ACP registry's agent.json (docs/release.md). Each step
// after the first reads what the one before it wrote to the dist folder,
// so that the npm packages and the manifest name exactly the archives'
// binaries.
//
//	release check -version V [-targets T]
//	release list [-targets T]
//	release archive -version V -epoch SECONDS -bin DIR -out DIST [-targets T] [FILE...]
//	release npm -version V -dist DIST
//	release manifest -version V -dist DIST -url BASE -icon FILE
//
// T is a list of GOOS/GOARCH pairs ("linux/amd64 darwin/arm64"), all six
// when empty. DIR holds each target's binary as DIR/GOOS_GOARCH/ccbridge
// (ccbridge.exe for windows). It exits 2 on bad input, 1 on any other
// failure.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
)

// InputError is bad input: a flag, a version, a target, a file the caller
// named. The caller can mend it; nothing was written that depends on it.
type InputError struct {
	What   string // what was given: "version", "target", "-epoch", …
	Value  string
	Reason string
}

func (e *InputError) Error() string {
	return fmt.Sprintf("%s %q: %s", e.What, e.Value, e.Reason)
}

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		log.Error("release failed", "err", err.Error())
		var in *InputError
		if errors.As(err, &in) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

const usage = `usage:
  release check -version V [-targets T]
  release list [-targets T]
  release archive -version V -epoch SECONDS -bin DIR -out DIST [-targets T] [FILE...]
  release npm -version V -dist DIST
  release manifest -version V -dist DIST -url BASE -icon FILE`

// run runs one step. stdout gets list's targets and nothing else;
// progress goes to w.
func run(args []string, stdout, w io.Writer) error {
	if len(args) == 0 {
		return &InputError{"command", "", "missing; " + usage}
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(w)
	version := fs.String("version", "", "the release version (a leading v is kept)")
	targets := fs.String("targets", "", "GOOS/GOARCH pairs, space or comma separated (default: all six)")
	epoch := fs.String("epoch", "", "archive: the archived files' time, in seconds since 1970 (the commit's time)")
	bin := fs.String("bin", "", "archive: the folder of the built binaries, DIR/GOOS_GOARCH/ccbridge[.exe]")
	out := fs.String("out", "", "archive: the dist folder to write")
	dist := fs.String("dist", "", "npm, manifest: the dist folder the archive step wrote")
	baseURL := fs.String("url", "", "manifest: the URL the archives are downloaded from (the release's)")
	icon := fs.String("icon", "", "manifest: the registry icon (16x16, currentColor SVG)")
	if err := fs.Parse(args[1:]); err != nil {
		return &InputError{"flags", strings.Join(args[1:], " "), err.Error()}
	}
	if args[0] == "list" {
		ts, err := parseTargets(*targets)
		for _, t := range ts {
			fmt.Fprintln(stdout, t)
		}
		return err
	}
	if err := checkVersion(*version); err != nil {
		return err
	}
	need := func(name, v string) error {
		if v == "" {
			return &InputError{"-" + name, "", "missing"}
		}
		return nil
	}
	switch args[0] {
	case "check":
		_, err := parseTargets(*targets)
		return err
	case "archive":
		ts, err := parseTargets(*targets)
		if err != nil {
			return err
		}
		if err := errors.Join(need("bin", *bin), need("out", *out)); err != nil {
			return err
		}
		mtime, err := parseEpoch(*epoch)
		if err != nil {
			return err
		}
		return writeArchives(*version, ts, *bin, *out, fs.Args(), mtime, w)
	case "npm":
		if err := need("dist", *dist); err != nil {
			return err
		}
		return writeNPM(*version, *dist, w)
	case "manifest":
		if err := errors.Join(need("dist", *dist), need("url", *baseURL), need("icon", *icon)); err != nil {
			return err
		}
		return writeManifest(*version, *dist, *baseURL, *icon, w)
	}
	return &InputError{"command", args[0], "unknown; " + usage}
}
