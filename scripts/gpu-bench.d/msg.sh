#!/usr/bin/env bash
# gpu-check step: the two-sided messaging layer on 1 GPU (a PE messaging itself between blocks):
# 8-byte round trips beside the flag and put_signal floors, the unexpected path, rendezvous
# overhead and the message rate, each against its target.
# usage: msg.sh RAW_DIR BUILD_DIR
set -euo pipefail
raw=$1
python3 -m gpucomm bench msg --quick --json "$raw/msg.json"
