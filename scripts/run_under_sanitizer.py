#!/usr/bin/env python3
"""Runs GPU tests under compute-sanitizer with one tool.

usage: run_under_sanitizer.py BUILD_DIR memcheck|racecheck|synccheck [--budget S] [--json FILE] [--list]

Each tool runs a named subset of the CTest tests labelled `gpu` (SUBSETS below), chosen so that
one call fits in 10 minutes on one H100 (the tools slow kernels 10-100x): memcheck the tests that
exercise every layer's device memory accesses once (not their stress variants), racecheck and
synccheck the tests whose kernels share memory or synchronize within a block (racecheck sees
shared-memory races only; the global-memory protocols rely on the ordering litmus tests). Tests
that need concurrent kernels (the tool serializes kernels, so a kernel that waits for the GPU
service agent or for another PE's kernel on the same GPU would wait forever) or that trap on
purpose (the tool reports every trap) are skipped with the reason. Tests not started when the
budget (default 540 s) is spent are listed as not run, and one the budget stops is listed as cut
(unfinished, not a finding). GPUCOMM_UNDER_SANITIZER=TOOL is set for the
tests (tests/support: GPUCOMM_SKIP_UNDER_SANITIZER). Prints one line per test, and JSON with
--json; exit code 0 when every test that ran was clean, 1 otherwise, 2 on usage errors.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time

# What each tool runs (regexes over CTest test names).
SUBSETS = {
    "memcheck": [r"^GpuMatching\.", r"^WarpQueueGpu\.",
                 r"^GpuPe\.(HeapIsDeviceMemory|DeviceApiEveryLevel|HostApiRegistrationAndGraphs|IpcMapping)$",
                 r"^rma_gpu_api_np1$", r"^rma_gpu_api_np2$", r"^proxy_gpu_api_proxy-cpu_np1$",
                 r"^gpu_init_np1$", r"^gpu_init_np2$", r"^TopologyGpu\.",
                 r"^MsgGpu\.(EveryModeEveryLevel|ProbesCancelProcNullEvents|GraphCaptureOfStreamOrderedCalls)$",
                 r"^MsgAmGpu\.HandlersAndRepliesEveryLevel$", r"^part_gpu_device_np1$",
                 r"^CollGpu\.(InKernelAtEveryLevelOnOnePe|HostApiMatrixOnOnePe|GridLaunchRefusesBlocksThatCannotBeResident)$"],
    "racecheck": [r"^GpuMatching\.", r"^WarpQueueGpu\.", r"^GpuPe\.DeviceApiEveryLevel$",
                  r"^MsgGpu\.EveryModeEveryLevel$", r"^MsgAmGpu\.HandlersAndRepliesEveryLevel$", r"^CollGpu\.InKernelAtEveryLevelOnOnePe$"],
    "synccheck": [r"^GpuMatching\.", r"^WarpQueueGpu\.", r"^GpuPe\.DeviceApiEveryLevel$",
                  r"^MsgGpu\.EveryModeEveryLevel$", r"^CollGpu\.InKernelAtEveryLevelOnOnePe$"],
}
# Tests no tool runs, and why (the first match applies).
SKIPS = [
    (r"DeviceTimeout|BadPeIsDiagnosed|OutsideHeap|DeathTest|_timeout_|_fault_|no_agent|gpu_kill_wait",
     "traps on purpose (a device wait or check that fails by design); the tool reports every trap"),
    (r"proxy-gpu|_agent_|sm-agent",
     "needs concurrent kernels: the GPU service agent runs beside the producer's kernel, and the tool "
     "serializes kernels"),
    (r"ServiceBlock",
     "needs concurrent kernels: the service block runs beside the kernel whose requests it handles, and the "
     "tool serializes kernels"),
    (r"_np2_shared$",
     "needs concurrent kernels: two PEs share one GPU and their kernels wait for each other"),
    (r"^OrderingGpu\.",
     "ordering litmus: the blocks of one kernel spin on each other's stores, and the tools may run the blocks "
     "of a kernel one after another"),
]
DEFAULT_BUDGET_S = 540.0
PER_TEST_LIMIT_S = 300.0


def gpu_tests(build: str) -> list[dict]:
    out = subprocess.run(["ctest", "--test-dir", build, "-L", "gpu", "--show-only=json-v1"], capture_output=True,
                         text=True, check=True).stdout
    return [t for t in json.loads(out).get("tests", []) if t.get("command")]


def decide(name: str, tool: str) -> tuple[str, str]:
    """("run", "") or ("skip", reason) or ("other", why it is not in this tool's subset)."""
    for rx, reason in SKIPS:
        if re.search(rx, name):
            return "skip", reason
    if any(re.search(rx, name) for rx in SUBSETS[tool]):
        return "run", ""
    return "other", f"not in the {tool} subset (scripts/run_under_sanitizer.py)"


def run_one(test: dict, tool: str, limit: float) -> tuple[str, str]:
    env = dict(os.environ, GPUCOMM_UNDER_SANITIZER=tool)
    for prop in test.get("properties", []):
        if prop["name"] == "ENVIRONMENT":
            for kv in prop["value"]:
                k, _, v = kv.partition("=")
                env[k] = v
    cmd = ["compute-sanitizer", "--tool", tool, "--error-exitcode", "99", "--target-processes", "all",
           "--print-limit", "20"] + test["command"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=test.get("cwd") or None, timeout=limit)
    except subprocess.TimeoutExpired:
        return "timeout", f"ran past {limit:.0f} s"
    out = r.stdout + r.stderr
    if r.returncode == 0:
        return ("skipped" if "[  SKIPPED ]" in out else "clean"), ""
    return "errors", out[-4000:]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("build")
    p.add_argument("tool", choices=sorted(SUBSETS))
    p.add_argument("--budget", type=float, default=DEFAULT_BUDGET_S, help="seconds for the whole call")
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--list", action="store_true", help="print the plan, run nothing")
    a = p.parse_args()
    start = time.monotonic()
    results = []
    for t in gpu_tests(a.build):
        name = t["name"]
        what, why = decide(name, a.tool)
        if what == "run" and not a.list:
            left = a.budget - (time.monotonic() - start)
            if left < 30:
                what, why = "not run", f"the {a.budget:.0f} s budget of this call was spent"
            else:
                t0 = time.monotonic()
                what, why = run_one(t, a.tool, min(PER_TEST_LIMIT_S, left))
                if what == "timeout" and left < PER_TEST_LIMIT_S:
                    # Cut by the call's budget, not by its own limit: unfinished, not a finding.
                    what, why = "cut", f"stopped after {left:.0f} s when the {a.budget:.0f} s budget ran out"
                results.append({"test": name, "result": what, "seconds": round(time.monotonic() - t0, 1),
                                "detail": why})
                print(f"{what:8s} {a.tool} {name} ({results[-1]['seconds']} s)", flush=True)
                if what in ("errors", "timeout"):
                    print(why, flush=True)
                continue
        shown = {"run": "would run", "skip": "[  SKIPPED ]", "other": "not run"}.get(what, what)
        results.append({"test": name, "result": "skipped" if what == "skip" else "not run", "seconds": 0,
                        "detail": why})
        print(f"{shown} {a.tool} {name}" + (f": {why}" if why else ""), flush=True)
    bad = [r for r in results if r["result"] in ("errors", "timeout")]
    ran = [r for r in results if r["result"] in ("clean", "errors", "timeout", "skipped") and r["seconds"] > 0]
    cut = [r for r in results if r["result"] == "cut"]
    print(f"{a.tool}: {len(ran)} test(s) run, {len(bad)} with errors, {len(cut)} cut by the budget, "
          f"{time.monotonic() - start:.0f} s of a {a.budget:.0f} s budget")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"tool": a.tool, "subset": SUBSETS[a.tool], "results": results,
                       "seconds": round(time.monotonic() - start, 1), "clean": not bad}, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
