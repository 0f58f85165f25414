#!/usr/bin/env bash
# Builds gpucomm (Release, sm_90) on a GPU machine, runs the whole test suite (GPU tests
# included), with --sanitize each compute-sanitizer tool on its subset of the GPU tests
# (scripts/run_under_sanitizer.py: at most 9 minutes per tool; tests that need concurrent kernels
# or trap on purpose are skipped with the reason), and the quick benchmarks.
# Writes into OUTDIR: summary.json, gpu-check.log and results.tar.gz (raw JSON, JUnit, logs),
# and prints a short table last.
#   scripts/gpu-check.sh OUTDIR [--sanitize[=SECONDS]] [--no-bench] [--only-bench] [--bench=NAME,...]
#                               [--layer=LAYER,...|all] [--targets=TARGET,...] [--dry-run]
#   scripts/gpu-check.sh --help
# --bench=NAME,... runs only the named benchmarks (pingpong and scripts/gpu-bench.d/NAME.sh).
# --layer=LAYER,... runs only the GPU tests (ctest --test-dir BUILD/tests/LAYER -L gpu) and the
#   quick benchmarks of the named layers (table below; `all` names every layer), without the
#   host tests and pytest; --sanitize then checks those layers' GPU tests. The final table shows
#   each layer's time beside its budget and flags OVER (a flag, not a failure).
# --sanitize=SECONDS gives each compute-sanitizer tool call that budget instead of 540 s.
# --targets=TARGET,... builds only those CMake targets (and what they need) instead of everything:
#   a quicker check of a few layers; tests whose programs were not built then fail as missing.
# --dry-run prints the plan (layers, test folders, GPU test counts where the build exists,
#   benchmarks, budgets) and runs nothing; OUTDIR may then be left out.
# Needs no network: GoogleTest comes from the system, /usr/src/googletest or .deps/googletest.
set -uo pipefail
cd "$(dirname "$0")/.."

# Layers, their budgets on one H100 (seconds of GPU tests, seconds of quick benchmarks) and
# their benchmarks (pingpong is built in; NAME means scripts/gpu-bench.d/NAME.sh, skipped while
# missing). Target: at most 90 s of GPU tests and 60 s of quick benchmarks per layer.
#   layer        tests  bench  benchmarks
layer_table='
    core            10      0  -
    bootstrap       10      0  -
    topology        20      0  -
    heap            20      0  -
    runtime         45      0  -
    rma             90     60  rma,pingpong
    proxy           90     60  proxy
    transport       60      0  -
    matching        90     60  match
    trace           10      0  -
    reliability     20     30  faults
    messaging       90     60  msg
    collectives     90     60  coll
    patterns        90     60  patterns
    apps            90     60  apps
'
declare -A budget_tests budget_bench layer_benches
all_layers=()
while read -r l t b n; do
  [ -n "${l:-}" ] || continue
  all_layers+=("$l"); budget_tests[$l]=$t; budget_bench[$l]=$b; layer_benches[$l]=${n/#-/}
done <<<"$layer_table"

usage() { awk 'NR > 1 && !/^#/ {exit} NR > 1 {print}' "$0"; }
out="" sanitize=0 san_budget=540 bench=1 tests=1 only="" layers_arg="" dry=0 targets=()
for a in "$@"; do
  case "$a" in
    --sanitize) sanitize=1 ;;
    --sanitize=*) sanitize=1 san_budget=${a#--sanitize=}
      [[ "$san_budget" =~ ^[0-9]+$ ]] || { echo "gpu-check: --sanitize=SECONDS needs a number, got '$san_budget'" >&2; exit 2; } ;;
    --no-bench) bench=0 ;;
    --only-bench) tests=0 ;;
    --bench=*) only=",${a#--bench=}," ;;
    --layer=*|--layers=*) layers_arg=${a#*=} ;;
    --dry-run) dry=1 ;;
    --targets=*) IFS=, read -r -a targets <<<"${a#--targets=}" ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "gpu-check: unknown option '$a' (see --help)" >&2; exit 2 ;;
    *) if [ -n "$out" ]; then echo "gpu-check: one OUTDIR only ('$out', then '$a')" >&2; exit 2; fi
       out=$a ;;
  esac
