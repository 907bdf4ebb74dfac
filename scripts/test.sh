#!/usr/bin/env bash
# Runs every test: format and vet checks, the unit tests and the end-to-end
# tests (./e2e) against the real Claude Code CLI (installed into .tools/
# when missing), all under the race detector, then each fuzz target for
# FUZZTIME (default 5s: 14 targets stay within 2 minutes; FUZZTIME=5m
# ./scripts/test.sh fuzzes longer). CI runs exactly this (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZTIME=${FUZZTIME:-5s}

# A program built with -race sleeps 1 s before it exits, so that a race
# reported late is still printed (atexit_sleep_ms, default 1000). The
# tests start race-built processes by the hundred (ccbridge itself, the
# fake CLIs): 50 ms is enough to flush a report and saves minutes.
export GORACE=${GORACE:-atexit_sleep_ms=50}

# step prints how long the previous step took.
step_start=$SECONDS
step() {
  echo "   ($(( SECONDS - step_start )) s)"
  step_start=$SECONDS
}

echo "== tools (.tools/)"
CCBRIDGE_TEST_CLAUDE=$(scripts/install-tools.sh)
export CCBRIDGE_TEST_CLAUDE
step

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'; git ls-files --others --exclude-standard '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt would change: $unformatted"; exit 1; fi
step

echo "== go vet"
go vet ./...
step

echo "== go build"
CGO_ENABLED=0 go build -o bin/ccbridge .
step

echo "== go test -race (unit and end-to-end against the real CLI)"
go test -race -count=1 -timeout 15m ./...
step

echo "== fuzz ($FUZZTIME each)"
for target in $(grep -rhoE '^func (Fuzz[A-Za-z0-9_]+)' --include='*_test.go' . | sed 's/^func //' | sort -u); do
  pkg=$(dirname "$(grep -rlE "^func $target\(" --include='*_test.go' . | head -1)")
  echo "-- $target in $pkg"
  go test -run='^$' -fuzz="^$target\$" -fuzztime="$FUZZTIME" "$pkg"
done
step
echo "all tests passed in $SECONDS s"
