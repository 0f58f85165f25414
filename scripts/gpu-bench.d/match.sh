#!/usr/bin/env bash
# gpu-check step: the matching benchmark (quick), replaying the LULESH trace's queue snapshots
# when the shared traces are at hand.
# usage: match.sh RAW_DIR BUILD_DIR
set -euo pipefail
raw=$1
args=(--quick --json "$raw/match.json")
t=""
for cand in shared/traces ../shared/traces .deps/traces; do
  if [ -d "$cand/lulesh-n8" ]; then t="$cand/lulesh-n8"; break; fi
done
if [ -n "$t" ]; then
  python3 -m gpucomm trace analyze "$t" --export-queues "$raw/lulesh.qsnap" >/dev/null && args+=(--replay "$raw/lulesh.qsnap")
fi
python3 -m gpucomm bench match "${args[@]}"
