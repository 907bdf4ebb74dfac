#!/usr/bin/env bash
# Builds a release of ccbridge into dist/ (docs/release.md):
#
#   scripts/release.sh [VERSION]
#
# VERSION defaults to `git describe --tags --always --dirty` (a leading v
# is kept: v1.2.3). For each target, a CGO-free binary, reproducible
# (-trimpath, the commit recorded by -buildvcs, the version stamped with
# -ldflags), archived as ccbridge_<version>_<os>_<arch>.tar.gz (.zip for
# windows) with README.md and LICENSE (if there is one), every file dated
# at the commit's time; ccbridge_<version>_checksums.txt (sha256sum's
# format); the npm packages in dist/npm/ (npm pack); the ACP registry's
# agent.json and icon.svg. The archiving, the npm packages and the
# manifest are internal/release's work.
#
# Environment:
#   CCBRIDGE_RELEASE_TARGETS  GOOS/GOARCH pairs to build (default all six:
#                             darwin, linux, windows on amd64 and arm64)
#   CCBRIDGE_RELEASE_URL      where the archives will be downloaded from
#                             (default https://github.com/ccbridge/ccbridge/releases/download/VERSION/)
#   CCBRIDGE_RELEASE_DIST     the output folder (default dist), emptied first
#   SOURCE_DATE_EPOCH         the archived files' time (default the commit's)
set -euo pipefail
cd "$(dirname "$0")/.."

version=${1:-$(git describe --tags --always --dirty)}
targets=${CCBRIDGE_RELEASE_TARGETS:-}
url=${CCBRIDGE_RELEASE_URL:-https://github.com/ccbridge/ccbridge/releases/download/$version/}
dist=${CCBRIDGE_RELEASE_DIST:-dist}
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The release tool, built once; it refuses a bad version or target before
# anything is built. Static and -trimpath, as ccbridge is below: the two
# builds share the standard library's compiled packages.
CGO_ENABLED=0 go build -trimpath -o "$work/release" ./internal/release
"$work/release" check -version "$version" -targets "$targets"
command -v npm >/dev/null || { echo "release: npm is needed for the npm packages" >&2; exit 1; }

rm -rf "$dist"
mkdir -p "$dist"
start=$SECONDS
for t in $("$work/release" list -targets "$targets"); do
  os=${t%/*} arch=${t#*/}
  exe=ccbridge
  [ "$os" = windows ] && exe=ccbridge.exe
  echo "release: go build $t" >&2
  # -buildvcs=auto records the commit even where GOFLAGS turns it off.
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -buildvcs=auto \
    -ldflags "-s -w -X github.com/ccbridge/ccbridge/internal/version.version=$version" \
    -o "$work/bin/${os}_${arch}/$exe" .
done
echo "release: built in $(( SECONDS - start )) s" >&2

extra=(README.md)
[ -f LICENSE ] && extra+=(LICENSE)
"$work/release" archive -version "$version" -targets "$targets" -epoch "$epoch" -bin "$work/bin" -out "$dist" "${extra[@]}"
"$work/release" npm -version "$version" -dist "$dist"
"$work/release" manifest -version "$version" -dist "$dist" -url "$url" -icon docs/icon.svg
echo "release: $version in $dist/ ($(( SECONDS )) s)" >&2
