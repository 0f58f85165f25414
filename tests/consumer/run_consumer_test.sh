#!/usr/bin/env bash
# Builds tests/consumer against an installed gpucomm with find_package(gpucomm) and runs it on 2
# host-memory PEs:
#   run_consumer_test.sh install BUILD_DIR SOURCE_DIR   cmake --install of BUILD_DIR into a fresh prefix
#   run_consumer_test.sh wheel SOURCE_DIR               the wheel installed for $PYTHON (python3):
#                                                       CMAKE_PREFIX_PATH=$(python -m gpucomm --cmake-prefix-path)
# Each builds the host-only project first - LANGUAGES CXX, configured with no nvcc on PATH and
# CUDAToolkit made unfindable, and its link line must not name the CUDA runtime - then, with
# CONSUMER_WITH_CUDA=ON (default) and nvcc present, the project with a kernel using the device API.
set -euo pipefail
mode=${1:?usage: run_consumer_test.sh install BUILD_DIR SOURCE_DIR | wheel SOURCE_DIR}
PY=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
case "$mode" in
  install)
    build_dir=$2 source_dir=$3
    cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
    prefix=$work/prefix
    launcher=("$PY" -m gpucomm run)  # PYTHONPATH points at the build tree's package (CTest sets it)
    ;;
  wheel)
    source_dir=$2
    prefix=$(cd "$work" && "$PY" -m gpucomm --cmake-prefix-path)
    launcher=(env -u PYTHONPATH "$PY" -m gpucomm run)
    ;;
  *) echo "run_consumer_test.sh: unknown mode '$mode'" >&2; exit 2 ;;
esac
source_dir=$(cd "$source_dir" && pwd)
echo "consumer: gpucomm package at $prefix"
nvcc=$(command -v nvcc || true)
[ -n "$nvcc" ] || [ ! -x /usr/local/cuda/bin/nvcc ] || nvcc=/usr/local/cuda/bin/nvcc

# A PATH without the CUDA toolkit's folders.
host_path=$(tr ':' '\n' <<<"$PATH" | grep -v -i cuda | paste -sd: -)
(cd "$work" && env PATH="$host_path" cmake -S "$source_dir/tests/consumer" -B "$work/host" -G Ninja \
   -DCMAKE_PREFIX_PATH="$prefix" -DCONSUMER_WITH_CUDA=OFF -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON \
   --no-warn-unused-cli >"$work/host.log") \
  || { cat "$work/host.log"; echo "consumer: the host-only project did not configure without CUDA" >&2; exit 1; }
env PATH="$host_path" cmake --build "$work/host" >/dev/null
if ninja -C "$work/host" -t commands consumer | grep -i -E 'cudart|cuda/lib|targets/.*/lib' >&2; then
  echo "consumer: the host-only program's link line names the CUDA runtime (above)" >&2
  exit 1
fi
GPUCOMM_DEVICE=host "${launcher[@]}" -n 2 --tag-output -- "$work/host/consumer"

if [ "${CONSUMER_WITH_CUDA:-ON}" = ON ] && [ -n "$nvcc" ]; then
  cmake -S "$source_dir/tests/consumer" -B "$work/cuda" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
    -DCONSUMER_WITH_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc" >/dev/null
  cmake --build "$work/cuda" >/dev/null
  GPUCOMM_DEVICE=host "${launcher[@]}" -n 2 --tag-output -- "$work/cuda/consumer_kernel"
fi
echo "consumer: ok ($mode)"
