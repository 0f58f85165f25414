"""The in-kernel anchors of ``gpucomm bench coll --anchors``: NVSHMEM's device collectives and NCCL's
device API (its LSA barrier, and a one-shot allreduce through load/store windows), each timed inside a
kernel the way ``gpucomm-bench-coll --in-kernel`` times gpucomm's in-kernel barrier and allreduce:
one block, ``iters`` back-to-back operations per kernel, CUDA events, the median over kernels.

The programs (``bench/coll_anchors``) stay out of gpucomm's build: ``bench/coll_anchors/build.sh DIR``
builds them against the NVSHMEM and NCCL of this Python's site-packages (NVSHMEM with ``-rdc`` and its
static device library). This module takes them from ``--anchors-dir`` or ``GPUCOMM_ANCHORS_DIR``, or
builds them from the source tree into a cache folder, runs each under ``gpucomm run -n N`` (a GPU per
PE, NVLink multicast off) and reports what cannot run as "not available: REASON".
"""
from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

from gpucomm.launch import LaunchOptions, launch

PROGRAMS = {"nvshmem_coll": "NVSHMEM", "nccl_device_coll": "NCCL device API"}
# Environment of every anchor run: NVLink multicast stays off; NVSHMEM starts without MPI.
ENV = {"NCCL_NVLS_ENABLE": "0", "NVSHMEM_DISABLE_NVLS": "1", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}
ENV_DEFAULTS = {"NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME": "lo", "NVSHMEM_SYMMETRIC_SIZE": "256M"}
# Rows of each table line: gpucomm's in-kernel row, then each library's anchor of the same operation.
ANCHOR_OF = {"barrier": {"nvshmem_coll": "nvshmemx_barrier_all_block", "nccl_device_coll": "nccl_lsa_barrier"},
             "allreduce": {"nvshmem_coll": "nvshmemx_float_sum_reduce_block",
                           "nccl_device_coll": "nccl_lsa_oneshot_allreduce"}}


def build_script() -> Path | None:
    """bench/coll_anchors/build.sh of the source tree this package comes from (None when installed)."""
    script = Path(__file__).resolve().parents[3] / "bench" / "coll_anchors" / "build.sh"
    return script if script.is_file() else None


def _stale(folder: Path, script: Path) -> bool:
    """Whether the programs in `folder` are older than their sources (or missing)."""
    sources = [p.stat().st_mtime for p in script.parent.iterdir() if p.is_file()]
    for name in PROGRAMS:
        made = [folder / name, folder / f"{name}.unavailable"]
        times = [p.stat().st_mtime for p in made if p.exists()]
        if not times or max(times) < max(sources):
            return True
    return False


def programs_folder(given: str | None) -> tuple[Path | None, str]:
    """The folder holding the programs (a folder given is taken as it is; else the source tree's are
    built into a cache folder when missing or older than their sources), or None with the reason."""
    folder = given or os.environ.get("GPUCOMM_ANCHORS_DIR")
    if folder:
        return Path(folder), ""
    script = build_script()
    if not script:
        return None, ("the anchor programs are not built (in a source checkout: bench/coll_anchors/build.sh DIR, "
                      "then --anchors-dir DIR)")
    out = Path(tempfile.gettempdir()) / f"gpucomm-coll-anchors-{os.getuid()}"
    if _stale(out, script):
        print(f"gpucomm bench coll: building the in-kernel anchors into {out}", flush=True)
        subprocess.run(["bash", str(script), str(out)], check=False)
    return out, ""


