#!/usr/bin/env bash
# Sets up a fresh machine, installs gpucomm, and runs the main job: `gpucomm info`, the
# application suite's quick comparison of communication models (`gpucomm apps compare --quick`:
# every finished application in every model, results checked against the CPU reference; JSON and
# PNG plots in gpucomm-apps-out/), and the benchmark comparison on all local GPUs (ping-pong
# between every pair of GPU PEs). On a machine
# without a GPU both run host-memory PEs and say so. A failing comparison does not stop the
# ping-pong; the script then exits with the comparison's status.
# Options are passed to `gpucomm bench pingpong` (e.g. --quick, --json FILE).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
bash scripts/setup.sh
echo "[main] pip install . (builds the library, the extension and the tools)"
"$PY" -m pip install -q --no-build-isolation .
out=$PWD/gpucomm-apps-out  # the comparison's JSON and plots
cd /tmp
echo
gpucomm info
echo
apps_rc=0
gpucomm apps compare --quick --out "$out" || apps_rc=$?
echo
gpucomm bench pingpong "$@"
if [ "$apps_rc" != 0 ]; then
  echo "[main] gpucomm apps compare --quick failed (exit $apps_rc)" >&2
  exit "$apps_rc"
fi
