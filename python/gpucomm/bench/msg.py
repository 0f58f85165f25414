"""``gpucomm bench msg``: the two-sided messaging layer against its floors and targets, in one run.

On a GPU: runs ``gpucomm-bench-msg`` on 1 PE that messages itself between two blocks of one
kernel, once per section (floors, pingpong, unexpected, rendezvous, rate, depth: the rate with
thousands of receives posted that no message matches, steps: the latency of each call and of the
protocol's pieces, endpoints: the ping-pong, unexpected path and rates through endpoints, the fast
lane, printed beside the targets), each in a process of its own under a time limit, so a
section that fails records its error and the others still run.
Without a GPU (or with ``GPUCOMM_DEVICE=host``): the same protocol on 2 host-memory PEs through the
host API (the Python bindings over the C++ calls): the 8-byte ping-pong and the message rate.
Prints each target beside its measured value and writes everything with ``--json FILE``.

With ``--anchors`` the same run also measures the baselines with the same sizes: NCCL send/recv
(gpucomm.bench.msg_anchors, through torch.distributed; a GPU to itself, and two GPUs where two exist)
and Open MPI with host staging (``gpucomm-bench-msg-mpi`` under ``mpirun``: copy to pinned host memory,
MPI_Send/MPI_Recv, copy back; 1 rank, and 2 ranks on two GPUs). A baseline that cannot run says why
("not available: ..."); its rows go into the JSON beside gpucomm's and the report prints them side by
side.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gpucomm.bench.proxy import gpu_count

SECTIONS = ["floors", "pingpong", "unexpected", "rendezvous", "rate", "depth", "steps", "endpoints"]
NOT_RUN = "not measured (gpucomm bench msg --anchors runs it)"
LEVELS = ("thread", "warp", "block")
LARGE = (1 << 20, 4 << 20, 16 << 20)
# NVLink multicast stays off for every library of the baselines.
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "NVSHMEM_DISABLE_NVLS": "1", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}


def register(targets) -> None:
    p = targets.add_parser("msg", help="two-sided messaging: latency, unexpected path, rendezvous, message rate",
                           description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer iterations and trials (under a minute)")
    p.add_argument("--json", metavar="FILE", help="write the results, errors, targets and a markdown table")
    p.add_argument("--sections", metavar="LIST", help=f"only these sections (comma-separated: {','.join(SECTIONS)})")
    p.add_argument("--section-timeout", type=float, metavar="S", help="time limit of one section (default 60, 25 quick)")
    p.add_argument("--anchors", action="store_true",
                   help="also measure the baselines: NCCL send/recv (needs torch) and Open MPI with host staging")
    p.set_defaults(func=run)


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, timeout=10,
                             cwd=Path(__file__).resolve().parent)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def run_limited(cmd: list[str], env: dict, timeout: float) -> tuple[int, str]:
    """Runs `cmd` in a session of its own; kills the whole session after `timeout` seconds (rc 124)."""
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return 124, (out or "") + f"\n(killed after {timeout:.0f} s)"


def tail(text: str, lines: int = 6) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:])


# ---- the measurement on GPU PEs ----

def run_gpu(args, sections: list[str]) -> dict:
    from gpucomm._tools import find_tool
    try:
        tool = find_tool("gpucomm-bench-msg")
    except FileNotFoundError as exc:
        print(f"gpucomm bench msg: {exc}", file=sys.stderr)
        return {"pe_kind": "gpu", "pes": 1, "gpu": None, "commit": git_commit(), "results": [],
                "errors": {s: f"gpucomm-bench-msg not found ({exc})" for s in sections}}
    limit = args.section_timeout or (25.0 if args.quick else 60.0)
    env = {**os.environ, "GPUCOMM_DEVICE": "gpu"}
    results, errors, gpu, commit = [], {}, None, "unknown"
    with tempfile.TemporaryDirectory(prefix="gpucomm-bench-msg-") as tmp:
        for i, section in enumerate(sections):
            print(f"[{i + 1}/{len(sections)}] {section}", flush=True)
            out = Path(tmp) / f"{section}.json"
            cmd = [sys.executable, "-m", "gpucomm", "run", "-n", "1", "--", str(tool), "--only", section, "--json",
                   str(out)] + (["--quick"] if args.quick else [])
            rc, text = run_limited(cmd, env, limit)
            print(text, end="" if text.endswith("\n") else "\n", flush=True)
            if rc != 0 or not out.exists():
                errors[section] = f"exit code {rc}: {tail(text)}"
                print(f"gpucomm bench msg: section {section} failed ({errors[section]})", file=sys.stderr, flush=True)
                continue
            data = json.loads(out.read_text())
            gpu = (data.get("devices") or [gpu])[0]
            commit = data.get("git_commit", commit)
            results += [{"section": section, **r} for r in data.get("results", [])]
    return {"pe_kind": "gpu", "pes": 1, "gpu": gpu, "commit": commit, "results": results, "errors": errors}


# ---- the measurement on host-memory PEs (2 PEs under `gpucomm run`) ----

def host_worker(out: str, quick: bool) -> int:
    """PE 0 and PE 1 of the host-memory measurement; PE 0 writes the rows to `out`."""
    import numpy as np

    import gpucomm
    M = gpucomm.messaging
    trials = 5 if quick else 11
    iters = 200 if quick else 2000
    rows = []
    with gpucomm.Runtime() as rt, M.Messenger(rt) as m:
        me = rt.rank
        peer = 1 - me
        mpi, nas = m.world(), m.world(mode="no_any_source")
        out_b, in_b = np.zeros(1, dtype=np.uint64), np.zeros(1, dtype=np.uint64)

        def check(st, want, what):
            if st.error != "none" or st.bytes != 8 or int(in_b[0]) != want:
                raise RuntimeError(f"{what}: PE {me} wanted {want} from PE {peer}, got {int(in_b[0])} ({st})")

        # 8-byte ping-pong, receives pre-posted (PE 0 pings, PE 1 answers).
        samples = []
        for t in range(trials + 1):
            rt.barrier_all()
            t0 = time.perf_counter()
            r = mpi.irecv(in_b, peer, 1 if me == 1 else 2)
            for i in range(1, iters + 1):
                out_b[0] = i
                if me == 0:
                    mpi.send(out_b, peer, 1)
                    check(m.wait(r), i, "ping-pong")
                    if i < iters:
                        r = mpi.irecv(in_b, peer, 2)
                else:
                    check(m.wait(r), i, "ping-pong")
                    if i < iters:
                        r = mpi.irecv(in_b, peer, 1)
                    mpi.send(out_b, peer, 2)
            if t:
                samples.append((time.perf_counter() - t0) * 1e6 / iters)
        rows.append(row("pingpong", "msg_rt", "host", 8, 1, "us", samples))

        # Message rate: PE 0 posts a window of receives (tags spread over 8 senders' worth), then
        # releases PE 1 with a message; PE 1 sends the window; every payload is checked.
        window, rounds = 256, (4 if quick else 16)
        rbuf = np.zeros((window, 1), dtype=np.uint64)
        go = np.zeros(1, dtype=np.uint64)
        for mode, comm, source in (("no_any_source", nas, 1), ("mpi", mpi, M.ANY_SOURCE)):
            samples = []
            for t in range(trials + 1):
                rt.barrier_all()
                elapsed = 0.0
                for rd in range(rounds):
                    if me == 0:
                        reqs = [comm.irecv(rbuf[j], source, j % 8) for j in range(window)]
                        t0 = time.perf_counter()
                        comm.send(go, peer, 100)
                        m.waitall(reqs)
                        elapsed += time.perf_counter() - t0
                        want = np.arange(window, dtype=np.uint64) + np.uint64(rd * window)
                        if not (rbuf[:, 0] == want).all():
                            bad = int(np.argmax(rbuf[:, 0] != want))
                            raise RuntimeError(f"rate {mode}: receive {bad} got {int(rbuf[bad, 0])}, want {int(want[bad])}")
                    else:
                        comm.recv(go, peer, 100)
                        vals = np.arange(window, dtype=np.uint64) + np.uint64(rd * window)
                        m.waitall([comm.isend(vals[j:j + 1], peer, j % 8) for j in range(window)])
                if t and me == 0:
                    samples.append(window * rounds / elapsed / 1e6)
            if me == 0:
                rows.append(row("rate", "msg_rate", mode, 8, 1, "Mmsg/s", samples))
        rt.barrier_all()
    if me == 0:
        Path(out).write_text(json.dumps(rows))
    return 0


def row(section: str, name: str, level: str, nbytes: int, ctas: int, unit: str, samples: list[float]) -> dict:
    return {"section": section, "name": name, "level": level, "bytes": nbytes, "ctas": ctas, "unit": unit,
            "median": statistics.median(samples) if samples else None, "min": min(samples, default=None),
            "max": max(samples, default=None), "samples": len(samples)}


def run_host(args, sections: list[str]) -> dict:
    try:
        import gpucomm
        have = hasattr(gpucomm, "messaging")
    except ImportError:
        have = False
    skipped = [s for s in sections if s not in ("pingpong", "rate")]
    errors = {s: "skipped on host-memory PEs (a GPU measurement)" for s in skipped}
    base = {"pe_kind": "host", "pes": 2, "gpu": None, "commit": git_commit(), "results": [], "errors": errors}
    if not {"pingpong", "rate"} & set(sections):
        return base
    if not have:
        print("gpucomm bench msg: skipped (no GPU, and this gpucomm has no messaging bindings for host PEs)")
        base["skipped"] = "no GPU and no gpucomm.messaging"
        return base
    print("gpucomm bench msg: no GPU (or GPUCOMM_DEVICE=host): 8-byte ping-pong and message rate on 2 host-memory PEs",
          flush=True)
    with tempfile.TemporaryDirectory(prefix="gpucomm-bench-msg-") as tmp:
        out = Path(tmp) / "host.json"
        env = {**os.environ, "GPUCOMM_DEVICE": "host"}
        env.setdefault("GPUCOMM_TIMEOUT", "20")
        cmd = [sys.executable, "-m", "gpucomm", "run", "-n", "2", "--", sys.executable, "-m", "gpucomm.bench.msg",
               "--host-worker", str(out)] + (["--quick"] if args.quick else [])
        rc, text = run_limited(cmd, env, args.section_timeout or (60.0 if args.quick else 300.0))
        if rc != 0 or not out.exists():
            for s in ("pingpong", "rate"):
                errors[s] = f"exit code {rc}: {tail(text)}"
            print(f"gpucomm bench msg: host measurement failed (exit code {rc})\n{text}", file=sys.stderr)
            return base
        base["results"] = [r for r in json.loads(out.read_text()) if r["section"] in sections]
    return base


# ---- the baselines (--anchors) ----

def run_json(cmd: list[str], env: dict, limit: float, out: Path, ranks: int) -> tuple[dict | None, str]:
    """Runs a baseline program that writes `out`; its report, or why there is none."""
    rc, text = run_limited(cmd, env, limit)
    print(text, end="" if text.endswith("\n") else "\n", flush=True)
    if rc != 0 or not out.exists():
        return None, f"{ranks} rank(s): exit code {rc}: {tail(text)}"
    return json.loads(out.read_text()), ""


def baseline(rows: list[dict], notes: list[str]) -> dict:
    return {"status": "measured" if rows else "not available: " + "; ".join(notes), "notes": notes, "results": rows}


def nccl_baseline(args, ranks: list[int], env: dict, limit: float, tmp: Path) -> dict:
    """NCCL send/recv at each rank count, each run in processes of its own (torch stays out of this one)."""
    rows, notes = [], []
    for n in ranks:
        out = tmp / f"nccl-{n}.json"
        cmd = [sys.executable, "-m", "gpucomm.bench.msg_anchors", "--ranks", str(n), "--json", str(out)]
        rep, why = run_json(cmd + (["--quick"] if args.quick else []), env, limit, out, n)
        if rep is None:
            notes.append(why)
            continue
        notes += [f"{n} rank(s): {what}: {reason}" for what, reason in rep.get("not_measured", {}).items()]
        rows += [{"baseline": "nccl", "name": r["anchor"], "ranks": n, "bytes": r["bytes"], "unit": "us",
                  "median": r["time_us"], "min": r["min_us"], "how": rep.get("how")} for r in rep["results"]]
    return baseline(rows, notes)


def mpi_baseline(args, ranks: list[int], env: dict, limit: float, tmp: Path) -> dict:
    """Open MPI with host staging (gpucomm-bench-msg-mpi under mpirun) at each rank count."""
    from gpucomm._tools import find_tool
    try:
        tool = find_tool("gpucomm-bench-msg-mpi")
    except FileNotFoundError:
        return baseline([], ["gpucomm-bench-msg-mpi was not built (no MPI when gpucomm was configured)"])
    mpirun = shutil.which("mpirun")
    if not mpirun:
        return baseline([], ["mpirun not found on PATH"])
    rows, notes = [], []
    for n in ranks:
        out = tmp / f"mpi-{n}.json"
        cmd = [mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(n), str(tool), "--json", str(out)]
        rep, why = run_json(cmd + (["--quick"] if args.quick else []), env, limit, out, n)
        if rep is None:
            notes.append(why)
            continue
        rows += [{"baseline": "mpi", "name": r["name"], "ranks": n, "bytes": r["bytes"], "unit": "us",
                  "median": r["median"], "min": r["min"]} for r in rep["results"]]
    return baseline(rows, notes)


def run_baselines(args, gpus: int, pe_kind: str) -> dict:
    """The baselines of the same sizes in the same run: a GPU to itself, and two GPUs where two exist."""
    why = NOT_RUN
    if args.anchors and gpus == 0:
        why = "not available: no GPU"
    elif args.anchors and pe_kind != "gpu":
        why = "not available: this run used host-memory PEs (GPUCOMM_DEVICE=host)"
    if why != NOT_RUN or not args.anchors:
        return {name: {"status": why, "notes": [], "results": []} for name in ("nccl_send_recv", "mpi_staging")}
    ranks = [1, 2] if gpus >= 2 else [1]
    limit = args.section_timeout or (60.0 if args.quick else 180.0)
    env = {**os.environ, **NO_MULTICAST, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    print(f"baselines on {gpus} GPU(s): NCCL send/recv and Open MPI host staging at {ranks} rank(s)", flush=True)
    with tempfile.TemporaryDirectory(prefix="gpucomm-bench-msg-") as tmp:
        return {"nccl_send_recv": nccl_baseline(args, ranks, env, limit, Path(tmp)),
                "mpi_staging": mpi_baseline(args, ranks, env, limit, Path(tmp))}


def baseline_point(base: dict, name: str, ranks: int, nbytes: int) -> float | None:
    for r in base["results"]:
        if r["name"] == name and r["ranks"] == ranks and r["bytes"] == nbytes:
            return r["median"]
    return None


def baseline_lines(res: dict, baselines: dict) -> list[str]:
    """gpucomm's 8-byte round trip and large-message times beside the baselines' (us, medians)."""
    head = f"{'':<44} {'8 B rt':>9} " + " ".join(f"{str(b >> 20) + ' MB':>9}" for b in LARGE)
    lines = ["", "beside the baselines, us (medians): the 8-byte round trip and the time per message", head]
    if res["pe_kind"] == "gpu":
        mine = [point(res, "msg_rt", "block")] + [point(res, "rndv_us", "block", b) for b in LARGE]
        lines.append(f"{'gpucomm send/recv, block level, a PE to itself':<44} " + " ".join(f"{fmt(v):>9}" for v in mine))
    else:
        lines.append(f"{'gpucomm send/recv, 2 host-memory PEs':<44} {fmt(point(res, 'msg_rt', 'host')):>9}")
    for key, label, rt_name, us_name in (("nccl_send_recv", "NCCL send/recv", "nccl_sendrecv_rt", "nccl_sendrecv_us"),
                                         ("mpi_staging", "Open MPI, host staging", "mpi_staging_rt", "mpi_staging_us")):
        base = baselines[key]
        for n in sorted({r["ranks"] for r in base["results"]}):
            vals = [baseline_point(base, rt_name, n, 8)] + [baseline_point(base, us_name, n, b) for b in LARGE]
            who = "a GPU to itself" if n == 1 else f"{n} GPUs"
            lines.append(f"{label + ', ' + who:<44} " + " ".join(f"{fmt(v):>9}" for v in vals))
        if base["status"] != "measured":
            lines.append(f"{label}: {base['status']}")
        for note in base["notes"] if base["status"] == "measured" else []:
            lines.append(f"{label}: {note}")
    return lines


# ---- report ----

def point(res: dict, name: str, level: str, nbytes: int = 8, ctas: int | None = None) -> float | None:
    for r in res["results"]:
        if r["name"] == name and r["level"] == level and r["bytes"] == nbytes and (ctas is None or r["ctas"] == ctas):
            return r["median"]
    return None


def fmt(v: float | None, digits: int = 2) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def table(res: dict) -> list[str]:
    lines = []
    if res["pe_kind"] == "gpu":
        lines += [f"round trips, 8 B, PE to itself between two blocks, us (medians) on {res['gpu']}",
                  f"{'':<40} {'thread':>8} {'warp':>8} {'block':>8}"]
        for name, what in (("flag_rt", "floor: flag in device memory"), ("put_signal_rt", "floor: put_signal (one-sided)"),
                           ("msg_rt", "send/recv, receives pre-posted"), ("msg_rt_unexpected", "send/recv, unexpected path"),
                           ("ep_rt", "endpoints, receives pre-posted"), ("ep_rt_unexpected", "endpoints, unexpected path")):
            lines.append(f"{what:<40} " + " ".join(f"{fmt(point(res, name, lv)):>8}" for lv in LEVELS))
        sizes = sorted({r["bytes"] for r in res["results"] if r["name"] == "rndv_us"})
        if sizes:
            lines += ["", "rendezvous, one block each side, heap source (get), us per message",
                      f"{'':<40} " + " ".join(f"{str(b >> 20) + ' MB':>8}" for b in sizes)]
            for name, what in (("rndv_us", "send/recv"), ("put_us", "put + quiet, same block count"),
                               ("rndv_overhead_us", "overhead (send/recv - put)")):
                lines.append(f"{what:<40} " + " ".join(f"{fmt(point(res, name, 'block', b)):>8}" for b in sizes))
        def rate_table(name, title, column):
            """Rows per mode of `name` [`name`_with_posting] over its CTA counts (or depths)."""
            cols = sorted({r["ctas"] for r in res["results"] if r["name"] == name})
            if not cols:
                return
            lines.extend(["", title, f"{'mode':<40} " + " ".join(f"{column(n):>16}" for n in cols)])
            for mode in ("no_any_source", "mpi"):
                lines.append(f"{mode:<40} " + " ".join(
                    f"{fmt(point(res, name, mode, 8, n)) + ' [' + fmt(point(res, name + '_with_posting', mode, 8, n)) + ']':>16}"
                    for n in cols))

        rate_table("msg_rate", "8-byte message rate into one receiving warp (1 SM), Mmsg/s: release to last completion "
                   "[with the posting of the receives]", lambda n: f"{n} warps")
        rate_table("msg_rate_depth", "the same window (32 sending warps) with D receives posted, D - 768 of them on "
                   "tags no message uses (half ANY_SOURCE in mpi), Mmsg/s [with posting]", lambda d: f"D = {d}")
        rate_table("ep_rate", "the same rate through endpoints (the receiving warp owns the endpoint), Mmsg/s "
                   "[with posting]", lambda n: f"{n} warps")
        rate_table("ep_rate_depth", "endpoints, the same window with D receives posted, Mmsg/s [with posting]",
                   lambda d: f"D = {d}")
        cols = sorted({r["ctas"] for r in res["results"] if r["name"] == "ep_rate_waitall_ns"})
        if cols:
            lines.extend(["", "endpoints rate, per message (no_any_source): records per drain call, ns in send "
                          "(a sender's), ns in waitall after the drain (the receiver's)",
                          f"{'':<40} " + " ".join(f"{str(n) + ' warps':>16}" for n in cols)])
            for name, what in (("ep_rate_records_per_pass", "records per drain call"),
                               ("ep_rate_send_ns", "send, ns"), ("ep_rate_waitall_ns", "waitall, ns")):
                lines.append(f"{what:<40} " + " ".join(
                    f"{fmt(point(res, name, 'no_any_source', 8, n), 1):>16}" for n in cols))
        steps = [r for r in res["results"] if r["name"].startswith("step_")]
        if steps:
            lines += ["", "latency breakdown, one group messaging itself alone, ns per call (medians)",
                      f"{'':<40} {'thread':>8} {'warp':>8} {'block':>8}"]
            for name, what in (("step_irecv_ns", "irecv (post)"), ("step_send_ns", "send (LL, 8 B)"),
                               ("step_wait_ns", "wait (a round that delivers it)")):
                lines.append(f"{what:<40} " + " ".join(f"{fmt(point(res, name, lv), 0):>8}" for lv in LEVELS))
            pieces = [r for r in res["results"] if r["name"].startswith("piece_")]
            if pieces:
                lines.append("  pieces (thread level, ns each, a global-timer read included): " + ", ".join(
                    f"{r['name'][6:]} {r['median']:.0f}" for r in pieces))
    else:
        lines += ["host-memory PEs (2 processes, the host API through the Python bindings)",
                  f"  8-byte ping-pong round trip, receives pre-posted: {fmt(point(res, 'msg_rt', 'host'))} us",
                  f"  8-byte message rate, no_any_source: {fmt(point(res, 'msg_rate', 'no_any_source', 8, 1), 3)} Mmsg/s, "
                  f"mpi: {fmt(point(res, 'msg_rate', 'mpi', 8, 1), 3)} Mmsg/s"]
    for section, err in res["errors"].items():
        lines.append(f"section {section}: {err}")
    return lines


def targets(res: dict) -> list[dict]:
    """The 1-GPU targets of the messaging layer, each with its value, limit and ratio."""
    out = []

    def add(target: str, value: float | None, limit: float | None, unit: str, at_most: bool = True, ratio=None):
        met = None if value is None or limit is None else (value <= limit if at_most else value >= limit)
        out.append({"target": target, "value": value, "limit": limit, "unit": unit, "ratio": ratio, "met": met})

    if res["pe_kind"] != "gpu":
        return out
    for lv in LEVELS:
        rt_, flag = point(res, "msg_rt", lv), point(res, "flag_rt", lv)
        k = 2.5 if lv == "thread" else 3.0
        add(f"8 B round trip, receives pre-posted ({lv}) <= {k}x the flag round trip", rt_, k * flag if flag else None,
            "us", ratio=rt_ / flag if rt_ and flag else None)
    for lv in LEVELS:
        u, p = point(res, "msg_rt_unexpected", lv), point(res, "msg_rt", lv)
        add(f"unexpected path ({lv}) <= 1.3x pre-posted", u, 1.3 * p if p else None, "us",
            ratio=u / p if u and p else None)
    for mode in ("no_any_source", "mpi"):
        for n, floor in ((8, 20.0), (32, 25.0), (128, 25.0)):
            add(f"8 B rate into one warp, {mode}, {n} sending warps >= {floor:.0f} M/s",
                point(res, "msg_rate", mode, 8, n), floor, "Mmsg/s", at_most=False)
        with_post = [point(res, "msg_rate_with_posting", mode, 8, n) for n in (8, 32, 128)]
        got = [v for v in with_post if v is not None]
        add(f"8 B rate into one warp, {mode}, counting the posting of the receives >= 15 M/s (worst of 8/32/128)",
            min(got) if got else None, 15.0, "Mmsg/s", at_most=False)
    for mode in ("no_any_source", "mpi"):
        r768, r4096 = point(res, "msg_rate", mode, 8, 32), point(res, "msg_rate_depth", mode, 8, 4096)
        add(f"rate at depth 4096 ({mode}) >= 2/3 of the rate at 768 (32 sending warps)", r4096,
            2 * r768 / 3 if r768 else None, "Mmsg/s", at_most=False, ratio=r4096 / r768 if r4096 and r768 else None)
        add(f"rate at depth 4096 ({mode}) >= 20 M/s", r4096, 20.0, "Mmsg/s", at_most=False)
    for b in sorted({r["bytes"] for r in res["results"] if r["name"] == "rndv_overhead_us"}):
        add(f"rendezvous overhead at {b >> 20} MB <= 5 us", point(res, "rndv_overhead_us", "block", b), 5.0, "us")
    return out


def endpoint_lines(res: dict) -> list[str]:
    """The targets' conditions evaluated on the endpoints' numbers: printed beside them, not instead."""
    if res["pe_kind"] != "gpu" or point(res, "ep_rt", "thread") is None:
        return []
    lines = ["", "beside the targets: the same conditions through endpoints (the fast lane; not the targets' kernels)"]

    def line(what, value, limit, unit, at_most=True):
        if value is None or limit is None:
            lines.append(f"  {what}: not measured")
            return
        ok = value <= limit if at_most else value >= limit
        lines.append(f"  {what}: {fmt(value)} vs {fmt(limit)} {unit} -> {'within' if ok else 'beyond'}")

    for lv in LEVELS:
        k = 2.5 if lv == "thread" else 3.0
        flag = point(res, "flag_rt", lv)
        line(f"endpoints 8 B round trip ({lv}) <= {k}x flag", point(res, "ep_rt", lv), k * flag if flag else None, "us")
    for lv in LEVELS:
        p = point(res, "ep_rt", lv)
        line(f"endpoints unexpected path ({lv}) <= 1.3x pre-posted", point(res, "ep_rt_unexpected", lv),
             1.3 * p if p else None, "us")
    for mode in ("no_any_source", "mpi"):
        for n, floor in ((8, 20.0), (32, 25.0), (128, 25.0)):
            line(f"endpoints rate, {mode}, {n} sending warps >= {floor:.0f} M/s", point(res, "ep_rate", mode, 8, n),
                 floor, "Mmsg/s", at_most=False)
        line(f"endpoints rate at depth 4096, {mode} >= 20 M/s", point(res, "ep_rate_depth", mode, 8, 4096), 20.0,
             "Mmsg/s", at_most=False)
    return lines


def target_lines(ts: list[dict]) -> list[str]:
    if not ts:
        return []
    lines = ["", "targets (1 GPU, PE to itself, floors from this run)"]
    for t in ts:
        verdict = "not measured" if t["met"] is None else ("met" if t["met"] else "MISSED")
        ratio = f" ({t['ratio']:.2f}x)" if t["ratio"] else ""
        lines.append(f"  {t['target']}: {fmt(t['value'])} vs {fmt(t['limit'])} {t['unit']}{ratio} -> {verdict}")
    return lines


def run(args) -> int:
    sections = SECTIONS
    if args.sections:
        sections = [s for s in args.sections.split(",") if s]
        unknown = sorted(set(sections) - set(SECTIONS))
        if unknown:
            print(f"gpucomm bench msg: --sections: unknown section(s) {', '.join(unknown)} (one of {', '.join(SECTIONS)})",
                  file=sys.stderr)
            return 2
    gpus = gpu_count()
    host = os.environ.get("GPUCOMM_DEVICE", "") == "host" or gpus == 0
    res = run_host(args, sections) if host else run_gpu(args, sections)
    baselines = run_baselines(args, gpus, res["pe_kind"])
    ts = targets(res)
    report = table(res) + baseline_lines(res, baselines) + target_lines(ts) + endpoint_lines(res)
    print()
    print("\n".join(report))
    failed = {s: e for s, e in res["errors"].items() if not e.startswith("skipped")}
    if args.json:
        doc = {"tool": "gpucomm bench msg", "commit": res["commit"], "gpu": res["gpu"], "pe_kind": res["pe_kind"],
               "pes": res["pes"], "quick": bool(args.quick), "sections": sections, "results": res["results"],
               "errors": res["errors"], "baselines": baselines, "summary": ts,
               "markdown": "```text\n" + "\n".join(report) + "\n```"}
        if "skipped" in res:
            doc["skipped"] = res["skipped"]
        Path(args.json).write_text(json.dumps(doc, indent=1))
        print(f"wrote {args.json}")
    return 1 if failed else 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="the host-memory PEs of `gpucomm bench msg` (run under gpucomm run -n 2)")
    ap.add_argument("--host-worker", metavar="OUT", required=True)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    sys.exit(host_worker(a.host_worker, a.quick))
