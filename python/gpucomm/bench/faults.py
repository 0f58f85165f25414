"""``gpucomm bench faults``: how gpucomm fares under faults and hostile input, on host-memory PEs.

Injects faults into running jobs (a PE killed or stopped, an exception, an abort, a bad
environment on one rank, a timeout caught and ignored, the launcher killed behind a wrapper) at
several job sizes and measures the time from the fault to the end of the whole job against the
target (1 s; 1 s after the timeout for a stopped PE); tries bad inputs, mismatched heaps and
allocations, puts to a dead PE; runs foreign clients against the store and the fd exchange (as
another user when run as root, and as the job's user); and runs a soak that counts every message
and increment. Prints a table and the figures (faults injected and handled, bad inputs tried,
hostile clients tried, losses counted, time to fail per case); --json writes them.
"""
from __future__ import annotations

import json
import statistics
import sys

from gpucomm.bench import _fault_cases as cases


def register(sub) -> None:
    p = sub.add_parser("faults", help="fault injection, hostile clients, bad inputs and a soak (host PEs)",
                       description=__doc__.split("\n\n")[1].replace("\n", " "))
    p.add_argument("--np", default="2,4,8", help="job sizes of the fault cases (default: 2,4,8)")
    p.add_argument("--repeat", type=int, default=1, metavar="K", help="runs of every fault case (default: 1)")
    p.add_argument("--soak", type=int, default=10, metavar="S", help="seconds of the soak (default: 10; 0 skips it)")
    p.add_argument("--timeout", type=float, default=2.0, metavar="S",
                   help="GPUCOMM_TIMEOUT of the stopped-PE case (default: 2)")
    p.add_argument("--quick", action="store_true", help="sizes 2,4, one run, a 3 s soak, fewer job starts under attack")
    p.add_argument("--no-hostile", action="store_true", help="skip the foreign clients")
    p.add_argument("--json", metavar="FILE", help="write the results as JSON")
    p.set_defaults(func=run)


def plan(args) -> list[tuple[str, callable]]:
    sizes = [2, 4] if args.quick else [int(x) for x in args.np.split(",") if x.strip()]
    repeat = 1 if args.quick else max(1, args.repeat)
    jobs: list[tuple[str, callable]] = []
    for _ in range(repeat):
        for np in sizes:
            v = np - 1  # the highest rank; rank 0 serves the store, and its loss is a case of its own
            jobs.append((f"kill np={np}", lambda np=np, v=v: cases.kill(np, v)))
            jobs.append((f"kill rank 0 np={np}", lambda np=np: cases.kill(np, 0)))
            jobs.append((f"stop np={np}", lambda np=np, v=v: cases.stop(np, v, args.timeout)))
            for s in ("exception", "abort", "bad-env-heap", "bad-env-timeout", "caught-timeout", "coll-raise"):
                jobs.append((f"{s} np={np}", lambda np=np, v=v, s=s: cases.self_inflicted(s, np, v)))
            jobs.append((f"launcher-killed np={np}", lambda np=np: cases.launcher_killed(np)))
    jobs += [("bad-input np=2", lambda: cases.checks("bad-input", 2)),
             ("heap-mismatch np=2", lambda: cases.checks("heap-mismatch", 2, 1)),
             ("alloc-mismatch np=3", lambda: cases.checks("alloc-mismatch", 3, 1)),
             ("dead-put np=3", lambda: cases.checks("dead-put", 3, 2)),
             ("barrier-blame np=4", lambda: cases.checks("barrier-blame", 4, 1, {"GPUCOMM_TIMEOUT": "1"})),
             ("cloexec np=2", lambda: cases.checks("cloexec", 2))]
    if not args.no_hostile:
        users = ["nobody", "self"] if cases.can_switch_user() else ["self"]
        starts = 4 if args.quick else 10
        for u in users:
            jobs.append((f"hostile store as {u}", lambda u=u: cases.hostile_store(u)))
            jobs.append((f"hostile fd exchange as {u}", lambda u=u: cases.hostile_fdx(u, starts)))
    soak_s = 3 if args.quick else args.soak
    if soak_s > 0:
        jobs.append((f"soak np=4 {soak_s}s", lambda: cases.soak(4, soak_s)))
    return jobs


def summarize(results: list[dict]) -> dict:
    faults = [r for r in results if r["time_to_fail_s"] is not None and r["case"] not in ("soak",)]
    by_case: dict[str, list[float]] = {}
    for r in faults:
        t = r.get("after_timeout_s", r["time_to_fail_s"])
        by_case.setdefault(r["case"], []).append(t)
    return {
        "faults_injected": len(faults),
        "faults_handled": sum(r["handled"] for r in faults),
        "faults_within_target": sum(r["meets_target"] for r in faults),
        "bad_inputs_tried": sum(r.get("bad_inputs_tried", 0) for r in results),
        "bad_inputs_refused": sum(r.get("bad_inputs_refused", 0) for r in results),
        "hostile_clients_tried": sum(r.get("hostile_clients_tried", 0) for r in results),
        "hostile_let_through": sum((r.get("let_through") or 0) + (r.get("fds_received") or 0) for r in results),
        "soak_messages": sum(r.get("messages", 0) for r in results),
        "soak_increments": sum(r.get("increments", 0) for r in results),
        "losses": sum(r.get("lost", 0) for r in results),
        "time_to_fail_s": {c: {"median": statistics.median(v), "max": max(v), "runs": len(v)}
                           for c, v in sorted(by_case.items())},
        "target_s": cases.TARGET_S,
        "all_handled": all(r["handled"] for r in results),
    }


def run(args) -> int:
    print("gpucomm bench faults: host-memory PEs; time to fail = fault -> every PE of the job gone "
          f"(target {cases.TARGET_S:g} s; for a stopped PE, after its GPUCOMM_TIMEOUT)", flush=True)
    results = []
    for name, fn in plan(args):
        r = fn()
        results.append(r)
        t = r.get("after_timeout_s", r["time_to_fail_s"])
        shown = f"{t:7.3f} s" if t is not None else "      -  "
        mark = "ok" if r["handled"] else "NOT HANDLED"
        target = "" if r["time_to_fail_s"] is None else ("  within target" if r["meets_target"] else "  OVER TARGET")
        print(f"  {name:34s} {shown}  {mark}{target}", flush=True)
        if not r["handled"] and r.get("output"):
            print("    " + "\n    ".join(r["output"].splitlines()[-12:]), file=sys.stderr)
    s = summarize(results)
    print(f"faults injected {s['faults_injected']}, handled {s['faults_handled']}, within target "
          f"{s['faults_within_target']}; bad inputs tried {s['bad_inputs_tried']} (refused "
          f"{s['bad_inputs_refused']}); hostile clients tried {s['hostile_clients_tried']} (let through "
          f"{s['hostile_let_through']}); soak {s['soak_messages']} messages and {s['soak_increments']} increments, "
          f"{s['losses']} lost")
    for c, v in s["time_to_fail_s"].items():
        print(f"  time to fail, {c:18s} median {v['median']:.3f} s, max {v['max']:.3f} s ({v['runs']} runs)")
    if args.json:
        for r in results:
            r.pop("output", None)
        with open(args.json, "w") as f:
            json.dump({"benchmark": "faults", "summary": s, "results": results}, f, indent=1)
    return 0 if s["all_handled"] else 1
