"""``gpucomm apps list | run APP | compare [APP...]``: the application suite (docs/APPS.md)."""
from __future__ import annotations

import argparse
import datetime
import json
import math
import sys
import time
from pathlib import Path

from gpucomm.apps import catalog, energy, plots, runner
from gpucomm.apps.nvml import Nvml, NvmlError
from gpucomm.cli import _args
from gpucomm.launch.gpus import visible_gpu_count


def register(sub) -> None:
    p = sub.add_parser("apps", help="the application suite: Global Sum, Jacobi 2-D, N-Body, ... in every "
                                    "communication model",
                       description="Applications in several communication models, each checked against a CPU "
                                   "reference and timed (docs/APPS.md). GPU PEs when GPUs exist, host-memory PEs "
                                   "otherwise (or with --host).")
    cmds = p.add_subparsers(dest="target", metavar="COMMAND")

    ls = cmds.add_parser("list", help="the applications and their models on host and GPU PEs")
    ls.add_argument("--json", action="store_true", help="print the catalog as JSON")
    ls.set_defaults(func=cmd_list)

    run = cmds.add_parser("run", help="run one application",
                          description="Run APP in the given models and sizes; exit 2 on an unknown application, "
                                      "model or size (the message lists the valid ones), 1 when a result differs "
                                      "from the CPU reference.")
    run.add_argument("app", metavar="APP", help="the application (gpucomm apps list)")
    run.add_argument("--model", default="", metavar="M[,M...]",
                     help="models to run (default: every model the application has on these PEs)")
    run.add_argument("--size", default="", metavar="S[,S...]",
                     help="sizes, e.g. 128,256K, or 'sweep' (default: the application's default sizes)")
    _common(run)
    run.add_argument("--warmup", type=_args.nonneg_int, default=None,
                     help="untimed steps first (default: the application's, 5 and 2 with --quick; N-Body 1)")
    run.add_argument("--iters", type=_args.positive_int, default=None,
                     help="timed steps (default: the application's, 50 and 10 with --quick; N-Body 5 and 2)")
    run.add_argument("--corrupt-rank", type=_args.nonneg_int, default=None, help=argparse.SUPPRESS)  # tests: that PE's result is off by one (docs/APPS.md)
    run.add_argument("--dump-grid", default=None, metavar="DIR", help=argparse.SUPPRESS)  # tests: each PE's final grid
    run.set_defaults(func=cmd_run)

    cmp = cmds.add_parser("compare", help="run applications in every model and compare the models",
                          description="Every finished application (or those named) in every model it has on these "
                                      "PEs, over its sweep of sizes (--quick: its default sizes, fewer steps); a "
                                      "table of medians per size and model.")
    cmp.add_argument("apps", nargs="*", metavar="APP", help="applications (default: every finished one)")
    _common(cmp)
    cmp.add_argument("--out", default="gpucomm-apps-out", metavar="DIR",
                     help="where the JSON (unless --json names a file) and the PNG plots go (default: %(default)s)")
    cmp.set_defaults(func=cmd_compare)

    en = cmds.add_parser("energy", help="GPU energy, power and CPU time per step of one application and model",
                         description="Runs APP in one model and size for --seconds, --repeats times with a cool-down "
                                     "between them, while a thread samples every GPU's NVML total-energy counter; "
                                     "an idle baseline (before and after) is subtracted. Reports medians per step: "
                                     "time, GPU joules above idle, CPU core-seconds of every PE (proxy and host "
                                     "threads included), the CPU's energy as a model (core-seconds x "
                                     "--cpu-watts-per-core: these machines have no CPU energy counter), average GPU "
                                     "power and the energy-delay product; and whether the repeats agree within 5%%. "
                                     "Needs GPUs (exit 1 without).")
    en.add_argument("app", metavar="APP", help="the application (gpucomm apps list)")
    en.add_argument("--model", required=True, metavar="M", help="one model the application has on GPU PEs")
    en.add_argument("--size", default="", metavar="S", help="one size (default: the application's first default size)")
    en.add_argument("-n", "--np", type=_args.positive_int, default=None, metavar="N",
                    help="number of PEs (default: one per GPU)")
    en.add_argument("--seconds", type=_args.nonneg_seconds, default=10.0,
                    help="length of each run (default 10: NVML's counter steps about every 100 ms)")
    en.add_argument("--repeats", type=_args.positive_int, default=3, help="runs (default 3)")
    en.add_argument("--idle-seconds", type=_args.nonneg_seconds, default=10.0,
                    help="idle baseline before and after the runs (default 10)")
    en.add_argument("--cooldown", type=_args.nonneg_seconds, default=5.0, help="seconds between runs (default 5)")
    en.add_argument("--cpu-watts-per-core", type=_watts, default=10.0,
                    help="the CPU energy model: watts per busy core (default 10; a model, not a measurement)")
    en.add_argument("--json", metavar="FILE", help="write the measurement as JSON (raw repeats and counter samples)")
    en.add_argument("--plot", metavar="FILE", help="write a PNG: power over time and energy per step by component")
    en.set_defaults(func=cmd_energy)
    p.set_defaults(func=lambda a: (p.print_help(), 2)[1])


