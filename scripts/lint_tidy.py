#!/usr/bin/env python3
"""Runs clang-tidy on the tracked sources of a CMake build (scripts/lint.sh calls it).

Host sources (.cpp) are checked with their compile_commands.json entry. CUDA sources (.cu)
are compiled by nvcc, whose flags clang does not understand, so their entries are rewritten
into clang-CUDA flags: the include directories, defines and -std of the entry, plus
  -x cuda --cuda-path=CUDA --cuda-gpu-arch=sm_XX -nocudalib --cuda-host-only
and CUDA's CCCL include folder, which nvcc adds by itself. The host pass parses and checks
every __device__ and __global__ body too (the tree has no __CUDA_ARCH__-only code); the device
pass would need a CUDA version file that minimal toolkits lack.

Findings in headers are reported once, however many files include them. Prints one line per
finding (path:line:col: check: message) and exits 1 if there is any, 2 on usage errors.

  lint_tidy.py --clang-tidy BIN --build-dir DIR [--jobs N] [--report FILE] [--checks MORE_GLOBS]
               [--cuda-path DIR] [--export-fixes DIR] [FILE ...]
"""
import argparse
import collections
import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Folders whose headers are ours (findings there are reported); everything else is third party.
OWN_DIRS = ("include", "src", "tests", "bench", "tools", "python/src")
DIAG = re.compile(r"^(?P<path>[^\s:][^:]*):(?P<line>\d+):(?P<col>\d+): (?P<sev>warning|error): "
                  r"(?P<msg>.*?)(?: \[(?P<check>[^\]]+)\])?$")


def ere_escape(text):
    """Escapes text for clang-tidy's POSIX extended regular expressions."""
    return re.sub(r"([.^$|()\[\]{}*+?\\])", r"\\\1", text)


