#!/usr/bin/env bash
# Builds gpucomm (Release, sm_90) on a GPU machine, runs the whole test suite (GPU tests
# included), the GPU tests under compute-sanitizer with --sanitize, and the quick benchmarks.
# Writes into OUTDIR: summary.json, gpu-check.log and results.tar.gz (raw JSON, JUnit, logs),
# and prints a short table last.
#   scripts/gpu-check.sh OUTDIR [--sanitize] [--no-bench] [--only-bench] [--bench=NAME,...]
# --bench=NAME,... runs only the named benchmarks (pingpong and scripts/gpu-bench.d/NAME.sh).
# Needs no network: GoogleTest comes from the system, /usr/src/googletest or .deps/googletest.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/gpu-check.sh OUTDIR [--sanitize] [--no-bench] [--only-bench]}
shift
sanitize=0 bench=1 tests=1 only=""
for a in "$@"; do
  case "$a" in
    --sanitize) sanitize=1 ;;
    --no-bench) bench=0 ;;
    --only-bench) tests=0 ;;
    --bench=*) only=",${a#--bench=}," ;;
    *) echo "gpu-check: unknown option '$a'" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
raw=$(mktemp -d)
log="$out/gpu-check.log"
: >"$log"
# Never NVLink multicast; never touch clocks or reset the GPU.
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1
PY=$(command -v python3)
build=build/release
rows=()
status_all=0

run_step() {  # name, command...: runs, logs, records a table row
  local name=$1; shift
  local t0=$(date +%s) rc
  echo "=== $name: $*" | tee -a "$log"
  "$@" >"$raw/$name.log" 2>&1
  rc=$?
  cat "$raw/$name.log" >>"$log"
  local dt=$(( $(date +%s) - t0 ))
  local note
  note=$(grep -E "tests passed|passed|failed" "$raw/$name.log" | tail -1 | cut -c1-60)
  rows+=("$(printf '%-26s %-6s %5ss  %s' "$name" "$([ $rc = 0 ] && echo ok || echo FAIL)" "$dt" "$note")")
  [ $rc = 0 ] || status_all=1
  return $rc
}

{
  echo "date: $(date -u +%FT%TZ)"; echo "commit: ${GPU_CHECK_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
  nvidia-smi -L; nvidia-smi topo -m; nvcc --version | tail -1; "$PY" --version
} >"$raw/machine.txt" 2>&1
cat "$raw/machine.txt" >>"$log"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
# Two H200 of these machines are joined by 18 NVLinks; the topology test checks it.
if [ "$ngpu" -ge 2 ] && echo "$gpu_name" | grep -q H200; then export GPUCOMM_TEST_EXPECT_NVLINKS=18; fi

run_step configure cmake --preset release -DPython_EXECUTABLE="$PY" -DGPUCOMM_WARNINGS_AS_ERRORS=OFF || true
run_step build cmake --build --preset release -j "$(nproc)" || { echo "build failed"; }

if [ "$tests" = 1 ] && [ -d "$build" ]; then
  # Host tests in parallel; GPU tests one at a time, so they do not time-slice each other.
  run_step ctest ctest --test-dir "$build" -j 4 -LE gpu --output-on-failure --output-junit "$raw/ctest-junit.xml" --timeout 300
  run_step ctest-gpu ctest --test-dir "$build" -L gpu --output-on-failure --output-junit "$raw/ctest-gpu-junit.xml" --timeout 300
  if "$PY" -c "import pytest" 2>/dev/null; then
    run_step pytest env GPUCOMM_BUILD_DIR="$PWD/$build" "$PY" -m pytest tests/python -q -p no:cacheprovider
  fi
  if [ "$sanitize" = 1 ]; then
    for tool in memcheck racecheck synccheck; do
      run_step "sanitize-$tool" "$PY" scripts/run_under_sanitizer.py "$build" "$tool"
    done
  fi
fi

if [ "$bench" = 1 ] && [ -d "$build/python/gpucomm" ]; then
  export PYTHONPATH="$PWD/$build/python"
  run_step info "$PY" -m gpucomm info --json
  cp "$raw/info.log" "$raw/info.json" 2>/dev/null
  wanted() { [ -z "$only" ] || [[ "$only" == *",$1,"* ]]; }
  if wanted pingpong; then run_step bench-pingpong "$PY" -m gpucomm bench pingpong --json "$raw/pingpong.json"; fi
  for extra in scripts/gpu-bench.d/*.sh; do
    [ -f "$extra" ] || continue
    n=$(basename "$extra" .sh)
    wanted "$n" || continue
    run_step "bench-$n" bash "$extra" "$raw" "$build"
  done
fi

"$PY" - "$raw" "$out/summary.json" "${rows[@]}" <<'PY'
import json, sys, os, glob, re, datetime, subprocess
raw, dest, rows = sys.argv[1], sys.argv[2], sys.argv[3:]
summary = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "commit": os.environ.get("GPU_CHECK_COMMIT") or subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip(),
           "machine": subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip().splitlines(),
           "steps": rows, "benchmarks": {}}
import xml.etree.ElementTree as ET
junits = sorted(glob.glob(os.path.join(raw, "ctest*-junit.xml")))
if junits:
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    failed = []
    for c in (c for j in junits for c in ET.parse(j).getroot().iter("testcase")):
        st = c.get("status", "run")
        if c.find("failure") is not None or st == "fail":
            counts["failed"] += 1; failed.append(c.get("name"))
        elif c.find("skipped") is not None or st in ("notrun", "disabled"):
            counts["skipped"] += 1
        else:
            counts["passed"] += 1
    summary["ctest"] = counts
    summary["ctest_failed"] = failed
for f in glob.glob(os.path.join(raw, "*.json")):
    try:
        summary["benchmarks"][os.path.basename(f)] = json.load(open(f))
    except Exception:
        pass
json.dump(summary, open(dest, "w"), indent=1)
PY
tar -czf "$out/results.tar.gz" -C "$raw" . 2>/dev/null
echo
echo "gpu-check summary ($ngpu GPU(s): $gpu_name)"
printf '%s\n' "${rows[@]}"
exit $status_all
