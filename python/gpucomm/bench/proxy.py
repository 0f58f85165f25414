"""``gpucomm bench proxy``: the paths of one-sided operations side by side, in one run.

Runs ``gpucomm-bench-proxy`` once per configuration - direct stores (with the floors: flag round
trips and CPU-issued writes in plain CUDA), the CPU proxy (ring in host or device memory, with and
without doorbell batching), the GPU service agent (ring in device or host memory), UCX where its
library is built, traced runs that break a round trip into stages - on 2 GPU PEs when 2 GPUs
exist, else on 1 PE that targets itself (each latency point is then a whole descriptor round
trip). Then the sweeps (CPU proxy threads, GPU agent blocks, the CPU proxy's stream memory
operations) on the message rate. Prints the comparison and the targets beside their floors, and
writes every configuration's results with ``--json FILE``.
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
CPU_HOST = {"GPUCOMM_TRANSPORT": "proxy-cpu", "GPUCOMM_PROXY_RING": "host"}
GPU_DEVICE = {"GPUCOMM_TRANSPORT": "proxy-gpu", "GPUCOMM_PROXY_RING": "device"}
CONFIGS = [
    ("direct", {"GPUCOMM_TRANSPORT": "direct"}, "floors,latency,rate,bandwidth"),
    ("proxy-cpu/host-ring", CPU_HOST, "latency,rate,bandwidth"),
    ("proxy-cpu/device-ring", {"GPUCOMM_TRANSPORT": "proxy-cpu", "GPUCOMM_PROXY_RING": "device"}, "latency,rate"),
    ("proxy-cpu/host-ring/doorbell-16", {**CPU_HOST, "GPUCOMM_PROXY_DOORBELL": "16"}, "rate"),
    ("proxy-gpu/device-ring", GPU_DEVICE, "latency,rate,bandwidth"),
    ("proxy-gpu/host-ring", {"GPUCOMM_TRANSPORT": "proxy-gpu", "GPUCOMM_PROXY_RING": "host"}, "latency,rate"),
    ("ucx", {"GPUCOMM_TRANSPORT": "ucx"}, "latency,rate,bandwidth"),
    # Per-stage timestamps in the queues (GPUCOMM_PROXY_TRACE): where a round trip's time goes.
    ("proxy-cpu/host-ring/traced", {**CPU_HOST, "GPUCOMM_PROXY_TRACE": "1"}, "stages"),
    ("proxy-gpu/device-ring/traced", {**GPU_DEVICE, "GPUCOMM_PROXY_TRACE": "1"}, "stages"),
]
SWEEPS = [(f"proxy-cpu/threads-{n}", {"GPUCOMM_TRANSPORT": "proxy-cpu", "GPUCOMM_PROXY_THREADS": str(n)}, "rate") for n in (1, 2, 4)] + \
         [(f"proxy-gpu/blocks-{n}", {"GPUCOMM_TRANSPORT": "proxy-gpu", "GPUCOMM_AGENT_BLOCKS": str(n)}, "rate,bandwidth")
          for n in (1, 2, 4)] + \
         [("proxy-cpu/memops-off", {**CPU_HOST, "GPUCOMM_PROXY_MEMOPS": "0"}, "latency,rate"),
          ("proxy-cpu/memop-max-0", {**CPU_HOST, "GPUCOMM_PROXY_MEMOP_MAX": "0"}, "latency,rate"),
          ("proxy-cpu/memop-max-1024", {**CPU_HOST, "GPUCOMM_PROXY_MEMOP_MAX": "1024"}, "rate")]
STAGES = ["post", "notice", "execute", "deliver", "total", "complete"]


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
    floors = runs.get("direct")
    if point(floors, "cpu_proxy_floor", "min", 8) is not None:
        lines += ["", "floors, plain CUDA in the same run, us (medians)",
                  f"  flag round trip between two blocks, device memory:         {fmt(point(floors, 'flag_rt_blocks', 'device', 8))}",
                  f"  flag round trip GPU thread <-> CPU thread, pinned memory:   {fmt(point(floors, 'gpu_cpu_flag_rt', 'pinned', 8))}"
                  f" (one-way {fmt(point(floors, 'gpu_cpu_flag_one_way', 'pinned', 8))})"]
        for form in ("memcpy", "write_value64", "batch_memop"):
            trip = point(floors, "cpu_write_to_gpu", form, 8)
            if trip is not None:
                lines.append(f"  CPU-issued 8-byte write ({form:<13}) seen by a GPU thread + one-way back: {fmt(trip)}"
                             f" (call {fmt(point(floors, 'cpu_write_call', form, 8))})")
        lines.append(f"  CPU proxy floor (the cheapest of the three):                {fmt(point(floors, 'cpu_proxy_floor', 'min', 8))}")
    traced = [(n, r) for n, r in runs.items() if point(r, "stage_us", "total", 8) is not None]
    if traced:
        lines += ["", "where a traced 8-byte put_signal round trip goes (means, us; GPUCOMM_PROXY_TRACE=1)",
                  f"{'configuration':<34} " + " ".join(f"{s:>9}" for s in STAGES)]
        for name, res in traced:
            lines.append(f"{name:<34} " + " ".join(f"{fmt(point(res, 'stage_us', s, 8)):>9}" for s in STAGES))
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
        lines += ["", "put bandwidth, GB/s (best of 1, 8, 32 CTAs, each putting its share, back to back; raw = cudaMemcpyAsync "
                  "into the target's mapping, back to back, in the same process)",
                  f"{'configuration':<34} " + " ".join(f"{(str(b >> 20) + ' MB') if b >= 1 << 20 else (str(b >> 10) + ' KB'):>9}" for b in sizes)]
        for name, res in runs.items():
            if best_bw(res, sizes[0])[0] is not None:
                lines.append(f"{name:<34} " + " ".join(f"{fmt(best_bw(res, b)[0]):>9}" for b in sizes))
                if point(res, "copy_engine_bw", "copy_engine", sizes[-1]) is not None:
                    lines.append(f"{'  raw copy engine, same process':<34} "
                                 + " ".join(f"{fmt(point(res, 'copy_engine_bw', 'copy_engine', b)):>9}" for b in sizes))
    return lines


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def targets(runs: dict, pes: int) -> list[str]:
    """The layer's targets, each beside its floor measured in the same run."""
    where = "2 PEs" if pes == 2 else "1 PE, round trips to itself"
    out = ["", f"targets ({where}; each floor measured in this run)"]
    direct = point(runs.get("direct"), "put_signal_latency", "thread", 8)
    agent = point(runs.get("proxy-gpu/device-ring"), "put_signal_latency", "thread", 8)
    cpu = point(runs.get("proxy-cpu/host-ring"), "put_signal_latency", "thread", 8)
    blocks = point(runs.get("direct"), "flag_rt_blocks", "device", 8)
    floor = point(runs.get("direct"), "cpu_proxy_floor", "min", 8)
    if direct and agent:
        out.append(f"  GPU agent put_signal round trip <= 2x direct: {agent:.2f} us vs 2 x {direct:.2f} = {2 * direct:.2f} us "
                   f"({agent / direct:.2f}x; floor: flag round trip between blocks {fmt(blocks)} us) -> {verdict(agent <= 2 * direct)}")
    if agent and cpu:
        out.append(f"  GPU agent <= 0.5x CPU proxy (ComP-Net): {agent:.2f} vs 0.5 x {cpu:.2f} = {0.5 * cpu:.2f} us "
                   f"({agent / cpu:.2f}x) -> {verdict(agent <= 0.5 * cpu)}")
    if cpu and floor:
        out.append(f"  CPU proxy put_signal round trip (host ring) <= 1.5x floor: {cpu:.2f} us vs 1.5 x {floor:.2f} = "
                   f"{1.5 * floor:.2f} us ({cpu / floor:.2f}x) -> {verdict(cpu <= 1.5 * floor)}")
    agent_runs = [n for n in runs if n == "proxy-gpu/device-ring" or n.startswith("proxy-gpu/blocks-")]
    best = max(((point(runs[n], "p_msg_rate", "thread", 8, c) or 0, n, c) for n in agent_runs for c in (32, 132)), default=None)
    if best and best[0]:
        out.append(f"  GPU-issued 8-byte puts through the GPU agent >= 50 Mops/s (<= 4 agent blocks): {best[0]:.1f} Mops/s "
                   f"({best[1]}, {best[2]} CTAs) -> {verdict(best[0] >= 50)}")
    res = runs.get("proxy-cpu/host-ring")
    r32, r132 = point(res, "p_msg_rate", "thread", 8, 32), point(res, "p_msg_rate", "thread", 8, 132)
    c132 = point(res, "proxy_cpu_us_per_op", "cpu_proxy", 8, 132)
    c32 = point(res, "proxy_cpu_us_per_op", "cpu_proxy", 8, 32)
    if r32 and r132:
        cpu_ok = c32 is not None and c132 is not None and max(c32, c132) <= 2
        out.append(f"  GPU-issued 8-byte puts through the CPU proxy >= 2 Mops/s, rising 32 -> 132 CTAs, <= 2 us CPU/op: "
                   f"{r32:.2f} -> {r132:.2f} Mops/s, {fmt(c32)} / {fmt(c132)} us CPU/op -> "
                   f"{verdict(min(r32, r132) >= 2 and r132 >= r32 and cpu_ok)}")
    cpu_api = point(res, "host_p_rate", "host_api", 8)
    if best and best[0] and cpu_api:
        ratio = best[0] / cpu_api
        out.append(f"  GPUrdma's comparison: GPU-issued small messages (GPU agent) >= 4.5x CPU-issued (host API, CPU proxy): "
                   f"{best[0]:.1f} / {cpu_api:.3f} Mops/s = {ratio:.0f}x -> {verdict(ratio >= 4.5)}")
    for b in sorted({r["bytes"] for r in (res or {}).get("results", []) if r["name"] == "put_bw" and r["bytes"] >= 64 << 20}):
        # The same shape as the raw copies: one put of the whole size per repetition (1 CTA).
        ours, raw = point(res, "put_bw", "block", b, 1), point(res, "copy_engine_bw", "copy_engine", b)
        best, ctas = best_bw(res, b)
        if ours and raw:
            out.append(f"  copy-engine puts through the proxy >= 95% of raw copies at {b >> 20} MB (one put per repetition, like "
                       f"the copies): {ours:.1f} / {raw:.1f} GB/s = {100 * ours / raw:.1f}% -> {verdict(ours >= 0.95 * raw)} "
                       f"(the share of {ctas} CTAs each: {best:.1f} GB/s = {100 * best / raw:.1f}%)")
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
