#!/usr/bin/env bash
# vLLM production-stack's router, run from its own source, beside Switchyard on one trace.
#
#   bench/peers/prodstack/run.sh [TRACE] [REQUESTS] [SPEEDUP]
#     TRACE     gen:chat | gen:agentic | gen:rag | a Mooncake JSONL path (default gen:chat)
#     REQUESTS  default 300;  SPEEDUP  default 10
#   env: LOGICS   their routing logics, default "roundrobin,prefixaware,session"
#        OURS     our policies, default "kv,least-loaded"
#        RUNS     repetitions of the whole set, default 1
#        OUT      where JSON reports and logs go, default bench/out/prodstack/<trace>-<time>
#        PEERS    outside the repo: their tree, uhashring's tree, the venv (default /work/peers)
#
# For each run: per logic, 8 fresh simulated engines (the flags bench/replay/cluster.ts gives
# them) + their router with static service discovery, driven by `bench:replay --router URL
# --engine-url ... --prompt-format text`; then our router over fresh engines through the normal
# bench with --prompt-format text and the same --kv-blocks. Every process is stopped by PID.
# Prints each run's table, then medians over runs (summarize.ts). See README.md beside this.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
TRACE="${1:-gen:chat}"
REQUESTS="${2:-300}"
SPEEDUP="${3:-10}"
LOGICS="${LOGICS:-roundrobin,prefixaware,session}"
OURS="${OURS:-kv,least-loaded}"
RUNS="${RUNS:-1}"
PEERS="${PEERS:-/work/peers}"
ENGINES=8
MAX_OUT=8
MODEL=switchyard-sim
TRACE_NAME="$(basename "$TRACE" .jsonl | tr ':' '-')"
OUT="${OUT:-$ROOT/bench/out/prodstack/$TRACE_NAME-$(date -u +%Y%m%dT%H%M%S)}"
mkdir -p "$OUT"
cd "$ROOT"

PS_MIRROR=/work/.mirror/vllm-project+production-stack/repo
UH_MIRROR=/work/.mirror/ultrabug+uhashring/repo
PY="$PEERS/venv/bin/python"

# ---- setup (idempotent) --------------------------------------------------------------------
setup() {
  if [ ! -d "$PEERS/production-stack/src/vllm_router" ]; then
    [ -d "$PS_MIRROR" ] || { echo "no $PEERS/production-stack and no mirror at $PS_MIRROR (fetch github:vllm-project/production-stack first)" >&2; exit 2; }
    mkdir -p "$PEERS/production-stack"
    git --git-dir="$PS_MIRROR" archive HEAD | tar -x -C "$PEERS/production-stack"
    git --git-dir="$PS_MIRROR" rev-parse HEAD > "$PEERS/production-stack/COMMIT"
  fi
  if [ ! -d "$PEERS/uhashring/uhashring" ]; then
    [ -d "$UH_MIRROR" ] || { echo "no $PEERS/uhashring and no mirror at $UH_MIRROR (fetch github:ultrabug/uhashring first)" >&2; exit 2; }
    mkdir -p "$PEERS/uhashring"
    git --git-dir="$UH_MIRROR" archive HEAD | tar -x -C "$PEERS/uhashring"
    git --git-dir="$UH_MIRROR" rev-parse HEAD > "$PEERS/uhashring/COMMIT"
  fi
  if ! "$PY" -c "import fastapi, uvicorn, aiohttp, prometheus_client, xxhash, numpy, psutil, requests, yaml, aiofiles, multipart, aiosqlite" 2>/dev/null; then
    [ -x "$PY" ] || python3 -m venv "$PEERS/venv"
    "$PEERS/venv/bin/pip" install --retries 0 --timeout 2 -q \
      fastapi uvicorn aiohttp prometheus-client xxhash numpy psutil requests pyyaml aiofiles python-multipart aiosqlite
  fi
}
setup
# Their source, uhashring's source, and our import shims (kubernetes, sentry_sdk: see shims/).
export PYTHONPATH="$HERE/shims:$PEERS/uhashring:$PEERS/production-stack/src"

# ---- processes, stopped by PID -------------------------------------------------------------
PIDS=()
stop_all() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do
    for _ in $(seq 30); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
  done
  PIDS=()
}
trap stop_all EXIT INT TERM

free_ports() {  # N distinct free loopback ports
  python3 -c "
import socket, sys
ss = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in ss: s.bind(('127.0.0.1', 0))
print(' '.join(str(s.getsockname()[1]) for s in ss))
for s in ss: s.close()" "$1"
}

