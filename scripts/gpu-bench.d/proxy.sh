#!/usr/bin/env bash
# gpu-check step: the paths of one-sided operations side by side (direct, CPU proxy, GPU service
# agent, UCX) on 2 GPUs, or on 1 GPU with a PE that targets itself.
# usage: proxy.sh RAW_DIR BUILD_DIR
set -euo pipefail
raw=$1
python3 -m gpucomm bench proxy --quick --json "$raw/proxy.json"
