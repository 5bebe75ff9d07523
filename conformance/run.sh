#!/usr/bin/env bash
# Run the official MCP conformance suite's SEP-2663 tasks scenarios against
# conformance/server.py (FastMCP + TemporalTasks, embedded Temporal).
#
#   bash conformance/run.sh                       # all 10 tasks-* scenarios
#   bash conformance/run.sh tasks-lifecycle ...   # only these
#
# Installs (once, under conformance/.node/) Node 22 and the pinned suite from
# npm, starts the fixture server on a free 127.0.0.1 port, runs one
# `--scenario` per run, tallies results/*/checks.json, stops the server (and its
# embedded Temporal) by PID. Exits non-zero if any scenario other than the
# expected-to-fail ones has a failing check, or produced no checks at all.
#
# Env: CONFORMANCE_VERSION (default 0.2.0-alpha.12), PYTHON (default .venv's),
#      CONFORMANCE_TIMEOUT_MS (per scenario, default 30000),
#      EXPECTED_FAILURES (space-separated scenarios, default none).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
NODE_PREFIX="$HERE/.node"
CONFORMANCE_VERSION="${CONFORMANCE_VERSION:-0.2.0-alpha.12}"
NODE_MAJOR=22
TIMEOUT_MS="${CONFORMANCE_TIMEOUT_MS:-30000}"
EXPECTED_FAILURES="${EXPECTED_FAILURES-}"
ALL_SCENARIOS=(
  tasks-capability-negotiation tasks-lifecycle tasks-wire-fields
  tasks-request-state-removal tasks-mrtr-input tasks-request-headers
  tasks-dispatch-and-envelope tasks-required-task-error
  tasks-status-notifications tasks-mrtr-composition
)
if [ "$#" -gt 0 ]; then SCENARIOS=("$@"); else SCENARIOS=("${ALL_SCENARIOS[@]}"); fi

if [ -n "${PYTHON:-}" ]; then :
elif [ -x "$ROOT/.venv/bin/python" ]; then PYTHON="$ROOT/.venv/bin/python"
else PYTHON="$(command -v python3)"; fi

log() { printf '[conformance] %s\n' "$*" >&2; }

# --- 1. Node >= 22 and the suite ---------------------------------------------
node_major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

NODE_BIN="$NODE_PREFIX/node_modules/node/bin/node"
SUITE_JS="$NODE_PREFIX/node_modules/@modelcontextprotocol/conformance/dist/index.js"
SUITE_PKG="$NODE_PREFIX/node_modules/@modelcontextprotocol/conformance/package.json"
installed_suite_version() {
  [ -f "$SUITE_PKG" ] && sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$SUITE_PKG" | head -n1
}
if [ ! -x "$NODE_BIN" ] || [ "$(node_major "$NODE_BIN")" -lt "$NODE_MAJOR" ] \
   || [ "$(installed_suite_version)" != "$CONFORMANCE_VERSION" ]; then
  command -v npm >/dev/null || { log "npm is required to install Node $NODE_MAJOR and the suite"; exit 2; }
  log "installing node@$NODE_MAJOR and @modelcontextprotocol/conformance@$CONFORMANCE_VERSION into $NODE_PREFIX"
  mkdir -p "$NODE_PREFIX"
  (cd "$NODE_PREFIX" && npm install --prefix "$NODE_PREFIX" --save-exact --no-audit --no-fund \
      --loglevel=error "node@$NODE_MAJOR" "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" >&2) \
    || { log "npm install failed"; exit 2; }
fi
if [ ! -x "$NODE_BIN" ] || [ "$(node_major "$NODE_BIN")" -lt "$NODE_MAJOR" ]; then
  log "no Node >= $NODE_MAJOR at $NODE_BIN"; exit 2
fi
[ -f "$SUITE_JS" ] || { log "suite not found at $SUITE_JS"; exit 2; }
log "node $("$NODE_BIN" --version), suite $(installed_suite_version), python $("$PYTHON" --version 2>&1)"

# --- 2. The fixture server ----------------------------------------------------
PORT="$("$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
URL="http://127.0.0.1:$PORT/mcp"
STAMP="$(date -u +%Y%m%dT%H%M%SZ)"
RESULTS="$HERE/results/$STAMP"
DATA_DIR="$(mktemp -d "${TMPDIR:-/tmp}/fastmcp-temporal-conformance.XXXXXX")"
mkdir -p "$RESULTS"
SERVER_LOG="$RESULTS/server.log"
SERVER_PID=""
TEMPORAL_PID=""

