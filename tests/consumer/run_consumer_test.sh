#!/usr/bin/env bash
# Installs the build tree into a fresh prefix, builds tests/consumer against it with
# find_package(gpucomm), and runs the result as a one-PE job.
set -euo pipefail
build_dir=$1 source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
cmake -S "$source_dir/tests/consumer" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCONSUMER_WITH_CUDA="${CONSUMER_WITH_CUDA:-ON}" >/dev/null
cmake --build "$work/build" >/dev/null
GPUCOMM_DEVICE=host LD_LIBRARY_PATH="$work/prefix/lib" "$work/build/consumer"
if [ "${CONSUMER_WITH_CUDA:-ON}" = ON ]; then
  GPUCOMM_DEVICE=host LD_LIBRARY_PATH="$work/prefix/lib" "$work/build/consumer_kernel"
fi
