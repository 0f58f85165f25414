#!/usr/bin/env bash
# Sets up a fresh machine and runs every test that can run here:
#   1. the CI build (all .cu files compiled) with CTest (GoogleTest, multi-process tests,
#      install + find_package consumer) and pytest against the build tree;
#   2. `pip install .` and a smoke test of the installed package and its `gpucomm` command;
#   3. the host code again under ASan+UBSan, and the concurrent code under TSan.
# GPU tests skip themselves with a reason where no GPU exists.
# Options: --quick skips steps 2 and 3. Environment: JOBS (default: all cores).
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
for a in "$@"; do
  case "$a" in
    --quick) quick=1 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "scripts/test.sh: unknown option '$a' (see --help)" >&2; exit 2 ;;
  esac
done
JOBS=${JOBS:-$(nproc)}
PY=${PYTHON:-python3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
step() { echo; echo "=== $* ($(date +%H:%M:%S))"; }
failed=()

step "set-up"
bash scripts/setup.sh
python3 scripts/gen-env-doc.py --check || { echo "docs/ENV.md is out of date: run scripts/gen-env-doc.py" >&2; exit 1; }

step "CI build (every .cu compiled)"
cmake --preset ci -DPython_EXECUTABLE="$(command -v "$PY")" >/dev/null
cmake --build --preset ci -j "$JOBS"

step "CTest"
ctest --preset ci -j "$JOBS" || failed+=("ctest")

step "pytest (build tree)"
GPUCOMM_BUILD_DIR="$PWD/build/ci" "$PY" -m pytest tests/python -q -p no:cacheprovider || failed+=("pytest")

if [ "$quick" = 0 ]; then
  step "pip install . and smoke test of the installed package"
  "$PY" -m pip install -q --no-build-isolation . || failed+=("pip install")
  (cd /tmp && "$PY" -c "import gpucomm, gpucomm._core; print('installed gpucomm', gpucomm.__version__)" \
     && gpucomm --help >/dev/null && gpucomm info >/dev/null \
     && GPUCOMM_DEVICE=host gpucomm bench pingpong --quick --sizes 8 >/dev/null && echo "installed package ok") \
     || failed+=("installed package")

  step "ASan+UBSan build and tests (host code)"
  cmake --preset asan >/dev/null
  cmake --build --preset asan -j "$JOBS"
  ctest --preset asan -j "$JOBS" -LE gpu || failed+=("asan")

  step "TSan build and tests (concurrent code)"
  cmake --preset tsan >/dev/null
  cmake --build --preset tsan -j "$JOBS"
  ctest --preset tsan -j "$JOBS" || failed+=("tsan")
fi

step "summary"
if ((${#failed[@]})); then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
echo "all test steps passed"
