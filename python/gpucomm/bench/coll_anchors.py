"""The anchors of ``gpucomm bench coll``: the same allreduce by NCCL (through torch.distributed) and by
torch symmetric memory (one-shot and two-shot), measured like ``gpucomm-bench-coll`` measures
gpucomm: per call, the median over samples of the mean over back-to-back calls (CUDA events on one
stream), eager and replayed from a CUDA graph that captured the calls once.

One process on one GPU (a one-rank job): NCCL's one-rank allreduce is a bare copy, so its eager time
is context only, while its graph replay is the per-operation floor that gpucomm's graph replay is
held to. Between GPUs the 2-GPU run drives the same code with more ranks (``torchrun``-style env).
What cannot run here (no torch, no CUDA, an API the installed torch lacks) is reported as not
measured, with the reason, instead of failing the benchmark.

    python -m gpucomm.bench.coll_anchors --json FILE [--sizes 8,1024,65536] [--iters N] [--samples N]
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _time_calls(torch, fn, iters: int, samples: int, graph: bool) -> list[float]:
    """Per-call times in us: `samples` means over `iters` back-to-back calls (eager or one replay)."""
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for _ in range(3):  # warm-up (also outside capture: NCCL and symm mem set up lazily)
            fn()
        stream.synchronize()
        exec_graph = None
        if graph:
            exec_graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(exec_graph, stream=stream):
                for _ in range(iters):
                    fn()
            exec_graph.replay()
        stream.synchronize()
        out = []
        for _ in range(samples):
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record(stream)
            if graph:
                exec_graph.replay()
            else:
                for _ in range(iters):
                    fn()
            stop.record(stream)
            stop.synchronize()
            out.append(start.elapsed_time(stop) * 1000.0 / iters)
    return out


# Where each anchor writes its result: torch's all_reduce and two-shot allreduce are in place, its
# all_gather_into_tensor and one-shot allreduce out of place (gpucomm is compared placement for placement).
ANCHOR_PLACEMENT = {"nccl_allreduce": "in", "nccl_allgather": "out", "symm_mem_one_shot": "out",
                    "symm_mem_two_shot": "in"}


def _row(name: str, nbytes: int, mode: str, times: list[float]) -> dict:
    row = {"anchor": name, "bytes": nbytes, "mode": mode, "time_us": statistics.median(times), "min_us": min(times),
           "samples_us": [round(t, 4) for t in times]}
    if name in ANCHOR_PLACEMENT:  # the collectives (the messaging baselines share this helper)
        row["placement"] = ANCHOR_PLACEMENT[name]
    return row


def measure(sizes: list[int], iters: int, samples: int) -> dict:
    report: dict = {"benchmark": "coll-anchors", "pes": 1, "results": [], "not_measured": {},
                    "time": "per call: median over samples of the mean over iters back-to-back calls"}
    try:
        import torch
        import torch.distributed as dist
    except ImportError as exc:
        report["not_measured"]["all"] = f"torch is not installed ({exc})"
        return report
    if not torch.cuda.is_available():
        report["not_measured"]["all"] = "no CUDA device visible to torch"
        return report
    report["torch"] = torch.__version__
    report["gpu"] = torch.cuda.get_device_name(0)
    nccl = getattr(torch.cuda, "nccl", None)
    try:
        report["nccl"] = ".".join(str(v) for v in nccl.version()) if nccl else None
    except Exception:  # noqa: BLE001 - a version query that fails only loses the label
        report["nccl"] = None
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(_free_port()))
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    torch.cuda.set_device(0)
    try:
        dist.init_process_group("nccl", rank=int(os.environ.get("RANK", "0")),
                                world_size=int(os.environ.get("WORLD_SIZE", "1")))
    except Exception as exc:  # noqa: BLE001 - reported, not fatal
        report["not_measured"]["all"] = f"torch.distributed NCCL init failed: {exc}"
        return report
    report["pes"] = dist.get_world_size()
    try:
        for nbytes in sizes:
            x = torch.ones(max(1, nbytes // 4), dtype=torch.float32, device="cuda")
            gathered = torch.empty(x.numel() * dist.get_world_size(), dtype=x.dtype, device="cuda")
            # allreduce is in place in torch (at one rank NCCL may launch nothing); allgather is
            # out of place (at one rank a copy kernel): both are anchors.
            for name, fn in (("nccl_allreduce", lambda: dist.all_reduce(x)),
                             ("nccl_allgather", lambda: dist.all_gather_into_tensor(gathered, x))):
                for mode in ("eager", "graph"):
                    try:
                        report["results"].append(_row(name, nbytes, mode,
                                                      _time_calls(torch, fn, iters, samples, mode == "graph")))
                    except Exception as exc:  # noqa: BLE001
                        report["not_measured"][f"{name} {mode} {nbytes}"] = str(exc).splitlines()[0]
        _symm_mem(torch, dist, sizes, iters, samples, report)
    finally:
        dist.destroy_process_group()
    return report


def _symm_mem(torch, dist, sizes, iters, samples, report) -> None:
    try:
        import torch.distributed._symmetric_memory as symm_mem
    except ImportError as exc:
        report["not_measured"]["torch_symm_mem"] = f"torch.distributed._symmetric_memory missing ({exc})"
        return
    group = dist.group.WORLD
    for nbytes in sizes:
        n = max(4, nbytes // 4)
        try:
            t = symm_mem.empty(n, dtype=torch.float32, device="cuda")
            symm_mem.rendezvous(t, group.group_name)
            t.fill_(1.0)
        except Exception as exc:  # noqa: BLE001
            report["not_measured"]["torch_symm_mem"] = f"symmetric allocation failed: {str(exc).splitlines()[0]}"
            return
        for name, fn in (("symm_mem_one_shot", lambda: torch.ops.symm_mem.one_shot_all_reduce(t, "sum", group.group_name)),
                         ("symm_mem_two_shot", lambda: torch.ops.symm_mem.two_shot_all_reduce_(t, "sum", group.group_name))):
            for mode in ("eager", "graph"):
                try:
                    report["results"].append(_row(name, nbytes, mode, _time_calls(torch, fn, iters, samples,
                                                                                  mode == "graph")))
                except Exception as exc:  # noqa: BLE001
                    report["not_measured"][f"{name} {mode} {nbytes}"] = str(exc).splitlines()[0][:200]


def print_table(report: dict) -> None:
    print(f"# anchors on {report.get('gpu', '?')}: torch {report.get('torch', '-')}, NCCL {report.get('nccl', '-')}, "
          f"{report.get('pes')} rank(s)")
    print(f"{'anchor':<20} {'mode':<6} {'bytes':>10} {'time us':>9} {'min us':>9}")
    for r in report["results"]:
        print(f"{r['anchor']:<20} {r['mode']:<6} {r['bytes']:>10} {r['time_us']:>9.2f} {r['min_us']:>9.2f}")
    for what, why in report["not_measured"].items():
        print(f"# not measured: {what}: {why}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gpucomm.bench.coll_anchors",
                                description=__doc__.split("\n\n")[0].replace("\n", " "))
    p.add_argument("--sizes", default="8,1024,65536,1048576", help="bytes per rank, comma-separated")
    p.add_argument("--iters", type=int, default=20, help="back-to-back calls per sample (per graph)")
    p.add_argument("--samples", type=int, default=20, help="samples (the median is reported)")
    p.add_argument("--json", metavar="FILE", help="write the results as JSON")
    a = p.parse_args(argv)
    try:
        sizes = [int(s) for s in a.sizes.split(",") if s]
    except ValueError:
        p.error(f"--sizes: '{a.sizes}' is not a comma-separated list of byte counts")
    if a.iters < 1 or a.samples < 1:
        p.error("--iters and --samples must be at least 1")
    report = measure(sizes, a.iters, a.samples)
    print_table(report)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
