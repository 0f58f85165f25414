"""``gpucomm apps list | run APP | compare [APP...]``: the application suite (docs/APPS.md)."""
from __future__ import annotations

import argparse
import datetime
import json
import sys

from gpucomm.apps import catalog, runner
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
    cmp.set_defaults(func=cmd_compare)
    p.set_defaults(func=lambda a: (p.print_help(), 2)[1])


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
    for app in chosen:
        sizes = app.default_sizes if args.quick else app.sweep
        rc, report = runner.run_app(app, app.models_done("gpu" if gpu else "host"), sizes, pes=n, gpu=gpu,
                                    **app.steps(args.quick))
        worst = worst or rc
        if report:
            print()
            runner.print_comparison(report)
            reports.append(report)
    planned = [a.name for a in apps if not a.done]
    if planned and not args.apps:
        print(f"\nnot done yet (docs/APPS.md): {', '.join(planned)}")
    if args.json:
        _write_json(args.json, reports)
    return worst
