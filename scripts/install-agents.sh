#!/usr/bin/env bash
# Installs the other coding agents the tests run against into .tools/agents/
# (ignored by git), pinned: the Codex CLI (a real client of the fake
# model's Responses API). Apart from scripts/install-tools.sh, so that the
# demo does not download them. Safe to run again: it does nothing when the
# pinned versions are already there. Prints Codex's path last.
set -euo pipefail
cd "$(dirname "$0")/.."

CODEX_VERSION=0.171.0
tools=.tools/agents
mkdir -p "$tools"

cat > "$tools/package.json" <<JSON
{
  "name": "ccbridge-test-agents",
  "private": true,
  "dependencies": {
    "@openai/codex": "$CODEX_VERSION"
  }
}
JSON

installed() {
  local pkg=$1 version=$2 file="$tools/node_modules/$1/package.json"
  [ -f "$file" ] && grep -q "\"version\": \"$version\"" "$file"
}

if ! installed @openai/codex "$CODEX_VERSION"; then
  echo "installing the Codex CLI into $tools/ ..." >&2
  (cd "$tools" && npm install --no-audit --no-fund --loglevel=error >&2)
fi

codex="$PWD/$tools/node_modules/.bin/codex"
"$codex" --version >/dev/null 2>&1 || { echo "the Codex CLI did not install: $codex" >&2; exit 1; }
echo "$codex"
