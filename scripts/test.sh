#!/usr/bin/env bash
# Runs every test: the format check, go vet (every analyzer), the unit
# tests under the race detector and the end-to-end tests (./e2e, with
# ccbridge built under the race detector) against the real Claude Code
# CLI (installed into .tools/ when missing), the real Codex CLI and
# Gemini CLI against the fake model (scripts/install-agents.sh) and, for
# the web UI, headless Chromium (installed by scripts/install-browser.sh),
# then the static build, a type-check of every package for darwin and
# windows (the release's other systems: internal/crosscheck), and each
# fuzz target for FUZZTIME (default 1s, two targets at a time; FUZZTIME=5m
# ./scripts/test.sh fuzzes longer). CI runs exactly this (.ci/run). It
# must stay within 6 minutes on a 2-core machine with an empty build
# cache (docs/testing.md, "Measured").
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZTIME=${FUZZTIME:-1s}
FUZZJOBS=${FUZZJOBS:-2}

# A program built with -race sleeps 1 s before it exits, so that a race
# reported late is still printed (atexit_sleep_ms, default 1000). The
# tests start race-built processes by the hundred (ccbridge itself, the
# fake CLIs): 50 ms is enough to flush a report and saves minutes.
export GORACE=${GORACE:-atexit_sleep_ms=50}

# The compilers and the type-checker run with less garbage collection:
# with the heap grown to 4 times its live size before a collection, a
# cold build of ./e2e took 120.7 CPU-seconds rather than 146.3 (the
# largest compile's peak RSS under 2 GB; docs/testing.md). Only the build
# commands get it; the tests run with Go's default.
BUILD_GOGC=${BUILD_GOGC:-400}

# step prints how long the previous step took.
step_start=$SECONDS
step() {
  echo "   ($(( SECONDS - step_start )) s)"
  step_start=$SECONDS
}

