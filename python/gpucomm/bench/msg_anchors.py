"""The NCCL baseline of ``gpucomm bench msg --anchors``: point-to-point between GPU buffers through
NCCL (driven through torch.distributed, as ``gpucomm bench coll --anchors`` drives it), timed like the
collectives' anchors (CUDA events on one stream around back-to-back calls, the median over samples).

* 1 rank (one GPU, a PE to itself): torch refuses send/recv to its own rank, so each message is an
  ``all_to_all_single`` of a one-rank group, which NCCL runs as a send and a receive of the rank to
  itself in one group. ``nccl_sendrecv_rt``: two such messages of 8 bytes (there and back);
  ``nccl_sendrecv_us``: one message of 1, 4 or 16 MB.
* 2 ranks (two GPUs; this module starts the second process itself, torchrun-style env): rank 0
  sends, rank 1 receives and answers (``dist.send``/``dist.recv``). ``nccl_sendrecv_rt``: the 8-byte
  round trip; ``nccl_sendrecv_us``: half the round trip at 1, 4 or 16 MB.

What cannot run here (no torch, no CUDA, fewer GPUs than ranks) is reported as not measured, with the
reason, instead of failing the benchmark.

    python -m gpucomm.bench.msg_anchors --json FILE [--ranks 1|2] [--quick]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from gpucomm.bench.coll_anchors import _free_port, _row, _time_calls, print_table

SIZES = (1 << 20, 4 << 20, 16 << 20)


def measure(iters: int, samples: int) -> dict:
    """This process's rank of the measurement (RANK / WORLD_SIZE in the environment, default 1 rank)."""
    rank, ranks = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    report: dict = {"benchmark": "msg-anchors", "pes": ranks, "results": [], "not_measured": {},
                    "how": ("all_to_all_single of a one-rank group (NCCL send + receive to itself)" if ranks == 1
                            else "dist.send / dist.recv between two GPUs"),
                    "time": "median over samples of the mean over back-to-back calls (CUDA events)"}
    try:
        import torch
        import torch.distributed as dist
    except ImportError as exc:
        report["not_measured"]["all"] = f"torch is not installed ({exc})"
        return report
    if not torch.cuda.is_available() or torch.cuda.device_count() < ranks:
        report["not_measured"]["all"] = f"needs {ranks} GPU(s) visible to torch"
        return report
    report["gpu"] = torch.cuda.get_device_name(rank)
    report["torch"] = torch.__version__
    nccl = getattr(torch.cuda, "nccl", None)
    try:
        report["nccl"] = ".".join(str(v) for v in nccl.version()) if nccl else None
    except Exception:  # noqa: BLE001 - a version query that fails only loses the label
        report["nccl"] = None
    torch.cuda.set_device(rank)
    try:
        dist.init_process_group("nccl", rank=rank, world_size=ranks)
    except Exception as exc:  # noqa: BLE001 - reported, not fatal
        report["not_measured"]["all"] = f"torch.distributed NCCL init failed: {exc}"
        return report
    try:
        for nbytes in (8,) + SIZES:
            out = torch.arange(nbytes, dtype=torch.uint8, device="cuda")
            back = torch.zeros(nbytes, dtype=torch.uint8, device="cuda")
            if ranks == 1:
                def once():
                    dist.all_to_all_single(back, out)

                def there_and_back():
                    once()
                    dist.all_to_all_single(out, back)
            else:
                peer = 1 - rank

                def there_and_back():
                    if rank == 0:
                        dist.send(out, peer)
                        dist.recv(back, peer)
                    else:
                        dist.recv(back, peer)
                        dist.send(out, peer)
                once = there_and_back
            name = "nccl_sendrecv_rt" if nbytes == 8 else "nccl_sendrecv_us"
            fn = there_and_back if nbytes == 8 else once
            try:
                times = _time_calls(torch, fn, iters if nbytes == 8 else max(2, iters // 10), samples, False)
                if ranks == 2 and nbytes != 8:
                    times = [t / 2 for t in times]  # a ping-pong: half the round trip per message
                torch.cuda.synchronize()
                if not torch.equal(back, torch.arange(nbytes, dtype=torch.uint8, device="cuda")):
                    raise RuntimeError("the received bytes differ from the sent ones")
                report["results"].append(_row(name, nbytes, "eager", times))
            except Exception as exc:  # noqa: BLE001
                report["not_measured"][f"{name} {nbytes}"] = str(exc).splitlines()[0][:200]
    finally:
        dist.destroy_process_group()
    return report


def run_ranks(ranks: int, argv: list[str]) -> int:
    """Starts `ranks` processes of this module (rank 0 writes the report) and waits for them."""
    env = {**os.environ, "WORLD_SIZE": str(ranks), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port()),
           "NCCL_NVLS_ENABLE": "0", "NVSHMEM_DISABLE_NVLS": "1", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}
    procs = [subprocess.Popen([sys.executable, "-m", "gpucomm.bench.msg_anchors", *argv],
                              env={**env, "RANK": str(r), "LOCAL_RANK": str(r)}) for r in range(ranks)]
    return max(p.wait() for p in procs)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gpucomm.bench.msg_anchors",
                                description=__doc__.split("\n\n")[0].replace("\n", " "))
    p.add_argument("--ranks", type=int, default=1, choices=(1, 2), help="1: a GPU to itself; 2: two GPUs")
    p.add_argument("--quick", action="store_true", help="fewer iterations and samples")
    p.add_argument("--json", metavar="FILE", help="write the results as JSON")
    a = p.parse_args(argv)
    if "RANK" not in os.environ:
        args = ["--ranks", str(a.ranks)] + (["--quick"] if a.quick else []) + (["--json", a.json] if a.json else [])
        return run_ranks(a.ranks, args)
    report = measure(20 if a.quick else 100, 5 if a.quick else 11)
    if os.environ.get("RANK") == "0":
        print_table(report)
        if a.json:
            Path(a.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
