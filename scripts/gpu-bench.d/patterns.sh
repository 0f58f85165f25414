#!/usr/bin/env bash
# gpu-check step: the pattern layer against hand-written CUDA calls on one GPU (quick): launch
# overhead, bandwidth, x-faces of 3-D arrays, the MCL thesis's tables as ratios.
# usage: patterns.sh RAW_DIR BUILD_DIR
set -euo pipefail
raw=$1
python3 -m gpucomm bench patterns --quick --json "$raw/patterns.json"