def tracked_sources():
    out = subprocess.run(["git", "ls-files", "*.cpp", "*.cu"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.split()
    return {os.path.join(ROOT, f) for f in out}


def cuda_args(entry, cuda_path):
    """The clang-CUDA flags of an nvcc compile_commands.json entry."""
    argv = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    keep, i, arch = [], 1, None
    while i < len(argv):
        a = argv[i]
        m = re.search(r"(?:compute|sm)_(\d+)", a) if ("arch" in a or a.startswith("-gencode")) else None
        if m and arch is None:
            arch = m.group(1)
        if a in ("-I", "-isystem", "-D", "-U", "-include"):
            keep += [a, argv[i + 1]]
            i += 2
            continue
        if a.startswith("-isystem="):  # nvcc's spelling
            keep += ["-isystem", a[len("-isystem="):]]
        elif a.startswith(("-I", "-D", "-U", "-isystem", "-std=")):
            keep.append(a)
        i += 1
    return (["-x", "cuda", f"--cuda-path={cuda_path}", f"--cuda-gpu-arch=sm_{arch or '90'}", "-nocudalib",
             "--cuda-host-only", "-Wno-unknown-cuda-version", "-isystem", os.path.join(cuda_path, "include", "cccl")]
            + keep)


def host_args(entry):
    """The flags of a host compile_commands.json entry, without compiler, source and output."""
    argv = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    out, i = [], 1
    while i < len(argv):
        a = argv[i]
        if a == "-o":
            i += 2
            continue
        if a != "-c" and os.path.normpath(os.path.join(entry["directory"], a)) != entry["db_file"]:
            out.append(a)
        i += 1
    return out


def tidy_command(tidy, entry, build_dir, cuda_path, checks, header_filter, fixes_yaml):
    f = entry["file"]
    cmd = [tidy, "--quiet", f"--header-filter={header_filter}"]
    if checks:
        cmd.append(f"--checks={checks}")
    if fixes_yaml:
        cmd.append(f"--export-fixes={fixes_yaml}")
    # Compiler warnings are the build's business; -w keeps them out of clang-tidy's output.
    if f.endswith(".cu"):
        return cmd + [f, "--"] + cuda_args(entry, cuda_path) + ["-w"]
    if entry["db_file"] != f:  # a source of another configuration, with a neighbour's flags
        return cmd + [f, "--"] + host_args(entry) + ["-w", "-Wno-error"]
    return cmd + ["-p", build_dir, "--extra-arg=-w", "--extra-arg=-Wno-error", f]


def run_one(cmd, cwd):
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    except OSError as e:
        return 127, f"cannot run {cmd[0]}: {e}", time.monotonic() - t0
    return p.returncode, p.stdout + p.stderr, time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clang-tidy", required=True)
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--cuda-path", default=os.environ.get("CUDA_PATH", "/usr/local/cuda"))
    ap.add_argument("--checks", default="", help="globs appended to the checks of .clang-tidy")
    ap.add_argument("--report", help="also write the findings grouped by check to this file")
    ap.add_argument("--export-fixes", metavar="DIR",
                    help="write each file's automatic fixes into DIR (for clang-apply-replacements)")
    ap.add_argument("files", nargs="*", help="only these sources (default: every tracked one in the build)")
    a = ap.parse_args()
    a.build_dir = os.path.abspath(a.build_dir)
    if os.sep in a.clang_tidy:
        a.clang_tidy = os.path.abspath(a.clang_tidy)

    db_path = os.path.join(a.build_dir, "compile_commands.json")
    if not os.path.exists(db_path):
        print(f"lint: {db_path} missing: configure the build first (cmake --preset ci)", file=sys.stderr)
        return 2
    with open(db_path) as fh:
        db = json.load(fh)
    own = tracked_sources()
    wanted = {os.path.abspath(f) for f in a.files}
    for f in sorted(wanted - own):
        print(f"lint: {os.path.relpath(f, ROOT)} is not a tracked .cpp or .cu file, not checked", file=sys.stderr)
    entries, seen, by_dir = [], set(), {}
    for e in db:
        f = os.path.normpath(os.path.join(e["directory"], e["file"]))
        if f.endswith(".cpp"):
            by_dir.setdefault(os.path.dirname(f), dict(e, db_file=f))
        if f in own and f not in seen and (not wanted or f in wanted):
            seen.add(f)
            entries.append(dict(e, file=f, db_file=f))
    # Sources this configuration does not compile (the no-CUDA variants, say) are checked with
    # the flags of a host source of the same folder; those without such a neighbour are listed.
    skipped = []
    for f in sorted(own - seen):
        if wanted and f not in wanted:
            continue
        near = by_dir.get(os.path.dirname(f))
        if f.endswith(".cpp") and near:
            entries.append(dict(near, file=f))
        else:
            skipped.append(os.path.relpath(f, ROOT))
    if not entries:
        print("lint: no source of this tree is in the compilation database", file=sys.stderr)
        return 2
    header_filter = "^" + ere_escape(ROOT) + "/(" + "|".join(ere_escape(d) for d in OWN_DIRS) + ")/"

    findings = {}  # (path, line, col, check, msg) -> None, in first-seen order
    failures = []  # files clang-tidy could not process at all (crash, bad flags)
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        if a.export_fixes:
            os.makedirs(a.export_fixes, exist_ok=True)
        futs = {pool.submit(run_one, tidy_command(a.clang_tidy, e, a.build_dir, a.cuda_path, a.checks, header_filter,
                                                  a.export_fixes and os.path.join(os.path.abspath(a.export_fixes),
                                                                                  f"{i}.yaml")),
                            e["directory"]): e for i, e in enumerate(entries)}
        for fut in concurrent.futures.as_completed(futs):
            rc, out, dt = fut.result()
            src, n = futs[fut]["file"], 0
            for line in out.splitlines():
                m = DIAG.match(line)
                if not m:
                    continue
                path = os.path.normpath(os.path.join(futs[fut]["directory"], m["path"]))
                rel = os.path.relpath(path, ROOT)
                check = (m["check"] or "").replace(",-warnings-as-errors", "") or ("clang-diagnostic-error" if m["sev"] == "error" else "clang-diagnostic")
                findings.setdefault((rel, int(m["line"]), int(m["col"]), check, m["msg"]), None)
                n += 1
            if rc != 0 and n == 0:
                failures.append((os.path.relpath(src, ROOT), out.strip().splitlines()[-3:]))
            print(f"  [{dt:5.1f}s] {os.path.relpath(src, ROOT)}" + (f": {n} diagnostic(s)" if n else ""),
                  file=sys.stderr, flush=True)

    keys = sorted(findings)
    for rel, line, col, check, msg in keys:
        print(f"{rel}:{line}:{col}: {check}: {msg}")
    by_check = collections.Counter(k[3] for k in keys)
    wall = time.monotonic() - t0
    summary = (f"clang-tidy: {len(keys)} finding(s) in {len({k[0] for k in keys})} file(s), "
               f"{len(entries)} source(s) checked in {wall:.0f}s")
    if a.report:
        with open(a.report, "w") as fh:
            fh.write(summary + "\n")
            for check, n in by_check.most_common():
                fh.write(f"  {n:5d}  {check}\n")
            for check, _ in by_check.most_common():
                fh.write(f"\n## {check} ({by_check[check]})\n")
                for rel, line, _, c, msg in keys:
                    if c == check:
                        fh.write(f"{rel}:{line}: {c}: {msg}\n")
            if skipped:
                fh.write("\nnot in the build, not checked: " + " ".join(skipped) + "\n")
    for check, n in by_check.most_common():
        print(f"  {n:5d}  {check}", file=sys.stderr)
    if skipped:
        print("lint: not in the build, not checked: " + " ".join(skipped), file=sys.stderr)
    for f, tail in failures:
        print(f"lint: clang-tidy failed on {f}: " + " | ".join(tail), file=sys.stderr)
    print(summary, file=sys.stderr)
    return 1 if keys or failures else 0


if __name__ == "__main__":
    sys.exit(main())
