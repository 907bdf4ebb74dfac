#!/usr/bin/env bash
# Reproduces docs/performance.md: the micro-benchmarks (framing, the
# drop-in relay in adapter/stream, routing, the dialects, serve), then the
# end-to-end harness (a fake CLI behind nothing, a plain byte relay and
# ccbridge in drop-in mode).
# CCBRIDGE_PERF_NOASSERT=1 reports without failing on a missed target; see
# e2e/perf_test.go for the other CCBRIDGE_PERF_* knobs.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== machine"
echo "nproc: $(nproc)"
grep -m1 'model name' /proc/cpuinfo || true
go version
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

echo
echo "== go test -bench (every package with benchmarks)"
pkgs=()
for p in $(go list ./... | grep -v /e2e$); do
  dir=$(go list -f '{{.Dir}}' "$p")
  if grep -qsE '^func Benchmark' "$dir"/*_test.go; then
    pkgs+=("$p")
  else
    echo "(no benchmarks in $p)"
  fi
done
if [ ${#pkgs[@]} -gt 0 ]; then
  go test -bench=. -benchmem -run='^$' "${pkgs[@]}"
fi

echo
echo "== end-to-end harness"
CCBRIDGE_PERF=1 go test -run TestPerfHarness -v -count=1 -timeout 10m ./e2e