stop_server() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    [ -n "$TEMPORAL_PID" ] || TEMPORAL_PID="$(pgrep -P "$SERVER_PID" | head -n1 || true)"
    log "stopping fixture server (pid $SERVER_PID)"
    kill -TERM "$SERVER_PID" 2>/dev/null
    for _ in $(seq 1 150); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$SERVER_PID" 2>/dev/null && kill -KILL "$SERVER_PID" 2>/dev/null
    wait "$SERVER_PID" 2>/dev/null
  fi
  # The embedded Temporal runs in its own process group (its pid is the pgid).
  if [ -n "$TEMPORAL_PID" ] && kill -0 "$TEMPORAL_PID" 2>/dev/null; then
    log "stopping leftover embedded Temporal (pgid $TEMPORAL_PID)"
    kill -TERM -- "-$TEMPORAL_PID" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$TEMPORAL_PID" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$TEMPORAL_PID" 2>/dev/null && kill -KILL -- "-$TEMPORAL_PID" 2>/dev/null
  fi
  SERVER_PID=""
  TEMPORAL_PID=""
  rm -rf "$DATA_DIR"
}
trap stop_server EXIT
trap 'exit 130' INT TERM

log "starting fixture server on $URL (log: $SERVER_LOG)"
(cd "$ROOT" && exec "$PYTHON" "$HERE/server.py" --port "$PORT" --data-dir "$DATA_DIR") \
  >"$SERVER_LOG" 2>&1 &
SERVER_PID=$!

# Ready when server/discover answers (up to 60 s: the embedded Temporal starts first).
ready=""
for _ in $(seq 1 300); do
  kill -0 "$SERVER_PID" 2>/dev/null || break
  if "$PYTHON" - "$URL" <<'PY' 2>/dev/null
import json, sys, urllib.request
meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}
body = {"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {"_meta": meta}}
request = urllib.request.Request(sys.argv[1], data=json.dumps(body).encode(), method="POST", headers={
    "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"})
with urllib.request.urlopen(request, timeout=2) as response:
    sys.exit(0 if response.status == 200 else 1)
PY
  then ready=1; break; fi
  sleep 0.2
done
if [ -z "$ready" ]; then
  log "fixture server did not answer; last log lines:"; tail -n 30 "$SERVER_LOG" >&2
  exit 2
fi
TEMPORAL_PID="$(pgrep -P "$SERVER_PID" | head -n1 || true)"
log "fixture server ready (pid $SERVER_PID, embedded Temporal pid ${TEMPORAL_PID:-?})"

# --- 3. One run per scenario ------------------------------------------------
for scenario in "${SCENARIOS[@]}"; do
  log "running $scenario"
  out="$RESULTS/$scenario"
  mkdir -p "$out"
  (cd "$RESULTS" && timeout $(( TIMEOUT_MS / 1000 + 60 )) "$NODE_BIN" "$SUITE_JS" server \
      --url "$URL" --scenario "$scenario" --timeout "$TIMEOUT_MS" -o "$out") \
    >"$out/console.log" 2>&1
  echo "$?" >"$out/exit-code"
done

stop_server

# --- 4. Tally -------------------------------------------------------------------
"$PYTHON" - "$RESULTS" "$EXPECTED_FAILURES" "${SCENARIOS[@]}" <<'PY'
import glob, json, os, sys

results, expected, scenarios = sys.argv[1], set(sys.argv[2].split()), sys.argv[3:]
rows, failures, bad = [], [], []
totals = {"pass": 0, "fail": 0, "xfail": 0, "other": 0}
for scenario in scenarios:
    files = sorted(glob.glob(os.path.join(results, scenario, "*", "checks.json")))
    try:
        checks = json.load(open(files[-1])) if files else None
    except ValueError:
        checks = None
    if checks is None:
        code = open(os.path.join(results, scenario, "exit-code")).read().strip()
        rows.append((scenario, "-", "-", "-", f"NO RESULTS (exit {code})"))
        bad.append(scenario)
        continue
    status = [c.get("status") for c in checks]
    passed, failed = status.count("SUCCESS"), status.count("FAILURE")
    other = len(status) - passed - failed
    for c in checks:
        if c.get("status") == "FAILURE":
            failures.append((scenario, c.get("id"), c.get("errorMessage") or "", c.get("details")))
    if failed == 0 and passed == 0:
        verdict = "SKIPPED" if "SKIPPED" in status else "NO CHECKS"
    elif failed == 0:
        verdict = "PASS"
    elif scenario in expected:
        verdict = "FAIL (expected)"
    else:
        verdict = "FAIL"
        bad.append(scenario)
    totals["pass"] += passed
    totals["other"] += other
    totals["xfail" if scenario in expected else "fail"] += failed
    rows.append((scenario, f"{passed}/{passed + failed}", str(failed), str(other), verdict))

width = max(len(r[0]) for r in rows)
print()
print(f"{'scenario':<{width}}  passed  failed  other  verdict")
print(f"{'-' * width}  ------  ------  -----  -------")
for name, ratio, failed, other, verdict in rows:
    print(f"{name:<{width}}  {ratio:>6}  {failed:>6}  {other:>5}  {verdict}")
print()
for scenario, check_id, message, details in failures:
    print(f"FAILED {scenario} :: {check_id}")
    print(f"  {message}")
    if details:
        print(f"  details: {json.dumps(details)[:800]}")
print(f"results: {results}")
print(f"expected failures: {totals['xfail']} (in {', '.join(sorted(expected)) or 'none'}); "
      f"other (skipped/info/warning) checks: {totals['other']}")
print(f"conformance: {totals['pass']} passed, {totals['fail']} failed")
sys.exit(1 if bad else 0)
PY
