#!/usr/bin/env bash
# gpu-check step: `gpucomm bench faults --quick` (host-memory PEs: fault injection, hostile
# clients, bad inputs, a soak) writes RAW/faults.json; the GPU case (a kernel waiting on a killed
# PE leaves within 1 s) runs as the CTest test reliability_gpu_kill_wait.
#   scripts/gpu-bench.d/faults.sh RAW BUILD
set -euo pipefail
raw=$1 build=$2
PYTHONPATH="$PWD/$build/python" python3 -m gpucomm bench faults --quick --json "$raw/faults.json"
