#!/usr/bin/env bash
# gpu-check step: one-sided benchmark on 2 GPUs beside its NVSHMEM counterpart, same run.
# usage: rma.sh RAW_DIR BUILD_DIR
set -euo pipefail
raw=$1
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
if [ "${ngpu:-0}" -lt 2 ]; then
  echo "[  SKIPPED ] the one-sided benchmark needs 2 GPUs, found ${ngpu:-0}"
  exit 0
fi
nv_ok=0
if bash bench/nvshmem/build_and_run.sh "$raw/nvshmem" --quick; then
  nv_ok=1
  cp "$raw/nvshmem/nvshmem.json" "$raw/nvshmem.json"
fi
rm -f "$raw/nvshmem/nvshmem_bench"
if [ "$nv_ok" = 1 ]; then
  python3 -m gpucomm bench rma --quick --json "$raw/rma.json" --compare-nvshmem "$raw/nvshmem.json"
else
  echo "NVSHMEM counterpart failed; gpucomm alone:"
  python3 -m gpucomm bench rma --quick --json "$raw/rma.json"
fi