def _watts(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not 0 <= v < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number of watts >= 0, got {text}")
    return v


def _common(p) -> None:
    p.add_argument("-n", "--np", type=_args.positive_int, default=None, metavar="N",
                   help="number of PEs (default: one per GPU, at least 2; 2 host-memory PEs without a GPU)")
    p.add_argument("--host", action="store_true", help="use host-memory PEs even when GPUs exist")
    p.add_argument("--quick", action="store_true", help="fewer steps (compare: the default sizes, not the sweep)")
    p.add_argument("--json", metavar="FILE", help="write the report as JSON (date, commit, command, per-step times)")


def _usage_error(args, exc) -> int:
    print(f"gpucomm apps {args.target}: error: {exc}", file=sys.stderr)
    return 2


def _pes(args) -> tuple[int, bool]:
    gpus = 0 if args.host else visible_gpu_count()
    n = args.np or max(2, gpus)
    if gpus == 0:
        why = "requested with --host" if args.host else "no GPU found"
        print(f"gpucomm apps: host-memory PEs ({why}): {n} PEs in shared memory", flush=True)
    else:
        note = " (PEs share GPUs: a functional check, not a measurement)" if n > gpus else ""
        print(f"gpucomm apps: {n} GPU PEs on {gpus} GPU(s){note}", flush=True)
    return n, gpus > 0


def cmd_list(args) -> int:
    apps = catalog.load()
    if args.json:
        print(json.dumps({"apps": [a.__dict__ for a in apps]}, indent=2))
        return 0
    for a in apps:
        state = "" if a.done else "  [planned, not done]"
        print(f"{a.name}: {a.summary}{state}")
        if not a.done:
            continue
        print(f"  sizes: {a.size_unit}, default {','.join(catalog.size_text(s) for s in a.default_sizes)}, "
              f"sweep {','.join(catalog.size_text(s) for s in a.sweep)}")
        print(f"  {'model':<11} {'host PEs':<13} {'GPU PEs':<13} what")
        for m in a.models:
            print(f"  {m['model']:<11} {m['host']:<13} {m['gpu']:<13} {m['what']}")
            for kind, label in (("host_note", "host"), ("gpu_note", "GPU")):
                if m[kind]:
                    print(f"  {'':<11} {label}: {m[kind]}")
    return 0


def _write_json(path: str, runs: list[dict]) -> None:
    doc = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "command": " ".join(["gpucomm", *sys.argv[1:]]), "runs": runs}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")


def cmd_run(args) -> int:
    try:
        apps = catalog.load()
        app = catalog.find(apps, args.app)
        sizes = app.parse_sizes(args.size) if args.size else list(app.default_sizes)
        host_or_gpu = "host" if args.host or visible_gpu_count() == 0 else "gpu"
        models = app.check_models(args.model.split(","), host_or_gpu) if args.model else app.models_done(host_or_gpu)
        if not models:
            where = "GPU PEs" if host_or_gpu == "gpu" else "host-memory PEs"
            raise catalog.UsageError(f"{app.name} has no model on {where} (gpucomm apps list)")
    except catalog.UsageError as exc:
        return _usage_error(args, exc)
    n, gpu = _pes(args)
    steps = app.steps(args.quick)
    steps.update({k: v for k, v in (("warmup", args.warmup), ("iters", args.iters)) if v is not None})
    extra = ["--corrupt-rank", str(args.corrupt_rank)] if args.corrupt_rank is not None else []
    if args.dump_grid is not None:
        extra += ["--dump-grid", args.dump_grid]
    rc, report = runner.run_app(app, models, sizes, pes=n, gpu=gpu, extra=extra, **steps)
    if report:
        print()
        runner.print_runs(report)
        if args.json:
            _write_json(args.json, [report])
    return rc


