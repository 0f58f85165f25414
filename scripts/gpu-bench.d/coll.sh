#!/usr/bin/env bash
# gpu-check step: the collectives' host API on GPU PEs. Two PEs (sharing the GPU when there is only
# one: functional, host enqueue cost beside the launch floor; their times are time slices), then
# one PE with the NCCL and torch symmetric memory anchors in the same run (graph replay per call
# against NCCL's one-rank graph replay).
# usage: coll.sh RAW_DIR BUILD_DIR
set -euo pipefail
raw=$1
python3 -m gpucomm bench coll -n 2 --quick --ops allreduce,allgather,reduce_scatter,alltoall,barrier \
  --json "$raw/coll.json"
python3 -m gpucomm bench coll -n 1 --quick --anchors --ops allreduce,allgather -e 64K --json "$raw/coll-np1.json"
