#!/usr/bin/env bash
# gpu-check step: the application suite's quick comparison (every app and model this machine
# allows, one PE per GPU; on one GPU one PE, each model's code path against itself).
# usage: apps.sh RAW_DIR BUILD_DIR
set -euo pipefail
raw=$1
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
# One PE: each model's code path against itself (the one-GPU table); then the default PEs.
python3 -m gpucomm apps compare --quick -n 1 --json "$raw/apps-np1.json" --out "$raw/apps-np1"
python3 -m gpucomm apps compare --quick --json "$raw/apps.json" --out "$raw/apps"
# Multi-matrix-vector over the paper's batch sizes with enough batches for stable medians (the
# persistent kernel against a launch and a graph per batch; one PE).
python3 -m gpucomm apps run mmv -n 1 --size sweep --warmup 20 --iters 500 --json "$raw/apps-mmv.json"
# Aliev-Panfilov against its roofline (the copy bandwidth measured in the same run; one PE; two
# 258^3 fp64 buffers of E need a 1 GB symmetric heap).
GPUCOMM_HEAP_SIZE=1G python3 -m gpucomm apps run aliev_panfilov -n 1 --model patterns,cpu --size 256 --warmup 5 --iters 30 \
  --json "$raw/apps-aliev.json"
# Himeno at 160^3 per PE (the point count of the benchmark's M grid, 129 x 129 x 257; one PE).
python3 -m gpucomm apps run himeno -n 1 --model patterns,cpu --size 160 --warmup 5 --iters 30 --json "$raw/apps-himeno.json"
# The energy method on one application and model (3 runs of 10 s, idle before and after).
python3 -m gpucomm apps energy global_sum --model loadstore --size 16M -n 1 \
  --json "$raw/apps-energy.json" --plot "$raw/apps-energy.png"