def cmd_compare(args) -> int:
    try:
        apps = catalog.load()
        chosen = [catalog.find(apps, name) for name in args.apps] or [a for a in apps if a.done]
    except catalog.UsageError as exc:
        return _usage_error(args, exc)
    n, gpu = _pes(args)
    reports, worst = [], 0
    for k, app in enumerate(chosen):
        sizes = app.default_sizes if args.quick else app.sweep
        models = app.models_done("gpu" if gpu else "host")
        if not models:
            print(f"\n[{k + 1}/{len(chosen)}] {app.name}: no model on {'GPU' if gpu else 'host-memory'} PEs, "
                  "skipped (gpucomm apps list)", flush=True)
            continue
        print(f"\n[{k + 1}/{len(chosen)}] {app.name}: {len(models)} model(s) x {len(sizes)} size(s)", flush=True)
        rc, report = runner.run_app(app, models, sizes, pes=n, gpu=gpu, **app.steps(args.quick))
        worst = worst or rc
        if report:
            report["size_unit"] = app.size_unit
            report["time_sliced"] = gpu and n > visible_gpu_count()
            print()
            runner.print_comparison(report)
            reports.append(report)
    planned = [a.name for a in apps if not a.done]
    if planned and not args.apps:
        print(f"\nnot done yet (docs/APPS.md): {', '.join(planned)}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = args.json or str(out / "compare.json")
    _write_json(path, reports)
    print(f"\nresults: {path}")
    if not plots.have_matplotlib():
        print("plots: none (matplotlib is not installed: pip install 'gpucomm[plots]')")
    elif reports:
        files = [plots.time_plot(r, out / f"{r['app']}-time.png") for r in reports]
        print(f"plots: {', '.join(files)}")
    return worst


def _idle_watts(trace: energy.Trace, gpus: int, spans: list[tuple[int, int]]) -> list[float]:
    """Each GPU's average power over the idle spans."""
    out = []
    for g in range(gpus):
        joules = sum(energy.window_joules(trace, g, a, b) for a, b in spans)
        out.append(joules / (sum(b - a for a, b in spans) / 1e9))
    return out


def cmd_energy(args) -> int:
    try:
        apps = catalog.load()
        app = catalog.find(apps, args.app)
        model = app.check_models([args.model], "gpu")[0]
        sizes = app.parse_sizes(args.size) if args.size else list(app.default_sizes[:1])
        if len(sizes) != 1:
            raise catalog.UsageError(f"--size: one size, not {len(sizes)}")
    except catalog.UsageError as exc:
        return _usage_error(args, exc)
    gpus = visible_gpu_count()
    if gpus == 0:
        print("gpucomm apps energy: error: no GPU found; GPU energy is read from NVML's counters of the GPUs the "
              "PEs run on", file=sys.stderr)
        return 1
    try:
        nvml = Nvml()
    except NvmlError as exc:
        print(f"gpucomm apps energy: error: {exc}", file=sys.stderr)
        return 1
    n = args.np or gpus
    size = sizes[0]
    names = [nvml.name(i) for i in range(len(nvml.handles))]
    print(f"gpucomm apps energy: {app.name} {model} {catalog.size_text(size)} on {n} GPU PE(s); NVML sees "
          f"{len(names)} GPU(s): {', '.join(names)}", flush=True)
    print("[energy] calibrating the step count (a short run)", flush=True)
    rc, report = runner.run_app(app, [model], [size], pes=n, gpu=True, warmup=2, iters=20)
    if rc or not report:
        return rc or 1
    step_us = report["results"][0]["median_us"]
    iters = max(20, math.ceil(args.seconds * 1e6 / max(step_us, 1e-3)))
    warmup = 2
    print(f"[energy] {step_us:.2f} us per step: {iters} steps per run", flush=True)
    repeats, raw = [], []
    with energy.Sampler(nvml) as sampler:
        time.sleep(args.cooldown)  # the GPU stays in a higher power state for a second after a run
        idle = [(time.time_ns(), 0)]
        time.sleep(args.idle_seconds)
        idle[0] = (idle[0][0], time.time_ns())
        for k in range(args.repeats):
            time.sleep(args.cooldown)
            print(f"[energy] run {k + 1}/{args.repeats} (~{iters * step_us / 1e6:.0f} s)", flush=True)
            rc, rep = runner.run_app(app, [model], [size], pes=n, gpu=True, warmup=warmup, iters=iters)
            if rc or not rep:
                return rc or 1
            raw.append(rep["results"][0])
        t = time.time_ns()
        time.sleep(args.idle_seconds)
        idle.append((t, time.time_ns()))
    trace = sampler.trace
    nvml.close()
    idle_w = _idle_watts(trace, len(names), idle)
    for r in raw:
        w = r["window"]
        repeats.append(energy.Repeat(steps=warmup + iters, median_step_us=r["median_us"],
                                     window_s=(w["end_unix_ns"] - w["start_unix_ns"]) / 1e9,
                                     gpu_j=[energy.window_joules(trace, g, w["start_unix_ns"], w["end_unix_ns"])
                                            for g in range(len(names))],
                                     idle_w=idle_w, cpu_core_s=w["cpu_core_s"]))
    summary = energy.summarize(repeats, args.cpu_watts_per_core)
    _print_energy(summary, idle_w, repeats)
    doc = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "command": " ".join(["gpucomm", *sys.argv[1:]]), "app": app.name, "model": model, "size": size,
           "pes": n, "gpus": names, "steps_per_run": warmup + iters, "idle_w": idle_w,
           "idle_spans_unix_ns": idle, "summary": summary,
           "repeats": [{"window": r["window"], "median_us": r["median_us"], "verified": r["verified"],
                        "gpu_j": rp.gpu_j} for r, rp in zip(raw, repeats)],
           "trace": energy.changes_only(trace).__dict__}
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(doc, f)
            f.write("\n")
        print(f"results: {args.json}")
    if args.plot:
        if plots.have_matplotlib():
            print(f"plot: {plots.energy_plot(doc, trace, Path(args.plot))}")
        else:
            print("plot: none (matplotlib is not installed: pip install 'gpucomm[plots]')")
    return 0 if all(r["verified"] for r in raw) else 1