wait_http() {  # URL PID
  for _ in $(seq 200); do
    kill -0 "$2" 2>/dev/null || { echo "process $2 for $1 exited" >&2; return 1; }
    curl -sf -o /dev/null "$1" && return 0
    sleep 0.1
  done
  echo "$1 did not answer" >&2; return 1
}

KV_BLOCKS="$(cd "$ROOT" && bun "$HERE/kv-blocks.ts" "$TRACE" "$REQUESTS" "$ENGINES" 0.5 1)"
ENGINE_URLS=()
start_engines() {  # same flags as bench/replay/cluster.ts, minus --router-url (no KV events to them)
  local ports i
  read -r -a ports <<< "$(free_ports "$ENGINES")"
  ENGINE_URLS=()
  for i in $(seq 0 $((ENGINES - 1))); do
    bun "$ROOT/src/main.ts" mocker --host 127.0.0.1 --port "${ports[$i]}" --block-size 512 --kv-blocks "$KV_BLOCKS" \
      --speedup "$SPEEDUP" --prefill-us-per-token 200 --decode-ms-per-step 20 --decode-batch-factor 0.02 \
      --max-concurrency 64 --seed $((i + 1)) > "$OUT/engine-$i.log" 2>&1 &
    PIDS+=($!)
    ENGINE_URLS+=("http://127.0.0.1:${ports[$i]}")
  done
  for i in $(seq 0 $((ENGINES - 1))); do wait_http "${ENGINE_URLS[$i]}/health" "${PIDS[$i]}"; done
}

BENCH=(bun "$ROOT/bench/replay/run.ts" --trace "$TRACE" --requests "$REQUESTS" --speedup "$SPEEDUP" --engines "$ENGINES"
       --kv-blocks "$KV_BLOCKS" --block-size 512 --max-output-tokens "$MAX_OUT" --prompt-format text --quiet)

echo "production-stack $(cat "$PEERS/production-stack/COMMIT" 2>/dev/null || echo '?'), uhashring $(cat "$PEERS/uhashring/COMMIT" 2>/dev/null || echo '?')"
echo "trace $TRACE, $REQUESTS requests, speedup $SPEEDUP, $ENGINES engines x $KV_BLOCKS KV blocks, logics $LOGICS, ours $OURS, runs $RUNS -> $OUT"

for run in $(seq 1 "$RUNS"); do
  IFS=, read -r -a logics <<< "$LOGICS"
  for logic in "${logics[@]}"; do
    start_engines
    rport="$(free_ports 1)"
    models="$(printf "$MODEL,%.0s" $(seq $ENGINES))"; models="${models%,}"
    backends="$(IFS=,; echo "${ENGINE_URLS[*]}")"
    # launch.py: `python -m vllm_router.app` after the xxhash 3.x compatibility wrapper (see it).
    (cd "$PEERS/production-stack/src" && exec "$PY" "$HERE/launch.py" --host 127.0.0.1 --port "$rport" \
      --service-discovery static --static-backends "$backends" --static-models "$models" \
      --routing-logic "$logic" --session-key x-session-id) > "$OUT/router-$logic-$run.log" 2>&1 &
    rpid=$!
    PIDS+=("$rpid")
    wait_http "http://127.0.0.1:$rport/health" "$rpid"
    curl -sf "http://127.0.0.1:$rport/v1/models" | grep -q "\"$MODEL\"" || { echo "their router does not list $MODEL" >&2; exit 1; }
    extra=()
    [ "$logic" = session ] && extra+=(--session-header)
    "${BENCH[@]}" --router "http://127.0.0.1:$rport" --router-pid "$rpid" $(printf -- "--engine-url %s " "${ENGINE_URLS[@]}") \
      --policies "prodstack-src-$logic" "${extra[@]}" --json "$OUT/theirs-$logic-$run.json" | tee "$OUT/theirs-$logic-$run.txt"
    echo "their router log: $(grep -a -c Traceback "$OUT/router-$logic-$run.log" || true) tracebacks"
    stop_all
  done
  # Ours: the normal bench (fresh engines and router per policy, KV events on), text prompts too.
  "${BENCH[@]}" --policies "$OURS" --json "$OUT/ours-$run.json" | tee "$OUT/ours-$run.txt"
done

echo
echo "medians over $RUNS run(s):"
bun "$HERE/summarize.ts" "$OUT"/theirs-*.json "$OUT"/ours-*.json | tee "$OUT/medians.md"