done
layers=()
if [ -n "$layers_arg" ]; then
  IFS=, read -r -a req_layers <<<"$layers_arg"
  for l in "${req_layers[@]}"; do
    [ -n "$l" ] || continue
    if [ "$l" = all ]; then layers=("${all_layers[@]}"); break; fi
    if [ -z "${budget_tests[$l]+x}" ]; then
      echo "gpu-check: unknown layer '$l' (layers: ${all_layers[*]}, all)" >&2; exit 2
    fi
    layers+=("$l")
  done
  ((${#layers[@]})) || { echo "gpu-check: --layer needs at least one layer" >&2; exit 2; }
fi
build=build/release
wanted() { [ -z "$only" ] || [[ "$only" == *",$1,"* ]]; }
bench_cmd() {  # benchmark name -> how it runs ("" when it has no script yet)
  if [ "$1" = pingpong ]; then echo "python3 -m gpucomm bench pingpong --json RAW/pingpong.json"
  elif [ -f "scripts/gpu-bench.d/$1.sh" ]; then echo "bash scripts/gpu-bench.d/$1.sh RAW $build"
  fi
}

if [ "$dry" = 1 ]; then
  echo "gpu-check plan (dry run: nothing is built or run)"
  echo "  outdir: ${out:-(none given)}   build: $build (cmake --preset release)   sanitize: $sanitize"
  if ((${#layers[@]} == 0)); then
    echo "  all layers, as without --layer:"
    if [ "$tests" = 1 ]; then
      echo "    ctest --test-dir $build -LE gpu (host tests); ctest --test-dir $build -L gpu (GPU tests); pytest"
      [ "$sanitize" = 0 ] || echo "    compute-sanitizer memcheck, racecheck, synccheck, each on its subset (scripts/run_under_sanitizer.py BUILD TOOL --list)"
    fi
    if [ "$bench" = 1 ]; then
      names=(pingpong)
      for f in scripts/gpu-bench.d/*.sh; do [ -f "$f" ] && names+=("$(basename "$f" .sh)"); done
      for n in "${names[@]}"; do wanted "$n" && echo "    bench $n: $(bench_cmd "$n")"; done
    fi
    exit 0
  fi
  printf '  %-12s %-18s %-14s %12s %12s  %s\n' layer "test folder" "gpu tests" "tests budget" "bench budget" benchmarks
  for l in "${layers[@]}"; do
    dir="$build/tests/$l" count="-"
    if [ ! -d "tests/$l" ]; then count="no tests yet"
    elif [ -f "$dir/CTestTestfile.cmake" ]; then
      count=$(ctest --test-dir "$dir" -L gpu -N 2>/dev/null | sed -n 's/^Total Tests: //p'); count=${count:-?}
    else count="(not built)"
    fi
    plan=""
    if [ "$bench" = 1 ] && [ -n "${layer_benches[$l]}" ]; then
      IFS=, read -r -a bl <<<"${layer_benches[$l]}"
      for n in "${bl[@]}"; do
        wanted "$n" || continue
        if [ -n "$(bench_cmd "$n")" ]; then plan+="$n "; else plan+="($n: no script) "; fi
      done
    fi
    [ "$tests" = 1 ] || count="(--only-bench)"
    plan=${plan% }
    printf '  %-12s %-18s %-14s %11ss %11ss  %s\n' "$l" "tests/$l" "$count" "${budget_tests[$l]}" "${budget_bench[$l]}" "${plan:--}"
  done
  exit 0
fi
[ -n "$out" ] || { echo "usage: scripts/gpu-check.sh OUTDIR [options] (see --help)" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
raw=$(mktemp -d)
log="$out/gpu-check.log"
: >"$log"
# Never NVLink multicast; never touch clocks or reset the GPU.
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1
PY=$(command -v python3)
rows=()
status_all=0

last_dt=0
run_step() {  # name, command...: runs, logs, records a table row; sets last_dt (seconds)
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
  last_dt=$dt
  return $rc
}

{
  echo "date: $(date -u +%FT%TZ)"; echo "commit: ${GPU_CHECK_COMMIT:-$(git describe --always --dirty --abbrev=12 --exclude='*' 2>/dev/null || echo unknown)}"
  nvidia-smi -L; nvidia-smi topo -m; nvcc --version | tail -1; "$PY" --version
} >"$raw/machine.txt" 2>&1
cat "$raw/machine.txt" >>"$log"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
# Two H200 of these machines are joined by 18 NVLinks; the topology test checks it.
if [ "$ngpu" -ge 2 ] && echo "$gpu_name" | grep -q H200; then export GPUCOMM_TEST_EXPECT_NVLINKS=18; fi

run_step configure cmake --preset release -DPython_EXECUTABLE="$PY" -DGPUCOMM_WARNINGS_AS_ERRORS=OFF || true
if ((${#targets[@]})); then
  run_step build cmake --build --preset release -j "$(nproc)" --target "${targets[@]}" || { echo "build failed"; }
else
  run_step build cmake --build --preset release -j "$(nproc)" || { echo "build failed"; }
fi

declare -A spent_tests spent_bench layer_note
if ((${#layers[@]})); then
  # Layer by layer: the GPU tests of tests/LAYER one at a time, then the layer's benchmarks.
  for l in "${layers[@]}"; do spent_tests[$l]=0 spent_bench[$l]=0 layer_note[$l]=""; done
  if [ "$tests" = 1 ] && [ -d "$build" ]; then
    for l in "${layers[@]}"; do
      if [ ! -f "$build/tests/$l/CTestTestfile.cmake" ]; then
        echo "=== gpu-$l: no tests/$l in this build, skipped" | tee -a "$log"
        layer_note[$l]+=" (no tests yet)"; continue
      fi
      run_step "gpu-$l" ctest --test-dir "$build/tests/$l" -L gpu --output-on-failure \
        --output-junit "$raw/ctest-gpu-$l-junit.xml" --timeout 300
      spent_tests[$l]=$(( spent_tests[$l] + last_dt ))
      if [ "$sanitize" = 1 ]; then
        for tool in memcheck racecheck synccheck; do
          run_step "sanitize-$tool-$l" "$PY" scripts/run_under_sanitizer.py "$build/tests/$l" "$tool" \
            --budget "$san_budget" --json "$raw/sanitize-$tool-$l.json"
        done
      fi
    done
  fi
  if [ "$bench" = 1 ] && [ -d "$build/python/gpucomm" ]; then
    export PYTHONPATH="$PWD/$build/python"
    run_step info "$PY" -m gpucomm info --json
    cp "$raw/info.log" "$raw/info.json" 2>/dev/null
    declare -A bench_done
    for l in "${layers[@]}"; do
      [ -n "${layer_benches[$l]}" ] || continue
      IFS=, read -r -a bl <<<"${layer_benches[$l]}"
      for n in "${bl[@]}"; do
        wanted "$n" || continue
        [ -z "${bench_done[$n]+x}" ] || continue
        bench_done[$n]=1
        if [ "$n" = pingpong ]; then
          run_step bench-pingpong "$PY" -m gpucomm bench pingpong --json "$raw/pingpong.json"
        elif [ -f "scripts/gpu-bench.d/$n.sh" ]; then
          run_step "bench-$n" bash "scripts/gpu-bench.d/$n.sh" "$raw" "$build"
        else
          echo "=== bench-$n: no scripts/gpu-bench.d/$n.sh yet, skipped" | tee -a "$log"
          layer_note[$l]+=" (no $n benchmark yet)"; continue
        fi
        spent_bench[$l]=$(( spent_bench[$l] + last_dt ))
      done
    done
  fi
  layer_rows=()
  : >"$raw/layers.tsv"
  for l in "${layers[@]}"; do
    over=""
    (( spent_tests[$l] > budget_tests[$l] )) && over+=" OVER(tests)"
    (( spent_bench[$l] > budget_bench[$l] )) && over+=" OVER(bench)"
    layer_rows+=("$(printf '%-12s %5ss / %3ss %7ss / %3ss %s' "$l" "${spent_tests[$l]}" "${budget_tests[$l]}" \
      "${spent_bench[$l]}" "${budget_bench[$l]}" "$over${layer_note[$l]}")")
    printf '%s\t%s\t%s\t%s\t%s\n' "$l" "${spent_tests[$l]}" "${budget_tests[$l]}" "${spent_bench[$l]}" \
      "${budget_bench[$l]}" >>"$raw/layers.tsv"
  done
else
  if [ "$tests" = 1 ] && [ -d "$build" ]; then
    # Host tests in parallel; GPU tests one at a time, so they do not time-slice each other.
    run_step ctest ctest --test-dir "$build" -j 4 -LE gpu --output-on-failure --output-junit "$raw/ctest-junit.xml" --timeout 300
    run_step ctest-gpu ctest --test-dir "$build" -L gpu --output-on-failure --output-junit "$raw/ctest-gpu-junit.xml" --timeout 300
    if "$PY" -c "import pytest" 2>/dev/null; then
      run_step pytest env GPUCOMM_BUILD_DIR="$PWD/$build" "$PY" -m pytest tests/python -q -p no:cacheprovider
    fi
    if [ "$sanitize" = 1 ]; then
      for tool in memcheck racecheck synccheck; do
        run_step "sanitize-$tool" "$PY" scripts/run_under_sanitizer.py "$build" "$tool" --budget "$san_budget" \
          --json "$raw/sanitize-$tool.json"
      done
    fi
  fi

  if [ "$bench" = 1 ] && [ -d "$build/python/gpucomm" ]; then
    export PYTHONPATH="$PWD/$build/python"
    run_step info "$PY" -m gpucomm info --json
    cp "$raw/info.log" "$raw/info.json" 2>/dev/null
    if wanted pingpong; then run_step bench-pingpong "$PY" -m gpucomm bench pingpong --json "$raw/pingpong.json"; fi
    for extra in scripts/gpu-bench.d/*.sh; do
      [ -f "$extra" ] || continue
      n=$(basename "$extra" .sh)
      wanted "$n" || continue
      run_step "bench-$n" bash "$extra" "$raw" "$build"
    done
  fi

fi

"$PY" - "$raw" "$out/summary.json" "${rows[@]}" <<'PY'
import json, sys, os, glob, re, datetime, shutil, subprocess
raw, dest, rows = sys.argv[1], sys.argv[2], sys.argv[3:]
summary = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           # The commit the benchmarks were built from as well (cmake/GpucommCommit.cmake reads
           # GPU_CHECK_COMMIT; otherwise both describe the tree, "-dirty" when it has changes).
           "commit": os.environ.get("GPU_CHECK_COMMIT") or subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=12", "--exclude=*"], capture_output=True, text=True).stdout.strip(),
           "machine": subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip().splitlines() if shutil.which("nvidia-smi") else [],
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
        data = json.load(open(f))
    except Exception:
        continue
    name = os.path.basename(f)
    if name.startswith("sanitize-"):  # per tool: what ran clean, what was skipped and why
        summary.setdefault("sanitizer", {})[name[len("sanitize-"):-len(".json")]] = {
            "clean": data.get("clean"), "seconds": data.get("seconds"),
            "results": {r["test"]: r["result"] + (": " + r["detail"] if r["result"] in ("skipped", "not run") else "")
                        for r in data.get("results", [])}}
    else:
        summary["benchmarks"][name] = data
layers_tsv = os.path.join(raw, "layers.tsv")
if os.path.exists(layers_tsv):
    summary["layers"] = {}
    for line in open(layers_tsv):
        name, t, tb, b, bb = line.rstrip("\n").split("\t")
        summary["layers"][name] = {"tests_s": int(t), "tests_budget_s": int(tb), "bench_s": int(b),
                                   "bench_budget_s": int(bb), "over": int(t) > int(tb) or int(b) > int(bb)}
# Every benchmark must name the summary's commit (a report built from another tree is flagged).
mine = summary["commit"][:12]
other = {n: b.get("commit") for n, b in summary["benchmarks"].items()
         if isinstance(b, dict) and b.get("commit") and not (str(b["commit"]).startswith(mine) or mine.startswith(str(b["commit"])))}
if other:
    summary["commit_mismatch"] = other
    print("gpu-check: benchmarks built from another commit than " + mine + ": " +
          ", ".join(f"{n} ({c})" for n, c in sorted(other.items())), file=sys.stderr)
json.dump(summary, open(dest, "w"), indent=1)
PY
tar -czf "$out/results.tar.gz" -C "$raw" . 2>/dev/null
echo
echo "gpu-check summary ($ngpu GPU(s): $gpu_name)"
printf '%s\n' "${rows[@]}"
if ((${#layers[@]})); then
  echo
  echo "per layer on ${gpu_name:-no GPU} (measured / budget; OVER flags a layer past its budget, not a failure)"
  printf '%-12s %15s %16s\n' layer "gpu tests" "quick bench"
  printf '%s\n' "${layer_rows[@]}"
fi
exit $status_all
