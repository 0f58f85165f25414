#!/usr/bin/env bash
# gpu-check step: the collectives' host API on 2 GPU PEs (sharing the GPU when there is one),
# eager and graph, small sizes (enqueue cost beside the launch floor, graph replay per call).
# usage: coll.sh RAW_DIR BUILD_DIR
set -euo pipefail
raw=$1
python3 -m gpucomm bench coll -n 2 --quick --anchors --ops allreduce,allgather,reduce_scatter,alltoall,barrier \
  --json "$raw/coll.json"