work=$(mktemp -d)
bg_pids=()
cleanup() {
  for pid in "${bg_pids[@]}"; do kill -- "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# The browser of the web UI's tests (Debian's chromium) installs in the
# background meanwhile: its download overlaps the steps up to go test.
scripts/install-browser.sh >"$work/browser.out" 2>"$work/browser.log" &
browser_pid=$!
bg_pids+=("$browser_pid")

# The tools (npm, mostly waiting on the disk and the registry) install in
# the background too, while the tests are compiled (below).
scripts/install-tools.sh >"$work/tools.out" 2>"$work/tools.log" &
tools_pid=$!
bg_pids+=("$tools_pid")
scripts/install-agents.sh >"$work/agents.out" 2>"$work/agents.log" &
agents_pid=$!
bg_pids+=("$agents_pid")

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'; git ls-files --others --exclude-standard '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt would change: $unformatted"; exit 1; fi
step

echo "== compile and vet (go test -run '^$'), while the tools install"
# What the test commands below build, built once now, while npm installs
# the tools: the race-built unit tests (with vet), and ./e2e as those
# commands build it, whose TestMain builds the race-built ccbridge. They
# then find it all in the build cache. The end-to-end tests start as soon
# as ./e2e is built and the tools are there; the unit tests once their
# own build is done (two go commands building the same packages at once
# would each build them).
units=$(go list ./... | grep -vx "$(go list ./e2e)")
GOGC=$BUILD_GOGC go test -race -vet=all -count=1 -run '^$' $units >"$work/prewarm.log" 2>&1 &
prewarm_units=$!
bg_pids+=("$prewarm_units")
GOGC=$BUILD_GOGC CGO_ENABLED=0 CCBRIDGE_E2E_RACE=1 go test -trimpath -vet=all -count=1 -run '^$' ./e2e >"$work/prewarm-e2e.log" 2>&1 || {
  cat "$work/prewarm-e2e.log"; exit 1; }
step

echo "== tools (.tools/, started in the background)"
if ! wait "$tools_pid"; then cat "$work/tools.log" "$work/tools.out"; echo "scripts/install-tools.sh failed"; exit 1; fi
cat "$work/tools.log"
CCBRIDGE_TEST_CLAUDE=$(tail -n 1 "$work/tools.out")
export CCBRIDGE_TEST_CLAUDE
echo "   $CCBRIDGE_TEST_CLAUDE"
if ! wait "$agents_pid"; then cat "$work/agents.log" "$work/agents.out"; echo "scripts/install-agents.sh failed"; exit 1; fi
cat "$work/agents.log"
# One line per agent, name=path.
CCBRIDGE_TEST_CODEX=$(sed -n 's/^codex=//p' "$work/agents.out")
CCBRIDGE_TEST_GEMINI=$(sed -n 's/^gemini=//p' "$work/agents.out")
export CCBRIDGE_TEST_CODEX CCBRIDGE_TEST_GEMINI
echo "   $CCBRIDGE_TEST_CODEX"
echo "   $CCBRIDGE_TEST_GEMINI"
step

echo "== browser (scripts/install-browser.sh, started in the background)"
if wait "$browser_pid"; then
  CCBRIDGE_TEST_CHROMIUM=$(tail -n 1 "$work/browser.out")
  export CCBRIDGE_TEST_CHROMIUM
  echo "   $CCBRIDGE_TEST_CHROMIUM"
else
  cat "$work/browser.log" "$work/browser.out"
  echo "scripts/install-browser.sh failed"
  # CI never skips a test; elsewhere the browser tests skip, saying why.
  if [ "${CI:-}" = true ]; then exit 1; fi
  echo "   (the browser tests will skip: no Chromium)"
fi
step

# The fuzz targets: each package with a func Fuzz… in its test files
# (found with go list, so wherever the packages move), and its targets as
# its test binary lists them. A name is unique within its package only
# (lane000, lane001 and lane004 each have a FuzzDecode).
fuzz_pkgs=$(go list -f '{{.ImportPath}}{{"\t"}}{{.Dir}}{{range .TestGoFiles}}{{"\t"}}{{.}}{{end}}{{range .XTestGoFiles}}{{"\t"}}{{.}}{{end}}' ./... |
  while IFS=$'\t' read -r -a f; do
    if [ "${#f[@]}" -gt 2 ] && (cd "${f[1]}" && grep -qE '^func Fuzz[A-Za-z0-9_]+\(' "${f[@]:2}"); then
      printf '%s\t%s\n' "${f[0]}" "${f[1]}"
    fi
  done)

# fuzz_build builds each fuzzed package's test binary once, with the
# fuzzing instrumentation (go test -c -fuzz; go test -fuzz would build it
# once per target), as $work/fuzzN.test.
fuzz_build() {
  local n=0 pkg dir
  while IFS=$'\t' read -r pkg dir; do
    n=$((n + 1))
    # Built already (in the background, below): not linked again. Each
    # binary appears whole or not at all.
    [ -x "$work/fuzz$n.test" ] && continue
    GOGC=$BUILD_GOGC go test -c -fuzz=. -o "$work/fuzz$n.tmp" "$pkg" && mv "$work/fuzz$n.tmp" "$work/fuzz$n.test" || return 1
  done <<<"$fuzz_pkgs"
}

# cross_check type-checks every package with its tests for darwin and
# windows (amd64), the systems a release is built for beside linux
# (scripts/release.sh), so that code that builds on Linux only is found
# here: internal/crosscheck, go list's files for that system checked by
# go/types from source. (go vet for another system compiles the standard
# library for it first: about a minute of both cores each, cold;
# docs/testing.md.) ./e2e is left out for windows: it drives ccbridge
# with POSIX signals and process groups, and ccbridge starts no CLI on
# windows (README.md, "Platforms").
cross_check() {
  GOGC=$BUILD_GOGC CGO_ENABLED=0 go build -trimpath -o "$work/crosscheck" ./internal/crosscheck &&
    GOGC=$BUILD_GOGC "$work/crosscheck" -target darwin/amd64 ./... &&
    GOGC=$BUILD_GOGC "$work/crosscheck" -target windows/amd64 $(go list ./... | grep -vx "$(go list ./e2e)")
}

# While the tests run, at the lowest priority (the tests keep the CPU), the
# static build, the fuzz binaries and the darwin and windows check fill
# the cycles the tests leave idle.
# Stopped when the tests end, and done again in the foreground from the
# build cache: what this finished is not built twice, and a check that
# passed here ($work/crosscheck.ok) is not run again.
set -m # its own process group, to stop it whole
(
  renice -n 19 -p "$BASHPID" >/dev/null
  GOGC=$BUILD_GOGC CGO_ENABLED=0 go build -trimpath -o "$work/ccbridge" . && fuzz_build &&
    cross_check >"$work/crosscheck.log" 2>&1 && touch "$work/crosscheck.ok"
) >"$work/prebuild.log" 2>&1 &
prebuild_pid=$!
set +m
bg_pids+=("-$prebuild_pid")

echo "== go test -vet=all (unit tests under -race; end to end against the real CLI, ccbridge under -race)"
# Two go commands at once. ./e2e, the longest, starts first. Its test
# binary is built as the static build is (CGO_ENABLED=0, -trimpath), so
# that the two share their compiled packages, and the ccbridge it runs is
# built with -race (CCBRIDGE_E2E_RACE=1): the race detector watches the
# product in every end-to-end flow, while the harness (the fake model, the
# browser's protocol client, the fake CLIs) runs at full speed. The rest:
# vet and the unit tests under -race in one command (vet's type
# information comes from the race-built packages the tests link).
CGO_ENABLED=0 CCBRIDGE_E2E_RACE=1 go test -trimpath -vet=all -count=1 -timeout 15m ./e2e &
e2e_pid=$!
bg_pids+=("$e2e_pid")
tests_ok=true
if wait "$prewarm_units"; then
  go test -race -vet=all -count=1 -timeout 15m $units || tests_ok=false
else
  cat "$work/prewarm.log"
  tests_ok=false
fi
wait "$e2e_pid" || tests_ok=false
step
kill -- "-$prebuild_pid" 2>/dev/null || true
wait "$prebuild_pid" 2>/dev/null || true
if [ "$tests_ok" != true ]; then echo "go test failed (FAIL above)"; exit 1; fi

# -trimpath, as a release is built: e2e's TestRelease runs
# scripts/release.sh for this system, and the two builds share their
# compiled packages through the build cache.
echo "== go build (static)"
GOGC=$BUILD_GOGC CGO_ENABLED=0 go build -trimpath -o bin/ccbridge .
step

echo "== darwin and windows (internal/crosscheck: type-checked from source)"
if [ -f "$work/crosscheck.ok" ]; then
  cat "$work/crosscheck.log"
  echo "   (checked while the tests ran)"
else
  cross_check
fi
step

echo "== fuzz ($FUZZTIME each, $FUZZJOBS at a time)"
fuzz_build
step
fuzzcache=$(go env GOCACHE)/fuzz

# fuzz_one fuzzes one target for FUZZTIME with one worker, printing what
# go test -fuzz would.
fuzz_one() {
  local pkg=$1 dir=$2 bin=$3 target=$4 budget=$FUZZTIME attempt start out execs
  echo "-- $target in $pkg"
  # Go 1.26's fuzzing coordinator can fail a target with a bare "context
  # deadline exceeded" when the -fuzztime duration runs out while a worker
  # is mid-call (go.dev/issue/75804, fixed in Go 1.27): no input is
  # written then. Such a run is done again with the number of executions
  # the failed one reached (-fuzztime Nx), a budget with no deadline to
  # race, so the same work is done; a real finding (an input written to
  # testdata/fuzz/, a panic, a failed check) fails at once.
  for attempt in 1 2; do
    # As go test -fuzz runs it: in the package's folder (its
    # testdata/fuzz/), the corpus cache in the build cache's fuzz/.
    start=$SECONDS
    if out=$(cd "$dir" && "$bin" -test.paniconexit0 -test.run='^$' -test.fuzz="^$target\$" -test.fuzztime="$budget" \
      -test.parallel=1 -test.fuzzcachedir="$fuzzcache/$pkg" 2>&1); then
      echo "$out" | tail -2 | grep -v '^PASS$' || true
      echo "ok  	$pkg	$target	$(( SECONDS - start )) s"
      return 0
    fi
    echo "$out"
    execs=$(grep -oE 'execs: [0-9]+' <<<"$out" | tail -1 | grep -oE '[0-9]+' || true)
    if [ "$attempt" = 2 ] || [ -z "$execs" ] || [ "$execs" = 0 ] || ! grep -q 'context deadline exceeded' <<<"$out" ||
      grep -qE 'Failing input written|panic:|_test\.go:[0-9]+:' <<<"$out"; then
      echo "FAIL	$pkg	$target"
      return 1
    fi
    budget="${execs}x"
    echo "   (the fuzzing engine's deadline race, no input found: again for $budget executions)"
  done
}

# The targets run FUZZJOBS at a time, one fuzzing worker each: on two
# cores two targets of one worker fuzz as much in a second as one of two
# workers, in half the wall-clock time. Each prints its report when done.
n=0 running=0 failed=0
while IFS=$'\t' read -r pkg dir <&3; do
  n=$((n + 1))
  bin=$work/fuzz$n.test
  targets=$(cd "$dir" && "$bin" -test.run='^$' -test.list '^Fuzz')
  for target in $targets; do
    if [ "$running" -ge "$FUZZJOBS" ]; then
      wait -n || failed=1
      running=$((running - 1))
    fi
    log=$work/fuzz-$n-$target.log
    (if fuzz_one "$pkg" "$dir" "$bin" "$target" >"$log" 2>&1; then rc=0; else rc=1; fi; cat "$log"; exit $rc) &
    running=$((running + 1))
  done
done 3<<<"$fuzz_pkgs"
while [ "$running" -gt 0 ]; do
  wait -n || failed=1
  running=$((running - 1))
done
if [ "$failed" = 1 ]; then echo "a fuzz target failed (FAIL above)"; exit 1; fi
step
echo "all tests passed in $SECONDS s"
