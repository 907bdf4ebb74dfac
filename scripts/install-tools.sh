#!/usr/bin/env bash
# Installs what the tests and the demo run against into .tools/ (ignored by
# git): the real Claude Code CLI and the official Agent SDK (a real
# drop-in host), pinned. Safe to run again: it does nothing
# when the pinned versions are already there. Prints the CLI's path last.
set -euo pipefail
cd "$(dirname "$0")/.."

CLI_VERSION=2.1.330
SDK_VERSION=0.3.330
tools=.tools
mkdir -p "$tools"

cat > "$tools/package.json" <<JSON
{
  "name": "ccbridge-test-tools",
  "private": true,
  "dependencies": {
    "@anthropic-ai/claude-code": "$CLI_VERSION",
    "@anthropic-ai/claude-agent-sdk": "$SDK_VERSION"
  }
}
JSON

installed() {
  local pkg=$1 version=$2 file="$tools/node_modules/$1/package.json"
  [ -f "$file" ] && grep -q "\"version\": \"$version\"" "$file"
}

if ! installed @anthropic-ai/claude-code "$CLI_VERSION" ||
   ! installed @anthropic-ai/claude-agent-sdk "$SDK_VERSION"; then
  echo "installing the Claude Code CLI $CLI_VERSION and the Agent SDK $SDK_VERSION into $tools/ ..." >&2
  (cd "$tools" && npm install --no-audit --no-fund --loglevel=error >&2)
fi

# The wrapper package's postinstall links the native binary over
# bin/claude.exe; where install scripts did not run, use the platform
# package's binary directly.
cli="$PWD/$tools/node_modules/@anthropic-ai/claude-code/bin/claude.exe"
if ! "$cli" --version >/dev/null 2>&1; then
  for candidate in "$PWD/$tools"/node_modules/@anthropic-ai/claude-code-linux-*/claude; do
    if "$candidate" --version >/dev/null 2>&1; then cli=$candidate; break; fi
  done
fi
"$cli" --version >/dev/null 2>&1 || { echo "the Claude Code CLI did not install: $cli" >&2; exit 1; }
echo "$cli"