def run(n: int, gpus: int, sizes: list[int], iters: int, samples: int, threads: int, folder_arg: str | None,
        out_json: str | None) -> dict:
    """Runs every anchor program on `n` PEs; returns {program: report or {"not_available": reason}}."""
    report: dict = {"benchmark": "coll-device-anchors", "pes": n}
    if n > gpus:
        why = f"{n} PEs on {gpus} GPU(s): NVSHMEM and NCCL need a GPU per PE"
        return {**report, **{p: {"not_available": why} for p in PROGRAMS}}
    folder, why = programs_folder(folder_arg)
    with tempfile.TemporaryDirectory(prefix="gpucomm-anchors-") as tmp:
        for prog in PROGRAMS:
            report[prog] = _run_one(prog, folder, why, n, sizes, iters, samples, threads, Path(tmp))
    if out_json:
        Path(out_json).write_text(json.dumps(report, indent=1))
    return report


def _run_one(prog: str, folder: Path | None, why: str, n: int, sizes: list[int], iters: int, samples: int,
             threads: int, tmp: Path) -> dict:
    if folder is None:
        return {"not_available": why}
    exe = folder / prog
    if not (exe.is_file() and os.access(exe, os.X_OK)):
        note = folder / f"{prog}.unavailable"
        text = note.read_text().strip() if note.exists() else f"not available: {exe} is not built"
        return {"not_available": text.removeprefix("not available: ")}
    out = tmp / f"{prog}.json"
    env = {**ENV, **{k: os.environ.get(k, v) for k, v in ENV_DEFAULTS.items()},
           "NVSHMEM_ANCHOR_UID_FILE": str(tmp / f"{prog}.nvshmem-uid"),
           "NCCL_ANCHOR_UID_FILE": str(tmp / f"{prog}.nccl-uid")}
    libdir = folder / f"{prog}.libdir"
    if libdir.exists():
        env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (libdir.read_text().strip(),
                                                             os.environ.get("LD_LIBRARY_PATH", "")) if p)
    cmd = [str(exe), "--json", str(out), "--sizes", ",".join(str(s) for s in sizes), "--iters", str(iters),
           "--samples", str(samples), "--threads", str(threads)]
    print(f"gpucomm bench coll: anchor {PROGRAMS[prog]}: gpucomm run -n {n} -- {' '.join(cmd)}", flush=True)
    rc = launch(LaunchOptions(nprocs=n, command=cmd, extra_env=env, gpus="auto", timeout=600.0))
    if rc != 0 or not out.exists():
        return {"not_available": f"{prog} failed (exit status {rc}; its output is above)"}
    return json.loads(out.read_text())


def compare(ours: dict, anchors: dict) -> str:
    """Lines: gpucomm's in-kernel barrier and allreduce (each call on its own, and in one session)
    beside the anchors' (time per operation)."""
    mine = {(r["op"], r["size"]): r["time_us"] for r in ours.get("results", []) if r.get("mode") == "kernel"}
    session = {(r["op"], r["size"]): r["time_us"] for r in ours.get("results", []) if r.get("mode") == "session"}
    theirs = {}
    for prog in PROGRAMS:
        rep = anchors.get(prog, {})
        for r in rep.get("results", []):
            theirs[(prog, r["anchor"], r["bytes"])] = r["time_us"]
    lines = [f"# in-kernel, {anchors.get('pes')} PE(s), us per operation (one block, back-to-back calls in one kernel)",
             f"{'# op':<12} {'bytes':>8} {'gpucomm':>9} {'session':>9} {'NVSHMEM':>9} {'NCCL dev':>9}"]

    def cell(v):
        return f"{v:9.3f}" if v is not None else f"{'-':>9}"

    for (op, size), t in sorted(mine.items(), key=lambda kv: (kv[0][0] != "barrier", kv[0][1])):
        row = [theirs.get((prog, ANCHOR_OF[op][prog], size)) for prog in PROGRAMS]
        lines.append(f"{op:<12} {size:>8} {cell(t)} {cell(session.get((op, size)))} {cell(row[0])} {cell(row[1])}")
    for prog, name in PROGRAMS.items():
        why = anchors.get(prog, {}).get("not_available")
        if why:
            lines.append(f"# {name}: not available: {why}")
    return "\n".join(lines)
