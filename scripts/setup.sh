#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian 12 machine with nvcc: installs only what is missing.
#   scripts/setup.sh            build tools, test tools and Python build dependencies
# Environment: GPUCOMM_SETUP_NO_APT=1 skips apt (machines without root or registry access).
set -euo pipefail

need_apt=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for p in cmake ninja-build g++ libgtest-dev libgmock-dev libopenmpi-dev openmpi-bin pkg-config; do
  have_pkg "$p" || need_apt+=("$p")
done
if ((${#need_apt[@]})) && [ "${GPUCOMM_SETUP_NO_APT:-0}" != 1 ]; then
  echo "[setup] apt-get install ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || {
  echo "[setup] error: nvcc not found (install the CUDA 13 toolkit or put it on PATH)" >&2; exit 1; }

PY=${PYTHON:-python3}
py_need=()
"$PY" - <<'PY' >/tmp/gpucomm-setup-py.txt
import importlib.util
mods = {"nanobind": "nanobind>=2.4", "scikit_build_core": "scikit-build-core>=0.10",
        "pytest": "pytest>=7", "numpy": "numpy", "matplotlib": "matplotlib",
        "libucx": "libucx-cu13"}  # UCX for libgpucomm_ucx (docs/UCX.md)
print(" ".join(v for k, v in mods.items() if importlib.util.find_spec(k) is None))
PY
read -r -a py_need < /tmp/gpucomm-setup-py.txt || true
if ((${#py_need[@]})); then
  echo "[setup] pip install ${py_need[*]}"
  "$PY" -m pip install -q "${py_need[@]}"
fi
# cuobjdump and nvdisasm for the SASS fence test (tests/collectives/sass), from PyPI when the CUDA
# toolkit here has none (nvcc alone compiles; the disassembler ships separately).
if ! command -v cuobjdump >/dev/null && [ ! -x /usr/local/cuda/bin/cuobjdump ] &&
   ! "$PY" -c 'import glob, site, sys
dirs = site.getsitepackages() + [site.getusersitepackages()]
sys.exit(0 if any(glob.glob(d + "/nvidia/*/bin/cuobjdump") for d in dirs) else 1)'; then
  echo "[setup] pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm (CUDA 13)"
  "$PY" -m pip install -q "nvidia-cuda-cuobjdump>=13,<14" "nvidia-cuda-nvdisasm>=13,<14"
fi
echo "[setup] ok"
