"""``gpucomm trace``: MPI trace analysis (DUMPI) and the deep-learning communication model.

  gpucomm trace analyze PATH [--json FILE|-] [--plots DIR] [--export-queues FILE] [--rank R]
  gpucomm trace dnn-model [--gpus ...] [--computation-ms ...] [--communication-ms ...] ...
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gpucomm.cli import _args


def _int_list(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of integers") from None


def _float_list(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of numbers") from None


def register(sub) -> None:
    p = sub.add_parser("trace", help="analyse MPI traces (DUMPI) and model DNN communication",
                       description="MPI trace toolkit: communication metrics and matching-queue replay of "
                                   "SST DUMPI traces, and the data- vs model-parallel DNN model.")
    cmds = p.add_subparsers(dest="trace_command", metavar="COMMAND")

    a = cmds.add_parser("analyze", help="report metrics and matching queues of a DUMPI trace",
                        description="Reads a DUMPI trace (a directory with a .meta file and <prefix>-NNNN.bin "
                                    "rank files, the .meta file, or dumpi2ascii text files <prefix>-NNNN.txt) and "
                                    "reports time in MPI, point-to-point and collective counts and volume, message "
                                    "sizes, peers, message rates and the replayed matching queues. Definitions: "
                                    "docs/TRACES.md.")
    a.add_argument("path", metavar="PATH", help="trace directory, .meta file or dumpi2ascii .txt file")
    a.add_argument("--json", metavar="FILE", help="write the JSON report to FILE ('-' for standard output, "
                                                  "which replaces the text report)")
    a.add_argument("--plots", metavar="DIR", help="write PNG plots (sizes, rate over time, queue CDF) to DIR; "
                                                  "needs matplotlib (pip install 'gpucomm[plots]')")
    a.add_argument("--export-queues", metavar="FILE", help="write matching-queue snapshots (gpucomm snapshot format)")
    a.add_argument("--snapshots", metavar="N", type=_args.nonneg_int, default=8,
                   help="snapshots to export, largest first (0: one per rank; default 8)")
    a.add_argument("--rank", metavar="R", type=_args.nonneg_int, help="report only rank R in the per-rank section")
    a.add_argument("--name", help="name used in plot titles and file names (default: the trace's folder name)")
    prog = a.add_mutually_exclusive_group()
    prog.add_argument("--progress", dest="progress", action="store_true", default=None,
                      help="draw a progress bar on stderr (default: for traces over 16 MB on a terminal)")
    prog.add_argument("--no-progress", dest="progress", action="store_false", help="never draw a progress bar")
    a.set_defaults(func=_analyze, parser=a)

    d = cmds.add_parser("dnn-model", help="data- vs model-parallel DNN training model (Klenk's thesis §4.5)",
                        description="Reproduces the speedups of Table 4.3 of Klenk's thesis from its per-batch computation "
                                    "and communication times, and evaluates the analytic data-/model-parallel "
                                    "efficiency model of §4.5.3 for the nets of Table 4.4. Defaults are the "
                                    "thesis's values.")
    from gpucomm.trace import dnn
    t = dnn.TABLE_4_3
    d.add_argument("--gpus", type=_int_list, default=t["gpus"], help="GPU counts (default 2,4,8)")
    d.add_argument("--computation-ms", type=_float_list, default=t["computation_ms"],
                   help="computation per batch on each GPU count [ms] (default 760,488,355)")
    d.add_argument("--communication-ms", type=_float_list, default=t["communication_ms"],
                   help="communication per batch [ms] (default 61,183,427)")
    d.add_argument("--single-gpu-ms", type=float, default=None,
                   help="time per batch on one GPU [ms] (default: inferred from Table 4.3, about 1318)")
    d.add_argument("--model-gpus", type=_int_list, default=[16, 64, 256],
                   help="GPU counts of the analytic model (default 16,64,256)")
    d.add_argument("--batch", type=int, default=512, help="batch size of the analytic model (default 512)")
    d.add_argument("--tflops", type=float, default=9.3, help="GPU rate [TFLOP/s] (default 9.3, P100)")
    d.add_argument("--bandwidth-gbs", type=float, default=80.0, help="link bandwidth [GB/s] (default 80, NVLink)")
    d.add_argument("--json", metavar="FILE", help="write the results as JSON to FILE ('-' for standard output)")
    d.set_defaults(func=_dnn_model)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def _check_output_file(parser, arg: str, path: str) -> None:
    """A file argument must name a file that can be created: its folder exists, it is no folder."""
    p = Path(path)
    if p.is_dir():
        parser.error(f"argument {arg}: {path} is a directory, not a file")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        what = "is not a directory" if parent.exists() else "does not exist"
        parser.error(f"argument {arg}: cannot create {path}: {parent} {what}")


def _check_outputs(parser, args) -> None:
    """Refuses unusable output arguments before the (possibly long) analysis starts."""
    if args.json and args.json != "-":
        _check_output_file(parser, "--json", args.json)
    if args.export_queues:
        _check_output_file(parser, "--export-queues", args.export_queues)
    if args.plots:
        plots = Path(args.plots)
        if plots.exists() and not plots.is_dir():
            parser.error(f"argument --plots: {args.plots} exists and is not a directory")
        from gpucomm.trace.plots import have_matplotlib
        if not have_matplotlib():
            raise RuntimeError("--plots needs matplotlib, which is not installed: pip install 'gpucomm[plots]' "
                               "(or pip install matplotlib)")


def _write_text(arg: str, path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise RuntimeError(f"argument {arg}: cannot write {path}: {exc.strerror or exc}") from None


def _analyze(args) -> int:
    from gpucomm.trace.analyze import run_analyzer
    _check_outputs(args.parser, args)
    rep = run_analyzer(args.path, rank=args.rank, export_queues=args.export_queues,
                       snapshots=args.snapshots, progress=args.progress)
    if args.rank is not None and not rep["ranks"]:
        raise ValueError(f"argument --rank: the trace has ranks 0..{rep['trace']['ranks'] - 1}")
    if args.json:
        text = json.dumps(rep, indent=1, ensure_ascii=False)
        if args.json == "-":
            sys.stdout.write(text + "\n")
        else:
            _write_text("--json", args.json, text + "\n")
    if args.json != "-":
        from gpucomm.trace.report import render
        sys.stdout.write(render(rep))
    if args.plots:
        from gpucomm.trace.plots import write_plots
        p = Path(args.path)
        name = args.name or (p.parent.name if p.is_file() else p.resolve().name)
        try:
            written = write_plots(rep, args.plots, name)
        except OSError as exc:
            raise RuntimeError(f"argument --plots: cannot write the plots to {args.plots}: {exc.strerror or exc}") \
                from None
        for f in written:
            print(f"wrote {f}", file=sys.stderr)
    if args.export_queues:
        print(f"wrote {len(rep['snapshots'])} queue snapshots to {args.export_queues}", file=sys.stderr)
    return 0


def _dnn_model(args) -> int:
    from gpucomm.trace import dnn
    t1 = args.single_gpu_ms if args.single_gpu_ms is not None else dnn.default_single_gpu_ms()
    rows = dnn.speedups(args.gpus, args.computation_ms, args.communication_ms, t1)
    for n in args.model_gpus:
        if n < 1:
            raise ValueError(f"argument --model-gpus: {n} is not a GPU count")
    model = {}
    for net, (w, a, f) in dnn.NETS.items():
        model[net] = {f"{par}-{topo}-{n}": dnn.efficiency(w, a, f, n, par, topo, args.batch, args.tflops * 1e12,
                                                           args.bandwidth_gbs * 1e9)
                      for par in ("data", "model") for topo in ("fc", "ring") for n in args.model_gpus}
    seed = dnn.TABLE_4_3 if (args.gpus == dnn.TABLE_4_3["gpus"] and args.computation_ms == dnn.TABLE_4_3["computation_ms"]
                             and args.communication_ms == dnn.TABLE_4_3["communication_ms"]) else None
    result = {"single_gpu_ms": t1, "speedups": [r.__dict__ for r in rows], "efficiency": model,
              "model_parameters": {"batch": args.batch, "tflops": args.tflops, "bandwidth_gbs": args.bandwidth_gbs}}
    if seed:
        result["table_4_3"] = seed
    if args.json:
        text = json.dumps(result, indent=1)
        if args.json == "-":
            print(text)
            return 0
        Path(args.json).write_text(text + "\n")
    print(f"Data-parallel training, measured times (Table 4.3 of Klenk's thesis); single GPU {t1:.1f} ms per batch")
    print(f"{'GPUs':>5} {'comp ms':>8} {'comm ms':>8} {'comp/comm':>9} {'speedup w/o comm':>17} {'speedup with comm':>18}")
    for k, r in enumerate(rows):
        ref = f"  (thesis {seed['speedup_without_communication'][k]:.2f} / {seed['speedup_with_communication'][k]:.2f})" if seed else ""
        print(f"{r.gpus:>5} {r.computation_ms:>8.1f} {r.communication_ms:>8.1f} {r.ratio:>9.2f} "
              f"{r.speedup_without:>17.2f} {r.speedup_with:>18.2f}{ref}")
    print()
    print(f"Parallel efficiency [%], batch {args.batch}, {args.tflops:g} TFLOP/s, {args.bandwidth_gbs:g} GB/s "
          "(fc: fully connected, ring: ring)")
    cols = [f"{par[0].upper()}P-{topo}-{n}" for par in ("data", "model") for topo in ("fc", "ring") for n in args.model_gpus]
    print(f"{'net':>11} " + " ".join(f"{c:>11}" for c in cols))
    for net, vals in model.items():
        print(f"{net:>11} " + " ".join(f"{100 * v:>11.1f}" for v in vals.values()))
    return 0
