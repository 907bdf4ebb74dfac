#!/usr/bin/env bash
# The offline demo: ccbridge serve with its web UI, in front of the real
# Claude Code CLI (installed into .tools/ when missing), which talks to
# ccbridge's built-in fake model. It prints the page's address and opens
# it when a browser is at hand; Ctrl-C stops it. Nothing leaves the
# machine; HOME and the project folder are temporary.
#
#   ./scripts/demo.sh              the web UI (CCBRIDGE_DEMO_LISTEN: the address, default 127.0.0.1:8787)
#   ./scripts/demo.sh --terminal   the terminal demo: one scripted turn with a permission request, answered
set -euo pipefail
cd "$(dirname "$0")/.."
cli=$(scripts/install-tools.sh)
# -trimpath, as the release and the test command build it: they share
# the compiled packages in the build cache.
CGO_ENABLED=0 go build -trimpath -o bin/ccbridge .
home=$(mktemp -d)
project=$(mktemp -d)
# The cleanup ignores a second Ctrl-C: SIGINT reaches the whole process
# group, and an rm it interrupted would leave the folders behind. Its
# children inherit the ignored signal.
trap 'trap "" INT TERM; rm -rf "$home" "$project"' EXIT

if [ "${1:-}" = "--terminal" ]; then
  HOME=$home bin/ccbridge --demo --fake-model default --claude "$cli" --log-level "${LOG_LEVEL:-warn}"
  exit
fi

# Files some of the fake model's prompts use (EDITFILE, SUBAGENT).
printf 'hello world\n' >"$project/hello.txt"
printf 'line one\nline two\nline three\n' >"$project/edit_target.txt"

listen=${CCBRIDGE_DEMO_LISTEN:-127.0.0.1:8787}
log=$home/serve.log
HOME=$home bin/ccbridge serve --listen "$listen" --fake-model default --claude "$cli" \
  --dir "$project" --log-level "${LOG_LEVEL:-info}" 2>"$log" &
pid=$!
# Under set -e a failing command ends a trap too: kill fails when serve is
# gone already (it takes the same Ctrl-C), wait returns serve's status.
trap 'trap "" INT TERM; kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$home" "$project"' EXIT
trap 'exit 130' INT TERM

addr=
for _ in $(seq 100); do
  addr=$(grep -o '"msg":"serving","listen":"[^"]*"' "$log" | sed 's/.*"listen":"//; s/"$//' || true)
  [ -n "$addr" ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$addr" ]; then
  echo "ccbridge serve did not start:" >&2
  cat "$log" >&2
  exit 1
fi
url="http://$addr/"
cat <<EOF
ccbridge serve is running at $url
  project folder: $project   (its log: $log)
  The fake model answers any prompt; these keywords script more:
    WRITEFILE  a Write that asks permission     ASKUSER / ASKMULTI  a question
    EDITFILE   an Edit shown as a diff          SUBAGENT            a subagent's tools, nested
    SLOW       five seconds of streaming (try Interrupt)   MARKUP  Markdown with hostile HTML, shown as text
Ctrl-C stops it.
EOF
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && command -v xdg-open >/dev/null; then
  xdg-open "$url" >/dev/null 2>&1 || true
elif [ "$(uname)" = Darwin ]; then
  open "$url" >/dev/null 2>&1 || true
fi
wait "$pid"