def _print_energy(summary: dict, idle_w: list[float], repeats: list) -> None:
    med = summary["median"]
    print(f"\nidle baseline: {', '.join(f'{w:.1f} W' for w in idle_w)} (GPU 0..)")
    print(f"{'repeat':>6} {'us/step':>10} {'GPU uJ/step':>12} {'+idle uJ':>10} {'core-us/step':>13} {'GPU W':>8}")
    for k, row in enumerate(summary["per_repeat"]):
        print(f"{k + 1:>6} {row['time_us']:>10.2f} {row['gpu_j'] * 1e6:>12.2f} {row['gpu_j_with_idle'] * 1e6:>10.2f} "
              f"{row['cpu_core_s'] * 1e6:>13.2f} {row['avg_gpu_w']:>8.1f}")
    print(f"{'median':>6} {med['time_us']:>10.2f} {med['gpu_j'] * 1e6:>12.2f} {med['gpu_j_with_idle'] * 1e6:>10.2f} "
          f"{med['cpu_core_s'] * 1e6:>13.2f} {med['avg_gpu_w']:>8.1f}")
    print(f"CPU energy (model, {summary['cpu_watts_per_core_model']:g} W per busy core): "
          f"{med['cpu_j_model'] * 1e6:.2f} uJ/step; energy-delay product {med['edp_js']:.3e} J s")
    verdict = "met" if summary["repeats_within_limit"] else "MISSED"
    print(f"method check: repeats' GPU energy per step within {summary['spread_limit']:.0%} of their median: "
          f"spread {summary['spread']:.1%} -> {verdict}")
