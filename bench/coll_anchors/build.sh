#!/usr/bin/env bash
# Builds the in-kernel collective anchors of `gpucomm bench coll --anchors` outside gpucomm's build:
#   bench/coll_anchors/build.sh OUTDIR
# OUTDIR/nvshmem_coll     NVSHMEM's device collectives (-rdc, NVSHMEM's static device library)
# OUTDIR/nccl_device_coll NCCL's device API (NCCL >= 2.28: nccl_device.h, LSA barrier and windows)
# The libraries come from this Python's site-packages (nvidia/nvshmem, nvidia/nccl: the wheels
# nvidia-nvshmem-cu13 and nvidia-nccl-cu13), or from NVSHMEM_HOME / NCCL_HOME. A library that is
# missing or too old is skipped: OUTDIR/NAME.unavailable then holds "not available: REASON", which
# `gpucomm bench coll --anchors` prints. Exit status 0 unless a compiler failed. Both programs link
# against the libraries where they are (an rpath), so they run where they were built.
# COMPILE_ONLY=1 is accepted for symmetry with bench/nvshmem (this script never runs anything).
set -uo pipefail
out=${1:?usage: build.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
python=${PYTHON:-python3}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
arch=${CUDA_ARCH:-sm_90}
cuda_home=$(cd "$(dirname "$nvcc")/.." && pwd)
# The libraries need libcuda; where no driver is installed the toolkit's stub lets the link succeed.
stubs=()
[[ -e /usr/lib/x86_64-linux-gnu/libcuda.so || -e /usr/lib64/libcuda.so ]] || stubs=(-L"$cuda_home/lib64/stubs")
status=0

# The folder of a namespace package of nvidia's wheels (its __path__, not __file__), or "".
site_dir() {
  "$python" -c "import importlib, os; m = importlib.import_module('$1'); print(os.path.realpath(list(m.__path__)[0]))" \
    2>/dev/null || true
}

unavailable() {  # NAME REASON
  echo "not available: $2" > "$out/$1.unavailable"
  rm -f "$out/$1"
  echo "$1: not available: $2"
}

if [[ ! -x "$nvcc" ]]; then
  unavailable nvshmem_coll "no nvcc (set NVCC)"
  unavailable nccl_device_coll "no nvcc (set NVCC)"
  exit 0
fi

# ---- NVSHMEM
root=${NVSHMEM_HOME:-$(site_dir nvidia.nvshmem)}
host_lib=$(ls "$root"/lib/libnvshmem_host.so* 2>/dev/null | head -n1)
if [[ -z "$root" || ! -f "$root/include/nvshmem.h" ]]; then
  unavailable nvshmem_coll "NVSHMEM not found (pip package nvidia-nvshmem-cu13, or NVSHMEM_HOME)"
elif [[ ! -f "$root/lib/libnvshmem_device.a" || -z "$host_lib" ]]; then
  unavailable nvshmem_coll "no libnvshmem_device.a or libnvshmem_host.so under $root/lib"
else
  echo "building $out/nvshmem_coll against $root"
  if "$nvcc" -std=c++17 -O3 -rdc=true -arch="$arch" -I"$root/include" -I"$here" "$here/nvshmem_coll.cu" \
      -o "$out/nvshmem_coll" "$root/lib/libnvshmem_device.a" -L"$root/lib" -l:"$(basename "$host_lib")" \
      "${stubs[@]}" -Xlinker -rpath -Xlinker "$root/lib" -lcuda -lcudart; then
    rm -f "$out/nvshmem_coll.unavailable"
    echo "$root/lib" > "$out/nvshmem_coll.libdir"
  else
    unavailable nvshmem_coll "the build failed (see above)"
    status=1
  fi
fi

# ---- NCCL device API
root=${NCCL_HOME:-$(site_dir nvidia.nccl)}
lib=$(ls "$root"/lib/libnccl.so* 2>/dev/null | head -n1)
if [[ -z "$root" || ! -f "$root/include/nccl.h" || -z "$lib" ]]; then
  unavailable nccl_device_coll "NCCL not found (pip package nvidia-nccl-cu13, or NCCL_HOME)"
elif [[ ! -f "$root/include/nccl_device.h" ]]; then
  unavailable nccl_device_coll "the NCCL under $root has no device API (nccl_device.h: NCCL 2.28 or later)"
else
  echo "building $out/nccl_device_coll against $root"
  if "$nvcc" -std=c++17 -O3 -arch="$arch" -I"$root/include" -I"$here" "$here/nccl_device_coll.cu" \
      -o "$out/nccl_device_coll" -L"$root/lib" -l:"$(basename "$lib")" "${stubs[@]}" \
      -Xlinker -rpath -Xlinker "$root/lib" -lcudart; then
    rm -f "$out/nccl_device_coll.unavailable"
    echo "$root/lib" > "$out/nccl_device_coll.libdir"
  else
    unavailable nccl_device_coll "the build failed (see above)"
    status=1
  fi
fi
exit $status
