package main

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// versionRE is what a release version may be: it becomes part of file
// names, a URL and an -ldflags -X value, so no slash, space or quote.
var versionRE = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z._+-]*$`)

// checkVersion refuses a version that cannot name files and URLs.
func checkVersion(v string) error {
	switch {
	case v == "":
		return &InputError{"version", v, "missing"}
	case len(v) > 128:
		return &InputError{"version", v[:32] + "…", "longer than 128 bytes"}
	case !versionRE.MatchString(v):
		return &InputError{"version", v, "only letters, digits and . _ + - are allowed, starting with a letter or digit"}
	}
	return nil
}

// semverRE is semver.org's regular expression for a version.
var semverRE = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
	`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

// npmVersion is the release version as npm and the ACP registry want it:
// semver without the leading v ("v1.2.3" is 1.2.3). A version that is not
// semver (a commit from git describe, "408ee76-dirty") becomes a
// pre-release of 0.0.0: 0.0.0-dev.408ee76-dirty.
func npmVersion(v string) string {
	s := strings.TrimPrefix(v, "v")
	if semverRE.MatchString(s) {
		return s
	}
	ids := []string{"dev"}
	for id := range strings.FieldsFuncSeq(v, func(r rune) bool {
		return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-')
	}) {
		// A numeric identifier may not start with 0: a commit of digits
		// only gets git describe's g.
		if len(id) > 1 && id[0] == '0' && strings.Trim(id, "0123456789") == "" {
			id = "g" + id
		}
		ids = append(ids, id)
	}
	return "0.0.0-" + strings.Join(ids, ".")
}

// parseEpoch reads the archived files' time: seconds since 1970, as
// SOURCE_DATE_EPOCH and git log --format=%ct give it.
func parseEpoch(s string) (time.Time, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > 1<<33 {
		return time.Time{}, &InputError{"-epoch", s, "want seconds since 1970 (git log -1 --format=%ct)"}
	}
	return time.Unix(n, 0).UTC(), nil
}
