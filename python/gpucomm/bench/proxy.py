"""``gpucomm bench proxy``: the paths of one-sided operations side by side, in one run.

Runs ``gpucomm-bench-proxy`` once per configuration - direct stores, the CPU proxy (ring in host
or device memory, with and without doorbell batching), the GPU service agent (ring in device or
host memory), UCX where its library is built - on 2 GPU PEs when 2 GPUs exist, else on 1 PE that
targets itself (each latency point is then a whole descriptor round trip). Then the agent-count
sweeps (CPU proxy threads, GPU agent blocks) on the message rate. Prints the comparison and the
issue-level targets, and writes every configuration's results with ``--json FILE``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from gpucomm._tools import find_tool

# name, environment, benchmarks (the tool's --only)
BASE = {"GPUCOMM_DEVICE": "gpu", "NCCL_NVLS_ENABLE": "0", "NVSHMEM_DISABLE_NVLS": "1"}
CONFIGS = [
    ("direct", {"GPUCOMM_TRANSPORT": "direct"}, "latency,rate,bandwidth"),
    ("proxy-cpu/host-ring", {"GPUCOMM_TRANSPORT": "proxy-cpu", "GPUCOMM_PROXY_RING": "host"}, "latency,rate,bandwidth"),
    ("proxy-cpu/device-ring", {"GPUCOMM_TRANSPORT": "proxy-cpu", "GPUCOMM_PROXY_RING": "device"}, "latency,rate"),
    ("proxy-cpu/host-ring/doorbell-16", {"GPUCOMM_TRANSPORT": "proxy-cpu", "GPUCOMM_PROXY_RING": "host",
                                         "GPUCOMM_PROXY_DOORBELL": "16"}, "rate"),
    ("proxy-gpu/device-ring", {"GPUCOMM_TRANSPORT": "proxy-gpu", "GPUCOMM_PROXY_RING": "device"}, "latency,rate,bandwidth"),
    ("proxy-gpu/host-ring", {"GPUCOMM_TRANSPORT": "proxy-gpu", "GPUCOMM_PROXY_RING": "host"}, "latency,rate"),
    ("ucx", {"GPUCOMM_TRANSPORT": "ucx"}, "latency,rate,bandwidth"),
]
SWEEPS = [(f"proxy-cpu/threads-{n}", {"GPUCOMM_TRANSPORT": "proxy-cpu", "GPUCOMM_PROXY_THREADS": str(n)}, "rate") for n in (1, 2, 4)] + \
         [(f"proxy-gpu/blocks-{n}", {"GPUCOMM_TRANSPORT": "proxy-gpu", "GPUCOMM_AGENT_BLOCKS": str(n)}, "rate,bandwidth")
          for n in (1, 2, 4)]


def register(targets) -> None:
    p = targets.add_parser("proxy", help="direct stores vs CPU proxy vs GPU service agent vs UCX, same run",
                           description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer sizes, iterations and trials")
    p.add_argument("--json", metavar="FILE", help="write every configuration's results")
    p.add_argument("--configs", metavar="LIST", help="only these configurations (comma-separated names, see --list)")
    p.add_argument("--list", action="store_true", help="list the configurations and exit")
    p.add_argument("--no-sweeps", action="store_true", help="skip the agent-count sweeps")
    p.add_argument("--pes", type=int, choices=(1, 2), help="PEs (default: 2 when 2 GPUs exist, else 1)")
    p.add_argument("--gpus", default="auto", metavar="LIST", help="GPUs for the PEs (passed to gpucomm run)")
    p.set_defaults(func=run)


def gpu_count() -> int:
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout
        return sum(1 for line in out.splitlines() if line.startswith("GPU "))
    except (OSError, subprocess.SubprocessError):
        return 0


def ucx_available() -> bool:
    """Whether libgpucomm_ucx sits beside libgpucomm (installed package or build tree)."""
    try:
        tool = find_tool("gpucomm-bench-proxy").resolve()
    except FileNotFoundError:
        return False
    candidates = [tool.parents[1], tool.parents[3] / "src", tool.parents[3] / "lib", tool.parents[3] / "lib64"]
    return any(any(d.glob("libgpucomm_ucx.so*")) for d in candidates if d.is_dir())


def point(res: dict | None, name: str, level: str, nbytes: int, ctas: int | None = None) -> float | None:
    if not res:
        return None
    for r in res.get("results", []):
        if r["name"] == name and r["level"] == level and r["bytes"] == nbytes and (ctas is None or r["ctas"] == ctas):
            return r["median"]
    return None


def best_bw(res: dict | None, nbytes: int) -> tuple[float | None, int | None]:
    """The highest put bandwidth at `nbytes` over the CTA counts measured, and that count."""
    pts = [(r["median"], r["ctas"]) for r in (res or {}).get("results", []) if r["name"] == "put_bw" and r["bytes"] == nbytes]
    return max(pts) if pts else (None, None)


def fmt(v: float | None, digits: int = 2) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def summary(runs: dict, pes: int) -> list[str]:
    lat_kind = "one-way" if pes == 2 else "round trip (PE to itself)"
    lines = [f"put_signal latency, {lat_kind}, us (thread level; block level in brackets)",
             f"{'configuration':<34} {'8 B':>14} {'4 KB':>14} {'64 KB':>14}"]
    for name, res in runs.items():
        if point(res, "put_signal_latency", "thread", 8) is None:
            continue
        cells = [f"{fmt(point(res, 'put_signal_latency', 'thread', b))} [{fmt(point(res, 'put_signal_latency', 'block', b))}]"
                 for b in (8, 4096, 65536)]
        lines.append(f"{name:<34} " + " ".join(f"{c:>14}" for c in cells))
    lines += ["", "message rate of 8-byte puts, Mops/s; proxy CPU time per operation",
              f"{'configuration':<34} {'GPU 32 CTAs':>12} {'GPU 132 CTAs':>13} {'CPU API':>9} {'CPU copies':>11} {'us/op CPU':>10}"]
    for name, res in runs.items():
        if point(res, "p_msg_rate", "thread", 8, 32) is None:
            continue
        lines.append(f"{name:<34} {fmt(point(res, 'p_msg_rate', 'thread', 8, 32)):>12} {fmt(point(res, 'p_msg_rate', 'thread', 8, 132)):>13} "
                     f"{fmt(point(res, 'host_p_rate', 'host_api', 8), 3):>9} {fmt(point(res, 'host_copy_rate', 'cpu_async_copy', 8), 3):>11} "
                     f"{fmt(point(res, 'proxy_cpu_us_per_op', 'cpu_proxy', 8, 132), 3):>10}")
    sizes = sorted({r["bytes"] for res in runs.values() if res for r in res.get("results", []) if r["name"] == "put_bw"})
    if sizes:
        ref = next((res for res in runs.values() if point(res, "copy_engine_bw", "copy_engine", sizes[-1]) is not None), None)
        lines += ["", "put bandwidth, GB/s (best of 1, 8, 32 CTAs, each putting its share; raw copy engine = cudaMemcpyAsync "
                  "into the target's mapping)",
                  f"{'configuration':<34} " + " ".join(f"{(str(b >> 20) + ' MB') if b >= 1 << 20 else (str(b >> 10) + ' KB'):>9}" for b in sizes)]
        if ref:
            lines.append(f"{'raw copy engine':<34} " + " ".join(f"{fmt(point(ref, 'copy_engine_bw', 'copy_engine', b)):>9}" for b in sizes))
        for name, res in runs.items():
            if best_bw(res, sizes[0])[0] is not None:
                lines.append(f"{name:<34} " + " ".join(f"{fmt(best_bw(res, b)[0]):>9}" for b in sizes))
    return lines


def targets(runs: dict, pes: int) -> list[str]:
    out = ["", "targets (2x H200 in the issue; measured here on " + ("2 PEs" if pes == 2 else "1 PE, round trips to itself") + ")"]
    cpu = point(runs.get("proxy-cpu/host-ring"), "put_signal_latency", "thread", 8)
    if cpu is not None:
        one_way = cpu if pes == 2 else cpu / 2
        out.append(f"  proxy-executed put one-way <= 3 us: {one_way:.2f} us{'' if pes == 2 else ' (half the round trip)'} -> "
                   f"{'met' if one_way <= 3 else 'missed'}")
    direct = point(runs.get("direct"), "put_signal_latency", "thread", 8)
    agent = point(runs.get("proxy-gpu/device-ring"), "put_signal_latency", "thread", 8)
    if direct and agent:
        out.append(f"  GPU agent small put <= 2x direct: {agent:.2f} / {direct:.2f} us = {agent / direct:.2f}x -> "
                   f"{'met' if agent <= 2 * direct else 'missed'}")
    res = runs.get("proxy-cpu/host-ring")
    ref = runs.get("direct")
    for b in (16 << 20, 64 << 20, 256 << 20):
        ours, raw = best_bw(res, b)[0], point(ref, "copy_engine_bw", "copy_engine", b)
        if ours and raw:
            out.append(f"  copy-engine puts through the proxy >= 95% of raw at {b >> 20} MB: {ours:.1f} / {raw:.1f} GB/s = "
                       f"{100 * ours / raw:.0f}% -> {'met' if ours >= 0.95 * raw else 'missed'}")
    gpu_rate = point(runs.get("direct"), "p_msg_rate", "thread", 8, 132)
    cpu_rate = point(runs.get("direct"), "host_copy_rate", "cpu_async_copy", 8)
    if gpu_rate and cpu_rate:
        out.append(f"  small messages GPU-issued (stores) vs CPU-issued (cudaMemcpyAsync), GPUrdma's 4.5x: {gpu_rate:.1f} / "
                   f"{cpu_rate:.3f} Mops/s = {gpu_rate / cpu_rate:.0f}x" + ("" if pes == 2 else " (stores to its own memory)"))
    gpu_proxy = point(runs.get("proxy-cpu/host-ring"), "p_msg_rate", "thread", 8, 32)
    cpu_api = point(runs.get("proxy-cpu/host-ring"), "host_p_rate", "host_api", 8)
    if gpu_proxy and cpu_api:
        out.append(f"  small messages GPU-issued vs CPU-issued, both through the CPU proxy: {gpu_proxy:.3f} / {cpu_api:.3f} Mops/s = "
                   f"{gpu_proxy / cpu_api:.1f}x")
    return out


def run(args) -> int:
    configs = CONFIGS + ([] if args.no_sweeps else SWEEPS)
    if args.list:
        for name, env, parts in configs:
            print(f"{name:<34} {' '.join(f'{k}={v}' for k, v in env.items())}  ({parts})")
        return 0
    if args.configs:
        wanted = set(args.configs.split(","))
        unknown = wanted - {c[0] for c in configs}
        if unknown:
            print(f"gpucomm bench proxy: --configs: unknown configuration(s) {', '.join(sorted(unknown))} (see --list)", file=sys.stderr)
            return 2
        configs = [c for c in configs if c[0] in wanted]
    tool = find_tool("gpucomm-bench-proxy")
    ngpu = gpu_count()
    if ngpu == 0:
        print("gpucomm bench proxy: needs a GPU (found none)", file=sys.stderr)
        return 1
    pes = args.pes or (2 if ngpu >= 2 else 1)
    have_ucx = ucx_available()
    runs: dict[str, dict | None] = {}
    failed = []
    with tempfile.TemporaryDirectory(prefix="gpucomm-bench-proxy-") as tmp:
        for i, (name, extra, parts) in enumerate(configs):
            if extra.get("GPUCOMM_TRANSPORT") == "ucx" and not have_ucx:
                print(f"[{i + 1}/{len(configs)}] {name}: skipped (libgpucomm_ucx was not built)", flush=True)
                continue
            print(f"[{i + 1}/{len(configs)}] {name}", flush=True)
            out = Path(tmp) / f"{i}.json"
            env = {**os.environ, **BASE, **extra}
            cmd = [sys.executable, "-m", "gpucomm", "run", "-n", str(pes), "--gpus", args.gpus, "--", str(tool), "--only", parts,
                   "--json", str(out)]
            if args.quick:
                cmd.append("--quick")
            rc = subprocess.call(cmd, env=env)
            if rc != 0 or not out.exists():
                print(f"gpucomm bench proxy: {name} failed (exit code {rc})", file=sys.stderr)
                failed.append(name)
                runs[name] = None
                continue
            runs[name] = json.loads(out.read_text())
    report = summary(runs, pes) + targets(runs, pes)
    print()
    print("\n".join(report))
    if args.json:
        # `markdown` is what scripts/record_results.py copies into bench/RESULTS.md.
        Path(args.json).write_text(json.dumps({"tool": "gpucomm bench proxy", "pes": pes, "gpus": ngpu, "configurations": runs,
                                               "failed": failed, "markdown": "```text\n" + "\n".join(report) + "\n```"}, indent=1))
        print(f"wrote {args.json}")
    return 1 if failed else 0
