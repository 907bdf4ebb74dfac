#!/usr/bin/env bash
# The offline demo: the real Claude Code CLI (installed into .tools/ when
# missing) talks to ccbridge's built-in fake model; ccbridge sits between it
# and a small scripted UI that sends one prompt and allows the Write it asks
# for. Nothing leaves the machine; HOME is a temporary folder.
set -euo pipefail
cd "$(dirname "$0")/.."
cli=$(scripts/install-tools.sh)
CGO_ENABLED=0 go build -o bin/ccbridge .
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
HOME=$home bin/ccbridge --demo --fake-model default --claude "$cli" --log-level "${LOG_LEVEL:-warn}"
