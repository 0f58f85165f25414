#!/usr/bin/env bash
# Formatting and static analysis with the pinned clang-format and clang-tidy (exact versions in
# scripts/lint-requirements.txt; installed from PyPI into .deps/lint-venv when missing or changed).
#   scripts/lint.sh [--fix] [--tidy-fix] [--format-only] [--tidy-only] [--build-dir DIR]
#                   [--jobs N] [--report FILE] [--analyzer] [FILE ...]
# clang-format: every tracked *.cpp *.hpp *.h *.cu *.cuh file (or the FILEs given) against
#   .clang-format; prints the files that differ. --fix rewrites them in place instead.
# clang-tidy: the checks of .clang-tidy, warnings as errors, on every tracked .cpp and .cu file
#   of the build DIR's compile_commands.json (default build/ci, configured with
#   `cmake --preset ci` when it has none); .cu files with clang-CUDA flags (scripts/lint_tidy.py).
#   --report FILE writes the findings grouped by check. --analyzer adds the clang static
#   analyzer's core, cplusplus, deadcode and unix groups (slow). --tidy-fix applies the sound
#   automatic fixes (braces, nullptr, override, unused using-declarations, reserve; each once
#   however many files include a header), then reformats as --fix does; run scripts/lint.sh
#   again to see what is left.
# Exits 1 on any format difference or tidy finding, 2 on a usage or set-up error.
# Environment: PYTHON (python3), JOBS (default 2), CUDA_PATH (default /usr/local/cuda).
set -euo pipefail
cd "$(dirname "$0")/.."
fix=0 tidy_fix=0 do_format=1 do_tidy=1 build=build/ci report="" extra_checks="" files=()
jobs=${JOBS:-2}
usage() { sed -n '2,17p' "$0"; }
while (($#)); do
  case "$1" in
    --fix) fix=1 ;;
    --tidy-fix) tidy_fix=1 fix=1 ;;
    --format-only) do_tidy=0 ;;
    --tidy-only) do_format=0 ;;
    --build-dir) build=${2:?--build-dir needs a folder}; shift ;;
    --build-dir=*) build=${1#--build-dir=} ;;
    --jobs) jobs=${2:?--jobs needs a number}; shift ;;
    --jobs=*) jobs=${1#--jobs=} ;;
    --report) report=${2:?--report needs a file}; shift ;;
    --report=*) report=${1#--report=} ;;
    --analyzer) extra_checks="clang-analyzer-core.*,clang-analyzer-cplusplus.*,clang-analyzer-deadcode.*,clang-analyzer-unix.*" ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "scripts/lint.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) files+=("$1") ;;
  esac
  shift
done
if [ "$do_format" = 0 ] && [ "$do_tidy" = 0 ]; then
  echo "scripts/lint.sh: --format-only and --tidy-only exclude each other" >&2; exit 2
fi
PY=${PYTHON:-python3}

# --- the pinned tools -------------------------------------------------------------------------
req=scripts/lint-requirements.txt
venv=.deps/lint-venv
find_tool() {  # the native binary the wheel ships (not its Python launcher)
  local f
  f=$(find "$venv" -path "*/clang_${1#clang-}/data/bin/$1" -type f 2>/dev/null | head -1)
  [ -n "$f" ] && [ -x "$f" ] && echo "$f"
}
if ! cmp -s "$req" "$venv/lint-requirements.txt" || ! find_tool clang-format >/dev/null \
   || ! find_tool clang-tidy >/dev/null; then
  echo "[lint] installing $(grep -v '^#' "$req" | xargs) into $venv"
  rm -rf "$venv"
  mkdir -p .deps
  if "$PY" -m venv "$venv" >/dev/null 2>&1; then
    pip_cmd=("$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req")
  else  # no venv module (Debian without python3-venv): a private target folder does as well
    pip_cmd=("$PY" -m pip install -q --disable-pip-version-check --target "$venv/site" -r "$req")
  fi
  "${pip_cmd[@]}" || { echo "[lint] could not install the pinned tools from PyPI" >&2; rm -rf "$venv"; exit 2; }
  cp "$req" "$venv/lint-requirements.txt"
