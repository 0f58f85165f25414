#!/usr/bin/env bash
# gpu-check step: the two-sided messaging layer on 1 GPU (a PE messaging itself between blocks):
# 8-byte round trips beside the flag and put_signal floors, the unexpected path, rendezvous
# overhead and the message rate, each against its target; beside them the NCCL send/recv and Open
# MPI host-staging baselines (--anchors: a GPU to itself, and two GPUs where two exist).
# usage: msg.sh RAW_DIR BUILD_DIR
set -euo pipefail
raw=$1
python3 -m gpucomm bench msg --quick --anchors --json "$raw/msg.json"
