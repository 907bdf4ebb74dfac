#!/usr/bin/env bash
# Installs what the tests and the demo run against into .tools/ (ignored by
# git), pinned: the real Claude Code CLI, the official Agent SDK (a real
# drop-in host), the ACP client library (a real ACP client) and the Node
# ACP adapter the performance comparison runs against. Safe to run again: it does nothing
# when the pinned versions are already there. Prints the CLI's path last.
set -euo pipefail
cd "$(dirname "$0")/.."

CLI_VERSION=2.1.330
SDK_VERSION=0.3.330
ACP_SDK_VERSION=2.4.0
ACP_ADAPTER_VERSION=0.100.0
tools=.tools
mkdir -p "$tools"

cat > "$tools/package.json" <<JSON
{
  "name": "ccbridge-test-tools",
  "private": true,
  "dependencies": {
    "@anthropic-ai/claude-code": "$CLI_VERSION",
    "@anthropic-ai/claude-agent-sdk": "$SDK_VERSION",
    "@agentclientprotocol/sdk": "$ACP_SDK_VERSION",
    "@agentclientprotocol/claude-agent-acp": "$ACP_ADAPTER_VERSION"
  }
}
JSON

installed() {
  local pkg=$1 version=$2 file="$tools/node_modules/$1/package.json"
  [ -f "$file" ] && grep -q "\"version\": \"$version\"" "$file"
}

if ! installed @anthropic-ai/claude-code "$CLI_VERSION" ||
   ! installed @anthropic-ai/claude-agent-sdk "$SDK_VERSION" ||
   ! installed @agentclientprotocol/sdk "$ACP_SDK_VERSION" ||
   ! installed @agentclientprotocol/claude-agent-acp "$ACP_ADAPTER_VERSION"; then
  echo "installing the Claude Code CLI, the Agent SDK, the ACP SDK and the ACP Node adapter into $tools/ ..." >&2
  (cd "$tools" && npm install --no-audit --no-fund --loglevel=error >&2)
fi

# The wrapper package's postinstall links the native binary over
# bin/claude.exe; where install scripts did not run, use the platform
# package's binary directly.
# Once, in a cold run of the test command, both checks failed right after
# npm finished and the same binary ran a minute later: each check is
# tried three times, a second apart, and a last failure shows the file
# and what the binary said.
runs() {
  local i
  for i in 1 2 3; do
    "$1" --version >/dev/null 2>&1 && return 0
    sleep 1
  done
  return 1
}
cli="$PWD/$tools/node_modules/@anthropic-ai/claude-code/bin/claude.exe"
if ! runs "$cli"; then
  for candidate in "$PWD/$tools"/node_modules/@anthropic-ai/claude-code-linux-*/claude; do
    if runs "$candidate"; then cli=$candidate; break; fi
  done
fi
"$cli" --version >/dev/null 2>"$tools/cli-version.err" || {
  echo "the Claude Code CLI did not install: $cli" >&2; ls -l "$cli" >&2; cat "$tools/cli-version.err" >&2; exit 1; }
echo "$cli"
