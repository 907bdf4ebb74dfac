#!/usr/bin/env bash
# Installs the browser the web UI's end-to-end tests drive (e2e/browser_test.go):
# Debian's chromium, when /usr/bin/chromium is missing. With
# CCBRIDGE_TEST_CHROMIUM set, that browser is used and nothing is installed.
# Safe to run again: it does nothing when the browser is there. apt's output
# goes to stderr; the browser's path is printed last, on stdout (as
# scripts/install-tools.sh prints the CLI's).
set -euo pipefail

browser=${CCBRIDGE_TEST_CHROMIUM:-}
if [ -n "$browser" ]; then
  if [ ! -x "$browser" ]; then
    echo "CCBRIDGE_TEST_CHROMIUM=$browser is not an executable file" >&2
    exit 1
  fi
  echo "$browser"
  exit 0
fi

browser=/usr/bin/chromium
if [ ! -x "$browser" ]; then
  sudo=()
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      sudo=(sudo -n)
    else
      echo "$browser is missing and installing it needs root (apt-get install chromium)" >&2
      exit 1
    fi
  fi
  apt_install() {
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq --no-install-recommends -o Dpkg::Use-Pty=0 chromium 2>&1
  }
  echo "installing chromium (apt-get install chromium) ..." >&2
  if ! out=$(apt_install); then
    # A machine whose package index was never fetched (or is stale) knows
    # no chromium, or only files the mirror no longer has: fetch the index
    # once and try again. Any other failure is reported as it is.
    if grep -qE 'Unable to locate package|has no installation candidate|Failed to fetch|404 +Not Found' <<<"$out"; then
      echo "apt-get update (the package index is missing or stale) ..." >&2
      "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
      if ! out=$(apt_install); then
        echo "$out" >&2
        echo "apt-get install chromium failed" >&2
        exit 1
      fi
    else
      echo "$out" >&2
      echo "apt-get install chromium failed" >&2
      exit 1
    fi
  fi
  [ -z "$out" ] || echo "$out" | tail -n 5 >&2
fi

# Debian's /usr/bin/chromium is a shell wrapper; its own chatter goes to
# stderr, only the exit status matters here.
if ! version=$("$browser" --version 2>/dev/null); then
  echo "$browser does not run (--version failed)" >&2
  exit 1
fi
echo "$version" >&2
echo "$browser"
