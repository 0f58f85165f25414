#!/usr/bin/env bash
# Builds the NVSHMEM counterpart of gpucomm-bench-rma against the NVSHMEM of this Python's
# site-packages and runs it on 2 GPUs:  bench/nvshmem/build_and_run.sh OUTDIR [--quick]
# Writes OUTDIR/nvshmem.json (gpucomm-bench-rma's schema) and OUTDIR/nvshmem.log. Compare with
#   gpucomm bench rma --json OUTDIR/gpucomm.json --compare-nvshmem OUTDIR/nvshmem.json
# COMPILE_ONLY=1 stops after building (machines without a GPU).
set -euo pipefail
out=${1:?usage: build_and_run.sh OUTDIR [--quick]}
shift
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
python=${PYTHON:-python3}
# nvidia.nvshmem is a namespace package: its folder comes from __path__, not __file__.
root=$("$python" -c 'import nvidia.nvshmem as m, os; print(os.path.realpath(list(m.__path__)[0]))')
inc="$root/include"
lib="$root/lib"
[[ -f "$inc/nvshmem.h" ]] || { echo "no nvshmem.h under $inc" >&2; exit 1; }
[[ -f "$lib/libnvshmem_device.a" ]] || { echo "no libnvshmem_device.a under $lib" >&2; exit 1; }
host_lib=$(ls "$lib"/libnvshmem_host.so* 2>/dev/null | head -n1)
[[ -n "$host_lib" ]] || { echo "no libnvshmem_host.so* under $lib" >&2; exit 1; }
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
arch=${CUDA_ARCH:-sm_90}
exe="$out/nvshmem_bench"
echo "building $exe against $root"
cuda_home=$(cd "$(dirname "$nvcc")/.." && pwd)
# NVSHMEM needs libcuda; where no driver is installed the toolkit's stub lets the link succeed.
stubs=()
[[ -e /usr/lib/x86_64-linux-gnu/libcuda.so || -e /usr/lib64/libcuda.so ]] || stubs=(-L"$cuda_home/lib64/stubs")
"$nvcc" -std=c++17 -O3 -rdc=true -arch="$arch" -I"$inc" "$here/nvshmem_bench.cu" -o "$exe" \
  "$lib/libnvshmem_device.a" -L"$lib" -l:"$(basename "$host_lib")" "${stubs[@]}" \
  -Xlinker -rpath -Xlinker "$lib" -lcuda -lcudart
[[ "${COMPILE_ONLY:-0}" == 1 ]] && { echo "built $exe"; exit 0; }

export NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=${NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME:-lo}
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0
export NVSHMEM_BENCH_UID_FILE="$out/nvshmem.uid"
export NVSHMEM_SYMMETRIC_SIZE=${NVSHMEM_SYMMETRIC_SIZE:-1G}
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
rm -f "$NVSHMEM_BENCH_UID_FILE"
"$python" -m gpucomm run -n 2 -- "$exe" --json "$out/nvshmem.json" "$@" 2>&1 | tee "$out/nvshmem.log"
echo "wrote $out/nvshmem.json"
