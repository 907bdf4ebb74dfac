#!/usr/bin/env bash
# Installs the other coding agents the tests run against into .tools/agents/
# (ignored by git), pinned: the Codex CLI (a real client of the fake
# model's Responses API) and Gemini CLI (of its Gemini API). Apart from
# scripts/install-tools.sh, so that the demo does not download them. Safe
# to run again: it does nothing when the pinned versions are already
# there. Prints one line per agent on stdout, its name and its path:
# codex=PATH, then gemini=PATH.
set -euo pipefail
cd "$(dirname "$0")/.."

CODEX_VERSION=0.171.0
GEMINI_VERSION=0.61.0
tools=.tools/agents
mkdir -p "$tools"

cat > "$tools/package.json" <<JSON
{
  "name": "ccbridge-test-agents",
  "private": true,
  "dependencies": {
    "@google/gemini-cli": "$GEMINI_VERSION",
    "@openai/codex": "$CODEX_VERSION"
  }
}
JSON

installed() {
  local pkg=$1 version=$2 file="$tools/node_modules/$1/package.json"
  [ -f "$file" ] && grep -q "\"version\": \"$version\"" "$file"
}

if ! installed @openai/codex "$CODEX_VERSION" || ! installed @google/gemini-cli "$GEMINI_VERSION"; then
  echo "installing the Codex CLI and Gemini CLI into $tools/ ..." >&2
  (cd "$tools" && npm install --no-audit --no-fund --loglevel=error >&2)
fi

codex="$PWD/$tools/node_modules/.bin/codex"
"$codex" --version >/dev/null 2>&1 || { echo "the Codex CLI did not install: $codex" >&2; exit 1; }
gemini="$PWD/$tools/node_modules/.bin/gemini"
[ -x "$gemini" ] && [ -f "$tools/node_modules/@google/gemini-cli/package.json" ] ||
  { echo "Gemini CLI did not install: $gemini" >&2; exit 1; }
echo "codex=$codex"
echo "gemini=$gemini"
