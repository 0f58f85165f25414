#!/usr/bin/env bash
# gpu-check step: the collectives' host API on GPU PEs. Two PEs (sharing the GPU when there is only
# one: functional, host enqueue cost beside the launch floor; their times are time slices; with two
# GPUs also the in-kernel anchors: NVSHMEM and NCCL's device API beside gpucomm's in-kernel barrier
# and allreduce), then one PE with the NCCL and torch symmetric memory anchors and the in-kernel
# anchors in the same run (graph replay per call against NCCL's one-rank graph replay).
# usage: coll.sh RAW_DIR BUILD_DIR
set -euo pipefail
raw=$1
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
gpus=$(python3 -c 'from gpucomm.launch.gpus import visible_gpu_count; print(visible_gpu_count())')
anchors=()
[[ "$gpus" -ge 2 ]] && anchors=(--anchors)
python3 -m gpucomm bench coll -n 2 --quick "${anchors[@]}" --ops allreduce,allgather,reduce_scatter,alltoall,barrier \
  --json "$raw/coll.json"
python3 -m gpucomm bench coll -n 1 --quick --anchors --ops allreduce,allgather -e 64K --json "$raw/coll-np1.json"
# One PE with the protocol forced (the PE is its own peer, GPUCOMM_COLL_FORCE_PROTOCOL): the
# in-kernel LL barrier and 8-byte LL allreduce beside NVSHMEM's and NCCL's device API at one PE, and
# the stream-ordered 8-byte allreduce (eager and replayed in a graph), in the same run.
python3 -m gpucomm bench coll -n 1 --quick --anchors --force-protocol --algo oneshot_ll --barrier-algo oneshot_ll \
  --ops allreduce,barrier -e 8 --json "$raw/coll-np1-forced.json"