fi
clang_format=$(find_tool clang-format) || { echo "[lint] clang-format missing from $venv" >&2; exit 2; }
clang_tidy=$(find_tool clang-tidy) || { echo "[lint] clang-tidy missing from $venv" >&2; exit 2; }
"$clang_format" --version | head -1
echo "clang-tidy $("$clang_tidy" --version | grep -m1 -o "version [0-9.]*")"

status=0

# --- clang-format ----------------------------------------------------------------------------
run_format() {
  local fmt_files bad
  if ((${#files[@]})); then
    mapfile -t fmt_files < <(printf '%s\n' "${files[@]}" | grep -E '\.(cpp|hpp|h|cu|cuh)$' || true)
  else
    mapfile -t fmt_files < <(git ls-files -- '*.cpp' '*.hpp' '*.h' '*.cu' '*.cuh')
  fi
  if ! ((${#fmt_files[@]})); then
    echo "clang-format: no C++ or CUDA file among the files given"
  elif [ "$fix" = 1 ]; then
    printf '%s\0' "${fmt_files[@]}" | xargs -0 -r -P "$jobs" -n 16 "$clang_format" -i --style=file
    echo "clang-format: ${#fmt_files[@]} file(s) formatted in place"
  else
    # --dry-run -Werror exits non-zero for a file that would change; print those files only.
    mapfile -t bad < <(printf '%s\0' "${fmt_files[@]}" | xargs -0 -r -P "$jobs" -I{} \
      sh -c '"$1" --dry-run -Werror --style=file "$2" >/dev/null 2>&1 || echo "$2"' _ "$clang_format" {} | sort)
    if ((${#bad[@]})); then
      printf '  %s\n' "${bad[@]}"
      echo "clang-format: ${#bad[@]} of ${#fmt_files[@]} file(s) differ from .clang-format" \
           "(scripts/lint.sh --fix --format-only rewrites them)"
      status=1
    else
      echo "clang-format: ${#fmt_files[@]} file(s) ok"
    fi
  fi
}

# --- clang-tidy ------------------------------------------------------------------------------
run_tidy() {  # [fixes folder]
  local tidy_files=() f rc=0
  if [ ! -f "$build/compile_commands.json" ]; then
    if [ "$build" = build/ci ]; then
      cmake --preset ci -DPython_EXECUTABLE="$(command -v "$PY")" >/dev/null
    else
      echo "[lint] $build/compile_commands.json missing: configure that build first" >&2; exit 2
    fi
  fi
  for f in "${files[@]}"; do
    case "$f" in *.cpp|*.cu) tidy_files+=("$f") ;; esac
  done
  if ((${#files[@]})) && ! ((${#tidy_files[@]})); then
    echo "clang-tidy: no .cpp or .cu file among the files given"
    return
  fi
  "$PY" scripts/lint_tidy.py --clang-tidy "$clang_tidy" --build-dir "$build" --jobs "$jobs" \
    --cuda-path "${CUDA_PATH:-/usr/local/cuda}" ${report:+--report "$report"} \
    ${extra_checks:+"--checks=$extra_checks"} ${1:+--export-fixes "$1"} "${tidy_files[@]}" || rc=$?
  [ "$rc" = 0 ] || status=$(( rc > status ? rc : status ))
}

if [ "$tidy_fix" = 1 ]; then
  # Only checks whose automatic fix is sound. Not bugprone-implicit-widening-of-multiplication-
  # result: its fix casts the product, which silences the check and keeps the overflow; do the
  # multiplication in the wide type by hand.
  extra_checks="-*,readability-braces-around-statements,modernize-use-nullptr,modernize-use-override"
  extra_checks+=",misc-unused-using-decls,performance-inefficient-vector-operation"
  fixes=$(mktemp -d)
  trap 'rm -rf "$fixes"' EXIT
  run_tidy "$fixes"
  [ "$status" -lt 2 ] || exit "$status"
  "$(dirname "$clang_tidy")/clang-apply-replacements" --format --style=file "$fixes"
  echo "clang-tidy: automatic fixes applied"
  run_format
  echo "run scripts/lint.sh again to see what is left"
  exit 0
fi
[ "$do_format" = 0 ] || run_format
[ "$do_tidy" = 0 ] || run_tidy
exit $status
