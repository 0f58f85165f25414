#!/usr/bin/env bash
# Sets up a fresh machine, installs gpucomm, and runs the main job: `gpucomm info` and the
# benchmark comparison on all local GPUs (ping-pong between every pair of GPU PEs). On a
# machine without a GPU it runs host-memory PEs and says so.
# Options are passed to `gpucomm bench pingpong` (e.g. --quick, --json FILE).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
bash scripts/setup.sh
echo "[main] pip install . (builds the library, the extension and the tools)"
"$PY" -m pip install -q --no-build-isolation .
cd /tmp
echo
gpucomm info
echo
gpucomm bench pingpong "$@"
