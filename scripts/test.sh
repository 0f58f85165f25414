#!/usr/bin/env bash
# Sets up a fresh machine and runs every test that can run here:
#   1. the CI build (every .cu file compiled, device code to PTX only: ptxas, three quarters of
#      the device compile time, runs in step 3 and on the GPU machine) with CTest (GoogleTest,
#      multi-process tests, install + find_package consumer) and pytest against the build tree;
#   2. lint: scripts/lint.sh (pinned clang-format and clang-tidy) against the CI build;
#   3. the wheel, built once: installed, a smoke test of the package and its `gpucomm` command,
#      and the C++ consumer project (tests/consumer) built against the installed wheel;
#   4. the host code again under ASan+UBSan, and the concurrent code under TSan.
# GPU tests skip themselves with a reason where no GPU exists. Every step prints its wall time
# and a table of step times ends the run; the run fails if it took longer than the budget.
# Options: --quick skips steps 3 and 4.
# Environment: JOBS (default: all cores); GPUCOMM_LINT=0 skips step 2;
#   GPUCOMM_CI_BUDGET_MIN (default 75): minutes the whole run may take.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
for a in "$@"; do
  case "$a" in
    --quick) quick=1 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "scripts/test.sh: unknown option '$a' (see --help)" >&2; exit 2 ;;
  esac
done
JOBS=${JOBS:-$(nproc)}
PY=${PYTHON:-python3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
budget_min=${GPUCOMM_CI_BUDGET_MIN:-75}
lint=${GPUCOMM_LINT:-1}
# Settings of this script only: gpucomm warns about GPUCOMM_* variables it does not know, so the
# programs under test must not inherit them.
unset GPUCOMM_CI_BUDGET_MIN GPUCOMM_LINT
[[ "$budget_min" =~ ^[0-9]+$ ]] || { echo "scripts/test.sh: GPUCOMM_CI_BUDGET_MIN must be whole minutes, got '$budget_min'" >&2; exit 2; }
failed=()

# Step timing: step NAME TITLE opens a step (closing the one before); the table is printed at
# exit, also when a build error stops the run early.
t_all=$(date +%s)
cur="" cur_t0=0 cur_nfail=0 names=() secs=() marks=()
mmss() { printf '%d:%02d' $(($1 / 60)) $(($1 % 60)); }
end_step() {
  [ -n "$cur" ] || return 0
  local dt=$(( $(date +%s) - cur_t0 )) mark=${1:-ok}
  if ((${#failed[@]} > cur_nfail)); then mark=FAIL; fi
  names+=("$cur"); secs+=("$dt"); marks+=("$mark")
  echo "--- $cur: $(mmss "$dt") ($mark)"
  cur=""
}
step() {
  end_step
  cur=$1 cur_t0=$(date +%s) cur_nfail=${#failed[@]}
  echo; echo "=== $2 ($(date +%H:%M:%S))"
}
step_table() {
  local total=$(( $(date +%s) - t_all )) i
  echo
  echo "step times (budget ${budget_min} min):"
  for i in "${!names[@]}"; do
    printf '  %-14s %7s  %s\n' "${names[$i]}" "$(mmss "${secs[$i]}")" "${marks[$i]}"
  done
  printf '  %-14s %7s\n' "total" "$(mmss "$total")"
}
on_exit() {
  local rc=$?
  if [ -n "$cur" ]; then end_step "stopped (exit $rc)"; fi
  step_table
}
trap on_exit EXIT

step set-up "set-up"
bash scripts/setup.sh
python3 scripts/gen-env-doc.py --check || { echo "docs/ENV.md is out of date: run scripts/gen-env-doc.py" >&2; exit 1; }

step ci-build "CI build (every .cu compiled)"
cmake --preset ci -DPython_EXECUTABLE="$(command -v "$PY")" >/dev/null
cmake --build --preset ci -j "$JOBS"

step ctest "CTest"
ctest --preset ci -j "$JOBS" || failed+=("ctest")

step pytest "pytest (build tree)"
GPUCOMM_BUILD_DIR="$PWD/build/ci" "$PY" -m pytest tests/python -q -p no:cacheprovider || failed+=("pytest")

if [ "$lint" != 0 ]; then
  step lint "lint: clang-format and clang-tidy (scripts/lint.sh; GPUCOMM_LINT=0 skips)"
  bash scripts/lint.sh --build-dir build/ci --jobs "$JOBS" --report build/ci/lint-tidy.txt || failed+=("lint")
else
  end_step
  echo; echo "=== lint skipped (GPUCOMM_LINT=0)"
fi

if [ "$quick" = 0 ]; then
  step install "the wheel (built once), installed; smoke test; C++ consumers against it"
  rm -rf build/wheelhouse
  # PTX only (no ptxas at build time): this wheel serves the smoke test and the consumer builds on a
  # machine without a GPU; the GPU machine builds SASS (scripts/gpu-check.sh).
  if "$PY" -m pip wheel -q --no-build-isolation --no-deps -w build/wheelhouse \
       --config-settings=cmake.define.CMAKE_CUDA_ARCHITECTURES=90-virtual . \
     && "$PY" -m pip install -q --force-reinstall --no-deps build/wheelhouse/gpucomm-*.whl; then
    (cd /tmp && "$PY" -c "import gpucomm, gpucomm._core; print('installed gpucomm', gpucomm.__version__)" \
       && gpucomm --help >/dev/null && gpucomm info >/dev/null && test -f "$(gpucomm --cmake-dir)/gpucommConfig.cmake" \
       && GPUCOMM_DEVICE=host gpucomm bench pingpong --quick --sizes 8 >/dev/null && echo "installed package ok") \
       || failed+=("installed package")
    PYTHON="$PY" bash tests/consumer/run_consumer_test.sh wheel "$PWD" || failed+=("wheel consumer")
  else
    failed+=("wheel")
  fi

  step asan-build "ASan+UBSan build (host code)"
  cmake --preset asan >/dev/null
  cmake --build --preset asan -j "$JOBS"
  step asan-ctest "ASan+UBSan tests"
  ctest --preset asan -j "$JOBS" -LE gpu || failed+=("asan")

  step tsan-build "TSan build (concurrent code)"
  cmake --preset tsan >/dev/null
  cmake --build --preset tsan -j "$JOBS"
  step tsan-ctest "TSan tests"
  ctest --preset tsan -j "$JOBS" || failed+=("tsan")
fi

end_step
trap - EXIT
step_table
total=$(( $(date +%s) - t_all ))
echo
if ((total > budget_min * 60)); then
  failed+=("time budget")
  echo "OVER BUDGET: the run took $(mmss "$total"), more than GPUCOMM_CI_BUDGET_MIN=${budget_min} min;" \
       "see the step table above for the step that grew" >&2
fi
if ((${#failed[@]})); then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
echo "all test steps passed in $(mmss "$total") (budget ${budget_min} min)"
